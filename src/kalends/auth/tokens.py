"""API tokens, statement by statement: the rules for a new one, create, list, find, revoke.

A token's secret is :data:`TOKEN_PREFIX` and 256 random bits; the prefix lets
people and secret scanners recognise one. A revoked or expired token stays
listed for :data:`RETIRED_TOKEN_RETENTION`, then goes when its owner creates
another.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import BindParameter

from kalends.auth.credentials import digest, new_secret
from kalends.auth.values import LiveToken, TokenInfo
from kalends.errors import InvalidInput, LimitReached, NotFound
from kalends.identity import parse_uuid
from kalends.storage.auth_tables import TOKEN_NAME_LENGTH, api_tokens
from kalends.storage.identity_tables import actors
from kalends.storage.ids import ids_at
from kalends.storage.prepared import Prepared

__all__ = [
    "MAX_ACTIVE_TOKENS",
    "MAX_TOKEN_LIFETIME",
    "MAX_TOKEN_NAME",
    "RETIRED_TOKEN_RETENTION",
    "TOKEN_PREFIX",
    "check_expires_in",
    "check_token_id",
    "check_token_name",
    "create_token",
    "find_token",
    "list_tokens",
    "revoke_token",
    "touch_token",
]

# Every token secret starts with this.
TOKEN_PREFIX = "kal_"
# The longest token name, in characters.
MAX_TOKEN_NAME = TOKEN_NAME_LENGTH
# The longest lifetime a token may be given; no lifetime at all means it never expires.
MAX_TOKEN_LIFETIME = timedelta(days=366)
# The most tokens an actor may hold that are neither revoked nor expired.
MAX_ACTIVE_TOKENS = 50
# How long a revoked or expired token stays listed before it may be removed.
RETIRED_TOKEN_RETENTION = timedelta(days=90)


def check_token_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name: must be a non-empty string", field="name")
    if len(name.strip()) > MAX_TOKEN_NAME:
        raise InvalidInput(
            f"name: at most {MAX_TOKEN_NAME} characters, got {len(name.strip())}", field="name"
        )
    return name.strip()


def check_expires_in(expires_in: object) -> timedelta | None:
    if expires_in is None:
        return None
    if not isinstance(expires_in, timedelta):
        raise InvalidInput("expires_in: must be a duration or none", field="expires_in")
    if expires_in <= timedelta(0):
        raise InvalidInput(f"expires_in: must be positive, got {expires_in}", field="expires_in")
    if expires_in > MAX_TOKEN_LIFETIME:
        raise InvalidInput(
            f"expires_in: at most {MAX_TOKEN_LIFETIME.days} days, got {expires_in}",
            field="expires_in",
        )
    return expires_in


def check_token_id(token_id: object) -> UUID:
    parsed = parse_uuid(token_id, "token")
    if parsed is None:
        raise InvalidInput(f"token: not a token ID: {token_id!r}", field="token")
    return parsed


def _live(now: datetime | BindParameter[Any]) -> Any:
    return and_(
        api_tokens.c.revoked_at.is_(None),
        or_(api_tokens.c.expires_at.is_(None), api_tokens.c.expires_at > now),
    )


def create_token(
    conn: Connection, actor_id: UUID, name: str, expires_in: timedelta | None, now: datetime
) -> tuple[TokenInfo, str]:
    """A new token of ``actor_id`` and its secret, shown this once."""
    active = conn.execute(
        select(func.count()).where(api_tokens.c.actor_id == actor_id, _live(now))
    ).scalar_one()
    if active >= MAX_ACTIVE_TOKENS:
        raise LimitReached(
            f"tokens: at most {MAX_ACTIVE_TOKENS} active tokens; revoke one first", field="name"
        )
    retired_before = now - RETIRED_TOKEN_RETENTION
    conn.execute(
        delete(api_tokens).where(
            api_tokens.c.actor_id == actor_id,
            or_(
                api_tokens.c.revoked_at <= retired_before,
                api_tokens.c.expires_at <= retired_before,
            ),
        )
    )
    secret = new_secret(TOKEN_PREFIX)
    (token_id,) = ids_at(now, 1)
    info = TokenInfo(
        id=token_id,
        actor_id=actor_id,
        name=name,
        created_at=now,
        expires_at=None if expires_in is None else now + expires_in,
        revoked_at=None,
        last_used_at=None,
        active=True,
    )
    conn.execute(
        insert(api_tokens).values(
            id=info.id,
            actor_id=actor_id,
            name=name,
            secret_hash=digest(secret),
            created_at=now,
            expires_at=info.expires_at,
        )
    )
    return info, secret


def list_tokens(conn: Connection, actor_id: UUID, now: datetime) -> list[TokenInfo]:
    rows = conn.execute(
        select(api_tokens)
        .where(api_tokens.c.actor_id == actor_id)
        .order_by(api_tokens.c.created_at.desc(), api_tokens.c.id.desc())
    ).all()
    return [TokenInfo.from_row(row, now) for row in rows]


def revoke_token(conn: Connection, actor_id: UUID, token_id: UUID, now: datetime) -> TokenInfo:
    """Revoke the actor's own token ``token_id``; a revoked one stays as it was."""
    conn.execute(
        update(api_tokens)
        .where(
            api_tokens.c.id == token_id,
            api_tokens.c.actor_id == actor_id,
            api_tokens.c.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )
    row = conn.execute(
        select(api_tokens).where(api_tokens.c.id == token_id, api_tokens.c.actor_id == actor_id)
    ).first()
    if row is None:
        # Someone else's token is as unknown as a missing one.
        raise NotFound(f"token: no token {token_id}", field="token")
    return TokenInfo.from_row(row, now)


# Built once and run on the driver: every authenticated request runs it. Its columns are
# LiveToken's, in order.
_FIND = Prepared(
    select(api_tokens.c.id, api_tokens.c.actor_id, api_tokens.c.last_used_at, actors.c.handle)
    .join(actors, actors.c.id == api_tokens.c.actor_id)
    .where(api_tokens.c.secret_hash == bindparam("hash"), _live(bindparam("now")))
)


def find_token(conn: Connection, secret: str, now: datetime) -> LiveToken | None:
    """The live token (``id``, ``actor_id``, ``last_used_at`` and the actor's ``handle``)
    whose secret is ``secret``."""
    row = _FIND.first(conn, {"hash": digest(secret), "now": now})
    return None if row is None else LiveToken.from_row(row)


def touch_token(conn: Connection, row: LiveToken, now: datetime) -> None:
    """Record a use of the token read as ``row``, unless it changed since it was read."""
    unchanged = (
        api_tokens.c.last_used_at.is_(None)
        if row.last_used_at is None
        else api_tokens.c.last_used_at == row.last_used_at
    )
    conn.execute(
        update(api_tokens)
        .where(api_tokens.c.id == row.id, unchanged, _live(now))
        .values(last_used_at=now)
    )
