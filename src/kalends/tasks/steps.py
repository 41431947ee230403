"""The shared steps of task operations: revision checks, compare-and-swap, trash checks,
tags, and the ``after_task_update`` hook contract.

The task operations cancel reminder intents with :func:`kalends.reminders.cancel_intents`,
named here again for them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

from sqlalchemy import Update, bindparam, delete, insert, select, update
from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, NotFound, RevisionConflict, TaskTrashed
from kalends.identity import ActorRef, Role, check_name, parse_uuid, resolve_actor
from kalends.reminders import cancel_intents as cancel_intents  # noqa: PLC0414
from kalends.storage.task_tables import lists, sections, tags, task_tags, tasks
from kalends.storage.unit_of_work import Store
from kalends.storage.upsert import insert_missing
from kalends.tasks.access import Delegation, delegated_task, task_with_role
from kalends.tasks.task_rows import TaskRow
from kalends.tasks.tree import hidden_by_trash
from kalends.tasks.values import MAX_TAG_LENGTH

TaskRef = UUID | str


@dataclass(frozen=True, slots=True)
class TaskChange:
    """What a transition did, handed to every ``after_task_update`` hook."""

    kind: str
    root_id: UUID
    actor_id: UUID
    at: datetime
    complete_subtree: bool = False


# after_task_update(tx, task_ids, change): runs inside the operation's transaction;
# raising aborts the whole operation.
AfterTaskUpdate = Callable[[Connection, Sequence[UUID], TaskChange], None]


class ServiceBase:
    """What every part of the task service shares: the store, the hooks, the write preamble."""

    def __init__(self, store: Store, hooks: Iterable[AfterTaskUpdate] = ()) -> None:
        self.store = store
        self.hooks: list[AfterTaskUpdate] = list(hooks)

    def _writable(
        self, conn: Connection, actor: ActorRef, task: TaskRef, expected_revision: int
    ) -> tuple[UUID, TaskRow, datetime]:
        actor_id = resolve_actor(conn, actor)
        row = task_with_role(conn, actor_id, task, Role.EDITOR, write=True)
        expect_revision(row, expected_revision)
        require_live(conn, row, "task")
        return actor_id, row, self.store.clock.now()

    def _delegated(
        self, conn: Connection, delegation: Delegation, task: TaskRef, expected_revision: int | None
    ) -> tuple[TaskRow, datetime]:
        """The write preamble of a delegate: the task within the delegation (its refusal
        otherwise), at ``expected_revision`` when one is given, not in the trash."""
        row = delegated_task(conn, delegation, task)
        if expected_revision is not None:
            expect_revision(row, expected_revision)
        require_live(conn, row, "task")
        return row, self.store.clock.now()

    def _reread(
        self, conn: Connection, actor_id: UUID, row: TaskRow, expected_revision: int
    ) -> TaskRow:
        """The task row read again after taking a lock, with the same checks."""
        fresh = task_with_role(conn, actor_id, row.id, Role.EDITOR, write=True)
        expect_revision(fresh, expected_revision)
        if fresh.list_id != row.list_id:
            raise RevisionConflict("the task moved to another list meanwhile")
        require_live(conn, fresh, "task")
        return fresh

    def _notify(self, conn: Connection, task_ids: Sequence[UUID], change: TaskChange) -> None:
        for hook in self.hooks:
            hook(conn, task_ids, change)


_LOCK_LISTS = (
    select(lists.c.id)
    .where(lists.c.id.in_(bindparam("ids", expanding=True)))
    .order_by(lists.c.id)
    .with_for_update()
)


def lock_lists(conn: Connection, *list_ids: UUID) -> None:
    """Serialises changes to the shape of these lists' trees (reparenting, moving
    subtrees, adding children) on PostgreSQL; SQLite's write lock already does.

    Callers read the rows they depend on again after this, since PostgreSQL gives
    each statement a fresh view once the lock is held.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(_LOCK_LISTS, {"ids": sorted(set(list_ids))})


def expect_revision(row: TaskRow, expected_revision: object) -> None:
    if not isinstance(expected_revision, int) or isinstance(expected_revision, bool):
        raise InvalidInput(
            f"expected_revision: a whole number is required, got {expected_revision!r}",
            field="expected_revision",
        )
    if row.revision != expected_revision:
        raise RevisionConflict(
            f"the task changed: expected revision {expected_revision}, it is {row.revision}",
            expected=expected_revision,
            actual=row.revision,
        )


@lru_cache(maxsize=64)
def _cas_statement(columns: tuple[str, ...]) -> Update:
    # Built once per set of columns: building SQL expressions costs more than running them.
    return (
        update(tasks)
        .where(tasks.c.id == bindparam("_id"), tasks.c.revision == bindparam("_expected"))
        .values(
            {
                **{name: bindparam(f"v_{name}") for name in columns},
                "revision": tasks.c.revision + 1,
                "updated_at": bindparam("_now"),
            }
        )
    )


