"""The acceptance journeys of seed 002 ("Daily document acceptance journeys"), for real.

Passages are real commands under the process runtime in a temporary root: small scripts
written into the workspace that read ``$KALENDS_INPUT_FILE`` and report through
``python -m kalends report``. Where time must jump (civil slots, catch-up, fallback
wakes) the scheduler runs in-process (``Scheduler.run_once``) on the fake clock; where a
process must die, real ``kalends worker`` processes run on the real clock.

1. Daily useful work: paused creation, Play, the slot, the command and its input, the
   report, the archive, the next day; no overlap; frozen profiles.
2. Restart with pending: a worker killed during a passage; the next one reconciles it
   (``restart: resume``) or shows Interrupted until Resume (``restart: interrupt``);
   never a second start.
3. Run now: duplicate requests and status reads make one passage; a pending passage
   blocks another Run now; a lost reply is read back, never resent.
4. Pause/Stop: no later admission; the pending passage is interrupted (TERM; KILL after
   the grace for one that traps TERM) and archived honestly; Stop is final.

Plus catch-up after a week of downtime, and a workspace directory that disappears.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import func, select, update

from kalends.bootstrap import build
from kalends.clock import FakeClock, SystemClock
from kalends.errors import ControlConflict, RevisionConflict
from kalends.missions.document import manual_identity
from kalends.missions.runtime.base import Observation
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.scheduler import LookResult, Scheduler, scheduled_identity
from kalends.missions.service import ControlOutcome
from kalends.storage.migrate import open_store
from kalends.storage.mission_tables import schedule_wakes, scheduler_leases
from kalends.storage.testing import FAKE_CLOCK_START, StorageTarget
from missions.conftest import MissionWorld, daily_config, make_mission_world
from missions.journey_support import (
    Workers,
    events,
    install_commands,
    kill_families,
    open_gate,
    passage_command,
    record,
    sessions,
    wait_until,
)

GRACE = 1.0
"""Seconds between TERM and KILL when the runtime interrupts a passage."""
SLOT = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
"""The first 09:00 Europe/Berlin after the fake clock's start (2025-03-01 12:00 UTC)."""
NEXT_LOOK = timedelta(minutes=6)
"""Past every pending-fallback step (30 s, 2 min, 5 min): the scheduler looks again."""


@dataclass
class Journey:
    """A mission world, a process runtime in a temporary root and an in-process scheduler
    on the fake clock."""

    mw: MissionWorld
    runtime: ProcessRuntime
    scheduler: Scheduler
    workspace: Path
    serial: int = 0

    @property
    def root(self) -> Path:
        return self.runtime.root

    def create(self, request_id: str = "create-0001", **overrides: Any) -> UUID:
        receipt = self.mw.schedules.create(
            self.mw.bob.id, self.mw.home.id, daily_config(**overrides), request_id=request_id
        )
        assert receipt.status == "created" and receipt.mission_id is not None
        return receipt.mission_id

    def detail(self, sid: UUID) -> dict[str, Any]:
        return self.mw.schedules.detail(self.mw.bob.id, sid)

    def act(self, sid: UUID, action: str, changes: dict[str, Any] | None = None) -> ControlOutcome:
        """Applies a control as bob at the revision he just read."""
        self.serial += 1
        return self.mw.schedules.control(
            self.mw.bob.id,
            sid,
            action,
            request_id=f"{action}-{self.serial:04d}",
            expected_revision=self.detail(sid)["revision"],
            changes=changes,
        )

    def look(self) -> LookResult:
        return self.scheduler.run_once()

    def due(self, sid: UUID) -> datetime:
        due = self.detail(sid)["nextDueAt"]
        assert isinstance(due, str), due
        return datetime.fromisoformat(due)

    def pending(self, sid: UUID) -> dict[str, Any]:
        pending = self.detail(sid)["pending"]
        assert isinstance(pending, dict), "no passage is pending"
        return pending

    def settled(self, session: str) -> Observation:
        """Waits until the passage's whole family is gone."""

        def probe() -> Observation | None:
            seen = self.runtime.observe(session)
            return seen if seen.settled else None

        return wait_until(probe, what=f"session {session} to settle")

    def settle(self, sid: UUID) -> dict[str, Any]:
        """Waits for the pending passage to settle, lets the scheduler look again, and
        returns the archived result."""
        pending = self.pending(sid)
        self.settled(pending["sessionId"])
        self.mw.clock.advance(NEXT_LOOK)
        self.look()
        detail = self.detail(sid)
        assert detail["pending"] is None, detail["pending"]
        latest = detail["latestResult"]
        assert latest["passageId"] == pending["passageId"]
        return dict(latest)

    def started(self, tag: str, count: int = 1) -> list[dict[str, Any]]:
        """Waits until the command ``tag`` noted ``count`` starts."""
        wait_until(
            lambda: len(events(self.workspace, "started", tag)) >= count,
            what=f"{count} start(s) of {tag}",
        )
        return events(self.workspace, "started", tag)


