"""Helpers of the source condition tests: a real git repository made by the test, and a
driver that runs a scheduler over conditioned slots (whose sources are read in worker
threads) until each slot has decided."""

from __future__ import annotations

import os
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

from kalends.missions import Body
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from missions.conftest import MissionWorld
from missions.scheduler_support import stored_body

__all__ = ["Repo", "admitted", "decide_next", "decide_slot", "home", "next_due", "settle"]

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


class Repo:
    """A git repository at ``path`` with a ``main`` branch, committed to by the test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.commit("first")

    def git(self, *args: str) -> str:
        env = {**os.environ, **_GIT_ENV}
        done = subprocess.run(
            ["git", *args], cwd=self.path, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    def commit(self, subject: str) -> str:
        with (self.path / "log.txt").open("a") as log:
            log.write(subject + "\n")
        self.git("add", "log.txt")
        self.git("commit", "-q", "-m", subject)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "main")


def decide_slot(
    mw: MissionWorld,
    scheduler: Scheduler,
    sid: UUID,
    slot: datetime,
    *,
    rounds: int = 500,
    blocks: bool = True,
) -> Body:
    """Run the scheduler (the fake clock stepping 60 ms a round, the real one waiting for
    the read threads) until ``sid``'s body has decided ``slot``: its high-water reached it,
    or (unless ``blocks`` is false: a block of it seen already) its newest gate record is
    a block of it. Returns the body."""
    for _ in range(rounds):
        scheduler.run_once()
        body = stored_body(mw.store, sid)
        if body.high_water is not None and body.high_water >= slot:
            return body
        last = body.gates[-1] if body.gates else None
        if blocks and last is not None and last.slot == slot and last.outcome == "blocked":
            return body
        time.sleep(0.01)
        mw.clock.advance(timedelta(milliseconds=60))
    raise AssertionError(f"slot {slot} of {sid} was not decided in {rounds} rounds")


def home(mw: MissionWorld) -> Path:
    """The ``home`` workspace's directory."""
    return Path(mw.workspaces.get(mw.bob.id, mw.home.id).path)


def next_due(mw: MissionWorld, sid: UUID) -> datetime:
    """``sid``'s next slot as its detail read shows it."""
    due = mw.schedules.detail(mw.bob.id, sid)["nextDueAt"]
    assert isinstance(due, str), f"{sid} has no next slot"
    return datetime.fromisoformat(due)


def decide_next(mw: MissionWorld, scheduler: Scheduler, sid: UUID) -> tuple[datetime, Body]:
    """Move the clock one second past ``sid``'s next slot and run the scheduler until that
    slot is decided (:func:`decide_slot`). Returns the slot and the body."""
    slot = next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    return slot, decide_slot(mw, scheduler, sid, slot)


def admitted(mw: MissionWorld, scheduler: Scheduler, sid: UUID, *, rounds: int = 20) -> Body:
    """Run the scheduler until ``sid``'s pending passage is admitted. Returns the body."""
    for _ in range(rounds):
        scheduler.run_once()
        body = stored_body(mw.store, sid)
        if body.pending is not None and body.pending.admitted:
            return body
        mw.clock.advance(timedelta(milliseconds=60))
    raise AssertionError(f"no passage of {sid} was admitted in {rounds} rounds")


def settle(
    mw: MissionWorld,
    scheduler: Scheduler,
    runtime: MemoryRuntime,
    sid: UUID,
    outcome: str,
) -> Body:
    """Report ``outcome`` for ``sid``'s pending passage, end it, and run the scheduler past
    the pending fallback until it is archived. Returns the body."""
    body = stored_body(mw.store, sid)
    assert body.pending is not None, "no passage is pending"
    session = body.pending.session_id
    runtime.report(session, outcome, f"{outcome} by the test")
    runtime.finish(session, status=0 if outcome == "completed" else 1)
    for _ in range(20):
        mw.clock.advance(timedelta(seconds=31))
        scheduler.run_once()
        body = stored_body(mw.store, sid)
        if body.pending is None:
            return body
    raise AssertionError("the passage was not archived")
