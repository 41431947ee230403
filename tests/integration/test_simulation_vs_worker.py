"""Simulation and reality agree (issue 24 §2): one configuration run by :func:`simulate`
and by real ``kalends worker`` processes on a file clock (``KALENDS_CLOCK_FILE``) over four
days across New York's spring DST change, with an outage (the worker SIGKILLed, another
started when it ends) and a pause, writes the same slot ledger row by row.

The test plays time: it sets the clock file to the next instant something happens (the
schedule's wake, an outage or pause edge, the window's end), waits until the worker has
acted on it (the wake due later, a passage's exit seen), and goes on. Passages run
``true``; the simulation's take no time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from e2e.conftest import environment
from kalends.auth.grants import Privilege
from kalends.bootstrap import Services, build
from kalends.clock import ENV_CLOCK_FILE, FakeClock
from kalends.missions.ledger_reads import row_json
from kalends.missions.simulation import Simulation, simulate
from kalends.missions.simulation_options import Interval, SimulationOptions
from kalends.missions.wakes import EVENT_DEBOUNCE
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.migrate import open_store
from kalends.storage.mission_tables import schedule_wakes
from kalends.storage.testing import StorageTarget
from runtime.support import kill_families

pytestmark = pytest.mark.slow

NEW_YORK = "America/New_York"
POLICY = {"kind": "cron", "expression": "30 2,8,14,20 * * *", "zone": NEW_YORK}
# How long the worker may take to act on one instant (a round, a passage's exit), seconds.
ACT_WITHIN = 30.0


def _ny(d: int, hh: int = 0) -> datetime:
    return datetime(2027, 3, d, hh, tzinfo=ZoneInfo(NEW_YORK)).astimezone(UTC)


START, END = _ny(13), _ny(17)
OUTAGE = Interval(_ny(15, 5), _ny(15, 16))
PAUSE = Interval(_ny(16, 10), _ny(16, 21))


def _portable(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each row's slot, wall time, outcome and reason, and which launched row's passage it
    names (passage IDs derive from the schedule ID, which differs)."""
    launched = {r["passageId"]: i for i, r in enumerate(rows) if r["outcome"] == "launched"}
    return [
        (r["slot"], r["local"], r["outcome"], r["reason"], r["note"], launched.get(r["passageId"]))
        for r in rows
    ]


