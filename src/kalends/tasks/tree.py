"""Checklist trees: subtrees and ancestors in one recursive query each."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Select, bindparam, exists, literal, select
from sqlalchemy.engine import Connection

from kalends.storage.task_tables import tasks


def subtree_ids(conn: Connection, root_id: UUID, *, live_only: bool = False) -> list[UUID]:
    """The root and all its descendants (pre-order is not promised).

    ``live_only`` leaves out trashed tasks and everything under them.
    """
    base = select(tasks.c.id).where(tasks.c.id == root_id)
    if live_only:
        base = base.where(tasks.c.trashed.is_(False))
    tree = base.cte("subtree", recursive=True)
    step = select(tasks.c.id).join(tree, tasks.c.parent_id == tree.c.id)
    if live_only:
        step = step.where(tasks.c.trashed.is_(False))
    tree = tree.union_all(step)
    return list(conn.execute(select(tree.c.id)).scalars())


def ancestor_ids(conn: Connection, task_id: UUID) -> list[UUID]:
    """The task's ancestors, nearest first."""
    start = select(tasks.c.parent_id.label("id"), literal(1).label("depth")).where(
        tasks.c.id == task_id
    )
    chain = start.cte("chain", recursive=True)
    step = select(tasks.c.parent_id, chain.c.depth + 1).join(chain, tasks.c.id == chain.c.id)
    chain = chain.union_all(step)
    rows = conn.execute(
        select(chain.c.id).where(chain.c.id.is_not(None)).order_by(chain.c.depth)
    ).scalars()
    return list(rows)


def _trashed_in_chain() -> Select[tuple[bool]]:
    chain = (
        select(tasks.c.id, tasks.c.parent_id, tasks.c.trashed)
        .where(tasks.c.id == bindparam("task_id"))
        .cte("trash_chain", recursive=True)
    )
    chain = chain.union_all(
        select(tasks.c.id, tasks.c.parent_id, tasks.c.trashed).join(
            chain, tasks.c.id == chain.c.parent_id
        )
    )
    return select(exists().where(chain.c.trashed.is_(True)))


# Built once: the check runs on every write to a checklist item.
_TRASHED_IN_CHAIN = _trashed_in_chain()


def hidden_by_trash(conn: Connection, task_id: UUID) -> bool:
    """Whether the task or one of its ancestors is in the trash, in one statement."""
    return bool(conn.execute(_TRASHED_IN_CHAIN, {"task_id": task_id}).scalar())
