"""The reminder outbox: durable reminder intents claimed under leases (seed 000, "Reminder outbox").

:class:`Outbox` is what workers and people call, one transaction per method. Its parts
live beside it, one concept each: the intents' states and the task store's writes
(:mod:`~kalends.reminders.intents`), the bounds (:mod:`~kalends.reminders.limits`), the
database's own form of IDs and instants (:mod:`~kalends.reminders.raw_forms`), claims and
leases (:mod:`~kalends.reminders.claims`), eligibility
(:mod:`~kalends.reminders.eligibility`) and what people read
(:mod:`~kalends.reminders.inspection`). This module names them all again, so callers
import from one place.

Delivery is at least once: a transport may accept a message and the worker crash before
its acknowledgement, so the intent is delivered again; the intent ID travels with every
message as the idempotency key.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput
from kalends.identity import resolve_actor
from kalends.keywords import takes
from kalends.reminders.claims import (
    ACK,
    C_AT,
    C_ATTEMPTS,
    C_CHANNEL,
    C_ID,
    C_RECIPIENT,
    C_REVISION,
    C_TASK,
    C_TOKEN,
    CLAIM,
    Claim,
    ClaimRow,
    ack_in,
    claim_in,
    claim_rows_in,
    close_in,
    lease_lost,
    leased_row,
    next_due_in,
    release_in,
    retry_in,
)
from kalends.reminders.eligibility import (
    E_DUE,
    E_ID,
    E_LIST_NAME,
    E_PARENT,
    E_REASON,
    E_REF,
    E_TITLE,
    E_ZONE,
    Verdict,
    VerdictRow,
    eligibility,
    reminder_eligible,
    verdict_rows_in,
)
from kalends.reminders.inspection import (
    Intent,
    IntentQuery,
    intent_by_id,
    list_intents,
    parse_intent_id,
    requeue_in,
    visible,
)
from kalends.reminders.intents import LIVE_STATES, STATUSES, IntentState
from kalends.reminders.limits import (
    CLAIM_BATCH,
    EXPIRY,
    LEASE,
    LIST_LIMIT,
    MAX_ATTEMPTS,
    MAX_CLAIM_BATCH,
    MAX_ERROR_LENGTH,
    MAX_OWNER_LENGTH,
    RETRY_CAP,
    RETRY_FACTOR,
    RETRY_FIRST,
    TOKEN_LENGTH,
    backoff,
)
from kalends.reminders.raw_forms import RAW, db_form, instant, instant_text, uuid_of, uuid_text
from kalends.storage.unit_of_work import Store

__all__ = [
    "CLAIM_BATCH",
    "C_AT",
    "C_ATTEMPTS",
    "C_CHANNEL",
    "C_ID",
    "C_RECIPIENT",
    "C_REVISION",
    "C_TASK",
    "C_TOKEN",
    "EXPIRY",
    "E_DUE",
    "E_ID",
    "E_LIST_NAME",
    "E_PARENT",
    "E_REASON",
    "E_REF",
    "E_TITLE",
    "E_ZONE",
    "LEASE",
    "LIST_LIMIT",
    "LIVE",
    "MAX_ATTEMPTS",
    "MAX_CLAIM_BATCH",
    "MAX_ERROR_LENGTH",
    "MAX_OWNER_LENGTH",
    "RAW",
    "RETRY_CAP",
    "RETRY_FACTOR",
    "RETRY_FIRST",
    "STATUSES",
    "TOKEN_LENGTH",
    "Claim",
    "ClaimRow",
    "Intent",
    "IntentQuery",
    "IntentState",
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

# The states of an intent that may still be sent.
LIVE = LIVE_STATES
# The claim and acknowledgement statements, which the outbox benchmark also runs bare.
_CLAIM = CLAIM
_ACK = ACK


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


def _check_status(status: object) -> IntentState | None:
    if status is None:
        return None
    if status not in STATUSES:
        raise InvalidInput(
            f"status: unknown status {status!r}; use one of {', '.join(STATUSES)}",
            field="status",
        )
    return IntentState(status)


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
            row = self.store.run(lambda conn: leased_row(conn, token), write=False)
            raise lease_lost(row)

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
            intent_id = retry_in(conn, token, error, self.store.clock.now())
            return intent_by_id(conn, intent_id)

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

        return self.store.run(lambda conn: release_in(conn, checked, self.store.clock.now()))

    def next_due(self) -> datetime | None:
        """When an intent next becomes claimable (its time or a lease's expiry): one index seek."""
        return self.store.run(next_due_in, write=False)

    def verdicts(self, claims: Sequence[Claim]) -> dict[UUID, Verdict]:
        """``reminder_eligible`` for the claimed intents, read now (see :func:`eligibility`)."""
        ids = [c.id for c in claims]
        return self.store.run(lambda conn: eligibility(conn, ids), write=False)

    # --- people ------------------------------------------------------------------------

    @takes(IntentQuery, limit=LIST_LIMIT)
    def list(self, actor: Any, **kw: Unpack[IntentQuery[UUID]]) -> list[Intent]:
        """The intents the actor may see: those of tasks in lists they belong to."""
        state = _check_status(kw.get("status"))
        task, limit = kw.get("task"), kw.get("limit", LIST_LIMIT)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
            raise InvalidInput("limit: a whole number from 1 to 10000 is required", field="limit")

        def run(conn: Connection) -> list[Intent]:
            actor_id = resolve_actor(conn, actor)
            return list_intents(conn, actor_id, status=state, task=task, limit=limit)

        return self.store.run(run, write=False)

    def get(self, actor: Any, intent: UUID | str) -> Intent:
        """One intent, if the actor belongs to its task's list."""
        intent_id = parse_intent_id(intent)

        def run(conn: Connection) -> Intent:
            return visible(conn, resolve_actor(conn, actor), intent_id)

        return self.store.run(run, write=False)

    def requeue(self, actor: Any, intent: UUID | str) -> Intent:
        """Gives a dead intent (or one that failed and waits) a fresh round of attempts now.

        Only the recipient or an editor of the list may; it is checked for eligibility again
        when a worker claims it.
        """
        intent_id = parse_intent_id(intent)

        def run(conn: Connection) -> Intent:
            actor_id = resolve_actor(conn, actor)
            return requeue_in(conn, actor_id, intent_id, self.store.clock.now())

        return self.store.run(run)
