"""A burst of running schedules all due at one slot, drained by scheduler processes of
which some are killed with SIGKILL mid-burst, each at another point of its round: nothing
is lost and nothing admitted twice (issue 25, crash safety under the burst), on every
backend.

300 schedules in five workspaces, of four policy kinds, are all due at 08:00 UTC. Four
scheduler processes (multiprocessing, forked from a server that imported the scheduler
once; each with its own engine, store, fake clock and scheduler over a shared
:class:`~missions.scheduler_support.DirRuntime`) claim a quarter of the wakes each and
work through them in bounded rounds (25 due wakes a round, three rounds each), all at
once. Three of them SIGKILL themselves mid-burst, one at each
crash point of :mod:`missions.burst_support`:

* after the reservation commit of its second round, before any of its starts;
* after 10 of the 25 starts of its first round, before the admission commit;
* after the admission commit of its first round.

The survivor leaves their wakes alone while their leases last, then takes them over (60 s
of fake time) and finishes the burst. (The three crash points share one burst rather than
one burst each: building 300 schedules is most of the setup.)

Then every slot is counted: each schedule has exactly one admission and one passage, for
the slot, settled; its slot is decided (its ledger holds exactly one row, for the slot,
launched with that passage, and no other row); the runtime holds exactly one launch per
slot, and no ``start`` was called twice for one (every call is logged, by each process,
before it acts).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.civil import parse_rule, slots_between
from kalends.missions import Body
from kalends.missions.scheduler import scheduled_identity
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.mission_tables import schedule_wakes, scheduler_leases
from kalends.storage.testing import StorageTarget
from missions.burst_support import BurstCrash, burst_worker
from missions.conftest import MissionWorld
from missions.scheduler_support import (
    DirRuntime,
    add_workspace,
    all_bodies,
    create,
    play,
    start_calls,
)

pytestmark = pytest.mark.slow

POLICIES: tuple[dict[str, Any], ...] = (
    {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
    {"kind": "cron", "expression": "0 3 * * *", "zone": "America/New_York"},
    {"kind": "every", "minutes": 30},
    {"kind": "times", "times": ["09:00", "21:00"], "zone": "Europe/Berlin"},
)
SCHEDULES = 300
PER_WORKSPACE = 60  # (a workspace holds 64)
PROCESSES = 4
CLAIM = SCHEDULES // PROCESSES  # each process claims a quarter of the wakes
LOOK = 25  # due wakes a round looks at
ROUNDS = CLAIM // LOOK  # each process's rounds at the slot
PLAYED = datetime(2027, 3, 10, 7, 30, tzinfo=UTC)
SLOT = datetime(2027, 3, 10, 8, 0, tzinfo=UTC)  # every policy's first slot after PLAYED
SLOT_KEY = f"{SLOT:%Y-%m-%dT%H:%M:%SZ}"
WARM = SLOT - timedelta(seconds=40)  # the claims; their leases (60 s) reach past SLOT
SETTLE = timedelta(seconds=30)  # an admitted passage's wake is due again (fallback)
LEASE_OVER = timedelta(seconds=61)  # the leases the dead renewed at SLOT ran out
REPLY_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class Doom:
    """A process dies in its slot round ``round`` (from 1) at ``crash``, leaving of its
    schedules ``reserved`` reserved and not admitted, ``started`` launched in the
    runtime, ``admitted`` admitted, and ``untouched`` with nothing reserved."""

    round: int
    crash: BurstCrash
    reserved: int
    started: int
    admitted: int
    untouched: int

    @property
    def left(self) -> tuple[int, int, int, int]:
        return self.reserved, self.started, self.admitted, self.untouched


DOOMS = {
    # Round 1 admitted; round 2 reserved, nothing of it started; round 3 untouched.
    "doomed-reserved": Doom(2, BurstCrash("reserved"), LOOK, LOOK, LOOK, LOOK),
    # Round 1 reserved, 10 of its passages started, none admitted; rounds 2, 3 untouched.
    "doomed-started": Doom(1, BurstCrash("started", 10), LOOK, 10, 0, 2 * LOOK),
    # Round 1 admitted (its answer never sent); rounds 2 and 3 untouched.
    "doomed-admitted": Doom(1, BurstCrash("admitted"), 0, LOOK, LOOK, 2 * LOOK),
}


@dataclass
class Worker:
    owner: str
    process: Any
    pipe: Pipe
    doom: Doom | None = None
    alive: bool = True
    admissions: Counter[tuple[str, str]] = field(default_factory=Counter)

    def send(self, at: datetime, crash: BurstCrash | None = None) -> None:
        self.pipe.send(("step", at.isoformat(), crash))

    def answer(self) -> tuple[int, int, int]:
        """The round's answer: how many wakes it claimed, looked at, reserved."""
        if not self.pipe.poll(REPLY_TIMEOUT):
            raise AssertionError(f"{self.owner} did not answer within {REPLY_TIMEOUT} s")
        reply = self.pipe.recv()
        assert reply[0] == "ok", f"{self.owner} failed:\n{reply[1]}"
        _, claimed, looked, reserved, admissions, errors = reply
        assert errors == 0, f"{self.owner}: {errors} failed looks"
        self.admissions.update((sid, slot) for sid, slot in admissions)
        return claimed, looked, reserved

    def step(self, at: datetime) -> tuple[int, int, int]:
        self.send(at)
        return self.answer()

    def dies(self) -> None:
        """The round it was sent dies: no answer, killed by its own SIGKILL."""
        with suppress(EOFError):
            if self.pipe.poll(REPLY_TIMEOUT):
                reply = self.pipe.recv()
                raise AssertionError(f"{self.owner} finished its round: {reply}")
        self.process.join(30)
        assert self.process.exitcode == -signal.SIGKILL, (self.owner, self.process.exitcode)
        self.alive = False


