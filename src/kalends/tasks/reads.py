"""Reading tasks back: rows with their tags and reminders, and ordered trees.

Every read is a fixed number of statements, whatever the size of the tree: the
tasks, then their tags, then their reminders.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date
from types import SimpleNamespace
from typing import Any, NamedTuple
from uuid import UUID

from sqlalchemy import Select, String, and_, bindparam, func, not_, or_, select, type_coerce
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.sql.selectable import CTE

from kalends.identity import Role
from kalends.storage.prepared import Prepared
from kalends.storage.task_tables import (
    attachments,
    comments,
    sections,
    tags,
    task_reminders,
    task_tags,
    tasks,
)
from kalends.tasks.models import (
    TASK_COLUMNS,
    Attachment,
    Comment,
    Task,
    TaskDetail,
    TaskList,
    TreeNode,
    reminder_from_row,
)
from kalends.tasks.skips import SHOWN_STATUS, SKIPPED, is_skipped
from kalends.tasks.values import ListStatus, Reminder, TaskStatus


def _tags_of(ids: Any) -> Select[Any]:
    return (
        select(task_tags.c.task_id, tags.c.name)
        .join(tags, tags.c.id == task_tags.c.tag_id)
        .where(task_tags.c.task_id.in_(ids))
        .order_by(tags.c.name)
    )


def _reminders_of(ids: Any) -> Select[Any]:
    return (
        select(task_reminders)
        .where(task_reminders.c.task_id.in_(ids))
        .order_by(task_reminders.c.task_id, task_reminders.c.position)
    )


# Built once for the common case of a list of IDs.
_IDS: BindParameter[Any] = bindparam("ids", expanding=True)
_TAGS_OF_IDS = _tags_of(_IDS)
_REMINDERS_OF_IDS = _reminders_of(_IDS)
# Every read of tasks as values brings the status they are shown with (skipped or not)
# as one more column after the tasks' own.
_SHOWN = SHOWN_STATUS.label("shown_status")
_TASKS_OF_IDS = select(tasks, _SHOWN).where(tasks.c.id.in_(_IDS))


def _extras(
    conn: Connection, ids: Any
) -> tuple[dict[UUID, tuple[str, ...]], dict[UUID, tuple[Reminder, ...]]]:
    """Tags and reminders of the tasks whose IDs ``ids`` selects (a list or a subquery)."""
    if isinstance(ids, list):
        tag_rows = conn.execute(_TAGS_OF_IDS, {"ids": ids})
        reminder_rows = conn.execute(_REMINDERS_OF_IDS, {"ids": ids})
    else:
        tag_rows = conn.execute(_tags_of(ids))
        reminder_rows = conn.execute(_reminders_of(ids))
    return _by_task(tag_rows, reminder_rows)


def _by_task(
    tag_rows: Any, reminder_rows: Any
) -> tuple[dict[UUID, tuple[str, ...]], dict[UUID, tuple[Reminder, ...]]]:
    """Tag rows ``(task_id, name)`` and reminder rows, grouped by task in their order."""
    tag_map: dict[UUID, list[str]] = {}
    for task_id, name in tag_rows:
        tag_map.setdefault(task_id, []).append(name)
    reminder_map: dict[UUID, list[Reminder]] = {}
    for row in reminder_rows:
        reminder_map.setdefault(row.task_id, []).append(reminder_from_row(row))
    return (
        {k: tuple(v) for k, v in tag_map.items()},
        {k: tuple(v) for k, v in reminder_map.items()},
    )


def _tasks_from(rows: Sequence[Any], tag_rows: Any, reminder_rows: Any) -> list[Task]:
    """Tasks from ``tasks`` rows with their tag and reminder rows."""
    return _with_extras(rows, *_by_task(tag_rows, reminder_rows))


def _with_extras(
    rows: Sequence[Any],
    tag_map: dict[UUID, tuple[str, ...]],
    reminder_map: dict[UUID, tuple[Reminder, ...]],
) -> list[Task]:
    built = []
    for row in rows:
        # The tasks columns come first in every row read here; extra columns follow.
        m = dict(zip(TASK_COLUMNS, row, strict=False))
        task_id = m["id"]
        built.append(
            Task.from_mapping(
                m,
                tag_map.get(task_id, ()),
                reminder_map.get(task_id, ()),
                skipped=is_skipped(getattr(row, "shown_status", None)),
            )
        )
    return built


def _build(conn: Connection, rows: Sequence[Any], ids: Any) -> list[Task]:
    if not rows:
        return []
    return _with_extras(rows, *_extras(conn, ids))


def task_after_write(
    conn: Connection, row: Any, written: dict[str, Any], *, reminders: tuple[Reminder, ...]
) -> Task:
    """The task as a row read in this transaction plus the columns written since.

    Only the tags are read again, so a hot write path need not read the task back (nor
    whether a skip settled it, unless it was settled before this write and still is).
    """
    merged = SimpleNamespace(**{**row._asdict(), **written})
    tag_names = tuple(r.name for r in conn.execute(_TAGS_OF_IDS, {"ids": [row.id]}))
    skipped = (
        "status" not in written
        and merged.status == TaskStatus.COMPLETED.value
        and conn.execute(_SHOWN_OF_TASK, {"task_id": row.id}).scalar() == SKIPPED
    )
    return Task.from_row(merged, tag_names, reminders, skipped=skipped)


_SHOWN_OF_TASK = select(SHOWN_STATUS).where(tasks.c.id == bindparam("task_id"))


def load_tasks(conn: Connection, ids: Sequence[UUID]) -> list[Task]:
    """The tasks with these IDs, in the order given."""
    rows = {r.id: r for r in conn.execute(_TASKS_OF_IDS, {"ids": list(ids)})}
    built = {t.id: t for t in _build(conn, list(rows.values()), list(ids))}
    return [built[i] for i in ids if i in built]


def _live_tree() -> Any:
    tree = select(tasks.c.id).where(tasks.c.id == bindparam("root_id")).cte("tree", recursive=True)
    return tree.union_all(
        select(tasks.c.id)
        .join(tree, tasks.c.parent_id == tree.c.id)
        .where(tasks.c.trashed.is_(False))
    )


# Built once: a checklist is read as three queries over one recursive walk, binding
# only the root, whatever the checklist's size.
LIVE_TREE = _live_tree()
SUBTREE_ROWS = select(tasks, _SHOWN).join(LIVE_TREE, LIVE_TREE.c.id == tasks.c.id)
_SUBTREE_TAGS = _tags_of(select(LIVE_TREE.c.id))
SUBTREE_REMINDERS = _reminders_of(select(LIVE_TREE.c.id))


def subtree_tree(conn: Connection, root_id: UUID) -> TreeNode:
    """The task and its live descendants as one ordered tree, in three statements."""
    key = {"root_id": root_id}
    rows = list(conn.execute(SUBTREE_ROWS, key))
    built = _tasks_from(
        rows, conn.execute(_SUBTREE_TAGS, key), conn.execute(SUBTREE_REMINDERS, key)
    )
    return _assemble(built, {root_id})[0]


def _assemble(found: Sequence[Task], roots: set[UUID] | None = None) -> list[TreeNode]:
    """Trees from tasks: a task whose parent is absent is a root; siblings by position."""
    present = {t.id for t in found}
    children: dict[UUID | None, list[Task]] = {}
    for t in found:
        parent = t.parent_id if t.parent_id in present else None
        if roots is not None and t.id in roots:
            parent = None
        children.setdefault(parent, []).append(t)

    def node(task: Task) -> TreeNode:
        kids = sorted(children.get(task.id, ()), key=lambda t: (t.position, t.ref))
        return TreeNode(task=task, children=tuple(node(k) for k in kids))

    tops = sorted(children.get(None, ()), key=lambda t: (t.position, t.ref))
    return [node(t) for t in tops]


def read_tree(
    conn: Connection,
    list_id: UUID,
    *,
    section: str | None,
    tag: str | None,
    status: str | None,
    due_from: date | None,
    due_to: date | None,
    planned: date | None,
    include_trashed: bool,
) -> list[TreeNode]:
    """The list's tasks as trees; with filters, matching tasks and their ancestors."""
    rows = list(conn.execute(select(tasks, _SHOWN).where(tasks.c.list_id == list_id)))
    by_id = {r.id: r for r in rows}
    if not include_trashed:
        hidden: set[UUID] = set()

        def is_hidden(row: Any) -> bool:
            chain: list[Any] = []
            while row is not None:
                if row.id in hidden or row.trashed:
                    hidden.update(c.id for c in chain)
                    hidden.add(row.id)
                    return True
                chain.append(row)
                row = by_id.get(row.parent_id)
            return False

        rows = [r for r in rows if not is_hidden(r)]
    filtered = any(v is not None for v in (section, tag, status, due_from, due_to, planned))
    if filtered:
        matching = set(
            conn.execute(
                _filters(
                    select(tasks.c.id).where(tasks.c.list_id == list_id),
                    section,
                    tag,
                    status,
                    due_from,
                    due_to,
                    planned,
                )
            ).scalars()
        )
        keep: set[UUID] = set()
        visible = {r.id for r in rows}
        for task_id in matching & visible:
            current: Any = by_id[task_id]
            while current is not None and current.id not in keep:
                keep.add(current.id)
                current = by_id.get(current.parent_id)
        rows = [r for r in rows if r.id in keep]
    built = _build(conn, rows, select(tasks.c.id).where(tasks.c.list_id == list_id))
    return _assemble(built)


