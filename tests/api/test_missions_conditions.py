"""A source condition's names checked at configuration, through the HTTP routes: an unknown
schedule, a path leaving the workspace and a missing repository are 422 naming the field;
a cycle closed behind the checks is refused at Play like the other Play refusals (409).
Nothing is written but the Play refusal's record; on both backends."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import select, update

from api.conftest import ApiWorld
from api.test_missions_refusals import (
    control_body,
    create,
    error,
    post_control,
    revision_of,
    schedule,
    scheduled,
)
from kalends.storage.mission_tables import schedules
from kalends.storage.testing import nothing_written
from missions.condition_support import Repo
from missions.conftest import daily_config
from missions.refusal_support import only_the_refusal_recorded

MISSING = "0190a0a0-0000-7000-8000-000000000000"


def _create(api: ApiWorld, condition: dict[str, Any]) -> dict[str, Any]:
    body = {"requestID": "create-0009", "config": daily_config(condition=condition)}
    with nothing_written(api.store):
        reply = api.client.post(scheduled(api.home.id), json=body, headers=api.headers("bob"))
    found: dict[str, Any] = error(reply, 422, reply.json().get("code", "?"))
    return found


def test_conditions_naming_what_cannot_be_read_are_422_naming_the_field(
    api: ApiWorld, tmp_path: Path
) -> None:
    home = Path(api.home.path)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", home / "escape")
    Repo(home / "app")  # main only
    for condition, field in (
        ({"kind": "schedule-succeeded", "missionId": MISSING}, "config.condition.missionId"),
        ({"kind": "files", "paths": ["escape/f"]}, "config.condition.paths[0]"),
        ({"kind": "git-branch", "branch": "main", "path": "nowhere"}, "config.condition.path"),
        ({"kind": "git-branch", "branch": "release", "path": "app"}, "config.condition.branch"),
    ):
        body = _create(api, condition)
        assert body["details"]["field"] == field, body


def test_an_edit_naming_the_schedule_itself_is_422(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    changes = {"condition": {"kind": "schedule-succeeded", "missionId": mission}}
    with nothing_written(api.store):
        reply = post_control(
            api, mission, control_body("configure", "edit-0001", 1, changes=changes)
        )
    assert reply.status_code == 422, reply.text
    assert "itself" in reply.json()["message"]


def test_a_cycle_closed_behind_the_checks_is_refused_at_play(api: ApiWorld) -> None:
    first = create(api, "create-0001")
    second = create(
        api, "create-0002", condition={"kind": "schedule-succeeded", "missionId": first}
    )
    # As a concurrent edit of the first, checked before the second named it, leaves it.
    with api.store.transaction() as conn:
        text = conn.execute(
            select(schedules.c.config).where(schedules.c.id == UUID(first))
        ).scalar()
        data = json.loads(str(text))
        data["condition"] = {"kind": "schedule-succeeded", "missionId": second}
        conn.execute(
            update(schedules).where(schedules.c.id == UUID(first)).values(config=json.dumps(data))
        )
    with only_the_refusal_recorded(api.store, "play-0001"):
        reply = post_control(api, first, control_body("play", "play-0001", revision_of(api, first)))
    body = error(reply, 409, "recurrence-control-conflict")
    assert body["details"]["reason"] == "source-cycle", body


def test_the_detail_shows_the_baseline_first_play_took_and_on_change(api: ApiWorld) -> None:
    home = Path(api.home.path)
    (home / "notes.txt").write_text("first\n")
    condition = {"kind": "files", "paths": ["notes.txt", "later.txt"]}
    mission = create(api, "create-0001", condition=condition, policy={"kind": "on-change"})
    reply = post_control(api, mission, control_body("play", "play-0001", revision_of(api, mission)))
    assert reply.status_code == 200, reply.text
    detail = api.client.get(schedule(api.home.id, mission), headers=api.headers("carol")).json()
    assert detail["policy"] == {"kind": "on-change"}
    assert detail["sentence"] == "Whenever the condition holds, checked every 15 minutes from Play"
    source = detail["source"]
    assert source["key"] == 'files:["later.txt","notes.txt"]'
    files = source["baseline"]["observation"]["files"]
    assert files["later.txt"] is None and len(files["notes.txt"]) == 64  # a missing file is a state
    assert source["lastSlot"] is None and source["slots"] == []
    assert detail["checks"]["count"] == 0  # the baseline read counts zero
    assert detail["blockReason"] is None
    # The next check is 15 minutes after Play.
    first_play = datetime.fromisoformat(detail["firstPlayAt"])
    assert datetime.fromisoformat(detail["nextDueAt"]) - first_play == timedelta(minutes=15)


def test_on_change_without_a_condition_is_422_and_writes_nothing(api: ApiWorld) -> None:
    body = {"requestID": "create-0009", "config": daily_config(policy={"kind": "on-change"})}
    with nothing_written(api.store):
        reply = api.client.post(scheduled(api.home.id), json=body, headers=api.headers("bob"))
    assert reply.status_code == 422, reply.text
    assert reply.json()["details"]["field"] == "config.condition", reply.json()
