"""The common case of many due wakes at once, set-based: running schedules with nothing
pending either sleep until their next slot, end, or have their latest missed slot
reserved (one transaction for all), started, and admitted (one more transaction).

Each schedule is decided by :func:`~kalends.missions.decide.decide`, as a look of its
own would decide it; everything this round does not finish (a pending passage, a
deleted, paused or interrupted schedule, a workspace gone, a lost race, a refused write,
a start that failed or was not seen) goes back to the caller for a look of its own.

A scheduler that runs as a worker node (issue 23 §3) reserves in its node's name, and
starts only what this round reserved: a passage another node reserved is pending, and
goes to a look of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.civil import Slot
from kalends.errors import KalendsError, TooLarge
from kalends.missions import service as docs
from kalends.missions.config_condition import Condition
from kalends.missions.controls import DocState
from kalends.missions.decide import Finished, Launch, Sleep, decide
from kalends.missions.document import Body, Phase
from kalends.missions.gate import Blocked, Observed, Reading, gate
from kalends.missions.gate_reads import BLOCKED_RETRY, READ_POLL, SourceReads
from kalends.missions.gate_records import GateOutcome, source_key
from kalends.missions.leases import SetWake, set_wakes
from kalends.missions.ledger import Entry, Reason, end_entries, launch_entries, skip_entries
from kalends.missions.ledger_writes import record
from kalends.missions.limits import MAX_DOCUMENT_BYTES
from kalends.missions.looks import LookResult, fallback_at
from kalends.missions.passages import admission, log_passage, reservation, start_of
from kalends.missions.question_holds import start_extras
from kalends.missions.reservation_writes import Reserved, read_items, write_reservations
from kalends.missions.runtime.base import Presence, Runtime
from kalends.missions.scheduler_rows import DueWake, SchedulerRow
from kalends.missions.source_reads import RecordSource, is_workspace_source, read_records
from kalends.missions.sources import BlockReason
from kalends.storage.unit_of_work import Store

__all__ = ["Batch"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Reserve:
    """A schedule whose latest missed slot this round reserves: ``body`` holds it."""

    wake: DueWake
    row: SchedulerRow
    doc: DocState
    body: Body
    entries: tuple[Entry, ...] = ()
    """The ledger rows its write records when it applies."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Gated:
    """A conditioned schedule whose latest missed ``slot`` waits on its source's read."""

    wake: DueWake
    row: SchedulerRow
    doc: DocState
    slot: Slot


def _condition(g: _Gated) -> Condition:
    condition = g.doc.config.condition
    assert condition is not None
    return condition


def _record_source(g: _Gated) -> RecordSource:
    condition = _condition(g)
    return RecordSource(
        schedule_id=g.wake.schedule_id,
        workspace_id=g.row.workspace_id,
        condition=condition,
        baseline=g.doc.body.checkpoint(source_key(condition)),
    )


def _by_node(body: Body, node: str | None) -> Body:
    """``body`` with its pending passage reserved in ``node``'s name (when a node)."""
    if node is None or body.pending is None:
        return body
    return replace(body, pending=replace(body.pending, node=node))


def _fits(g: _Gated, body: Body, now: datetime) -> bool:
    """Whether ``g``'s document with ``body`` stays under its ceiling."""
    try:
        docs.cas_params(
            g.row, state=g.doc.state, phase=g.doc.phase, config=g.doc.config, body=body, now=now
        )
    except TooLarge:
        return False
    return True


