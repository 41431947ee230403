"""Source conditions gate a schedule's slots (seed 002, the five source conditions): a real
git repository and real files in the workspace, the scheduler reading them in its worker
threads, the memory runtime standing in for the passages. Both databases."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select, update

from kalends.errors import ControlConflict, InvalidInput
from kalends.missions import Body
from kalends.missions.document import with_checkpoint
from kalends.missions.gate_reads import BLOCKED_RETRY
from kalends.missions.gate_records import Checkpoint
from kalends.missions.limits import MAX_DOCUMENT_BYTES
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.mission_tables import schedules
from kalends.storage.testing import nothing_written
from missions.condition_support import (
    Repo,
    admitted,
    decide_next,
    decide_slot,
    home,
    next_due,
    settle,
)
from missions.conftest import MissionWorld, daily_config
from missions.scheduler_support import create, play, stored_body
from missions.surgery import control, edit_body, revision

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
    shown = detail["source"]["slots"]  # newest first
    assert shown[0] == detail["source"]["lastSlot"]
    assert [(s["outcome"], s["reason"]) for s in shown] == [
        ("blocked", "source-unreadable"), ("launched", "changed"), ("skipped", "unchanged"),
        ("launched", "changed"), ("launched", "changed"), ("skipped", "unchanged"),
    ]  # fmt: skip
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


# --- schedule-succeeded and mission-completed ------------------------------------------

EARLIER = {"kind": "daily", "time": "08:00", "zone": "Europe/Berlin"}


def _after(sid: UUID) -> dict[str, str]:
    return {"kind": "schedule-succeeded", "missionId": str(sid)}


def _scheduler(mw: MissionWorld) -> tuple[Scheduler, MemoryRuntime]:
    runtime = MemoryRuntime(clock=mw.clock)
    return Scheduler(mw.store, runtime, owner="s1"), runtime


def _store_condition(mw: MissionWorld, sid: UUID, condition: dict[str, str]) -> None:
    """Write ``condition`` into ``sid``'s stored configuration, as two edits that each
    checked the other schedule before either committed would leave it."""
    with mw.store.transaction() as conn:
        text = conn.execute(select(schedules.c.config).where(schedules.c.id == sid)).scalar_one()
        data = json.loads(text)
        data["condition"] = condition
        conn.execute(update(schedules).where(schedules.c.id == sid).values(config=json.dumps(data)))


def test_a_schedule_launches_after_each_success_of_the_one_it_follows(mw: MissionWorld) -> None:
    b = create(mw, EARLIER, "create-b-0001")
    a = create(mw, DAILY, "create-a-0001", condition=_after(b))
    play(mw, b)
    play(mw, a)
    scheduler, runtime = _scheduler(mw)
    assert mw.schedules.detail(mw.bob.id, a)["source"]["baseline"]["checkpoint"] == "0"

    # B's passage completes at 08:00: A's 09:00 slot launches with the proof of it.
    _slot, body = decide_next(mw, scheduler, b)
    assert body.pending is not None
    settle(mw, scheduler, runtime, b, "completed")
    _slot, body = decide_next(mw, scheduler, a)
    proof = _proof(body)
    assert proof["change"] == {"missionId": str(b), "successful": 1, "since": 0}
    assert (proof["checkpoint"], proof["baseline"]) == ("1", "0")
    body = settle(mw, scheduler, runtime, a, "completed")
    assert _checkpoint(body, f"schedule-succeeded:{b}") == "1"

    # The next day B fails: A skips.
    decide_next(mw, scheduler, b)
    settle(mw, scheduler, runtime, b, "failed")
    _slot, body = decide_next(mw, scheduler, a)
    assert body.pending is None
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")
    assert len(runtime.sessions()) == 3  # B twice, A once

    # B succeeds again: A launches again, since the count it consumed.
    decide_next(mw, scheduler, b)
    settle(mw, scheduler, runtime, b, "completed")
    _slot, body = decide_next(mw, scheduler, a)
    assert _proof(body)["change"] == {"missionId": str(b), "successful": 2, "since": 1}


def test_a_success_while_the_follower_runs_is_left_for_its_next_slot(mw: MissionWorld) -> None:
    b = create(mw, EARLIER, "create-b-0001")
    a = create(mw, DAILY, "create-a-0001", condition=_after(b))
    play(mw, b)
    play(mw, a)
    scheduler, runtime = _scheduler(mw)
    decide_next(mw, scheduler, b)
    settle(mw, scheduler, runtime, b, "completed")
    _slot, body = decide_next(mw, scheduler, a)
    assert _proof(body)["checkpoint"] == "1"

    # A still runs the next day when B succeeds again, and past its own next slot.
    running = body.pending
    assert running is not None and running.slot is not None
    b_slot, _body = decide_next(mw, scheduler, b)
    settle(mw, scheduler, runtime, b, "completed")
    missed = running.slot + timedelta(days=1)
    assert b_slot < missed
    mw.clock.set(missed + timedelta(seconds=1))
    for _ in range(3):
        scheduler.run_once()
    body = stored_body(mw.store, a)
    assert body.pending is not None and body.pending.slot == running.slot

    # It completes: it consumes the count it froze, so the missed slot launches for the other.
    body = settle(mw, scheduler, runtime, a, "completed")
    assert _checkpoint(body, f"schedule-succeeded:{b}") == "1"
    body = decide_slot(mw, scheduler, a, missed)
    assert body.pending is not None and body.pending.slot == missed
    assert _proof(body)["change"] == {"missionId": str(b), "successful": 2, "since": 1}


def test_a_cycle_of_successes_is_refused_and_one_left_by_racing_edits_blocks_its_slots(
    mw: MissionWorld,
) -> None:
    b = create(mw, EARLIER, "create-b-0001")
    a = create(mw, DAILY, "create-a-0001", condition=_after(b))
    play(mw, b)
    play(mw, a)
    scheduler, _runtime = _scheduler(mw)

    # No edit through the service closes the cycle: B naming A is refused, nothing written.
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.configure(
            mw.bob.id, b, {"condition": _after(a)}, request_id="edit-b-0001",
            expected_revision=revision(mw, b),
        )  # fmt: skip
    assert caught.value.field == "condition.missionId" and "cycle" in caught.value.message

    # Two edits that each checked the other before either committed leave one behind:
    # both slots are blocked as a cycle, and neither launches.
    _store_condition(mw, b, _after(a))
    slot, body = decide_next(mw, scheduler, b)
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "source-cycle")
    assert body.pending is None
    slot, body = decide_next(mw, scheduler, a)
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "source-cycle")
    assert body.pending is None
    assert mw.schedules.detail(mw.bob.id, a)["blockReason"] == "source-cycle"
    assert mw.schedules.detail(mw.bob.id, b)["blockReason"] == "source-cycle"

    # Paused, B cannot be played again while the cycle stands.
    control(mw, b, "pause", "pause-b-0001")
    with pytest.raises(ControlConflict) as refused:
        play(mw, b)
    assert refused.value.details["reason"] == "source-cycle"


def test_a_success_count_outlives_the_results_window_and_one_below_the_checkpoint_blocks(
    mw: MissionWorld,
) -> None:
    b = create(mw, EARLIER, "create-b-0001")
    a = create(mw, DAILY, "create-a-0001", condition=_after(b))
    play(mw, a)
    scheduler, _runtime = _scheduler(mw)
    # B counts 45 successes though it keeps none of their results.
    edit_body(mw, b, lambda body: replace(body, settled=45, successful=45, results=()))
    _slot, body = decide_next(mw, scheduler, a)
    assert _proof(body)["change"] == {"missionId": str(b), "successful": 45, "since": 0}

    # A checkpoint above what B counts has no proof left behind it: blocked.
    key = f"schedule-succeeded:{b}"
    edit_body(mw, a, lambda body: replace(
        with_checkpoint(body, key, Checkpoint(checkpoint="50", at=mw.clock.now())), pending=None
    ))  # fmt: skip
    slot, body = decide_next(mw, scheduler, a)
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "source-proof-missing")
    assert body.pending is None
    assert mw.schedules.detail(mw.bob.id, a)["blockReason"] == "source-proof-missing"


def test_a_deleted_followed_schedule_blocks_the_follower_as_missing(mw: MissionWorld) -> None:
    b = create(mw, EARLIER, "create-b-0001")
    a = create(mw, DAILY, "create-a-0001", condition=_after(b))
    play(mw, a)
    scheduler, runtime = _scheduler(mw)
    water = stored_body(mw.store, a).high_water
    mw.schedules.delete(mw.bob.id, b, request_id="delete-b-0001", expected_revision=1)
    slot, body = decide_next(mw, scheduler, a)
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "source-missing")
    assert body.high_water == water and body.checks_count == 0 and runtime.sessions() == []
    detail = mw.schedules.detail(mw.bob.id, a)
    assert detail["blockReason"] == "source-missing"
    assert detail["source"]["lastObservation"]["blockReason"] == "source-missing"


def _completion_of(mw: MissionWorld, scheduler: Scheduler, runtime: MemoryRuntime, o: UUID) -> str:
    """Play the one-time schedule ``o`` and complete its passage; its passage ID."""
    play(mw, o)
    body = decide_slot(mw, scheduler, o, mw.clock.now())
    assert body.pending is not None
    passage = body.pending.passage_id
    settle(mw, scheduler, runtime, o, "completed")
    return passage


def test_a_schedule_launches_once_for_the_completion_of_a_one_time_schedule(
    mw: MissionWorld,
) -> None:
    o = create(mw, {"kind": "immediate"}, "create-o-0001")
    a = create(mw, DAILY, "create-a-0001",
               condition={"kind": "mission-completed", "missionId": str(o)})  # fmt: skip
    play(mw, a)
    scheduler, runtime = _scheduler(mw)
    assert mw.schedules.detail(mw.bob.id, a)["source"]["baseline"]["checkpoint"] == "pending"

    # Before it completes, A skips.
    _slot, body = decide_next(mw, scheduler, a)
    assert body.pending is None and body.gates[-1].reason == "unchanged"

    passage = _completion_of(mw, scheduler, runtime, o)
    _slot, body = decide_next(mw, scheduler, a)
    proof = _proof(body)
    assert proof["change"] == {"missionId": str(o), "passageId": passage}
    assert (proof["checkpoint"], proof["baseline"]) == ("completed", "pending")

    # A fails: not consumed, so it launches again; it completes: consumed, never again.
    settle(mw, scheduler, runtime, a, "failed")
    _slot, body = decide_next(mw, scheduler, a)
    assert _proof(body)["checkpoint"] == "completed"
    body = settle(mw, scheduler, runtime, a, "completed")
    assert _checkpoint(body, f"mission-completed:{o}") == "completed"
    for _ in range(2):
        _slot, body = decide_next(mw, scheduler, a)
        assert body.pending is None and body.gates[-1].reason == "unchanged"
    assert len(runtime.sessions()) == 3  # O once, A twice
    assert stored_body(mw.store, a).successful == 1


def test_a_completion_before_the_first_play_still_launches_once(mw: MissionWorld) -> None:
    o = create(mw, {"kind": "immediate"}, "create-o-0001")
    a = create(mw, DAILY, "create-a-0001",
               condition={"kind": "mission-completed", "missionId": str(o)})  # fmt: skip
    scheduler, runtime = _scheduler(mw)
    _completion_of(mw, scheduler, runtime, o)
    play(mw, a)
    _slot, body = decide_next(mw, scheduler, a)
    assert _proof(body)["checkpoint"] == "completed"
    settle(mw, scheduler, runtime, a, "completed")
    _slot, body = decide_next(mw, scheduler, a)
    assert body.pending is None and body.gates[-1].reason == "unchanged"
    assert len(runtime.sessions()) == 2


def _run_past_next_slot(mw: MissionWorld, scheduler: Scheduler, sid: UUID) -> datetime:
    """Move past ``sid``'s next slot while its passage still runs; that slot (a day after
    the running passage's: daily, and no DST change in early March)."""
    running = stored_body(mw.store, sid).pending
    assert running is not None and running.slot is not None
    slot = running.slot + timedelta(days=1)
    mw.clock.set(slot + timedelta(seconds=1))
    for _ in range(3):
        scheduler.run_once()
        mw.clock.advance(timedelta(seconds=31))
    body = stored_body(mw.store, sid)
    assert body.pending is not None and body.pending.slot is not None
    assert body.pending.slot < slot and body.high_water is not None and body.high_water < slot
    return slot


