"""A watching schedule's scheduler process killed with SIGKILL between its passage's
settlement and the watched cursor's advance, on every backend.

A schedule watches a thread of 40 messages; a scheduler process (its own engine and
fake clock, over a runtime directory shared by processes) reserves and starts a Run now
passage, handed the first 32 messages; the passage settles, and the process kills itself
at the point under test (:data:`~missions.crash_conditions_support.CONDITION_POINTS`'
settlement points): after observing the settled passage, inside the archive's
transaction once the cursor is written, and right after that transaction commits. A
fresh process takes the wake over once the dead one's lease has run out. Whatever the
point, the passage is archived once and a ``completed`` one advances the cursor once, to
the 32nd message, in the archive's own transaction (its instant is that archive's), so
the next passage is handed the other 8; a ``failed`` one never moves it, and the next
passage is handed the same 32 again. :mod:`missions.test_watch_crashes` is the same crash
simulated by an exception inside one process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from kalends.conversations import MAX_MESSAGES_PER_SOURCE
from kalends.missions.document import Body
from kalends.storage.testing import StorageTarget
from kalends.storage.watch_tables import passage_watch_reads, watch_cursors
from missions.conftest import MissionWorld
from missions.scheduler_support import DirRuntime, create, start_calls, stored_body
from missions.test_condition_crashes import LEASE_OVER, Process
from missions.test_watched_conversations import DAILY, _thread
from missions.watch_kills_support import handed, watch_worker_main

SETTLEMENT_POINTS = ("observed", "archiving", "archived")
"""The points between a passage's settlement and its archive's commit (see
:data:`~missions.crash_conditions_support.CONDITION_POINTS`)."""
MESSAGES = 40
"""The watched thread's messages: one full batch and 8 more."""
BATCH = MAX_MESSAGES_PER_SOURCE
FALLBACK = timedelta(seconds=31)
"""Past an admitted passage's first pending fallback: the look that observes it."""
ROUNDS = 20
"""Rounds a passage may take from Run now to its archive at most (it needs two or three)."""


@contextmanager
def scheduler_process(
    url: str, root: Path, owner: str, kill_at: str | None = None
) -> Iterator[Process]:
    """A :func:`~missions.watch_kills_support.watch_worker_main` process, stopped (or
    killed, when it does not stop) on the way out."""
    ctx = multiprocessing.get_context("forkserver")
    # (the tests' own modules are not importable in the fork server: kalends is)
    ctx.set_forkserver_preload(["kalends.missions.scheduler", watch_worker_main.__module__])
    mine, theirs = ctx.Pipe()
    process = ctx.Process(
        target=watch_worker_main,
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


def run_now(mw: MissionWorld, sid: UUID, n: int) -> None:
    """bob's ``n``-th Run now of ``sid``, at the test's clock."""
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id=f"run-kill-{n}", expected_revision=rev)


def until_archived(
    mw: MissionWorld, proc: Process, sid: UUID, at: datetime, passages: int
) -> tuple[datetime, bool]:
    """Rounds of ``proc`` from ``at``, a pending fallback apart (the test's clock kept
    with them), until ``sid`` has archived ``passages`` passages and nothing is pending:
    the last round's instant, and False when the process died on the way."""
    for _ in range(ROUNDS):
        mw.clock.set(at)
        if not proc.step(at):
            return at, False
        body = stored_body(mw.store, sid)
        if body.settled == passages and body.pending is None:
            return at, True
        at += FALLBACK
    raise AssertionError(f"{passages} passage(s) not archived: {stored_body(mw.store, sid)}")


def cursors(mw: MissionWorld) -> list[tuple[int, datetime]]:
    """Every watched cursor: the seq it stands after and when it was written."""

    def read(conn: Connection) -> list[tuple[int, datetime]]:
        rows = conn.execute(select(watch_cursors.c.cursor, watch_cursors.c.updated_at)).all()
        return [(json.loads(row.cursor)["seq"], row.updated_at) for row in rows]

    return mw.store.run(read, write=False)


def frozen_reads(mw: MissionWorld) -> int:
    """How many passages' handed batches are kept (each goes with its archive)."""
    return mw.store.run(
        lambda conn: conn.execute(
            select(func.count()).select_from(passage_watch_reads)
        ).scalar_one(),
        write=False,
    )


def sessions(root: Path) -> dict[str, str]:
    """Each started passage's session, by passage."""
    return {r["passage"]: r["session"] for r in DirRuntime(root / "runtime").records()}


def texts(first: int, last: int) -> list[str]:
    """The texts of the thread's messages ``first`` to ``last``."""
    return [f"inbox {n}" for n in range(first, last + 1)]


