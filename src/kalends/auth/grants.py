"""Server privileges: what an actor may do on the whole server, whatever their roles.

One privilege so far, ``run``: defining what runs — creating a schedule, or changing
its profile's command, ``env`` or ``cwd``. A passage runs with the passage user's OS
privileges, so whoever holds ``run`` can run anything that user can; it is not a
workspace role (SPEC §4 "Who may define what runs").

The server's owner account holds every privilege, always; anyone else holds one only
by a grant stored in ``actor_grants``. Granting and revoking are idempotent. Who may
grant is the caller's decision: the HTTP API lets only the server's owner account; the
local command line lets whoever runs it, since they own the database file.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from uuid import UUID

from sqlalchemy import and_, delete, exists, select
from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, RunPrivilegeRequired
from kalends.identity import Actor, resolve_actor
from kalends.storage.auth_tables import accounts, actor_grants
from kalends.storage.identity_tables import actors
from kalends.storage.unit_of_work import Store
from kalends.storage.upsert import insert_missing

__all__ = ["ActorPrivileges", "Grants", "Privilege", "holds", "require"]


class Privilege(StrEnum):
    """A server privilege; the value is its stored name."""

    RUN = "run"


@dataclass(frozen=True, slots=True, kw_only=True)
class ActorPrivileges:
    """An actor and whether they hold the run privilege (granted, or as the owner)."""

    actor: Actor
    may_run: bool

    def to_json(self) -> dict[str, Any]:
        return {**self.actor.to_json(), "mayRun": self.may_run}


def _privilege(value: Privilege | str) -> Privilege:
    try:
        return Privilege(value)
    except ValueError:
        known = ", ".join(p.value for p in Privilege)
        raise InvalidInput(
            f"privilege: {value!r} is not a server privilege (known: {known})",
            field="privilege",
        ) from None


def _held(privilege: Privilege, actor_id: Any) -> Any:
    """Whether ``actor_id`` holds ``privilege``: as the owner account, or by a grant."""
    owner = exists().where(accounts.c.actor_id == actor_id, accounts.c.is_owner)
    granted = exists().where(
        actor_grants.c.actor_id == actor_id, actor_grants.c.privilege == privilege.value
    )
    return owner | granted


def holds(conn: Connection, actor_id: UUID, privilege: Privilege) -> bool:
    """Whether the actor holds ``privilege`` now, read in the caller's transaction."""
    return bool(conn.execute(select(_held(privilege, actor_id))).scalar())


def require(conn: Connection, actor_id: UUID, privilege: Privilege, what: str) -> None:
    """Refuse with :class:`RunPrivilegeRequired` unless the actor holds ``privilege``;
    ``what`` names the refused change ("creating a schedule")."""
    if not holds(conn, actor_id, privilege):
        raise RunPrivilegeRequired(
            f"{what} needs the {privilege.value} privilege, which the server's owner "
            f"grants (`kalends actor grant {privilege.value} ACTOR`): whoever holds it can "
            "run anything the passage user can; nothing was written",
            privilege=privilege.value,
        )


def _standing(conn: Connection, actor_id: UUID) -> ActorPrivileges:
    row = conn.execute(
        select(actors, _held(Privilege.RUN, actors.c.id).label("may_run")).where(
            actors.c.id == actor_id
        )
    ).one()
    return ActorPrivileges(actor=Actor.from_row(row), may_run=bool(row.may_run))


class Grants:
    """Grant, revoke and read server privileges. One transaction each."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def actors(self) -> list[ActorPrivileges]:
        """Every actor by handle, with whether they may define what runs."""

        def run(conn: Connection) -> list[ActorPrivileges]:
            rows = conn.execute(
                select(actors, _held(Privilege.RUN, actors.c.id).label("may_run")).order_by(
                    actors.c.handle
                )
            )
            return [ActorPrivileges(actor=Actor.from_row(r), may_run=bool(r.may_run)) for r in rows]

        return self.store.run(run, write=False)

    def standing(self, actor: UUID | str) -> ActorPrivileges:
        """One actor, by ID or handle, and whether they may define what runs."""

        def run(conn: Connection) -> ActorPrivileges:
            return _standing(conn, resolve_actor(conn, actor))

        return self.store.run(run, write=False)

    def grant(self, actor: UUID | str, privilege: Privilege | str) -> ActorPrivileges:
        """Grant ``privilege`` to the actor (by ID or handle); granting again changes
        nothing. An unknown actor is :class:`~kalends.errors.NotFound`."""
        held = _privilege(privilege)

        def run(conn: Connection) -> ActorPrivileges:
            actor_id = resolve_actor(conn, actor)
            row = {"actor_id": actor_id, "privilege": held.value}
            insert_missing(
                conn,
                actor_grants,
                [{**row, "granted_at": self.store.clock.now()}],
                ("actor_id", "privilege"),
            )
            return _standing(conn, actor_id)

        return self.store.run(run)

    def revoke(self, actor: UUID | str, privilege: Privilege | str) -> ActorPrivileges:
        """Remove the actor's grant of ``privilege``; revoking again changes nothing. The
        server's owner account keeps every privilege whatever is revoked."""
        held = _privilege(privilege)

        def run(conn: Connection) -> ActorPrivileges:
            actor_id = resolve_actor(conn, actor)
            conn.execute(
                delete(actor_grants).where(
                    and_(
                        actor_grants.c.actor_id == actor_id,
                        actor_grants.c.privilege == held.value,
                    )
                )
            )
            return _standing(conn, actor_id)

        return self.store.run(run)
