"""`kalends simulate` (issue 24 §2) as a user runs it: a real process for a policy or a
configuration file (text at 80 columns, --json, --svg, --html, every bad input refused
with one line), and in-process on every backend for a schedule's own configuration, read
as a viewer with nothing written to its database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import OWNER, Remote, serve_workspace, snapshot_of
from sqlalchemy import select
from typer.testing import CliRunner

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.storage.schema import metadata
from kalends.storage.testing import StorageTarget

NS = "{http://www.w3.org/2000/svg}"
NEW_YORK_SKIP = '{"kind":"daily","time":"02:30","zone":"America/New_York","gap":"skip"}'
MARCH = ("--from", "2027-03-10", "--to", "2027-03-20")
ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in {"KALENDS_ACTOR", "KALENDS_DATABASE_URL", "KALENDS_SERVER", "KALENDS_TOKEN"}
} | {"COLUMNS": "80"}


def kalends(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kalends", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=ENV,
        cwd=cwd,
    )


def simulated(*args: str) -> dict[str, Any]:
    done = kalends(*args, "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


class TestRealProcess:
    def test_json_gives_the_whole_ledger_with_its_counts(self) -> None:
        found = simulated(
            "--policy", NEW_YORK_SKIP, *MARCH,
            "--outage", "2027-03-15T01:00/2027-03-17T08:00",
            "--pause", "2027-03-18/2027-03-19T12:00",
        )  # fmt: skip
        said = [(r["local"], r["outcome"], r["reason"]) for r in found["items"]]
        assert said == [
            ("2027-03-10T02:30:00", "launched", None),
            ("2027-03-11T02:30:00", "launched", None),
            ("2027-03-12T02:30:00", "launched", None),
            ("2027-03-13T02:30:00", "launched", None),
            ("2027-03-14T02:30:00", "skipped", "dst-gap"),
            ("2027-03-15T02:30:00", "coalesced", "no-scheduler"),
            ("2027-03-16T02:30:00", "coalesced", "no-scheduler"),
            ("2027-03-17T02:30:00", "launched", None),
            ("2027-03-18T02:30:00", "skipped", "paused"),
            ("2027-03-19T02:30:00", "skipped", "paused"),
        ]
        assert found["counts"] == {
            "launched": 5,
            "coalesced": 2,
            "skipped": 3,
            "moved": 0,
            "reasons": {"dst-gap": 1, "no-scheduler": 2, "paused": 2},
        }
        assert found["zone"] == "America/New_York"
        assert found["from"] == "2027-03-10T05:00:00Z" and found["to"] == "2027-03-20T04:00:00Z"
        assert [r["local"] for r in found["dst"]] == ["2027-03-14T02:30:00"]
        assert found["first"] == found["items"][0] and found["last"] == found["items"][-1]
        assert found["passages"]["launched"] == 5

    def test_the_text_fits_80_columns_and_names_each_part(self) -> None:
        done = kalends(
            "--policy", NEW_YORK_SKIP, *MARCH, "--fail-rate", "1", "--duration", "10m"
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, done.stdout
        text = done.stdout
        assert "Simulated policy: simulated, slots in America/New_York" in text
        assert "window  2027-03-10 00:00 to 2027-03-20 00:00 America/New_York (10 days)" in text
        assert "passages  9 launched: 0 completed, 9 failed" in text
        assert "DST-affected slots (1)" in text
        assert "2027-03-14 02:30   skipped   dst-gap" in text
        assert "first slot  2027-03-10 02:30  launched" in text
        assert "last slot   2027-03-19 02:30  launched" in text

    def test_a_long_title_wraps_within_80_columns_and_the_window_is_in_the_zone_given(
        self, tmp_path: Path
    ) -> None:
        config = {
            "title": ("A rather long title " * 3).strip(),
            "policy": {"kind": "every", "hours": 12},
        }
        (tmp_path / "config.json").write_text(json.dumps(config))
        done = kalends(
            "--config", str(tmp_path / "config.json"), "--from", "2027-01-01", "--to",
            "2027-01-03", "--zone", "Europe/Berlin", "--duration", "25h", "--fail-rate", "0.5",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert max(len(line) for line in done.stdout.splitlines()) <= 80, done.stdout
        assert "window  2027-01-01 00:00 to 2027-01-03 00:00 Europe/Berlin (2 days)" in done.stdout
        assert "simulated, slots in\nUTC" in done.stdout  # (wrapped)
        assert "first slot  2027-01-01 11:00  launched" in done.stdout  # 12:00 in Berlin
        assert "pending-passage" in done.stdout

    def test_a_configuration_file_with_its_quota_and_the_drawings(self, tmp_path: Path) -> None:
        config = {
            "title": "Nightly backup",
            "profile": {"command": ["rm", "-rf", "/nothing-runs"]},
            "policy": {"kind": "every", "hours": 6},
            "end": {"maxPassages": 5},
        }
        (tmp_path / "config.json").write_text(json.dumps(config))
        found = simulated(
            "--config", str(tmp_path / "config.json"), "--from", "2027-01-01", "--to",
            "2027-01-05", "--svg", str(tmp_path / "year.svg"), "--html",
            str(tmp_path / "year.html"),
        )  # fmt: skip
        assert [r["outcome"] for r in found["items"]] == ["launched"] * 5 + ["skipped"]
        assert found["items"][-1]["reason"] == "quota"
        root = ET.parse(tmp_path / "year.svg").getroot()
        marks = [g for g in root.iter(f"{NS}g") if "mark" in (g.get("class") or "").split()]
        assert len(marks) == 6
        assert sorted(m.get("data-outcome", "") for m in marks) == ["launched"] * 5 + ["skipped"]
        page = (tmp_path / "year.html").read_text()
        assert page.startswith("<!DOCTYPE html>") and "Nightly backup (simulated)" in page
        assert "<svg" in page

    def test_flags_replace_the_end_bounds(self) -> None:
        daily = '{"kind":"daily","time":"09:00","zone":"Europe/Berlin"}'
        window = ("--from", "2027-05-01", "--to", "2027-06-01")
        quota = simulated("--policy", daily, *window, "--max-passages", "3")
        assert quota["counts"]["launched"] == 3
        until = simulated("--policy", daily, *window, "--until", "2027-05-04T12:00")
        assert until["counts"]["launched"] == 4
        assert until["items"][-1]["reason"] == "end-bound"
        within = simulated("--policy", daily, *window, "--within", "2d")
        assert within["counts"]["launched"] == 2

    def test_the_same_seed_draws_the_same_run(self) -> None:
        args = ("--policy", '{"kind":"every","hours":4}', "--from", "2027-01-01", "--to",
                "2027-01-04", "--duration", "exp:3h", "--fail-rate", "0.5")  # fmt: skip
        one = simulated(*args, "--seed", "11")
        two = simulated(*args, "--seed", "11")
        assert [r["decidedAt"] for r in one["items"]] == [r["decidedAt"] for r in two["items"]]
        assert one["passages"] == two["passages"]

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            # more than ten years
            (("--policy", NEW_YORK_SKIP, "--from", "2027-01-01", "--to", "2037-01-03"),
             "at most 10 years"),
            # a year of every minute: too many slots
            (("--policy", '{"kind":"cron","expression":"* * * * *","zone":"UTC"}', "--from",
              "2027-01-01", "--to", "2028-01-01"), "the window holds more than 110,000 slots"),
            # the window backwards
            (("--policy", NEW_YORK_SKIP, "--from", "2027-02-01", "--to", "2027-01-01"),
             "the window ends before it starts"),
            # an outage without its end
            (("--policy", NEW_YORK_SKIP, *MARCH, "--outage", "2027-03-12T00:00"),
             "outage: expected FROM/TO such as 2027-01-10T00:00/2027-01-12T08:00"),
            # an outage backwards
            (("--policy", NEW_YORK_SKIP, *MARCH, "--outage", "2027-03-12/2027-03-11"),
             "outage: '2027-03-12/2027-03-11' ends before it starts"),
            # a pause at a wall time the DST gap skips
            (("--policy", NEW_YORK_SKIP, *MARCH, "--pause", "2027-03-14T02:30/2027-03-15"),
             "does not exist in America/New_York"),
            # a duration without a unit
            (("--policy", NEW_YORK_SKIP, *MARCH, "--duration", "40"),
             "duration: expected 40m (always), 30m-2h (uniform between) or exp:40m"),
            # a fail rate above one
            (("--policy", NEW_YORK_SKIP, *MARCH, "--fail-rate", "2"),
             "fail-rate: expected a probability between 0 and 1"),
            # a fail rate that is no number
            (("--policy", NEW_YORK_SKIP, *MARCH, "--fail-rate", "often"),
             "fail-rate: expected a probability between 0 and 1"),
            # a policy that is not JSON
            (("--policy", "{daily", *MARCH), "policy: not valid JSON"),
            # a policy the engine refuses, in its words
            (("--policy", '{"kind":"daily","time":"24:00","zone":"UTC"}', *MARCH), "time"),
            # two sources
            (("--policy", NEW_YORK_SKIP, "--config", "x.json", *MARCH),
             "give exactly one source: SCHEDULE, --policy JSON or --config FILE "
             "(got --policy and --config)"),
            # no source
            (MARCH, "give exactly one source"),
            # a configuration file that is not there
            (("--config", "no-such-file.json", *MARCH), "config: cannot read"),
            # an unknown zone
            (("--policy", NEW_YORK_SKIP, "--zone", "Mars/Base", *MARCH), "Mars/Base"),
            # a quota of none
            (("--policy", NEW_YORK_SKIP, *MARCH, "--max-passages", "0"),
             "max-passages: expected a whole number of at least 1"),
            # a within of seconds
            (("--policy", NEW_YORK_SKIP, *MARCH, "--within", "90s"),
             "within: expected whole minutes, hours or days"),
        ],
    )  # fmt: skip
    def test_bad_input_exits_2_with_one_clear_line(
        self, args: tuple[str, ...], message: str, tmp_path: Path
    ) -> None:
        done = kalends(*args, cwd=tmp_path)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
        assert message in lines[0]
        assert list(tmp_path.iterdir()) == []  # nothing written where it ran


# --- a schedule's own configuration, on every backend ------------------------------------

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_SERVER": None,
    "KALENDS_TOKEN": None,
    "COLUMNS": "80",
}


def _snapshot(services: Services) -> dict[str, list[tuple[str, ...]]]:
    with services.store.engine.connect() as conn:
        return {
            table.name: sorted(tuple(str(v) for v in row) for row in conn.execute(select(table)))
            for table in metadata.sorted_tables
        }


@pytest.fixture
def world(storage_target: StorageTarget, tmp_path: Path) -> Iterator[tuple[Services, str]]:
    """alice owns "home" and its schedule (New York at 02:30, skip, a quota of 20); vera
    views it; nora is no member."""
    services = open_services(storage_target.url)
    for handle in ("alice", "vera", "nora"):
        services.directory.add_actor(handle, handle.title())
    (tmp_path / "home").mkdir()
    services.workspaces.add("alice", tmp_path / "home", "home")
    services.workspaces.set_member("alice", "home", "vera", "viewer")
    services.grants.grant("alice", "run")
    config = {
        "title": "Night shift",
        "profile": {"command": ["make", "night"], "env": {"TOKEN": "s3cret"}},
        "policy": json.loads(NEW_YORK_SKIP),
        "end": {"maxPassages": 20},
    }
    receipt = services.schedules.create("alice", "home", config, request_id="create-0001")
    try:
        yield services, str(receipt.mission_id)
    finally:
        services.store.close()


class TestASchedule:
    def test_a_viewer_simulates_a_schedule_and_nothing_is_written_to_it(
        self, world: tuple[Services, str], storage_target: StorageTarget
    ) -> None:
        services, sid = world
        before = _snapshot(services)
        result = runner.invoke(
            app,
            ["simulate", sid, *MARCH, "--max-passages", "6", "--json", "--as", "vera",
             "--database", storage_target.url],
            env=CLEAN_ENV,
        )  # fmt: skip
        assert result.exit_code == 0, (result.stdout, result.stderr)
        found = json.loads(result.stdout)
        said = [(r["local"], r["outcome"], r["reason"]) for r in found["items"]]
        assert said == [
            ("2027-03-10T02:30:00", "launched", None),
            ("2027-03-11T02:30:00", "launched", None),
            ("2027-03-12T02:30:00", "launched", None),
            ("2027-03-13T02:30:00", "launched", None),
            ("2027-03-14T02:30:00", "skipped", "dst-gap"),
            ("2027-03-15T02:30:00", "launched", None),
            ("2027-03-16T02:30:00", "launched", None),
            ("2027-03-17T02:30:00", "skipped", "quota"),
        ]
        assert found["missionId"] != sid
        assert _snapshot(services) == before

    @pytest.mark.parametrize(
        ("who", "schedule", "code", "message"),
        [
            # no such schedule
            ("vera", "00000000-0000-0000-0000-000000000000", 1, "no schedule"),
            # not a member of its workspace
            ("nora", None, 1, "no schedule"),
        ],
    )
    def test_a_schedule_the_actor_cannot_see_is_refused(
        self,
        world: tuple[Services, str],
        storage_target: StorageTarget,
        who: str,
        schedule: str | None,
        code: int,
        message: str,
    ) -> None:
        services, sid = world
        before = _snapshot(services)
        result = runner.invoke(
            app,
            ["simulate", schedule or sid, *MARCH, "--as", who, "--database", storage_target.url],
            env=CLEAN_ENV,
        )
        assert result.exit_code == code, (result.stdout, result.stderr)
        assert result.stderr.startswith("error: ") and message in result.stderr.lower()
        assert _snapshot(services) == before


# --- a schedule read from a server --------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Remote, str]]:
    """A running server; its owner's schedule in the served workspace, which bob edits."""
    for remote in serve_workspace(tmp_path_factory, "simulated", Remote):
        services = open_services(remote.database)
        try:
            services.grants.grant(OWNER, "run")
            config = {
                "title": "Night shift",
                "profile": {"command": ["make", "night"]},
                "policy": json.loads(NEW_YORK_SKIP),
            }
            receipt = services.schedules.create(
                OWNER, remote.workspace, config, request_id="create-0001"
            )
        finally:
            services.store.close()
        yield remote, str(receipt.mission_id)


def test_a_schedule_read_from_a_server_simulates_as_it_does_locally(
    served: tuple[Remote, str],
) -> None:
    remote, sid = served
    url = f"sqlite:///{remote.database}"
    before = snapshot_of(url)
    over_http = remote.rjson("simulate", sid, *MARCH, who="bob")
    local = remote.local("simulate", sid, *MARCH, "--json")
    assert local.exit_code == 0, (local.stdout, local.stderr)
    here = json.loads(local.stdout)
    said = [(r["slot"], r["outcome"], r["reason"]) for r in over_http["items"]]
    assert said == [(r["slot"], r["outcome"], r["reason"]) for r in here["items"]]
    assert over_http["counts"]["reasons"] == {"dst-gap": 1}
    assert snapshot_of(url) == before
    missing = remote.remote("simulate", "00000000-0000-0000-0000-000000000000", *MARCH, who="bob")
    assert missing.exit_code == 1 and "no schedule" in missing.stderr
