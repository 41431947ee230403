"""A conditioned slot's scheduler process killed with SIGKILL at each point between the
source's read and the archive that consumes its proof, on every backend.

A real git repository in the workspace gates a daily schedule; the test commits, and a
scheduler process (its own engine and fake clock, over a runtime directory shared by
processes) reads the branch in its worker threads and kills itself at the point under
test (:data:`~missions.crash_conditions_support.CONDITION_POINTS`): with the reading in
hand before anything is written, inside the reservation's transaction, right after it
commits, after observing the settled passage, inside the archive's transaction that
consumes the proof, and right after that commit. A fresh scheduler process takes the
wakes over once the dead one's lease has run out. Whatever the point, the proof is
consumed exactly once: one passage per commit (one start call in all), the checkpoint
equals the commit, and the checks count one per decided slot.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from multiprocessing.connection import Connection as Pipe
from multiprocessing.process import BaseProcess
from pathlib import Path
from uuid import UUID

import pytest

from kalends.missions.document import Body
from kalends.missions.scheduler import scheduled_identity
from kalends.storage.testing import StorageTarget
from missions.condition_support import Repo
from missions.conftest import MissionWorld
from missions.crash_conditions_support import CONDITION_POINTS, condition_worker_main
from missions.scheduler_support import create, play, start_calls, stored_body

DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}
SLOT = datetime.fromisoformat("2025-03-02T08:00:00+00:00")  # the first 09:00 after Play
DAY = timedelta(days=1)
GIT = {"kind": "git-branch", "branch": "main", "path": "app"}
KEY = "git-branch:app:main"
POLL = timedelta(milliseconds=60)
"""A round's step while the source is read (past the 50 ms read poll)."""
FALLBACK = timedelta(seconds=31)
"""Past an admitted passage's first pending fallback: the look that observes it."""
LEASE_OVER = timedelta(seconds=61)
ANSWER_WITHIN = 60.0
ROUNDS = 200
"""Rounds a slot may take at most (a loaded machine reads the branch slowly)."""


@dataclass
class Process:
    """A scheduler process and the pipe that drives it."""

    process: BaseProcess
    pipe: Pipe
    owner: str

    def step(self, at: datetime) -> bool:
        """One round at ``at``; False once the process is dead (it killed itself)."""
        try:
            self.pipe.send(("step", at.isoformat()))
        except (BrokenPipeError, ConnectionResetError):
            return False
        if not self.pipe.poll(ANSWER_WITHIN):
            raise AssertionError(f"scheduler {self.owner} did not answer")
        try:
            reply = self.pipe.recv()
        except (EOFError, ConnectionResetError):
            return False
        assert reply[0] == "ok", reply
        assert reply[3] == 0, f"a look failed in {self.owner}: {reply}"
        return True


@contextmanager
def scheduler_process(
    url: str, root: Path, owner: str, kill_at: str | None = None
) -> Iterator[Process]:
    ctx = multiprocessing.get_context("forkserver")
    # Each process forks from a server that imported the scheduler once (a spawned
    # process would import it again: seconds per process).
    # (the tests' own modules are not importable in the fork server: kalends is)
    ctx.set_forkserver_preload(["kalends.missions.scheduler", condition_worker_main.__module__])
    mine, theirs = ctx.Pipe()
    process = ctx.Process(
        target=condition_worker_main,
        args=(url, owner, str(root / "runtime"), str(root / f"starts-{owner}.log"), theirs),
        kwargs={"kill_at": kill_at},
        daemon=True,
    )
    process.start()
    theirs.close()
    try:
        yield Process(process, mine, owner)
    finally:
        if process.is_alive():
            try:
                mine.send(("stop",))
                mine.poll(10)
            except (BrokenPipeError, ConnectionResetError):
                pass
        process.join(10)
        if process.is_alive() and process.pid is not None:
            os.kill(process.pid, signal.SIGKILL)
            process.join(10)


