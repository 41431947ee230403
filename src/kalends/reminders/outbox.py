"""The reminder outbox: durable reminder intents claimed under leases (seed 000, "Reminder outbox").

An intent is keyed uniquely by (task, schedule revision, channel, instant) and names its
recipient actor; where the recipient's reminders go lives in their notification settings,
never here. Its life:

``pending`` --claim--> ``leased`` --ack--> ``delivered``
                         |  --retry--> ``pending`` (later) or ``dead`` after the fifth attempt
                         |  --close--> ``closed`` (no longer eligible: the reason is kept)
                         |  --release--> ``pending`` (a worker shutting down, nothing sent)
                         '-- the lease expires --> claimable again (a crashed worker)

Schedule changes, completion and trash cancel pending and leased intents of the old
revision in their own transaction (``cancelled``).

A claim is one statement in one immediate transaction (SQLite ``BEGIN IMMEDIATE``;
PostgreSQL ``FOR UPDATE SKIP LOCKED``): it takes the earliest due intents, gives each a
unique lease token, the owner and a 60-second lease, and counts the attempt then, so a
crash counts. ``next_attempt_at`` is when an intent may next be claimed: for a pending
intent its (retry) time, for a leased one the lease's expiry, so one index finds both.
The same statement closes what it must never claim: intents of a schedule revision that
is no longer current (``stale``), intents older than :data:`EXPIRY` (``expired``) and
leases that expired after the last attempt (``dead``).

Delivery is at least once: a transport may accept a message and the worker crash before
its acknowledgement, so the intent is delivered again; the intent ID travels with every
message as the idempotency key.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import Any
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
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import NullType

from kalends.clock import require_aware
from kalends.errors import Conflict, Forbidden, InvalidInput, LeaseLost, NotFound
from kalends.identity import parse_uuid, resolve_actor
from kalends.reminders.local_times import intent_zone, local_text
from kalends.storage.identity_tables import actors
from kalends.storage.schema import SQLITE_INSTANT_LENGTH
from kalends.storage.task_tables import (
    CLAIMABLE_INTENTS,
    list_members,
    lists,
    reminder_intents,
    tasks,
)
from kalends.storage.unit_of_work import Store, for_update
from kalends.storage.wake import notify
from kalends.tasks import TaskStatus

__all__ = [
    "CLAIM_BATCH",
    "EXPIRY",
    "LEASE",
    "MAX_ATTEMPTS",
    "MAX_CLAIM_BATCH",
    "RAW",
    "STATUSES",
    "RETRY_CAP",
    "Claim",
    "ClaimRow",
    "Intent",
    "Outbox",
    "Verdict",
    "VerdictRow",
    "ack_in",
    "backoff",
    "claim_in",
    "claim_rows_in",
    "close_in",
    "db_form",
    "eligibility",
    "instant",
    "instant_text",
    "reminder_eligible",
    "uuid_of",
    "uuid_text",
    "verdict_rows_in",
]

# Seed 000, "Reminder outbox": claims take "a 60-second lease".
LEASE = timedelta(seconds=60)
# Seed 000, "Reminder outbox": attempts are counted at claim "and stop after five attempts".
MAX_ATTEMPTS = 5
# Seed 000, "Reminder outbox": "retry delays increase up to one hour".
RETRY_CAP = timedelta(hours=1)
# kalends: the first retry waits a minute and each later one four times longer
# (1, 4, 16 minutes, then the one-hour cap).
RETRY_FIRST = timedelta(minutes=1)
RETRY_FACTOR = 4
# kalends: a reminder still undelivered a day after its instant is closed as expired, not
# sent late (seed 000: "expired or stale intents are never newly claimed").
EXPIRY = timedelta(days=1)
# kalends: intents claimed per call by default, and at most.
CLAIM_BATCH = 100
MAX_CLAIM_BATCH = 1000
# The longest lease owner name and error text kept.
MAX_OWNER_LENGTH = 200
MAX_ERROR_LENGTH = 2000

# A lease token: 24 random hex digits and the intent's ID (unique because the ID is).
TOKEN_LENGTH = 64

LIVE = ("pending", "leased")
_OPEN = TaskStatus.OPEN.value
STATUSES = ("pending", "leased", "delivered", "cancelled", "dead", "closed")
ri = reminder_intents


def backoff(attempts: int) -> timedelta:
    """The delay before the next attempt after ``attempts`` failed ones (1, 4, 16 min, 1 h)."""
    delay: timedelta = RETRY_FIRST * RETRY_FACTOR ** max(attempts - 1, 0)
    return min(delay, RETRY_CAP)


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


@dataclass(frozen=True, slots=True)
class Intent:
    """One reminder intent as stored, for listing and inspection."""

    id: UUID
    task_id: UUID
    task_ref: str
    task_title: str
    schedule_revision: int
    channel: str
    at: datetime
    recipient_id: UUID
    recipient: str
    status: str
    attempts: int
    next_attempt_at: datetime
    lease_owner: str | None
    lease_expires_at: datetime | None
    last_error: str | None
    closed_reason: str | None
    delivered_at: datetime | None
    created_at: datetime
    updated_at: datetime
    # The zone its recipient reads its times in (kalends.reminders.local_times).
    zone: str | None = None

    def to_json(self) -> dict[str, Any]:
        def instant(value: datetime | None) -> str | None:
            return value.isoformat().replace("+00:00", "Z") if value is not None else None

        return {
            "id": str(self.id),
            "task": {"id": str(self.task_id), "ref": self.task_ref, "title": self.task_title},
            "schedule_revision": self.schedule_revision,
            "channel": self.channel,
            "at": instant(self.at),
            "local": local_text(self.at, self.zone),
            "zone": self.zone,
            "recipient": {"id": str(self.recipient_id), "handle": self.recipient},
            "status": self.status,
            "attempts": self.attempts,
            "max_attempts": MAX_ATTEMPTS,
            "next_attempt_at": instant(self.next_attempt_at) if self.status in LIVE else None,
            "lease_owner": self.lease_owner if self.status == "leased" else None,
            "lease_expires_at": instant(self.lease_expires_at) if self.status == "leased" else None,
            "last_error": self.last_error,
            "closed_reason": self.closed_reason,
            "delivered_at": instant(self.delivered_at),
            "created_at": instant(self.created_at),
            "updated_at": instant(self.updated_at),
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether an intent may be delivered now, with what a message about it needs."""

    intent_id: UUID
    reason: str | None
    task_id: UUID
    task_ref: str
    task_title: str
    due_text: str | None
    list_name: str
    recipient_id: UUID
    recipient: str
    recipient_name: str
    recipient_email: str | None
    # The zone the recipient reads the reminder's time in (kalends.reminders.local_times).
    zone: str | None = None

    @property
    def eligible(self) -> bool:
        return self.reason is None