@pytest.fixture(name="j")
def journey_fixture(mw: MissionWorld, tmp_path: Path) -> Iterator[Journey]:
    workspace = Path(mw.home.path)
    install_commands(workspace)
    runtime = ProcessRuntime(tmp_path / "runtime", grace=GRACE)
    try:
        yield Journey(mw, runtime, Scheduler(mw.store, runtime, owner="journey"), workspace)
    finally:
        kill_families(runtime.root)


def profile(command: list[str]) -> dict[str, Any]:
    return {"command": command, "env": {"API_TOKEN": "s3cret"}, "cwd": "."}


# --------------------------------------------------------------------------- 1. daily work


def test_daily_useful_work_runs_each_slot_once_with_its_frozen_profile(j: Journey) -> None:
    first_command = passage_command("day1", "gate")
    sid = j.create(
        objective="Summarise yesterday's commits.",
        notes="Keep it short.",
        template=[{"title": "Read the log"}],
        profile=profile(first_command),
    )
    detail = j.detail(sid)
    assert (detail["state"], detail["nextDueAt"], detail["blockReason"]) == (
        "paused",
        None,
        "paused",
    )
    assert j.look().claimed == 0  # created paused: nothing for a scheduler to do

    j.act(sid, "play")
    armed = j.look()
    assert (armed.claimed, armed.reserved) == (1, 0) and sessions(j.root) == []
    assert j.due(sid) == SLOT

    # The slot arrives: one reservation, one start, under the slot's own identities.
    j.mw.clock.set(SLOT)
    round_ = j.look()
    assert (round_.reserved, round_.admitted) == (1, 1)
    [session] = sessions(j.root)
    pending = j.pending(sid)
    passage_id, session_id, message_id = scheduled_identity(str(sid), SLOT)
    assert (pending["passageId"], pending["sessionId"], pending["messageId"]) == (
        passage_id,
        session_id,
        message_id,
    )
    assert session == session_id and pending["trigger"] == "scheduled"
    assert pending["admitted"] is True and datetime.fromisoformat(pending["slot"]) == SLOT
    assert j.detail(sid)["counters"] == {"admitted": 1, "settled": 0, "successful": 0}

    # The real command read its input file: instructions, identities and the profile env.
    [started] = j.started("day1")
    seen = started["input"]
    assert seen["objective"] == "Summarise yesterday's commits."
    assert seen["notes"] == "Keep it short." and seen["title"] == "Morning report"
    assert seen["template"] == [{"title": "Read the log"}]
    assert (seen["passageId"], seen["sessionId"], seen["messageId"]) == (
        passage_id,
        session_id,
        message_id,
    )
    assert (seen["scheduleId"], seen["trigger"]) == (str(sid), "scheduled")
    assert datetime.fromisoformat(seen["slot"]) == SLOT
    assert started["env"] == {"API_TOKEN": "s3cret", "KALENDS_PASSAGE_ID": passage_id}

    # No overlap: more looks while it runs (a fallback wake included) start nothing.
    assert (j.look().reserved, j.look().admitted) == (0, 0)
    j.mw.clock.advance(timedelta(seconds=40))
    again = j.look()
    assert (again.looked, again.reserved, again.admitted) == (1, 0, 0)
    assert sessions(j.root) == [session]
    assert j.pending(sid)["status"] == "running"

    # Frozen profile: the command cannot change while the passage is pending...
    with pytest.raises(ControlConflict) as refused:
        j.act(sid, "configure", {"profile": profile(passage_command("day2"))})
    assert refused.value.code == "control-conflict"
    # ...the instructions can, for later passages only.
    j.act(sid, "configure", {"objective": "Summarise today's commits."})

    open_gate(j.workspace, "day1")
    result = j.settle(sid)
    assert (result["outcome"], result["reason"], result["trigger"]) == (
        "completed",
        None,
        "scheduled",
    )
    assert result["summary"] == "day1: Summarise yesterday's commits."  # its frozen input
    assert datetime.fromisoformat(result["slot"]) == SLOT
    detail = j.detail(sid)
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}
    assert datetime.fromisoformat(detail["highWater"]) == SLOT
    assert j.due(sid) == SLOT + timedelta(days=1)
    assert record(j.root, session, "start.json")["command"] == first_command

    # Between passages the command may change; the next day's passage uses the new one.
    second_command = passage_command("day2")
    j.act(sid, "configure", {"profile": {"command": second_command, "cwd": "."}})
    j.mw.clock.set(SLOT + timedelta(days=1))
    assert j.look().admitted == 1
    later = [s for s in sessions(j.root) if s != session]
    assert len(later) == 1
    assert record(j.root, later[0], "start.json")["command"] == second_command
    assert record(j.root, session, "start.json")["command"] == first_command
    result = j.settle(sid)
    assert result["outcome"] == "completed"
    assert result["summary"] == "day2: Summarise today's commits."
    detail = j.detail(sid)
    assert detail["counters"] == {"admitted": 2, "settled": 2, "successful": 2}
    assert datetime.fromisoformat(detail["highWater"]) == SLOT + timedelta(days=1)
    assert [r["outcome"] for r in detail["results"]] == ["completed", "completed"]
    # One start per passage: each command launched exactly once.
    assert [e["tag"] for e in events(j.workspace, "started")] == ["day1", "day2"]
    assert len(events(j.workspace, "reported")) == 2