class Batch:
    """The set-based round of one scheduler (its wakes fenced by ``token``; ``node``: the
    worker node it runs as, if any, whose name its reservations carry)."""

    def __init__(
        self,
        store: Store,
        runtime: Runtime,
        token: str,
        exists: Callable[[str], bool],
        watch: dict[UUID, str],
        reads: SourceReads,
        *,
        node: str | None = None,
    ) -> None:
        self.store = store
        self.runtime = runtime
        self.token = token
        self.exists = exists
        self.watch = watch
        self.reads = reads
        self.node = node

    def _gated(
        self,
        g: _Gated,
        reading: Reading,
        now: datetime,
        reserves: list[_Reserve],
        writes: list[_Reserve],
        wakes: list[SetWake],
    ) -> None:
        """What the read makes of the slot: a reservation with its proof (it joins
        ``reserves``), or a skipped or blocked slot (a write in ``writes``, the wake set to
        the next slot, or to a later read of a blocked source)."""
        body, outcome = gate(g.doc, g.slot.at, now, reading)
        if outcome is not GateOutcome.BLOCKED and not _fits(g, body, now):
            # The read's observation and proof would take the document over its ceiling:
            # block the slot (shown, read again later) rather than refuse it on every look.
            assert isinstance(reading, Observed)
            too_large = Blocked(
                key=reading.key, kind=reading.kind, at=now,
                reason=BlockReason.SOURCE_UNREADABLE.value,
                detail="the observation and its proof would take the document over its "
                f"{MAX_DOCUMENT_BYTES}-byte ceiling",
            )  # fmt: skip
            body, outcome = gate(g.doc, g.slot.at, now, too_large)
        if outcome is GateOutcome.LAUNCHED:
            body = _by_node(body, self.node)
            assert body.pending is not None
            entries = launch_entries(g.doc.config, g.doc.body, g.slot, body.pending.passage_id, now)
            reserves.append(
                _Reserve(wake=g.wake, row=g.row, doc=g.doc, body=body, entries=tuple(entries))
            )
            return
        if outcome is GateOutcome.BLOCKED:
            last = g.doc.body.gates[-1] if g.doc.body.gates else None
            again = now + BLOCKED_RETRY
            if not (
                last is not None
                and last.slot == g.slot.at
                and last.outcome is outcome
                and last.reason == body.gates[-1].reason
            ):
                writes.append(_Reserve(wake=g.wake, row=g.row, doc=g.doc, body=body))
            wakes.append(SetWake(schedule_id=g.wake.schedule_id, armed=g.wake.armed, due=again))
            return
        said = body.gates[-1].detail if body.gates else ""
        entries = skip_entries(g.doc.config, g.doc.body, g.slot, Reason.CONDITION_FALSE, said)
        writes.append(
            _Reserve(wake=g.wake, row=g.row, doc=g.doc, body=body, entries=tuple(entries))
        )
        after = decide(replace(g.doc, body=body), now)
        until = (
            after.until
            if isinstance(after, Sleep)
            else (now if isinstance(after, Launch) else None)
        )
        slot = after.next_slot if isinstance(after, Sleep) else None
        wakes.append(
            SetWake(schedule_id=g.wake.schedule_id, armed=g.wake.armed, due=until, next_slot=slot)
        )

    def run(
        self,
        due: list[DueWake],
        rows: dict[UUID, SchedulerRow],
        now: datetime,
        result: LookResult,
    ) -> list[DueWake]:
        """Finish what can be finished of ``due`` (whose schedules' ``rows`` are read);
        the wakes left for a look of their own."""
        slow: list[DueWake] = []
        wakes: list[SetWake] = []
        reserves: list[_Reserve] = []
        gated: list[_Gated] = []
        ended: list[tuple[UUID, Entry]] = []  # the ledger rows of schedules that end
        exists: dict[str, bool] = {}
        for wake in due:
            row = rows.get(wake.schedule_id)
            try:
                doc = row.document() if row is not None and row.phase == Phase.LIVE else None
            except KalendsError:
                doc = None
            decision = decide(doc, now) if doc is not None else None
            if row is None or doc is None or decision is None or not decision.needs_workspace:
                slow.append(wake)
                continue
            path = row.workspace_path
            if path not in exists:
                exists[path] = self.exists(path)
            if not exists[path]:
                slow.append(wake)
                continue
            if isinstance(decision, Launch) and doc.config.condition is not None:
                gated.append(_Gated(wake=wake, row=row, doc=doc, slot=decision.slot))
                continue
            if isinstance(decision, Launch):
                body = reservation(doc, decision.slot.at, now, node=self.node)
                assert body.pending is not None
                entries = launch_entries(
                    doc.config, doc.body, decision.slot, body.pending.passage_id, now
                )
                reserves.append(
                    _Reserve(wake=wake, row=row, doc=doc, body=body, entries=tuple(entries))
                )
                continue
            assert isinstance(decision, Sleep | Finished)
            until = decision.until if isinstance(decision, Sleep) else None
            if isinstance(decision, Finished):
                ended.extend(
                    (wake.schedule_id, e)
                    for e in end_entries(doc.config, doc.body, decision.reason, now)
                )
            slot = decision.next_slot if isinstance(decision, Sleep) else None
            wakes.append(
                SetWake(schedule_id=wake.schedule_id, armed=wake.armed, due=until, next_slot=slot)
            )
        reserved: list[tuple[_Reserve, int]] = []
        gate_writes: list[_Reserve] = []  # skipped or blocked slots: a document write only
        for g in gated:
            condition = g.doc.config.condition
            assert condition is not None
            if is_workspace_source(condition):
                reading = self.reads.request(
                    g.row.workspace_path, condition, g.doc.body.checkpoint(source_key(condition)),
                    g.slot.at, now,
                )  # fmt: skip
                if reading is None:  # being read: look again in a moment
                    wakes.append(
                        SetWake(schedule_id=g.wake.schedule_id, armed=g.wake.armed,
                                due=now + READ_POLL)
                    )  # fmt: skip
                    continue
                self._gated(g, reading, now, reserves, gate_writes, wakes)
        records = [g for g in gated if not is_workspace_source(_condition(g))]

        def reserve(conn: Connection) -> None:
            reserved.clear()  # retried whole when busy: only the last attempt's writes count
            writes: list[tuple[_Reserve, int]] = []
            params: list[dict[str, Any]] = []
            record_reserves: list[_Reserve] = []
            record_writes: list[_Reserve] = []
            record_wakes: list[SetWake] = []
            if records:
                readings = read_records(conn, [_record_source(g) for g in records], now)
                for g in records:
                    self._gated(
                        g, readings[g.wake.schedule_id], now, record_reserves, record_writes,
                        record_wakes,
                    )  # fmt: skip
            gated_writes = (*gate_writes, *record_writes)  # (written first: gate_count)
            gate_count = 0
            for i, r in enumerate((*gated_writes, *reserves, *record_reserves)):
                try:
                    params.append(
                        docs.cas_params(
                            r.row, state=r.doc.state, phase=r.doc.phase, config=r.doc.config,
                            body=r.body, now=now,
                        )
                    )  # fmt: skip
                except TooLarge:
                    continue  # refused before any write: its own look records lastError
                writes.append((r, r.row.revision + 1))
                gate_count += 1 if i < len(gated_writes) else 0
            applied_all = docs.cas_write_many(conn, params)
            lost: list[SetWake] = []
            ledger = list(ended)
            for i, (write, applied) in enumerate(zip(writes, applied_all, strict=True)):
                if applied:
                    ledger.extend((write[0].row.id, e) for e in write[0].entries)
                if i < gate_count:
                    if not applied:  # a control came first: look again at once
                        lost.append(
                            SetWake(schedule_id=write[0].wake.schedule_id,
                                    armed=write[0].wake.armed, due=now)
                        )  # fmt: skip
                elif applied:
                    reserved.append(write)
            made = write_reservations(
                conn,
                [
                    Reserved(
                        schedule_id=r.row.id,
                        workspace_id=r.row.workspace_id,
                        config=r.doc.config,
                        pending=r.body.pending,
                    )
                    for r, _ in reserved
                    if r.body.pending is not None
                ],
                now,
            )
            checklists.clear()
            checklists.update(made)
            record(conn, ledger, now)
            set_wakes(conn, self.token, [*wakes, *record_wakes, *lost])
            reserves_seen[:] = [*reserves, *record_reserves]

        reserves_seen: list[_Reserve] = list(reserves)
        checklists: dict[str, list[dict[str, Any]]] = {}
        if reserves or wakes or gate_writes or records or ended:
            self.store.run(reserve)
        reserves = reserves_seen
        result.reserved += len(reserved)
        for r, _revision in reserved:
            assert r.body.pending is not None
            log_passage("admitted", r.doc, r.body.pending)
        won = {r.wake.schedule_id for r, _ in reserved}
        slow.extend(r.wake for r in reserves if r.wake.schedule_id not in won)
        started: list[tuple[_Reserve, int]] = []
        listed = [r.body.pending for r, _ in reserved if r.body.pending is not None]
        unlisted = [
            p for p in listed if p.checklist_id is not None and p.passage_id not in checklists
        ]
        items = dict(checklists)
        if unlisted:  # (made by an earlier attempt of this reservation: read back)
            items.update(self.store.run(lambda conn: read_items(conn, unlisted), write=False))
        starting = [(r.doc, r.body.pending) for r, _ in reserved if r.body.pending is not None]
        extras = (
            self.store.run(lambda conn: start_extras(conn, starting), write=False)
            if starting
            else {}
        )
        for r, revision in reserved:
            pending = r.body.pending
            assert pending is not None
            answers, watched = extras.get(pending.passage_id, (None, None))
            try:
                presence = self.runtime.start(
                    start_of(
                        r.doc, pending, r.row.workspace_path,
                        checklist=items.get(pending.passage_id),
                        answers=answers, watched=watched,
                    )
                )  # fmt: skip
            except Exception:
                slow.append(r.wake)  # its own look marks it uncertain and records lastError
                continue
            if presence is Presence.PRESENT:
                started.append((r, revision))
            else:
                slow.append(r.wake)
        if started:
            self._admit(started, now, result)
        return slow

    def _admit(
        self, started: list[tuple[_Reserve, int]], now: datetime, result: LookResult
    ) -> None:
        """Record the admissions of the started passages in one transaction, their wakes
        due at the first pending fallback."""

        def admit(conn: Connection) -> list[UUID]:
            done = []
            params: list[dict[str, Any]] = []
            writes: list[_Reserve] = []
            for r, revision in started:
                written = replace(r.row, revision=revision)
                try:
                    params.append(
                        docs.cas_params(
                            written, state=r.doc.state, phase=r.doc.phase, config=r.doc.config,
                            body=admission(r.body, now, node=self.node), now=now,
                        )
                    )  # fmt: skip
                except TooLarge:
                    continue  # its own look admits it, dropping old results to fit
                writes.append(r)
            wakes = []
            for r, applied in zip(writes, docs.cas_write_many(conn, params), strict=True):
                if not applied:
                    continue  # a control came first: its own look reconciles the start
                done.append(r.row.id)
                wakes.append(
                    SetWake(
                        schedule_id=r.row.id,
                        armed=r.wake.armed,
                        due=fallback_at(now, 0),
                        polls=1,
                    )
                )
            set_wakes(conn, self.token, wakes)
            return done

        done = set(self.store.run(admit))
        for r, _ in started:
            if r.row.id not in done:
                continue
            pending = r.body.pending
            assert pending is not None and pending.slot is not None
            result.admitted += 1
            result.admissions.append((r.row.id, pending.slot, now))
            self.watch[r.row.id] = pending.session_id
            log_passage("started", r.doc, pending)