def test_a_slot_missed_while_a_passage_ran_is_gated_once_it_settles(mw: MissionWorld) -> None:
    repo = Repo(home(mw) / "app")
    base = repo.head()
    sid, scheduler, runtime = _world(mw, GIT)
    moved = repo.commit("worked on for days")
    _first, body = decide_next(mw, scheduler, sid)
    assert _proof(body)["checkpoint"] == moved

    # It fails after the next slot: that slot is read once it is archived, and launches
    # again with the same change.
    second = _run_past_next_slot(mw, scheduler, sid)
    settle(mw, scheduler, runtime, sid, "failed")
    body = decide_slot(mw, scheduler, sid, second)
    assert body.pending is not None and body.pending.slot == second
    assert (_proof(body)["baseline"], _proof(body)["checkpoint"]) == (base, moved)
    checks = body.checks_count

    # It completes after the next slot: that slot is read against the consumed proof.
    third = _run_past_next_slot(mw, scheduler, sid)
    settle(mw, scheduler, runtime, sid, "completed")
    body = decide_slot(mw, scheduler, sid, third)
    assert body.pending is None and body.high_water == third
    assert (body.gates[-1].slot, body.gates[-1].reason) == (third, "unchanged")
    assert body.checks_count == checks + 1 and len(runtime.sessions()) == 2


