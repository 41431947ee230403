"""An outline made a task tree: a root task and nested items, written in one go inside
the caller's transaction, and the counts of that tree's open and completed items.

Another domain hands its own nested values (anything with a ``title`` and ``children``:
:class:`Outline`) to :func:`insert_tree`; it decides who may create the tree, so no role
is checked here. The rows are those :meth:`~kalends.tasks.TaskService.create` writes:
open tasks at revision 1 with a fresh short reference each, in sibling order, each with
its ``created`` history event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy import bindparam, func, select
from sqlalchemy.engine import Connection

from kalends.clock import require_aware
from kalends.errors import InvalidInput
from kalends.storage.ids import ids_at
from kalends.storage.prepared import inserting
from kalends.storage.task_tables import tasks
from kalends.tasks import history
from kalends.tasks.history import Event
from kalends.tasks.positions import POSITION_GAP
from kalends.tasks.refs import new_refs
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS
from kalends.tasks.values import TaskStatus, check_title

__all__ = [
    "MAX_OUTLINE_DEPTH",
    "Outline",
    "OutlineItem",
    "TreeSpec",
    "insert_tree",
    "insert_trees",
    "subtree_counts",
    "subtree_items",
]

_INSERT_SLICE = 500
"""Rows bound per INSERT of :func:`insert_trees` (each task with its ``created`` event)."""

MAX_OUTLINE_DEPTH = 8
"""How deep the items of an outline may nest below its root (a schedule's template's bound)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutlineItem:
    """A live task below a root, as :func:`subtree_items` reads it: ``depth`` 1 for the
    root's own items."""

    id: UUID
    ref: str
    parent_id: UUID
    depth: int
    title: str
    status: TaskStatus
    revision: int


class Outline(Protocol):
    """One item of an outline and its own items, in order."""

    @property
    def title(self) -> str: ...

    @property
    def children(self) -> Sequence[Outline]: ...


def _rows(items: Sequence[Outline]) -> list[tuple[int | None, int, str]]:
    """The items in pre-order with the index of their parent (``None``: the root)."""
    out: list[tuple[int | None, int, str]] = []

    def walk(level: Sequence[Outline], parent: int | None, depth: int) -> None:
        if level and depth > MAX_OUTLINE_DEPTH:
            raise InvalidInput(
                f"items: nest at most {MAX_OUTLINE_DEPTH} levels below the root", field="items"
            )
        for number, item in enumerate(level):
            here = len(out)
            out.append((parent, number, check_title(item.title, "items.title")))
            if len(out) > MAX_CHECKLIST_TASKS:
                raise InvalidInput(
                    f"items: at most {MAX_CHECKLIST_TASKS} items in all", field="items"
                )
            walk(item.children, here, depth + 1)

    walk(items, None, 1)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeSpec:
    """One tree for :func:`insert_trees`: its root ``root_id`` titled ``title`` at the end
    of the list's top level, ``items`` nested below it, ``note`` added to the root's
    ``created`` event."""

    list_id: UUID
    root_id: UUID
    title: str
    items: Sequence[Outline]
    note: Mapping[str, Any] | None = None


def insert_tree(
    conn: Connection,
    *,
    list_id: UUID,
    root_id: UUID,
    title: str,
    items: Sequence[Outline],
    actor_id: UUID,
    now: datetime,
    note: Mapping[str, Any] | None = None,
) -> list[UUID]:
    """Creates the task ``root_id`` titled ``title`` at the end of the list's top level,
    with ``items`` nested below it in their order (at most :data:`MAX_OUTLINE_DEPTH`
    levels, :data:`~kalends.tasks.series_rules.MAX_CHECKLIST_TASKS` items), all created
    by ``actor_id`` at ``now``, in the caller's transaction; returns the items' IDs in
    pre-order (the root's not among them).

    ``note`` is added to the root's ``created`` history event (what made the tree). A
    blank or overlong title is :class:`InvalidInput` before anything is written; the list
    must exist, and ``root_id`` be new (the database refuses a taken one).
    """
    spec = TreeSpec(list_id=list_id, root_id=root_id, title=title, items=items, note=note)
    (made,) = insert_trees(conn, [spec], actor_id=actor_id, now=now)
    return [item.id for item in made]


