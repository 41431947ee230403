"""A list's trees a page at a time, as values or as JSON, and the whole list as JSON:
a fixed number of statements whatever the list's size.
"""

from __future__ import annotations

from typing import Any, NamedTuple
from uuid import UUID

from sqlalchemy import Select, String, and_, bindparam, not_, select, type_coerce
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import CTE

from kalends.storage.prepared import Prepared
from kalends.storage.task_tables import (
    task_reminders,
    tasks,
)
from kalends.tasks.loading import SHOWN, reminders_of, tags_of, tasks_from
from kalends.tasks.models import (
    TreeNode,
)
from kalends.tasks.skips import SHOWN_STATUS
from kalends.tasks.task_rows import ShownTask
from kalends.tasks.tree_json import BEFORE_ALL, PageKey, json_forest
from kalends.tasks.tree_reads import assemble


# The statements of a page, built once (no list of IDs to bind): the page's top-level
# tasks are the first ``size`` after a key in sibling order; a recursive walk from them
# gives the page's tasks, and the same walk selects their tags and reminders.
def _after_key() -> ColumnElement[bool]:
    # position > p, or position = p and ref > r; written as a range on position so that
    # the (list, parent, position) index starts at the key instead of at the list's start.
    return and_(
        tasks.c.position >= bindparam("position"),
        not_(and_(tasks.c.position == bindparam("position"), tasks.c.ref <= bindparam("ref"))),
    )


def _tops(include_trashed: bool) -> Select[Any]:
    live = [] if include_trashed else [tasks.c.trashed.is_(False)]
    return select(tasks.c.id).where(
        tasks.c.list_id == bindparam("list_id"), tasks.c.parent_id.is_(None), _after_key(), *live
    )


class _PageStatements(NamedTuple):
    rows: Select[Any]
    following: Select[Any]
    tags: Select[Any]
    reminders: Select[Any]
    raw_rows: Select[Any]
    raw_reminders: Select[Any]


def page_ids(include_trashed: bool) -> CTE:
    """The IDs of a page's tasks: the first ``size`` top-level tasks after the key
    (``list_id``, ``position``, ``ref``), then their descendants by a recursive walk
    (without the trash, a trashed task's subtree is not walked)."""
    live = [] if include_trashed else [tasks.c.trashed.is_(False)]
    tops = (
        _tops(include_trashed)
        .order_by(tasks.c.position, tasks.c.ref)
        .limit(bindparam("size"))
        .subquery("tops")
    )
    page = select(tops.c.id).cte("page", recursive=True)
    return page.union_all(
        select(tasks.c.id).join(page, tasks.c.parent_id == page.c.id).where(*live)
    )


def _page_statements(include_trashed: bool) -> _PageStatements:
    page = page_ids(include_trashed)
    mine = tasks.c.id.in_(select(page.c.id))
    # Whether a top-level task follows the page's last one (keyed by it).
    following = _tops(include_trashed).limit(1)
    ids = select(page.c.id)
    raw_reminders = select(*RAW_REMINDER_COLUMNS).where(task_reminders.c.task_id.in_(ids))
    return _PageStatements(
        rows=select(tasks, SHOWN).where(mine),
        following=following,
        tags=tags_of(ids),
        reminders=reminders_of(ids),
        raw_rows=select(*RAW_TASK_COLUMNS).where(mine),
        raw_reminders=raw_reminders.order_by(task_reminders.c.task_id, task_reminders.c.position),
    )


# The page read as JSON (the HTTP API's): IDs, instants and dates come as the database
# gives them, with no value object made and formatted again for each (on SQLite:
# text; on PostgreSQL: the driver's objects), then formatted as the domain's JSON.
_AS_STORED = {"id", "list_id", "section_id", "parent_id", "series_id", "created_by"} | {
    "completed_at",
    "created_at",
    "updated_at",
    "due_at",
    "planned_date",
    "due_date",
}
RAW_TASK_COLUMNS = [
    type_coerce(c, String).label(c.name)
    if c.name in _AS_STORED
    else SHOWN_STATUS.label("status")
    if c.name == "status"
    else c
    for c in tasks.c
]
RAW_REMINDER_COLUMNS = [
    type_coerce(c, String).label(c.name) if c.name in {"task_id", "at", "recipient_id"} else c
    for c in task_reminders.c
]