# --------------------------------------------------------------------------- raw forms

# "As the driver gives it": a column read (or a value bound) in the database's own form,
# with no conversion by SQLAlchemy or kalends. On SQLite that is text: 32 hex digits for a
# UUID (as SQLAlchemy's ``Uuid`` stores it there), :class:`UTCDateTime`'s fixed-width text
# for an instant, ``YYYY-MM-DD`` for a date. On PostgreSQL it is the driver's object
# (``uuid.UUID``, an aware ``datetime``, a ``date``). The worker's hot path keys, sorts
# and binds IDs in this form and converts only what it hands out (:func:`uuid_of`,
# :func:`instant`).
RAW = NullType()


def uuid_of(value: Any) -> UUID:
    """A UUID from the database's own form of it (see :data:`RAW`)."""
    if isinstance(value, UUID):
        return value
    # SQLite's 32 hex digits are the UUID's integer: the shortest way to a UUID.
    return UUID(int=int(value, 16)) if len(value) == 32 else UUID(hex=value)


def uuid_text(value: Any) -> str:
    """The canonical text of a UUID (``8-4-4-4-12`` lower-case hex digits) from the
    database's own form of it, without building a UUID from SQLite's 32 hex digits."""
    if isinstance(value, str) and len(value) == 32:
        return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
    return str(uuid_of(value))


