"""`kalends schedule ls|show` and `kalends passage ls` as a person reads them: a schedule
with nothing left to launch shows as finished (with the bound that ended it) in the list,
the detail and their JSON, and at 80 columns the tables fit, with every ID whole; --wide
shows every column; --json does not depend on the width.

In-process (CliRunner) on SQLite and (when reachable) PostgreSQL. The scheduler runs here
on a fake clock that starts now, over an instant in-memory runtime, and is released
before the CLI reads, so no live scheduler holds anything.
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.cli.schedules import detail_view
from kalends.clock import FakeClock
from kalends.missions.document import manual_identity
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.testing import StorageTarget

runner = CliRunner()
ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": "alice",
    "KALENDS_DATABASE_URL": None,
    "KALENDS_RUNTIME_DIR": None,
    "KALENDS_SERVER": None,
}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PASSAGE_ID = re.compile(r"psg_[0-9a-f]{26}")  # as the scheduler and Run now make them
SESSION_ID = re.compile(r"ses_[0-9a-f]{26}")


@dataclass
class World:
    url: str
    root: Path
    services: Services
    ids: dict[str, str]

    def out(self, *args: str, columns: int = 80) -> str:
        result = runner.invoke(
            app, [*args, "--database", self.url], env={**ENV, "COLUMNS": str(columns)}
        )
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result.stdout

    def json(self, *args: str, columns: int = 80) -> Any:
        return json.loads(self.out(*args, "--json", columns=columns))


def _fits(text: str, columns: int) -> None:
    long = [line for line in text.splitlines() if len(line) > columns]
    assert not long, f"wider than {columns} columns:\n" + "\n".join(long)


@pytest.fixture
def world(storage_target: StorageTarget, tmp_path: Path) -> Iterator[World]:
    """alice's workspace ``home`` with three played schedules: ``Quick`` (--immediate) and
    ``Twice`` (every minute, at most two passages), both run to their end, and
    ``Morning report`` (daily), which still has slots."""
    clock = FakeClock(datetime.now(UTC))
    services = open_services(storage_target.url, clock=clock)
    try:
        services.directory.add_actor("alice", "Alice")
        (tmp_path / "home").mkdir()
        services.workspaces.add("alice", tmp_path / "home", "home")
        services.grants.grant("alice", "run")
        ids: dict[str, str] = {}
        for n, (title, policy, end) in enumerate(
            [
                ("Quick", {"kind": "immediate"}, None),
                ("Twice", {"kind": "cron", "expression": "* * * * *", "zone": "UTC"},
                 {"maxPassages": 2}),
                ("Morning report", {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
                 None),
            ]
        ):  # fmt: skip
            config: dict[str, Any] = {"title": title, "profile": {"command": ["true"]}}
            config |= {"policy": policy} | ({"end": end} if end else {})
            receipt = services.schedules.create(
                "alice", "home", config, request_id=f"create-{n:04d}"
            )
            sid = ids[title] = str(receipt.mission_id)
            services.schedules.play("alice", sid, request_id=f"play-{n:05d}", expected_revision=1)
        scheduler = Scheduler(services.store, MemoryRuntime(clock=clock, instant=True), owner="t")
        for _ in range(10):  # five minutes: two minute slots, each launched and archived
            scheduler.run_once()
            clock.advance(timedelta(seconds=30))
        scheduler.release()
        yield World(storage_target.url, tmp_path, services, ids)
    finally:
        services.store.close()


class TestFinished:
    def test_show_names_the_bound_that_ended_each_schedule(self, world: World) -> None:
        quick, twice, daily = (world.ids[t] for t in ("Quick", "Twice", "Morning report"))
        text = world.out("schedule", "show", quick)
        assert re.search(r"state\s+finished — one-shot done: its single passage is used", text)
        text = world.out("schedule", "show", twice)
        # (the grid wraps the sentence at 80 columns)
        said = (
            f"finished — quota used up: all 2 passage(s) launched; `kalends schedule edit "
            f"{twice} --max-passages N` with a larger N goes on"
        )
        assert re.search(r"state\s+" + r"\s+".join(map(re.escape, said.split())), text)
        assert re.search(r"blocked\s+quota-exhausted", text)
        # Only the one with slots left is Interrupted: no scheduler holds it.
        text = world.out("schedule", "show", daily)
        assert re.search(r"state\s+running \(desired\) — Interrupted: no scheduler holds it", text)

    def test_the_json_reads_say_the_same(self, world: World) -> None:
        expected = {
            "Quick": ("running", "finished", "one-shot-done", "quota-exhausted"),
            "Twice": ("running", "finished", "quota-exhausted", "quota-exhausted"),
            "Morning report": ("running", "interrupted", "no-scheduler", None),
        }
        keys = ("state", "displayState", "displayReason", "blockReason")
        for title, sid in world.ids.items():
            doc = world.json("schedule", "show", sid)
            assert tuple(doc[k] for k in keys) == expected[title], title
        items = world.json("schedule", "ls", "home")["items"]
        assert {i["title"]: tuple(i[k] for k in keys) for i in items} == expected

    def test_ls_shows_the_state_that_holds_in_either_layout(self, world: World) -> None:
        quick, twice, daily = (world.ids[t] for t in ("Quick", "Twice", "Morning report"))
        full = world.out("schedule", "ls", "home", columns=200)
        assert re.search(rf"{quick}\s+Quick\s+finished \(one-shot done\)\s+—\s+1/1/1\s+\d+", full)
        assert re.search(rf"{twice}\s+Twice\s+finished \(quota used up\)\s+—\s+2/2/2", full)
        assert re.search(
            rf"{daily}\s+Morning report\s+interrupted \(no scheduler\)\s+\d{{4}}-\d\d-\d\d "
            r"09:00 \w{3} Europe/Berlin\s+0/0/0",
            full,
        )
        compact = world.out("schedule", "ls", "home")
        assert re.search(rf"Quick\s+finished\s+—\s*\n\s+{quick}\s+one-shot done", compact)
        assert re.search(rf"Twice\s+finished\s+—\s*\n\s+{twice}\s+quota used up", compact)
        assert re.search(
            rf"Morning report\s+interrupted\s+\d{{4}}-\d\d-\d\d 09:00 \w{{3}}\s*\n"
            rf"\s+{daily}\s+no scheduler\s+Europe/Berlin",
            compact,
        )


class TestEightyColumns:
    @pytest.mark.parametrize("columns", [80, 60])  # the usual terminal; a narrow one
    def test_schedule_ls_fits_and_keeps_every_id_whole(self, world: World, columns: int) -> None:
        text = world.out("schedule", "ls", "home", columns=columns)
        _fits(text, columns)
        assert sorted(UUID.findall(text)) == sorted(world.ids.values())
        assert "…" not in text
        assert "--wide: runs and revisions too" in text

    @pytest.mark.parametrize("columns", [80, 60])
    def test_schedule_show_fits_and_keeps_every_passage_id_whole(
        self, world: World, columns: int
    ) -> None:
        twice = world.ids["Twice"]
        text = world.out("schedule", "show", twice, columns=columns)
        _fits(text, columns)
        results = world.json("schedule", "show", twice)["results"]
        assert len(results) == 2
        assert PASSAGE_ID.findall(text) == [r["passageId"] for r in results]
        assert "history (newest first), times in UTC" in text
        assert twice in text and "…" not in text
        if columns == 80:  # a slot over its settlement (the passage's summary is empty)
            slot, settled = (results[0][k][:16].replace("T", " ") for k in ("slot", "settledAt"))
            assert re.search(
                rf"{slot}\s+completed\s+{results[0]['passageId']}\s*\n\s+{settled}\S*\s*\n",
                text,
            )

    def test_a_long_outcome_and_summary_wrap_beside_a_whole_passage_id(self, world: World) -> None:
        doc = world.json("schedule", "show", world.ids["Twice"])
        summary = " ".join(f"word{i}" for i in range(60))
        doc["results"] = [
            {"passageId": f"psg_{n:026d}", "trigger": "manual", "slot": None,
             "outcome": "ended-without-report", "reason": "interrupted", "summary": summary,
             "settledAt": "2030-06-30T07:05:09Z"}
            for n in range(3)
        ]  # fmt: skip
        out = Console(width=80, record=True, file=io.StringIO())
        out.print(detail_view(doc), soft_wrap=True)
        text = out.export_text()
        _fits(text, 80)
        assert PASSAGE_ID.findall(text) == [f"psg_{n:026d}" for n in range(3)]
        assert re.search(r"run now\s+ended-without-report\s+psg_0{26}\s*\n", text)
        assert re.findall(r"word\d+", text) == summary.split() * 3

    def test_wide_shows_every_column_however_wide(self, world: World) -> None:
        listing = world.out("schedule", "ls", "home", "--wide")
        assert re.search(r"id\s+title\s+state\s+next slot\s+runs\s+rev", listing)
        assert re.search(rf"{world.ids['Twice']}\s+Twice\s+finished \(quota used up\)", listing)
        assert max(len(line) for line in listing.splitlines()) > 80
        shown = world.out("schedule", "show", world.ids["Twice"], "--wide")
        assert re.search(r"settled\s+trigger\s+slot\s+outcome\s+summary\s+passage", shown)
        assert re.search(
            r"UTC\s+scheduled\s+\d{4}-\d\d-\d\d \d\d:\d\d \w{3} UTC\s+completed", shown
        )

    def test_json_does_not_depend_on_the_width(self, world: World) -> None:
        twice = world.ids["Twice"]
        for args in (("schedule", "ls", "home"), ("schedule", "show", twice)):
            narrow = world.json(*args, columns=80)
            assert world.json(*args, columns=200) == narrow
            assert world.json(*args, "--wide", columns=80) == narrow


# Ends at once, after printing.
HELLO = "print('hello')"


@pytest.fixture
def runtime_dir(tmp_path: Path) -> Path:
    """A runtime directory holding two settled passages with IDs as the scheduler makes them."""
    (tmp_path / "ws").mkdir()
    runtime = ProcessRuntime(tmp_path / "runtime", grace=1.0)
    for n in range(2):
        passage, session, message = manual_identity("0" * 8, f"request-{n:04d}")
        runtime.start(
            PassageStart(
                passage_id=passage,
                session_id=session,
                message_id=message,
                schedule_id="00000000-0000-7000-8000-000000000001",
                workspace=str(tmp_path / "ws"),
                command=(sys.executable, "-c", HELLO),
            )
        )
        deadline = time.monotonic() + 30
        while not runtime.observe(session).settled:
            assert time.monotonic() < deadline, "the passage did not settle"
            time.sleep(0.05)
    return tmp_path / "runtime"


def _passages(runtime_dir: Path, *args: str, columns: int = 80) -> str:
    result = runner.invoke(
        app,
        ["passage", "ls", "--runtime-dir", str(runtime_dir), *args],
        env={**ENV, "COLUMNS": str(columns)},
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


class TestPassageList:
    def test_at_80_columns_it_fits_with_every_passage_id_whole(self, runtime_dir: Path) -> None:
        items = json.loads(_passages(runtime_dir, "--json"))["items"]
        text = _passages(runtime_dir)
        _fits(text, 80)
        assert PASSAGE_ID.findall(text) == [i["passageId"] for i in items]
        assert re.search(r"admitted\s+passage\s+status", text)
        assert SESSION_ID.search(text) is None and "--wide: session IDs too" in text
        assert len(re.findall(r"exited 0", text)) == 2

    def test_wide_and_wide_terminals_show_the_session_too(self, runtime_dir: Path) -> None:
        items = json.loads(_passages(runtime_dir, "--json"))["items"]
        for text in (_passages(runtime_dir, "--wide"), _passages(runtime_dir, columns=200)):
            assert re.search(r"admitted\s+passage\s+session\s+status\s+report", text)
            for i in items:
                assert re.search(rf"{i['passageId']}\s+{i['sessionId']}\s+exited 0\s+—", text)

    def test_json_does_not_depend_on_the_width(self, runtime_dir: Path) -> None:
        narrow = json.loads(_passages(runtime_dir, "--json"))
        assert json.loads(_passages(runtime_dir, "--json", columns=200)) == narrow
        assert json.loads(_passages(runtime_dir, "--json", "--wide")) == narrow
