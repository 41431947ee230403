"""The mission schedule routes of seed 002 over HTTP: create paused, pages, receipts,
capabilities, detail, controls, Run now, status reads, preview and history; on both
backends, each answer checked against what the service then reads."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import httpx2
import pytest

from api.conftest import ApiWorld
from kalends.civil import MAX_CALENDARS
from kalends.missions import ACTIONS, Action
from kalends.missions import limits as mission_limits
from kalends.missions.agents import PRESETS
from kalends.missions.config import CONDITION_KINDS, POLICY_KINDS
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config
from missions.refusal_support import only_the_refusal_recorded


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a read or a
    refusal in a test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def scheduled(api: ApiWorld, workspace: UUID | None = None) -> str:
    return f"/api/workspaces/{workspace or api.home.id}/missions/scheduled"


def schedule(api: ApiWorld, mission: str, tail: str = "", workspace: UUID | None = None) -> str:
    return f"/api/workspaces/{workspace or api.home.id}/missions/{mission}/schedule{tail}"


def create(api: ApiWorld, request_id: str, who: str = "bob", **overrides: Any) -> httpx2.Response:
    return api.client.post(
        scheduled(api),
        json={"requestID": request_id, "config": daily_config(**overrides)},
        headers=api.headers(who),
    )


def created(api: ApiWorld, request_id: str, **overrides: Any) -> str:
    reply = create(api, request_id, **overrides)
    assert reply.status_code == 201, reply.text
    mission: str = reply.json()["missionId"]
    return mission


def control(
    api: ApiWorld,
    mission: str,
    action: str,
    request_id: str,
    revision: int,
    who: str = "bob",
    **extra: Any,
) -> httpx2.Response:
    body = {"action": action, "requestID": request_id, "expectedRevision": revision, **extra}
    return api.client.post(schedule(api, mission), json=body, headers=api.headers(who))


def detail(api: ApiWorld, mission: str) -> dict[str, Any]:
    """The schedule as the service reads it (never through HTTP)."""
    return api.services.schedules.detail(api.actors["alice"].id, mission)


# --- creation -----------------------------------------------------------------------------------


def test_create_answers_the_receipt_of_a_paused_schedule(api: ApiWorld) -> None:
    reply = create(api, "create-0001", title="Nightly build")
    assert reply.status_code == 201, reply.text
    body = reply.json()
    mission = body["missionId"]
    assert UUID(mission)
    assert body["requestId"] == "create-0001"
    assert body["status"] == "created"
    assert body["workspaceId"] == str(api.home.id)
    assert body["revision"] == 1
    assert body["repeated"] is False
    stored = detail(api, mission)
    assert stored["state"] == "paused" and stored["revision"] == 1
    assert stored["title"] == "Nightly build"
    assert body["schedule"]["title"] == stored["title"]
    assert body["schedule"]["workspaceId"] == str(api.home.id)
    # The environment's values never come back, only their names.
    assert "s3cret" not in reply.text
    assert stored["profile"]["envNames"] == ["API_TOKEN"]


def test_repeating_a_creation_creates_nothing_and_answers_the_same_receipt(
    api: ApiWorld,
) -> None:
    first = create(api, "create-0001")
    assert first.status_code == 201
    with nothing_written(api.store):
        again = create(api, "create-0001")
    assert again.status_code == 200, again.text
    assert again.json()["missionId"] == first.json()["missionId"]
    assert again.json()["repeated"] is True
    assert again.json()["createdAt"] == first.json()["createdAt"]
    page = api.services.schedules.page(api.actors["bob"].id, api.home.id)
    assert [d["id"] for d in page.items] == [first.json()["missionId"]]


def test_a_creation_request_id_reused_with_another_configuration_is_a_conflict(
    api: ApiWorld,
) -> None:
    created(api, "create-0001")
    with nothing_written(api.store):
        reply = create(api, "create-0001", title="Something else")
    assert reply.status_code == 409
    assert reply.json()["code"] == "request-reused"
    assert reply.json()["details"]["field"] == "request_id"


def test_the_creation_receipt_is_read_by_request_id_after_a_lost_reply(api: ApiWorld) -> None:
    create(api, "create-lost-1")  # the reply is "lost": the client never reads it
    with nothing_written(api.store):
        reply = api.client.get(
            scheduled(api) + "/requests/create-lost-1", headers=api.headers("carol")
        )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "created"
    stored = api.services.schedules.page(api.actors["alice"].id, api.home.id).items
    assert [body["missionId"]] == [d["id"] for d in stored]
    assert body["repeated"] is False


def test_an_unknown_creation_receipt_stays_unknown(api: ApiWorld) -> None:
    with nothing_written(api.store):
        reply = api.client.get(
            scheduled(api) + "/requests/never-sent-1", headers=api.headers("bob")
        )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "unknown"
    assert body["missionId"] is None and body["schedule"] is None
    # The receipt is scoped to its workspace: another workspace's creation is unknown here.
    api.services.schedules.create(
        api.actors["dave"].id, api.away.id, daily_config(), request_id="create-away-1"
    )
    elsewhere = api.client.get(
        scheduled(api) + "/requests/create-away-1", headers=api.headers("alice")
    )
    assert elsewhere.json()["status"] == "unknown"


def test_a_deleted_schedule_receipt_says_deleted(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    assert control(api, mission, "delete", "delete-0001", 1).status_code == 200
    reply = api.client.get(scheduled(api) + "/requests/create-0001", headers=api.headers("bob"))
    assert reply.json()["status"] == "deleted"
    assert reply.json()["schedule"]["kind"] == "tombstone"
    assert detail(api, mission)["kind"] == "tombstone"


# --- pages --------------------------------------------------------------------------------------


def test_pages_hold_at_most_eight_documents_and_tombstones_take_their_place(
    api: ApiWorld,
) -> None:
    missions = [created(api, f"create-{i:04d}", title=f"Schedule {i}") for i in range(11)]
    missions.sort()
    for n, mission in enumerate(missions[1:4]):
        assert control(api, mission, "delete", f"delete-{n:04d}", 1).status_code == 200
    headers = api.headers("carol")
    first = api.client.get(scheduled(api), headers=headers)
    assert first.status_code == 200, first.text
    page = first.json()
    assert [d["id"] for d in page["items"]] == missions[:8]
    assert [d["kind"] for d in page["items"][1:4]] == ["tombstone"] * 3
    assert page["nextAfter"] == missions[7]
    second = api.client.get(scheduled(api), params={"after": page["nextAfter"]}, headers=headers)
    assert [d["id"] for d in second.json()["items"]] == missions[8:]
    assert second.json()["nextAfter"] is None
    # The same pages the service reads.
    service = api.services.schedules.page(api.actors["carol"].id, api.home.id)
    assert page == service.to_json()
    small = api.client.get(scheduled(api), params={"limit": 3}, headers=headers).json()
    assert [d["id"] for d in small["items"]] == missions[:3]
    assert small["nextAfter"] == missions[2]


def test_an_empty_workspace_has_an_empty_page(api: ApiWorld) -> None:
    reply = api.client.get(scheduled(api), headers=api.headers("alice"))
    assert reply.status_code == 200
    assert reply.json() == {"items": [], "nextAfter": None}


# --- capabilities --------------------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.lower().split("_")
    return head + "".join(part.title() for part in rest)


def test_capabilities_come_from_the_constants(api: ApiWorld) -> None:
    reply = api.client.get(scheduled(api) + "/capabilities", headers=api.headers("carol"))
    assert reply.status_code == 200, reply.text
    caps = reply.json()
    assert caps["actions"] == [a.value for a in ACTIONS]
    assert Action.RUN_NOW.value not in caps["controlActions"]
    assert set(caps["controlActions"]) | {Action.RUN_NOW.value} == set(caps["actions"])
    assert caps["policyKinds"] == list(POLICY_KINDS)
    assert caps["conditionKinds"] == list(CONDITION_KINDS)
    assert caps["pageSize"] == mission_limits.MAX_PAGE
    assert caps["runtimeKinds"] == ["process"]
    assert caps["passageReports"] is True  # the fixture's server has a runtime directory
    assert caps["runNowRoute"].endswith("/schedule/run-now")
    limits = caps["limits"]
    for name in mission_limits.__all__:
        assert limits[_camel(name)] == getattr(mission_limits, name), name
    assert limits["maxCalendars"] == MAX_CALENDARS
    assert limits["maxSummaryBytes"] == mission_limits.MAX_SUMMARY_BYTES
    assert limits["maxArgChars"] == mission_limits.MAX_ARG_CHARS
    presets = caps["agentPresets"]
    assert presets == [p.to_json() for p in PRESETS.values()]
    assert " ".join(p["name"] for p in presets) == "claude codex opencode gemini aider shell"
    claude, shell = presets[0], presets[-1]
    assert (claude["command"], claude["executable"], claude["finalMessage"]) == (
        ["claude", "-p", "{prompt}", "--output-format", "json"],
        "claude",
        "json-result",
    )
    assert (shell["command"], shell["executable"], shell["finalMessage"]) == (
        ["sh", "-c", "{objective}"],
        "sh",
        "none",
    )
    assert {p["finalMessage"] for p in presets} == {"json-result", "last-lines", "none"}
    assert all(p["reports"] for p in presets)


# --- the controls, end to end -------------------------------------------------------------------


def test_create_page_detail_play_pause_stop_through_http(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    page = api.client.get(scheduled(api), headers=api.headers("bob")).json()
    assert [d["id"] for d in page["items"]] == [mission]
    shown = api.client.get(schedule(api, mission), headers=api.headers("carol"))
    assert shown.status_code == 200, shown.text
    doc = shown.json()
    assert doc["id"] == mission and doc["state"] == "paused" and doc["revision"] == 1
    assert "play" in doc["availableActions"]
    assert doc["results"] == [] and doc["blockReason"] == "paused"

    played = control(api, mission, "play", "play-0001", doc["revision"])
    assert played.status_code == 200, played.text
    body = played.json()
    assert body["action"] == "play" and body["status"] == "applied"
    assert body["expectedRevision"] == 1 and body["revision"] == 2
    assert body["complete"] is True and body["repeated"] is False
    assert body["schedule"]["desiredState"] == "running"
    stored = detail(api, mission)
    assert stored["desiredState"] == "running" and stored["revision"] == 2
    assert stored["firstPlayAt"] is not None

    paused = control(api, mission, "pause", "pause-0001", 2)
    assert paused.status_code == 200, paused.text
    assert paused.json()["revision"] == 3
    assert detail(api, mission)["state"] == "paused"

    stopped = control(api, mission, "stop", "stop-0001", 3)
    assert stopped.status_code == 200, stopped.text
    stored = detail(api, mission)
    assert stored["state"] == "stopped" and stored["revision"] == 4
    assert stopped.json()["schedule"]["state"] == "stopped"
    assert api.client.get(schedule(api, mission), headers=api.headers("bob")).json() == (
        api.services.schedules.detail(api.actors["bob"].id, mission)
    )


def test_a_repeated_control_acts_once_and_answers_the_same(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    first = control(api, mission, "play", "play-0001", 1)
    assert first.status_code == 200
    with nothing_written(api.store):
        again = control(api, mission, "play", "play-0001", 1)
    assert again.status_code == 200, again.text
    assert again.json()["repeated"] is True
    assert again.json()["revision"] == first.json()["revision"] == 2
    assert detail(api, mission)["revision"] == 2


def test_a_control_request_id_reused_with_another_payload_is_a_conflict(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    assert control(api, mission, "play", "play-0001", 1).status_code == 200
    for action, revision in (("pause", 2), ("play", 2)):
        with nothing_written(api.store):
            reply = control(api, mission, action, "play-0001", revision)
        assert reply.status_code == 409, (action, reply.text)
        assert reply.json()["code"] == "request-reused"
    assert detail(api, mission)["desiredState"] == "running"


def test_the_lost_reply_journey_reads_the_status_and_never_acts_twice(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    control(api, mission, "play", "play-0001", 1)  # its reply is "lost"
    with nothing_written(api.store):
        status = api.client.get(
            schedule(api, mission, "/requests/play-0001"), headers=api.headers("carol")
        )
    assert status.status_code == 200, status.text
    read = status.json()
    assert read["status"] == "applied"
    assert read["requestId"] == "play-0001" and read["action"] == "play"
    assert read["expectedRevision"] == 1 and read["revision"] == 2
    assert read["complete"] is True and read["at"] is not None
    with nothing_written(api.store):
        repeat = control(api, mission, "play", "play-0001", 1)
    assert repeat.json()["repeated"] is True
    assert detail(api, mission)["revision"] == 2


def test_the_status_of_a_request_never_recorded(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    assert control(api, mission, "play", "play-0001", 1).status_code == 200
    url = schedule(api, mission, "/requests/pause-0009")
    with nothing_written(api.store):
        plain = api.client.get(url, headers=api.headers("bob"))
        stale = api.client.get(url, params={"expectedRevision": 1}, headers=api.headers("bob"))
        refused = api.client.get(
            url, params={"expectedRevision": 2, "action": "play"}, headers=api.headers("bob")
        )
        current = api.client.get(
            url, params={"expectedRevision": 2, "action": "pause"}, headers=api.headers("bob")
        )
    assert plain.json()["status"] == "unknown"
    assert stale.json()["status"] == "rejected"
    assert stale.json()["code"] == "revision-conflict"
    assert refused.json()["status"] == "rejected"
    assert refused.json()["code"] == "control-conflict"
    assert refused.json()["reason"]
    # A request that could still apply stays unknown.
    assert current.json()["status"] == "unknown"


def test_configure_changes_the_named_fields(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    reply = control(
        api, mission, "configure", "edit-0001", 1, changes={"objective": "Count the commits."}
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["schedule"]["objective"] == "Count the commits."
    stored = detail(api, mission)
    assert stored["objective"] == "Count the commits." and stored["revision"] == 2
    assert stored["title"] == daily_config()["title"]


def test_the_detail_says_its_policy_in_words_and_a_new_policy_anew(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    shown = api.client.get(schedule(api, mission), headers=api.headers("carol")).json()
    assert shown["sentence"] == "Every day at 09:00 (Europe/Berlin)"
    weekends = {
        "kind": "calendars",
        "calendars": [
            {"kind": "weekdays", "days": [1, 2, 3, 4, 5], "time": "09:00", "zone": "UTC"},
            {"kind": "cron", "expression": "0 10 * * sat,sun", "zone": "UTC"},
        ],
    }
    reply = control(api, mission, "configure", "edit-0001", 1, changes={"policy": weekends})
    assert reply.status_code == 200, reply.text
    sentence = "Every weekday at 09:00 (UTC); and at 10:00 on Saturday and Sunday (UTC)"
    assert reply.json()["schedule"]["sentence"] == sentence
    shown = api.client.get(schedule(api, mission), headers=api.headers("carol")).json()
    assert shown["sentence"] == sentence == detail(api, mission)["sentence"]


def test_run_now_has_its_own_route(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    reply = api.client.post(
        schedule(api, mission, "/run-now"),
        json={"requestID": "run-0001", "expectedRevision": 1},
        headers=api.headers("bob"),
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["action"] == "run-now" and body["revision"] == 2
    assert body["complete"] is False  # until its passage is admitted or archived
    stored = detail(api, mission)
    assert stored["pending"]["trigger"] == "manual"
    assert stored["pending"]["requestId"] == "run-0001"
    assert re.fullmatch(r"psg_[0-9a-f]{26}", stored["pending"]["passageId"])
    with nothing_written(api.store):
        again = api.client.post(
            schedule(api, mission, "/run-now"),
            json={"requestID": "run-0001", "expectedRevision": 1},
            headers=api.headers("bob"),
        )
    assert again.json()["repeated"] is True
    # A second passage never overlaps the pending one (its refusal is recorded).
    with only_the_refusal_recorded(api.store, "run-0002"):
        busy = api.client.post(
            schedule(api, mission, "/run-now"),
            json={"requestID": "run-0002", "expectedRevision": 2},
            headers=api.headers("bob"),
        )
    assert busy.status_code == 409
    assert busy.json()["code"] == "recurrence-control-conflict"


def test_delete_leaves_a_tombstone_in_detail_and_history(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    reply = control(api, mission, "delete", "delete-0001", 1)
    assert reply.status_code == 200, reply.text
    shown = api.client.get(schedule(api, mission), headers=api.headers("bob")).json()
    assert shown["kind"] == "tombstone"
    assert shown == detail(api, mission)
    history = api.client.get(schedule(api, mission, "/history"), headers=api.headers("bob"))
    assert history.json()["results"] == [] and history.json()["counters"] is None


# --- preview and history ------------------------------------------------------------------------


def test_preview_shows_the_next_slots(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    with nothing_written(api.store):
        reply = api.client.get(
            schedule(api, mission, "/preview"), params={"count": 3}, headers=api.headers("carol")
        )
    assert reply.status_code == 200, reply.text
    slots = reply.json()
    assert slots == api.services.schedules.preview(api.actors["carol"].id, mission, 3)
    assert len(slots) == 3
    assert all(s["zone"] == "Europe/Berlin" and "T09:00" in s["local"] for s in slots)
    default = api.client.get(schedule(api, mission, "/preview"), headers=api.headers("carol"))
    assert len(default.json()) == 5


def test_history_holds_the_counters_and_results(api: ApiWorld) -> None:
    mission = created(api, "create-0001")
    reply = api.client.get(schedule(api, mission, "/history"), headers=api.headers("carol"))
    assert reply.status_code == 200, reply.text
    stored = detail(api, mission)
    assert reply.json() == {
        "missionId": mission,
        "revision": stored["revision"],
        "counters": stored["counters"],
        "results": stored["results"],
    }


def test_check_restarts_the_observation_of_a_paused_schedule_pending_passage(
    api: ApiWorld,
) -> None:
    mission = created(api, "create-0001")
    run = api.client.post(
        schedule(api, mission, "/run-now"),
        json={"requestID": "run-0001", "expectedRevision": 1},
        headers=api.headers("bob"),
    )
    assert run.status_code == 200, run.text
    refused = control(api, mission, "check", "check-0001", 1)
    assert refused.status_code == 409
    assert refused.json()["code"] == "recurrence-revision-conflict"
    checked = control(api, mission, "check", "check-0002", 2)
    assert checked.status_code == 200, checked.text
    assert checked.json()["complete"] is True and checked.json()["revision"] == 3
    stored = detail(api, mission)
    assert stored["revision"] == 3 and stored["pending"] is not None
    status = api.services.schedules.control_status(api.actors["bob"].id, mission, "check-0002")
    assert (status.status, status.action) == ("applied", "check")
    refused_status = api.services.schedules.control_status(
        api.actors["bob"].id, mission, "check-0001", expected_revision=1, action="check"
    )
    assert refused_status.status == "rejected"