def instant(value: Any) -> datetime:
    """An instant from the database's own form of it, as :class:`UTCDateTime` reads it:
    aware, in UTC."""
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value)
        # Stored text ends in Z, which already parses as UTC.
        return parsed if parsed.tzinfo is UTC else parsed.astimezone(UTC)
    return require_aware(value, "instant")


def instant_text(value: Any) -> str:
    """An instant as a message shows it, ISO 8601 in UTC ending in ``Z`` (with microseconds
    only if it has any), from the database's own form of it. SQLite keeps that text
    already (with six digits of microseconds always): no datetime is built for it."""
    if isinstance(value, str) and len(value) == SQLITE_INSTANT_LENGTH and value[-1] == "Z":
        return f"{value[:19]}Z" if value.endswith(".000000Z") else value
    return instant(value).isoformat().replace("+00:00", "Z")


def db_form(conn: Connection, ids: Sequence[UUID]) -> list[Any]:
    """UUIDs in the database's own form (see :data:`RAW`), to bind where that is expected."""
    return list(ids) if conn.dialect.supports_native_uuid else [i.hex for i in ids]


# --------------------------------------------------------------------------- claim

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
            status=case((exhausted, "dead"), (ok, "leased"), else_="closed"),
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
                    and_(exhausted, ri.c.status == "leased"),
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


_CLAIM = _claim_statement()
# Earliest first, then by ID: both sort in their raw form as they do converted (SQLite's
# instants are fixed-width text, its UUIDs fixed-width lower-case hex).
_CLAIM_ORDER = itemgetter(C_AT, C_ID)

_ACK = (
    update(ri)
    .where(
        ri.c.lease_token.in_(bindparam("tokens", expanding=True)),
        ri.c.status == "leased",
        ri.c.lease_expires_at > bindparam("now"),
    )
    .values(status="delivered", delivered_at=bindparam("now"), updated_at=bindparam("now"))
    .returning(ri.c.lease_token)
)

_RELEASE = (
    update(ri)
    .where(ri.c.lease_token.in_(bindparam("tokens", expanding=True)), ri.c.status == "leased")
    .values(
        status="pending",
        attempts=ri.c.attempts - 1,
        lease_token=None,
        lease_owner=None,
        lease_expires_at=None,
        next_attempt_at=bindparam("now"),
        updated_at=bindparam("now"),
    )
)

_LEASED_ROW = select(
    ri.c.id, ri.c.status, ri.c.attempts, ri.c.lease_expires_at, ri.c.lease_owner
).where(ri.c.lease_token == bindparam("token"))

_NEXT_DUE = select(func.min(ri.c.next_attempt_at)).where(
    text(f"reminder_intents.{CLAIMABLE_INTENTS}")
)


# --------------------------------------------------------------------------- eligibility

# The columns of an eligibility row (see :func:`verdict_rows_in`), in order; the intent's
# and the parent's IDs in the database's own form. The worker reads these only (who the
# recipient is comes with their destinations); :func:`eligibility` reads the task's and
# the recipient's IDs and the recipient's names after them. Few columns: every value
# fetched costs (Python's sqlite3 module lets go of the GIL for each).
E_ID, E_REASON, E_PARENT, E_REF, E_TITLE, E_DUE, E_LIST_NAME, E_ZONE = range(8)
_E_TASK, _E_RECIPIENT, _E_HANDLE, _E_NAME, _E_EMAIL = range(8, 13)

VerdictRow = tuple[str | None, Sequence[Any]]
"""Why an intent may not be delivered (``None``: it may) and its eligibility row (``E_*``)."""

# The reasons that come before a trashed ancestor's "task-trashed" (see verdict_rows_in).
_BEFORE_TRASH = frozenset({"stale-schedule", "task-completed", "task-trashed"})


class _date_text(FunctionElement[str]):
    """A date as ISO 8601 text (``YYYY-MM-DD``), as ``date.isoformat()`` writes it."""

    type = String()
    inherit_cache = True
    name = "date_text"


