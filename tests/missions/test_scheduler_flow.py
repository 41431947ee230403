"""The scheduler's look at a schedule, with an in-test runtime and the fake clock:
admission of the latest missed slot, settlement, catch-up, Run now, Pause, restart."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from uuid import UUID

from kalends.missions.runtime.base import Observation, PassageStart, Presence, Report
from kalends.missions.scheduler import Scheduler
from missions.conftest import MissionWorld, daily_config


@dataclass
class Session:
    start: PassageStart
    exit_status: int | None = None
    report: Report | None = None
    interrupted: bool = False


@dataclass
class FakeRuntime:
    sessions: dict[str, Session] = field(default_factory=dict)
    starts: int = 0

    def start(self, start: PassageStart) -> Presence:
        known = self.sessions.get(start.session_id)
        if known is not None:
            return (
                Presence.PRESENT if known.start.message_id == start.message_id else Presence.UNKNOWN
            )
        self.starts += 1
        self.sessions[start.session_id] = Session(start)
        return Presence.PRESENT

    def lookup(self, session_id: str, message_id: str) -> Presence:
        known = self.sessions.get(session_id)
        if known is None:
            return Presence.ABSENT
        return Presence.PRESENT if known.start.message_id == message_id else Presence.UNKNOWN

    def observe(self, session_id: str) -> Observation:
        s = self.sessions[session_id]
        done = s.exit_status is not None
        return Observation(
            launched=True,
            running=not done,
            exited=done,
            exit_status=s.exit_status,
            interrupted=s.interrupted,
            report=s.report,
        )

    def interrupt(self, session_id: str) -> None:
        s = self.sessions[session_id]
        s.interrupted = True
        s.exit_status = 0

    def finish(self, outcome: str = "completed") -> None:
        for s in self.sessions.values():
            if s.exit_status is None:
                s.report = Report(outcome=outcome, summary="done", at=datetime.now(UTC))
                s.exit_status = 0


def _schedule(mw: MissionWorld, **overrides: object) -> UUID:
    receipt = mw.schedules.create(
        mw.bob.id, mw.home.id, daily_config(**overrides), request_id="create-0001"
    )
    assert receipt.mission_id is not None
    return receipt.mission_id


def _play(mw: MissionWorld, sid: UUID) -> None:
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.play(mw.bob.id, sid, request_id=f"play-{rev:05d}", expected_revision=rev)


def test_a_due_slot_is_admitted_once_and_archived(mw: MissionWorld) -> None:
    sid = _schedule(mw)
    _play(mw, sid)
    runtime = FakeRuntime()
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    first = scheduler.run_once()
    assert first.claimed == 1 and runtime.starts == 0
    detail = mw.schedules.detail(mw.bob.id, sid)
    due = datetime.fromisoformat(detail["nextDueAt"])
    mw.clock.set(due + timedelta(seconds=5))
    scheduler.run_once()
    assert runtime.starts == 1
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["pending"]["admitted"] is True and detail["counters"]["admitted"] == 1
    scheduler.run_once()  # nothing new: the passage still runs
    assert runtime.starts == 1
    runtime.finish()
    mw.clock.advance(timedelta(seconds=40))
    scheduler.run_once()
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["pending"] is None
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}
    assert detail["latestResult"]["outcome"] == "completed"
    assert datetime.fromisoformat(detail["nextDueAt"]) == due + timedelta(days=1)


def test_catch_up_admits_only_the_latest_missed_slot(mw: MissionWorld) -> None:
    sid = _schedule(mw)
    _play(mw, sid)
    runtime = FakeRuntime()
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    due = datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])
    mw.clock.set(due + timedelta(days=7, hours=1))
    scheduler.run_once()
    assert runtime.starts == 1
    pending = mw.schedules.detail(mw.bob.id, sid)["pending"]
    assert datetime.fromisoformat(pending["slot"]) == due + timedelta(days=7)


def test_run_now_on_a_paused_schedule_runs_once(mw: MissionWorld) -> None:
    sid = _schedule(mw)
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-00001", expected_revision=1)
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-00001", expected_revision=1)
    runtime = FakeRuntime()
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    scheduler.run_once()
    assert runtime.starts == 1
    status = mw.schedules.control_status(mw.bob.id, sid, "run-00001")
    assert status.complete is True
    runtime.finish("failed")
    mw.clock.advance(timedelta(minutes=1))
    scheduler.run_once()
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["pending"] is None and detail["latestResult"]["outcome"] == "failed"
    assert detail["latestResult"]["trigger"] == "manual"
    assert detail["highWater"] is None


def test_pause_interrupts_the_running_passage_and_it_archives(mw: MissionWorld) -> None:
    sid = _schedule(mw)
    _play(mw, sid)
    runtime = FakeRuntime()
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    due = datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])
    mw.clock.set(due)
    scheduler.run_once()
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.pause(mw.bob.id, sid, request_id="pause-0001", expected_revision=rev)
    scheduler.run_once()
    assert all(s.interrupted for s in runtime.sessions.values())
    mw.clock.advance(timedelta(seconds=40))  # the pending fallback: 30 s
    scheduler.run_once()
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["pending"] is None
    assert detail["latestResult"]["outcome"] == "ended-without-report"
    assert detail["latestResult"]["reason"] == "interrupted"
    assert mw.schedules.control_status(mw.bob.id, sid, "pause-0001").complete is True
    mw.clock.advance(timedelta(days=3))
    scheduler.run_once()
    assert runtime.starts == 1


def test_a_dead_schedulers_interrupt_schedules_wait_for_resume(mw: MissionWorld) -> None:
    sid = _schedule(mw, restart="interrupt")
    _play(mw, sid)
    runtime = FakeRuntime()
    Scheduler(mw.store, runtime, owner="dead").run_once()
    mw.clock.advance(timedelta(minutes=2))  # its lease runs out
    Scheduler(mw.store, runtime, owner="s2").run_once()
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["state"] == "interrupted" and detail["interruptionReason"] == "restart"
    assert "resume" in detail["availableActions"]
    mw.schedules.resume(
        mw.bob.id, sid, request_id="resume-001", expected_revision=detail["revision"]
    )
    assert mw.schedules.detail(mw.bob.id, sid)["state"] == "running"


def test_running_without_a_live_scheduler_is_displayed_interrupted(mw: MissionWorld) -> None:
    sid = _schedule(mw)
    _play(mw, sid)
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert (detail["state"], detail["displayState"], detail["displayReason"]) == (
        "running",
        "interrupted",
        "no-scheduler",
    )
    Scheduler(mw.store, FakeRuntime(), owner="s1").run_once()
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["displayState"] == "running" and detail["technical"]["scheduler"]["live"]
    mw.clock.advance(timedelta(minutes=2))  # s1 died: its lease ran out
    assert mw.schedules.detail(mw.bob.id, sid)["displayState"] == "interrupted"


class BrokenRuntime(FakeRuntime):
    broken: bool = True

    def start(self, start: PassageStart) -> Presence:
        if self.broken:
            raise OSError("the runtime directory is not writable")
        return super().start(start)


def test_a_failed_wake_records_last_error_and_backs_off(mw: MissionWorld) -> None:
    sid = _schedule(mw)
    _play(mw, sid)
    runtime = BrokenRuntime()
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    due = datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])
    mw.clock.set(due)
    assert scheduler.run_once().errors == 1
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["lastError"]["code"] == "internal-error"
    assert detail["pending"]["status"] == "uncertain"
    assert detail["state"] == "running"
    mw.clock.advance(timedelta(seconds=10))
    assert scheduler.run_once().looked == 0  # the first retry waits 30 s
    runtime.broken = False
    mw.clock.advance(timedelta(seconds=25))
    scheduler.run_once()
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["lastError"] is None
    assert detail["pending"]["admitted"] is True and runtime.starts == 1
    assert detail["pending"]["passageId"].startswith("psg_")


def test_a_restarted_scheduler_with_the_same_name_is_a_new_holder(mw: MissionWorld) -> None:
    """Wakes belong to one incarnation (its lease token), not to a name: a process
    restarted under the same --owner waits for the old leases like any other."""
    sid = _schedule(mw, restart="interrupt")
    _play(mw, sid)
    runtime = FakeRuntime()
    Scheduler(mw.store, runtime, owner="same").run_once()
    due = datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])
    mw.clock.set(due)
    again = Scheduler(mw.store, runtime, owner="same")
    assert again.run_once().admitted == 0 and runtime.starts == 0
    mw.clock.advance(timedelta(seconds=61))
    again.run_once()
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["state"] == "interrupted" and detail["interruptionReason"] == "restart"
    assert runtime.starts == 0