@contextmanager
def _workers(url: str, root: Path) -> Iterator[list[Worker]]:
    """The survivor, then the doomed processes (all started at once)."""
    ctx = multiprocessing.get_context("forkserver")
    # Each process forks from a server that imported the scheduler once (a spawned
    # process would import it again: a second or more per process). (Python 3.11's server
    # does not take the tests' sys.path: only an installed module preloads there.)
    ctx.set_forkserver_preload(["kalends.missions.scheduler", burst_worker.__module__])
    workers: list[Worker] = []
    try:
        for owner in ("survivor", *DOOMS):
            mine, theirs = ctx.Pipe()
            process = ctx.Process(
                target=burst_worker,
                args=(
                    url, owner, str(root / "runtime"), str(root / f"starts-{owner}.log"),
                    theirs, CLAIM, LOOK,
                ),
                daemon=True,
            )  # fmt: skip
            process.start()
            theirs.close()
            workers.append(Worker(owner, process, mine, DOOMS.get(owner)))
        yield workers
    finally:
        for w in workers:
            if w.alive and w.process.is_alive():
                with suppress(OSError):
                    w.pipe.send(("stop",))
                w.process.join(10)
            if w.process.is_alive():
                os.kill(w.process.pid, signal.SIGKILL)
                w.process.join(10)


def _burst(mw: MissionWorld, root: Path) -> list[UUID]:
    """``SCHEDULES`` running schedules, all played at ``PLAYED``, all due at ``SLOT``."""
    for policy in POLICIES:
        (first,) = slots_between(parse_rule(policy), PLAYED, SLOT + SETTLE, origin=PLAYED)
        assert first.at == SLOT, policy
    mw.clock.set(PLAYED)
    spaces = [mw.home.id]
    while len(spaces) * PER_WORKSPACE < SCHEDULES:
        spaces.append(add_workspace(mw, root, f"ws{len(spaces)}"))
    ids: list[UUID] = []

    def some(conn: Connection) -> None:
        """Fifty creations and their Plays, in one transaction (less setup time)."""
        first = len(ids)
        for i in range(first, min(first + 50, SCHEDULES)):
            policy = POLICIES[i % len(POLICIES)]
            ids.append(create(mw, policy, f"create-{i:05d}", workspace=spaces[i % len(spaces)]))
        for sid in ids[first:]:
            play(mw, sid)

    while len(ids) < SCHEDULES:
        mw.store.run(some, savepoints=False)
    return ids


def _held(mw: MissionWorld) -> dict[str, list[Any]]:
    """Each owner's wakes: (schedule, lease expiry)."""
    rows = mw.store.run(
        lambda conn: conn.execute(
            select(
                schedule_wakes.c.owner,
                schedule_wakes.c.schedule_id,
                scheduler_leases.c.expires_at.label("lease_expires_at"),
            ).join(scheduler_leases, scheduler_leases.c.token == schedule_wakes.c.lease_token)
        ).all(),
        write=False,
    )
    held: dict[str, list[Any]] = {}
    for row in rows:
        held.setdefault(row.owner, []).append(row)
    return held


def _left(bodies: dict[UUID, Body], ids: set[UUID], launched: set[str]) -> tuple[int, ...]:
    """What a crash left of ``ids``: how many reserved and not admitted, launched in the
    runtime, admitted, and with nothing reserved (as :attr:`Doom.left`)."""
    pendings = [bodies[sid].pending for sid in ids]
    return (
        sum(p is not None and not p.admitted for p in pendings),
        len(launched & {str(sid) for sid in ids}),
        sum(p is not None and p.admitted for p in pendings),
        sum(bodies[sid].pending is None and bodies[sid].admitted == 0 for sid in ids),
    )


def _settled(mw: MissionWorld, ids: list[UUID]) -> bool:
    bodies = all_bodies(mw.store)
    return all(bodies[sid].pending is None and bodies[sid].settled >= 1 for sid in ids)


