"""Cookie sessions, statement by statement: open, find, keep alive, revoke.

A session lives :data:`SESSION_TTL` from its last use. Using it moves
``last_seen_at`` and ``expires_at`` forward, at most once per
:data:`TOUCH_INTERVAL`, so that reading a page does not always write.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from sqlalchemy import bindparam, delete, insert, or_, select, update
from sqlalchemy.engine import Connection

from kalends.auth.credentials import csrf_token_for, digest, new_secret
from kalends.auth.values import LiveSession, Principal, SessionGrant
from kalends.identity import KnownActor
from kalends.storage.auth_tables import auth_sessions
from kalends.storage.identity_tables import actors
from kalends.storage.ids import ids_at
from kalends.storage.prepared import Prepared

__all__ = [
    "SESSION_TTL",
    "TOUCH_INTERVAL",
    "find_session",
    "open_session",
    "revoke_session",
    "revoke_sessions",
    "session_principal",
    "touch_session",
]

# A session ends this long after its last use.
SESSION_TTL = timedelta(days=14)
# The last use of a session or token is written at most this often.
TOUCH_INTERVAL = timedelta(minutes=1)


def open_session(conn: Connection, actor_id: UUID, now: datetime) -> SessionGrant:
    """Open a new session for ``actor_id``; its ended sessions are removed on the way."""
    conn.execute(
        delete(auth_sessions).where(
            auth_sessions.c.actor_id == actor_id,
            or_(auth_sessions.c.expires_at <= now, auth_sessions.c.revoked_at.is_not(None)),
        )
    )
    handle = conn.execute(select(actors.c.handle).where(actors.c.id == actor_id)).scalar_one()
    secret = new_secret()
    (session_id,) = ids_at(now, 1)
    expires_at = now + SESSION_TTL
    conn.execute(
        insert(auth_sessions).values(
            id=session_id,
            secret_hash=digest(secret),
            actor_id=actor_id,
            created_at=now,
            expires_at=expires_at,
            last_seen_at=now,
        )
    )
    csrf = csrf_token_for(secret)
    principal = Principal(
        actor_id=actor_id,
        handle=handle,
        kind="session",
        credential_id=session_id,
        csrf_token=csrf,
    )
    return SessionGrant(secret=secret, csrf_token=csrf, principal=principal, expires_at=expires_at)


# Built once and run on the driver: every request of a login session runs it.
# Its columns are LiveSession's, in order.
_FIND = Prepared(
    select(
        auth_sessions.c.id,
        auth_sessions.c.actor_id,
        auth_sessions.c.last_seen_at,
        actors.c.handle,
    )
    .join(actors, actors.c.id == auth_sessions.c.actor_id)
    .where(
        auth_sessions.c.secret_hash == bindparam("hash"),
        auth_sessions.c.revoked_at.is_(None),
        auth_sessions.c.expires_at > bindparam("now"),
    )
)


def find_session(conn: Connection, secret: str, now: datetime) -> LiveSession | None:
    """The live session (with the actor's ``handle``) whose cookie secret is ``secret``."""
    row = _FIND.first(conn, {"hash": digest(secret), "now": now})
    return None if row is None else LiveSession.from_row(row)


def session_principal(row: LiveSession, secret: str) -> Principal:
    return Principal(
        actor_id=KnownActor.of(row.actor_id),
        handle=row.handle,
        kind="session",
        credential_id=row.id,
        csrf_token=csrf_token_for(secret),
    )


def touch_session(conn: Connection, row: LiveSession, now: datetime) -> None:
    """Record a use of the session read as ``row``, unless it changed since it was read."""
    conn.execute(
        update(auth_sessions)
        .where(
            auth_sessions.c.id == row.id,
            auth_sessions.c.last_seen_at == row.last_seen_at,
            auth_sessions.c.revoked_at.is_(None),
            auth_sessions.c.expires_at > now,
        )
        .values(last_seen_at=now, expires_at=now + SESSION_TTL)
    )


def revoke_sessions(
    conn: Connection, actor_id: UUID, now: datetime, *, keep: UUID | None = None
) -> int:
    """Revoke every live session of ``actor_id`` but ``keep``; return how many."""
    statement = update(auth_sessions).where(
        auth_sessions.c.actor_id == actor_id, auth_sessions.c.revoked_at.is_(None)
    )
    if keep is not None:
        statement = statement.where(auth_sessions.c.id != keep)
    return conn.execute(statement.values(revoked_at=now)).rowcount


def revoke_session(conn: Connection, secret: str, now: datetime) -> None:
    """Revoke the session whose cookie secret is ``secret``, if it is not already."""
    conn.execute(
        update(auth_sessions)
        .where(auth_sessions.c.secret_hash == digest(secret), auth_sessions.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )
