"""Editing rules (seed 002, the shared editor table and "Visible timing, limits and
editing"): what Configure may change when, generations, frozen origins, catch-up after
a Pause, the quota and one-shot launches; on both backends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from sqlalchemy import select

from kalends.errors import ControlConflict
from kalends.missions import Body, PassageStatus
from kalends.missions.config import load_config
from kalends.missions.document import archive, latest_missed
from kalends.storage.mission_tables import schedules
from missions.conftest import MissionWorld
from missions.refusal_support import only_the_refusal_recorded
from missions.surgery import control, create, edit_body, result, revision, stored_body

EVERY_20 = {"kind": "every", "minutes": 20}
AFTER_30 = {"kind": "after", "minutes": 30}


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _settle(mw: MissionWorld, sid: UUID, *, outcome: str = "completed") -> None:
    """What settlement does to a reserved passage: admit it, then archive its result."""

    def settle(body: Body) -> Body:
        assert body.pending is not None
        admitted = replace(body, admitted=body.admitted + 1)
        return archive(admitted, result(admitted.settled + 1, mw.clock.now(), outcome=outcome))

    edit_body(mw, sid, settle)


def _configure(mw: MissionWorld, sid: UUID, changes: Mapping[str, object], request_id: str) -> None:
    mw.schedules.configure(
        mw.bob.id, sid, changes, request_id=request_id, expected_revision=revision(mw, sid)
    )


def _config_text(mw: MissionWorld, sid: UUID) -> str:
    text = mw.store.run(
        lambda c: c.execute(select(schedules.c.config).where(schedules.c.id == sid)).scalar_one(),
        write=False,
    )
    assert isinstance(text, str)
    return text


# --- what may change when ------------------------------------------------------------------


def test_full_configuration_before_the_first_admission(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    changes = {
        "title": "Evening report",
        "profile": {"command": ["make", "report"], "env": {}, "cwd": "reports"},
        "template": [{"title": "Read logs", "children": [{"title": "Errors only"}]}],
        "policy": {"kind": "weekdays", "days": [1, 3], "time": "18:30", "zone": "Asia/Tokyo"},
        "end": {"until": None, "within": {"days": 30}, "maxPassages": 10},
        "condition": {"kind": "files", "paths": ["src", "docs/index.md"]},
        "restart": "interrupt",
    }
    _configure(mw, sid, changes, "edit-0001")
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert detail["title"] == "Evening report"
    assert detail["profile"] == {"command": ["make", "report"], "envNames": [], "cwd": "reports"}
    assert detail["template"] == changes["template"]
    assert detail["policy"] == changes["policy"]
    assert detail["end"] == changes["end"]
    assert detail["restart"] == "interrupt"
    assert load_config(_config_text(mw, sid)).condition is not None


def test_between_passages_the_whole_configuration_is_editable_again(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "run-now", "run-now-1")
    _settle(mw, sid)
    _configure(mw, sid, {"title": "Between passages", "policy": EVERY_20}, "edit-0001")
    assert mw.schedules.detail(mw.alice.id, sid)["policy"] == EVERY_20


@pytest.mark.parametrize(
    "changes",
    [
        {"title": "Renamed"},
        {"policy": EVERY_20},
        {"profile": {"command": ["echo", "bye"]}},
        {"template": [{"title": "New item"}]},
        {"end": {"maxPassages": 3}},
        {"objective": "New objective.", "title": "Renamed"},
    ],
)
def test_only_objective_and_notes_while_a_passage_is_pending(
    mw: MissionWorld, changes: dict[str, object]
) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "run-now", "run-now-1")
    refused = pytest.raises(ControlConflict, match="only the objective and notes")
    with only_the_refusal_recorded(mw.store, "edit-0001"), refused:
        _configure(mw, sid, changes, "edit-0001")
    _configure(mw, sid, {"objective": "Tomorrow's work.", "notes": "Be brief."}, "edit-0002")
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert (detail["objective"], detail["notes"]) == ("Tomorrow's work.", "Be brief.")
    assert detail["locks"]["structural"] is True
    # The pending passage keeps the profile frozen at its reservation.
    assert detail["pending"]["profile"]["command"] == ["echo", "hello"]


def test_read_only_while_the_pending_passage_is_uncertain(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "run-now", "run-now-1")

    def uncertain(body: Body) -> Body:
        assert body.pending is not None
        pending = replace(body.pending, status=PassageStatus.UNCERTAIN, reason="not-observed")
        return replace(body, pending=pending)

    edit_body(mw, sid, uncertain)
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert detail["locks"]["readOnly"] is True
    assert "configure" not in detail["availableActions"]
    refused = pytest.raises(ControlConflict, match="uncertain")
    with only_the_refusal_recorded(mw.store, "edit-0001"), refused:
        _configure(mw, sid, {"notes": "Even notes wait."}, "edit-0001")
    # Pause and Stop stay available: an uncertain passage never blocks them.
    assert {"pause", "stop"} <= set(detail["availableActions"])


def test_template_locked_once_a_task_was_created(mw: MissionWorld) -> None:
    sid = create(mw, template=[{"title": "Step one"}])
    _configure(mw, sid, {"template": [{"title": "Step one, revised"}]}, "edit-0001")
    edit_body(mw, sid, lambda b: replace(b, task_created=True))
    assert mw.schedules.detail(mw.alice.id, sid)["locks"]["template"] is True
    for i, template in enumerate(([{"title": "Step two"}], None)):
        locked = pytest.raises(ControlConflict, match="template is locked")
        with only_the_refusal_recorded(mw.store, f"edit-lock-{i}"), locked:
            _configure(mw, sid, {"template": template}, f"edit-lock-{i}")
    # The same template, given again, is no change; other fields stay editable.
    _configure(
        mw, sid, {"template": [{"title": "Step one, revised"}], "title": "Still free"}, "edit-0002"
    )
    assert mw.schedules.detail(mw.alice.id, sid)["title"] == "Still free"


# --- generations ------------------------------------------------------------------------------


def test_unchanged_timing_keeps_the_temporal_generation(mw: MissionWorld) -> None:
    sid = create(mw, policy=EVERY_20)
    control(mw, sid, "play", "play-0001")
    start = mw.schedules.detail(mw.alice.id, sid)
    assert (start["configGeneration"], start["temporalGeneration"]) == (1, 1)
    _configure(mw, sid, {"title": "Renamed", "notes": "n"}, "edit-0001")
    _configure(mw, sid, {"policy": dict(EVERY_20)}, "edit-0002")  # the same policy again
    _configure(mw, sid, {"end": {"maxPassages": 5}}, "edit-0003")  # quota, not timing
    kept = mw.schedules.detail(mw.alice.id, sid)
    assert (kept["configGeneration"], kept["temporalGeneration"]) == (3, 1)
    assert kept["nextDueAt"] == start["nextDueAt"]
    assert kept["technical"]["temporalGeneration"] == 1

    _configure(mw, sid, {"policy": {"kind": "every", "minutes": 25}}, "edit-0004")
    changed = mw.schedules.detail(mw.alice.id, sid)
    assert (changed["configGeneration"], changed["temporalGeneration"]) == (4, 2)
    _configure(mw, sid, {"end": {"within": {"hours": 5}}}, "edit-0005")
    bounded = mw.schedules.detail(mw.alice.id, sid)
    assert (bounded["configGeneration"], bounded["temporalGeneration"]) == (5, 3)
    # Edits, counts and first-Play origins outlive each other.
    assert bounded["firstPlayAt"] == start["firstPlayAt"]


# --- origins, Pause and catch-up ---------------------------------------------------------------


def test_first_play_freezes_the_every_phase(mw: MissionWorld) -> None:
    sid = create(mw, policy=EVERY_20)
    mw.clock.advance(timedelta(minutes=7))  # creation is not the origin
    control(mw, sid, "play", "play-0001")
    played = mw.clock.now()
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert _at(detail["firstPlayAt"]) == played
    assert _at(detail["nextDueAt"]) == played + timedelta(minutes=20)  # one interval after Play

    mw.clock.advance(timedelta(minutes=3))
    control(mw, sid, "pause", "pause-0001")
    assert mw.schedules.detail(mw.alice.id, sid)["nextDueAt"] is None
    mw.clock.advance(timedelta(minutes=49))  # now Play + 52 min
    control(mw, sid, "play", "play-0002")
    again = mw.schedules.detail(mw.alice.id, sid)
    assert _at(again["firstPlayAt"]) == played
    assert _at(again["nextDueAt"]) == played + timedelta(minutes=60)  # phase-locked, future
    _configure(mw, sid, {"notes": "unchanged timing"}, "edit-0001")
    assert _at(mw.schedules.detail(mw.alice.id, sid)["nextDueAt"]) == played + timedelta(minutes=60)
    # The preview uses the same frozen phase.
    preview = mw.schedules.preview(mw.carol.id, sid, 3)
    assert [_at(p["at"]) for p in preview] == [played + timedelta(minutes=m) for m in (60, 80, 100)]


def test_a_paused_calendar_resumes_at_a_future_slot(mw: MissionWorld) -> None:
    # Daily 09:00 Berlin; the fake clock starts on 2025-03-01 12:00 UTC (13:00 in Berlin).
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    assert _at(mw.schedules.detail(mw.alice.id, sid)["nextDueAt"]) == datetime(
        2025, 3, 2, 8, 0, tzinfo=UTC
    )
    control(mw, sid, "pause", "pause-0001")
    mw.clock.set(datetime(2025, 3, 5, 10, 0, tzinfo=UTC))  # slots of 2-5 March were missed
    control(mw, sid, "play", "play-0002")
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert _at(detail["nextDueAt"]) == datetime(2025, 3, 6, 8, 0, tzinfo=UTC)
    doc = load_config(_config_text(mw, sid))
    assert latest_missed(doc, stored_body(mw, sid), mw.clock.now()) is None  # no catch-up

    # A running schedule that misses slots (the scheduler was away) catches up the latest.
    mw.clock.set(datetime(2025, 3, 8, 10, 0, tzinfo=UTC))
    missed = latest_missed(doc, stored_body(mw, sid), mw.clock.now())
    assert missed is not None and missed.at == datetime(2025, 3, 8, 8, 0, tzinfo=UTC)


def test_a_paused_one_shot_may_still_arrive_late(mw: MissionWorld) -> None:
    sid = create(mw, policy=AFTER_30)
    control(mw, sid, "play", "play-0001")
    played = mw.clock.now()
    assert _at(mw.schedules.detail(mw.alice.id, sid)["frozen"]["oneShotAt"]) == played + timedelta(
        minutes=30
    )
    mw.clock.advance(timedelta(minutes=10))
    control(mw, sid, "pause", "pause-0001")
    mw.clock.advance(timedelta(hours=2))
    control(mw, sid, "play", "play-0002")
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert _at(detail["nextDueAt"]) == played + timedelta(minutes=30)  # late, not re-based
    doc = load_config(_config_text(mw, sid))
    late = latest_missed(doc, stored_body(mw, sid), mw.clock.now())
    assert late is not None and late.at == played + timedelta(minutes=30)


# --- quota and one-shot launches ---------------------------------------------------------------


def test_quota_counts_run_now_reservations_and_failures(mw: MissionWorld) -> None:
    sid = create(mw, end={"maxPassages": 2})
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "run-now", "run-now-1")
    reserved = mw.schedules.detail(mw.alice.id, sid)
    assert reserved["counters"]["admitted"] == 0
    assert reserved["quota"] == {"max": 2, "used": 1, "remaining": 1}  # held by the reservation
    _settle(mw, sid, outcome="failed")  # a passage that later fails still counts
    control(mw, sid, "run-now", "run-now-2")
    _settle(mw, sid)
    spent = mw.schedules.detail(mw.alice.id, sid)
    assert spent["quota"] == {"max": 2, "used": 2, "remaining": 0}
    assert spent["counters"] == {"admitted": 2, "settled": 2, "successful": 1}
    assert "run-now" not in spent["availableActions"]
    assert (spent["blockReason"], spent["nextDueAt"]) == ("quota-exhausted", None)
    refused = pytest.raises(ControlConflict, match="quota")
    with only_the_refusal_recorded(mw.store, "run-now-3"), refused:
        mw.schedules.run_now(
            mw.bob.id, sid, request_id="run-now-3", expected_revision=revision(mw, sid)
        )
    # Raising the limit gives room again; the counts survive the edit.
    _configure(mw, sid, {"end": {"maxPassages": 3}}, "edit-0001")
    assert mw.schedules.detail(mw.alice.id, sid)["quota"]["remaining"] == 1


def test_a_one_shot_allows_one_launch(mw: MissionWorld) -> None:
    sid = create(mw, policy=AFTER_30)
    control(mw, sid, "play", "play-0001")
    assert mw.schedules.detail(mw.alice.id, sid)["quota"]["max"] == 1
    control(mw, sid, "run-now", "run-now-1")
    _settle(mw, sid)
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert (detail["nextDueAt"], detail["blockReason"]) == (None, "quota-exhausted")
    with pytest.raises(ControlConflict, match="quota"):
        mw.schedules.run_now(
            mw.bob.id, sid, request_id="run-now-2", expected_revision=revision(mw, sid)
        )
    # Even a larger maxPassages cannot lift a one-shot above one launch.
    _configure(mw, sid, {"end": {"maxPassages": 5}}, "edit-0001")
    assert mw.schedules.detail(mw.alice.id, sid)["quota"] == {"max": 1, "used": 1, "remaining": 0}


def test_a_profile_edit_without_env_keeps_the_environment(mw: MissionWorld) -> None:
    sid = create(mw)
    _configure(mw, sid, {"profile": {"command": ["make", "report"]}}, "edit-0001")
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert detail["profile"] == {
        "command": ["make", "report"],
        "envNames": ["API_TOKEN"],
        "cwd": ".",
    }
    config = load_config(_config_text(mw, sid))
    assert config.profile.env == (("API_TOKEN", "s3cret"),)