@compiles(_date_text, "sqlite")
def _date_text_sqlite(element: _date_text, compiler: Any, **kw: Any) -> str:
    # SQLite keeps a date as that text already.
    return str(compiler.process(element.clauses, **kw))


@compiles(_date_text, "postgresql")
def _date_text_postgresql(element: _date_text, compiler: Any, **kw: Any) -> str:
    return f"to_char({compiler.process(element.clauses, **kw)}, 'YYYY-MM-DD')"


def _eligibility_statement(with_ids: bool) -> Any:
    member = (
        select(list_members.c.role)
        .where(
            list_members.c.list_id == tasks.c.list_id,
            list_members.c.actor_id == ri.c.recipient_id,
        )
        .scalar_subquery()
    )
    # reminder_eligible, in order, but for the walk up to a trashed ancestor (a second
    # statement, for checklist items only): the first reason that holds.
    reason = case(
        (ri.c.schedule_revision != tasks.c.schedule_revision, "stale-schedule"),
        (tasks.c.status != _OPEN, "task-completed"),
        (tasks.c.trashed.is_(True), "task-trashed"),
        (lists.c.status != "active", "list-archived"),
        (member.is_(None), "recipient-not-a-member"),
        else_=None,
    )
    # The due date or time as a message shows it: "2025-03-02 09:30 Europe/Paris", or
    # "2025-03-04" (the wall time is "YYYY-MM-DDTHH:MM:SS").
    due = case(
        (
            tasks.c.due_local.is_not(None),
            func.substr(func.replace(tasks.c.due_local, "T", " "), 1, 16) + " " + tasks.c.due_zone,
        ),
        else_=_date_text(tasks.c.due_date),
    )
    columns = [
        type_coerce(ri.c.id, RAW).label("id"),
        reason.label("reason"),
        type_coerce(tasks.c.parent_id, RAW).label("parent_id"),
        tasks.c.ref,
        tasks.c.title,
        due.label("due"),
        lists.c.name.label("list_name"),
        intent_zone().label("zone"),
    ]
    joined = ri.join(tasks, tasks.c.id == ri.c.task_id).join(lists, lists.c.id == tasks.c.list_id)
    if with_ids:
        columns += [
            type_coerce(ri.c.task_id, RAW).label("task_id"),
            type_coerce(ri.c.recipient_id, RAW).label("recipient_id"),
            actors.c.handle,
            actors.c.display_name,
            actors.c.email,
        ]
        joined = joined.join(actors, actors.c.id == ri.c.recipient_id)
    return (
        select(*columns)
        .select_from(joined)
        .where(type_coerce(ri.c.id, RAW).in_(bindparam("ids", expanding=True)))
    )


_ELIGIBILITY = _eligibility_statement(with_ids=False)
_ELIGIBILITY_WITH_IDS = _eligibility_statement(with_ids=True)


def _hidden_by_trash_statement() -> Any:
    """The intents whose task has a trashed ancestor (a trashed subtree hides everything in it)."""
    start = (
        select(ri.c.id.label("intent_id"), tasks.c.parent_id.label("ancestor"))
        .join(tasks, tasks.c.id == ri.c.task_id)
        .where(type_coerce(ri.c.id, RAW).in_(bindparam("ids", expanding=True)))
        .cte("chain", recursive=True)
    )
    up = start.union_all(
        select(start.c.intent_id, tasks.c.parent_id).join(tasks, tasks.c.id == start.c.ancestor)
    )
    return (
        select(type_coerce(up.c.intent_id, RAW))
        .join(tasks, tasks.c.id == up.c.ancestor)
        .where(tasks.c.trashed.is_(True))
        .distinct()
    )


_HIDDEN_BY_TRASH = _hidden_by_trash_statement()


