"""Source conditions gate a schedule's slots (seed 002, the five source conditions): a real
git repository and real files in the workspace, the scheduler reading them in its worker
threads, the memory runtime standing in for the passages. Both databases."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from kalends.missions import Body
from kalends.missions.gate_reads import BLOCKED_RETRY
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from missions.condition_support import Repo, decide_next, decide_slot, home, next_due, settle
from missions.conftest import MissionWorld
from missions.scheduler_support import create, play, stored_body

GIT = {"kind": "git-branch", "branch": "main", "path": "app"}


DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}


def _world(mw: MissionWorld, condition: Mapping[str, Any]) -> tuple[UUID, Scheduler, MemoryRuntime]:
    sid = create(mw, DAILY, "create-cond-1", condition=condition)
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    return sid, Scheduler(mw.store, runtime, owner="s1"), runtime


def _proof(body: Body) -> dict[str, Any]:
    """The frozen proof of ``body``'s pending passage (there must be one)."""
    assert body.pending is not None, "no passage is pending"
    assert body.pending.proof is not None, "the pending passage froze no proof"
    return body.pending.proof


def _checkpoint(body: Body, key: str) -> str:
    """The checkpoint of the source ``key`` (it must have one)."""
    kept = body.checkpoint(key)
    assert kept is not None, f"no checkpoint of {key}"
    return kept.checkpoint


def test_a_branch_that_did_not_move_launches_nothing_and_a_commit_launches_once(
    mw: MissionWorld,
) -> None:
    repo = Repo(home(mw) / "app")
    base = repo.head()
    sid, scheduler, runtime = _world(mw, GIT)
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["source"]["baseline"]["checkpoint"] == base  # first Play took it
    assert detail["checks"]["count"] == 0  # a baseline read counts zero

    # Day 1: the branch is still: the slot is skipped, counted once, no passage.
    slot = next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert body.pending is None and runtime.sessions() == []
    assert body.checks_count == 1
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")

    # A commit: day 2 launches one passage with the frozen proof.
    moved = repo.commit("fix the parser")
    slot = next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert body.checks_count == 2
    proof = _proof(body)
    assert proof["checkpoint"] == moved and proof["baseline"] == base
    assert [c["subject"] for c in proof["change"]["commits"]] == ["fix the parser"]
    (session,) = runtime.sessions()
    assert runtime.started(session).input["proof"] == proof  # the command can act on it

    # It fails: the baseline stays, so day 3 sees the change again.
    body = settle(mw, scheduler, runtime, sid, "failed")
    assert _checkpoint(body, "git-branch:app:main") == base
    slot = next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert _proof(body)["checkpoint"] == moved

    # It completes: the proof is consumed; day 4 launches nothing.
    body = settle(mw, scheduler, runtime, sid, "completed")
    assert _checkpoint(body, "git-branch:app:main") == moved
    slot = next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert body.pending is None and len(runtime.sessions()) == 2
    assert body.gates[-1].reason == "unchanged"
    assert stored_body(mw.store, sid).checks_count == 4


# --- files -------------------------------------------------------------------------------

