"""Source conditions gate a schedule's slots, through real ``kalends worker`` processes.

A real git repository (and real files) in the workspace, commits made by the test, a real
``kalends worker`` running real passages under the process runtime, on SQLite and (when
reachable) PostgreSQL. Slots come every 15 minutes at the soonest (an ``every`` policy
or the event-only ``on-change`` one), daily for a daily calendar, so the worker runs
on a shifted wall clock: it is
started through a small launcher that adds to the system clock the offset written in a
file, and the test moves that offset forward to each slot, then wakes the worker the
way another process's write does (a commit it sees on SQLite, a notification on
PostgreSQL). Everything else is the real thing: the worker's scheduler loop, its reads
of the source in worker threads, the passages' commands and their reports.

Each passage's command ``passage.py TAG`` writes one JSON line to ``passages.jsonl`` in
the workspace (its passage ID, slot and the proof from its input file) and reports the
outcome named in ``TAG.outcome`` (``completed`` when there is none).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy.engine import Connection
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.missions.wakes import MISSIONS_CHANNEL
from kalends.storage.testing import StorageTarget
from kalends.storage.wake import notify
from missions.condition_support import Repo

T = TypeVar("T")

DEADLINE = 45.0
"""Seconds a test waits for anything the worker does (process start-up included)."""
CHECKS = timedelta(minutes=15)
"""The cadence of both policies here: ``every`` 15 minutes, and ``on-change`` checks."""
EVERY = {"kind": "every", "minutes": 15}
DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}
ON_CHANGE = {"kind": "on-change"}
GIT = {"kind": "git-branch", "branch": "main", "path": "app"}
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

    shift = Path(sys.argv[1])
    real = clock.SystemClock.now


    def shifted(self):
        return real(self) + timedelta(seconds=float(shift.read_text()))


    clock.SystemClock.now = shifted
    sys.argv = ["kalends", *sys.argv[2:]]
    from kalends.cli.entry import main

    main()
    """
)

PASSAGE = textwrap.dedent(
    """\
    import json, os, subprocess, sys
    from pathlib import Path

    tag = sys.argv[1]
    doc = json.loads(Path(os.environ["KALENDS_INPUT_FILE"]).read_text())
    said = Path(tag + ".outcome")
    outcome = said.read_text().strip() if said.exists() else "completed"
    line = {"tag": tag, "passageId": doc["passageId"], "slot": doc.get("slot"),
            "proof": doc.get("proof"), "outcome": outcome}
    with open("passages.jsonl", "a") as journal:
        journal.write(json.dumps(line) + "\\n")
    subprocess.run(
        [sys.executable, "-m", "kalends", "report", outcome, "--summary", tag + " " + outcome],
        check=True,
    )
    """
)