def cas(
    conn: Connection, row: TaskRow, expected_revision: int, now: datetime, values: dict[str, Any]
) -> None:
    """One compare-and-swap on the task's revision; zero rows means someone else won."""
    statement = _cas_statement(tuple(sorted(values)))
    result = conn.execute(
        statement,
        {
            **{f"v_{name}": value for name, value in values.items()},
            "_id": row.id,
            "_expected": expected_revision,
            "_now": now,
        },
    )
    if result.rowcount == 0:
        actual = conn.execute(select(tasks.c.revision).where(tasks.c.id == row.id)).scalar()
        raise RevisionConflict(
            f"the task changed: expected revision {expected_revision}, it is {actual}",
            expected=expected_revision,
            actual=actual,
        )


def require_live(conn: Connection, row: TaskRow, field: str) -> None:
    if row.trashed or (row.parent_id is not None and hidden_by_trash(conn, row.parent_id)):
        raise TaskTrashed(f"{field}: the task is in the trash (itself or an ancestor)")


def sibling_id(conn: Connection, ref: TaskRef | None, field: str) -> UUID | None:
    """The ID of the sibling named by ``before``/``after`` (an ID or a short reference)."""
    if ref is None:
        return None
    as_id = parse_uuid(ref, field)
    if as_id is not None:
        return as_id
    found = conn.execute(select(tasks.c.id).where(tasks.c.ref == str(ref).upper())).scalar()
    if found is None:
        raise NotFound(f"{field}: no task {ref!s}", field=field)
    return found  # type: ignore[no-any-return]


def section_id(conn: Connection, list_id: UUID, name: str | None) -> UUID | None:
    if name is None:
        return None
    found = conn.execute(
        select(sections.c.id).where(sections.c.list_id == list_id, sections.c.name == name)
    ).scalar()
    if found is None:
        raise NotFound(f"section: the list has no section {name!r}", field="section")
    return found  # type: ignore[no-any-return]


def tag_names(names: Sequence[str]) -> list[str]:
    if isinstance(names, str):
        names = [names]
    checked = [check_name(n, "tags", MAX_TAG_LENGTH) for n in names]
    return sorted(set(checked))


def tag_names_of(conn: Connection, ids: Sequence[UUID]) -> dict[UUID, frozenset[str]]:
    found: dict[UUID, set[str]] = {}
    rows = conn.execute(
        select(task_tags.c.task_id, tags.c.name)
        .join(tags, tags.c.id == task_tags.c.tag_id)
        .where(task_tags.c.task_id.in_(ids))
    )
    for task_id, name in rows:
        found.setdefault(task_id, set()).add(name)
    return {k: frozenset(v) for k, v in found.items()}


def group_by_tags(names: dict[UUID, frozenset[str]]) -> dict[frozenset[str], list[UUID]]:
    groups: dict[frozenset[str], list[UUID]] = {}
    for task_id, name_set in names.items():
        groups.setdefault(name_set, []).append(task_id)
    return groups


def set_tags(
    conn: Connection,
    list_id: UUID,
    task_ids: Sequence[UUID],
    names: Sequence[str],
    *,
    replace: bool,
) -> None:
    """Links the tasks to the named tags of ``list_id``, creating missing tags."""
    if replace:
        conn.execute(delete(task_tags).where(task_tags.c.task_id.in_(task_ids)))
    if not names or not task_ids:
        return
    existing = dict(
        conn.execute(
            select(tags.c.name, tags.c.id).where(tags.c.list_id == list_id, tags.c.name.in_(names))
        ).all()
    )
    missing = [n for n in names if n not in existing]
    if missing:
        # Another writer may create the same tag meanwhile: insert what is missing, reread.
        insert_missing(
            conn,
            tags,
            [{"id": uuid.uuid4(), "list_id": list_id, "name": n} for n in missing],
            ("list_id", "name"),
        )
        existing.update(
            conn.execute(
                select(tags.c.name, tags.c.id).where(
                    tags.c.list_id == list_id, tags.c.name.in_(missing)
                )
            ).all()
        )
    linked = {
        (task_id, tag_id)
        for task_id, tag_id in conn.execute(
            select(task_tags.c.task_id, task_tags.c.tag_id).where(
                task_tags.c.task_id.in_(task_ids), task_tags.c.tag_id.in_(existing.values())
            )
        )
    }
    rows = [
        {"task_id": t, "tag_id": existing[n]}
        for t in task_ids
        for n in names
        if (t, existing[n]) not in linked
    ]
    if rows:
        conn.execute(insert(task_tags), rows)