# A page of a list's trees is keyed by its last top-level task's sibling order.
PageKey = tuple[int, str]


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
    raw_reminders = select(*_RAW_REMINDER_COLUMNS).where(task_reminders.c.task_id.in_(ids))
    return _PageStatements(
        rows=select(tasks, _SHOWN).where(mine),
        following=following,
        tags=_tags_of(ids),
        reminders=_reminders_of(ids),
        raw_rows=select(*_RAW_TASK_COLUMNS).where(mine),
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
_RAW_TASK_COLUMNS = [
    type_coerce(c, String).label(c.name)
    if c.name in _AS_STORED
    else SHOWN_STATUS.label("status")
    if c.name == "status"
    else c
    for c in tasks.c
]
_RAW_REMINDER_COLUMNS = [
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
    rows = list(conn.execute(page.rows, key))
    tops = [r for r in rows if r.parent_id is None]
    if not tops:
        return [], None
    last = max((r.position, r.ref) for r in tops)
    built = _tasks_from(rows, conn.execute(page.tags, key), conn.execute(page.reminders, key))
    return _assemble(built, {r.id for r in tops}), if_more(
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
    trees, last = _json_forest(
        rows, conn.execute(page.tags, key), conn.execute(page.raw_reminders, key), include_trashed
    )
    return trees, if_more(conn, list_id, last, include_trashed=include_trashed)


def page_key(list_id: UUID, limit: int, after: PageKey | None) -> dict[str, Any]:
    position, ref = after if after is not None else (_BEFORE_ALL, "")
    return {"list_id": list_id, "position": position, "ref": ref, "size": limit}


def if_more(
    conn: Connection, list_id: UUID, last: PageKey, *, include_trashed: bool
) -> PageKey | None:
    """``last`` (the page's last key) when another top-level task follows it, else ``None``."""
    key = {"list_id": list_id, "position": last[0], "ref": last[1]}
    return last if _FOLLOWING[include_trashed].first(conn, key) is not None else None


# The whole list read as JSON, in three statements.
_LIST_IDS = select(tasks.c.id).where(tasks.c.list_id == bindparam("list_id"))
_LIST_RAW_ROWS = select(*_RAW_TASK_COLUMNS).where(tasks.c.list_id == bindparam("list_id"))
_LIST_TAGS = _tags_of(_LIST_IDS)
_LIST_RAW_REMINDERS = (
    select(*_RAW_REMINDER_COLUMNS)
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
    trees, _last = _json_forest(
        rows,
        conn.execute(_LIST_TAGS, key),
        conn.execute(_LIST_RAW_REMINDERS, key),
        include_trashed,
    )
    return trees


_Entry = tuple[int, str, dict[str, Any]]
# Where each column of the tasks table sits in a raw row.
_COLUMN = {name: i for i, name in enumerate(TASK_COLUMNS)}


def _json_forest(
    rows: Sequence[Any], tag_rows: Any, reminder_rows: Any, include_trashed: bool
) -> tuple[list[dict[str, Any]], PageKey]:
    """The trees' JSON from raw task rows (a set closed under parents: every task's parent
    is among them or it is top-level) with their tags' and reminders' rows, and the sibling
    key of the last tree. Without the trash, a trashed task hides its whole subtree."""
    tag_map: dict[str | None, list[str]] = {}
    for task_id, name in tag_rows:
        tag_map.setdefault(uuid_text(task_id), []).append(name)
    reminder_map: dict[str | None, list[dict[str, Any]]] = {}
    for r in reminder_rows:
        reminder_map.setdefault(uuid_text(r.task_id), []).append(
            {
                "channel": r.channel,
                "local": r.local,
                "zone": r.zone,
                "at": instant_text(r.at),
                "recipient_id": uuid_text(r.recipient_id),
            }
        )
    children: dict[str | None, list[_Entry]] = {}
    c = _COLUMN
    for row in rows:
        trashed = bool(row[c["trashed"]])
        if trashed and not include_trashed:
            continue
        task_id = uuid_text(row[c["id"]])
        parent = uuid_text(row[c["parent_id"]])
        position, ref = row[c["position"]], row[c["ref"]]
        due_local = row[c["due_local"]]
        due: Any = (
            {"local": due_local, "zone": row[c["due_zone"]]}
            if due_local is not None
            else date_text(row[c["due_date"]])
        )
        children.setdefault(parent, []).append(
            (
                position,
                ref,
                {
                    "id": task_id,
                    "ref": ref,
                    "list_id": uuid_text(row[c["list_id"]]),
                    "section_id": uuid_text(row[c["section_id"]]),
                    "parent_id": parent,
                    "position": position,
                    "title": row[c["title"]],
                    "description": row[c["description"]],
                    "status": row[c["status"]],
                    "completed_at": instant_text(row[c["completed_at"]]),
                    "trashed": trashed,
                    "revision": row[c["revision"]],
                    "schedule_revision": row[c["schedule_revision"]],
                    "priority": row[c["priority"]],
                    "planned": date_text(row[c["planned_date"]]),
                    "due": due,
                    "series_id": uuid_text(row[c["series_id"]]),
                    "occurrence": row[c["occurrence"]],
                    "created_at": instant_text(row[c["created_at"]]),
                    "updated_at": instant_text(row[c["updated_at"]]),
                    "tags": tag_map.get(task_id, []),
                    "reminders": reminder_map.get(task_id, []),
                },
            )
        )

    # Reached only from a visible parent: a trashed task's subtree is never walked.
    def node(entry: _Entry) -> dict[str, Any]:
        found = entry[2]
        kids = sorted(children.get(found["id"], ()), key=_sibling_order)
        found["children"] = [node(k) for k in kids]
        return found

    tops = sorted(children.get(None, ()), key=_sibling_order)
    if not tops:
        return [], (_BEFORE_ALL, "")
    return [node(t) for t in tops], (tops[-1][0], tops[-1][1])


def _sibling_order(entry: _Entry) -> tuple[int, str]:
    return entry[0], entry[1]


def uuid_text(value: Any) -> str | None:
    """An ID as JSON text from what the database gave: SQLite's 32 hex digits (or a
    dashed text), or the driver's UUID."""
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) == 32:
            return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
        return value.lower()
    return str(value)


def instant_text(value: Any) -> str | None:
    """An instant as the domain's JSON (``…Z``, microseconds only when not zero) from the
    stored text (SQLite) or the driver's aware datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        return value[:-8] + "Z" if value.endswith(".000000Z") else value
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")  # type: ignore[no-any-return]


def date_text(value: Any) -> str | None:
    """A date as ``YYYY-MM-DD`` from the stored text (SQLite) or the driver's date."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return value.isoformat()  # type: ignore[no-any-return]


# Lower than any sibling position a task can have.
_BEFORE_ALL = -(2**63)


def _filters(
    query: Select[Any],
    section: str | None,
    tag: str | None,
    status: str | None,
    due_from: date | None,
    due_to: date | None,
    planned: date | None,
) -> Select[Any]:
    if section is not None:
        query = query.join(sections, sections.c.id == tasks.c.section_id).where(
            sections.c.name == section
        )
    if tag is not None:
        tagged = (
            select(task_tags.c.task_id)
            .join(tags, tags.c.id == task_tags.c.tag_id)
            .where(tags.c.name == tag)
        )
        query = query.where(tasks.c.id.in_(tagged))
    if status is not None:
        # As shown: a skipped task is not among the completed ones.
        shown: ColumnElement[Any] = SHOWN_STATUS
        query = query.where(shown == status)
    if planned is not None:
        query = query.where(tasks.c.planned_date == planned)
    if due_from is not None or due_to is not None:
        # A timed due value counts on its local date.
        local_day = func.substr(tasks.c.due_local, 1, 10)
        dated: list[ColumnElement[bool]] = [tasks.c.due_date.is_not(None)]
        timed: list[ColumnElement[bool]] = [tasks.c.due_local.is_not(None)]
        if due_from is not None:
            dated.append(tasks.c.due_date >= due_from)
            timed.append(local_day >= due_from.isoformat())
        if due_to is not None:
            dated.append(tasks.c.due_date <= due_to)
            timed.append(local_day <= due_to.isoformat())
        query = query.where(or_(and_(*dated), and_(*timed)))
    return query


# The detail's statements, built once and run on the driver (a task detail is the API's
# hottest read).
_TASK_ID: BindParameter[Any] = bindparam("task_id")
_TAGS_OF_TASK = Prepared(
    select(task_tags.c.task_id, tags.c.name)
    .join(tags, tags.c.id == task_tags.c.tag_id)
    .where(task_tags.c.task_id == _TASK_ID)
    .order_by(tags.c.name)
)
_REMINDERS_OF_TASK = Prepared(
    select(task_reminders)
    .where(task_reminders.c.task_id == _TASK_ID)
    .order_by(task_reminders.c.position)
)
_COMMENTS_OF = Prepared(
    select(comments).where(comments.c.task_id == _TASK_ID).order_by(comments.c.created_at)
)
_ATTACHMENTS_OF = Prepared(
    select(attachments).where(attachments.c.task_id == _TASK_ID).order_by(attachments.c.created_at)
)


def read_detail(conn: Connection, row: Any) -> TaskDetail:
    """The detail of the task ``row``, read by ``task_with_role(..., detail=True)`` (which
    brings the list's revision, the section's name and the count of live children)."""
    key = {"task_id": row.id}
    task = _tasks_from([row], _TAGS_OF_TASK.rows(conn, key), _REMINDERS_OF_TASK.rows(conn, key))[0]
    found_comments = tuple(
        Comment(
            id=c.id, task_id=c.task_id, author_id=c.author_id, body=c.body, created_at=c.created_at
        )
        for c in _COMMENTS_OF.rows(conn, key)
    )
    found_attachments = tuple(
        Attachment(
            id=a.id,
            task_id=a.task_id,
            author_id=a.author_id,
            name=a.name,
            media_type=a.media_type,
            size=a.size,
            sha256=a.sha256,
            created_at=a.created_at,
        )
        for a in _ATTACHMENTS_OF.rows(conn, key)
    )
    return TaskDetail(
        task=task,
        list=TaskList(
            id=row.list_id,
            name=row.list_name,
            status=ListStatus(row.list_status),
            revision=row.list_revision,
            role=Role(row.role) if getattr(row, "role", None) else None,
        ),
        section=row.section_name,
        comments=found_comments,
        attachments=found_attachments,
        children=row.live_children,
    )
