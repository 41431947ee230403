"""Actors: who exists, found by ID or handle, and the directory that registers them."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.errors import Conflict, InvalidInput, NotFound
from kalends.identity.ids import ActorRef, KnownActor, parse_uuid
from kalends.storage.identity_tables import actors
from kalends.storage.unit_of_work import Store

# An actor handle: lowercase letters, digits, '.', '_' or '-', at most 64.
HANDLE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# A display name, and any other name a person gives: at most this many characters.
MAX_NAME_LENGTH = 200
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def normalize_handle(text: str) -> str:
    """A handle as someone typed it, as handles are stored: no surrounding spaces, lowercase.

    Whether the result is a valid handle (:data:`HANDLE_PATTERN`) is the caller's question.
    """
    return text.strip().lower()


def check_name(value: object, field: str, limit: int = MAX_NAME_LENGTH) -> str:
    """A name without its surrounding spaces; blank or longer than ``limit`` is refused."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: a name cannot be blank", field=field)
    trimmed = value.strip()
    if len(trimmed) > limit:
        raise InvalidInput(f"{field}: at most {limit} characters, got {len(trimmed)}", field=field)
    return trimmed


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    id: UUID
    handle: str
    display_name: str
    email: str | None

    @classmethod
    def from_row(cls, row: Any) -> Actor:
        return cls(id=row.id, handle=row.handle, display_name=row.display_name, email=row.email)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "handle": self.handle,
            "display_name": self.display_name,
            "email": self.email,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Actor:
        """From :meth:`to_json` (other keys beside, as a listing's role, are left alone)."""
        return cls(
            id=UUID(str(d["id"])),
            handle=d["handle"],
            display_name=d["display_name"],
            email=d["email"],
        )


_ACTOR_BY_ID = select(actors.c.id).where(actors.c.id == bindparam("key"))
_ACTOR_BY_HANDLE = select(actors.c.id).where(actors.c.handle == bindparam("key"))


def resolve_actor(conn: Connection, actor: ActorRef, field: str = "actor") -> UUID:
    """The ID of an actor given by ID or handle; unknown actors are :class:`NotFound`."""
    if isinstance(actor, KnownActor):
        return actor
    as_id = parse_uuid(actor, field)
    statement = _ACTOR_BY_ID if as_id is not None else _ACTOR_BY_HANDLE
    found = conn.execute(statement, {"key": as_id or actor}).scalar()
    if found is None:
        raise NotFound(f"{field}: no actor {actor!r}", field=field)
    return found  # type: ignore[no-any-return]


def read_actor(conn: Connection, actor: ActorRef) -> Actor:
    """An actor by ID or handle, in the caller's transaction."""
    actor_id = resolve_actor(conn, actor)
    return Actor.from_row(conn.execute(select(actors).where(actors.c.id == actor_id)).one())


class ActorDirectory:
    """Who exists: registers actors and finds them. One transaction per call."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add_actor(self, handle: str, display_name: str, email: str | None = None) -> Actor:
        """Creates an actor; handles are unique, lowercase ``[a-z0-9._-]``."""
        if not isinstance(handle, str) or not HANDLE_PATTERN.match(handle):
            raise InvalidInput(
                f"handle: 1-64 lowercase letters, digits, '.', '_' or '-', got {handle!r}",
                field="handle",
            )
        name = check_name(display_name, "display_name")
        if email is not None and not _EMAIL.match(email):
            raise InvalidInput(f"email: {email!r} is not an e-mail address", field="email")
        actor = Actor(id=uuid.uuid4(), handle=handle, display_name=name, email=email)

        def run(conn: Connection) -> Actor:
            try:
                with conn.begin_nested():
                    conn.execute(
                        insert(actors).values(
                            id=actor.id,
                            handle=handle,
                            display_name=name,
                            email=email,
                            created_at=self.store.clock.now(),
                        )
                    )
            except IntegrityError as exc:
                raise Conflict(
                    f"handle: an actor {handle!r} already exists", field="handle"
                ) from exc
            return actor

        return self.store.run(run)

    def actor(self, actor: ActorRef) -> Actor:
        """An actor by ID or handle."""
        return self.store.run(lambda conn: read_actor(conn, actor), write=False)

    def actors(self) -> list[Actor]:
        def run(conn: Connection) -> list[Actor]:
            rows = conn.execute(select(actors).order_by(actors.c.handle))
            return [Actor.from_row(r) for r in rows]

        return self.store.run(run, write=False)