def verdict_rows_in(
    conn: Connection, intent_ids: Sequence[Any], *, statement: Any = _ELIGIBILITY
) -> dict[Any, VerdictRow]:
    """:func:`eligibility` of intents given by their IDs in the database's own form (see
    :data:`RAW`), keyed by that form: each intent's reason and its eligibility row, no
    object built per intent. Runs inside the caller's transaction."""
    if not intent_ids:
        return {}
    rows = conn.execute(statement, {"ids": list(intent_ids)}).all()
    # Only intents of checklist items need the walk up to the ancestors.
    items = [row[E_ID] for row in rows if row[E_PARENT] is not None]
    if not items:
        return {row[E_ID]: (row[E_REASON], row) for row in rows}
    hidden = set(conn.execute(_HIDDEN_BY_TRASH, {"ids": items}).scalars())
    found: dict[Any, VerdictRow] = {}
    for row in rows:
        reason = row[E_REASON]
        if reason not in _BEFORE_TRASH and row[E_ID] in hidden:
            reason = "task-trashed"
        found[row[E_ID]] = (reason, row)
    return found


def eligibility(conn: Connection, intent_ids: Sequence[UUID]) -> dict[UUID, Verdict]:
    """``reminder_eligible`` for many intents in one or two statements (seed 000, "Reminder
    outbox"): the walk up to the ancestors runs only for intents of checklist items.

    An intent may be delivered when its schedule revision is still the task's current one,
    the task is open and neither it nor an ancestor is in the trash, its list is active and
    the recipient is still a member of that list (every role may read). Otherwise the
    verdict's ``reason`` says why not. Intents that do not exist are left out.
    """
    verdicts: dict[UUID, Verdict] = {}
    raw_ids = db_form(conn, intent_ids)
    found = verdict_rows_in(conn, raw_ids, statement=_ELIGIBILITY_WITH_IDS)
    for reason, row in found.values():
        intent_id = uuid_of(row[E_ID])
        verdicts[intent_id] = Verdict(
            intent_id,
            reason,
            uuid_of(row[_E_TASK]),
            row[E_REF],
            row[E_TITLE],
            row[E_DUE],
            row[E_LIST_NAME],
            uuid_of(row[_E_RECIPIENT]),
            row[_E_HANDLE],
            row[_E_NAME],
            row[_E_EMAIL],
            row[E_ZONE],
        )
    return verdicts


def reminder_eligible(conn: Connection, intent_id: UUID) -> str | None:
    """Why the intent may not be delivered now, or ``None`` if it may (see :func:`eligibility`)."""
    verdict = eligibility(conn, [intent_id]).get(intent_id)
    if verdict is None:
        raise NotFound(f"reminder: no intent {intent_id}", field="reminder")
    return verdict.reason


# --------------------------------------------------------------------------- in a transaction


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
    rows = conn.execute(_CLAIM, params).all()
    claims: list[ClaimRow] = [row for row in rows if row[_C_OUTCOME] == "leased"]
    closed: dict[str, int] = {}
    if len(claims) != len(rows):
        for row in rows:
            reason = row[_C_OUTCOME]
            if reason != "leased":  # "dead", "stale-schedule" or "expired"
                closed[reason] = closed.get(reason, 0) + 1
    claims.sort(key=_CLAIM_ORDER)
    # As the database keeps it, and as UTCDateTime reads it back: in UTC.
    return claims, closed, require_aware(expires, "expires")


def claim_in(
    conn: Connection, owner: str, limit: int, now: datetime, lease: timedelta = LEASE
) -> tuple[list[Claim], dict[str, int]]:
    """:meth:`Outbox.claim` inside the caller's (write) transaction; arguments unchecked.

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
    """:meth:`Outbox.ack_many` inside the caller's (write) transaction; tokens unchecked."""
    if not tokens:
        return []
    done = conn.execute(_ACK, {"tokens": list(tokens), "now": now}).scalars().all()
    if len(done) == len(tokens):  # the usual case: every lease still held
        return []
    acked = set(done)
    return [t for t in tokens if t not in acked]


_CLOSE = (
    update(ri)
    .where(ri.c.lease_token == bindparam("token"), ri.c.status == "leased")
    .values(
        status="closed",
        closed_reason=bindparam("reason"),
        lease_owner=None,
        lease_expires_at=None,
        updated_at=bindparam("now"),
    )
)


