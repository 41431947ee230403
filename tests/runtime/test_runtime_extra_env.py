"""``ProcessRuntime(extra_env=...)``: variables every passage of a runtime gets (a server
gives its URL as ``KALENDS_API_URL``), over the profile's, under the passage's own
identities."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kalends.cli import report as report_cli
from kalends.missions.runtime.process import (
    ENV_API_URL,
    ENV_PASSAGE_ID,
    ENV_PASSAGE_TOKEN,
    ProcessRuntime,
)

from .support import GRACE, Lab, kill_families, python

NAMES = (ENV_API_URL, ENV_PASSAGE_ID, ENV_PASSAGE_TOKEN, "FROM_PROFILE", "SHARED")
DUMP = f"""
    import json, os
    names = {NAMES!r}
    with open("env.json", "w") as f:
        json.dump({{n: os.environ.get(n) for n in names}}, f)
"""


def run_and_read(lab: Lab, env: tuple[tuple[str, str], ...] = ()) -> dict[str, str | None]:
    """Starts a passage that dumps its environment and returns what it saw."""
    lab.runtime.start(lab.passage(*python(DUMP), env=env))
    lab.settled()
    found: dict[str, str | None] = json.loads((lab.workspace / "env.json").read_text())
    return found


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Lab]:
    """A runtime as `kalends serve` makes it: its passages get the server's URL."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    root = tmp_path / "runtime"
    runtime = ProcessRuntime(
        root,
        grace=GRACE,
        extra_env={ENV_API_URL: "http://127.0.0.1:8123", "SHARED": "runtime"},
    )
    try:
        yield Lab(runtime, workspace, tmp_path)
    finally:
        kill_families(root)


def test_every_passage_gets_the_extra_variables_over_its_profiles(served: Lab) -> None:
    seen = run_and_read(served, env=(("FROM_PROFILE", "profile"), ("SHARED", "profile")))

    assert seen[ENV_API_URL] == "http://127.0.0.1:8123"
    assert seen["FROM_PROFILE"] == "profile"
    assert seen["SHARED"] == "runtime"  # the runtime's own setting wins over the profile's


def test_the_passages_identities_come_last(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    root = tmp_path / "runtime"
    runtime = ProcessRuntime(
        root,
        grace=GRACE,
        extra_env={ENV_PASSAGE_ID: "psg_forged", ENV_PASSAGE_TOKEN: "forged"},
    )
    lab = Lab(runtime, workspace, tmp_path)
    try:
        seen = run_and_read(lab)
    finally:
        kill_families(root)

    assert seen[ENV_PASSAGE_ID] == "psg_1"
    assert seen[ENV_PASSAGE_TOKEN] == runtime.token("psg_1", "ses_1")


def test_without_extra_variables_a_passage_gets_no_api_url(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_API_URL, raising=False)

    seen = run_and_read(lab)

    assert lab.runtime.extra_env == {}
    assert seen[ENV_API_URL] is None


def test_an_inherited_api_url_never_reaches_a_passage_of_a_plain_runtime(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker started from a shell that has the variable must not send reports there.
    monkeypatch.setenv(ENV_API_URL, "http://127.0.0.1:9/stale")

    seen = run_and_read(lab)

    assert seen[ENV_API_URL] is None


def test_kalends_report_reads_the_variable_the_server_sets() -> None:
    assert report_cli.ENV_API_URL == ENV_API_URL