_PAGE = {flag: _page_statements(flag) for flag in (False, True)}
# Run on the driver: every page but the last asks it.
_FOLLOWING = {flag: Prepared(_PAGE[flag].following, typed=False) for flag in (False, True)}


def read_tree_page(
    conn: Connection,
    list_id: UUID,
    *,
    limit: int,
    after: PageKey | None,
    include_trashed: bool,
) -> tuple[list[TreeNode], PageKey | None]:
    """Up to ``limit`` of the list's trees after the top-level task keyed ``after``, and
    the key to ask for the next page with (``None`` on the last page).

    Four statements whatever the list's size: the page's tasks (one recursive walk),
    whether another top-level task follows, their tags, their reminders.
    """
    page = _PAGE[include_trashed]
    key = page_key(list_id, limit, after)
    rows: list[ShownTask] = list(conn.execute(page.rows, key))
    tops = [r for r in rows if r.parent_id is None]
    if not tops:
        return [], None
    last = max((r.position, r.ref) for r in tops)
    built = tasks_from(rows, conn.execute(page.tags, key), conn.execute(page.reminders, key))
    return assemble(built, {r.id for r in tops}), if_more(
        conn, list_id, last, include_trashed=include_trashed
    )


def read_tree_page_json(
    conn: Connection,
    list_id: UUID,
    *,
    limit: int,
    after: PageKey | None,
    include_trashed: bool,
) -> tuple[list[dict[str, Any]], PageKey | None]:
    """:func:`read_tree_page` as the trees' JSON (``TreeNode.to_json``), in the same four
    statements, made straight from the rows: a page's cost is mostly its tasks' values."""
    page = _PAGE[include_trashed]
    key = page_key(list_id, limit, after)
    rows = conn.execute(page.raw_rows, key).all()
    if not rows:
        return [], None
    trees, last = json_forest(
        rows, conn.execute(page.tags, key), conn.execute(page.raw_reminders, key), include_trashed
    )
    return trees, if_more(conn, list_id, last, include_trashed=include_trashed)


def page_key(list_id: UUID, limit: int, after: PageKey | None) -> dict[str, Any]:
    position, ref = after if after is not None else (BEFORE_ALL, "")
    return {"list_id": list_id, "position": position, "ref": ref, "size": limit}


def if_more(
    conn: Connection, list_id: UUID, last: PageKey, *, include_trashed: bool
) -> PageKey | None:
    """``last`` (the page's last key) when another top-level task follows it, else ``None``."""
    key = {"list_id": list_id, "position": last[0], "ref": last[1]}
    return last if _FOLLOWING[include_trashed].first(conn, key) is not None else None


# The whole list read as JSON, in three statements.
_LIST_IDS = select(tasks.c.id).where(tasks.c.list_id == bindparam("list_id"))
_LIST_RAW_ROWS = select(*RAW_TASK_COLUMNS).where(tasks.c.list_id == bindparam("list_id"))
_LIST_TAGS = tags_of(_LIST_IDS)
_LIST_RAW_REMINDERS = (
    select(*RAW_REMINDER_COLUMNS)
    .where(task_reminders.c.task_id.in_(_LIST_IDS))
    .order_by(task_reminders.c.task_id, task_reminders.c.position)
)


def read_tree_json(
    conn: Connection, list_id: UUID, *, include_trashed: bool
) -> list[dict[str, Any]]:
    """:func:`read_tree` unfiltered, as the trees' JSON, made straight from the rows."""
    key = {"list_id": list_id}
    rows = conn.execute(_LIST_RAW_ROWS, key).all()
    if not rows:
        return []
    trees, _last = json_forest(
        rows,
        conn.execute(_LIST_TAGS, key),
        conn.execute(_LIST_RAW_REMINDERS, key),
        include_trashed,
    )
    return trees
