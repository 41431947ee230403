"""Random control sequences against a reference model (seed 002 "Daily document controls").

A hypothesis state machine sends Play, Pause, Stop, Resume, Run now, Check, Configure
(a notes or a policy change) and Delete to one schedule document:

* with a fresh request ID at the current revision;
* with a fresh request ID at a stale (earlier or later) revision: always a conflict;
* with a request ID from history and its original control and revision: the original
  outcome (recorded revision, ``repeated``), nothing changes — or, when its record was
  evicted, whatever a new request at that revision does;
* with a request ID from history and another control: ``RequestReused``;
* refused at the current revision or at one not reached yet: the refusal is recorded
  under the request ID (a completed record), and its status reads its code;
* in a run of Configure or Check up to the 64-record bound and past it, so records are
  evicted.

In place of the scheduler, which does not exist yet, the test writes the document
directly (each such write one guarded transaction that bumps the revision, as every
document write must): it settles the pending passage (admits and archives it with
``document.archive``, and completes the controls that waited on it: Run now, Pause,
Stop), marks it uncertain, or marks a running schedule Interrupted.

After every step: the stored revision, desired state, phase, pending passage,
Interrupted mark, first Play, quota, counters, generations and ``availableActions``
equal the model's; Stop is final; at most one passage is pending, with the identity
of the Run now that reserved it; ``control_status`` of every request ID ever sent
reads what the model says (applied with its recorded revision, unknown once evicted,
rejected or unknown for refused ones). To keep a step cheap once hundreds of IDs were
sent, a step reads the IDs it touched or whose expected status changed, plus a
rotating window of the others (each ID is read again within a few steps); the end of
every example reads them all.

One database per test function and backend; each hypothesis example makes a new
workspace and schedule in it.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select, update

from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.errors import (
    ControlConflict,
    KalendsError,
    LimitReached,
    RequestReused,
    RevisionConflict,
)
from kalends.missions.config import load_config
from kalends.missions.document import (
    PassageStatus,
    Result,
    archive,
    dump_body,
    load_body,
    manual_identity,
    next_due,
)
from kalends.storage.mission_tables import schedule_controls, schedules
from kalends.storage.unit_of_work import Store
from missions.conftest import daily_config
from missions.machine_model import ACTIONS, MAX_RECORDS, Control, Expected, Model, Record, Status

NOTES = ("", "alpha", "beta")
TIMES = ("09:00", "10:30")
# How many request IDs each step reads besides those it touched or whose status changed.
WINDOWS = {"sqlite": 12, "postgresql": 6}


def policy(time: str) -> dict[str, Any]:
    return {"kind": "daily", "time": time, "zone": "Europe/Berlin"}


# Every control a client may send, weighted towards those that move the document along;
# Stop and Delete, which end most of what can follow them, one choice each among many.
CONTROLS = (
    *(Control(a) for a in ("play", "run-now") * 3),
    *(Control(a) for a in ("pause", "resume", "check") * 2),
    *(Control(a) for a in ("stop", "delete")),
    *(Control("configure", {"notes": n}) for n in NOTES),
    *(Control("configure", {"policy": policy(t)}) for t in TIMES),
)
controls = st.sampled_from(CONTROLS)


class Env:
    """What one test function shares between its examples: the store and an owner."""

    def __init__(self, services: Services, clock: FakeClock, root: Path, window: int):
        self.services = services
        self.clock = clock
        self.root = root
        self.window = window
        self.numbers = itertools.count()
        with services.store.transaction():
            self.owner = services.directory.add_actor("owner", "Owner").id
            services.grants.grant(self.owner, "run")


class ControlMachine(RuleBasedStateMachine):
    env: ClassVar[Env]

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.sent: dict[str, tuple[Control, int]] = {}  # every request ID ever sent
        # Request IDs that applied, oldest first, for repeats (the runs that fill the records
        # are left out, so repeats pick the controls that make the story).
        self.history: list[str] = []
        self.filling = False
        self.last: dict[str, Status] = {}  # what each ID's status read last
        self.touched: set[str] = set()
        self.cursor = 0
        self.requests = itertools.count(1)

    @property
    def store(self) -> Store:
        return self.env.services.store

    # --- setup -------------------------------------------------------------------------------

    @initialize(max_passages=st.sampled_from((None, 1, 2, 3)), time=st.sampled_from(TIMES))
    def create(self, max_passages: int | None, time: str) -> None:
        env = self.env
        number = next(env.numbers)
        directory = env.root / f"ws{number}"
        directory.mkdir()
        workspace = env.services.workspaces.add(env.owner, directory, f"ws{number}")
        config = daily_config(policy=policy(time), end={"maxPassages": max_passages})
        receipt = env.services.schedules.create(
            env.owner, workspace.id, config, request_id=f"create-{number:04d}"
        )
        assert receipt.mission_id is not None
        self.schedule_id = receipt.mission_id
        self.model = Model(max_passages=max_passages, policy_time=time)

    # --- sending controls --------------------------------------------------------------------

    def fresh_id(self) -> str:
        return f"req-{next(self.requests):05d}"

    def send(self, request_id: str, control: Control, expected: int) -> Expected:
        """Send one control, check its outcome against the model, commit the model."""
        want, after = self.model.control(request_id, control, expected)
        self.sent.setdefault(request_id, (control, expected))
        self.touched.add(request_id)
        self.env.clock.advance(timedelta(seconds=1))
        schedules_ = self.env.services.schedules
        what = f"{request_id} {control.label()} at revision {expected}: expected {want.kind}"
        try:
            if control.action == "configure":
                assert control.payload is not None
                outcome = schedules_.configure(
                    self.env.owner,
                    self.schedule_id,
                    control.payload,
                    request_id=request_id,
                    expected_revision=expected,
                )
            else:
                outcome = schedules_.control(
                    self.env.owner,
                    self.schedule_id,
                    control.action,
                    request_id=request_id,
                    expected_revision=expected,
                )
        except RevisionConflict as exc:
            assert want.kind == "revision-conflict", f"{what}, got {exc!r}"
            assert exc.expected == expected and exc.actual == self.model.revision
        except RequestReused as exc:
            assert want.kind == "request-reused", f"{what}, got {exc!r}"
        except LimitReached as exc:
            assert want.kind == "limit-reached", f"{what}, got {exc!r}"
        except ControlConflict as exc:
            assert want.kind == "control-conflict", f"{what}, got {exc!r}"
        except KalendsError as exc:  # pragma: no cover - a failure report
            raise AssertionError(f"{what}, got {exc!r}") from exc
        else:
            assert want.kind in ("applied", "repeated"), f"{what}, got {outcome}"
            record = want.record
            assert record is not None
            assert (outcome.action, outcome.status) == (record.control.action, "applied"), what
            assert outcome.expected_revision == record.expected, what
            assert outcome.revision == record.recorded, what
            assert outcome.complete == record.complete, what
            assert outcome.repeated == (want.kind == "repeated"), what
            assert outcome.schedule["revision"] == after.revision, what
            if want.kind == "applied" and not self.filling:
                self.history.append(request_id)
                self.sent[request_id] = (control, expected)
        self.model = after
        return want

    @rule(control=controls)
    def fresh_at_current_revision(self, control: Control) -> None:
        self.send(self.fresh_id(), control, self.model.revision)

    @rule(control=controls)
    def another_fresh_at_current_revision(self, control: Control) -> None:
        """The same rule again: fresh controls at the current revision make most steps."""
        self.fresh_at_current_revision(control)

    @rule(control=controls, back=st.integers(0, 1000), later=st.booleans())
    def fresh_at_stale_revision(self, control: Control, back: int, later: bool) -> None:
        revision = self.model.revision
        # An earlier revision, or (always at revision 1) one the document has not reached.
        earlier = not later and revision > 1
        stale = 1 + back % (revision - 1) if earlier else revision + 1 + back % 3
        want = self.send(self.fresh_id(), control, stale)
        assert want.kind in ("revision-conflict", "control-conflict"), want
        assert self.model.revision == revision

    @precondition(lambda self: self.history)
    @rule(pick=st.integers(0, 10_000))
    def repeat_with_original_control(self, pick: int) -> None:
        request_id = self.history[pick % len(self.history)]
        control, expected = self.sent[request_id]
        before = self.model
        want = self.send(request_id, control, expected)
        # (Once its record was evicted, a request under the same ID may have left its own.)
        kept = before.records.get(request_id)
        if kept is not None and (kept.control, kept.expected) == (control, expected):
            assert want.kind == "repeated" and self.model == before

    @precondition(lambda self: self.history)
    @rule(pick=st.integers(0, 10_000), control=controls)
    def repeat_with_another_control(self, pick: int, control: Control) -> None:
        request_id = self.history[pick % len(self.history)]
        if control == self.sent[request_id][0]:
            control = Control("check" if control.action != "check" else "play")
        before = self.model
        want = self.send(request_id, control, self.model.revision)
        kept = before.records.get(request_id)
        if kept is not None and (kept.control, kept.expected) != (control, before.revision):
            assert want.kind == "request-reused" and self.model == before

    @precondition(
        lambda self: (
            len(self.history) >= 4
            and len(self.model.records) < MAX_RECORDS - 8
            and (self.model.allows("configure") or self.model.allows("check"))
        )
    )
    @rule(extra=st.integers(0, 3), checks=st.booleans())
    def fill_records(self, extra: int, checks: bool) -> None:
        """Controls up to the 64-record bound and a few past it, so records are evicted."""
        self.filling = True
        for n in range(MAX_RECORDS - len(self.model.records) + extra):
            if checks and self.model.allows("check"):
                control = Control("check")
            else:
                control = Control("configure", {"notes": NOTES[n % 2 + 1]})
            self.send(self.fresh_id(), control, self.model.revision)
        self.filling = False

    # --- the scheduler's part, done directly on the document ------------------------------------

    def rewrite(self, change: str) -> None:
        """Write the body as the scheduler would, in one guarded transaction."""
        now = self.env.clock.advance(timedelta(seconds=1))
        with self.store.transaction() as conn:
            row = conn.execute(select(schedules).where(schedules.c.id == self.schedule_id)).one()
            body = load_body(row.body)
            config = load_config(row.config)
            pending = body.pending
            if change == "settle":
                assert pending is not None
                body = replace(body, admitted=body.admitted + (0 if pending.admitted else 1))
                body = archive(
                    body,
                    Result(
                        passage_id=pending.passage_id,
                        trigger=pending.trigger,
                        slot=pending.slot,
                        outcome="completed",
                        reason=None,
                        summary="settled by the control machine",
                        admitted_at=now,
                        settled_at=now,
                    ),
                )
                conn.execute(
                    update(schedule_controls)
                    .where(
                        schedule_controls.c.schedule_id == self.schedule_id,
                        ~schedule_controls.c.complete,
                        schedule_controls.c.action != "delete",
                    )
                    .values(complete=True)
                )
            elif change == "uncertain":
                assert pending is not None
                body = replace(
                    body,
                    pending=replace(pending, status=PassageStatus.UNCERTAIN, reason="not-observed"),
                )
            else:
                body = replace(body, interruption="restart", interrupted_at=now)
            text = dump_body(body)
            running = row.state == "running" and row.phase == "live" and body.pending is None
            written = conn.execute(
                update(schedules)
                .where(schedules.c.id == self.schedule_id, schedules.c.revision == row.revision)
                .values(
                    body=text,
                    size=len(row.config.encode()) + len(text.encode()),
                    revision=row.revision + 1,
                    next_due_at=next_due(config, body) if running else None,
                    updated_at=now,
                )
            )
            assert written.rowcount == 1

    @precondition(lambda self: self.model.pending is not None and self.model.phase == "live")
    @rule()
    def settle_pending_passage(self) -> None:
        self.rewrite("settle")
        self.model = self.model.settle()

    @precondition(lambda self: self.model.pending == "starting" and self.model.phase == "live")
    @rule()
    def mark_pending_uncertain(self) -> None:
        self.rewrite("uncertain")
        self.model = self.model.uncertain()

    @precondition(
        lambda self: (
            self.model.phase == "live"
            and self.model.state == "running"
            and not self.model.interrupted
        )
    )
    @rule()
    def mark_interrupted(self) -> None:
        self.rewrite("interrupt")
        self.model = self.model.interrupt()

    # --- invariants --------------------------------------------------------------------------

    @invariant()
    def document_matches_model(self) -> None:
        m = self.model
        detail = self.env.services.schedules.detail(self.env.owner, self.schedule_id)
        assert detail["revision"] == m.revision
        if m.phase == "tombstone":
            assert detail["kind"] == "tombstone" and detail["phase"] == "tombstone"
            return
        # Stop is final: nothing brings a stopped schedule back to running.
        if m.ever_stopped:
            assert detail["desiredState"] == "stopped"
        assert detail["desiredState"] == m.state
        shown = "interrupted" if m.state == "running" and m.interrupted else m.state
        assert detail["state"] == shown
        assert detail["interruptionReason"] == ("restart" if m.interrupted else None)
        assert detail["phase"] == m.phase
        assert (detail["firstPlayAt"] is not None) == m.first_play
        # At most one passage pending: the one the last Run now reserved, with its identity.
        pending = detail["pending"]
        if m.pending is None:
            assert pending is None
            assert detail["observation"] == {"status": "idle"}
        else:
            assert m.pending_request is not None
            passage, session, message = manual_identity(str(self.schedule_id), m.pending_request)
            assert pending["status"] == m.pending
            assert pending["requestId"] == m.pending_request
            assert (pending["passageId"], pending["sessionId"], pending["messageId"]) == (
                passage,
                session,
                message,
            )
        used = m.admitted + (1 if m.pending is not None else 0)
        assert detail["quota"]["max"] == m.max_passages
        assert detail["quota"]["used"] == used
        counters = detail["counters"]
        assert (counters["admitted"], counters["settled"]) == (m.admitted, m.settled)
        assert len(detail["results"]) == min(m.settled, 30)
        assert detail["notes"] == m.notes
        assert detail["policy"] == policy(m.policy_time)
        assert detail["configGeneration"] == m.config_generation
        assert detail["temporalGeneration"] == m.temporal_generation
        assert detail["evictedControlRevision"] == m.evicted_revision
        actions = detail["availableActions"]
        assert len(actions) == len(set(actions))
        assert set(actions) == m.allowed(), (actions, m)
        assert [a for a in ACTIONS if a in actions] == actions

    @invariant()
    def control_statuses_match_model(self) -> None:
        wanted = self.expected_statuses()
        ids = list(wanted)
        window: set[str] = set()
        if ids:
            # A rotating window: every ID is read again within len(ids) / window steps.
            start = self.cursor % len(ids)
            window = set((ids[start:] + ids[:start])[: self.env.window])
            self.cursor = start + self.env.window
        read = {
            rid: status
            for rid, status in wanted.items()
            if rid in self.touched or rid in window or self.last.get(rid) != status
        }
        self.touched.clear()
        self.check_statuses(read)
        self.last = wanted

    def teardown(self) -> None:
        # Not after a failed step (its exception is on its way out): the model stopped there.
        if hasattr(self, "schedule_id") and sys.exc_info()[1] is None:
            self.check_statuses(self.expected_statuses())

    def expected_statuses(self) -> dict[str, Status]:
        return {
            request_id: self.model.status(request_id, expected, control.action)
            for request_id, (control, expected) in self.sent.items()
        }

    def check_statuses(self, wanted: dict[str, Status]) -> None:
        service = self.env.services.schedules
        for request_id, want in wanted.items():
            control, expected = self.sent[request_id]
            got = service.control_status(
                self.env.owner,
                self.schedule_id,
                request_id,
                expected_revision=expected,
                action=control.action,
            )
            where = f"status of {request_id} ({control.label()} at {expected}): {got}"
            assert (got.status, got.code) == (want.status, want.code), f"{where}, want {want}"
            if want.status == "applied":
                record: Record | None = want.record
                assert record is not None
                # The kept record: a repeat of its request never rewrites it.
                assert got.action == record.control.action, where
                assert got.expected_revision == record.expected, where
                assert got.revision == record.recorded, where
                assert got.complete == record.complete, where


# About 12 s on SQLite and 10 s on PostgreSQL on a 2-core machine.
SETTINGS = {
    "sqlite": settings(
        max_examples=50,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
    "postgresql": settings(
        max_examples=20,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
}


def test_random_control_sequences_follow_the_model(
    storage_backend: str, store: Store, fake_clock: FakeClock, tmp_path: Path
) -> None:
    environment = Env(build(store), fake_clock, tmp_path, window=WINDOWS[storage_backend])

    class Machine(ControlMachine):
        env = environment

    run_state_machine_as_test(Machine, settings=SETTINGS[storage_backend])