FILES = {"kind": "files", "paths": ["a.txt", "b.txt"]}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_file_set_launches_once_per_change_and_a_link_leaving_the_workspace_blocks_its_slot(
    mw: MissionWorld, tmp_path: Path
) -> None:
    root = home(mw)
    (root / "a.txt").write_text("one\n")
    sid, scheduler, runtime = _world(mw, FILES)
    baseline = mw.schedules.detail(mw.bob.id, sid)["source"]["baseline"]
    assert baseline["observation"]["files"] == {"a.txt": _sha("one\n"), "b.txt": None}

    # Nothing changed: skipped.
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and runtime.sessions() == []
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")

    # The missing file appears: one passage, its proof naming it as added.
    (root / "b.txt").write_text("two\n")
    slot, body = decide_next(mw, scheduler, sid)
    proof = _proof(body)
    assert body.pending is not None and body.pending.slot == slot
    assert proof["change"] == {"version": 1, "added": ["b.txt"], "removed": [], "modified": []}
    assert proof["observation"]["files"] == {"a.txt": _sha("one\n"), "b.txt": _sha("two\n")}
    assert len(runtime.sessions()) == 1

    # Failed: the baseline stays, so the next slot sees the same change again.
    body = settle(mw, scheduler, runtime, sid, "failed")
    key = 'files:["a.txt","b.txt"]'
    assert _checkpoint(body, key) == baseline["checkpoint"]
    _slot, body = decide_next(mw, scheduler, sid)
    assert _proof(body)["change"]["added"] == ["b.txt"]

    # Completed: consumed; the next slot launches nothing.
    body = settle(mw, scheduler, runtime, sid, "completed")
    assert _checkpoint(body, key) == proof["checkpoint"]
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and body.gates[-1].reason == "unchanged"
    assert len(runtime.sessions()) == 2

    # One file modified: modified.
    (root / "a.txt").write_text("one, edited\n")
    _slot, body = decide_next(mw, scheduler, sid)
    change = _proof(body)["change"]
    assert (change["added"], change["modified"], change["removed"]) == ([], ["a.txt"], [])
    settle(mw, scheduler, runtime, sid, "completed")

    # a.txt becomes a symbolic link leading outside the workspace: the slot is blocked.
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's\n")
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(os.path.realpath(outside))
    water = stored_body(mw.store, sid).high_water
    slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and len(runtime.sessions()) == 3
    assert body.high_water == water  # the slot is kept
    last = body.gates[-1]
    assert (last.slot, last.outcome, last.reason) == (slot, "blocked", "source-unreadable")
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["blockReason"] == "source-unreadable"
    assert detail["source"]["lastSlot"]["outcome"] == "blocked"
    assert datetime.fromisoformat(detail["source"]["lastSlot"]["slot"]) == slot
    assert detail["source"]["lastObservation"]["blockReason"] == "source-unreadable"
    assert detail["highWater"] is not None
    assert datetime.fromisoformat(detail["highWater"]) == water

    # The link removed: the read after the retry decides the kept slot (a.txt removed).
    (root / "a.txt").unlink()
    mw.clock.advance(BLOCKED_RETRY)
    body = decide_slot(mw, scheduler, sid, slot, blocks=False)
    assert body.high_water == slot
    change = _proof(body)["change"]
    assert body.pending is not None and body.pending.slot == slot
    assert (change["added"], change["modified"], change["removed"]) == ([], [], ["a.txt"])
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["blockReason"] != "source-unreadable"
    assert detail["source"]["lastSlot"]["outcome"] == "launched"


# --- git-branch blocks -------------------------------------------------------------------


def test_a_deleted_repository_blocks_its_slot_as_missing_and_counts_no_check(
    mw: MissionWorld,
) -> None:
    repo = Repo(home(mw) / "app")
    sid, scheduler, runtime = _world(mw, GIT)
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.checks_count == 1 and body.gates[-1].reason == "unchanged"
    water = body.high_water

    shutil.rmtree(repo.path)
    slot, body = decide_next(mw, scheduler, sid)
    assert (body.gates[-1].slot, body.gates[-1].outcome) == (slot, "blocked")
    assert body.gates[-1].reason == "source-missing"
    assert body.high_water == water and body.pending is None
    assert body.checks_count == 1  # a blocked read counts zero
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["blockReason"] == "source-missing"
    assert detail["checks"]["count"] == 1
    assert runtime.sessions() == []

    # Read again after the retry, still missing: the slot still waits, still uncounted,
    # and the repeated block is not recorded twice.
    gates = len(body.gates)
    mw.clock.advance(BLOCKED_RETRY)
    for _ in range(10):
        scheduler.run_once()
        time.sleep(0.01)
        mw.clock.advance(timedelta(milliseconds=60))
    body = stored_body(mw.store, sid)
    assert body.high_water == water and body.checks_count == 1
    assert len(body.gates) == gates and body.gates[-1].reason == "source-missing"


def test_a_deleted_branch_blocks_its_slot_as_missing_until_it_is_back(mw: MissionWorld) -> None:
    repo = Repo(home(mw) / "app")
    repo.git("branch", "release")
    base = repo.head()
    sid, scheduler, runtime = _world(mw, {**GIT, "branch": "release"})
    assert mw.schedules.detail(mw.bob.id, sid)["source"]["baseline"]["checkpoint"] == base

    water = stored_body(mw.store, sid).high_water  # (Play's instant)
    repo.git("branch", "-D", "release")
    slot, body = decide_next(mw, scheduler, sid)
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "source-missing")
    assert body.high_water == water and body.checks_count == 0 and body.pending is None
    assert mw.schedules.detail(mw.bob.id, sid)["blockReason"] == "source-missing"

    # The branch is back where it was: the kept slot is read again, unchanged.
    repo.git("branch", "release", base)
    mw.clock.advance(BLOCKED_RETRY)
    body = decide_slot(mw, scheduler, sid, slot, blocks=False)
    assert body.high_water == slot and body.pending is None
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "unchanged")
    assert body.checks_count == 1 and runtime.sessions() == []
    assert mw.schedules.detail(mw.bob.id, sid)["blockReason"] is None
