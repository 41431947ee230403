"""`kalends schedule create` and `edit` with a source condition naming what cannot be read:
exit 2, one error line naming the field, nothing written; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.storage.schema import metadata
from kalends.storage.testing import StorageTarget
from missions.condition_support import Repo

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_RUNTIME_DIR": None,
}
MISSING = "0190a0a0-0000-7000-8000-000000000000"


def _config(condition: dict[str, Any]) -> str:
    return json.dumps(
        {
            "title": "Follow-up",
            "profile": {"command": ["true"]},
            "policy": {"kind": "daily", "time": "02:00", "zone": "UTC"},
            "condition": condition,
        }
    )


def _rows(services: Services) -> dict[str, list[tuple[str, ...]]]:
    with services.store.engine.connect() as conn:
        return {
            table.name: sorted(tuple(str(v) for v in row) for row in conn.execute(select(table)))
            for table in metadata.sorted_tables
        }


@pytest.fixture
def services(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Services]:
    opened = open_services(storage_target.url)
    opened.directory.add_actor("alice", "Alice")
    (tmp_path / "home").mkdir()
    opened.workspaces.add("alice", tmp_path / "home", "home")
    opened.grants.grant("alice", "run")
    try:
        yield opened
    finally:
        opened.store.close()


def _refused(services: Services, url: str, *args: str, stdin: str | None = None) -> Any:
    before = _rows(services)
    result = runner.invoke(
        app, [*args, "--json", "--as", "alice", "--database", url], env=CLEAN_ENV, input=stdin
    )
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert _rows(services) == before, "something was written"
    assert result.stderr.strip().splitlines()[-1].startswith("error: condition."), result.stderr
    return json.loads(result.stdout)["error"]


def test_conditions_naming_what_cannot_be_read_exit_2_naming_the_field(
    services: Services, storage_target: StorageTarget, tmp_path: Path
) -> None:
    url = storage_target.url
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "home" / "escape")
    (tmp_path / "home" / "plain").mkdir()
    Repo(tmp_path / "home" / "app")  # main only
    for condition, field in (
        ({"kind": "schedule-succeeded", "missionId": MISSING}, "condition.missionId"),
        ({"kind": "mission-completed", "missionId": MISSING}, "condition.missionId"),
        ({"kind": "files", "paths": ["escape/secret"]}, "condition.paths[0]"),
        ({"kind": "git-branch", "branch": "main", "path": "plain"}, "condition.path"),
        ({"kind": "git-branch", "branch": "release", "path": "app"}, "condition.branch"),
    ):
        error = _refused(
            services, url, "schedule", "create", "home", "--config", "-", stdin=_config(condition)
        )
        assert error["details"]["field"] == field, (condition, error)
    made = services.schedules.create(
        "alice",
        "home",
        json.loads(_config({"kind": "files", "paths": ["a"]})),
        request_id="create-0001",
    )
    sid = str(made.mission_id)
    itself = json.dumps({"condition": {"kind": "schedule-succeeded", "missionId": sid}})
    error = _refused(services, url, "schedule", "edit", sid, "--set-json", itself)
    assert error["details"]["field"] == "condition.missionId"
