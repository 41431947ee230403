"""The shortest journey: create paused, Play, read back; on both backends."""

from __future__ import annotations

from missions.conftest import MissionWorld, daily_config


def test_create_play_and_read(mw: MissionWorld) -> None:
    receipt = mw.schedules.create(mw.bob.id, mw.home.id, daily_config(), request_id="create-001")
    assert receipt.status == "created" and receipt.mission_id is not None
    assert receipt.schedule is not None and receipt.schedule["state"] == "paused"
    played = mw.schedules.play(
        mw.bob.id, receipt.mission_id, request_id="play-0001", expected_revision=1
    )
    assert played.revision == 2 and played.schedule["state"] == "running"
    detail = mw.schedules.detail(mw.carol.id, receipt.mission_id)
    assert detail["nextDueAt"] is not None
    assert "s3cret" not in str(detail)