def close_in(conn: Connection, closing: Sequence[tuple[str, str]], now: datetime) -> None:
    """Closes leased intents (token, reason) inside the caller's transaction."""
    if closing:
        conn.execute(_CLOSE, [{"token": t, "reason": r[:64], "now": now} for t, r in closing])


# --------------------------------------------------------------------------- the outbox


def _check_owner(owner: object) -> str:
    if not isinstance(owner, str) or not owner.strip() or len(owner) > MAX_OWNER_LENGTH:
        raise InvalidInput(
            f"owner: a non-empty name of at most {MAX_OWNER_LENGTH} characters is required",
            field="owner",
        )
    return owner


def _check_tokens(tokens: object) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise InvalidInput("tokens: a list of lease tokens is required", field="token")
    checked = []
    for token in tokens:
        if not isinstance(token, str) or not token or len(token) > TOKEN_LENGTH:
            raise InvalidInput(f"token: not a lease token: {token!r}", field="token")
        checked.append(token)
    return checked


class Outbox:
    """Claims, acknowledgements, retries and releases of reminder intents.

    Every method is one transaction; the current instant comes from the store's clock.
    """

    def __init__(self, store: Store, *, lease: timedelta = LEASE) -> None:
        if lease <= timedelta(0):
            raise InvalidInput("lease: a positive duration is required", field="lease")
        self.store = store
        self.lease = lease

    # --- workers -----------------------------------------------------------------------

    def claim(self, owner: str, limit: int = CLAIM_BATCH) -> list[Claim]:
        """Leases up to ``limit`` due intents to ``owner``, earliest first.

        Each gets a unique token and a lease of :data:`LEASE`; its attempt is counted now.
        Due intents that must never be sent are closed by the same statement instead.
        """
        owner = _check_owner(owner)
        if (
            not isinstance(limit, int)
            or isinstance(limit, bool)
            or not 1 <= limit <= MAX_CLAIM_BATCH
        ):
            raise InvalidInput(
                f"limit: a whole number from 1 to {MAX_CLAIM_BATCH} is required", field="limit"
            )

        def run(conn: Connection) -> list[Claim]:
            return claim_in(conn, owner, limit, self.store.clock.now(), self.lease)[0]

        return self.store.run(run)

    def ack(self, token: str) -> None:
        """Records the intent held with ``token`` as delivered; the lease must still be held."""
        lost = self.ack_many([token])
        if lost:
            row = self.store.run(
                lambda conn: conn.execute(_LEASED_ROW, {"token": token}).first(), write=False
            )
            raise self._lost(token, row, self.store.clock.now())

    def ack_many(self, tokens: Sequence[str]) -> list[str]:
        """Acknowledges many deliveries in one statement; returns the tokens not acknowledged
        (unknown, expired, released or already settled)."""
        checked = _check_tokens(tokens)
        if not checked:
            return []

        return self.store.run(lambda conn: ack_in(conn, checked, self.store.clock.now()))

    def retry(self, token: str, error: str) -> Intent:
        """Records a failed delivery: the intent waits :func:`backoff` and is claimable again,
        or is ``dead`` (kept, with its last error) after its fifth attempt."""
        (token,) = _check_tokens([token])
        if not isinstance(error, str) or not error.strip():
            raise InvalidInput("error: a description of the failure is required", field="error")
        error = error.strip()[:MAX_ERROR_LENGTH]

        def run(conn: Connection) -> Intent:
            now = self.store.clock.now()
            row = conn.execute(_LEASED_ROW, {"token": token}).first()
            if row is None or row.status != "leased" or row.lease_expires_at <= now:
                raise self._lost(token, row, now)
            dead = row.attempts >= MAX_ATTEMPTS
            values: dict[str, Any] = {
                "status": "dead" if dead else "pending",
                "last_error": error,
                "lease_owner": None,
                "lease_expires_at": None,
                "updated_at": now,
            }
            if not dead:
                values["next_attempt_at"] = now + backoff(row.attempts)
            changed = conn.execute(
                update(ri)
                .where(ri.c.lease_token == token, ri.c.status == "leased")
                .values(**values)
            ).rowcount
            if changed != 1:  # pragma: no cover - the row was read in this transaction
                raise self._lost(token, None, now)
            return _intent(conn, row.id)

        return self.store.run(run)

    def close(self, token: str, reason: str) -> None:
        """Closes a leased intent that may not be delivered, keeping ``reason``."""
        self.close_many([(token, reason)])

    def close_many(self, closing: Sequence[tuple[str, str]]) -> None:
        """Closes leased intents with their reasons in one transaction (tokens still held)."""
        tokens = _check_tokens([t for t, _ in closing])
        checked = list(zip(tokens, [r for _, r in closing], strict=True))
        if not checked:
            return

        self.store.run(lambda conn: close_in(conn, checked, self.store.clock.now()))

    def release(self, tokens: Sequence[str]) -> int:
        """Gives leased intents back unsent (a worker stopping): pending now, the attempt undone."""
        checked = _check_tokens(tokens)
        if not checked:
            return 0

        def run(conn: Connection) -> int:
            now = self.store.clock.now()
            released = int(conn.execute(_RELEASE, {"tokens": checked, "now": now}).rowcount)
            notify(conn)
            return released

        return self.store.run(run)

    def next_due(self) -> datetime | None:
        """When an intent next becomes claimable (its time or a lease's expiry): one index seek."""

        def run(conn: Connection) -> datetime | None:
            found: datetime | None = conn.execute(_NEXT_DUE).scalar()
            return found

        return self.store.run(run, write=False)

    def verdicts(self, claims: Sequence[Claim]) -> dict[UUID, Verdict]:
        """``reminder_eligible`` for the claimed intents, read now (see :func:`eligibility`)."""
        ids = [c.id for c in claims]
        return self.store.run(lambda conn: eligibility(conn, ids), write=False)

    # --- people ------------------------------------------------------------------------

    def list(
        self,
        actor: Any,
        *,
        status: str | None = None,
        task: UUID | None = None,
        limit: int = 100,
    ) -> list[Intent]:
        """The intents the actor may see: those of tasks in lists they belong to."""
        if status is not None and status not in STATUSES:
            raise InvalidInput(
                f"status: unknown status {status!r}; use one of {', '.join(STATUSES)}",
                field="status",
            )
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
            raise InvalidInput("limit: a whole number from 1 to 10000 is required", field="limit")

        def run(conn: Connection) -> list[Intent]:
            actor_id = resolve_actor(conn, actor)
            stmt = _INTENTS.where(
                tasks.c.list_id.in_(
                    select(list_members.c.list_id).where(list_members.c.actor_id == actor_id)
                )
            )
            if status is not None:
                stmt = stmt.where(ri.c.status == status)
            if task is not None:
                stmt = stmt.where(ri.c.task_id == task)
            stmt = stmt.order_by(ri.c.at, ri.c.id).limit(limit)
            return [_intent_from_row(r) for r in conn.execute(stmt)]

        return self.store.run(run, write=False)

    def get(self, actor: Any, intent: UUID | str) -> Intent:
        """One intent, if the actor belongs to its task's list."""
        intent_id = _intent_id(intent)

        def run(conn: Connection) -> Intent:
            actor_id = resolve_actor(conn, actor)
            found = _visible(conn, actor_id, intent_id)
            return found

        return self.store.run(run, write=False)

    def requeue(self, actor: Any, intent: UUID | str) -> Intent:
        """Gives a dead intent (or one that failed and waits) a fresh round of attempts now.

        Only the recipient or an editor of the list may; it is checked for eligibility again
        when a worker claims it.
        """
        intent_id = _intent_id(intent)

        def run(conn: Connection) -> Intent:
            actor_id = resolve_actor(conn, actor)
            found = _visible(conn, actor_id, intent_id)
            role = conn.execute(
                select(list_members.c.role)
                .join(tasks, tasks.c.list_id == list_members.c.list_id)
                .where(tasks.c.id == found.task_id, list_members.c.actor_id == actor_id)
            ).scalar()
            if actor_id != found.recipient_id and role not in ("owner", "editor"):
                raise Forbidden(
                    "reminder: only its recipient or an editor of the list may retry it"
                )
            if found.status == "pending" and found.last_error is None:
                raise _conflict(
                    "reminder: this reminder has not failed; it waits for its time "
                    f"({found.next_attempt_at.isoformat()})"
                )
            if found.status not in ("dead", "pending"):
                raise _conflict(
                    f"reminder: a {found.status} reminder cannot be retried; "
                    "only a dead one, or one waiting after a failure, can"
                )
            now = self.store.clock.now()
            changed = conn.execute(
                update(ri)
                .where(ri.c.id == intent_id, ri.c.status == found.status)
                .values(
                    status="pending",
                    attempts=0,
                    next_attempt_at=now,
                    lease_token=None,
                    lease_owner=None,
                    lease_expires_at=None,
                    updated_at=now,
                )
            ).rowcount
            if changed != 1:  # a worker claimed it meanwhile (PostgreSQL)
                raise _conflict("reminder: a worker took this reminder meanwhile; try again")
            notify(conn)
            return _intent(conn, intent_id)

        return self.store.run(run)

    # --- helpers -----------------------------------------------------------------------

    def _lost(self, token: str, row: Any, now: datetime) -> LeaseLost:
        if row is None:
            return LeaseLost("reminder: no intent is leased with this token")
        if row.status != "leased":
            return LeaseLost(
                f"reminder: the intent is {row.status} now; this token no longer holds it",
                owner=row.lease_owner,
            )
        return LeaseLost(
            "reminder: the lease of this token expired; the intent may be claimed again",
            owner=row.lease_owner,
        )


