"""One look at one schedule, in transactions of its own: act on :func:`decide`'s
decision, reconciling, observing and settling a pending passage with the runtime, and
write each step with a compare-and-swap on the document's revision.

Seed 002 "Daily write-ahead passage start and recovery":

- a pending passage not yet admitted: ``lookup`` its start; present → record the
  admission; absent and dispatch no longer allowed (or the workspace gone) → archive
  ``failed``/``not-started`` (the only archive without an admission); absent → start
  it with the same identities; unknown → keep it pending, ``uncertain``;
- an admitted passage: ``observe``; interrupt its family when the schedule was paused,
  stopped or deleted after the passage was reserved; once the family is gone, archive
  its outcome in one compare-and-swap, then look again for the next slot;
- nothing pending: as :func:`~kalends.missions.decide.decide` says; a running schedule
  whose workspace no longer exists ends as Interrupted with reason ``error``.

Issue 23 §3, a scheduler that runs as a worker node (:mod:`kalends.missions.node_runtime`)
never looks for another node's passage in its own runtime: it reads the passage's row in
``passage_beats``. Not yet admitted: it asks the node that reserved it (``uncertain``,
reason ``not-observed``, until that node answers), admits it when the node answers it
did, or starts it here when the node answered it never did and never will. Admitted: it
settles the passage from what the node or its shim reported
(:func:`~kalends.missions.passage_beats.remote_observation`), asks the node to interrupt
it where a local one would be interrupted, and marks it ``uncertain``
(``not-observed``) while nothing fresh is reported, never guessing it finished. A person
who declares the node gone (``kalends node forget``) settles it ``failed`` (reason
``node-lost``). A scheduler that is no node (the memory runtime, the benchmarks) looks
as it always did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from uuid import UUID

from sqlalchemy import and_, or_, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement

from kalends.civil import Slot
from kalends.errors import NotFound, TooLarge
from kalends.missions import service as docs
from kalends.missions.config import Restart
from kalends.missions.controls import DocState
from kalends.missions.decide import (
    Attend,
    Compact,
    Dormant,
    Finished,
    Gone,
    Launch,
    Sleep,
    decide,
)
from kalends.missions.document import Body, PassageStatus, Pending, Phase, State, archive
from kalends.missions.gate_reads import READ_POLL, SourceReads
from kalends.missions.gate_records import source_key
from kalends.missions.leases import SetWake, WakeLeases
from kalends.missions.ledger import end_entries, launch_entries
from kalends.missions.ledger_writes import record
from kalends.missions.passage_beats import (
    NODE_LOST,
    BeatRow,
    BeatState,
    ask,
    read_beat,
    remote_observation,
    request_interrupt,
)
from kalends.missions.passages import (
    admission,
    dispatch_allowed,
    interrupt_wanted,
    log_passage,
    ran_seconds,
    reservation,
    result_of,
    settle_outcome,
    settle_summary,
    start_of,
)
from kalends.missions.question_holds import (
    QUESTION_OPEN,
    fail_undelivered_handovers,
    open_questions,
    start_extras,
    withdraw_questions,
)
from kalends.missions.reservation_writes import (
    read_counts,
    read_items,
    settle_transcript,
    write_reserved,
)
from kalends.missions.runtime.base import Observation, PassageStart, Presence, Runtime
from kalends.missions.scheduler_rows import SchedulerRow, read_schedule
from kalends.missions.source_reads import is_workspace_source
from kalends.missions.wakes import fallback_delay
from kalends.missions.watching import settle_watch
from kalends.storage.mission_tables import schedule_controls
from kalends.storage.unit_of_work import Store

__all__ = ["Look", "LookResult", "fallback_at"]

log = logging.getLogger("kalends.missions.scheduler")

_C = schedule_controls
_ROUNDS = 8
"""Compare-and-swap rounds of one look against concurrent controls before it gives up
and looks again soon."""


@dataclass(slots=True)
class LookResult:
    """What one round did (for logs, tests and benchmarks)."""

    claimed: int = 0
    looked: int = 0
    reserved: int = 0
    admitted: int = 0
    settled: int = 0
    interrupted: int = 0
    not_started: int = 0
    errors: int = 0
    trimmed: int = 0  # slot ledger rows deleted by retention
    admissions: list[tuple[UUID, datetime, datetime]] = field(default_factory=list)


def fallback_at(now: datetime, polls: int) -> datetime:
    """When a pending passage's wake is due again without an exit event."""
    return now + fallback_delay(polls)


class _Again:
    """Reread the document and decide again (the look wrote, or lost a race)."""