def run_slot(mw: MissionWorld, proc: Process, sid: UUID, slot: datetime, start: datetime) -> bool:
    """Rounds from ``start`` until ``sid``'s ``slot`` is decided and nothing is pending
    (fine steps while the source is read, then past the pending fallbacks); False when
    the process died on the way."""
    at = start
    for _ in range(ROUNDS):
        if not proc.step(at):
            return False
        body = stored_body(mw.store, sid)
        last = body.gates[-1] if body.gates else None
        decided = last is not None and last.slot == slot and last.outcome != "blocked"
        if decided and body.pending is None:
            return True
        if body.pending is not None:
            at += FALLBACK
        else:
            time.sleep(0.03)  # the read runs in the process's worker threads
            at += POLL
    raise AssertionError(f"slot {slot} not finished: {stored_body(mw.store, sid)}")


def checkpoint(body: Body) -> str | None:
    found = body.checkpoint(KEY)
    return None if found is None else found.checkpoint


def check_consumed(mw: MissionWorld, sid: UUID, commit: str, slots: int, passages: int) -> Body:
    body = stored_body(mw.store, sid)
    assert body.pending is None
    assert checkpoint(body) == commit
    assert body.checks_count == slots  # one per decided slot, never twice
    assert (body.admitted, body.settled) == (passages, passages)
    return body


@pytest.mark.parametrize("point", CONDITION_POINTS)
def test_sigkill_around_the_proof_consumes_it_exactly_once(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path, point: str
) -> None:
    repo = Repo(Path(mw.home.path) / "app")
    sid = create(mw, DAILY, "create-0001", condition=GIT)
    play(mw, sid)  # the baseline: the first commit
    moved = repo.commit("fix the parser")
    url = storage_target.url

    with scheduler_process(url, tmp_path, "doomed", point) as doomed:
        assert doomed.step(mw.clock.now())  # claims the wake
        reached = run_slot(mw, doomed, sid, SLOT, SLOT + timedelta(seconds=1))
        assert not reached, f"it never reached {point}"
        doomed.process.join(30)
        assert doomed.process.exitcode == -signal.SIGKILL
    left = stored_body(mw.store, sid)
    if point in ("read", "reserving"):  # nothing of the slot was committed
        assert left.pending is None and left.checks_count == 0 and not left.gates
        assert left.high_water is not None and left.high_water < SLOT
    elif point == "archived":  # consumed and archived, once
        assert left.pending is None and checkpoint(left) == moved
    else:  # reserved, the archive not committed: the proof is not consumed yet
        assert left.pending is not None and left.high_water == SLOT
        assert left.checks_count == 1 and checkpoint(left) != moved

    fresh_at = SLOT + timedelta(minutes=10) + LEASE_OVER
    with scheduler_process(url, tmp_path, "fresh") as fresh:
        assert run_slot(mw, fresh, sid, SLOT, fresh_at)
        body = check_consumed(mw, sid, moved, slots=1, passages=1)
        assert body.successful == 1
        [gate] = [g for g in body.gates if g.slot == SLOT]
        assert (gate.outcome, gate.reason) == ("launched", "changed")
        [result] = body.results
        assert (result.slot, result.outcome) == (SLOT, "completed")

        # The next day, nothing new: the consumed proof launches nothing.
        assert run_slot(mw, fresh, sid, SLOT + DAY, SLOT + DAY + timedelta(seconds=1))
        body = check_consumed(mw, sid, moved, slots=2, passages=1)
        assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")

        # A second commit: one more passage, its proof from the first commit to it.
        again = repo.commit("speed up the lexer")
        assert run_slot(mw, fresh, sid, SLOT + 2 * DAY, SLOT + 2 * DAY + timedelta(seconds=1))
        body = check_consumed(mw, sid, again, slots=3, passages=2)
        assert body.successful == 2

    sessions = [scheduled_identity(str(sid), s)[1] for s in (SLOT, SLOT + 2 * DAY)]
    records = sorted(tmp_path.glob("runtime/*.json"))
    assert sorted(p.stem for p in records) == sorted(sessions)
    calls = start_calls(sorted(tmp_path.glob("starts-*.log")))
    assert {s: sum(c.values()) for s, c in calls.items()} == dict.fromkeys(sessions, 1)


