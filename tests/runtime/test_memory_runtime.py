"""The in-process runtime keeps the process runtime's contract."""

from __future__ import annotations

import signal
import threading
from datetime import UTC, datetime

import pytest

from kalends.clock import FakeClock
from kalends.errors import InvalidInput, NotFound
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime import PassageStart, Presence, Runtime, RuntimeUnavailable
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.runtime.process import PassageSettled

T0 = datetime(2026, 3, 8, 9, 0, tzinfo=UTC)


def passage(session: str = "ses_1", message: str = "msg_1") -> PassageStart:
    return PassageStart(
        passage_id=f"psg_{session}",
        session_id=session,
        message_id=message,
        schedule_id="sch_1",
        workspace="/nowhere",
        command=("make", "nightly"),
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def runtime(clock: FakeClock) -> MemoryRuntime:
    return MemoryRuntime(clock=clock)


def test_it_is_a_runtime(runtime: MemoryRuntime) -> None:
    typed: Runtime = runtime
    assert typed.lookup("ses_1", "msg_1") is Presence.ABSENT


def test_a_started_passage_runs_until_finished_and_reports(
    runtime: MemoryRuntime, clock: FakeClock
) -> None:
    assert runtime.start(passage()) is Presence.PRESENT
    running = runtime.observe("ses_1")
    assert (running.launched, running.running, running.exited) == (True, True, False)

    clock.advance(60)
    runtime.report("ses_1", "completed", "done")
    runtime.finish("ses_1", status=0)

    seen = runtime.observe("ses_1")
    assert (seen.exited, seen.exit_status, seen.settled) == (True, 0, True)
    assert seen.report is not None and seen.report.at == clock.now()
    assert (seen.started_at, seen.ended_at) == (T0, clock.now())


def test_start_is_idempotent_and_first_admission_wins(runtime: MemoryRuntime) -> None:
    assert runtime.start(passage()) is Presence.PRESENT
    assert runtime.start(passage()) is Presence.PRESENT
    assert runtime.start(passage(message="msg_2")) is Presence.UNKNOWN

    assert runtime.launches("ses_1") == 1
    assert runtime.lookup("ses_1", "msg_1") is Presence.PRESENT
    assert runtime.lookup("ses_1", "msg_2") is Presence.UNKNOWN
    assert runtime.lookup("ses_2", "msg_1") is Presence.ABSENT


def test_concurrent_starts_launch_once(runtime: MemoryRuntime) -> None:
    barrier = threading.Barrier(8)

    def go() -> None:
        barrier.wait()
        for i in range(50):
            runtime.start(passage(f"ses_{i}"))

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(runtime.sessions()) == 50
    assert all(runtime.launches(f"ses_{i}") == 1 for i in range(50))


def test_an_admission_without_launch_is_launched_by_the_next_start(
    runtime: MemoryRuntime,
) -> None:
    runtime.admit(passage())
    assert not runtime.observe("ses_1").launched

    runtime.start(passage())

    assert runtime.observe("ses_1").running and runtime.launches("ses_1") == 1


def test_descendants_hold_settlement_and_reports_until_the_family_ends(
    runtime: MemoryRuntime,
) -> None:
    runtime.start(passage())
    runtime.finish("ses_1", status=0, descendants=True)
    assert not runtime.observe("ses_1").settled

    runtime.report("ses_1", "failed", "the grandchild says no")
    runtime.end_descendants("ses_1")

    assert runtime.observe("ses_1").settled
    with pytest.raises(PassageSettled):
        runtime.report("ses_1", "completed", "too late")


def test_interrupt_ends_the_family_with_term_and_before_launch_nothing_launches(
    runtime: MemoryRuntime,
) -> None:
    runtime.start(passage())
    runtime.interrupt("ses_1")
    seen = runtime.observe("ses_1")
    assert (seen.signal, seen.interrupted, seen.settled) == (signal.SIGTERM, True, True)

    runtime.admit(passage("ses_2"))
    runtime.interrupt("ses_2")
    runtime.start(passage("ses_2"))
    seen = runtime.observe("ses_2")
    assert (seen.launched, seen.exited, runtime.launches("ses_2")) == (False, True, 0)


def test_instant_passages_exit_with_a_report_at_start() -> None:
    events: list[str] = []
    runtime = MemoryRuntime(instant=True, on_event=events.append)

    runtime.start(passage())

    seen = runtime.observe("ses_1")
    assert seen.settled and seen.exit_status == 0
    assert seen.report is not None and seen.report.outcome == "completed"
    assert events == ["ses_1"]


def test_refusals(runtime: MemoryRuntime) -> None:
    runtime.start(passage())
    with pytest.raises(InvalidInput):
        runtime.report("ses_1", "done", "x")
    with pytest.raises(InvalidInput, match=f"bound of {MAX_SUMMARY_BYTES} bytes"):
        runtime.report("ses_1", "completed", "😀" * (MAX_SUMMARY_BYTES // 4 + 1))
    assert runtime.observe("ses_1").report is None
    with pytest.raises(NotFound):
        runtime.observe("ses_none")

    runtime.make_unknown("ses_1")
    assert runtime.lookup("ses_1", "msg_1") is Presence.UNKNOWN
    runtime.set_unavailable(True)
    with pytest.raises(RuntimeUnavailable):
        runtime.lookup("ses_1", "msg_1")