def _drain(survivor: Worker, at: datetime) -> None:
    """Rounds at ``at`` until one claims nothing and looks at less than a full round."""
    for _ in range(4 * SCHEDULES // LOOK):
        claimed, looked, _ = survivor.step(at)
        if claimed == 0 and looked < LOOK:
            return
    raise AssertionError("the rounds never ran dry")


def test_schedulers_killed_mid_burst_lose_no_slot_and_admit_none_twice(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path
) -> None:
    runtime = DirRuntime(tmp_path / "runtime")
    with _workers(storage_target.url, tmp_path) as workers:
        survivor, *doomed = workers
        ids = _burst(mw, tmp_path)  # (while the processes start)
        # Before the slot, each claims a quarter of the wakes, in turn.
        for w in workers:
            assert w.step(WARM)[0] == CLAIM, w.owner
        held = _held(mw)
        assert sorted(len(held[w.owner]) for w in workers) == [CLAIM] * PROCESSES
        mine = {w.owner: {row.schedule_id for row in held[w.owner]} for w in workers}

        # The burst: all work through their quarters at once, a round at a time; each
        # doomed one dies in its round ``doom.round``.
        for n in range(1, ROUNDS + 1):
            live = [w for w in workers if w.alive]
            for w in live:
                w.send(SLOT, w.doom.crash if w.doom is not None and w.doom.round == n else None)
            for w in live:
                if w.doom is not None and w.doom.round == n:
                    w.dies()
                else:
                    _, looked, reserved = w.answer()
                    assert looked == reserved == LOOK, w.owner
        assert not any(w.alive for w in doomed)

        # What each crash left: the burst was cut mid-way, at the point named.
        bodies = all_bodies(mw.store)
        launched = {r["schedule"] for r in runtime.records()}
        for w in doomed:
            assert w.doom is not None
            assert _left(bodies, mine[w.owner], launched) == w.doom.left, w.owner

        # Within the leases, the survivor settles its own passages and leaves the dead
        # ones' wakes alone.
        _drain(survivor, SLOT + SETTLE)
        held = _held(mw)
        for w in doomed:
            assert {row.schedule_id for row in held[w.owner]} == mine[w.owner], w.owner
            assert all(row.lease_expires_at > SLOT + SETTLE for row in held[w.owner])

        # The leases ran out: the survivor takes the wakes over and finishes the burst,
        # in bounded rounds, 30 s (the passages' fallback) apart.
        at = SLOT + LEASE_OVER
        while not _settled(mw, ids):
            assert at - SLOT < timedelta(minutes=5), "the burst was not drained"
            _drain(survivor, at)
            at += SETTLE
        held = _held(mw)
        assert set(held) == {"survivor"} and len(held["survivor"]) == SCHEDULES

    _count_every_slot(mw, tmp_path, ids, workers)


def _count_every_slot(mw: MissionWorld, root: Path, ids: list[UUID], workers: list[Worker]) -> None:
    passages = {sid: scheduled_identity(str(sid), SLOT) for sid in ids}
    # Each schedule: exactly one admission and one passage, for the slot, settled.
    bodies = all_bodies(mw.store)
    assert set(bodies) == set(ids)
    for sid in ids:
        body = bodies[sid]
        assert body.pending is None, sid
        assert (body.admitted, body.settled, body.successful) == (1, 1, 1), sid
        assert [(r.slot, r.passage_id) for r in body.results] == [(SLOT, passages[sid][0])]
        assert body.high_water == SLOT, sid
    # Each schedule's slot decided: exactly one ledger row, the slot's, launched with
    # that passage; no other row.
    rows = mw.store.run(
        lambda conn: conn.execute(
            select(
                slot_ledger.c.schedule_id,
                slot_ledger.c.slot_key,
                slot_ledger.c.outcome,
                slot_ledger.c.passage_id,
            )
        ).all(),
        write=False,
    )
    per_schedule = Counter(r.schedule_id for r in rows)
    assert set(per_schedule) == set(ids), "a schedule without its slot decided"
    assert max(per_schedule.values()) == 1
    assert len(rows) == len(ids)
    for r in rows:
        expected = (SLOT_KEY, "launched", passages[r.schedule_id][0])
        assert (r.slot_key, r.outcome, r.passage_id) == expected, r
    # The runtime: exactly one launch per slot, and no start called twice.
    sessions = {identity[1] for identity in passages.values()}
    launches = Counter(r["session"] for r in DirRuntime(root / "runtime").records())
    assert set(launches) == sessions, "a slot not launched, or a launch without a slot"
    assert max(launches.values()) == 1
    calls = start_calls(sorted(root.glob("starts-*.log")))
    assert set(calls) == sessions
    twice = {s: c for s, c in calls.items() if sum(c.values()) != 1}
    assert not twice, f"start called more than once: {twice}"
    # The rounds' answers: every admission reported once, for the slot, but those of the
    # round that died after its admission commit (never answered).
    reported: Counter[tuple[str, str]] = sum((w.admissions for w in workers), Counter())
    assert max(reported.values()) == 1
    assert {slot for _, slot in reported} == {SLOT.isoformat()}
    unanswered = sum(d.admitted for d in DOOMS.values() if d.crash.point == "admitted")
    assert reported.total() == len(ids) - unanswered
