"""Claims: reminder intents leased to a worker, and how a lease is settled.

A claim is one statement in one immediate transaction (SQLite ``BEGIN IMMEDIATE``;
PostgreSQL ``FOR UPDATE SKIP LOCKED``): it takes the earliest due intents, gives each a
unique lease token, the owner and a lease of :data:`~kalends.reminders.limits.LEASE`, and
counts the attempt then, so a crash counts. ``next_attempt_at`` is when an intent may
next be claimed: for a pending intent its (retry) time, for a leased one the lease's
expiry, so one index finds both. The same statement closes what it must never claim:
intents of a schedule revision that is no longer current (``stale-schedule``), intents
older than :data:`~kalends.reminders.limits.EXPIRY` (``expired``) and leases that expired
after the last attempt (``dead``).

A lease is settled with its token: acknowledged (``delivered``), retried (``pending``
again after :func:`~kalends.reminders.limits.backoff`, or ``dead``), closed, or released
unsent. Every function here runs inside the caller's (write) transaction and takes its
arguments checked (:class:`~kalends.reminders.outbox.Outbox` checks them).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from operator import itemgetter
from typing import Any, NamedTuple
from uuid import UUID

from sqlalchemy import (
    Integer,
    String,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal,
    not_,
    or_,
    select,
    text,
    type_coerce,
    update,
)
from sqlalchemy.engine import Connection

from kalends.clock import require_aware
from kalends.errors import LeaseLost
from kalends.reminders.intents import IntentState
from kalends.reminders.limits import EXPIRY, LEASE, MAX_ATTEMPTS, backoff
from kalends.reminders.raw_forms import RAW, instant, uuid_of
from kalends.storage.task_tables import CLAIMABLE_INTENTS, reminder_intents, tasks
from kalends.storage.unit_of_work import for_update
from kalends.storage.wake import notify

__all__ = [
    "ACK",
    "CLAIM",
    "C_AT",
    "C_ATTEMPTS",
    "C_CHANNEL",
    "C_ID",
    "C_RECIPIENT",
    "C_REVISION",
    "C_TASK",
    "C_TOKEN",
    "Claim",
    "ClaimRow",
    "LeasedIntent",
    "ack_in",
    "claim_in",
    "claim_rows_in",
    "close_in",
    "lease_lost",
    "leased_row",
    "next_due_in",
    "release_in",
    "retry_in",
]

ri = reminder_intents
_PENDING = IntentState.PENDING.value
_LEASED = IntentState.LEASED.value
_DEAD = IntentState.DEAD.value


@dataclass(frozen=True, slots=True)
class Claim:
    """An intent leased to a worker: deliver it, then ``ack`` or ``retry`` with the token."""

    id: UUID
    task_id: UUID
    schedule_revision: int
    channel: str
    at: datetime
    recipient_id: UUID
    attempts: int
    token: str
    lease_expires_at: datetime


# The columns of a claim row (see :func:`claim_rows_in`), in order; IDs and the instant in
# the database's own form.
C_TOKEN, C_ID, C_TASK, C_REVISION, C_CHANNEL, C_AT, C_RECIPIENT, C_ATTEMPTS = range(8)
# Then what became of the row: "leased", or why it was closed instead (see claim_rows_in).
_C_OUTCOME = 8

ClaimRow = Sequence[Any]
"""A claimed intent as the claim statement returns it (columns ``C_*``)."""


def _claim_statement() -> Any:
    exhausted = ri.c.attempts >= MAX_ATTEMPTS
    stale = ri.c.schedule_revision != tasks.c.schedule_revision
    expired = ri.c.at <= bindparam("expired_before", type_=ri.c.at.type)
    ok = not_(or_(exhausted, stale, expired))
    expires = bindparam("expires", type_=ri.c.lease_expires_at.type)
    now = bindparam("now", type_=ri.c.updated_at.type)
    # The condition of the partial index, verbatim, so that SQLite uses it too.
    due = (
        select(ri.c.id)
        .where(text(f"reminder_intents.{CLAIMABLE_INTENTS}"), ri.c.next_attempt_at <= now)
        .order_by(ri.c.next_attempt_at)
        .limit(bindparam("limit", type_=Integer()))
    )
    return (
        update(ri)
        .where(ri.c.id.in_(for_update(due, skip_locked=True)), tasks.c.id == ri.c.task_id)
        .values(
            status=case((exhausted, _DEAD), (ok, _LEASED), else_=IntentState.CLOSED.value),
            attempts=case((ok, ri.c.attempts + 1), else_=ri.c.attempts),
            lease_token=case(
                (ok, bindparam("nonce", type_=String()) + cast(ri.c.id, String())),
                else_=None,
            ),
            lease_owner=case((ok, bindparam("owner", type_=String())), else_=None),
            lease_expires_at=case((ok, expires), else_=None),
            next_attempt_at=case((ok, expires), else_=ri.c.next_attempt_at),
            closed_reason=case(
                (exhausted, None), (stale, "stale-schedule"), (expired, "expired"), else_=None
            ),
            last_error=case(
                (
                    and_(exhausted, ri.c.status == _LEASED),
                    literal("the lease expired after the last attempt (worker lost)"),
                ),
                else_=ri.c.last_error,
            ),
            updated_at=now,
        )
        # The columns C_*, then "leased" or the reason the row was closed instead. IDs
        # and the instant unconverted: the lease's expiry is the bound one, not read back.
        .returning(
            ri.c.lease_token,
            type_coerce(ri.c.id, RAW).label("id"),
            type_coerce(ri.c.task_id, RAW).label("task_id"),
            ri.c.schedule_revision,
            ri.c.channel,
            type_coerce(ri.c.at, RAW).label("at"),
            type_coerce(ri.c.recipient_id, RAW).label("recipient_id"),
            ri.c.attempts,
            # One column for two (each value fetched costs): "leased", or why not.
            func.coalesce(ri.c.closed_reason, ri.c.status).label("outcome"),
        )
    )


CLAIM = _claim_statement()
"""The claim statement (see the module's docstring), as :func:`claim_rows_in` runs it."""
# Earliest first, then by ID: both sort in their raw form as they do converted (SQLite's
# instants are fixed-width text, its UUIDs fixed-width lower-case hex).
_CLAIM_ORDER = itemgetter(C_AT, C_ID)

ACK = (
    update(ri)
    .where(
        ri.c.lease_token.in_(bindparam("tokens", expanding=True)),
        ri.c.status == _LEASED,
        ri.c.lease_expires_at > bindparam("now"),
    )
    .values(
        status=IntentState.DELIVERED.value,
        delivered_at=bindparam("now"),
        updated_at=bindparam("now"),
    )
    .returning(ri.c.lease_token)
)
"""The acknowledgement statement, as :func:`ack_in` runs it."""

_RELEASE = (
    update(ri)
    .where(ri.c.lease_token.in_(bindparam("tokens", expanding=True)), ri.c.status == _LEASED)
    .values(
        status=_PENDING,
        attempts=ri.c.attempts - 1,
        lease_token=None,
        lease_owner=None,
        lease_expires_at=None,
        next_attempt_at=bindparam("now"),
        updated_at=bindparam("now"),
    )
)

_CLOSE = (
    update(ri)
    .where(ri.c.lease_token == bindparam("token"), ri.c.status == _LEASED)
    .values(
        status=IntentState.CLOSED.value,
        closed_reason=bindparam("reason"),
        lease_owner=None,
        lease_expires_at=None,
        updated_at=bindparam("now"),
    )
)


class LeasedIntent(NamedTuple):
    """The intent a lease token names, as :func:`leased_row` reads it (its statement's
    columns, in order): whether the token still holds it, and its attempts so far."""

    id: UUID
    status: str
    attempts: int
    lease_expires_at: datetime | None
    lease_owner: str | None

    @classmethod
    def from_row(cls, row: Any) -> LeasedIntent:
        return cls._make(row)


_LEASED_ROW = select(
    ri.c.id, ri.c.status, ri.c.attempts, ri.c.lease_expires_at, ri.c.lease_owner
).where(ri.c.lease_token == bindparam("token"))

_NEXT_DUE = select(func.min(ri.c.next_attempt_at)).where(
    text(f"reminder_intents.{CLAIMABLE_INTENTS}")
)


def claim_rows_in(
    conn: Connection, owner: str, limit: int, now: datetime, lease: timedelta = LEASE
) -> tuple[list[ClaimRow], dict[str, int], datetime]:
    """:func:`claim_in` without a :class:`Claim` built per intent: the leased intents as the
    claim statement returns them (columns ``C_*``, IDs and the instant in the database's own
    form), earliest first; the due intents closed instead, by reason; and the leases' expiry.
    """
    expires = now + lease
    params = {
        "now": now,
        "expires": expires,
        "expired_before": now - EXPIRY,
        "limit": limit,
        "owner": owner,
        "nonce": secrets.token_hex(12),
    }
    rows = conn.execute(CLAIM, params).all()
    claims: list[ClaimRow] = [row for row in rows if row[_C_OUTCOME] == _LEASED]
    closed: dict[str, int] = {}
    if len(claims) != len(rows):
        for row in rows:
            reason = row[_C_OUTCOME]
            if reason != _LEASED:  # "dead", "stale-schedule" or "expired"
                closed[reason] = closed.get(reason, 0) + 1
    claims.sort(key=_CLAIM_ORDER)
    # As the database keeps it, and as UTCDateTime reads it back: in UTC.
    return claims, closed, require_aware(expires, "expires")


def claim_in(
    conn: Connection, owner: str, limit: int, now: datetime, lease: timedelta = LEASE
) -> tuple[list[Claim], dict[str, int]]:
    """Leases up to ``limit`` due intents to ``owner``, earliest first
    (:meth:`~kalends.reminders.outbox.Outbox.claim`).

    Also returns how many due intents the claim closed instead, by reason (``dead``:
    a lease that expired after the last attempt).
    """
    rows, closed, expires = claim_rows_in(conn, owner, limit, now, lease)
    claims = [
        Claim(
            uuid_of(row[C_ID]),
            uuid_of(row[C_TASK]),
            row[C_REVISION],
            row[C_CHANNEL],
            instant(row[C_AT]),
            uuid_of(row[C_RECIPIENT]),
            row[C_ATTEMPTS],
            row[C_TOKEN],
            expires,
        )
        for row in rows
    ]
    return claims, closed


def ack_in(conn: Connection, tokens: Sequence[str], now: datetime) -> list[str]:
    """Records the intents held with ``tokens`` as delivered in one statement; returns the
    tokens not acknowledged (unknown, expired, released or already settled)."""
    if not tokens:
        return []
    done = conn.execute(ACK, {"tokens": list(tokens), "now": now}).scalars().all()
    if len(done) == len(tokens):  # the usual case: every lease still held
        return []
    acked = set(done)
    return [t for t in tokens if t not in acked]


def close_in(conn: Connection, closing: Sequence[tuple[str, str]], now: datetime) -> None:
    """Closes leased intents (token, reason): they may not be delivered."""
    if closing:
        conn.execute(_CLOSE, [{"token": t, "reason": r[:64], "now": now} for t, r in closing])


def release_in(conn: Connection, tokens: Sequence[str], now: datetime) -> int:
    """Gives leased intents back unsent: pending now, the attempt undone; wakes the workers.
    Returns how many were still leased."""
    released = int(conn.execute(_RELEASE, {"tokens": list(tokens), "now": now}).rowcount)
    notify(conn)
    return released


def leased_row(conn: Connection, token: str) -> LeasedIntent | None:
    """The intent that ``token`` leased (or leases): ID, status, attempts, lease; or ``None``."""
    row = conn.execute(_LEASED_ROW, {"token": token}).first()
    return None if row is None else LeasedIntent.from_row(row)


def retry_in(conn: Connection, token: str, error: str, now: datetime) -> UUID:
    """Records a failed delivery of the intent held with ``token`` and returns its ID: it
    waits :func:`~kalends.reminders.limits.backoff` and is claimable again, or is ``dead``
    (kept, with ``error``) after its last attempt. Raises :class:`LeaseLost` when the token
    no longer holds it."""
    row = leased_row(conn, token)
    if (
        row is None
        or row.status != _LEASED
        # (a leased intent always has its lease's expiry: the claim sets both together)
        or row.lease_expires_at is None
        or row.lease_expires_at <= now
    ):
        raise lease_lost(row)
    dead = row.attempts >= MAX_ATTEMPTS
    values: dict[str, Any] = {
        "status": _DEAD if dead else _PENDING,
        "last_error": error,
        "lease_owner": None,
        "lease_expires_at": None,
        "updated_at": now,
    }
    if not dead:
        values["next_attempt_at"] = now + backoff(row.attempts)
    changed = conn.execute(
        update(ri).where(ri.c.lease_token == token, ri.c.status == _LEASED).values(**values)
    ).rowcount
    if changed != 1:  # pragma: no cover - the row was read in this transaction
        raise lease_lost(None)
    return row.id


def next_due_in(conn: Connection) -> datetime | None:
    """When an intent next becomes claimable (its time or a lease's expiry): one index seek."""
    found: datetime | None = conn.execute(_NEXT_DUE).scalar()
    return found


def lease_lost(row: LeasedIntent | None) -> LeaseLost:
    """Why a token no longer holds its intent, given the :func:`leased_row` it names."""
    if row is None:
        return LeaseLost("reminder: no intent is leased with this token")
    if row.status != _LEASED:
        return LeaseLost(
            f"reminder: the intent is {row.status} now; this token no longer holds it",
            owner=row.lease_owner,
        )
    return LeaseLost(
        "reminder: the lease of this token expired; the intent may be claimed again",
        owner=row.lease_owner,
    )
