"""Sibling order: sparse integer positions, renumbered only when a gap closes."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from kalends.errors import InvalidInput
from kalends.storage.task_tables import tasks

POSITION_GAP = 1 << 20


def _siblings(list_id: UUID, parent_id: UUID | None) -> ColumnElement[bool]:
    same_parent = (
        tasks.c.parent_id.is_(None) if parent_id is None else tasks.c.parent_id == parent_id
    )
    return (tasks.c.list_id == list_id) & same_parent


def end_position(conn: Connection, list_id: UUID, parent_id: UUID | None) -> int:
    last = conn.execute(
        select(func.max(tasks.c.position)).where(_siblings(list_id, parent_id))
    ).scalar()
    return (last or 0) + POSITION_GAP


def position_near(
    conn: Connection,
    list_id: UUID,
    parent_id: UUID | None,
    *,
    before: UUID | None = None,
    after: UUID | None = None,
    moving: UUID | None = None,
) -> int:
    """A position just before ``before`` or just after ``after`` among the siblings.

    Both anchors must be siblings under ``parent_id``; ``moving`` (the task being
    moved) is ignored when looking for the neighbour.
    """
    if before is None and after is None:
        return end_position(conn, list_id, parent_id)
    if before is not None and after is not None:
        raise InvalidInput("position: give 'before' or 'after', not both", field="position")
    anchor = before if before is not None else after
    scope = _siblings(list_id, parent_id)
    anchor_position = conn.execute(
        select(tasks.c.position).where(scope, tasks.c.id == anchor)
    ).scalar()
    if anchor_position is None:
        field = "before" if before is not None else "after"
        raise InvalidInput(f"{field}: that task is not a sibling of this one", field=field)
    others = scope if moving is None else scope & (tasks.c.id != moving)
    if before is not None:
        neighbour = conn.execute(
            select(func.max(tasks.c.position)).where(others, tasks.c.position < anchor_position)
        ).scalar()
        low, high = (
            neighbour if neighbour is not None else anchor_position - 2 * POSITION_GAP,
            anchor_position,
        )
    else:
        neighbour = conn.execute(
            select(func.min(tasks.c.position)).where(others, tasks.c.position > anchor_position)
        ).scalar()
        low, high = (
            anchor_position,
            neighbour if neighbour is not None else anchor_position + 2 * POSITION_GAP,
        )
    if high - low > 1:
        return int((low + high) // 2)
    renumber(conn, list_id, parent_id)
    return position_near(conn, list_id, parent_id, before=before, after=after, moving=moving)


def renumber(conn: Connection, list_id: UUID, parent_id: UUID | None) -> None:
    """Spreads the siblings' positions out again, keeping their order."""
    ids = list(
        conn.execute(
            select(tasks.c.id).where(_siblings(list_id, parent_id)).order_by(tasks.c.position)
        ).scalars()
    )
    for n, task_id in enumerate(ids, 1):
        conn.execute(update(tasks).where(tasks.c.id == task_id).values(position=n * POSITION_GAP))
