"""Named, expiring leases: who may do a piece of work, and until when.

A lease named ``name`` is *held* from ``acquired_at`` until ``expires_at``
(exclusive); from ``expires_at`` on it is *expired* and anyone may take it over.
Every acquisition draws a new random ``token``, which identifies that one
holding: renewing and releasing require it, so an owner who stalled past its
expiry cannot extend or drop a lease someone else has since taken.

Each operation is one statement whose row count decides the outcome, so they
are race-free on both backends without extra locking. Call them inside a
write transaction (``store.run(..., write=True)``); the caller passes ``now``
from its clock.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.sql.expression import Executable

from kalends.clock import require_aware
from kalends.errors import InvalidInput, LeaseLost
from kalends.storage.schema import leases

__all__ = ["MAX_NAME_LENGTH", "Lease", "acquire", "current", "release", "renew"]

MAX_NAME_LENGTH = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """One holding of a named lease."""

    name: str
    owner: str
    token: str
    acquired_at: datetime
    expires_at: datetime

    @classmethod
    def from_row(cls, row: RowMapping) -> Lease:
        return cls(
            name=row["name"],
            owner=row["owner"],
            token=row["token"],
            acquired_at=row["acquired_at"],
            expires_at=row["expires_at"],
        )

    def is_expired(self, now: datetime) -> bool:
        """Whether the lease has run out at ``now``: anyone may take it over."""
        return require_aware(now, "now") >= self.expires_at


def acquire(conn: Connection, name: str, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
    """Take the lease ``name`` for ``owner`` until ``now + ttl``, if nobody holds it.

    Succeeds, with a new token, when the lease does not exist or has expired
    (whoever held it); returns ``None`` while anyone, ``owner`` included, holds
    it: a holder extends its lease with :func:`renew`. Of concurrent callers,
    exactly one succeeds.
    """
    _check_text(name, "name")
    _check_text(owner, "owner")
    now = require_aware(now, "now")
    lease = Lease(
        name=name,
        owner=owner,
        token=secrets.token_hex(16),
        acquired_at=now,
        expires_at=now + _check_ttl(ttl),
    )
    values: dict[str, Any] = {
        "name": lease.name,
        "owner": lease.owner,
        "token": lease.token,
        "acquired_at": lease.acquired_at,
        "expires_at": lease.expires_at,
    }
    taken_over = {key: value for key, value in values.items() if key != "name"}
    is_free = leases.c.expires_at <= now
    stmt: Any
    if conn.dialect.name == "postgresql":
        stmt = (
            postgresql.insert(leases)
            .values(values)
            .on_conflict_do_update(index_elements=[leases.c.name], set_=taken_over, where=is_free)
        )
    else:
        stmt = (
            sqlite.insert(leases)
            .values(values)
            .on_conflict_do_update(index_elements=[leases.c.name], set_=taken_over, where=is_free)
        )
    return lease if _rowcount(conn, stmt) == 1 else None


def renew(conn: Connection, lease: Lease, now: datetime, ttl: timedelta) -> Lease:
    """Extend ``lease`` to ``now + ttl`` and return it; raise :class:`LeaseLost` if not held.

    The lease must still carry ``lease.token`` and be unexpired at ``now``;
    otherwise it was released, expired or taken over, and nothing changes.
    """
    now = require_aware(now, "now")
    expires_at = now + _check_ttl(ttl)
    renewed = _rowcount(
        conn,
        update(leases)
        .where(
            leases.c.name == lease.name,
            leases.c.token == lease.token,
            leases.c.expires_at > now,
        )
        .values(expires_at=expires_at),
    )
    if renewed != 1:
        raise LeaseLost(
            f"lease {lease.name!r} is no longer held by {lease.owner!r}: "
            "it expired, was released or was taken over",
            name=lease.name,
            owner=lease.owner,
        )
    return replace(lease, expires_at=expires_at)


def release(conn: Connection, lease: Lease) -> bool:
    """Give up ``lease``; return whether this holding still existed (expired or not).

    Returns ``False``, changing nothing, if the lease was already released or
    taken over by another acquisition.
    """
    deleted = _rowcount(
        conn, delete(leases).where(leases.c.name == lease.name, leases.c.token == lease.token)
    )
    return deleted == 1


def current(conn: Connection, name: str, now: datetime) -> Lease | None:
    """Return the holding of lease ``name`` unexpired at ``now``, or ``None`` if it is free."""
    now = require_aware(now, "now")
    row = (
        conn.execute(select(leases).where(leases.c.name == name, leases.c.expires_at > now))
        .mappings()
        .one_or_none()
    )
    return None if row is None else Lease.from_row(row)


def _rowcount(conn: Connection, stmt: Executable) -> int:
    # SQLAlchemy reports INSERT row counts only when asked to keep them.
    return conn.execute(stmt, execution_options={"preserve_rowcount": True}).rowcount


def _check_text(value: str, field: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"{field} must be at most {MAX_NAME_LENGTH} characters, got {len(value)}", field=field
        )


def _check_ttl(ttl: timedelta) -> timedelta:
    if not isinstance(ttl, timedelta):
        raise InvalidInput(f"ttl must be a timedelta, not {type(ttl).__name__}", field="ttl")
    if ttl <= timedelta(0):
        raise InvalidInput(f"ttl must be positive, got {ttl}", field="ttl")
    return ttl
