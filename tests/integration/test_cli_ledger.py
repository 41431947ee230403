"""`kalends schedule ledger` and `kalends schedule why` (issue 24 §1 "Reads"), driven as a
user drives them: in-process (CliRunner) in local mode on SQLite and (when reachable)
PostgreSQL, as a real process, and against a real `kalends serve`, where they print what
local mode prints. The ledger's rows are written in 2027 with the writer's own
:func:`~kalends.missions.ledger_writes.record`, so no answer depends on today's date.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4
from zoneinfo import ZoneInfo

import pytest
from cli_support import Local, Remote, local_home, serve_workspace
from rich.cells import cell_len

from kalends.bootstrap import Services, open_services
from kalends.missions.ledger import Entry, Outcome, Reason
from kalends.missions.ledger_writes import record
from kalends.storage.testing import StorageTarget
from missions.conftest import daily_config

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
COUNTS = "launched 2, coalesced 2, skipped 1, moved 0; reasons: dst-gap 1, no-scheduler 2"


def _at(d: int, hh: int = 9, mm: int = 0) -> datetime:
    return datetime(2027, 5, d, hh, mm, tzinfo=BERLIN).astimezone(UTC)


def _row(d: int, outcome: Outcome, reason: Reason | None = None, **more: Any) -> Entry:
    at = _at(d)
    return Entry(
        key=more.pop("key", at.isoformat().replace("+00:00", "Z")),
        at=at,
        local=more.pop("local", f"2027-05-{d:02d}T09:00:00"),
        zone="Europe/Berlin",
        outcome=outcome,
        reason=reason,
        **more,
    )


ROWS = [
    _row(1, Outcome.LAUNCHED, passage_id="psg_0123456789abcdef0123456789"),
    _row(
        2,
        Outcome.COALESCED,
        Reason.NO_SCHEDULER,
        passage_id="psg_fedcba9876543210fedcba9876",
        detail="no live scheduler held the schedule's wake at its time (an outage)",
    ),
    _row(
        3,
        Outcome.COALESCED,
        Reason.NO_SCHEDULER,
        passage_id="psg_fedcba9876543210fedcba9876",
        detail="no live scheduler held the schedule's wake at its time (an outage)",
    ),
    _row(4, Outcome.LAUNCHED, passage_id="psg_fedcba9876543210fedcba9876"),
    # A wall time that did not exist, as the writer keys it (its instant: the gap's end).
    _row(
        5,
        Outcome.SKIPPED,
        Reason.DST_GAP,
        key="missing:2027-05-05T02:30:00@Europe/Berlin",
        local="2027-05-05T02:30:00",
        detail="02:30 does not exist in Europe/Berlin on 2027-05-05 (a test's own row)",
    ),
]


def _schedule(services: Services, workspace: str, actor: str) -> str:
    services.grants.grant(actor, "run")
    receipt = services.schedules.create(
        actor, UUID(workspace), daily_config(), request_id="create-ledger-1"
    )
    sid = receipt.mission_id
    assert sid is not None
    services.store.run(lambda conn: record(conn, [(sid, e) for e in ROWS], _at(6, 12)))
    return str(sid)


@pytest.fixture
def local(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Local]:
    yield from local_home(storage_target, tmp_path)


@pytest.fixture
def mission(local: Local) -> str:
    return _schedule(local.services, local.workspace, "alice")


class TestLedger:
    def test_json_is_the_services_answer(self, local: Local, mission: str) -> None:
        shown = local.json("schedule", "ledger", mission, actor="carol")
        assert shown == local.services.schedules.ledger("carol", mission)
        assert [i["outcome"] for i in shown["items"]] == [
            "launched",
            "coalesced",
            "coalesced",
            "launched",
            "skipped",
        ]
        assert shown["nextAfter"] is None and shown["zone"] == "Europe/Berlin"

    def test_the_table_fits_80_columns_and_ends_with_the_counts(
        self, local: Local, mission: str
    ) -> None:
        out = local.ok("schedule", "ledger", mission, actor="carol").stdout
        lines = out.rstrip("\n").splitlines()
        assert max(cell_len(line) for line in lines) <= 80, out
        assert "slot ledger, wall times in Europe/Berlin" in out
        assert lines[-1] == COUNTS
        # IDs are never cut: each passage ID is whole on a line of its own.
        assert "psg_fedcba9876543210fedcba9876" in out
        assert "…" not in out
        for word in ("2027-05-02 09:00", "coalesced", "no-scheduler", "2027-05-05 02:30"):
            assert word in out
        wide = local.ok("schedule", "ledger", mission, "--wide", actor="carol").stdout
        header = next(line for line in wide.splitlines() if "local time" in line)
        assert header.split() == ["local", "time", "outcome", "reason", "passage", "detail"]

    def test_from_and_to_are_dates_or_wall_times_of_the_schedules_zone(
        self, local: Local, mission: str
    ) -> None:
        days = local.json(
            "schedule", "ledger", mission, "--from", "2027-05-02", "--to", "2027-05-03"
        )
        assert (days["from"], days["to"]) == ("2027-05-01T22:00:00Z", "2027-05-03T22:00:00Z")
        assert [i["local"][:10] for i in days["items"]] == ["2027-05-02", "2027-05-03"]
        assert days["counts"]["coalesced"] == 2 and days["counts"]["launched"] == 0
        # --to with a wall time includes it.
        upto = local.json("schedule", "ledger", mission, "--to", "2027-05-02T09:00")
        assert [i["local"][:10] for i in upto["items"]] == ["2027-05-01", "2027-05-02"]
        # In New York's zone, 03:00 there is 09:00 in Berlin.
        there = local.json(
            "schedule",
            "ledger",
            mission,
            "--from",
            "2027-05-04T03:00",
            "--zone",
            "America/New_York",
        )
        assert there["from"] == "2027-05-04T07:00:00Z"
        assert [i["local"][:10] for i in there["items"]] == ["2027-05-04", "2027-05-05"]

    def test_pages_follow_the_cursor_and_all_follows_every_page(
        self, local: Local, mission: str
    ) -> None:
        first = local.ok("schedule", "ledger", mission, "--limit", "2").stdout
        assert f"more: kalends schedule ledger {mission} --after " in first
        page = local.json("schedule", "ledger", mission, "--limit", "2")
        assert len(page["items"]) == 2 and page["nextAfter"] is not None
        # The counts are the window's, whatever the page.
        assert page["counts"]["launched"] == 2
        rest = local.json(
            "schedule", "ledger", mission, "--limit", "2", "--after", page["nextAfter"]
        )
        assert rest["items"][0]["local"] == "2027-05-03T09:00:00"
        every = local.json("schedule", "ledger", mission, "--limit", "2", "--all")
        assert every["items"] == local.json("schedule", "ledger", mission)["items"]
        assert every["nextAfter"] is None
        table = local.ok("schedule", "ledger", mission, "--limit", "2", "--all").stdout
        assert "more:" not in table and table.rstrip().endswith(COUNTS)

    @pytest.mark.parametrize(
        ("args", "field", "words"),
        [
            # More than ten years.
            (["--from", "2010-01-01", "--to", "2027-01-01"], "to", "at most 10 years"),
            # Backwards.
            (["--from", "2027-05-04", "--to", "2027-05-01"], "from", "after it ends"),
            # Not a date nor a wall time.
            (["--from", "last tuesday"], "from", "expected a date YYYY-MM-DD"),
            (["--to", "2027-02-30"], "to", "not a calendar date"),
            (["--from", "2027-05-02T25:00"], "from", "not a valid date and time"),
            # Outside the civil engine's years.
            (["--to", "9999-12-31"], "to", "outside the dates slots are computed for"),
            # An unknown zone.
            (["--from", "2027-05-01", "--zone", "Mars/Olympus"], "zone", ""),
            # Page sizes and cursors.
            (["--limit", "0"], "limit", "1-1000"),
            (["--limit", "many"], "limit", "whole number"),
            (["--after", "garbage"], "after", "not a ledger cursor"),
        ],
    )
    def test_bad_input_exits_2_with_a_clear_error_and_writes_nothing(
        self, local: Local, mission: str, args: list[str], field: str, words: str
    ) -> None:
        error = local.refused(2, "schedule", "ledger", mission, *args, actor="carol")
        assert error["details"]["field"] == field
        assert words in error["message"]

    def test_an_unknown_schedule_exits_1_and_a_stranger_sees_none(
        self, local: Local, mission: str
    ) -> None:
        unknown = local.refused(1, "schedule", "ledger", str(uuid4()))
        assert unknown["code"] == "not-found" and "no schedule" in unknown["message"]
        stranger = local.refused(1, "schedule", "ledger", mission, actor="dave")
        assert stranger["code"] == "not-found"
        not_an_id = local.refused(2, "schedule", "ledger", "not-a-schedule")
        assert "not a mission ID" in not_an_id["message"]


class TestWhy:
    def test_it_prints_the_sentence_and_the_row(self, local: Local, mission: str) -> None:
        out = local.ok("schedule", "why", mission, "--at", "2027-05-02T09:00", actor="carol").stdout
        assert " ".join(out.split()).startswith(
            "The slot at 2027-05-02 09:00:00 Europe/Berlin was not launched on its own: no "
            "scheduler was running at its time"
        )
        assert "psg_fedcba9876543210fedcba9876" in out
        assert "coalesced, no-scheduler" in out
        assert max(cell_len(line) for line in out.splitlines()) <= 80
        shown = local.json("schedule", "why", mission, "--at", "2027-05-02T09:00")
        assert shown == local.services.schedules.why("alice", mission, "2027-05-02T09:00")
        assert shown["verdict"] == "coalesced"

    def test_a_missing_wall_time_and_another_zone(self, local: Local, mission: str) -> None:
        gap = local.json("schedule", "why", mission, "--at", "2027-05-05T02:30")
        assert (gap["verdict"], gap["row"]["reason"]) == ("skipped", "dst-gap")
        there = local.json(
            "schedule", "why", mission, "--at", "2027-05-01T03:00", "--zone", "America/New_York"
        )
        assert (there["verdict"], there["instant"]) == ("launched", "2027-05-01T07:00:00Z")
        nothing = local.ok("schedule", "why", mission, "--at", "2027-05-01T09:17").stdout
        assert "is not a slot of this schedule's policy" in nothing
        assert "2027-05-01 09:00:00 Europe/Berlin" in nothing

    @pytest.mark.parametrize(
        ("at", "words"),
        [
            # A date alone: the hint names a wall time to give.
            ("2027-05-02", "a date alone names no slot; give a wall time such as 2027-05-02T09:00"),
            # Malformed.
            ("9am", "expected a local wall time YYYY-MM-DDTHH:MM"),
            ("2027-05-02T09:00+02:00", "expected a local wall time"),
            ("2027-05-02T25:00", "not a time of day"),
        ],
    )
    def test_a_malformed_at_exits_2_with_a_clear_error(
        self, local: Local, mission: str, at: str, words: str
    ) -> None:
        error = local.refused(2, "schedule", "why", mission, "--at", at, actor="carol")
        assert error["details"]["field"] == "at"
        assert words in error["message"]

    def test_an_unknown_schedule_or_zone_is_refused(self, local: Local, mission: str) -> None:
        unknown = local.refused(1, "schedule", "why", str(uuid4()), "--at", "2027-05-02T09:00")
        assert unknown["code"] == "not-found"
        zone = local.refused(
            2, "schedule", "why", mission, "--at", "2027-05-02T09:00", "--zone", "Nowhere/Land"
        )
        assert zone["details"]["field"] == "zone"

    def test_at_is_required(self, local: Local, mission: str) -> None:
        result = local.invoke("schedule", "why", mission)
        assert result.exit_code == 2
        assert "--at" in result.stderr


def test_both_commands_as_a_real_process_at_80_columns(
    storage_target: StorageTarget, tmp_path: Path
) -> None:
    for found in local_home(storage_target, tmp_path):
        mission = _schedule(found.services, found.workspace, "alice")
        env = {**os.environ, "COLUMNS": "80"}
        for name in ("KALENDS_ACTOR", "KALENDS_DATABASE_URL", "KALENDS_SERVER", "KALENDS_TOKEN"):
            env.pop(name, None)
        command = [sys.executable, "-m", "kalends", "schedule"]
        common = ["--database", found.url, "--as", "carol"]

        def run(
            *args: str,
            command: list[str] = command,
            common: list[str] = common,
            env: dict[str, str] = env,
        ) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*command, *args, *common],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )

        table = run("ledger", mission)
        assert table.returncode == 0, table.stderr
        assert table.stdout.rstrip().splitlines()[-1] == COUNTS
        assert max(cell_len(line) for line in table.stdout.splitlines()) <= 80
        why = run("why", mission, "--at", "2027-05-03T09:00", "--json")
        assert why.returncode == 0, why.stderr
        assert json.loads(why.stdout)["verdict"] == "coalesced"
        bad = run("why", mission, "--at", "2027-05-03")
        assert bad.returncode == 2
        assert bad.stderr.strip().startswith("error: at: a date alone names no slot")
        long = run("ledger", mission, "--from", "2000-01-01", "--to", "2027-01-01")
        assert long.returncode == 2 and "at most 10 years" in long.stderr
        unknown = run("ledger", str(uuid4()))
        assert unknown.returncode == 1 and "no schedule" in unknown.stderr


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    yield from serve_workspace(tmp_path_factory, "ledger", Remote)


def test_on_a_server_both_print_what_local_mode_prints(remote: Remote) -> None:
    services = open_services(remote.database)
    try:
        mission = _schedule(services, remote.workspace, "olivia")
    finally:
        services.store.close()
    page = remote.same("schedule", "ledger", mission, "--from", "2027-05-02", "--to", "2027-05-04")
    assert [i["local"][:10] for i in page["items"]] == ["2027-05-02", "2027-05-03", "2027-05-04"]
    every = remote.same("schedule", "ledger", mission, "--limit", "2", "--all")
    assert len(every["items"]) == 5
    why = remote.same("schedule", "why", mission, "--at", "2027-05-03T09:00")
    assert why["verdict"] == "coalesced"
    remote.refused_alike(2, "schedule", "why", mission, "--at", "2027-05-03")
    remote.refused_alike(
        2, "schedule", "ledger", mission, "--from", "1990-01-01", "--to", "2027-01-01"
    )
    remote.refused_alike(1, "schedule", "why", str(uuid4()), "--at", "2027-05-03T09:00")
