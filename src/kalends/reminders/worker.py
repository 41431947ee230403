"""The delivery worker: claims due reminder intents, checks them, sends them, settles them.

One batch: claim up to ``batch`` due intents, read their eligibility and the
recipients' destinations and close the ineligible ones with the reason, all in one
transaction; send each eligible one through the transport, checking eligibility again whenever the
last check is older than :data:`RECHECK_AFTER`, so an intent is never sent on a stale
verdict; acknowledge the sent ones together and retry the failed ones. A claim whose
lease is about to run out is released unsent rather than risk a second worker sending
it too.

Between batches the worker sleeps until the earliest intent becomes due (an index seek,
never a scan of the table) or until a writer wakes it: on PostgreSQL writers of intents
``NOTIFY`` the channel :data:`kalends.storage.wake.OUTBOX_CHANNEL` and the worker
``LISTEN``\\ s; on SQLite it watches ``PRAGMA data_version``, which changes when another
connection commits, without reading any table.

Delivery is at least once (see :mod:`kalends.reminders.outbox`): the intent ID is the
idempotency key every transport receives.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import StorageError
from kalends.reminders.claims import (
    C_AT,
    C_CHANNEL,
    C_ID,
    C_RECIPIENT,
    C_TASK,
    C_TOKEN,
    Claim,
    ClaimRow,
    ack_in,
    claim_rows_in,
    close_in,
)
from kalends.reminders.destinations import Person, recipients_of
from kalends.reminders.eligibility import (
    E_DUE,
    E_LIST_NAME,
    E_REF,
    E_TITLE,
    E_ZONE,
    Verdict,
    VerdictRow,
    verdict_rows_in,
)
from kalends.reminders.intents import IntentState
from kalends.reminders.local_times import when_text
from kalends.reminders.outbox import Outbox
from kalends.reminders.raw_forms import instant, uuid_of, uuid_text
from kalends.reminders.transports import Delivery, DeliveryFailed, Transport
from kalends.storage.unit_of_work import Store
from kalends.storage.wake import Waker, open_waker

__all__ = [
    "FIRST_BATCH",
    "IDLE_RECHECK",
    "LEASE_MARGIN",
    "RECHECK_AFTER",
    "WORKER_BATCH",
    "BatchReport",
    "DeliveryWorker",
    "compose",
]

log = logging.getLogger("kalends.reminders")

# The status of a reminder that will not be tried again.
DEAD = IntentState.DEAD
# kalends: a verdict older than this is read again before a send.
RECHECK_AFTER = 1.0
# kalends: a claim whose lease ends sooner than this (or half the lease, if shorter) is
# released, not sent.
LEASE_MARGIN = timedelta(seconds=10)
# kalends: a worker claims at most this many reminders at a time by default; how many it
# actually claims follows the transport's pace, so that a batch is sent within half a lease.
WORKER_BATCH = 500
# kalends: the first claim of a worker, before it knows the transport's pace.
FIRST_BATCH = 50
# kalends: the weight of the latest batch in the running mean of a send's duration.
PACE_WEIGHT = 0.3
# kalends: after a database error the loop waits this long, doubling up to the maximum.
OUTAGE_FIRST_WAIT = 1.0
OUTAGE_MAX_WAIT = 60.0
# kalends: with nothing due and no wake-up, look at the earliest due instant again after
# this long anyway (a guard against a missed notification; one index seek).
IDLE_RECHECK = 60.0


# The batch is kept as the database returned it: claim rows (kalends.reminders.claims.C_*)
# and eligibility rows (E_*), IDs in the database's own form; a Delivery is built per send.
# Intent ID -> its reason not to send (None: send) and its eligibility row.
_Verdicts = dict[Any, VerdictRow]
# Recipient ID -> who they are; (recipient, channel) -> their destination URLs there.
_Recipients = tuple[dict[Any, Person], dict[tuple[Any, str], tuple[str, ...]]]
# The claims still to send, every claim's verdict, and their recipients.
_Checked = tuple[deque[ClaimRow], _Verdicts, _Recipients]


@dataclass
class BatchReport:
    """What one batch (or a whole run) did. ``retried``: sends that failed and wait for
    another attempt; ``dead``: reminders that will not be tried again (the last attempt's
    send failed, or its lease ran out), until ``kalends reminders retry``."""

    claimed: int = 0
    delivered: int = 0
    retried: int = 0
    dead: int = 0
    closed: int = 0
    released: int = 0
    lost_acks: int = 0
    closed_reasons: dict[str, int] = field(default_factory=dict)

    def add(self, other: BatchReport) -> None:
        self.claimed += other.claimed
        self.delivered += other.delivered
        self.retried += other.retried
        self.dead += other.dead
        self.closed += other.closed
        self.released += other.released
        self.lost_acks += other.lost_acks
        for reason, count in other.closed_reasons.items():
            self.closed_reasons[reason] = self.closed_reasons.get(reason, 0) + count

    def to_json(self) -> dict[str, object]:
        return {
            "claimed": self.claimed,
            "delivered": self.delivered,
            "retried": self.retried,
            "dead": self.dead,
            "closed": self.closed,
            "closed_reasons": dict(sorted(self.closed_reasons.items())),
            "released": self.released,
            "lost_acks": self.lost_acks,
        }


def compose(claim: Claim, verdict: Verdict, destinations: Sequence[str]) -> Delivery:
    """The message of one reminder: what is due, where, for whom, and its idempotency key."""
    return _message(
        str(claim.id),
        claim.channel,
        tuple(destinations),
        claim.at,
        when_text(claim.at, verdict.zone),
        claim.task_id,
        verdict.task_ref,
        verdict.task_title,
        verdict.due_text,
        verdict.list_name,
        verdict.recipient,
        verdict.recipient_name,
        verdict.recipient_email,
    )


def _message(
    job_id: str,
    channel: str,
    destinations: tuple[str, ...],
    at: datetime,
    at_text: str,
    task_id: UUID,
    task_ref: str,
    title: str,
    due: str | None,
    list_name: str,
    recipient: str,
    recipient_name: str,
    recipient_email: str | None,
) -> Delivery:
    """The delivery :func:`compose` describes, from its parts (``at_text``: ``at`` as its
    recipient reads it, the wall time in the reminder's zone, :func:`when_text`)."""
    due_line = f"Due: {due}\n" if due else ""
    body = (
        f"{title}\n\nTask {task_ref} in {list_name}\n{due_line}"
        f"Reminder at {at_text} for {recipient_name}\n\nReminder ID: {job_id}"
    )
    # Positional: the fields of Delivery, in order (a hot path).
    return Delivery(
        job_id,
        channel,
        destinations,
        recipient,
        recipient_name,
        recipient_email,
        f"Reminder: {title}",
        body,
        task_id,
        task_ref,
        at,
    )


class DeliveryWorker:
    """Delivers due reminders through ``transport``; any number may run on one database."""

    def __init__(
        self,
        store: Store,
        transport: Transport,
        *,
        owner: str,
        batch: int = WORKER_BATCH,
        outbox: Outbox | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.transport = transport
        self.owner = owner
        self.batch = batch
        # Seconds a send takes, as a running mean (None until the first batch is sent).
        self.pace: float | None = None
        self.outbox = outbox or Outbox(store)
        self.monotonic = monotonic
        # Never more than half the lease, so a short lease still leaves time to send.
        self.lease_margin = min(LEASE_MARGIN, self.outbox.lease / 2)
        # Sent in the last batch and acknowledged in the next claim's transaction (drain, run).
        self._unacked: list[str] = []

    # --- one batch -----------------------------------------------------------------------

    def run_once(
        self, stop: threading.Event | None = None, *, defer_ack: bool = False
    ) -> BatchReport:
        """Claims one batch and settles every claim in it; returns what happened.

        Acknowledging the previous batch, the claim, the eligibility check, closing the
        ineligible claims and reading the destinations are one transaction; the sends
        follow at once. With ``defer_ack`` the sent reminders are acknowledged by the next
        call (one commit per batch); :meth:`flush` acknowledges them otherwise.
        """
        report = BatchReport()
        acked = self._unacked
        claimed, closed, pending, verdicts, recipients, lost, expires = self.store.run(
            lambda conn: self._claim_and_check(conn, acked)
        )
        self._unacked = []
        self._count_acks(report, len(acked), lost)
        # Counted from when the verdicts were in hand, so that at least one send follows.
        checked_at = self.monotonic()
        report.claimed = claimed
        for reason, count in closed.items():
            if reason == DEAD:  # a lease that ran out after the last attempt
                report.dead += count
                continue
            report.closed += count
            report.closed_reasons[reason] = report.closed_reasons.get(reason, 0) + count
        self._count_closed(report, claimed - len(pending), verdicts)
        # Every claim of the batch holds the same lease: one with less than the margin left
        # is released, not sent.
        release_after = expires - self.lease_margin if expires is not None else None
        now, monotonic = self.store.clock.now, self.monotonic
        sent: list[str] = []
        sends, sending = 0, 0.0
        try:
            while pending:
                started = monotonic()
                if started - checked_at >= RECHECK_AFTER:
                    # The verdicts are too old to send on: read them again.
                    left = list(pending)

                    def recheck(conn: Connection, left: list[ClaimRow] = left) -> _Checked:
                        return self._check(conn, left, now())

                    pending, verdicts, recipients = self.store.run(recheck)
                    checked_at = monotonic()
                    self._count_closed(report, len(left) - len(pending), verdicts)
                    continue
                if stop is not None and stop.is_set():
                    break
                claim = pending.popleft()
                if release_after is not None and now() > release_after:
                    report.released += self.outbox.release([claim[C_TOKEN]])
                    continue
                outcome = self._send(claim, verdicts[claim[C_ID]][1], recipients)
                sends, sending = sends + 1, sending + monotonic() - started
                if outcome is None:
                    sent.append(claim[C_TOKEN])
                elif self._retry(claim, outcome):
                    report.dead += 1
                else:
                    report.retried += 1
        finally:
            self._observe(sends, sending)
            self._unacked = sent
            if not defer_ack or (stop is not None and stop.is_set()):
                self.flush(report)
            if pending:
                report.released += self.outbox.release([c[C_TOKEN] for c in pending])
        return report

    def flush(self, report: BatchReport) -> None:
        """Acknowledges the reminders sent and not yet acknowledged, counting them in ``report``."""
        sent, self._unacked = self._unacked, []
        if sent:
            self._count_acks(report, len(sent), self.outbox.ack_many(sent))

    @staticmethod
    def _count_acks(report: BatchReport, sent: int, lost: Sequence[str]) -> None:
        report.delivered += sent - len(lost)
        report.lost_acks += len(lost)
        for token in lost:
            log.warning("delivered, but the lease was lost before the ack: %s", token)

    def drain(self, stop: threading.Event | None = None) -> BatchReport:
        """Runs batches until nothing is due (or ``stop`` is set)."""
        total = BatchReport()
        try:
            while stop is None or not stop.is_set():
                report = self.run_once(stop, defer_ack=True)
                total.add(report)
                if report.claimed == 0 and report.closed == 0 and report.dead == 0:
                    break
        finally:
            self.flush(total)
        return total

    # --- the loop ------------------------------------------------------------------------

    def run(
        self,
        stop: threading.Event,
        *,
        on_batch: Callable[[BatchReport], None] | None = None,
        waker: Waker | None = None,
    ) -> BatchReport:
        """Delivers until ``stop`` is set, sleeping until the next due intent or a wake-up.

        On stop it finishes the send in progress, acknowledges what was sent and releases
        the rest of its claims.
        """
        total = BatchReport()
        own_waker = waker is None
        waker = waker or open_waker(self.store.engine)
        outages = 0
        try:
            while not stop.is_set():
                try:
                    report = self.run_once(stop, defer_ack=True)
                    total.add(report)
                    busy = report.claimed or report.closed or report.dead
                    # An idle round still acknowledges what the last batch sent: report it.
                    if (busy or report.delivered or report.lost_acks) and on_batch is not None:
                        on_batch(report)
                    if not busy:
                        waker.wait(self._idle_seconds(), stop)
                    outages = 0
                except StorageError as error:
                    # The database is busy or away: wait and try again. Claims not sent
                    # were released (or their leases run out); sent ones are sent again
                    # later if their acknowledgement was lost (at least once).
                    outages += 1
                    delay = min(OUTAGE_FIRST_WAIT * 2 ** (outages - 1), OUTAGE_MAX_WAIT)
                    log.warning("database unavailable (%s); trying again in %.0f s", error, delay)
                    stop.wait(delay)
        finally:
            last = BatchReport()
            self.flush(last)
            total.add(last)
            if (last.delivered or last.lost_acks) and on_batch is not None:
                on_batch(last)
            if own_waker:
                waker.close()
        return total

    def _idle_seconds(self) -> float:
        due = self.outbox.next_due()
        if due is None:
            return IDLE_RECHECK
        wait = (due - self.store.clock.now()).total_seconds()
        return min(max(wait, 0.0), IDLE_RECHECK)

    # --- helpers -------------------------------------------------------------------------

    def batch_size(self) -> int:
        """How many reminders to claim next: as many as the transport's pace sends within
        half a lease, at most ``batch``."""
        if self.pace is None:
            return min(self.batch, FIRST_BATCH)
        budget = (self.outbox.lease / 2).total_seconds()
        return max(1, min(self.batch, int(budget / max(self.pace, 1e-6))))

    def _observe(self, sends: int, seconds: float) -> None:
        if sends:
            pace = seconds / sends
            self.pace = (
                pace if self.pace is None else (PACE_WEIGHT * pace + (1 - PACE_WEIGHT) * self.pace)
            )

    def _claim_and_check(
        self, conn: Connection, acked: Sequence[str]
    ) -> tuple[
        int, dict[str, int], deque[ClaimRow], _Verdicts, _Recipients, list[str], datetime | None
    ]:
        now = self.store.clock.now()
        lost = ack_in(conn, acked, now)
        claims, closed, expires = claim_rows_in(
            conn, self.owner, self.batch_size(), now, self.outbox.lease
        )
        if not claims:
            return 0, closed, deque(), {}, ({}, {}), lost, None
        pending, verdicts, recipients = self._check(conn, claims, now)
        return len(claims), closed, pending, verdicts, recipients, lost, expires

    def _check(self, conn: Connection, claims: Sequence[ClaimRow], now: datetime) -> _Checked:
        """``reminder_eligible`` for the claims, read now: closes the ineligible ones in
        this transaction and returns the others with their recipients and destinations."""
        verdicts = verdict_rows_in(conn, [c[C_ID] for c in claims])
        closing: list[tuple[str, str]] = []
        eligible: deque[ClaimRow] = deque()
        for claim in claims:
            verdict = verdicts.get(claim[C_ID])
            if verdict is None:  # the intent is gone
                continue
            reason = verdict[0]
            if reason is None:
                eligible.append(claim)
            else:
                closing.append((claim[C_TOKEN], reason))
        close_in(conn, closing, now)
        wanted = sorted({c[C_RECIPIENT] for c in eligible})
        people, urls = recipients_of(conn, wanted)
        if len(people) < len(wanted):  # a recipient is gone: nothing to send to
            eligible = deque(c for c in eligible if c[C_RECIPIENT] in people)
        return eligible, verdicts, (people, urls)

    @staticmethod
    def _count_closed(report: BatchReport, closed: int, verdicts: _Verdicts) -> None:
        report.closed += closed
        if closed:
            reasons = report.closed_reasons
            for reason, _ in verdicts.values():
                if reason is not None:
                    reasons[reason] = reasons.get(reason, 0) + 1

    def _send(self, claim: ClaimRow, verdict: Sequence[Any], recipients: _Recipients) -> str | None:
        """Sends one reminder (a claim row and its eligibility row); returns why it failed,
        or ``None``."""
        people, urls = recipients
        recipient, channel = claim[C_RECIPIENT], claim[C_CHANNEL]
        handle, name, email = people[recipient]
        destinations = urls.get((recipient, channel))
        if not destinations:
            return f"{handle} has no {channel} destination in their settings"
        job_id = uuid_text(claim[C_ID])
        at = instant(claim[C_AT])
        try:
            self.transport.send(
                _message(
                    job_id,
                    channel,
                    destinations,
                    at,
                    when_text(at, verdict[E_ZONE]),
                    uuid_of(claim[C_TASK]),
                    verdict[E_REF],
                    verdict[E_TITLE],
                    verdict[E_DUE],
                    verdict[E_LIST_NAME],
                    handle,
                    name,
                    email,
                )
            )
        except DeliveryFailed as failure:
            return str(failure) or "delivery failed"
        except Exception as error:  # a transport bug must not stop the worker
            log.exception("transport failed on reminder %s", job_id)
            return f"{type(error).__name__}: {error}"
        return None

    def _retry(self, claim: ClaimRow, error: str) -> bool:
        """Records a failed send; whether the reminder is dead now (that was its last attempt)."""
        try:
            return self.outbox.retry(claim[C_TOKEN], error).status == DEAD
        except Exception:  # the lease was lost meanwhile: it is claimable again anyway
            log.warning("could not record the failure of reminder %s", uuid_text(claim[C_ID]))
            return False
