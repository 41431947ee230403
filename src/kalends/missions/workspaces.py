"""Workspaces: registered directories where passages run, and who may use them.

The actor who registers a directory becomes its owner. Owners manage members
and remove the workspace; editors create and control schedules; viewers read.
A path is stored resolved (absolute, symbolic links followed) and registered
once.

A workspace (or a schedule in one) the actor has no role on is, to them, one that
does not exist: the same :class:`NotFound` as an ID nobody uses, and a name resolves
among their own workspaces only. A member whose role is too low is :class:`Forbidden`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Connection

from kalends.errors import Conflict, InvalidInput, NotFound
from kalends.identity import Role, parse_uuid, require_role, resolve_actor
from kalends.storage.identity_tables import actors
from kalends.storage.ids import ids_at
from kalends.storage.mission_tables import schedules, workspace_members, workspaces
from kalends.storage.prepared import Prepared
from kalends.storage.unit_of_work import Store

__all__ = [
    "WORKSPACE_ROLE",
    "Member",
    "OutsideWorkspace",
    "Workspace",
    "Workspaces",
    "check_within",
    "workspace_role",
]

MAX_NAME = 120


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    id: UUID
    name: str
    path: str
    role: Role
    schedules: int
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "path": self.path,
            "role": self.role.value,
            "schedules": self.schedules,
            "createdAt": self.created_at.isoformat().replace("+00:00", "Z"),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Workspace:
        """The workspace :meth:`to_json` gave (a server's answer)."""
        return cls(
            id=UUID(str(d["id"])),
            name=d["name"],
            path=d["path"],
            role=Role(d["role"]),
            schedules=int(d["schedules"]),
            created_at=datetime.fromisoformat(str(d["createdAt"]).replace("Z", "+00:00")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    actor_id: UUID
    handle: str
    role: Role

    def to_json(self) -> dict[str, Any]:
        return {"actorId": str(self.actor_id), "handle": self.handle, "role": self.role.value}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Member:
        """The member :meth:`to_json` gave (a server's answer)."""
        return cls(actor_id=UUID(str(d["actorId"])), handle=d["handle"], role=Role(d["role"]))


# A workspace and the actor's role on it (none: not a member); every scope check reads it.
WORKSPACE_ROLE = (
    select(workspaces.c.id, workspaces.c.name, workspace_members.c.role)
    .select_from(
        workspaces.outerjoin(
            workspace_members,
            (workspace_members.c.workspace_id == workspaces.c.id)
            & (workspace_members.c.actor_id == bindparam("actor_id")),
        )
    )
    .where(workspaces.c.id == bindparam("workspace_id"))
)


def workspace_id_of(conn: Connection, actor_id: UUID, workspace: UUID | str) -> UUID:
    """A workspace given by ID, or by a name unique among the actor's workspaces."""
    as_id = parse_uuid(workspace, "workspace")
    if as_id is not None:
        return as_id
    found = conn.execute(
        select(workspaces.c.id)
        .join(workspace_members, workspace_members.c.workspace_id == workspaces.c.id)
        .where(workspace_members.c.actor_id == actor_id, workspaces.c.name == workspace)
        .limit(2)
    ).all()
    if not found:
        raise NotFound(f"workspace: no workspace {workspace!r}", field="workspace")
    if len(found) > 1:
        raise InvalidInput(
            f"workspace: several workspaces are named {workspace!r}; give its ID",
            field="workspace",
        )
    return found[0][0]  # type: ignore[no-any-return]


def workspace_role(
    conn: Connection, actor_id: UUID, workspace: UUID | str, minimum: Role
) -> tuple[UUID, Role]:
    """The workspace's ID and the actor's role, once the role reaches ``minimum``."""
    workspace_id = workspace_id_of(conn, actor_id, workspace)
    row = conn.execute(WORKSPACE_ROLE, {"actor_id": actor_id, "workspace_id": workspace_id}).first()
    unseen = NotFound(f"workspace: no workspace {workspace}", field="workspace")
    if row is None:
        raise unseen
    return workspace_id, require_role(row.role, minimum, scope="workspace", unseen=unseen)


class OutsideWorkspace(NotFound):
    """The schedule is not one of the workspace's (or does not exist)."""

    def __init__(self, schedule: UUID, workspace: UUID) -> None:
        super().__init__(
            f"schedule: no schedule {schedule} in workspace {workspace}", field="schedule"
        )
        self.schedule = schedule
        self.workspace = workspace


# The actor's role on the workspace and the workspace the schedule belongs to, in one read.
_WITHIN = Prepared(
    WORKSPACE_ROLE.add_columns(
        select(schedules.c.workspace_id)
        .where(schedules.c.id == bindparam("schedule_id"))
        .scalar_subquery()
        .label("holder")
    )
)


def check_within(conn: Connection, actor_id: UUID, workspace: UUID, schedule: UUID) -> None:
    """The actor may read ``workspace`` and ``schedule`` belongs to it. A workspace the
    actor has no role on is one that does not exist (:class:`NotFound`); a schedule of
    another workspace, or of none, is :class:`OutsideWorkspace`."""
    row = _WITHIN.first(
        conn, {"actor_id": actor_id, "workspace_id": workspace, "schedule_id": schedule}
    )
    unseen = NotFound(f"workspace: no workspace {workspace}", field="workspace")
    if row is None:
        raise unseen
    require_role(row.role, Role.VIEWER, scope="workspace", unseen=unseen)
    if row.holder != workspace:
        raise OutsideWorkspace(schedule, workspace)


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name: must be a non-empty string", field="name")
    if len(name) > MAX_NAME:
        raise InvalidInput(f"name: at most {MAX_NAME} characters, got {len(name)}", field="name")
    return name.strip()


def _check_path(path: object) -> str:
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise InvalidInput("path: must be a directory path", field="path")
    try:
        resolved = Path(path).expanduser().resolve()
        is_dir = resolved.is_dir()
    except (OSError, RuntimeError, ValueError) as exc:
        # ~nobody, a name over the system's limit, an embedded NUL
        raise InvalidInput(f"path: not a usable directory path: {exc}", field="path") from exc
    if not is_dir:
        raise InvalidInput(f"path: {resolved} is not an existing directory", field="path")
    return str(resolved)


class Workspaces:
    """Register, list and remove workspaces; manage their members. One transaction each."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(
        self, actor: UUID | str, path: str | os.PathLike[str], name: str | None = None
    ) -> Workspace:
        """Register the directory ``path``; the acting actor becomes its owner."""
        resolved = _check_path(path)
        label = _check_name(name if name is not None else (Path(resolved).name or resolved))

        def run(conn: Connection) -> Workspace:
            actor_id = resolve_actor(conn, actor)
            taken = conn.execute(
                select(workspaces.c.id).where(workspaces.c.path == resolved)
            ).scalar()
            if taken is not None:
                raise Conflict(
                    f"path: {resolved} is already registered as workspace {taken}",
                    field="path",
                    workspace=str(taken),
                )
            now = self.store.clock.now()
            (workspace_id,) = ids_at(now, 1)
            conn.execute(
                insert(workspaces).values(
                    id=workspace_id, name=label, path=resolved, created_at=now
                )
            )
            conn.execute(
                insert(workspace_members).values(
                    workspace_id=workspace_id, actor_id=actor_id, role=Role.OWNER.value
                )
            )
            return Workspace(
                id=workspace_id,
                name=label,
                path=resolved,
                role=Role.OWNER,
                schedules=0,
                created_at=now,
            )

        return self.store.run(run)

    def list(self, actor: UUID | str) -> list[Workspace]:
        """The workspaces the actor is a member of, by name."""

        def run(conn: Connection) -> list[Workspace]:
            actor_id = resolve_actor(conn, actor)
            live = (
                select(func.count())
                .where(
                    schedules.c.workspace_id == workspaces.c.id, schedules.c.phase != "tombstone"
                )
                .scalar_subquery()
            )
            rows = conn.execute(
                select(workspaces, workspace_members.c.role, live.label("live"))
                .join(workspace_members, workspace_members.c.workspace_id == workspaces.c.id)
                .where(workspace_members.c.actor_id == actor_id)
                .order_by(workspaces.c.name, workspaces.c.id)
            ).all()
            return [
                Workspace(
                    id=r.id,
                    name=r.name,
                    path=r.path,
                    role=Role(r.role),
                    schedules=r.live,
                    created_at=r.created_at,
                )
                for r in rows
            ]

        return self.store.run(run, write=False)

    def visible_schedules(self, actor_id: UUID) -> set[str]:
        """The IDs of every schedule (tombstones included) in a workspace where the actor
        has a role: the passages that actor may see. An unknown actor sees none."""
        query = (
            select(schedules.c.id)
            .join(workspace_members, workspace_members.c.workspace_id == schedules.c.workspace_id)
            .where(workspace_members.c.actor_id == actor_id)
        )
        found = self.store.run(lambda conn: conn.execute(query).scalars().all(), write=False)
        return {str(mission) for mission in found}

    def get(self, actor: UUID | str, workspace: UUID | str) -> Workspace:
        def run(conn: Connection) -> Workspace:
            actor_id = resolve_actor(conn, actor)
            workspace_id, role = workspace_role(conn, actor_id, workspace, Role.VIEWER)
            row = conn.execute(select(workspaces).where(workspaces.c.id == workspace_id)).one()
            live = conn.execute(
                select(func.count()).where(
                    schedules.c.workspace_id == workspace_id, schedules.c.phase != "tombstone"
                )
            ).scalar_one()
            return Workspace(
                id=row.id,
                name=row.name,
                path=row.path,
                role=role,
                schedules=live,
                created_at=row.created_at,
            )

        return self.store.run(run, write=False)

    def detail(
        self, actor: UUID | str, workspace: UUID | str
    ) -> tuple[Workspace, builtins.list[Member]]:
        """A workspace and its members, read in one transaction."""
        return self.store.run(
            lambda _conn: (self.get(actor, workspace), self.members(actor, workspace)),
            write=False,
        )

    def remove(self, actor: UUID | str, workspace: UUID | str) -> None:
        """Unregister a workspace; refused while it holds schedules that are not tombstones."""

        def run(conn: Connection) -> None:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.OWNER)
            live = conn.execute(
                select(func.count()).where(
                    schedules.c.workspace_id == workspace_id, schedules.c.phase != "tombstone"
                )
            ).scalar_one()
            if live:
                raise Conflict(
                    f"workspace: it still holds {live} schedule(s); delete them first",
                    field="workspace",
                    schedules=live,
                )
            conn.execute(delete(workspaces).where(workspaces.c.id == workspace_id))

        self.store.run(run)

    def members(self, actor: UUID | str, workspace: UUID | str) -> builtins.list[Member]:
        def run(conn: Connection) -> builtins.list[Member]:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.VIEWER)
            rows = conn.execute(
                select(actors.c.id, actors.c.handle, workspace_members.c.role)
                .join(workspace_members, workspace_members.c.actor_id == actors.c.id)
                .where(workspace_members.c.workspace_id == workspace_id)
                .order_by(actors.c.handle)
            ).all()
            return [Member(actor_id=r.id, handle=r.handle, role=Role(r.role)) for r in rows]

        return self.store.run(run, write=False)

    def set_member(
        self, actor: UUID | str, workspace: UUID | str, member: UUID | str, role: str | Role
    ) -> Member:
        """Give ``member`` a role (owners only). The last owner cannot be demoted."""
        try:
            new_role = Role(role)
        except ValueError:
            raise InvalidInput(
                f"role: must be owner, editor or viewer, got {role!r}", field="role"
            ) from None

        def run(conn: Connection) -> Member:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.OWNER)
            member_id = resolve_actor(conn, member, "member")
            current = conn.execute(
                select(workspace_members.c.role).where(
                    workspace_members.c.workspace_id == workspace_id,
                    workspace_members.c.actor_id == member_id,
                )
            ).scalar()
            if current == Role.OWNER.value and new_role is not Role.OWNER:
                _keep_an_owner(conn, workspace_id)
            if current is None:
                conn.execute(
                    insert(workspace_members).values(
                        workspace_id=workspace_id, actor_id=member_id, role=new_role.value
                    )
                )
            else:
                conn.execute(
                    update(workspace_members)
                    .where(
                        workspace_members.c.workspace_id == workspace_id,
                        workspace_members.c.actor_id == member_id,
                    )
                    .values(role=new_role.value)
                )
            handle = conn.execute(
                select(actors.c.handle).where(actors.c.id == member_id)
            ).scalar_one()
            return Member(actor_id=member_id, handle=handle, role=new_role)

        return self.store.run(run)

    def remove_member(self, actor: UUID | str, workspace: UUID | str, member: UUID | str) -> None:
        def run(conn: Connection) -> None:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.OWNER)
            member_id = resolve_actor(conn, member, "member")
            current = conn.execute(
                select(workspace_members.c.role).where(
                    workspace_members.c.workspace_id == workspace_id,
                    workspace_members.c.actor_id == member_id,
                )
            ).scalar()
            if current is None:
                raise NotFound("member: not a member of this workspace", field="member")
            if current == Role.OWNER.value:
                _keep_an_owner(conn, workspace_id)
            conn.execute(
                delete(workspace_members).where(
                    workspace_members.c.workspace_id == workspace_id,
                    workspace_members.c.actor_id == member_id,
                )
            )

        self.store.run(run)


def _keep_an_owner(conn: Connection, workspace_id: UUID) -> None:
    owners = conn.execute(
        select(func.count()).where(
            workspace_members.c.workspace_id == workspace_id,
            workspace_members.c.role == Role.OWNER.value,
        )
    ).scalar_one()
    if owners <= 1:
        raise Conflict("member: a workspace keeps at least one owner", field="member")