# --- the on-change policy ----------------------------------------------------------------


def test_on_change_checks_its_source_every_15_minutes_from_play(mw: MissionWorld) -> None:
    repo = Repo(home(mw) / "app")
    sid = create(mw, {"kind": "on-change"}, "create-oc-0001", condition=GIT)
    play(mw, sid)
    played = mw.clock.now()
    scheduler, runtime = _scheduler(mw)
    check = timedelta(minutes=15)
    assert next_due(mw, sid) == played + check

    # Nothing is read before the first check.
    mw.clock.set(played + check - timedelta(seconds=1))
    for _ in range(5):
        scheduler.run_once()
    assert stored_body(mw.store, sid).gates == ()

    for n in (1, 2, 3):  # the branch is still: each check skips, and counts
        slot, body = decide_next(mw, scheduler, sid)
        assert slot == played + n * check
        assert (body.gates[-1].reason, body.checks_count) == ("unchanged", n)
    assert runtime.sessions() == []

    repo.commit("a change to act on")
    slot, body = decide_next(mw, scheduler, sid)
    assert slot == played + 4 * check
    assert [c["subject"] for c in _proof(body)["change"]["commits"]] == ["a change to act on"]
    settle(mw, scheduler, runtime, sid, "completed")
    slot, body = decide_next(mw, scheduler, sid)
    assert slot == played + 5 * check
    assert body.pending is None and body.gates[-1].reason == "unchanged"
    assert len(runtime.sessions()) == 1 and body.checks_count == 5