def test_catch_up_after_a_week_of_downtime_admits_only_the_latest_slot(j: Journey) -> None:
    sid = j.create(profile=profile(passage_command("week")))
    j.act(sid, "play")
    j.look()
    j.mw.clock.set(SLOT + timedelta(days=7, hours=3))  # the scheduler was down for a week

    round_ = j.look()

    assert (round_.reserved, round_.admitted) == (1, 1)
    assert datetime.fromisoformat(j.pending(sid)["slot"]) == SLOT + timedelta(days=7)
    result = j.settle(sid)
    assert result["outcome"] == "completed"
    j.mw.clock.advance(NEXT_LOOK)
    assert j.look().reserved == 0  # no backlog of the six older days
    assert len(sessions(j.root)) == 1
    detail = j.detail(sid)
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}
    assert j.due(sid) == SLOT + timedelta(days=8)


def test_a_removed_workspace_directory_interrupts_the_schedule_with_reason_error(
    j: Journey,
) -> None:
    sid = j.create(profile=profile(passage_command("gone")))
    j.act(sid, "play")
    j.look()
    shutil.rmtree(j.workspace)
    j.mw.clock.set(SLOT)

    round_ = j.look()

    assert (round_.reserved, round_.admitted, round_.errors) == (0, 0, 0)
    detail = j.detail(sid)
    assert (detail["state"], detail["interruptionReason"]) == ("interrupted", "error")
    assert detail["pending"] is None and "resume" in detail["availableActions"]
    assert sessions(j.root) == []


# --------------------------------------------------------------------------- 3. run now


