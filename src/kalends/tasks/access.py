"""Who may do what: every read and write checks the actor's current role on the list.

A list the actor has no role on is, to them, a list that does not exist: the same
:class:`NotFound`, word for word, as an ID nobody uses, so no answer tells an outsider
that an ID is taken. Only a member with too low a role is :class:`Forbidden`.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from kalends.errors import Forbidden, InvalidInput, ListArchived, NotFound
from kalends.storage.prepared import Prepared
from kalends.storage.task_tables import actors, list_members, lists, sections, tasks
from kalends.tasks.skips import SHOWN_STATUS
from kalends.tasks.values import ListStatus, Role


def parse_uuid(value: object, field: str) -> UUID | None:
    """A UUID given as such or as text; ``None`` when the text is not a UUID."""
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            return None
    raise InvalidInput(f"{field}: an ID or reference is expected, got {value!r}", field=field)


_ACTOR_BY_ID = select(actors.c.id).where(actors.c.id == bindparam("key"))
_ACTOR_BY_HANDLE = select(actors.c.id).where(actors.c.handle == bindparam("key"))


class KnownActor(UUID):
    """The ID of an actor known to exist: read from a live credential in this process.

    Actors are never deleted, so :func:`resolve_actor` takes it as it is, without the
    read that checks an ID someone typed.
    """

    __slots__ = ()

    @classmethod
    def of(cls, actor_id: UUID) -> KnownActor:
        return actor_id if isinstance(actor_id, KnownActor) else cls(int=actor_id.int)


def resolve_actor(conn: Connection, actor: UUID | str, field: str = "actor") -> UUID:
    """The ID of an actor given by ID or handle; unknown actors are :class:`NotFound`."""
    if isinstance(actor, KnownActor):
        return actor
    as_id = parse_uuid(actor, field)
    statement = _ACTOR_BY_ID if as_id is not None else _ACTOR_BY_HANDLE
    found = conn.execute(statement, {"key": as_id or actor}).scalar()
    if found is None:
        raise NotFound(f"{field}: no actor {actor!r}", field=field)
    return found  # type: ignore[no-any-return]


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
) -> tuple[Role, Any]:
    """The actor's role and the list row; refuses a missing membership or a lower role.

    A write to an archived list is refused with :class:`ListArchived`. A non-member is
    told what a list that does not exist tells anyone (:class:`NotFound`).
    """
    row = _LIST_WITH_ROLE.first(conn, {"list_id": list_id, "actor_id": actor_id})
    if row is None or row.role is None:
        raise NotFound(f"list: no list {list_id}", field="list")
    return _check(row, minimum, write), row


def _check(row: Any, minimum: Role, write: bool) -> Role:
    role = Role(row.role)
    if role.rank < minimum.rank:
        raise Forbidden(f"this needs the {minimum.value} role on the list; you are {role.value}")
    if write and row.status == ListStatus.ARCHIVED.value:
        raise ListArchived(f"the list {row.name!r} is archived")
    return role


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


def task_with_role(
    conn: Connection,
    actor_id: UUID,
    task: UUID | str,
    minimum: Role,
    *,
    write: bool,
    detail: bool = False,
) -> Any:
    """The task row (given by ID or short reference) once the actor's role allows ``minimum``.

    With ``detail`` the row also has ``list_revision``, ``section_name`` and
    ``live_children`` (what :func:`~kalends.tasks.reads.read_detail` shows). A task of a
    list the actor has no role on is :class:`NotFound`, as one that does not exist.
    """
    as_id = parse_uuid(task, "task")
    if detail:
        statement = _DETAIL_BY_ID if as_id is not None else _DETAIL_BY_REF
    else:
        statement = _TASK_BY_ID if as_id is not None else _TASK_BY_REF
    key = as_id if as_id is not None else str(task).upper()
    row = statement.first(conn, {"actor_id": actor_id, "key": key})
    if row is None or row.role is None:
        raise NotFound(f"task: no task {task!s}", field="task")
    role = Role(row.role)
    if role.rank < minimum.rank:
        raise Forbidden(f"this needs the {minimum.value} role on the list; you are {role.value}")
    if write and row.list_status == ListStatus.ARCHIVED.value:
        raise ListArchived(f"the list {row.list_name!r} is archived")
    return row
