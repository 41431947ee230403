"""The exact status read of a refused control gives the code its answer carried, however
far the document has moved since: a restart's Interrupted mark after a scheduler died
included (issue 16: 34 requests answered ``recurrence-control-conflict`` read back
``rejected / revision-conflict`` after a kill -9).

The refusal is recorded under its request ID in the transaction that decided it
(``kalends.missions.refusals``); before, the reason was derived at read time from the
document's current revision, which can no longer tell a request refused by the state at
its own revision from one that arrived after that revision had passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from kalends.errors import (
    ControlConflict,
    InvalidInput,
    KalendsError,
    RequestReused,
    RevisionConflict,
)
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld
from missions.refusal_support import only_the_refusal_recorded
from missions.surgery import control, create, revision


@dataclass(frozen=True, slots=True)
class Refused:
    """A control to send, and the refusal it must get."""

    schedule: UUID
    action: str
    expected: int
    error: type[KalendsError]
    code: str
    changes: dict[str, Any] | None = None
    # Whether its refusal is recorded (a stale revision proves itself).
    recorded: bool = True


def _paused_resume(mw: MissionWorld) -> Refused:
    sid = create(mw)
    return Refused(sid, "resume", 1, ControlConflict, "control-conflict")


def _running_play(mw: MissionWorld) -> Refused:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    return Refused(sid, "play", 2, ControlConflict, "control-conflict")


def _edit_while_pending(mw: MissionWorld) -> Refused:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "run-now", "run-now-01")
    policy = {"kind": "daily", "time": "10:30", "zone": "Europe/Berlin"}
    return Refused(sid, "configure", 3, ControlConflict, "control-conflict", {"policy": policy})


def _first_play_past(mw: MissionWorld) -> Refused:
    at = mw.clock.now() + timedelta(hours=2)
    policy = {"kind": "at", "local": f"{at:%Y-%m-%dT%H:%M:%S}", "zone": "UTC"}
    sid = create(mw, policy=policy)
    mw.clock.advance(timedelta(hours=3))  # the time passed while it stayed paused
    return Refused(sid, "play", 1, InvalidInput, "invalid-input")


def _revision_not_reached(mw: MissionWorld) -> Refused:
    sid = create(mw)
    return Refused(sid, "play", 4, RevisionConflict, "revision-conflict")


def _stale_revision(mw: MissionWorld) -> Refused:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    return Refused(sid, "pause", 1, RevisionConflict, "revision-conflict", recorded=False)


# Each refusal a control can answer once the schedule is found and the actor may edit it.
KINDS: dict[str, Callable[[MissionWorld], Refused]] = {
    # the state does not allow the control (paused: no Resume)
    "state-paused": _paused_resume,
    # the state does not allow the control (running: no Play)
    "state-running": _running_play,
    # an edit the pending passage does not allow (only objective and notes)
    "edit-refused": _edit_while_pending,
    # a first Play whose one-shot time has passed
    "first-play-past": _first_play_past,
    # a revision the document has not reached
    "revision-ahead": _revision_not_reached,
    # a revision the document has left behind
    "revision-stale": _stale_revision,
}


def _send(mw: MissionWorld, r: Refused, request_id: str) -> KalendsError:
    with pytest.raises(r.error) as caught:
        mw.schedules.control(
            mw.bob.id,
            r.schedule,
            r.action,
            request_id=request_id,
            expected_revision=r.expected,
            changes=r.changes,
        )
    return caught.value


def _status(mw: MissionWorld, r: Refused, request_id: str) -> tuple[str, str | None, str | None]:
    got = mw.schedules.control_status(
        mw.carol.id, r.schedule, request_id, expected_revision=r.expected, action=r.action
    )
    return got.status, got.code, got.reason


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_status_read_gives_the_code_the_answer_carried_after_the_document_moved_on(
    mw: MissionWorld, kind: str
) -> None:
    r = KINDS[kind](mw)
    guard = (
        only_the_refusal_recorded(mw.store, "the-request")
        if r.recorded
        else nothing_written(mw.store)
    )
    with guard:
        answer = _send(mw, r, "the-request")
    assert answer.code == r.code
    status, code, reason = _status(mw, r, "the-request")
    assert (status, code) == ("rejected", r.code)

    # The document moves on: an edit, then (when running) a restart's Interrupted mark.
    control(mw, r.schedule, "configure", "move-on-01", {"notes": "Moved on."})
    assert _status(mw, r, "the-request") == (status, code, reason)

    # A repeat of the request answers the same refusal, and writes nothing (a stale one
    # is refused afresh: its message names the revision the document is at now).
    with nothing_written(mw.store):
        again = _send(mw, r, "the-request")
    assert (type(again), again.code) == (type(answer), answer.code)
    if r.recorded:
        assert (again.message, again.details) == (answer.message, answer.details)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "revision-stale"])
def test_a_recorded_refusal_is_its_request_ids_for_good(mw: MissionWorld, kind: str) -> None:
    """Another control under a refused request's ID is a reuse, as under an applied one's."""
    r = KINDS[kind](mw)
    _send(mw, r, "the-request")
    with nothing_written(mw.store), pytest.raises(RequestReused):
        mw.schedules.control(
            mw.bob.id, r.schedule, "stop", request_id="the-request", expected_revision=r.expected
        )


def test_a_request_refused_for_its_input_leaves_its_id_to_the_corrected_request(
    mw: MissionWorld,
) -> None:
    sid = create(mw)
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.configure(
            mw.bob.id, sid, {"colour": "blue"}, request_id="edit-0001", expected_revision=1
        )
    assert caught.value.field == "colour"
    fixed = mw.schedules.configure(
        mw.bob.id, sid, {"notes": "Blue."}, request_id="edit-0001", expected_revision=1
    )
    assert (fixed.status, fixed.revision) == ("applied", 2)


def test_an_evicted_refusal_reads_unknown_never_another_code(mw: MissionWorld) -> None:
    sid = create(mw)
    _send(mw, Refused(sid, "resume", 1, ControlConflict, "control-conflict"), "refused-0001")
    # Applied Configures, each a record: past the 64 kept, the oldest go (the refusal's
    # shares its recorded revision 2 with the first Configure's, which goes first).
    for n in range(65):
        control(mw, sid, "configure", f"notes-{n:04d}", {"notes": f"Note {n}."})
    assert mw.schedules.detail(mw.alice.id, sid)["evictedControlRevision"] >= 2
    got = mw.schedules.control_status(
        mw.carol.id, sid, "refused-0001", expected_revision=1, action="resume"
    )
    assert (got.status, got.code) == ("unknown", None)


def test_after_a_scheduler_dies_every_answer_reads_back_as_it_was_given(
    mw: MissionWorld,
) -> None:
    """A burst of controls while a scheduler holds the schedule's wake; the scheduler is
    killed (its lease never released) and another takes the wake over, marking the
    schedule Interrupted (a new revision). Each request's status read then says what its
    answer said: applied, or rejected with the answer's own code."""
    sid = create(mw, restart="interrupt")
    control(mw, sid, "play", "play-0001")
    runtime = MemoryRuntime(clock=mw.clock)
    Scheduler(mw.store, runtime, owner="dies").run_once()  # holds the wake from now on

    answers: dict[str, tuple[str, int, str | None]] = {}  # ID: action, revision, code
    for n in range(40):
        current = revision(mw, sid)
        action, expected = [
            ("play", current),  # running: refused
            ("resume", current),  # not Interrupted: refused
            ("configure", current),  # applied
            ("check", current),  # nothing pending: refused
            ("pause", current - 1),  # stale: refused
            ("play", current + 2),  # a revision not reached: refused
        ][n % 6]
        request_id = f"burst-{n:04d}"
        changes = {"notes": f"Burst {n}."} if action == "configure" else None
        try:
            mw.schedules.control(
                mw.bob.id,
                sid,
                action,
                request_id=request_id,
                expected_revision=expected,
                changes=changes,
            )
        except (ControlConflict, RevisionConflict) as refused:
            answers[request_id] = (action, expected, refused.code)
        else:
            answers[request_id] = (action, expected, None)
    # Play, Resume and Check: three in every six of the forty.
    assert sum(code == "control-conflict" for _, _, code in answers.values()) == 21

    before = revision(mw, sid)
    mw.clock.advance(timedelta(minutes=2))  # the dead scheduler's lease runs out
    Scheduler(mw.store, runtime, owner="heir").run_once()
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert (detail["state"], detail["interruptionReason"]) == ("interrupted", "restart")
    assert detail["revision"] > before

    for request_id, (action, expected, code) in answers.items():
        got = mw.schedules.control_status(
            mw.carol.id, sid, request_id, expected_revision=expected, action=action
        )
        want = ("applied", None) if code is None else ("rejected", code)
        assert (got.status, got.code) == want, (request_id, action, expected, got)