def test_run_now_makes_one_passage_blocks_overlap_and_reads_back_a_lost_reply(
    j: Journey,
) -> None:
    svc, bob = j.mw.schedules, j.mw.bob.id
    sid = j.create(profile=profile(passage_command("manual", "gate")))  # stays paused
    rev = j.detail(sid)["revision"]

    first = svc.run_now(bob, sid, request_id="run-now-0001", expected_revision=rev)
    repeated = svc.run_now(bob, sid, request_id="run-now-0001", expected_revision=rev)
    assert (first.repeated, first.complete) == (False, False)
    assert (repeated.repeated, repeated.revision) == (True, first.revision)
    for _ in range(3):
        status = svc.control_status(bob, sid, "run-now-0001")
        assert (status.status, status.action, status.revision) == (
            "applied",
            "run-now",
            first.revision,
        )

    # An unresolved pending passage blocks another Run now, and its status says so.
    rev = j.detail(sid)["revision"]
    with pytest.raises(ControlConflict) as refused:
        svc.run_now(bob, sid, request_id="run-now-0002", expected_revision=rev)
    assert refused.value.code == "control-conflict"
    blocked = svc.control_status(bob, sid, "run-now-0002", expected_revision=rev, action="run-now")
    assert (blocked.status, blocked.code) == ("rejected", "control-conflict")

    assert j.look().admitted == 1
    assert (j.look().admitted, j.look().reserved) == (0, 0)
    _, session, _ = manual_identity(str(sid), "run-now-0001")
    assert sessions(j.root) == [session]
    assert svc.control_status(bob, sid, "run-now-0001").complete is True
    [started] = j.started("manual")
    assert started["input"]["trigger"] == "manual"
    assert started["input"]["requestId"] == "run-now-0001"
    open_gate(j.workspace, "manual")
    result = j.settle(sid)
    assert (result["outcome"], result["trigger"], result["slot"]) == ("completed", "manual", None)
    detail = j.detail(sid)
    assert (detail["state"], detail["highWater"]) == ("paused", None)

    # A Run now whose reply is lost: the caller reads its status, and a retry of the same
    # request returns the original; neither starts a second passage.
    rev = j.detail(sid)["revision"]
    svc.run_now(bob, sid, request_id="run-now-0003", expected_revision=rev)  # reply lost
    status = svc.control_status(bob, sid, "run-now-0003", expected_revision=rev, action="run-now")
    assert (status.status, status.revision, status.complete) == ("applied", rev + 1, False)
    retry = svc.run_now(bob, sid, request_id="run-now-0003", expected_revision=rev)
    assert (retry.repeated, retry.revision) == (True, rev + 1)
    assert svc.control_status(bob, sid, "run-now-0099").status == "unknown"  # never sent
    assert j.look().admitted == 1
    assert j.look().admitted == 0
    assert len(sessions(j.root)) == 2
    assert j.settle(sid)["outcome"] == "completed"
    assert j.detail(sid)["counters"] == {"admitted": 2, "settled": 2, "successful": 2}
    passages = [e["passageId"] for e in events(j.workspace, "started")]
    assert len(passages) == len(set(passages)) == 2


# --------------------------------------------------------------------------- 4. pause/stop


def test_pause_interrupts_the_passage_admits_nothing_later_and_play_resumes(
    j: Journey,
) -> None:
    sid = j.create(profile=profile(["sh", "sleeper.sh"]))
    j.act(sid, "play")
    j.look()
    seen_before = j.detail(sid)["revision"]
    j.mw.clock.set(SLOT)
    assert j.look().admitted == 1
    # A Pause from a read before the scheduler's write-ahead start loses the CAS.
    with pytest.raises(RevisionConflict):
        j.mw.schedules.pause(
            j.mw.bob.id, sid, request_id="pause-stale", expected_revision=seen_before
        )
    assert j.detail(sid)["state"] == "running"
    [session] = sessions(j.root)
    wait_until((j.workspace / "sleeper.started").exists, what="the sleeper to start")

    paused = j.act(sid, "pause")
    assert paused.complete is False  # it waits on the passage's interruption
    detail = j.detail(sid)
    assert (detail["state"], detail["blockReason"]) == ("paused", "paused")
    assert detail["pending"]["sessionId"] == session  # kept, still observed
    assert j.look().interrupted == 1

    seen = j.settled(session)
    assert (seen.interrupted, seen.report, seen.exit_status) == (True, None, None)
    assert seen.signal == 15  # TERM ended it
    result = j.settle(sid)
    assert (result["outcome"], result["reason"]) == ("ended-without-report", "interrupted")
    assert j.mw.schedules.control_status(j.mw.bob.id, sid, paused.request_id).complete
    detail = j.detail(sid)
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 0}

    # No later admission while paused, however long.
    j.mw.clock.advance(timedelta(days=3))
    assert (j.look().reserved, sessions(j.root)) == (0, [session])
    assert j.detail(sid)["nextDueAt"] is None

    # Pause can be resumed explicitly (Play): the next slot after it, not the missed ones.
    j.act(sid, "configure", {"profile": profile(passage_command("back"))})
    j.act(sid, "play")
    assert j.look().reserved == 0
    due = j.due(sid)
    assert due > j.mw.clock.now()
    j.mw.clock.set(due)
    assert j.look().admitted == 1
    assert j.settle(sid)["outcome"] == "completed"
    assert len(sessions(j.root)) == 2


