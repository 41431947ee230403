"""Who may do what: every read and write checks the actor's current role on the list.

A list the actor has no role on is, to them, a list that does not exist: the same
:class:`NotFound`, word for word, as an ID nobody uses, so no answer tells an outsider
that an ID is taken. Only a member with too low a role is :class:`Forbidden`.

A :class:`Delegation` is the one way past the roles: another domain that proved who is
calling hands an actor one checklist (a task and everything below it) for the writes it
allows, and every task outside that checklist, or that does not exist, is refused with the
delegation's own :class:`Forbidden`, word for word the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, overload
from uuid import UUID

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from kalends.errors import Forbidden, ListArchived, NotFound
from kalends.identity import Role, parse_uuid, require_role
from kalends.storage.prepared import Prepared
from kalends.storage.task_tables import list_members, lists, sections, tasks
from kalends.tasks.skips import SHOWN_STATUS
from kalends.tasks.task_rows import ListRow, TaskDetailRow, TaskRow
from kalends.tasks.tree import ancestor_ids
from kalends.tasks.values import ListStatus

# Built once and run on the driver: every list operation starts with this read.
_LIST_WITH_ROLE = Prepared(
    select(lists, list_members.c.role)
    .select_from(
        lists.outerjoin(
            list_members,
            (list_members.c.list_id == lists.c.id)
            & (list_members.c.actor_id == bindparam("actor_id")),
        )
    )
    .where(lists.c.id == bindparam("list_id"))
)


def require_list_role(
    conn: Connection, actor_id: UUID, list_id: UUID, minimum: Role, *, write: bool
) -> tuple[Role, ListRow]:
    """The actor's role and the list's row; refuses a missing membership or a lower role.

    A write to an archived list is refused with :class:`ListArchived`. A non-member is
    told what a list that does not exist tells anyone (:class:`NotFound`).
    """
    row = _LIST_WITH_ROLE.first(conn, {"list_id": list_id, "actor_id": actor_id})
    unseen = NotFound(f"list: no list {list_id}", field="list")
    if row is None:
        raise unseen
    role = require_role(row.role, minimum, scope="list", unseen=unseen)
    if write and row.status == ListStatus.ARCHIVED.value:
        raise ListArchived(f"the list {row.name!r} is archived")
    return role, ListRow.from_row(row)


def _task_with_role(condition: ColumnElement[bool], *extra: Any) -> Select[Any]:
    return (
        select(
            tasks,
            lists.c.status.label("list_status"),
            lists.c.name.label("list_name"),
            list_members.c.role,
            *extra,
        )
        .select_from(
            tasks.join(lists, lists.c.id == tasks.c.list_id).outerjoin(
                list_members,
                (list_members.c.list_id == tasks.c.list_id)
                & (list_members.c.actor_id == bindparam("actor_id")),
            )
        )
        .where(condition)
    )


# Built once and run on the driver: every task operation starts with this read.
_TASK_BY_ID = Prepared(_task_with_role(tasks.c.id == bindparam("key")))
_TASK_BY_REF = Prepared(_task_with_role(tasks.c.ref == bindparam("key")))

_child = tasks.alias("child")
_section = sections.alias("section")
# A task's detail also shows its list's revision, its section's name, how many live
# children it has and whether a skip settled it: read with the task, not after it.
_DETAIL_EXTRA = (
    lists.c.revision.label("list_revision"),
    SHOWN_STATUS.label("shown_status"),
    select(_section.c.name)
    .where(_section.c.id == tasks.c.section_id)
    .scalar_subquery()
    .label("section_name"),
    select(func.count())
    .select_from(_child)
    .where(_child.c.parent_id == tasks.c.id, _child.c.trashed.is_(False))
    .scalar_subquery()
    .label("live_children"),
)
_DETAIL_BY_ID = Prepared(_task_with_role(tasks.c.id == bindparam("key"), *_DETAIL_EXTRA))
_DETAIL_BY_REF = Prepared(_task_with_role(tasks.c.ref == bindparam("key"), *_DETAIL_EXTRA))


@overload
def task_with_role(
    conn: Connection,
    actor_id: UUID,
    task: UUID | str,
    minimum: Role,
    *,
    write: bool,
    detail: Literal[False] = False,
) -> TaskRow: ...


@overload
def task_with_role(
    conn: Connection,
    actor_id: UUID,
    task: UUID | str,
    minimum: Role,
    *,
    write: bool,
    detail: Literal[True],
) -> TaskDetailRow: ...


def task_with_role(
    conn: Connection,
    actor_id: UUID,
    task: UUID | str,
    minimum: Role,
    *,
    write: bool,
    detail: bool = False,
) -> TaskRow | TaskDetailRow:
    """The task's row (given by ID or short reference) once the actor's role allows ``minimum``.

    The row is a :class:`~kalends.tasks.task_rows.TaskRow`; with ``detail``, a
    :class:`~kalends.tasks.task_rows.TaskDetailRow`, which also has ``list_revision``,
    ``section_name`` and ``live_children`` (what :func:`~kalends.tasks.detail.read_detail`
    shows). A task of a list the actor has no role on is :class:`NotFound`, as one that
    does not exist.
    """
    as_id = parse_uuid(task, "task")
    if detail:
        statement = _DETAIL_BY_ID if as_id is not None else _DETAIL_BY_REF
    else:
        statement = _TASK_BY_ID if as_id is not None else _TASK_BY_REF
    key = as_id if as_id is not None else str(task).upper()
    row = statement.first(conn, {"actor_id": actor_id, "key": key})
    unseen = NotFound(f"task: no task {task!s}", field="task")
    if row is None:
        raise unseen
    require_role(row.role, minimum, scope="list", unseen=unseen)
    if write and row.list_status == ListStatus.ARCHIVED.value:
        raise ListArchived(f"the list {row.list_name!r} is archived")
    return TaskDetailRow.from_row(row) if detail else TaskRow.from_row(row)


@dataclass(frozen=True, slots=True, kw_only=True)
class Delegation:
    """Writes on the checklist below ``root_id`` (itself included) by ``actor_id``, who
    needs no role on its list; ``outside`` is the refusal for any other task."""

    actor_id: UUID
    root_id: UUID
    outside: Forbidden


def delegated_task(conn: Connection, delegation: Delegation, task: UUID | str) -> TaskRow:
    """The task's row (given by ID or short reference) once it is the delegation's root or
    lies below it, for a write: ``delegation.outside`` for any other task and for one that
    does not exist; :class:`ListArchived` on an archived list. The row's ``role`` is the
    delegate's own on the list, which nothing here asks for."""
    as_id = parse_uuid(task, "task")
    statement = _TASK_BY_ID if as_id is not None else _TASK_BY_REF
    key = as_id if as_id is not None else str(task).upper()
    row = statement.first(conn, {"actor_id": delegation.actor_id, "key": key})
    if row is None:
        raise delegation.outside
    found = TaskRow.from_row(row)
    if found.id != delegation.root_id and delegation.root_id not in ancestor_ids(conn, found.id):
        raise delegation.outside
    if found.list_status == ListStatus.ARCHIVED.value:
        raise ListArchived(f"the list {found.list_name!r} is archived")
    return found
