"""Trees of tasks as JSON text, for the HTTP API: on SQLite the database writes each task's
JSON itself and Python only joins the texts into trees.

A page of trees (or a whole list) is one statement on SQLite: the page's recursive walk,
and for each of its tasks ``json_object(...)`` with the task's tags and reminders as
subqueries (``json_group_array`` over their sibling order). The text equals the domain's
JSON (``TreeNode.to_json``) once parsed: IDs with their dashes, instants in ``…Z`` with
microseconds only when not zero, dates as stored. Python then nests each task's text in
its parent's ``children``. This costs about a third of reading the rows and building the
JSON in Python (the tags and the reminders were two more statements, and every value went
through Python twice).

PostgreSQL reads the rows and builds the JSON in Python (:mod:`kalends.tasks.reads`),
then encodes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

import orjson
from sqlalchemy import Select, String, bindparam, func, literal_column, select, type_coerce
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from kalends.storage.prepared import Prepared
from kalends.storage.task_tables import tags, task_reminders, task_tags, tasks
from kalends.tasks.reads import (
    PageKey,
    if_more,
    page_ids,
    page_key,
    read_tree_json,
    read_tree_page_json,
)
from kalends.tasks.skips import SHOWN_STATUS

__all__ = ["read_tree_page_text", "read_tree_text"]

Text = ColumnElement[Any]


def _sql(text: str) -> Text:
    """A constant of the statement, written into it rather than bound on every run."""
    return literal_column(text)


def _concat(*parts: Text) -> Text:
    out = parts[0]
    for part in parts[1:]:
        out = out.concat(part)
    return out


def _dashed(column: Text) -> Text:
    """An ID stored as 32 hex digits, as the domain writes it: 8-4-4-4-12 with dashes."""
    cuts = ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
    parts: list[Text] = []
    for start, length in cuts:
        if parts:
            parts.append(_sql("'-'"))
        parts.append(func.substr(column, _sql(str(start)), _sql(str(length))))
    return _concat(*parts)


def _optional_id(column: Text) -> Text:
    return func.iif(column.is_(None), _sql("NULL"), _dashed(column))


# Stored instants are 'YYYY-MM-DDTHH:MM:SS.ffffffZ'; the domain drops a zero fraction.
_NO_FRACTION = ".000000Z"


def _instant(column: Text) -> Text:
    whole = _concat(func.substr(column, _sql("1"), _sql("19")), _sql("'Z'"))
    return func.iif(func.substr(column, _sql("20")) == _sql(f"'{_NO_FRACTION}'"), whole, column)


def _object(*pairs: tuple[str, Text]) -> Text:
    args: list[Text] = []
    for key, value in pairs:
        args += [_sql(f"'{key}'"), value]
    return func.json_object(*args)


def _boolean(column: Text) -> Text:
    return func.json(func.iif(column, _sql("'true'"), _sql("'false'")))


def _task_tags() -> Text:
    names = (
        select(tags.c.name.label("name"))
        .join(task_tags, task_tags.c.tag_id == tags.c.id)
        .where(task_tags.c.task_id == tasks.c.id)
        .order_by(tags.c.name)
        .correlate(tasks)
        .subquery("task_tag_names")
    )
    # A subquery's order is the aggregate's: SQLite does not flatten an ordered subquery
    # into an aggregate for that reason.
    return func.json(select(func.json_group_array(names.c.name)).scalar_subquery())


def _task_reminders() -> Text:
    r = task_reminders
    ordered = (
        select(r.c.channel, r.c.local, r.c.zone, r.c.at, r.c.recipient_id)
        .where(r.c.task_id == tasks.c.id)
        .order_by(r.c.position)
        .correlate(tasks)
        .subquery("task_reminder_rows")
    )
    each = _object(
        ("channel", ordered.c.channel),
        ("local", ordered.c.local),
        ("zone", ordered.c.zone),
        ("at", _instant(ordered.c.at)),
        ("recipient_id", _dashed(ordered.c.recipient_id)),
    )
    return func.json(select(func.json_group_array(each)).scalar_subquery())


def _task_json() -> Text:
    """The task's JSON as ``Task.to_json`` writes it; ``list_id`` is bound (the list's)."""
    t = tasks.c
    due = func.iif(
        t.due_local.is_not(None),
        _object(("local", t.due_local), ("zone", t.due_zone)),
        func.json_quote(t.due_date),
    )
    return _object(
        ("id", _dashed(t.id)),
        ("ref", t.ref),
        ("list_id", bindparam("list_text")),
        ("section_id", _optional_id(t.section_id)),
        ("parent_id", _optional_id(t.parent_id)),
        ("position", t.position),
        ("title", t.title),
        ("description", t.description),
        ("status", SHOWN_STATUS),
        (
            "completed_at",
            func.iif(t.completed_at.is_(None), _sql("NULL"), _instant(t.completed_at)),
        ),
        ("trashed", _boolean(t.trashed)),
        ("revision", t.revision),
        ("schedule_revision", t.schedule_revision),
        ("priority", t.priority),
        ("planned", t.planned_date),
        ("due", func.json(due)),
        ("series_id", _optional_id(t.series_id)),
        ("occurrence", t.occurrence),
        ("created_at", _instant(t.created_at)),
        ("updated_at", _instant(t.updated_at)),
        ("tags", _task_tags()),
        ("reminders", _task_reminders()),
    )


def _rows(*where: ColumnElement[bool]) -> Select[Any]:
    t = tasks.c
    # The IDs as stored (only compared with one another here): no UUID made for each.
    task_id, parent_id = type_coerce(t.id, String), type_coerce(t.parent_id, String)
    return (
        select(task_id, parent_id, t.position, t.ref, t.trashed, _task_json().label("body"))
        .where(*where)
        .order_by(t.position, t.ref)
    )


# Built once and run on the driver, their columns as stored: the statements of a page
# (by whether the trash is shown) and of a list.
_PAGE_ROWS = {
    flag: Prepared(_rows(tasks.c.id.in_(select(page_ids(flag).c.id))), typed=False)
    for flag in (False, True)
}
_LIST_ROWS = Prepared(_rows(tasks.c.list_id == bindparam("list_id")), typed=False)

_TextRow = tuple[str, str | None, int, str, int, str]
"""A row of :func:`_rows` as SQLite gives it (no other database runs them; a plain tuple,
as the driver makes it): the task's and its parent's IDs as stored, its sibling order
(``position``, ``ref``), whether it is trashed (0 or 1), and its JSON text."""


def _trees(rows: Iterable[_TextRow], include_trashed: bool) -> tuple[str, PageKey | None]:
    """The trees' JSON from rows ``(id, parent_id, position, ref, trashed, body)`` in
    sibling order (a set closed under parents), and the sibling key of the last tree.
    Without the trash a trashed task and everything under it are left out."""
    children: dict[str, list[tuple[str, str]]] = {}
    tops: list[tuple[str, str]] = []
    last: PageKey | None = None
    for task_id, parent_id, position, ref, trashed, body in rows:
        if trashed and not include_trashed:
            continue
        if parent_id is None:
            tops.append((task_id, body))
            last = (position, ref)
        else:
            children.setdefault(parent_id, []).append((task_id, body))

    def node(task_id: str, body: str) -> str:
        kids = children.get(task_id)
        inner = ",".join([node(*kid) for kid in kids]) if kids else ""
        return f'{body[:-1]},"children":[{inner}]}}'

    return "[" + ",".join([node(*top) for top in tops]) + "]", last


def read_tree_page_text(
    conn: Connection,
    list_id: UUID,
    *,
    limit: int,
    after: PageKey | None,
    include_trashed: bool,
) -> tuple[str, PageKey | None]:
    """:func:`~kalends.tasks.reads.read_tree_page_json` as JSON text, and the key of the
    next page (``None`` on the last): two statements on SQLite (the page, and whether a
    top-level task follows it)."""
    if conn.dialect.name != "sqlite":
        trees, following = read_tree_page_json(
            conn, list_id, limit=limit, after=after, include_trashed=include_trashed
        )
        return orjson.dumps(trees).decode(), following
    key = page_key(list_id, limit, after)
    key["list_text"] = str(list_id)
    text, last = _trees(_PAGE_ROWS[include_trashed].rows(conn, key), include_trashed)
    if last is None:
        return text, None
    return text, if_more(conn, list_id, last, include_trashed=include_trashed)


def read_tree_text(conn: Connection, list_id: UUID, *, include_trashed: bool) -> str:
    """:func:`~kalends.tasks.reads.read_tree_json` as JSON text: one statement on SQLite."""
    if conn.dialect.name != "sqlite":
        return orjson.dumps(read_tree_json(conn, list_id, include_trashed=include_trashed)).decode()
    key = {"list_id": list_id, "list_text": str(list_id)}
    return _trees(_LIST_ROWS.rows(conn, key), include_trashed)[0]