def test_stop_kills_a_passage_that_traps_term_after_the_grace_and_is_final(
    j: Journey,
) -> None:
    sid = j.create(profile=profile(passage_command("stubborn", "trap")))
    j.act(sid, "play")
    j.look()
    j.mw.clock.set(SLOT)
    assert j.look().admitted == 1
    [session] = sessions(j.root)
    j.started("stubborn")

    stopped = j.act(sid, "stop")
    assert stopped.complete is False
    assert j.look().interrupted == 1
    wait_until(lambda: events(j.workspace, "term", "stubborn"), what="TERM to be trapped")
    # Stop keeps the passage observed until it archives.
    detail = j.detail(sid)
    assert detail["state"] == "stopped"
    assert detail["pending"]["sessionId"] == session
    assert detail["technical"]["scheduler"]["live"] is True

    seen = j.settled(session)
    assert (seen.interrupted, seen.report, seen.signal) == (True, None, 9)  # KILL
    noted = datetime.fromisoformat(record(j.root, session, "interrupt.json")["at"])
    ended = datetime.fromisoformat(record(j.root, session, "exit.json")["endedAt"])
    assert ended - noted >= timedelta(seconds=GRACE)  # KILL only after the grace
    result = j.settle(sid)
    assert (result["outcome"], result["reason"]) == ("ended-without-report", "interrupted")
    assert j.mw.schedules.control_status(j.mw.bob.id, sid, stopped.request_id).complete
    detail = j.detail(sid)
    assert detail["state"] == "stopped" and detail["technical"]["scheduler"]["live"] is False

    # Stop is final: nothing restarts it, and no slot is ever admitted again.
    for action in ("play", "resume", "run-now"):
        with pytest.raises(ControlConflict):
            j.act(sid, action)
    j.mw.clock.advance(timedelta(days=3))
    assert j.look().reserved == 0
    assert sessions(j.root) == [session]


# --------------------------------------------------------------------------- 2. restart


def _expire_leases(mw: MissionWorld, owner: str) -> int:
    """Stands for the dead worker's 60-second lease running out."""
    past = datetime.now(UTC) - timedelta(seconds=1)

    def run(conn: Any) -> int:
        leases = scheduler_leases
        conn.execute(update(leases).where(leases.c.owner == owner).values(expires_at=past))
        held = select(func.count()).where(schedule_wakes.c.owner == owner)
        return int(conn.execute(held).scalar_one())

    return int(mw.store.run(run))


def _wake_exists(mw: MissionWorld, sid: UUID) -> bool:
    query = select(schedule_wakes.c.schedule_id).where(schedule_wakes.c.schedule_id == sid)
    return mw.store.run(lambda conn: conn.execute(query).first(), write=False) is not None


def test_a_scheduler_taking_over_looks_at_the_pending_passage_at_once(j: Journey) -> None:
    sid = j.create(profile=profile(passage_command("handover", "gate")))
    j.act(sid, "play")
    dead = Scheduler(j.mw.store, j.runtime, owner="dead")
    dead.run_once()
    j.mw.clock.set(SLOT)
    assert dead.run_once().admitted == 1
    [session] = sessions(j.root)
    j.mw.clock.advance(timedelta(seconds=31))
    assert dead.run_once().looked == 1  # the fallback look: the next one is 2 min later
    open_gate(j.workspace, "handover")
    j.settled(session)  # it ends while no scheduler watches it
    j.mw.clock.advance(timedelta(seconds=60))  # dead's lease (renewed at +31 s) runs out

    heir = Scheduler(j.mw.store, j.runtime, owner="heir").run_once()

    assert (heir.claimed, heir.looked, heir.settled) == (1, 1, 1)
    detail = j.detail(sid)
    assert detail["pending"] is None and detail["latestResult"]["outcome"] == "completed"
    assert sessions(j.root) == [session]