class Reality:
    """The database, the clock file and the worker processes of one run."""

    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.root = root
        self.clock_file = root / "clock"
        self.clock = FakeClock(START)
        self.services: Services = build(open_store(url, clock=self.clock))
        self.worker: subprocess.Popen[str] | None = None
        self.workers = 0
        self.set(START)
        workspace = root / "home"
        workspace.mkdir()
        s = self.services
        with s.store.transaction():
            alice = s.directory.add_actor("alice", "Alice")
            s.grants.grant(alice.id, Privilege.RUN)
            home = s.workspaces.add(alice.id, workspace, "home")
        self.actor = alice.id
        config = {"title": "Shifts", "profile": {"command": ["true"]}, "policy": POLICY}
        receipt = s.schedules.create(alice.id, home.id, config, request_id="create-0001")
        assert receipt.mission_id is not None
        self.sid: UUID = receipt.mission_id
        self.control("play")

    def set(self, at: datetime) -> None:
        """Move time for everyone: the test's services and the workers' clock file (a
        file renamed over the old one, so a worker reads it whole and sees it change)."""
        self.clock.set(at)
        temporary = self.clock_file.with_suffix(".tmp")
        temporary.write_text(at.isoformat())
        os.replace(temporary, self.clock_file)

    def control(self, action: str) -> None:
        revision = self.services.schedules.detail(self.actor, self.sid)["revision"]
        self.services.schedules.control(
            self.actor, self.sid, action, request_id=f"{action}-{revision:05d}",
            expected_revision=revision,
        )  # fmt: skip
        self.set(self.clock.now())  # (the file rewritten: a worker looks at once)

    def start_worker(self) -> None:
        self.workers += 1
        runtime = self.root / f"runtime-{self.workers}"
        self.worker = subprocess.Popen(
            [sys.executable, "-m", "kalends", "worker", "--database", self.url,
             "--owner", f"worker-{self.workers}", "--runtime-dir", str(runtime),
             "--transport", "null", "--quiet"],
            env=environment(**{ENV_CLOCK_FILE: str(self.clock_file)}),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def kill_worker(self) -> None:
        assert self.worker is not None
        self.worker.send_signal(signal.SIGKILL)
        self.worker.wait(10)
        assert self.worker.stderr is not None
        self.worker.stderr.close()
        self.worker = None

    def stop_worker(self) -> None:
        if self.worker is None:
            return
        self.worker.send_signal(signal.SIGTERM)
        try:
            self.worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.communicate()
        self.worker = None

    def wake(self) -> Any:
        return self.services.store.run(
            lambda conn: conn.execute(
                select(schedule_wakes).where(schedule_wakes.c.schedule_id == self.sid)
            ).first(),
            write=False,
        )

    def pending(self) -> bool:
        return self.services.schedules.detail(self.actor, self.sid)["pending"] is not None

    def acted(self, now: datetime) -> bool:
        """Whether the worker did what ``now`` asks: its wake held and due later, and a
        pending passage's exit seen (its wake due after the debounce)."""
        wake = self.wake()
        if wake is None:
            return True
        if wake.lease_token is None or wake.due_at <= now:
            return False
        return not self.pending() or wake.due_at <= now + EVENT_DEBOUNCE

    def wait(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + ACT_WITHIN
        while not condition():
            worker = self.worker
            if worker is not None and worker.poll() is not None:
                _, err = worker.communicate()
                pytest.fail(f"the worker exited ({worker.returncode}) before {what}:\n{err}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what} (wake {self.wake()})")
            time.sleep(0.05)

    def rows(self) -> list[dict[str, Any]]:
        c = slot_ledger.c
        found = self.services.store.run(
            lambda conn: conn.execute(
                select(slot_ledger).where(c.schedule_id == self.sid).order_by(c.slot_at, c.slot_key)
            ).all(),
            write=False,
        )
        return [row_json(r._mapping) for r in found]

    def run(self) -> list[dict[str, Any]]:
        """Plays the window: outage edges kill and start workers, pause edges control."""
        edges = sorted([(OUTAGE.start, "down"), (OUTAGE.end, "up"), (PAUSE.start, "pause"),
                        (PAUSE.end, "play")])  # fmt: skip
        self.start_worker()
        now = START
        while now < END:
            while edges and edges[0][0] <= now:
                _, kind = edges.pop(0)
                if kind == "down":
                    self.kill_worker()
                elif kind == "up":
                    self.start_worker()
                else:
                    self.control(kind)
            if self.worker is not None:
                self.wait(_acted(self, now), f"the worker at {now.isoformat()}")
            candidates = [END] + [at for at, _ in edges[:1]]
            wake = self.wake()
            if wake is not None and self.worker is not None:
                due = wake.due_at
                if wake.next_slot_at is not None and not self.pending():
                    # The hourly wakes before the next slot (seed 002's ceiling on a
                    # sleep) change nothing: time steps over them to the slot.
                    due = max(due, wake.next_slot_at)
                candidates.append(max(due, now + timedelta(seconds=1)))
            now = min(candidates)
            self.set(now)
        self.stop_worker()
        return self.rows()

    def close(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker.communicate()
        for runtime in self.root.glob("runtime-*"):
            kill_families(runtime)
        self.services.store.close()


def _acted(reality: Reality, now: datetime) -> Callable[[], bool]:
    return lambda: reality.acted(now)


@pytest.fixture
def reality(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Reality]:
    found = Reality(storage_target.url, tmp_path)
    try:
        yield found
    finally:
        found.close()


def test_the_simulation_writes_the_ledger_real_workers_write(reality: Reality) -> None:
    real = reality.run()
    simulated: Simulation = simulate(
        {"title": "Shifts", "policy": POLICY},
        SimulationOptions(start=START, end=END, zone=NEW_YORK, outages=(OUTAGE,), pauses=(PAUSE,)),
    )
    assert _portable(simulated.rows) == _portable(real)
    # The window holds what the comparison is about: the DST change, the outage's catch-up
    # and coalesced slots, and the pause's skipped ones.
    reasons = {r["reason"] for r in real}
    assert {"no-scheduler", "paused"} <= reasons
    assert any(r["local"].startswith("2027-03-14T02:30") or r["note"] for r in real)
    assert sum(1 for r in real if r["outcome"] == "launched") >= 10