def test_on_change_without_a_condition_is_refused(mw: MissionWorld) -> None:
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.create(
            mw.bob.id, mw.home.id, daily_config(policy={"kind": "on-change"}),
            request_id="create-oc-0001",
        )  # fmt: skip
    assert caught.value.field == "condition"


# --- baselines across Pause, Play and configuration ------------------------------------


def test_pause_and_play_keep_the_baseline(mw: MissionWorld) -> None:
    repo = Repo(home(mw) / "app")
    base = repo.head()
    sid, scheduler, _runtime = _world(mw, GIT)
    control(mw, sid, "pause", "pause-0001")
    moved = repo.commit("made while paused")
    play(mw, sid)
    assert mw.schedules.detail(mw.bob.id, sid)["source"]["baseline"]["checkpoint"] == base
    _slot, body = decide_next(mw, scheduler, sid)
    proof = _proof(body)
    assert (proof["baseline"], proof["checkpoint"]) == (base, moved)
    assert [c["subject"] for c in proof["change"]["commits"]] == ["made while paused"]


def test_a_passage_interrupted_by_pause_leaves_the_baseline(mw: MissionWorld) -> None:
    repo = Repo(home(mw) / "app")
    base = repo.head()
    sid, scheduler, runtime = _world(mw, GIT)
    moved = repo.commit("to act on")
    _slot, body = decide_next(mw, scheduler, sid)
    assert _proof(body)["checkpoint"] == moved
    admitted(mw, scheduler, sid)

    # Pause interrupts the passage: it ends without a report, and consumes nothing.
    control(mw, sid, "pause", "pause-0001")
    for _ in range(20):
        scheduler.run_once()
        mw.clock.advance(timedelta(seconds=31))
        body = stored_body(mw.store, sid)
        if body.pending is None:
            break
    assert body.pending is None
    assert body.results[-1].outcome == "ended-without-report"
    assert _checkpoint(body, "git-branch:app:main") == base

    # After Play the next slot sees the change again.
    play(mw, sid)
    _slot, body = decide_next(mw, scheduler, sid)
    assert (_proof(body)["baseline"], _proof(body)["checkpoint"]) == (base, moved)
    assert len(runtime.sessions()) == 2