_AGAIN = _Again()


class _Local:
    """Leave the pending passage to the local runtime (this node's own, or no node's)."""


_LOCAL = _Local()


def _published_end(beat: BeatRow) -> bool:
    return beat.observation is not None and beat.observation.settled


class Look:
    """The looks of one scheduler: its store, its runtime, how it tells a workspace
    exists, and the passages it watches for an exit (``watch``: schedule → session,
    shared with the scheduler's loop). ``node``: the worker node the scheduler runs as
    (issue 23 §3), if any: its reservations name it, and another node's passages are
    observed through the database."""

    def __init__(
        self,
        store: Store,
        runtime: Runtime,
        leases: WakeLeases,
        exists: Callable[[str], bool],
        watch: dict[UUID, str],
        reads: SourceReads,
        *,
        node: str | None = None,
    ) -> None:
        self.store = store
        self.runtime = runtime
        self.leases = leases
        self.exists = exists
        self.watch = watch
        self.reads = reads
        self.node = node

    def look_and_set(
        self, sid: UUID, armed: int, polls: int, now: datetime, result: LookResult
    ) -> None:
        """Look at the schedule, then set its wake (fenced by ``armed``)."""
        slept: list[datetime] = []
        due, new_polls = self.look(sid, polls, now, result, slept)
        slot = slept[-1] if slept else None
        self.leases.set(
            SetWake(schedule_id=sid, armed=armed, due=due, polls=new_polls, next_slot=slot)
        )

    def look(
        self,
        sid: UUID,
        polls: int,
        now: datetime,
        result: LookResult,
        slept: list[datetime] | None = None,
    ) -> tuple[datetime | None, int]:
        """Look at one schedule; when to look again (``None``: nothing left) and the
        pending-fallback step. A Sleep appends its next slot to ``slept``."""
        for _ in range(_ROUNDS):
            row = self._read(sid)
            doc = None if row is None else row.document()
            decision = decide(doc, now)
            if isinstance(decision, Gone):
                self.watch.pop(sid, None)
                return None, 0
            assert row is not None and doc is not None
            if isinstance(decision, Attend):
                step = self._attend(row, doc, decision.pending, now, result)
                if step is _AGAIN:
                    continue
                if step is None:
                    return fallback_at(now, polls), polls + 1
                assert isinstance(step, datetime)
                return step, 0
            self.watch.pop(sid, None)
            if isinstance(decision, Compact):
                if not self.store.run(partial(docs.compact, row=row, now=now)):
                    continue
                return None, 0
            if isinstance(decision, Dormant):
                return None, 0
            if not self.exists(row.workspace_path):
                if self.interrupt_schedule(row, doc, now, "error"):
                    return None, 0
                continue
            if isinstance(decision, Launch) and doc.config.condition is not None:
                # A conditioned slot is gated in the set-based round, which reads its
                # source off the loop: start the read now, look again in a moment.
                condition = doc.config.condition
                if is_workspace_source(condition):
                    baseline = doc.body.checkpoint(source_key(condition))
                    self.reads.request(
                        row.workspace_path, condition, baseline, decision.slot.at, now
                    )
                return now + READ_POLL, 0
            if isinstance(decision, Launch):
                if self._reserve(row, doc, decision.slot, now):
                    result.reserved += 1
                continue
            if isinstance(decision, Sleep):
                if slept is not None:
                    slept.append(decision.next_slot)
                return decision.until, 0
            assert isinstance(decision, Finished)
            ended = [(sid, e) for e in end_entries(doc.config, doc.body, decision.reason, now)]
            if ended:
                self.store.run(partial(record, rows=ended, now=now))
            return None, 0
        return now, polls  # kept losing races: look again soon

    def restart(self, sid: UUID, now: datetime, row: SchedulerRow | None) -> None:
        """A wake taken over from a dead or stopped scheduler: the schedule's Job was gone.
        ``restart: interrupt`` schedules show Interrupted until an explicit Resume (which
        rearms the wake); ``resume`` ones go on, their pending passage reconciled first.
        ``row`` is the schedule's row as the round read it with the others taken over
        (``None``: there is none)."""
        if row is None or row.phase != Phase.LIVE.value:
            return
        doc = docs.doc_of(row)
        if doc.config.restart is not Restart.INTERRUPT or doc.state is not State.RUNNING:
            return
        if doc.body.interruption is None:
            self.interrupt_schedule(row, doc, now, "restart")
        self.leases.forget(sid)

    def interrupt_schedule(
        self, row: SchedulerRow, doc: DocState, now: datetime, reason: str
    ) -> bool:
        body = replace(doc.body, interruption=reason, interrupted_at=now)
        return self._cas(row, doc, body, now)

    # --- the pending passage ---------------------------------------------------------------

    def _attend(
        self, row: SchedulerRow, doc: DocState, pending: Pending, now: datetime, result: LookResult
    ) -> datetime | _Again | None:
        """Reconcile, observe or settle the pending passage. Returns when to look again,
        ``None`` for the pending fallback, or ``_AGAIN`` to reread the document."""
        if self.node is not None or pending.node is not None:
            step = self._attend_nodes(row, doc, pending, now, result)
            if not isinstance(step, _Local):
                return step
        if not pending.admitted:
            presence = self.runtime.lookup(pending.session_id, pending.message_id)
            if presence is Presence.ABSENT:
                return self._start_absent(row, doc, pending, now, result)
            if presence is Presence.PRESENT:
                return self._admit(row, doc, pending, now, result, self.node)
            self._mark(row, doc, pending, now, PassageStatus.UNCERTAIN, "not-observed")
            return None
        try:
            obs = self.runtime.observe(pending.session_id)
        except NotFound:
            if self.node is None:
                raise
            # Recorded admitted here but never admitted locally: this node's loop
            # published what became of it.
            return self._attend_remote(row, doc, pending, now, result)
        if not obs.launched and not obs.exited and dispatch_allowed(doc, pending):
            # Admitted, never launched (a crash between the two): ``start`` is idempotent
            # and launches it exactly once; the admission is never made again.
            self.runtime.start(self._start_of(row, doc, pending))
            obs = self.runtime.observe(pending.session_id)
        if interrupt_wanted(doc, pending) and not obs.settled and not obs.interrupted:
            self.runtime.interrupt(pending.session_id)
            result.interrupted += 1
        return self._observed(row, doc, pending, now, result, obs, local=True)

    def _observed(
        self,
        row: SchedulerRow,
        doc: DocState,
        pending: Pending,
        now: datetime,
        result: LookResult,
        obs: Observation,
        *,
        local: bool,
    ) -> _Again | None:
        """Settle the admitted passage as ``obs`` shows it, or keep its status; a
        ``local`` one is watched for its exit."""
        if obs.settled and not interrupt_wanted(doc, pending):
            asking = self.store.run(
                lambda conn: open_questions(conn, pending.passage_id), write=False
            )
            if asking:
                # An answer is still owed to the passage: its family is not settled.
                self._mark(row, doc, pending, now, PassageStatus.SETTLING, QUESTION_OPEN)
                return None
        if obs.settled:
            outcome, reason = settle_outcome(obs)
            summary = settle_summary(obs)
            if self._archive(row, doc, now, outcome, reason, summary, obs=obs):
                result.settled += 1
                self.watch.pop(row.id, None)
            return _AGAIN
        if local:
            self.watch[row.id] = pending.session_id
        status = PassageStatus.SETTLING if obs.exited else PassageStatus.RUNNING
        if pending.status is not status or pending.reason is not None:
            self._mark(row, doc, pending, now, status, None)
        return None

    def _admit(
        self,
        row: SchedulerRow,
        doc: DocState,
        pending: Pending,
        now: datetime,
        result: LookResult,
        node: str | None,
    ) -> _Again:
        """Record the admission of the pending passage (by ``node``, if one), completing
        the Run now that reserved it."""
        body = admission(doc.body, now, node=node)
        done = (
            [and_(_C.c.action == "run-now", _C.c.request_id == pending.request_id)]
            if pending.request_id is not None
            else None
        )
        if not self._cas(row, doc, body, now, complete=done):
            return _AGAIN
        result.admitted += 1
        if pending.slot is not None:
            result.admissions.append((row.id, pending.slot, now))
        assert body.pending is not None
        log_passage("started", doc, body.pending)
        return _AGAIN

    # --- passages of worker nodes (issue 23 §3) ----------------------------------------------

    def _attend_nodes(
        self, row: SchedulerRow, doc: DocState, pending: Pending, now: datetime, result: LookResult
    ) -> datetime | _Again | _Local | None:
        """The pending passage where worker nodes take part: another node's is reconciled
        and observed through ``passage_beats``; ``_LOCAL`` leaves this node's own (or no
        node's yet) to the local runtime."""
        if pending.admitted:
            if pending.node is None or pending.node == self.node:
                return _LOCAL
            return self._attend_remote(row, doc, pending, now, result)
        beat = self._beat(pending)
        holder = pending.node if beat is None else beat.node_id
        if holder is None or holder == self.node:
            if beat is not None and beat.state is BeatState.ABSENT:
                # This node promised another never to start it: it never will.
                if self._archive(row, doc, now, "failed", "not-started", None):
                    result.not_started += 1
                return _AGAIN
            if beat is not None and beat.state is BeatState.ADMITTED and _published_end(beat):
                # Recorded admitted here and reported ended (never started locally): the
                # admission stands, and the report settles it.
                return self._admit(row, doc, pending, now, result, self.node)
            return _LOCAL
        if beat is None:
            beat = self._ask(pending, doc, holder, now)
        if beat.state is BeatState.ASKED:
            if beat.node_forgotten_at is not None:
                # A person declared the node gone before it answered.
                if self._archive(row, doc, now, "failed", NODE_LOST, None):
                    result.settled += 1
                return _AGAIN
            self._mark(row, doc, pending, now, PassageStatus.UNCERTAIN, "not-observed")
            return None
        if beat.state is BeatState.ADMITTED:
            return self._admit(row, doc, pending, now, result, beat.node_id)
        # Absent: the node that reserved it proved it never started it, and never will.
        # Only a node takes a start over from another.
        return self._start_absent(row, doc, pending, now, result, here=self.node is not None)

    def _start_absent(
        self,
        row: SchedulerRow,
        doc: DocState,
        pending: Pending,
        now: datetime,
        result: LookResult,
        *,
        here: bool = True,
    ) -> _Again | None:
        """A start proven never made: archived ``failed``/``not-started`` when it may no
        longer be made (or its workspace is gone); else made here with the same identities
        and admitted (``here``: this scheduler may make it; if not, it stays uncertain)."""
        if not dispatch_allowed(doc, pending) or not self.exists(row.workspace_path):
            if self._archive(row, doc, now, "failed", "not-started", None):
                result.not_started += 1
            return _AGAIN
        presence = Presence.UNKNOWN
        if here:
            try:
                presence = self.runtime.start(self._start_of(row, doc, pending))
            except Exception:
                self._mark(row, doc, pending, now, PassageStatus.UNCERTAIN, "admission-failing")
                raise
        if presence is Presence.PRESENT:
            return self._admit(row, doc, pending, now, result, self.node)
        self._mark(row, doc, pending, now, PassageStatus.UNCERTAIN, "not-observed")
        return None

    def _attend_remote(
        self, row: SchedulerRow, doc: DocState, pending: Pending, now: datetime, result: LookResult
    ) -> _Again | None:
        """An admitted passage of another node, observed through the records its node and
        its shim publish: settled when they show it settled; ``uncertain`` (reason
        ``not-observed``) while nothing fresh is reported — never guessed finished."""
        self.watch.pop(row.id, None)
        beat = self._beat(pending)
        obs = None if beat is None else remote_observation(beat, now)
        if (
            beat is not None
            and beat.interrupt_at is None
            and interrupt_wanted(doc, pending)
            and not (obs is not None and (obs.settled or obs.interrupted))
        ):
            # Its node interrupts it (when it returns, if it is away).
            session = pending.session_id
            self.store.run(lambda conn: request_interrupt(conn, session, now))
            result.interrupted += 1
        if obs is None:
            self._mark(row, doc, pending, now, PassageStatus.UNCERTAIN, "not-observed")
            return None
        return self._observed(row, doc, pending, now, result, obs, local=False)

    def _beat(self, pending: Pending) -> BeatRow | None:
        session = pending.session_id
        return self.store.run(lambda conn: read_beat(conn, session), write=False)

    def _ask(self, pending: Pending, doc: DocState, node: str, now: datetime) -> BeatRow:
        """Ask ``node`` whether it admitted the pending start (its loop answers)."""
        schedule_id = UUID(doc.schedule_id)
        return self.store.run(
            lambda conn: ask(
                conn, session_id=pending.session_id, passage_id=pending.passage_id,
                message_id=pending.message_id, schedule_id=schedule_id, node_id=node, now=now,
            )
        )  # fmt: skip

    def _start_of(self, row: SchedulerRow, doc: DocState, pending: Pending) -> PassageStart:
        """What the pending passage starts with, its checklist's items and the answers
        to the previous passage's questions read first."""
        items = (
            {}
            if pending.checklist_id is None
            else self.store.run(lambda conn: read_items(conn, [pending]), write=False)
        )
        extras = self.store.run(lambda conn: start_extras(conn, [(doc, pending)]), write=False)
        answers, watched = extras.get(pending.passage_id, (None, None))
        return start_of(
            doc,
            pending,
            row.workspace_path,
            checklist=items.get(pending.passage_id),
            answers=answers,
            watched=watched,
        )

    def _reserve(self, row: SchedulerRow, doc: DocState, slot: Slot, now: datetime) -> bool:
        """Write-ahead: the pending record, in one compare-and-swap, with its ledger rows."""
        body = reservation(doc, slot.at, now, node=self.node)
        pending = body.pending
        assert pending is not None
        entries = launch_entries(doc.config, doc.body, slot, pending.passage_id, now)

        def checklist(conn: Connection) -> None:
            write_reserved(
                conn, schedule_id=row.id, workspace_id=row.workspace_id, config=doc.config,
                pending=pending, now=now,
            )  # fmt: skip
            record(conn, [(row.id, e) for e in entries], now)

        if not self._cas(row, doc, body, now, also=checklist):
            return False
        assert body.pending is not None
        log_passage("admitted", doc, body.pending)
        return True

    def _mark(
        self,
        row: SchedulerRow,
        doc: DocState,
        pending: Pending,
        now: datetime,
        status: PassageStatus,
        reason: str | None,
    ) -> None:
        if pending.status is status and pending.reason == reason:
            return
        body = replace(doc.body, pending=replace(pending, status=status, reason=reason))
        self._cas(row, doc, body, now)

    def _archive(
        self,
        row: SchedulerRow,
        doc: DocState,
        now: datetime,
        outcome: str,
        reason: str | None,
        summary: str | None,
        *,
        obs: Observation | None = None,
    ) -> bool:
        """Archive the pending passage in one compare-and-swap and resolve the controls
        that waited on it (its Run now, Pause/Stop interrupting it)."""
        pending = doc.body.pending
        assert pending is not None
        counts = (
            None
            if pending.checklist_id is None
            else self.store.run(lambda conn: read_counts(conn, pending), write=False)
        )
        body = archive(
            doc.body, result_of(pending, outcome, reason, summary, now, checklist=counts)
        )
        waiting: list[ColumnElement[bool]] = [_C.c.action.in_(("pause", "stop", "check"))]
        if pending.request_id is not None:
            waiting.append(and_(_C.c.action == "run-now", _C.c.request_id == pending.request_id))
        passage_id = pending.passage_id

        def transcript(conn: Connection) -> None:
            withdraw_questions(conn, now, passage_id)
            fail_undelivered_handovers(conn, passage_id)
            settle_watch(conn, now, schedule_id=row.id, passage_id=passage_id, outcome=outcome)
            settle_transcript(conn, now, passage_id, outcome, reason, summary)

        if not self._cas(row, doc, body, now, complete=waiting, also=transcript):
            return False
        seconds = ran_seconds(obs, pending, now)
        log_passage("settled", doc, pending, outcome=outcome, reason=reason, seconds=seconds)
        return True

    # --- writes ------------------------------------------------------------------------------

    def _read(self, sid: UUID) -> SchedulerRow | None:
        return self.store.run(lambda conn: read_schedule(conn, sid), write=False)

    def _cas(
        self,
        row: SchedulerRow,
        doc: DocState,
        body: Body,
        now: datetime,
        *,
        complete: list[ColumnElement[bool]] | None = None,
        also: Callable[[Connection], None] | None = None,
    ) -> bool:
        """One compare-and-swap of ``body`` (``also``: what else its transaction writes
        once it applied); when the document would be over its ceiling,
        the oldest results are dropped until it fits. Byte-bounded results make every
        document fit (``missions/limits.py``), but one written before the bounds may not,
        and a settlement refused for good would hold Stop and Delete forever."""
        while True:
            try:
                return self._cas_once(row, doc, body, now, complete, also)
            except TooLarge:
                if not body.results:
                    raise
                log.warning(
                    "schedule %s: the document is over its ceiling; dropping its oldest result",
                    row.id,
                )
                body = replace(body, results=body.results[1:])

    def _cas_once(
        self,
        row: SchedulerRow,
        doc: DocState,
        body: Body,
        now: datetime,
        complete: list[ColumnElement[bool]] | None,
        also: Callable[[Connection], None] | None = None,
    ) -> bool:
        def run(conn: Connection) -> bool:
            revision = docs.cas_write(
                conn, row, state=doc.state, phase=doc.phase, config=doc.config, body=body, now=now
            )
            if revision is None:
                return False
            if also is not None:
                also(conn)
            if complete:
                conn.execute(
                    update(_C)
                    .where(_C.c.schedule_id == row.id, _C.c.complete.is_(False), or_(*complete))
                    .values(complete=True)
                )
            return True

        return bool(self.store.run(run))