def started_once(root: Path) -> None:
    """Each passage was started once, whichever processes looked at it."""
    calls = start_calls(sorted(root.glob("starts-*.log")))
    assert {s: sum(c.values()) for s, c in calls.items()} == dict.fromkeys(
        sessions(root).values(), 1
    )


def killed_at(
    mw: MissionWorld, url: str, root: Path, sid: UUID, point: str
) -> tuple[datetime, Body]:
    """Run now, then a doomed process until it dies at ``point``: the instant it died at,
    and the body it left."""
    run_now(mw, sid, 1)
    with scheduler_process(url, root, "doomed", point) as doomed:
        died, alive = until_archived(mw, doomed, sid, mw.clock.now(), passages=1)
        assert not alive, f"it never reached {point}"
        doomed.process.join(30)
        assert doomed.process.exitcode == -signal.SIGKILL
    return died, stored_body(mw.store, sid)


@pytest.mark.parametrize("point", SETTLEMENT_POINTS)
def test_sigkill_around_a_completed_settlement_advances_the_cursor_once(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path, point: str
) -> None:
    thread = _thread(mw, "inbox", MESSAGES)
    sid = create(mw, DAILY, "create-watch-kill", watch=[str(thread.id)])
    runtime = tmp_path / "runtime"
    url = storage_target.url

    died, left = killed_at(mw, url, tmp_path, sid, point)
    [(first, session)] = sessions(tmp_path).items()
    assert handed(runtime, session) == texts(1, BATCH)
    if point == "archived":  # the archive committed, the cursor with it
        assert left.pending is None and [r.passage_id for r in left.results] == [first]
        assert cursors(mw) == [(BATCH, died)] and frozen_reads(mw) == 0
    else:  # nothing of the archive committed: the cursor did not move
        assert left.pending is not None and left.pending.passage_id == first
        assert left.results == () and left.settled == 0
        assert cursors(mw) == [] and frozen_reads(mw) == 1

    with scheduler_process(url, tmp_path, "fresh") as fresh:
        archived, alive = until_archived(mw, fresh, sid, died + LEASE_OVER, passages=1)
        assert alive
        body = stored_body(mw.store, sid)
        assert [(r.passage_id, r.outcome) for r in body.results] == [(first, "completed")]
        # Once: written by the round that archived the passage, never again.
        assert cursors(mw) == [(BATCH, died if point == "archived" else archived)]
        assert frozen_reads(mw) == 0

        run_now(mw, sid, 2)
        last, alive = until_archived(mw, fresh, sid, archived + FALLBACK, passages=2)
        assert alive
    [second] = set(sessions(tmp_path)) - {first}
    assert handed(runtime, sessions(tmp_path)[second]) == texts(BATCH + 1, MESSAGES)
    body = stored_body(mw.store, sid)
    assert [(r.passage_id, r.outcome) for r in body.results] == [
        (first, "completed"),
        (second, "completed"),
    ]
    assert cursors(mw) == [(MESSAGES, last)]
    started_once(tmp_path)


@pytest.mark.parametrize("point", SETTLEMENT_POINTS)
def test_sigkill_around_a_failed_settlement_never_moves_the_cursor(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path, point: str
) -> None:
    thread = _thread(mw, "inbox", MESSAGES)
    sid = create(mw, DAILY, "create-watch-kill", watch=[str(thread.id)])
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "outcome").write_text("failed")
    url = storage_target.url

    died, left = killed_at(mw, url, tmp_path, sid, point)
    [(first, session)] = sessions(tmp_path).items()
    assert handed(runtime, session) == texts(1, BATCH)
    assert cursors(mw) == []
    archived_by_the_dead = point == "archived"
    assert (left.pending is None) is archived_by_the_dead
    assert frozen_reads(mw) == (0 if archived_by_the_dead else 1)

    with scheduler_process(url, tmp_path, "fresh") as fresh:
        archived, alive = until_archived(mw, fresh, sid, died + LEASE_OVER, passages=1)
        assert alive
        body = stored_body(mw.store, sid)
        assert [(r.passage_id, r.outcome) for r in body.results] == [(first, "failed")]
        assert cursors(mw) == [] and frozen_reads(mw) == 0

        # The same batch again; completed, it moves the cursor.
        (runtime / "outcome").write_text("completed")
        run_now(mw, sid, 2)
        last, alive = until_archived(mw, fresh, sid, archived + FALLBACK, passages=2)
        assert alive
    [second] = set(sessions(tmp_path)) - {first}
    assert handed(runtime, sessions(tmp_path)[second]) == texts(1, BATCH)
    assert cursors(mw) == [(BATCH, last)]
    started_once(tmp_path)