_INTENTS = select(
    ri,
    tasks.c.ref.label("task_ref"),
    tasks.c.title.label("task_title"),
    tasks.c.list_id,
    actors.c.handle.label("recipient"),
    intent_zone().label("zone"),
).select_from(
    ri.join(tasks, tasks.c.id == ri.c.task_id).join(actors, actors.c.id == ri.c.recipient_id)
)


def _intent_from_row(r: Any) -> Intent:
    return Intent(
        id=r.id,
        task_id=r.task_id,
        task_ref=r.task_ref,
        task_title=r.task_title,
        schedule_revision=r.schedule_revision,
        channel=r.channel,
        at=r.at,
        recipient_id=r.recipient_id,
        recipient=r.recipient,
        status=r.status,
        attempts=r.attempts,
        next_attempt_at=r.next_attempt_at,
        lease_owner=r.lease_owner,
        lease_expires_at=r.lease_expires_at,
        last_error=r.last_error,
        closed_reason=r.closed_reason,
        delivered_at=r.delivered_at,
        created_at=r.created_at,
        updated_at=r.updated_at,
        zone=r.zone,
    )


def _intent(conn: Connection, intent_id: UUID) -> Intent:
    row = conn.execute(_INTENTS.where(ri.c.id == intent_id)).first()
    if row is None:
        raise NotFound(f"reminder: no intent {intent_id}", field="reminder")
    return _intent_from_row(row)


def _intent_id(value: UUID | str) -> UUID:
    if isinstance(value, UUID):
        return value
    parsed = parse_uuid(value, "reminder") if isinstance(value, str) else None
    if parsed is None:
        raise InvalidInput(f"reminder: not a reminder ID: {value!r}", field="reminder")
    return parsed


def _visible(conn: Connection, actor_id: UUID, intent_id: UUID) -> Intent:
    found = _intent(conn, intent_id)
    member = conn.execute(
        select(list_members.c.role)
        .join(tasks, tasks.c.list_id == list_members.c.list_id)
        .where(tasks.c.id == found.task_id, list_members.c.actor_id == actor_id)
    ).scalar()
    if member is None:
        # Not a member: answer as if it did not exist, so IDs do not leak.
        raise NotFound(f"reminder: no intent {intent_id}", field="reminder")
    return found


def _conflict(message: str) -> Exception:
    return Conflict(message, field="reminder")