def test_another_source_keeps_the_old_checkpoint_and_going_back_resumes_from_it(
    mw: MissionWorld,
) -> None:
    app = Repo(home(mw) / "app")
    lib = Repo(home(mw) / "lib")
    base = app.head()
    sid, scheduler, _runtime = _world(mw, GIT)
    other = {**GIT, "path": "lib"}
    control(mw, sid, "configure", "edit-0001", {"condition": other})
    source = mw.schedules.detail(mw.bob.id, sid)["source"]
    assert source["key"] == "git-branch:lib:main"
    assert source["baseline"]["checkpoint"] == lib.head()  # taken at once
    assert source["otherCheckpoints"] == ["git-branch:app:main"]

    # app moves while lib is followed: lib's slot is unchanged.
    moved = app.commit("while lib was followed")
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and body.gates[-1].reason == "unchanged"
    assert _checkpoint(body, "git-branch:app:main") == base

    # Back to app: its kept checkpoint is the baseline (not a read of it now); the checks
    # counted so far are kept too.
    control(mw, sid, "configure", "edit-0002", {"condition": GIT})
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["source"]["baseline"]["checkpoint"] == base
    assert detail["source"]["otherCheckpoints"] == ["git-branch:lib:main"]
    assert detail["source"]["lastObservation"] is None  # the last read was of lib
    assert detail["checks"]["count"] == 1
    _slot, body = decide_next(mw, scheduler, sid)
    proof = _proof(body)
    assert (proof["baseline"], proof["checkpoint"]) == (base, moved)
    assert body.checks_count == 2


# --- checks ------------------------------------------------------------------------------