def test_restart_with_pending_reconciles_the_original_passage_without_a_second_start(
    storage_target: StorageTarget, tmp_path: Path
) -> None:
    store = open_store(storage_target.engine(), SystemClock())  # the workers' clock
    mw = make_mission_world(build(store), FakeClock(FAKE_CLOCK_START), tmp_path)
    workspace = Path(mw.home.path)
    install_commands(workspace)
    root = tmp_path / "runtime"
    workers = Workers(storage_target.url, root, tmp_path)
    journey = Journey(
        mw, ProcessRuntime(root), Scheduler(mw.store, ProcessRuntime(root)), workspace
    )
    try:
        _restart_journey(journey, workers)
    finally:
        workers.close()
        kill_families(root)
        store.close()


def _restart_journey(j: Journey, workers: Workers) -> None:
    immediate = {"kind": "immediate"}
    resumes = j.create(
        "create-resumes",
        title="Resumes",
        policy=immediate,
        profile=profile(passage_command("resumes", "gate")),
    )
    waits = j.create(
        "create-waits",
        title="Waits",
        policy=immediate,
        restart="interrupt",
        profile=profile(passage_command("waits", "gate")),
    )
    j.act(resumes, "play")
    j.act(waits, "play")

    first = workers.start("w1")

    def both_running() -> bool:
        workers.alive(first, "w1")
        return (
            all(
                (j.detail(sid)["pending"] or {}).get("status") == "running"
                for sid in (resumes, waits)
            )
            and len(events(j.workspace, "started")) == 2
        )

    wait_until(both_running, what="both passages to run under w1")
    starts = sessions(j.root)
    assert len(starts) == 2
    locks = {s: record(j.root, s, "launch.lock") for s in starts}

    workers.kill(first)  # SIGKILL: no release, no goodbye; the passages live on
    assert all(j.runtime.observe(s).running for s in starts)
    assert _expire_leases(j.mw, "w1/scheduler") == 2

    second = workers.start("w2")

    def waits_interrupted() -> dict[str, Any] | None:
        workers.alive(second, "w2")
        detail = j.detail(waits)
        return detail if detail["state"] == "interrupted" else None

    detail = wait_until(waits_interrupted, what="w2 to take over and interrupt 'waits'")
    assert detail["interruptionReason"] == "restart"
    assert detail["pending"]["admitted"] is True  # its passage stays pending
    assert "resume" in detail["availableActions"]

    open_gate(j.workspace, "resumes")
    open_gate(j.workspace, "waits")

    def resumes_archived() -> dict[str, Any] | None:
        workers.alive(second, "w2")
        found = j.detail(resumes)
        return found if found["pending"] is None else None

    detail = wait_until(resumes_archived, what="w2 to reconcile and archive 'resumes'")
    assert detail["latestResult"]["outcome"] == "completed"
    assert detail["latestResult"]["summary"] == "resumes: Summarise yesterday's commits."
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}

    # 'waits' ended meanwhile, but stays Interrupted and pending: no scheduler looks at it
    # until an explicit Resume.
    waits_session = j.pending(waits)["sessionId"]
    assert waits_session in starts
    j.settled(waits_session)
    detail = j.detail(waits)
    assert detail["state"] == "interrupted" and detail["pending"] is not None
    assert not _wake_exists(j.mw, waits)

    j.act(waits, "resume")

    def waits_archived() -> dict[str, Any] | None:
        workers.alive(second, "w2")
        found = j.detail(waits)
        return found if found["pending"] is None else None

    detail = wait_until(waits_archived, what="w2 to reconcile 'waits' after Resume")
    assert detail["state"] == "running" and detail["interruptionReason"] is None
    assert detail["latestResult"]["outcome"] == "completed"
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}

    # Never a second start: the same two passage directories, each launched once.
    assert sessions(j.root) == starts
    assert {s: record(j.root, s, "launch.lock") for s in starts} == locks
    assert sorted(e["tag"] for e in events(j.workspace, "started")) == ["resumes", "waits"]
    assert workers.stop(second) == 0
