"""New zone rules move a slot (issue 24 §3), through real ``kalends worker`` processes on
two real sets of zone data, on SQLite and (when reachable) PostgreSQL.

Two zone-data directories are built here: A holds this machine's compiled
``America/New_York`` and its ``tzdata.zi``; B holds ``America/New_York`` compiled by
``zic`` from A's own source with one rule edited (daylight saving time in the United
States from 2007 starts on the last Sunday of March, not the second), and a
``tzdata.zi`` with that edit and the version line ``2099z``. Each process is pointed at
one of them with ``PYTHONTZPATH``.

The workers run on the real clock shifted to Monday 2027-03-15 18:00 UTC (a small
launcher adds an offset to the system clock), the day after A's spring change and two
weeks before B's: a daily 12:00 New York schedule's next slot is Tuesday 12:00, 16:00 UTC
by A and 17:00 UTC by B. A worker on A records the slot; stopped, a worker on B records
the move (the ledger's ``moved`` row with both instants) and sleeps until 17:00; a third
start on B writes nothing new.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from kalends.bootstrap import Services, open_services
from kalends.civil.zone_data import version_of
from kalends.cli.main import app
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.mission_tables import schedule_wakes
from kalends.storage.testing import StorageTarget

T = TypeVar("T")

SYSTEM = Path("/usr/share/zoneinfo")
ZIC = shutil.which("zic") or "/usr/sbin/zic"
DEADLINE = 30.0
"""Seconds a test waits for a worker (process start-up included)."""
NOW = datetime(2027, 3, 15, 18, 0, tzinfo=UTC)
SLOT_A = datetime(2027, 3, 16, 16, 0, tzinfo=UTC)  # 12:00 EDT
SLOT_B = datetime(2027, 3, 16, 17, 0, tzinfo=UTC)  # 12:00 EST
US_SPRING = "R u 2007 ma - Mar Su>=8 2 1 D"
EDITED_SPRING = "R u 2007 ma - Mar lastSu 2 1 D"
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_RUNTIME_DIR": None,
    "COLUMNS": "200",
}
LAUNCHER = textwrap.dedent(
    """\
    import sys
    from datetime import timedelta
    from pathlib import Path

    from kalends import clock

    shift = float(Path(sys.argv[1]).read_text())
    real = clock.SystemClock.now


    def shifted(self):
        return real(self) + timedelta(seconds=shift)


    clock.SystemClock.now = shifted
    sys.argv = ["kalends", *sys.argv[2:]]
    from kalends.cli.entry import main

    main()
    """
)


def wait_until(probe: Callable[[], T | None], what: str, within: float = DEADLINE) -> T:
    end = time.monotonic() + within
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {within} s waiting for {what}")
        time.sleep(0.1)


def _new_york_source(tzdata_zi: str) -> str:
    """The rules and zone lines ``America/New_York`` compiles from, from ``tzdata.zi``."""
    lines: list[str] = []
    in_zone = False
    for line in tzdata_zi.splitlines():
        if line.startswith(("R u ", "R NY ")):
            lines.append(line)
            in_zone = False
        elif line.startswith("Z America/New_York "):
            lines.append(line)
            in_zone = True
        elif in_zone and line[:1] in "-0123456789" and line:
            lines.append(line)
        else:
            in_zone = False
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ZoneData:
    a: Path
    b: Path

    @property
    def version_a(self) -> str:
        return version_of([str(self.a)])

    @property
    def version_b(self) -> str:
        return version_of([str(self.b)])


@pytest.fixture(scope="module")
def zone_data(tmp_path_factory: pytest.TempPathFactory) -> ZoneData:
    zi = SYSTEM / "tzdata.zi"
    if not zi.is_file() or not (SYSTEM / "America" / "New_York").is_file():
        pytest.skip(f"this machine has no zone data in {SYSTEM} to copy (tzdata.zi)")
    if not Path(ZIC).is_file():
        pytest.skip("zic (the zone compiler, Debian's libc-bin) is not installed")
    root = tmp_path_factory.mktemp("zones")
    a, b = root / "A", root / "B"
    (a / "America").mkdir(parents=True)
    shutil.copy(SYSTEM / "America" / "New_York", a / "America" / "New_York")
    shutil.copy(zi, a / "tzdata.zi")

    text = zi.read_text()
    assert text.startswith("# version "), text[:40]
    assert text.count(US_SPRING + "\n") == 1, "the United States rule is not as expected"
    edited = text.replace(US_SPRING + "\n", EDITED_SPRING + "\n")
    source = root / "new_york.zi"
    source.write_text(_new_york_source(edited))
    subprocess.run([ZIC, "-d", str(b), str(source)], check=True, capture_output=True)
    assert (b / "America" / "New_York").is_file()
    rest = edited.split("\n", 1)[1]
    (b / "tzdata.zi").write_text("# version 2099z\n" + rest)
    return ZoneData(a=a, b=b)


@dataclass
class World:
    url: str
    root: Path
    services: Services
    zones: ZoneData

    def cli(self, *args: str, stdin: str | None = None) -> Any:
        return CliRunner().invoke(
            app, [*args, "--as", "alice", "--database", self.url], env=CLEAN_ENV, input=stdin
        )

    def _command(self, zones: Path, *args: str) -> tuple[list[str], dict[str, str]]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
        env["KALENDS_PASSAGE_USER"] = "root"
        env["PYTHONTZPATH"] = str(zones)
        command = [sys.executable, str(self.root / "launcher.py"), str(self.root / "shift"), *args]
        return command, env

    def run(self, zones: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """``kalends ARGS --as alice --database URL`` on the shifted clock, on ``zones``."""
        command, env = self._command(zones, *args, "--as", "alice", "--database", self.url)
        return subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=60, check=False
        )

    def worker(self, zones: Path, owner: str, *more: str) -> subprocess.Popen[bytes]:
        command, env = self._command(
            zones, "worker", "--database", self.url, "--runtime-dir", str(self.root / "runtime"),
            "--transport", "null", "--owner", owner, *more,
        )  # fmt: skip
        with (self.root / f"{owner}.err").open("wb") as err:
            return subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env
            )

    def log(self, owner: str) -> str:
        return (self.root / f"{owner}.err").read_text(errors="replace")

    def stop(self, process: subprocess.Popen[bytes], owner: str) -> None:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail(f"worker {owner} did not stop:\n{self.log(owner)}")
        assert code == 0, self.log(owner)

    def wake(self, sid: str) -> Any:
        w = schedule_wakes.c
        return self.services.store.run(
            lambda conn: conn.execute(
                select(w.owner, w.due_at, w.next_slot_at, w.zone_data).where(
                    w.schedule_id == UUID(sid)
                )
            ).first(),
            write=False,
        )

    def moved(self) -> list[Any]:
        stmt = select(slot_ledger).where(slot_ledger.c.outcome == "moved")
        return list(self.services.store.run(lambda conn: conn.execute(stmt).all(), write=False))


@pytest.fixture
def world(storage_target: StorageTarget, tmp_path: Path, zone_data: ZoneData) -> Iterator[World]:
    services = open_services(storage_target.url)
    services.directory.add_actor("alice", "Alice")
    home = tmp_path / "home"
    home.mkdir()
    services.workspaces.add("alice", home, "home")
    services.grants.grant("alice", "run")
    (tmp_path / "launcher.py").write_text(LAUNCHER)
    (tmp_path / "shift").write_text(repr((NOW - datetime.now(UTC)).total_seconds()))
    try:
        yield World(url=storage_target.url, root=tmp_path, services=services, zones=zone_data)
    finally:
        services.store.close()


def test_a_scheduler_on_new_zone_rules_records_the_moved_slot(world: World) -> None:
    zones = world.zones
    assert zones.version_a != zones.version_b
    config = {
        "title": "Noon report",
        "objective": "Report at noon.",
        "profile": {"command": ["true"], "cwd": "."},
        "policy": {"kind": "daily", "time": "12:00", "zone": "America/New_York"},
    }
    done = world.cli(
        "schedule", "create", "home", "--config", "-", "--json", stdin=json.dumps(config)
    )
    assert done.exit_code == 0, (done.stdout, done.stderr)
    sid = json.loads(done.stdout)["missionId"]
    played = world.run(zones.a, "schedule", "play", sid, "--json")
    assert played.returncode == 0, played.stderr

    # A worker on A: the next slot is Tuesday 12:00 EDT.
    first = world.worker(zones.a, "on-a")
    recorded = wait_until(
        lambda: (w := world.wake(sid)) is not None and w.zone_data == zones.version_a and w,
        "the worker on A to record the next slot",
    )
    assert recorded.next_slot_at == SLOT_A
    world.stop(first, "on-a")
    assert world.moved() == []

    # A worker on B: the same slot is 12:00 EST, an hour later; the move is recorded.
    second = world.worker(zones.b, "on-b")
    (row,) = wait_until(world.moved, "the worker on B to record the moved slot")
    assert (row.slot_key, row.slot_at, row.other_at) == (
        "moved:2027-03-16T17:00:00Z", SLOT_B, SLOT_A,
    )  # fmt: skip
    assert (row.outcome, row.reason, row.local, row.zone) == (
        "moved", "zone-rules-changed", "2027-03-16T12:00:00", "America/New_York",
    )  # fmt: skip
    name_a = zones.version_a.rsplit("-", 1)[0]
    assert row.detail == (
        f"new zone rules ({name_a} → 2099z) moved this slot from 2027-03-16 11:00 to "
        "2027-03-16 12:00 America/New_York time "
        "(from 2027-03-16T16:00:00Z to 2027-03-16T17:00:00Z)"
    )
    slept = wait_until(
        lambda: (w := world.wake(sid)) is not None and w.due_at > row.decided_at and w,
        "the worker on B to look again and sleep",
    )
    assert (slept.next_slot_at, slept.zone_data) == (SLOT_B, zones.version_b)
    world.stop(second, "on-b")

    # The detail read shows it, as JSON and to a person.
    shown = world.cli("schedule", "show", sid, "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["zoneChanges"] == [
        {
            "slot": "2027-03-16T17:00:00Z",
            "local": "2027-03-16T12:00:00",
            "zone": "America/New_York",
            "otherAt": "2027-03-16T16:00:00Z",
            "detail": row.detail,
        }
    ]
    person = world.cli("schedule", "show", sid)
    assert person.exit_code == 0, person.stderr
    assert "zone rules changed" in person.stdout
    assert "moved this slot from 2027-03-16 11:00 to" in person.stdout

    # A third start on B (one round, then exit) writes nothing new.
    before = world.wake(sid)
    third = world.worker(zones.b, "again", "--once")
    assert third.wait(timeout=60) == 0, world.log("again")
    assert world.moved() == [row]
    after = world.wake(sid)
    assert (after.next_slot_at, after.zone_data) == (before.next_slot_at, before.zone_data)
