"""The editor's draft preview over HTTP: a new schedule's configuration or an edit's
changes, previewed without a write; its refusals (malformed drafts, viewers, strangers)
write nothing either. On both backends."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import pytest

from api.conftest import ApiWorld
from kalends.cli.http_missions import HttpSchedules
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config

START = datetime(2026, 6, 1, 6, 0, tzinfo=UTC)  # 08:00 in Berlin


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it; done here, so a preview writes nothing itself."""
    api.clock.set(START)
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def preview(api: ApiWorld, body: dict[str, Any], who: str = "bob") -> httpx2.Response:
    url = f"/api/workspaces/{api.home.id}/missions/scheduled/preview"
    return api.client.post(url, json=body, headers=api.headers(who))


def created(api: ApiWorld, **overrides: Any) -> str:
    receipt = api.services.schedules.create(
        api.actors["bob"].id, api.home.id, daily_config(**overrides), request_id="draft-create"
    )
    return str(receipt.mission_id)


def test_a_new_draft_is_said_and_previewed_as_if_played_now(api: ApiWorld) -> None:
    config = daily_config(policy={"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"})
    with nothing_written(api.store):
        reply = preview(api, {"config": config, "count": 3})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert "09:00" in body["sentence"]
    assert [s["local"] for s in body["slots"]] == [
        "2026-06-01T09:00:00",
        "2026-06-02T09:00:00",
        "2026-06-03T09:00:00",
    ]
    assert body["slots"][0]["at"] == "2026-06-01T07:00:00Z"
    assert body["warnings"] == []
    assert "before" not in body and "catchUp" not in body


def test_a_draft_across_the_spring_gap_marks_the_moved_slot(api: ApiWorld) -> None:
    api.clock.set(datetime(2026, 3, 6, 12, 0, tzinfo=UTC))
    policy = {"kind": "daily", "time": "02:30", "zone": "America/New_York"}
    reply = preview(api, {"config": daily_config(policy=policy), "count": 4})
    assert reply.status_code == 200, reply.text
    slots = reply.json()["slots"]
    assert [s["dst"] for s in slots] == [None, "shifted", None, None]
    assert slots[1]["local"] == "2026-03-08T03:00:00"


def test_an_at_in_the_past_and_a_one_time_quota_are_warned(api: ApiWorld) -> None:
    config = daily_config(
        policy={"kind": "at", "local": "2026-05-01T09:00:00", "zone": "Europe/Berlin"},
        end={"maxPassages": 3},
    )
    reply = preview(api, {"config": config})
    assert reply.status_code == 200, reply.text
    warnings = reply.json()["warnings"]
    assert any(w.startswith("Play would be refused: policy.local") for w in warnings), warnings
    assert any("at most once" in w for w in warnings), warnings


def test_a_malformed_draft_is_refused_on_its_field_and_writes_nothing(api: ApiWorld) -> None:
    bad = daily_config(policy={"kind": "every", "minutes": 5})
    with nothing_written(api.store):
        reply = preview(api, {"config": bad})
        cron = preview(
            api,
            {
                "config": daily_config(
                    policy={"kind": "cron", "expression": "61 * * * *", "zone": "UTC"}
                )
            },
        )
        count = preview(api, {"config": daily_config(), "count": 0})
    assert reply.status_code == 422, reply.text
    assert reply.json()["details"]["field"] == "config.policy.minutes"
    assert cron.status_code == 422
    assert cron.json()["details"]["field"].startswith("config.policy.expression")
    assert count.status_code == 422


def test_a_viewer_is_refused_and_a_stranger_finds_no_workspace(api: ApiWorld) -> None:
    with nothing_written(api.store):
        viewer = preview(api, {"config": daily_config()}, who="carol")
        stranger = preview(api, {"config": daily_config()}, who="dave")
    assert viewer.status_code == 403, viewer.text
    assert stranger.status_code == 404, stranger.text


def test_an_edit_shows_the_slots_before_and_after_and_keeps_what_it_does_not_name(
    api: ApiWorld,
) -> None:
    mission = created(api)
    change = {"policy": {"kind": "daily", "time": "18:00", "zone": "Europe/Berlin"}}
    with nothing_written(api.store):
        reply = preview(api, {"config": change, "count": 2, "missionID": mission})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert [s["local"][11:16] for s in body["before"]] == ["09:00", "09:00"]
    assert [s["local"][11:16] for s in body["slots"]] == ["18:00", "18:00"]
    assert body["catchUp"] is False and body["catchUpSlot"] is None
    # The draft is a preview only: the schedule is as it was.
    saved = api.services.schedules.detail(api.actors["alice"].id, mission)
    assert saved["policy"]["time"] == "09:00"