@pytest.mark.parametrize("point", ["observed", "archiving", "archived"])
def test_sigkill_around_a_failed_settlement_keeps_the_baseline(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path, point: str
) -> None:
    """The passage fails: whether the process dies before, inside or after the archive's
    transaction, the baseline stays and the next slot launches again with the same proof;
    the one after it completes and consumes it."""
    repo = Repo(Path(mw.home.path) / "app")
    base = repo.head()
    sid = create(mw, DAILY, "create-0001", condition=GIT)
    play(mw, sid)
    moved = repo.commit("fix the parser")
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "outcome").write_text("failed")
    url = storage_target.url

    with scheduler_process(url, tmp_path, "doomed", point) as doomed:
        assert doomed.step(mw.clock.now())
        assert not run_slot(mw, doomed, sid, SLOT, SLOT + timedelta(seconds=1))
        doomed.process.join(30)
        assert doomed.process.exitcode == -signal.SIGKILL

    with scheduler_process(url, tmp_path, "fresh") as fresh:
        assert run_slot(mw, fresh, sid, SLOT, SLOT + timedelta(minutes=10) + LEASE_OVER)
        body = check_consumed(mw, sid, base, slots=1, passages=1)
        assert body.successful == 0 and body.results[-1].outcome == "failed"

        (tmp_path / "runtime" / "outcome").write_text("completed")
        assert run_slot(mw, fresh, sid, SLOT + DAY, SLOT + DAY + timedelta(seconds=1))
        body = check_consumed(mw, sid, moved, slots=2, passages=2)
        assert [r.outcome for r in body.results] == ["failed", "completed"]
        assert [g.outcome for g in body.gates] == ["launched", "launched"]

    calls = start_calls(sorted(tmp_path.glob("starts-*.log")))
    sessions = [scheduled_identity(str(sid), s)[1] for s in (SLOT, SLOT + DAY)]
    assert {s: sum(c.values()) for s, c in calls.items()} == dict.fromkeys(sessions, 1)


def test_a_commit_after_a_reservation_that_outlived_its_process_waits_for_the_next_slot(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path
) -> None:
    """The process dies right after the reservation commits; the branch moves again before
    a fresh process takes over. The fresh process starts the reserved passage with its
    frozen proof (not a new read): its completion consumes the first commit only, and
    the next slot launches for the second."""
    repo = Repo(Path(mw.home.path) / "app")
    sid = create(mw, DAILY, "create-0001", condition=GIT)
    play(mw, sid)
    moved = repo.commit("fix the parser")
    url = storage_target.url

    with scheduler_process(url, tmp_path, "doomed", "reserved") as doomed:
        assert doomed.step(mw.clock.now())
        assert not run_slot(mw, doomed, sid, SLOT, SLOT + timedelta(seconds=1))
        doomed.process.join(30)
        assert doomed.process.exitcode == -signal.SIGKILL
    frozen = stored_body(mw.store, sid).pending
    assert frozen is not None and frozen.proof is not None
    assert frozen.proof["checkpoint"] == moved
    later = repo.commit("speed up the lexer")

    with scheduler_process(url, tmp_path, "fresh") as fresh:
        assert run_slot(mw, fresh, sid, SLOT, SLOT + timedelta(minutes=10) + LEASE_OVER)
        check_consumed(mw, sid, moved, slots=1, passages=1)
        assert run_slot(mw, fresh, sid, SLOT + DAY, SLOT + DAY + timedelta(seconds=1))
        body = check_consumed(mw, sid, later, slots=2, passages=2)
        [gate] = [g for g in body.gates if g.slot == SLOT + DAY]
        assert (gate.outcome, gate.reason) == ("launched", "changed")
        assert gate.detail.startswith("1 new commit(s)")

    calls = start_calls(sorted(tmp_path.glob("starts-*.log")))
    sessions = [scheduled_identity(str(sid), s)[1] for s in (SLOT, SLOT + DAY)]
    assert {s: sum(c.values()) for s, c in calls.items()} == dict.fromkeys(sessions, 1)
