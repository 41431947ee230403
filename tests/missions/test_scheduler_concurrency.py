"""Several scheduler processes on one database (SQLite file and PostgreSQL): every slot is
admitted exactly once, every admitted passage launched once, and the documents' counters
agree; a scheduler killed with SIGKILL mid-round has its wakes taken over once its lease
(60 s of fake time) runs out, with no slot admitted twice (SPEC §6, seed 002 "Daily
write-ahead passage start and recovery").

Each process (multiprocessing, spawn) has its own engine, store, fake clock and
scheduler; the runtime is a :class:`DirRuntime` shared through a directory, and every
``start`` call is logged per process. The test steps all clocks in lockstep: it sends the
same instant to every process, which runs one round, and waits for all answers before
the next instant. Schedules run ``every 15m`` from one Play; the clocks visit each slot
and, 30 s later, the wake where the (instantly settled) passages are archived.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import select

from kalends.missions.scheduler import scheduled_identity
from kalends.storage.mission_tables import schedule_wakes, scheduler_leases
from kalends.storage.testing import StorageTarget
from missions.conftest import MissionWorld
from missions.scheduler_support import (
    DirRuntime,
    add_workspace,
    all_bodies,
    create,
    play,
    start_calls,
    worker_main,
)

STEP = timedelta(minutes=15)
SETTLE = timedelta(seconds=30)
REPLY_TIMEOUT = 120.0
CLAIM_BATCH = 20  # so that three processes share the wakes from the first rounds on


@dataclass
class Worker:
    owner: str
    process: Any
    pipe: Pipe
    log: Path
    alive: bool = True


@dataclass
class Fleet:
    """The scheduler processes and what they answered."""

    workers: list[Worker]
    admissions: Counter[tuple[str, str]] = field(default_factory=Counter)
    claimed: dict[str, int] = field(default_factory=Counter)

    def send(self, at: datetime, die_after: dict[str, int] | None = None) -> list[Worker]:
        live = [w for w in self.workers if w.alive]
        for w in live:
            n = (die_after or {}).get(w.owner)
            w.pipe.send(("step", at.isoformat()) if n is None else ("step", at.isoformat(), n))
        return live

    def collect(self, workers: list[Worker]) -> None:
        for w in workers:
            if not w.pipe.poll(REPLY_TIMEOUT):
                raise AssertionError(f"{w.owner} did not answer within {REPLY_TIMEOUT} s")
            reply = w.pipe.recv()
            assert reply[0] == "ok", f"{w.owner} failed:\n{reply[1]}"
            _, claimed, admissions, errors = reply
            assert errors == 0, f"{w.owner}: {errors} failed looks"
            self.claimed[w.owner] += claimed
            self.admissions.update((sid, slot) for sid, slot in admissions)

    def step(self, at: datetime) -> None:
        self.collect(self.send(at))

    def warm_up(self, at: datetime, wakes: int) -> None:
        """Rounds before the first slot, until every wake has been claimed."""
        for _ in range(-(-wakes // (CLAIM_BATCH * len(self.workers))) + 1):
            self.step(at)

    def kill(self, worker: Worker) -> None:
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.join(30)
        worker.alive = False


@contextmanager
def fleet(url: str, root: Path, n: int) -> Iterator[Fleet]:
    ctx = multiprocessing.get_context("spawn")
    workers = []
    try:
        for i in range(n):
            mine, theirs = ctx.Pipe()
            log = root / f"starts-{i}.log"
            owner = f"worker-{i}"
            process = ctx.Process(
                target=worker_main,
                args=(url, owner, str(root / "runtime"), str(log), theirs, None, CLAIM_BATCH),
                daemon=True,
            )
            process.start()
            theirs.close()
            workers.append(Worker(owner, process, mine, log))
        f = Fleet(workers)
        yield f
    finally:
        for w in workers:
            if w.alive and w.process.is_alive():
                with suppress(OSError):
                    w.pipe.send(("stop",))
                w.process.join(10)
            if w.process.is_alive():
                os.kill(w.process.pid, signal.SIGKILL)
                w.process.join(10)


def _schedules(mw: MissionWorld, root: Path, count: int) -> tuple[list[UUID], datetime]:
    """``count`` schedules running every 15 minutes, played at the same instant."""
    spaces = [mw.home.id]
    while len(spaces) * 50 < count:
        spaces.append(add_workspace(mw, root, f"ws{len(spaces)}"))
    ids = []
    for i in range(count):
        sid = create(
            mw,
            {"kind": "every", "minutes": 15},
            f"create-{i:05d}",
            workspace=spaces[i % len(spaces)],
        )
        ids.append(sid)
    origin = mw.clock.now()
    for sid in ids:
        play(mw, sid)
    return ids, origin


def _expected(ids: list[UUID], origin: datetime, steps: int) -> dict[UUID, list[datetime]]:
    return {sid: [origin + STEP * k for k in range(1, steps + 1)] for sid in ids}


def _check_documents(mw: MissionWorld, expected: dict[UUID, list[datetime]]) -> None:
    bodies = all_bodies(mw.store)
    for sid, slots in expected.items():
        body = bodies[sid]
        assert body.pending is None, f"{sid}: {body.pending}"
        assert (body.admitted, body.settled, body.successful) == (len(slots),) * 3, sid
        assert [r.slot for r in body.results] == slots[-len(body.results) :]
        passages = [scheduled_identity(str(sid), s)[0] for s in slots[-len(body.results) :]]
        assert [r.passage_id for r in body.results] == passages
        assert body.high_water == slots[-1]


def _check_runtime(root: Path, expected: dict[UUID, list[datetime]]) -> dict[str, Counter[int]]:
    sessions = {
        scheduled_identity(str(sid), s)[1] for sid, slots in expected.items() for s in slots
    }
    records = DirRuntime(root / "runtime").records()
    launched = Counter(r["session"] for r in records)
    assert set(launched) == sessions, "a launch without an admitted slot, or a slot not launched"
    assert max(launched.values()) == 1
    calls = start_calls(sorted(root.glob("starts-*.log")))
    assert set(calls) == sessions
    return calls


def test_three_schedulers_admit_every_slot_once(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path
) -> None:
    """60 schedules x 8 slots = 480 slots across three scheduler processes."""
    ids, origin = _schedules(mw, tmp_path, 60)
    steps = 8
    with fleet(storage_target.url, tmp_path, 3) as f:
        f.warm_up(origin, len(ids))
        for k in range(1, steps + 1):
            f.step(origin + STEP * k)
            f.step(origin + STEP * k + SETTLE)
    expected = _expected(ids, origin, steps)
    keys = {(str(sid), s.isoformat()) for sid, slots in expected.items() for s in slots}
    assert set(f.admissions) == keys
    assert max(f.admissions.values()) == 1, "a slot was admitted twice"
    assert sum(f.admissions.values()) == len(ids) * steps == 480
    _check_documents(mw, expected)
    calls = _check_runtime(tmp_path, expected)
    assert all(sum(c.values()) == 1 for c in calls.values()), "start called twice"
    # The work was shared (ownership moves as leases lapse between fake-clock steps).
    assert len({pid for c in calls.values() for pid in c}) >= 2


def _victim_wakes(mw: MissionWorld, owner: str) -> list[Any]:
    return list(
        mw.store.run(
            lambda conn: conn.execute(
                select(schedule_wakes.c.schedule_id, scheduler_leases.c.expires_at)
                .join(scheduler_leases, scheduler_leases.c.token == schedule_wakes.c.lease_token)
                .where(schedule_wakes.c.owner == owner)
            ).all(),
            write=False,
        )
    )


def test_a_killed_scheduler_is_taken_over_after_its_lease(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path
) -> None:
    """One of three schedulers dies (SIGKILL) in the middle of a round, after a random
    number of its writes and starts; the other two leave its wakes alone while its lease
    lasts, then take them over and reconcile whatever it left half done."""
    ids, origin = _schedules(mw, tmp_path, 60)
    steps, kill_step = 6, 3
    die_after = 10  # the reservations, then 7 of its starts: some started, most not
    with fleet(storage_target.url, tmp_path, 3) as f:
        victim = f.workers[0]
        f.warm_up(origin, len(ids))
        for k in range(1, steps + 1):
            at = origin + STEP * k
            if k != kill_step:
                f.step(at)
                f.step(at + SETTLE)
                continue
            # The victim goes first: it renews its wakes, claims the lapsed ones of the
            # others, reserves and starts its due slots, and dies after ``die_after``
            # committed writes and starts (3: right after the reservations).
            victim.pipe.send(("step", at.isoformat(), die_after))
            victim.process.join(REPLY_TIMEOUT)
            assert victim.process.exitcode == -signal.SIGKILL, "it finished its round"
            victim.alive = False
            f.step(at)
            f.step(at + SETTLE)
            held = _victim_wakes(mw, victim.owner)
            assert held, "the victim held no wake when it died"
            # Within the lease the survivors leave the dead scheduler's wakes alone.
            assert all(expires > at + SETTLE for _, expires in held)
            for _ in range(len(held) // CLAIM_BATCH + 1):  # the lease ran out: taken over
                f.step(at + timedelta(seconds=61))
            assert _victim_wakes(mw, victim.owner) == []
            f.step(at + timedelta(seconds=91))  # the taken-over passages settle
    assert max(f.admissions.values()) == 1, "a slot was admitted twice"
    expected = _expected(ids, origin, steps)
    _check_documents(mw, expected)
    calls = _check_runtime(tmp_path, expected)
    victim_pid = victim.process.pid
    for session, by in calls.items():
        survivors = sum(n for pid, n in by.items() if pid != victim_pid)
        assert survivors <= 1, f"{session}: started again by a survivor"
        # A second call only when the victim died after logging its call (and the
        # survivor's lookup proved the start absent): never two launches.
        assert by[victim_pid] <= 1
