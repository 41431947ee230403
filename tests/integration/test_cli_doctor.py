"""`kalends doctor`: which confinement passages get, proven by trying to read the
server's files as a passage would."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from kalends.cli.main import app
from kalends.missions.runtime.token import ensure_secret

runner = CliRunner()
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")


def doctor(tmp_path: Path, *args: str) -> Result:
    data = tmp_path / "data"
    data.mkdir(mode=0o700, exist_ok=True)
    database = data / "kalends.sqlite3"
    database.write_bytes(b"SQLite format 3\x00")
    database.chmod(0o600)
    ensure_secret(data / "runtime")
    return runner.invoke(
        app,
        [
            "doctor",
            "--database",
            str(database),
            "--runtime-dir",
            str(data / "runtime"),
            "--json",
            *args,
        ],
    )


def checks(result: Result) -> dict[str, Any]:
    found = json.loads(result.stdout)
    return {c["check"]: c["held"] for c in found["checks"]}


@needs_root
def test_as_root_with_a_passage_user_the_database_and_secret_are_out_of_reach(
    tmp_path: Path,
) -> None:
    result = doctor(tmp_path, "--passage-user", "nobody", "--sandbox", "off")
    held = checks(result)
    assert held["a passage cannot read the database"] is True
    assert held["a passage cannot read the runtime secret"] is True
    assert json.loads(result.stdout)["isolation"]["user"]["name"] == "nobody"


def test_in_the_sandbox_the_database_and_secret_are_out_of_reach(tmp_path: Path) -> None:
    result = doctor(tmp_path, "--passage-user", "root", "--sandbox", "on")
    held = checks(result)
    assert held["a passage cannot read the database"] is True
    assert held["a passage cannot read the runtime secret"] is True
    assert json.loads(result.stdout)["isolation"]["sandbox"]


def test_unconfined_passages_fail_the_checks_and_the_exit_code_says_so(tmp_path: Path) -> None:
    result = doctor(tmp_path, "--passage-user", "root", "--sandbox", "off")
    held = checks(result)
    assert held["a passage cannot read the database"] is False
    assert held["a passage cannot read the runtime secret"] is False
    assert result.exit_code == 1
    assert json.loads(result.stdout)["confined"] is False


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--sandbox", "maybe"), "sandbox"),  # not auto, on or off
        (("--passage-user", "no-such-user-k"), "passage_user"),  # a user that does not exist
    ],
)
def test_bad_options_exit_2_naming_the_option(
    tmp_path: Path, args: tuple[str, ...], field: str
) -> None:
    if field == "passage_user" and os.geteuid() != 0:
        pytest.skip("only root may name a passage user")
    result = doctor(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert field.replace("_", " ") in result.output or field in result.output