def test_checks_count_each_decided_slot_and_each_run_now_once(mw: MissionWorld) -> None:
    repo = Repo(home(mw) / "app")
    repo.git("branch", "release")
    created = mw.clock.now()
    sid = create(mw, DAILY, "create-cond-1", condition={**GIT, "branch": "release"})
    repo.git("branch", "-D", "release")  # gone by Play: no baseline to take
    play(mw, sid)
    scheduler, runtime = _scheduler(mw)
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["source"]["baseline"] is None
    assert detail["checks"] == {"count": 0, "since": created.isoformat().replace("+00:00", "Z")}

    def checks() -> int:
        return stored_body(mw.store, sid).checks_count

    # The branch is missing: blocked, counted zero, read again later: zero again.
    slot, body = decide_next(mw, scheduler, sid)
    assert body.gates[-1].reason == "source-missing" and checks() == 0
    mw.clock.advance(BLOCKED_RETRY)
    for _ in range(10):
        scheduler.run_once()
        time.sleep(0.01)
        mw.clock.advance(timedelta(milliseconds=60))
    assert checks() == 0

    # The branch appears: the kept slot's read is its baseline, counted zero.
    repo.git("branch", "release")
    mw.clock.advance(BLOCKED_RETRY)
    body = decide_slot(mw, scheduler, sid, slot, blocks=False)
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "baseline")
    assert _checkpoint(body, "git-branch:app:release") == repo.git("rev-parse", "release")
    assert checks() == 0

    # Unchanged: +1. Changed: +1 (and launched).
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.gates[-1].reason == "unchanged" and checks() == 1
    repo.git("checkout", "-q", "release")
    repo.commit("on release")
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.gates[-1].reason == "changed" and checks() == 2
    settle(mw, scheduler, runtime, sid, "completed")
    assert checks() == 2  # a settlement counts nothing

    # Run now on a conditioned schedule: +1.
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-0001", expected_revision=rev)
    assert checks() == 3
    again = mw.schedules.run_now(
        mw.bob.id, sid, request_id="run-now-0001", expected_revision=rev
    )  # its repeat: answered, not counted
    assert again.repeated and checks() == 3
    admitted(mw, scheduler, sid)
    settle(mw, scheduler, runtime, sid, "completed")
    assert checks() == 3

    _slot, body = decide_next(mw, scheduler, sid)
    assert body.gates[-1].reason == "unchanged" and checks() == 4
    assert mw.schedules.detail(mw.bob.id, sid)["checks"]["count"] == 4


def test_a_schedule_without_a_condition_counts_no_checks(mw: MissionWorld) -> None:
    sid = create(mw, DAILY, "create-plain-01")
    play(mw, sid)
    scheduler, runtime = _scheduler(mw)
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is not None
    settle(mw, scheduler, runtime, sid, "completed")
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-0001", expected_revision=rev)
    admitted(mw, scheduler, sid)
    body = settle(mw, scheduler, runtime, sid, "completed")
    assert (body.admitted, body.checks_count) == (2, 0)
    assert mw.schedules.detail(mw.bob.id, sid)["checks"]["count"] == 0


# --- a proof too large for the document --------------------------------------------------


def test_a_change_whose_proof_would_not_fit_the_document_blocks_its_slot(
    mw: MissionWorld,
) -> None:
    # 64 paths of about 700 characters. The baseline and the last observation each keep
    # every path (and the source's key lists them): that fits. A pending proof keeps them
    # once more, with the change: that would take the document over MAX_DOCUMENT_BYTES.
    deep = "/".join(c * 230 for c in "cde")
    paths = [f"{deep}/f{i:02d}" for i in range(64)]
    sid, scheduler, runtime = _world(mw, {"kind": "files", "paths": paths})
    _slot, body = decide_next(mw, scheduler, sid)
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")
    water = body.high_water

    root = home(mw)
    (root / deep).mkdir(parents=True)
    for path in paths:
        (root / path).write_text("now here\n")
    slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and runtime.sessions() == []
    assert body.high_water == water  # the slot is kept
    last = body.gates[-1]
    assert (last.slot, last.outcome, last.reason) == (slot, "blocked", "source-unreadable")
    assert "ceiling" in last.detail
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["blockReason"] == "source-unreadable"
    assert detail["size"] <= MAX_DOCUMENT_BYTES

    # The files gone again: the kept slot is read after the retry, unchanged.
    shutil.rmtree(root / ("c" * 230))
    mw.clock.advance(BLOCKED_RETRY)
    body = decide_slot(mw, scheduler, sid, slot, blocks=False)
    assert (body.gates[-1].slot, body.gates[-1].reason) == (slot, "unchanged")
    assert body.high_water == slot and body.pending is None
