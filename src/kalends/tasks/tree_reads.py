"""A list's tasks, or one checklist, as ordered trees of values; with filters, the
matching tasks and their ancestors.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any
from uuid import UUID

from sqlalchemy import Select, and_, bindparam, func, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from kalends.storage.task_tables import (
    sections,
    tags,
    task_tags,
    tasks,
)
from kalends.tasks.loading import SHOWN, build_tasks, reminders_of, tags_of, tasks_from
from kalends.tasks.models import (
    Task,
    TreeNode,
)
from kalends.tasks.skips import SHOWN_STATUS
from kalends.tasks.task_rows import ShownTask


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
SUBTREE_ROWS = select(tasks, SHOWN).join(LIVE_TREE, LIVE_TREE.c.id == tasks.c.id)
_SUBTREE_TAGS = tags_of(select(LIVE_TREE.c.id))
SUBTREE_REMINDERS = reminders_of(select(LIVE_TREE.c.id))


def subtree_tree(conn: Connection, root_id: UUID) -> TreeNode:
    """The task and its live descendants as one ordered tree, in three statements."""
    key = {"root_id": root_id}
    rows: list[ShownTask] = list(conn.execute(SUBTREE_ROWS, key))
    built = tasks_from(rows, conn.execute(_SUBTREE_TAGS, key), conn.execute(SUBTREE_REMINDERS, key))
    return assemble(built, {root_id})[0]


def assemble(found: Sequence[Task], roots: set[UUID] | None = None) -> list[TreeNode]:
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
    rows: list[ShownTask] = list(
        conn.execute(select(tasks, SHOWN).where(tasks.c.list_id == list_id))
    )
    # Asked with parent IDs, a top-level task's None among them (which no task has).
    by_id: dict[UUID | None, ShownTask] = {r.id: r for r in rows}
    if not include_trashed:
        hidden: set[UUID] = set()

        def is_hidden(row: ShownTask) -> bool:
            chain: list[ShownTask] = []
            current: ShownTask | None = row
            while current is not None:
                if current.id in hidden or current.trashed:
                    hidden.update(c.id for c in chain)
                    hidden.add(current.id)
                    return True
                chain.append(current)
                current = by_id.get(current.parent_id)
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
            ancestor: ShownTask | None = by_id[task_id]
            while ancestor is not None and ancestor.id not in keep:
                keep.add(ancestor.id)
                ancestor = by_id.get(ancestor.parent_id)
        rows = [r for r in rows if r.id in keep]
    built = build_tasks(conn, rows, select(tasks.c.id).where(tasks.c.list_id == list_id))
    return assemble(built)


# A page of a list's trees is keyed by its last top-level task's sibling order.
PageKey = tuple[int, str]


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
