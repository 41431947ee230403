"""Actors, lists, memberships and sections: one transaction per operation."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from uuid import UUID

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.clock import require_aware
from kalends.errors import Conflict, InvalidInput, NotFound, RevisionConflict
from kalends.identity import Actor, ActorDirectory, Role, check_name, parse_uuid, resolve_actor
from kalends.storage.identity_tables import actors
from kalends.storage.task_tables import list_members, lists, sections
from kalends.tasks.access import require_list_role
from kalends.tasks.models import Section, TaskList
from kalends.tasks.values import ListStatus

# Sections are ordered by position, spaced so that inserting needs no renumbering.
POSITION_GAP = 1 << 20


class Directory(ActorDirectory):
    """Who exists (:class:`~kalends.identity.ActorDirectory`) and who may see which list."""

    # --- lists -------------------------------------------------------------------------

    def create_list(self, actor: UUID | str, name: str) -> TaskList:
        """Creates an active list owned by ``actor``."""
        checked = check_name(name, "name")

        def run(conn: Connection) -> TaskList:
            actor_id = resolve_actor(conn, actor)
            created = TaskList(
                id=uuid.uuid4(), name=checked, status=ListStatus.ACTIVE, revision=1, role=Role.OWNER
            )
            insert_list(
                conn, created.id, checked, {actor_id: Role.OWNER}, now=self.store.clock.now()
            )
            return created

        return self.store.run(run)

    def lists(self, actor: UUID | str, *, include_archived: bool = True) -> list[TaskList]:
        """The lists ``actor`` is a member of, with their role."""

        def run(conn: Connection) -> list[TaskList]:
            actor_id = resolve_actor(conn, actor)
            query = (
                select(lists, list_members.c.role)
                .join(list_members, list_members.c.list_id == lists.c.id)
                .where(list_members.c.actor_id == actor_id)
                .order_by(lists.c.name, lists.c.id)
            )
            if not include_archived:
                query = query.where(lists.c.status == ListStatus.ACTIVE.value)
            return [_list(r) for r in conn.execute(query)]

        return self.store.run(run, write=False)

    def get_list(self, actor: UUID | str, list_ref: UUID | str) -> TaskList:
        """A list by ID, or by name among the actor's lists."""

        def run(conn: Connection) -> TaskList:
            actor_id = resolve_actor(conn, actor)
            list_id = find_list(conn, actor_id, list_ref)
            _, row = require_list_role(conn, actor_id, list_id, Role.VIEWER, write=False)
            return _list(row)

        return self.store.run(run, write=False)

    def share(
        self,
        actor: UUID | str,
        list_ref: UUID | str,
        member: UUID | str,
        role: Role | str | None,
        expected_revision: int | None = None,
    ) -> TaskList:
        """Gives ``member`` a role on the list, or removes them with ``role=None``. Owners only.

        The last owner cannot leave or be demoted: a list always has an owner.
        """
        new_role = _role(role)

        def run(conn: Connection) -> TaskList:
            actor_id = resolve_actor(conn, actor)
            list_id = find_list(conn, actor_id, list_ref)
            require_list_role(conn, actor_id, list_id, Role.OWNER, write=False)
            member_id = resolve_actor(conn, member, "member")
            if new_role is not Role.OWNER:
                owners = set(
                    conn.execute(
                        select(list_members.c.actor_id).where(
                            list_members.c.list_id == list_id,
                            list_members.c.role == Role.OWNER.value,
                        )
                    ).scalars()
                )
                if owners == {member_id}:
                    raise Conflict(
                        "member: the list's last owner cannot leave or be demoted", field="member"
                    )
            conn.execute(
                delete(list_members).where(
                    list_members.c.list_id == list_id, list_members.c.actor_id == member_id
                )
            )
            if new_role is not None:
                conn.execute(
                    insert(list_members).values(
                        list_id=list_id, actor_id=member_id, role=new_role.value
                    )
                )
            return _bump_list(conn, list_id, expected_revision, actor_id)

        return self.store.run(run)

    def archive(
        self,
        actor: UUID | str,
        list_ref: UUID | str,
        *,
        archived: bool = True,
        expected_revision: int | None = None,
    ) -> TaskList:
        """Archives (or, with ``archived=False``, reactivates) a list. Owners only."""

        def run(conn: Connection) -> TaskList:
            actor_id = resolve_actor(conn, actor)
            list_id = find_list(conn, actor_id, list_ref)
            require_list_role(conn, actor_id, list_id, Role.OWNER, write=False)
            status = ListStatus.ARCHIVED if archived else ListStatus.ACTIVE
            conn.execute(update(lists).where(lists.c.id == list_id).values(status=status.value))
            return _bump_list(conn, list_id, expected_revision, actor_id)

        return self.store.run(run)

    def members(self, actor: UUID | str, list_ref: UUID | str) -> list[tuple[Actor, Role]]:
        def run(conn: Connection) -> list[tuple[Actor, Role]]:
            actor_id = resolve_actor(conn, actor)
            list_id = find_list(conn, actor_id, list_ref)
            require_list_role(conn, actor_id, list_id, Role.VIEWER, write=False)
            rows = conn.execute(
                select(actors, list_members.c.role)
                .join(list_members, list_members.c.actor_id == actors.c.id)
                .where(list_members.c.list_id == list_id)
                .order_by(actors.c.handle)
            )
            return [(Actor.from_row(r), Role(r.role)) for r in rows]

        return self.store.run(run, write=False)

    # --- sections ----------------------------------------------------------------------

    def add_section(self, actor: UUID | str, list_ref: UUID | str, name: str) -> Section:
        """Appends a section to the list; names are unique within a list."""
        checked = check_name(name, "section")

        def run(conn: Connection) -> Section:
            actor_id = resolve_actor(conn, actor)
            list_id = find_list(conn, actor_id, list_ref)
            require_list_role(conn, actor_id, list_id, Role.EDITOR, write=True)
            last = conn.execute(
                select(func.max(sections.c.position)).where(sections.c.list_id == list_id)
            ).scalar()
            section = Section(
                id=uuid.uuid4(),
                list_id=list_id,
                name=checked,
                position=(last or 0) + POSITION_GAP,
            )
            try:
                with conn.begin_nested():
                    conn.execute(
                        insert(sections).values(
                            id=section.id, list_id=list_id, name=checked, position=section.position
                        )
                    )
            except IntegrityError as exc:
                raise Conflict(
                    f"section: the list already has a section {checked!r}", field="section"
                ) from exc
            return section

        return self.store.run(run)

    def sections(self, actor: UUID | str, list_ref: UUID | str) -> list[Section]:
        def run(conn: Connection) -> list[Section]:
            actor_id = resolve_actor(conn, actor)
            list_id = find_list(conn, actor_id, list_ref)
            require_list_role(conn, actor_id, list_id, Role.VIEWER, write=False)
            rows = conn.execute(
                select(sections).where(sections.c.list_id == list_id).order_by(sections.c.position)
            )
            return [
                Section(id=r.id, list_id=r.list_id, name=r.name, position=r.position) for r in rows
            ]

        return self.store.run(run, write=False)