def test_saving_an_edit_that_leaves_a_missed_slot_launches_a_catch_up(api: ApiWorld) -> None:
    mission = created(api)
    bob = api.actors["bob"].id
    api.services.schedules.play(bob, mission, request_id="draft-play", expected_revision=1)
    api.clock.advance(timedelta(minutes=30))  # 08:30 in Berlin; played at 08:00
    earlier = {"policy": {"kind": "daily", "time": "08:15", "zone": "Europe/Berlin"}}
    later = {"policy": {"kind": "daily", "time": "10:00", "zone": "Europe/Berlin"}}
    caught = preview(api, {"config": earlier, "missionID": mission}).json()
    assert caught["catchUp"] is True
    assert caught["catchUpSlot"]["local"] == "2026-06-01T08:15:00"
    assert any("catch-up" in w for w in caught["warnings"])
    # (the missed slot is the first the scheduler takes: the next one follows it)
    assert [s["local"] for s in caught["slots"][:2]] == [
        "2026-06-01T08:15:00",
        "2026-06-02T08:15:00",
    ]
    missed = preview(api, {"config": later, "missionID": mission}).json()
    assert missed["catchUp"] is False
    api.services.schedules.pause(bob, mission, request_id="draft-pause", expected_revision=2)
    paused = preview(api, {"config": earlier, "missionID": mission}).json()
    assert paused["catchUp"] is False


def test_an_edit_of_an_unknown_schedule_is_not_found(api: ApiWorld) -> None:
    reply = preview(
        api, {"config": {"title": "x"}, "missionID": "0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d11"}
    )
    assert reply.status_code == 404, reply.text
    mission = created(api)
    unknown = preview(api, {"config": {"colour": "red"}, "missionID": mission})
    assert unknown.status_code == 422
    assert unknown.json()["details"]["field"] == "config.colour"


class ApiWire:
    """The HTTP client's requests, sent to the application in-process as ``who``."""

    def __init__(self, api: ApiWorld, who: str) -> None:
        self.api, self.who = api, who

    def _answer(self, reply: httpx2.Response) -> Any:
        assert reply.status_code < 300, reply.text
        return reply.json()

    def get(self, path: str, **params: Any) -> Any:
        return self._answer(
            self.api.client.get(path, params=params, headers=self.api.headers(self.who))
        )

    def post(self, path: str, body: Any = None) -> Any:
        return self._answer(
            self.api.client.post(path, json=body, headers=self.api.headers(self.who))
        )

    def put(self, path: str, body: Any = None) -> Any:
        raise NotImplementedError(path)

    def patch(self, path: str, body: Any = None) -> Any:
        raise NotImplementedError(path)

    def delete(self, path: str, **params: Any) -> Any:
        raise NotImplementedError(path)

    def upload(self, path: str, *, files: Mapping[str, Any], data: Mapping[str, Any]) -> Any:
        raise NotImplementedError(path)

    def list_id(self, ref: str) -> str:
        return ref

    def workspace_id(self, ref: str) -> str:
        return ref

    def member_id(self, ref: str) -> str:
        return ref


def test_the_http_client_previews_as_the_service_does(api: ApiWorld) -> None:
    mission = created(api)
    remote = HttpSchedules(ApiWire(api, "bob"))
    local = api.services.schedules
    bob = api.actors["bob"].id
    change = {"policy": {"kind": "times", "times": ["07:00", "19:00"], "zone": "UTC"}}
    assert remote.preview_draft("ignored", api.home.id, daily_config(), 3) == (
        local.preview_draft(bob, api.home.id, daily_config(), 3)
    )
    over_http = remote.preview_draft("ignored", api.home.id, change, 2, schedule=mission)
    assert over_http == local.preview_draft(bob, api.home.id, change, 2, schedule=mission)
    assert [s["local"][11:16] for s in over_http["slots"]] == ["07:00", "19:00"]


def test_an_edit_of_another_workspaces_schedule_is_not_found_under_this_one(
    api: ApiWorld,
) -> None:
    theirs = api.services.schedules.create(
        api.actors["dave"].id, api.away.id, daily_config(), request_id="draft-away"
    )
    with nothing_written(api.store):
        reply = preview(api, {"config": {"notes": "x"}, "missionID": str(theirs.mission_id)})
    assert reply.status_code == 404, reply.text
    assert reply.json()["details"]["field"] == "missionID"
