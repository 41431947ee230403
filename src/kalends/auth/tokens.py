"""API tokens, statement by statement: the rules for a new one, create, list, find, revoke.

A token's secret is :data:`TOKEN_PREFIX` and 256 random bits; the prefix lets
people and secret scanners recognise one. A revoked or expired token stays
listed for :data:`RETIRED_TOKEN_RETENTION`, then goes when its owner creates
another.

A paired device's credential is a row of the same table with ``device`` set
(:mod:`kalends.auth.devices`): it shares the rules of a name, a lifetime, the
limit of :data:`MAX_ACTIVE_TOKENS` and the retention, but it is never a bearer
token: :func:`find_token` does not find it, and listing and revoking name which
of the two they mean.
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
    "check_room",
    "check_token_name",
    "create_token",
    "find_device",
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
# The most tokens an actor may hold that are neither revoked nor expired, paired devices
# included.
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


def check_room(conn: Connection, actor_id: UUID, now: datetime, *, device: bool) -> None:
    """Refuse with :class:`LimitReached` when ``actor_id`` holds :data:`MAX_ACTIVE_TOKENS`
    live tokens and devices together; ``device`` says which the refusal speaks of."""
    active = conn.execute(
        select(func.count()).where(api_tokens.c.actor_id == actor_id, _live(now))
    ).scalar_one()
    if active < MAX_ACTIVE_TOKENS:
        return
    if device:
        raise LimitReached(
            f"devices: at most {MAX_ACTIVE_TOKENS} active API tokens and paired devices "
            "together; revoke one first",
            field="name",
        )
    raise LimitReached(
        f"tokens: at most {MAX_ACTIVE_TOKENS} active tokens; revoke one first", field="name"
    )


def create_token(
    conn: Connection,
    actor_id: UUID,
    name: str,
    expires_in: timedelta | None,
    now: datetime,
    *,
    device: bool = False,
) -> tuple[TokenInfo, str]:
    """A new token of ``actor_id`` (a paired device's credential when ``device``) and its
    secret, shown this once. A device's secret has no :data:`TOKEN_PREFIX`: it is a
    cookie's value, not something to paste."""
    check_room(conn, actor_id, now, device=device)
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
    secret = new_secret("" if device else TOKEN_PREFIX)
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
        device=device,
    )
    conn.execute(
        insert(api_tokens).values(
            id=info.id,
            actor_id=actor_id,
            name=name,
            secret_hash=digest(secret),
            created_at=now,
            expires_at=info.expires_at,
            device=device,
        )
    )
    return info, secret


def list_tokens(
    conn: Connection, actor_id: UUID, now: datetime, *, device: bool = False
) -> list[TokenInfo]:
    """The actor's program tokens, or with ``device`` their paired devices, newest first."""
    rows = conn.execute(
        select(api_tokens)
        .where(api_tokens.c.actor_id == actor_id, api_tokens.c.device.is_(device))
        .order_by(api_tokens.c.created_at.desc(), api_tokens.c.id.desc())
    ).all()
    return [TokenInfo.from_row(row, now) for row in rows]


def revoke_token(
    conn: Connection, actor_id: UUID, token_id: UUID, now: datetime, *, device: bool = False
) -> TokenInfo:
    """Revoke the actor's own program token ``token_id`` (with ``device``, their paired
    device ``token_id``); a revoked one stays as it was. A device is not a token here,
    nor a token a device: each is revoked by its own command."""
    mine = (
        api_tokens.c.id == token_id,
        api_tokens.c.actor_id == actor_id,
        api_tokens.c.device.is_(device),
    )
    conn.execute(
        update(api_tokens).where(*mine, api_tokens.c.revoked_at.is_(None)).values(revoked_at=now)
    )
    row = conn.execute(select(api_tokens).where(*mine)).first()
    if row is None:
        # Someone else's token is as unknown as a missing one.
        if device:
            raise NotFound(f"device: no paired device {token_id}", field="device")
        raise NotFound(f"token: no token {token_id}", field="token")
    return TokenInfo.from_row(row, now)


def _finder(device: bool) -> Prepared:
    """The lookup of a live program token, or of a live device's credential, by the digest
    of its secret. Its columns are LiveToken's, in order."""
    return Prepared(
        select(api_tokens.c.id, api_tokens.c.actor_id, api_tokens.c.last_used_at, actors.c.handle)
        .join(actors, actors.c.id == api_tokens.c.actor_id)
        .where(
            api_tokens.c.secret_hash == bindparam("hash"),
            api_tokens.c.device.is_(device),
            _live(bindparam("now")),
        )
    )


# Built once and run on the driver: every authenticated request runs one of them.
_FIND = _finder(device=False)
_FIND_DEVICE = _finder(device=True)


def find_token(conn: Connection, secret: str, now: datetime) -> LiveToken | None:
    """The live program token (``id``, ``actor_id``, ``last_used_at`` and the actor's
    ``handle``) whose secret is ``secret``; a paired device's secret is no bearer token,
    and finds nothing here."""
    row = _FIND.first(conn, {"hash": digest(secret), "now": now})
    return None if row is None else LiveToken.from_row(row)


def find_device(conn: Connection, secret: str, now: datetime) -> LiveToken | None:
    """The live paired device whose cookie secret is ``secret``, as :func:`find_token`
    reads a token; a program token's secret finds nothing here."""
    row = _FIND_DEVICE.first(conn, {"hash": digest(secret), "now": now})
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
