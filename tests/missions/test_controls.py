"""The control transition table, idempotent repeats, revision conflicts and the exact
control-status read (seed 002 "Daily document controls"); on both backends."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import UUID

import pytest

from kalends.errors import ControlConflict, RequestReused, RevisionConflict
from kalends.missions import ACTIONS
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld, daily_config
from missions.refusal_support import only_the_refusal_recorded
from missions.surgery import control, create, edit_body, revision

# --- the transition table ---------------------------------------------------------------


def _interrupt(mw: MissionWorld, sid: UUID) -> None:
    """What a restart leaves behind: desired running, no live scheduler."""
    edit_body(mw, sid, lambda b: replace(b, interruption="restart", interrupted_at=mw.clock.now()))


def _reach(mw: MissionWorld, state: str, request_id: str = "create-0001") -> UUID:
    sid = create(mw, request_id)
    steps: dict[str, list[str]] = {
        "fresh": [],
        "running": ["play"],
        "running-pending": ["play", "run-now"],
        "paused-pending": ["play", "run-now", "pause"],
        "stopped": ["stop"],
        "stopped-pending": ["run-now", "stop"],
        "interrupted": ["play"],
        "interrupted-pending": ["play", "run-now"],
        "deleting": ["run-now", "delete"],
        "tombstone": ["delete"],
    }
    for i, action in enumerate(steps[state]):
        control(mw, sid, action, f"setup-{i}-{action}")
    if state.startswith("interrupted"):
        _interrupt(mw, sid)
    return sid


# Which controls each state admits (controls.py's table, read against seed 002).
ALLOWED: dict[str, set[str]] = {
    "fresh": {"play", "stop", "run-now", "configure", "delete"},
    "running": {"pause", "stop", "run-now", "configure", "delete"},
    "running-pending": {"pause", "stop", "configure", "delete"},
    "paused-pending": {"play", "stop", "check", "configure", "delete"},
    "stopped": {"delete"},
    "stopped-pending": {"check", "delete"},
    "interrupted": {"pause", "stop", "resume", "run-now", "configure", "delete"},
    "interrupted-pending": {"pause", "stop", "resume", "configure", "delete"},
    "deleting": set(),
    "tombstone": set(),
}
_CHANGES = {"objective": "A new objective."}


def _effect(action: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    """What an applied control changed, beyond the revision."""
    if action == "play":
        assert after["state"] == "running" and after["firstPlayAt"] is not None
    elif action == "pause":
        assert after["desiredState"] == "paused"
    elif action == "stop":
        assert after["desiredState"] == "stopped"
    elif action == "resume":
        assert before["state"] == "interrupted"
        assert after["state"] == "running" and after["interruptionReason"] is None
        assert after["pending"] == before["pending"]  # reconcile-only: the same passage
    elif action == "run-now":
        assert before["pending"] is None
        assert after["pending"]["trigger"] == "manual"
        assert after["quota"]["used"] == before["quota"]["used"] + 1
    elif action == "check":
        assert after["pending"] == before["pending"]
        assert after["desiredState"] == before["desiredState"]
    elif action == "configure":
        assert after["objective"] == "A new objective."
        assert after["configGeneration"] == before["configGeneration"] + 1
    elif action == "delete":
        expected = "deleting" if before["pending"] is not None else "tombstone"
        assert after["phase"] == expected


@pytest.mark.parametrize("state", list(ALLOWED))
def test_transition_table(mw: MissionWorld, state: str) -> None:
    """Each control on its own schedule freshly brought to ``state``."""
    for action in (a.value for a in ACTIONS):
        sid = _reach(mw, state, f"create-{action}")
        before = mw.schedules.detail(mw.alice.id, sid)
        rev = before["revision"]
        changes = _CHANGES if action == "configure" else None
        # A tombstone is no document: it offers nothing and has no actions to list.
        offered = before["availableActions"] if state != "tombstone" else []
        if action in ALLOWED[state]:
            assert action in offered, action
            out = mw.schedules.control(
                mw.bob.id,
                sid,
                action,
                request_id="the-control",
                expected_revision=rev,
                changes=changes,
            )
            assert (out.revision, out.repeated, out.action) == (rev + 1, False, action)
            after = mw.schedules.detail(mw.alice.id, sid)
            assert after["revision"] == rev + 1, action
            _effect(action, before, after)
        else:
            assert action not in offered, action
            # The document stays as it was; the refusal is recorded under its request ID
            # (a tombstone keeps no record of it).
            guard = (
                nothing_written(mw.store)
                if state == "tombstone"
                else only_the_refusal_recorded(mw.store, "the-control")
            )
            with guard, pytest.raises(ControlConflict) as caught:
                mw.schedules.control(
                    mw.bob.id,
                    sid,
                    action,
                    request_id="the-control",
                    expected_revision=rev,
                    changes=changes,
                )
            assert caught.value.details["action"] == action


def test_table_covers_every_action_somewhere() -> None:
    allowed = set().union(*ALLOWED.values())
    assert allowed == {a.value for a in ACTIONS}


def test_stopped_stays_terminal_across_its_controls(mw: MissionWorld) -> None:
    sid = _reach(mw, "stopped")
    for action in ("play", "resume", "run-now"):
        with pytest.raises(ControlConflict, match="Stop is final"):
            mw.schedules.control(
                mw.bob.id, sid, action, request_id=f"try-{action}", expected_revision=2
            )


@pytest.mark.parametrize("leave", ["pause", "stop", "delete"])
def test_leaving_running_ends_the_interruption(mw: MissionWorld, leave: str) -> None:
    sid = _reach(mw, "interrupted-pending")
    assert mw.schedules.detail(mw.alice.id, sid)["state"] == "interrupted"
    control(mw, sid, leave, f"{leave}-0001")
    left = mw.schedules.detail(mw.alice.id, sid)
    assert left["interruptionReason"] is None and left["state"] != "interrupted"
    assert left["pending"] is not None  # the passage is still observed honestly
    if leave == "pause":
        # Play arms the scheduler afresh: running, not Interrupted again.
        control(mw, sid, "play", "play-again")
        again = mw.schedules.detail(mw.alice.id, sid)
        assert (again["state"], again["interruptionReason"]) == ("running", None)
        assert "resume" not in again["availableActions"]


# --- idempotent repeats -------------------------------------------------------------------


def test_repeat_returns_the_original_outcome_and_never_acts_twice(mw: MissionWorld) -> None:
    sid = create(mw)
    first = mw.schedules.play(mw.bob.id, sid, request_id="play-once", expected_revision=1)
    assert (first.revision, first.repeated) == (2, False)
    mw.schedules.pause(mw.bob.id, sid, request_id="pause-once", expected_revision=2)
    with nothing_written(mw.store):
        again = mw.schedules.play(mw.bob.id, sid, request_id="play-once", expected_revision=1)
    assert again.repeated and again.revision == 2 and again.expected_revision == 1
    assert again.action == "play" and again.complete == first.complete
    # The repeat reports the document as it is now: still paused, still revision 3.
    assert again.schedule["revision"] == 3 and again.schedule["desiredState"] == "paused"


def test_repeated_run_now_makes_no_second_passage(mw: MissionWorld) -> None:
    sid = create(mw)
    first = mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-1", expected_revision=1)
    passage = first.schedule["pending"]["passageId"]
    assert first.complete is False
    with nothing_written(mw.store):
        again = mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-1", expected_revision=1)
    assert again.repeated and again.revision == 2 and again.complete is False
    assert again.schedule["pending"]["passageId"] == passage
    assert again.schedule["quota"]["used"] == 1


def test_repeat_of_a_delete_reads_back_from_the_tombstone(mw: MissionWorld) -> None:
    sid = create(mw)
    gone = mw.schedules.delete(mw.bob.id, sid, request_id="delete-it", expected_revision=1)
    assert gone.schedule["kind"] == "tombstone"
    with nothing_written(mw.store):
        again = mw.schedules.delete(mw.bob.id, sid, request_id="delete-it", expected_revision=1)
    assert again.repeated and again.revision == 2
    status = mw.schedules.control_status(mw.alice.id, sid, "delete-it")
    assert (status.status, status.action, status.revision) == ("applied", "delete", 2)


@pytest.mark.parametrize(
    ("action", "changes", "expected"),
    [
        ("pause", None, 1),  # another action
        ("configure", {"objective": "Something else."}, 1),  # another payload
        ("configure", {"notes": "A new objective."}, 1),  # another field, same value
        ("configure", {"objective": "A new objective."}, 2),  # another expected revision
    ],
)
def test_request_id_reused_with_other_input(
    mw: MissionWorld, action: str, changes: dict[str, Any] | None, expected: int
) -> None:
    sid = create(mw)
    mw.schedules.configure(
        mw.bob.id,
        sid,
        {"objective": "A new objective."},
        request_id="edit-0001",
        expected_revision=1,
    )
    with nothing_written(mw.store), pytest.raises(RequestReused) as caught:
        mw.schedules.control(
            mw.bob.id,
            sid,
            action,
            request_id="edit-0001",
            expected_revision=expected,
            changes=changes,
        )
    assert caught.value.details["field"] == "request_id"


def test_creation_is_idempotent_by_request_id(mw: MissionWorld) -> None:
    first = mw.schedules.create(mw.bob.id, mw.home.id, daily_config(), request_id="create-0001")
    with nothing_written(mw.store):
        again = mw.schedules.create(mw.bob.id, mw.home.id, daily_config(), request_id="create-0001")
    assert again.repeated and not first.repeated
    assert again.mission_id == first.mission_id and again.status == "created"
    with nothing_written(mw.store), pytest.raises(RequestReused):
        mw.schedules.create(
            mw.bob.id, mw.home.id, daily_config(title="Other"), request_id="create-0001"
        )
    assert len(mw.schedules.page(mw.alice.id, mw.home.id).items) == 1


def test_creation_receipts_created_deleted_unknown(mw: MissionWorld) -> None:
    sid = create(mw, "create-keep")
    gone = create(mw, "create-gone", title="Doomed")
    mw.schedules.delete(mw.bob.id, gone, request_id="delete-0001", expected_revision=1)
    with nothing_written(mw.store):
        kept = mw.schedules.receipt(mw.carol.id, mw.home.id, "create-keep")
        deleted = mw.schedules.receipt(mw.carol.id, mw.home.id, "create-gone")
        unknown = mw.schedules.receipt(mw.carol.id, mw.home.id, "create-never")
    assert (kept.status, kept.mission_id) == ("created", sid)
    assert kept.schedule is not None and kept.schedule["state"] == "paused"
    assert (deleted.status, deleted.mission_id) == ("deleted", gone)
    assert deleted.schedule is not None and deleted.schedule["kind"] == "tombstone"
    assert (unknown.status, unknown.mission_id, unknown.schedule) == ("unknown", None, None)
    # A repeated creation of a since-deleted schedule reads its tombstone, creating nothing.
    with nothing_written(mw.store):
        again = mw.schedules.create(
            mw.bob.id, mw.home.id, daily_config(title="Doomed"), request_id="create-gone"
        )
    assert (again.status, again.mission_id, again.repeated) == ("deleted", gone, True)


# --- stale revisions and the exact status read ------------------------------------------------


def test_stale_revision_conflicts_and_writes_nothing(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    for action, changes in (("pause", None), ("configure", {"title": "Stale title"})):
        with nothing_written(mw.store), pytest.raises(RevisionConflict) as caught:
            mw.schedules.control(
                mw.bob.id,
                sid,
                action,
                request_id=f"stale-{action}",
                expected_revision=1,
                changes=changes,
            )
        assert (caught.value.expected, caught.value.actual) == (1, 2)
    assert mw.schedules.detail(mw.alice.id, sid)["title"] == "Morning report"


def test_control_status_answers(mw: MissionWorld) -> None:
    sid = create(mw)
    mw.schedules.play(mw.bob.id, sid, request_id="play-0001", expected_revision=1)
    status = mw.schedules.control_status

    applied = status(mw.carol.id, sid, "play-0001")
    assert (applied.status, applied.action, applied.expected_revision) == ("applied", "play", 1)
    assert (applied.revision, applied.complete, applied.code) == (2, True, None)
    assert applied.at == mw.clock.now()

    with pytest.raises(RevisionConflict):
        mw.schedules.pause(mw.bob.id, sid, request_id="pause-stale", expected_revision=1)
    with nothing_written(mw.store):
        stale = status(mw.carol.id, sid, "pause-stale", expected_revision=1, action="pause")
    assert (stale.status, stale.code) == ("rejected", "revision-conflict")
    assert mw.schedules.detail(mw.alice.id, sid)["evictedControlRevision"] == 0

    with pytest.raises(ControlConflict):
        mw.schedules.resume(mw.bob.id, sid, request_id="resume-0001", expected_revision=2)
    refused = status(mw.carol.id, sid, "resume-0001", expected_revision=2, action="resume")
    assert (refused.status, refused.code) == ("rejected", "control-conflict")
    assert refused.reason is not None and "not Interrupted" in refused.reason

    # At the current revision an allowed control could still apply: unknown, not rejected.
    could = status(mw.carol.id, sid, "pause-later", expected_revision=2, action="pause")
    assert (could.status, could.code) == ("unknown", None)
    # Without an action nothing proves a refusal at the current revision…
    bare = status(mw.carol.id, sid, "resume-0002", expected_revision=2)
    assert bare.status == "unknown"
    # …but a refusal recorded under its request ID proves itself.
    recorded = status(mw.carol.id, sid, "resume-0001")
    assert (recorded.status, recorded.code, recorded.action) == (
        "rejected",
        "control-conflict",
        "resume",
    )
    # Never seen, no expected revision: unknown.
    never = status(mw.carol.id, sid, "never-sent")
    assert (never.status, never.code, never.revision) == ("unknown", None, None)
    # A revision from the future proves nothing either.
    ahead = status(mw.carol.id, sid, "from-future", expected_revision=9, action="pause")
    assert ahead.status == "unknown"


def test_control_status_on_a_tombstone_is_unknown_for_compacted_records(
    mw: MissionWorld,
) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "delete", "delete-0001")
    gone = mw.schedules.control_status(mw.alice.id, sid, "play-0001", expected_revision=1)
    assert gone.status == "unknown"
    late = mw.schedules.control_status(
        mw.alice.id, sid, "pause-0001", expected_revision=2, action="pause"
    )
    assert late.status == "unknown"
    assert revision(mw, sid) == 3