def insert_list(
    conn: Connection, list_id: UUID, name: str, members: Mapping[UUID, Role], *, now: datetime
) -> None:
    """Creates an active list with these members, in the caller's transaction.

    The name is checked as :meth:`Directory.create_list` checks it; the members must be
    actors that exist and include an owner (a list always has one). Who may create it is
    the caller's question: no role is checked here.
    """
    checked = check_name(name, "name")
    if Role.OWNER not in members.values():
        raise InvalidInput("members: a list needs an owner", field="members")
    conn.execute(
        insert(lists).values(
            id=list_id,
            name=checked,
            status=ListStatus.ACTIVE.value,
            revision=1,
            created_at=require_aware(now, "now"),
        )
    )
    conn.execute(
        insert(list_members),
        [
            {"list_id": list_id, "actor_id": actor_id, "role": Role(role).value}
            for actor_id, role in members.items()
        ],
    )


def find_list(conn: Connection, actor_id: UUID, list_ref: UUID | str) -> UUID:
    """A list by ID, or by exact name among the lists ``actor_id`` belongs to."""
    as_id = parse_uuid(list_ref, "list")
    if as_id is not None:
        return as_id
    found = list(
        conn.execute(
            select(lists.c.id)
            .join(list_members, list_members.c.list_id == lists.c.id)
            .where(list_members.c.actor_id == actor_id, lists.c.name == str(list_ref))
        ).scalars()
    )
    if not found:
        raise NotFound(f"list: you have no list named {list_ref!r}", field="list")
    if len(found) > 1:
        raise InvalidInput(
            f"list: several of your lists are named {list_ref!r}; use its ID", field="list"
        )
    return found[0]  # type: ignore[no-any-return]


def _role(role: Role | str | None) -> Role | None:
    if role is None or isinstance(role, Role):
        return role
    if role not in {r.value for r in Role}:
        raise InvalidInput(f"role: owner, editor or viewer, got {role!r}", field="role")
    return Role(role)


def _list(row: object) -> TaskList:
    role = getattr(row, "role", None)
    return TaskList(
        id=row.id,  # type: ignore[attr-defined]
        name=row.name,  # type: ignore[attr-defined]
        status=ListStatus(row.status),  # type: ignore[attr-defined]
        revision=row.revision,  # type: ignore[attr-defined]
        role=Role(role) if role else None,
    )


def _bump_list(
    conn: Connection, list_id: UUID, expected_revision: int | None, actor_id: UUID
) -> TaskList:
    query = update(lists).where(lists.c.id == list_id)
    if expected_revision is not None:
        query = query.where(lists.c.revision == expected_revision)
    if conn.execute(query.values(revision=lists.c.revision + 1)).rowcount == 0:
        actual = conn.execute(select(lists.c.revision).where(lists.c.id == list_id)).scalar()
        raise RevisionConflict(
            f"the list changed: expected revision {expected_revision}, it is {actual}",
            expected=expected_revision,
            actual=actual,
        )
    row = conn.execute(
        select(lists, list_members.c.role)
        .outerjoin(
            list_members,
            (list_members.c.list_id == lists.c.id) & (list_members.c.actor_id == actor_id),
        )
        .where(lists.c.id == list_id)
    ).one()
    return _list(row)