def wait_until(probe: Callable[[], T | None], what: str, within: float = DEADLINE) -> T:
    """``probe()`` once it is truthy; fails the test at the deadline."""
    end = time.monotonic() + within
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {within} s waiting for {what}")
        time.sleep(0.05)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class World:
    """alice's workspace ``home`` on a database, a shifted clock the workers run on, and
    the workers the test started."""

    url: str
    root: Path
    services: Services
    home: Path
    shift: Path
    offset: float = 0.0
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    nudges: int = 0

    # --- the CLI, in-process on the real clock (used before the clock is shifted) -----

    def cli(self, *args: str, stdin: str | None = None) -> Result:
        return CliRunner().invoke(
            app, [*args, "--as", "alice", "--database", self.url], env=CLEAN_ENV, input=stdin
        )

    def create(self, title: str, policy: dict[str, Any], **fields: Any) -> str:
        """A paused schedule made with ``kalends schedule create``; its ID."""
        config = {
            "title": title,
            "objective": f"Act on {title}.",
            "profile": {"command": [sys.executable, "passage.py", title], "cwd": "."},
            "policy": policy,
            **fields,
        }
        done = self.cli(
            "schedule", "create", "home", "--config", "-", "--json", stdin=json.dumps(config)
        )
        assert done.exit_code == 0, (done.stdout, done.stderr)
        sid: str = json.loads(done.stdout)["missionId"]
        return sid

    def play(self, sid: str) -> None:
        assert self.offset == 0.0, "controls run on the real clock: play before any shift"
        done = self.cli("schedule", "play", sid, "--json")
        assert done.exit_code == 0, (done.stdout, done.stderr)

    def detail(self, sid: str) -> dict[str, Any]:
        return self.services.schedules.detail("alice", sid)

    def show(self, sid: str) -> dict[str, Any]:
        """The detail read through ``kalends schedule show ID --json``."""
        done = self.cli("schedule", "show", sid, "--json")
        assert done.exit_code == 0, (done.stdout, done.stderr)
        shown: dict[str, Any] = json.loads(done.stdout)
        return shown

    # --- the worker and its clock --------------------------------------------------------

    def start_worker(self, owner: str = "w1") -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
        env["KALENDS_PASSAGE_USER"] = "root"  # as root: passages run as the worker's user
        with (self.root / f"{owner}.err").open("wb") as err:
            process = subprocess.Popen(
                [
                    sys.executable,
                    str(self.root / "launcher.py"),
                    str(self.shift),
                    "worker",
                    "--database",
                    self.url,
                    "--runtime-dir",
                    str(self.root / "runtime"),
                    "--transport",
                    "null",
                    "--owner",
                    owner,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        self.workers[owner] = process
        return process

    def log(self, owner: str = "w1") -> str:
        return (self.root / f"{owner}.err").read_text(errors="replace")

    def alive(self) -> None:
        """Fails the test when a worker it started has exited."""
        for owner, process in self.workers.items():
            if process.poll() is not None:
                pytest.fail(f"worker {owner} exited ({process.returncode}):\n{self.log(owner)}")

    def jump_to(self, at: datetime) -> None:
        """Moves the workers' clock forward to ``at`` and wakes them."""
        offset = (at - datetime.now(UTC)).total_seconds()
        assert offset > self.offset, "the shifted clock only moves forward here"
        self.set_offset(offset)

    def advance(self, seconds: float) -> None:
        self.set_offset(self.offset + seconds)

    def set_offset(self, offset: float) -> None:
        self.offset = offset
        tmp = self.shift.with_suffix(".tmp")
        tmp.write_text(repr(offset))
        tmp.replace(self.shift)
        self.wake()

    def wake(self) -> None:
        """What another process's write does: a commit a SQLite worker sees (it watches
        ``data_version``), a notification on the missions channel on PostgreSQL."""
        self.nudges += 1

        def write(conn: Connection) -> None:
            if conn.dialect.name == "postgresql":
                notify(conn, MISSIONS_CHANNEL)
            else:
                conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS clock_nudges (n INTEGER)")
                conn.exec_driver_sql(f"INSERT INTO clock_nudges VALUES ({self.nudges})")

        self.services.store.run(write)  # (retried while another writer holds SQLite)

    def close(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    # --- what the passages left -----------------------------------------------------------

    def passages(self, tag: str | None = None) -> list[dict[str, Any]]:
        path = self.home / "passages.jsonl"
        if not path.exists():
            return []
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [line for line in lines if tag is None or line["tag"] == tag]

    def say(self, tag: str, outcome: str) -> None:
        """The outcome the next passages of ``tag`` report."""
        (self.home / f"{tag}.outcome").write_text(outcome)

    # --- slots ------------------------------------------------------------------------------

    def next_slot(self, sid: str) -> datetime:
        due = self.detail(sid)["nextDueAt"]
        assert isinstance(due, str), self.detail(sid)
        return instant(due)

    def to_slot(self, sid: str, *others: str) -> datetime:
        """Moves the clock just past the next slot of ``sid`` and of ``others`` (due within
        the same second or so) and waits until each conditioned one has decided it;
        returns ``sid``'s slot."""
        slot = self.next_slot(sid)
        slots = [slot, *(self.next_slot(other) for other in others)]
        assert max(slots) - min(slots) < timedelta(seconds=5), slots
        self.jump_to(max(slots) + timedelta(seconds=1))
        for one, at in zip((sid, *others), slots, strict=True):
            if self.detail(one)["condition"] is not None:
                self.decided(one, at)
        return slot

    def decided(self, sid: str, slot: datetime) -> dict[str, Any]:
        """Waits until ``sid``'s ``slot`` was skipped or launched; its newest slot record."""

        def probe() -> dict[str, Any] | None:
            self.alive()
            last = (self.detail(sid)["source"] or {}).get("lastSlot")
            if last is None or instant(last["slot"]) != slot or last["outcome"] == "blocked":
                return None
            return dict(last)

        return wait_until(probe, f"slot {slot} of {sid} to be decided")

    def settled(self, sid: str, passage: dict[str, Any] | None = None) -> dict[str, Any]:
        """Waits until ``sid``'s pending passage (or the one whose note is ``passage``) is
        archived, moving the clock a few seconds at a time past the worker's debounce;
        its result."""
        if passage is None:
            pending = self.detail(sid)["pending"]
            assert pending is not None, "nothing is pending"
            passage = pending
        wanted = passage["passageId"]

        def probe() -> dict[str, Any] | None:
            self.alive()
            found = [r for r in self.detail(sid)["results"] if r["passageId"] == wanted]
            if found:
                return dict(found[0])
            self.advance(1.0)  # (at most a few minutes in all: slots are 15 apart)
            time.sleep(0.1)
            return None

        return wait_until(probe, f"passage {wanted} of {sid} to settle")

    def launched(self, sid: str, tag: str, count: int) -> dict[str, Any]:
        """Waits for the ``count``-th passage of ``tag`` to note its start; that note."""

        def probe() -> dict[str, Any] | None:
            self.alive()
            noted = self.passages(tag)
            return noted[count - 1] if len(noted) >= count else None

        return wait_until(probe, f"passage {count} of {tag} ({sid})")


@pytest.fixture
def world(storage_target: StorageTarget, tmp_path: Path) -> Iterator[World]:
    services = open_services(storage_target.url)
    services.directory.add_actor("alice", "Alice")
    home = tmp_path / "home"
    home.mkdir()
    services.workspaces.add("alice", home, "home")
    services.grants.grant("alice", "run")
    (home / "passage.py").write_text(PASSAGE)
    (tmp_path / "launcher.py").write_text(LAUNCHER)
    shift = tmp_path / "shift"
    shift.write_text("0.0")
    found = World(url=storage_target.url, root=tmp_path, services=services, home=home, shift=shift)
    try:
        yield found
    finally:
        found.close()
        services.store.close()


def commits(line: dict[str, Any]) -> list[str]:
    """The subjects of the commits in a passage's proof."""
    return [c["subject"] for c in line["proof"]["change"]["commits"]]


# --------------------------------------------------------------------------- git branch


def test_a_git_branch_gates_an_on_change_schedule(world: World) -> None:
    repo = Repo(world.home / "app")
    base = repo.git("rev-parse", "main")
    sid = world.create("git", ON_CHANGE, condition=GIT)
    world.play(sid)
    assert world.detail(sid)["source"]["baseline"]["checkpoint"] == base  # Play took it
    world.start_worker()

    # The branch is still: the slot is skipped and counted, nothing runs.
    last = world.decided(sid, world.to_slot(sid))
    assert (last["outcome"], last["reason"]) == ("skipped", "unchanged")
    assert world.passages() == [] and world.detail(sid)["pending"] is None
    assert world.detail(sid)["checks"]["count"] == 1

    # A commit: exactly one passage, whose command read the proof in its input file.
    moved = repo.commit("fix the parser")
    world.say("git", "failed")
    slot = world.to_slot(sid)
    assert world.decided(sid, slot)["outcome"] == "launched"
    first = world.launched(sid, "git", 1)
    assert instant(first["slot"]) == slot
    assert (first["proof"]["checkpoint"], first["proof"]["baseline"]) == (moved, base)
    assert commits(first) == ["fix the parser"]

    # It reports failed: the baseline stays, so the next slot launches again.
    result = world.settled(sid)
    assert (result["outcome"], result["reason"]) == ("failed", "reported")
    assert world.detail(sid)["source"]["baseline"]["checkpoint"] == base
    world.say("git", "completed")
    slot = world.to_slot(sid)
    second = world.launched(sid, "git", 2)
    assert instant(second["slot"]) == slot
    kept = ("key", "checkpoint", "baseline", "change")
    assert {k: second["proof"][k] for k in kept} == {k: first["proof"][k] for k in kept}

    # It completes: the proof is consumed; the next slot launches nothing.
    assert world.settled(sid)["outcome"] == "completed"
    assert world.detail(sid)["source"]["baseline"]["checkpoint"] == moved
    last = world.decided(sid, world.to_slot(sid))
    assert (last["outcome"], last["reason"]) == ("skipped", "unchanged")
    time.sleep(0.5)
    assert len(world.passages()) == 2

    # A second commit: one more passage, its proof only the new commit.
    again = repo.commit("speed up the lexer")
    slot = world.to_slot(sid)
    third = world.launched(sid, "git", 3)
    assert (third["proof"]["checkpoint"], third["proof"]["baseline"]) == (again, moved)
    assert commits(third) == ["speed up the lexer"] and instant(third["slot"]) == slot
    assert world.settled(sid)["outcome"] == "completed"

    shown = world.show(sid)
    assert shown["source"]["baseline"]["checkpoint"] == again
    assert shown["checks"]["count"] == 5  # one per decided slot
    assert shown["counters"] == {"admitted": 3, "settled": 3, "successful": 2}
    assert [s["outcome"] for s in shown["source"]["slots"]] == [
        "launched", "skipped", "launched", "launched", "skipped",
    ]  # fmt: skip
    assert shown["blockReason"] is None
    assert len(world.passages()) == 3
    assert len(list((world.root / "runtime" / "passages").iterdir())) == 3


def test_a_git_branch_gates_a_daily_schedule(world: World) -> None:
    """The shorter journey on a daily calendar, and a commit made while a passage is
    pending: the passage's completion consumes only its frozen proof, so the next day's
    slot launches for the newer commit alone."""
    repo = Repo(world.home / "app")
    base = repo.git("rev-parse", "main")
    sid = world.create("git", DAILY, condition=GIT)
    world.play(sid)
    world.start_worker()

    last = world.decided(sid, world.to_slot(sid))
    assert (last["outcome"], last["reason"]) == ("skipped", "unchanged")
    assert world.passages() == []

    moved = repo.commit("fix the parser")
    slot = world.to_slot(sid)
    line = world.launched(sid, "git", 1)
    assert instant(line["slot"]) == slot and line["proof"]["baseline"] == base
    assert line["proof"]["checkpoint"] == moved and commits(line) == ["fix the parser"]
    later = repo.commit("speed up the lexer")  # while the passage is pending
    assert world.settled(sid, line)["outcome"] == "completed"
    assert world.detail(sid)["source"]["baseline"]["checkpoint"] == moved

    slot = world.to_slot(sid)
    line = world.launched(sid, "git", 2)
    assert (line["proof"]["baseline"], line["proof"]["checkpoint"]) == (moved, later)
    assert commits(line) == ["speed up the lexer"] and instant(line["slot"]) == slot
    assert world.settled(sid, line)["outcome"] == "completed"

    last = world.decided(sid, world.to_slot(sid))
    assert (last["outcome"], last["reason"]) == ("skipped", "unchanged")
    time.sleep(0.5)
    assert len(world.passages()) == 2
    shown = world.show(sid)
    assert shown["source"]["baseline"]["checkpoint"] == later
    assert shown["checks"]["count"] == 4
    assert shown["counters"] == {"admitted": 2, "settled": 2, "successful": 2}


def test_a_missing_branch_blocks_the_slot_until_it_is_back(world: World) -> None:
    """The branch is gone at the slot: the slot is kept and blocked (the detail read says
    why), nothing runs and no check is counted; once the branch is back, the kept slot is
    read again a minute later and launches for what changed since the baseline."""
    repo = Repo(world.home / "app")
    base = repo.git("rev-parse", "main")
    sid = world.create("git", ON_CHANGE, condition=GIT)
    world.play(sid)
    world.start_worker()
    repo.git("checkout", "-q", "-b", "elsewhere")
    repo.git("branch", "-q", "-D", "main")

    slot = world.next_slot(sid)
    world.jump_to(slot + timedelta(seconds=1))

    def blocked() -> dict[str, Any] | None:
        world.alive()
        detail = world.detail(sid)
        last = detail["source"]["lastSlot"]
        return detail if last is not None and last["outcome"] == "blocked" else None

    detail = wait_until(blocked, "the slot to be blocked")
    last = detail["source"]["lastSlot"]
    assert (instant(last["slot"]), last["reason"]) == (slot, "source-missing")
    assert detail["blockReason"] == "source-missing"
    assert detail["checks"]["count"] == 0 and detail["pending"] is None
    assert detail["source"]["baseline"]["checkpoint"] == base

    repo.git("checkout", "-q", "-b", "main")
    back = repo.commit("restore the branch")
    world.advance(61.0)  # past the blocked source's next read
    line = world.launched(sid, "git", 1)
    assert instant(line["slot"]) == slot  # the kept slot, not a later one
    assert (line["proof"]["baseline"], line["proof"]["checkpoint"]) == (base, back)
    assert world.settled(sid, line)["outcome"] == "completed"
    detail = world.detail(sid)
    assert detail["blockReason"] is None and detail["checks"]["count"] == 1
    assert detail["source"]["baseline"]["checkpoint"] == back
    assert [s["outcome"] for s in detail["source"]["slots"]] == ["launched", "blocked"]


def test_a_worker_killed_during_the_passage_leaves_the_proof_to_be_consumed_once(
    world: World,
) -> None:
    """SIGKILL of the worker while the conditioned passage runs; a second worker takes its
    wakes over once the lease has run out, settles the passage, and consumes the proof:
    one passage for the commit, none at the next slot."""
    repo = Repo(world.home / "app")
    sid = world.create("git", ON_CHANGE, condition=GIT)
    world.play(sid)
    moved = repo.commit("fix the parser")
    first = world.start_worker("w1")
    slot = world.to_slot(sid)
    line = world.launched(sid, "git", 1)
    first.kill()  # SIGKILL: its leases stay until they run out
    first.wait(timeout=DEADLINE)
    del world.workers["w1"]
    assert world.detail(sid)["pending"] is not None

    world.start_worker("w2")
    world.advance(61.0)  # past the dead worker's lease
    result = world.settled(sid, line)
    assert (result["outcome"], instant(result["slot"])) == ("completed", slot)
    assert world.detail(sid)["source"]["baseline"]["checkpoint"] == moved

    last = world.decided(sid, world.to_slot(sid))
    assert (last["outcome"], last["reason"]) == ("skipped", "unchanged")
    time.sleep(0.5)
    assert len(world.passages()) == 1
    detail = world.detail(sid)
    assert detail["checks"]["count"] == 2
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}


# --------------------------------------------------------------------------- files


def test_a_files_condition_gates_an_on_change_schedule(world: World) -> None:
    notes = world.home / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("buy milk\n")
    sid = world.create("files", ON_CHANGE, condition={"kind": "files", "paths": ["notes/todo.txt"]})
    world.play(sid)
    world.start_worker()

    assert world.decided(sid, world.to_slot(sid))["reason"] == "unchanged"
    assert world.passages() == []

    (notes / "todo.txt").write_text("buy milk\nwater the plants\n")
    world.to_slot(sid)
    line = world.launched(sid, "files", 1)
    assert line["proof"]["change"]["modified"] == ["notes/todo.txt"]
    assert world.settled(sid)["outcome"] == "completed"

    assert world.decided(sid, world.to_slot(sid))["reason"] == "unchanged"
    time.sleep(0.5)
    assert len(world.passages()) == 1
    detail = world.detail(sid)
    assert detail["checks"]["count"] == 3
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}


# --------------------------------------------------------------------------- records


def test_a_schedule_succeeded_chain_and_its_refused_cycle(world: World) -> None:
    build = world.create("build", EVERY)
    deploy = world.create(
        "deploy", ON_CHANGE, condition={"kind": "schedule-succeeded", "missionId": build}
    )
    # A cycle is refused at configuration: exit 2, one error line naming the field and
    # why, nothing written.
    before = world.detail(build)["revision"]
    cycle = json.dumps({"condition": {"kind": "schedule-succeeded", "missionId": deploy}})
    refused = world.cli("schedule", "edit", build, "--set-json", cycle, "--json")
    assert refused.exit_code == 2, (refused.stdout, refused.stderr)
    error = json.loads(refused.stdout)["error"]
    assert (error["code"], error["details"]["field"]) == ("invalid-input", "condition.missionId")
    said = refused.stderr.strip().splitlines()[-1]
    assert said.startswith(f"error: condition.missionId: schedule {deploy}'s "), said
    assert said.endswith("lead back to this schedule; a cycle of conditions would never launch")
    assert world.detail(build)["condition"] is None
    assert world.detail(build)["revision"] == before
    world.play(build)
    world.play(deploy)
    world.start_worker()

    # Slot 1: build runs (and succeeds); deploy, read at the same slot, sees no success yet.
    world.to_slot(deploy, build)
    assert world.detail(deploy)["source"]["lastSlot"]["reason"] == "unchanged"
    world.launched(build, "build", 1)
    assert world.settled(build)["outcome"] == "completed"
    assert world.passages("deploy") == []

    # Slot 2: deploy sees the success: one passage; build fails this time.
    world.say("build", "failed")
    world.to_slot(deploy, build)
    line = world.launched(deploy, "deploy", 1)
    assert line["proof"]["change"] == {"missionId": build, "successful": 1, "since": 0}
    failing = world.launched(build, "build", 2)
    assert world.settled(deploy, line)["outcome"] == "completed"
    assert world.settled(build, failing)["outcome"] == "failed"
    assert world.detail(deploy)["source"]["baseline"]["checkpoint"] == "1"

    # Slot 3: build failed, so nothing new for deploy.
    world.to_slot(deploy, build)
    assert world.detail(deploy)["source"]["lastSlot"]["reason"] == "unchanged"
    world.settled(build, world.launched(build, "build", 3))
    assert len(world.passages("deploy")) == 1
    detail = world.detail(deploy)
    assert detail["counters"]["admitted"] == 1 and detail["checks"]["count"] == 3


def test_mission_completed_launches_a_follower_once(world: World) -> None:
    once = world.create("once", {"kind": "immediate"})
    follower = world.create(
        "follower", ON_CHANGE, condition={"kind": "mission-completed", "missionId": once}
    )
    world.play(follower)
    world.play(once)
    world.start_worker()
    world.launched(once, "once", 1)
    assert world.settled(once)["outcome"] == "completed"

    world.to_slot(follower)
    line = world.launched(follower, "follower", 1)
    assert line["proof"]["checkpoint"] == "completed"
    assert world.settled(follower)["outcome"] == "completed"

    assert world.decided(follower, world.to_slot(follower))["reason"] == "unchanged"
    time.sleep(0.5)
    assert len(world.passages("follower")) == 1
    assert world.detail(follower)["source"]["baseline"]["checkpoint"] == "completed"