def insert_trees(
    conn: Connection, trees: Sequence[TreeSpec], *, actor_id: UUID, now: datetime
) -> list[list[OutlineItem]]:
    """:func:`insert_tree` for many trees in three statements whatever their number (the
    references drawn, the tasks, their history), the roots placed at the end of their
    lists in the given order; returns each tree's items in pre-order, as
    :func:`subtree_items` would read them. Every title and outline is checked before
    anything is written."""
    at = require_aware(now, "now")
    planned = [(spec, check_title(spec.title), _rows(spec.items)) for spec in trees]
    total = sum(len(flat) + 1 for _, _, flat in planned)
    if total == 0:
        return []
    refs = iter(new_refs(conn, total))
    item_ids = iter(ids_at(at, total - len(planned)))
    # Each root goes at the end of its list's top level: one query for every list.
    lists = sorted({spec.list_id for spec, _, _ in planned})
    last = dict(
        conn.execute(
            select(tasks.c.list_id, func.max(tasks.c.position))
            .where(tasks.c.list_id.in_(lists), tasks.c.parent_id.is_(None))
            .group_by(tasks.c.list_id)
        ).all()
    )
    ends: dict[UUID, int] = {list_id: last.get(list_id) or 0 for list_id in lists}
    rows: list[dict[str, Any]] = []
    events: list[Event] = []
    made: list[list[OutlineItem]] = []
    for spec, checked, flat in planned:
        ends[spec.list_id] += POSITION_GAP
        rows.append(
            _row(spec.root_id, next(refs), spec.list_id, None, ends[spec.list_id], checked,
                 actor_id, at)
        )  # fmt: skip
        note = {"title": checked, "list_id": str(spec.list_id), "tags": [], **dict(spec.note or {})}
        events.append(Event(spec.root_id, "created", note))
        items: list[OutlineItem] = []
        for parent, number, item_title in flat:
            parent_item = None if parent is None else items[parent]
            parent_id = spec.root_id if parent_item is None else parent_item.id
            task_id, ref = next(item_ids), next(refs)
            rows.append(
                _row(task_id, ref, spec.list_id, parent_id, (number + 1) * POSITION_GAP,
                     item_title, actor_id, at)
            )  # fmt: skip
            payload = {
                "title": item_title,
                "list_id": str(spec.list_id),
                "tags": [],
                "parent_id": str(parent_id),
            }
            events.append(Event(task_id, "created", payload))
            items.append(
                OutlineItem(
                    id=task_id, ref=ref, parent_id=parent_id,
                    depth=1 if parent_item is None else parent_item.depth + 1,
                    title=item_title, status=TaskStatus.OPEN, revision=1,
                )
            )  # fmt: skip
        made.append(items)
    # In slices: a round's thousands of rows bound at once would hold their parameters
    # (and the driver's copies) in memory together.
    for start in range(0, len(rows), _INSERT_SLICE):
        _INSERT_TASKS.many(conn, rows[start : start + _INSERT_SLICE])
        history.record(conn, actor_id, at, events[start : start + _INSERT_SLICE])
    return made


# Every column of ``tasks``, as :func:`_row` gives them; run on the driver (SQLAlchemy's
# executemany converted each row's parameters one by one: its instants, list and actor
# again for each task).
_INSERT_TASKS = inserting(tasks)


def _row(
    task_id: UUID,
    ref: str,
    list_id: UUID,
    parent_id: UUID | None,
    position: int,
    title: str,
    actor_id: UUID,
    now: datetime,
) -> dict[str, Any]:
    return {
        "id": task_id,
        "ref": ref,
        "list_id": list_id,
        "section_id": None,
        "parent_id": parent_id,
        "position": position,
        "title": title,
        "description": "",
        "status": TaskStatus.OPEN.value,
        "completed_at": None,
        "trashed": False,
        "trashed_at": None,
        "revision": 1,
        "schedule_revision": 0,
        "priority": None,
        "planned_date": None,
        "due_date": None,
        "due_local": None,
        "due_zone": None,
        "due_at": None,
        "series_id": None,
        "occurrence": None,
        "created_by": actor_id,
        "created_at": now,
        "updated_at": now,
    }


def _live_items() -> Any:
    tree = (
        select(tasks.c.id, tasks.c.status)
        .where(tasks.c.id == bindparam("root_id"))
        .cte("live_items", recursive=True)
    )
    return tree.union_all(
        select(tasks.c.id, tasks.c.status)
        .join(tree, tasks.c.parent_id == tree.c.id)
        .where(tasks.c.trashed.is_(False))
    )


_ITEMS = _live_items()
# Built once: asked at every settlement of a passage with a checklist.
_COUNTS = (
    select(_ITEMS.c.status, func.count())
    .where(_ITEMS.c.id != bindparam("root_id"))
    .group_by(_ITEMS.c.status)
)


def subtree_counts(conn: Connection, root_id: UUID) -> tuple[int, int]:
    """``(open, completed)`` over the root's live descendants at every level: the root
    itself is not counted, nor a trashed item and what lies below it. A task settled by
    a skip counts as completed (as it is stored)."""
    found: dict[str, int] = {}
    for status, number in conn.execute(_COUNTS, {"root_id": root_id}):
        found[status] = number
    return (
        int(found.get(TaskStatus.OPEN.value, 0)),
        int(found.get(TaskStatus.COMPLETED.value, 0)),
    )


def subtree_items(conn: Connection, root_id: UUID) -> list[OutlineItem]:
    """The root's live descendants (not in the trash, nor below a trashed one) in
    pre-order, each item before its own items and siblings in their order; the root is
    not among them."""
    rows = conn.execute(
        select(
            tasks.c.id,
            tasks.c.ref,
            tasks.c.parent_id,
            tasks.c.position,
            tasks.c.title,
            tasks.c.status,
            tasks.c.revision,
        ).where(tasks.c.id.in_(select(_ITEMS.c.id)), tasks.c.id != bindparam("root_id")),
        {"root_id": root_id},
    ).all()
    children: dict[UUID, list[Any]] = {}
    for row in rows:
        children.setdefault(row.parent_id, []).append(row)
    found: list[OutlineItem] = []

    def walk(parent: UUID, depth: int) -> None:
        for row in sorted(children.get(parent, ()), key=lambda r: (r.position, r.id)):
            found.append(
                OutlineItem(
                    id=row.id,
                    ref=row.ref,
                    parent_id=parent,
                    depth=depth,
                    title=row.title,
                    status=TaskStatus(row.status),
                    revision=row.revision,
                )
            )
            walk(row.id, depth + 1)

    walk(root_id, 1)
    return found
