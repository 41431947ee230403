"""Source conditions gate a schedule's slots (seed 002, the five source conditions): a real
git repository and real files in the workspace, the scheduler reading them in its worker
threads, the memory runtime standing in for the passages. Both databases."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from missions.condition_support import Repo, decide_slot, settle
from missions.conftest import MissionWorld
from missions.scheduler_support import create, play, stored_body

GIT = {"kind": "git-branch", "branch": "main", "path": "app"}


def _home(mw: MissionWorld) -> Path:
    return Path(mw.workspaces.get(mw.bob.id, mw.home.id).path)


def _next_due(mw: MissionWorld, sid: UUID) -> datetime:
    return datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])


def _world(mw: MissionWorld, condition: dict[str, object]) -> tuple[UUID, Scheduler, MemoryRuntime]:
    sid = create(mw, {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}, "create-cond-1",
                 condition=condition)  # fmt: skip
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    return sid, Scheduler(mw.store, runtime, owner="s1"), runtime


def test_a_branch_that_did_not_move_launches_nothing_and_a_commit_launches_once(
    mw: MissionWorld,
) -> None:
    repo = Repo(_home(mw) / "app")
    base = repo.head()
    sid, scheduler, runtime = _world(mw, GIT)
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["source"]["baseline"]["checkpoint"] == base  # first Play took it
    assert detail["checks"]["count"] == 0  # a baseline read counts zero

    # Day 1: the branch is still: the slot is skipped, counted once, no passage.
    slot = _next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert body.pending is None and runtime.sessions() == []
    assert body.checks_count == 1
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")

    # A commit: day 2 launches one passage with the frozen proof.
    moved = repo.commit("fix the parser")
    slot = _next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert body.pending is not None and body.checks_count == 2
    proof = body.pending.proof
    assert proof["checkpoint"] == moved and proof["baseline"] == base
    assert [c["subject"] for c in proof["change"]["commits"]] == ["fix the parser"]
    (session,) = runtime.sessions()
    assert runtime.started(session).input["proof"] == proof  # the command can act on it

    # It fails: the baseline stays, so day 3 sees the change again.
    body = settle(mw, scheduler, runtime, sid, "failed")
    assert body.checkpoint("git-branch:app:main").checkpoint == base
    slot = _next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert body.pending is not None and body.pending.proof["checkpoint"] == moved

    # It completes: the proof is consumed; day 4 launches nothing.
    body = settle(mw, scheduler, runtime, sid, "completed")
    assert body.checkpoint("git-branch:app:main").checkpoint == moved
    slot = _next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = decide_slot(mw, scheduler, sid, slot)
    assert body.pending is None and len(runtime.sessions()) == 2
    assert body.gates[-1].reason == "unchanged"
    assert stored_body(mw.store, sid).checks_count == 4
