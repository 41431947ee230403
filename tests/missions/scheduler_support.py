"""Helpers of the scheduler tests: schedules in any policy, stored bodies, a driver that
steps the fake clock and runs the scheduler, a durable runtime kept in a directory that
several processes share, and the scheduler worker those processes run.

:class:`DirRuntime` is the memory runtime's contract kept on disk: a start is admitted by
creating ``<session>.json`` atomically (``link`` of a complete temporary file, so the
first admission wins and a killed process never leaves a partial record), every passage
exits 0 with a completed report the moment it starts (``instant``) or when
:meth:`DirRuntime.finish` writes ``<session>.exit``. Each ``start`` call is appended to a
per-process log *before* it acts, so the logs show every attempt, even one a SIGKILL
cut short.
"""

from __future__ import annotations

import json
import os
import signal
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from sqlalchemy import select

from kalends.clock import FakeClock
from kalends.errors import NotFound
from kalends.identity import Role
from kalends.missions import Body
from kalends.missions import scheduler as scheduler_module
from kalends.missions.document import load_body
from kalends.missions.runtime.base import Observation, PassageStart, Presence, Report
from kalends.missions.scheduler import LookResult, Scheduler
from kalends.storage.engine import create_engine_for
from kalends.storage.mission_tables import schedules
from kalends.storage.unit_of_work import Store
from missions.conftest import MissionWorld, daily_config

__all__ = [
    "CRASH_POINTS",
    "SETTLE",
    "Admission",
    "Crash",
    "CrashingStore",
    "DirRuntime",
    "Driver",
    "add_workspace",
    "all_bodies",
    "create",
    "install_kill",
    "play",
    "start_calls",
    "stored_body",
    "worker_main",
]


T = TypeVar("T")


class Crash(BaseException):
    """A simulated death of the scheduler process at an injected point: a BaseException,
    so the scheduler's per-wake guard does not catch it and nothing after it runs."""


# --- schedules ---------------------------------------------------------------------------


def create(
    mw: MissionWorld,
    policy: dict[str, Any],
    request_id: str,
    *,
    workspace: UUID | None = None,
    **overrides: Any,
) -> UUID:
    """A new paused schedule with ``policy`` (in ``home`` unless told), created by bob."""
    receipt = mw.schedules.create(
        mw.bob.id,
        workspace or mw.home.id,
        daily_config(policy=policy, **overrides),
        request_id=request_id,
    )
    assert receipt.status == "created" and receipt.mission_id is not None
    return receipt.mission_id


def play(mw: MissionWorld, sid: UUID) -> None:
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.play(mw.bob.id, sid, request_id=f"play-{rev:05d}", expected_revision=rev)


def add_workspace(mw: MissionWorld, root: Path, name: str) -> UUID:
    """Another workspace owned by alice where bob edits (a workspace holds 64 schedules)."""
    (root / name).mkdir()
    ws = mw.workspaces.add(mw.alice.id, root / name, name)
    mw.workspaces.set_member(mw.alice.id, ws.id, mw.bob.id, Role.EDITOR)
    return ws.id


def stored_body(store: Store, sid: UUID) -> Body:
    text = store.run(
        lambda conn: conn.execute(
            select(schedules.c.body).where(schedules.c.id == sid)
        ).scalar_one(),
        write=False,
    )
    return load_body(text)


def all_bodies(store: Store) -> dict[UUID, Body]:
    rows = store.run(
        lambda conn: conn.execute(select(schedules.c.id, schedules.c.body)).all(), write=False
    )
    return {row.id: load_body(row.body) for row in rows}


# --- driving one scheduler ---------------------------------------------------------------

SETTLE = timedelta(seconds=30)
"""When an admitted passage's wake is due again (the first pending fallback)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """One admission a look reported: which schedule, which slot, when."""

    schedule: UUID
    slot: datetime
    at: datetime


@dataclass
class Driver:
    """Steps the fake clock and runs the scheduler at each step; keeps what it admitted
    and the high-water marks it saw (to prove they never move back)."""

    mw: MissionWorld
    scheduler: Scheduler
    admissions: list[Admission] = field(default_factory=list)
    high_water: dict[UUID, list[datetime]] = field(default_factory=dict)
    after_round: Callable[[LookResult], None] | None = None

    def once(self) -> LookResult:
        result = self.scheduler.run_once()
        self.admissions.extend(Admission(s, slot, at) for s, slot, at in result.admissions)
        if self.after_round is not None:
            self.after_round(result)
        self.watch()
        return result

    def watch(self) -> None:
        for sid, body in all_bodies(self.mw.store).items():
            if body.high_water is None:
                continue
            seen = self.high_water.setdefault(sid, [])
            if seen:
                assert body.high_water >= seen[-1], f"{sid}: high-water moved back"
            seen.append(body.high_water)

    def until(self, end: datetime, step: timedelta = timedelta(minutes=15)) -> None:
        """Run at the current instant, then at every ``step`` up to ``end`` inclusive.

        A round that admitted something is followed by one more round 30 s later (the
        wake of an admitted passage: the pending fallback), where the passage, settled by
        then, is archived; that round admits nothing (slots fall on the grid)."""
        clock = self.mw.clock
        while True:
            at = clock.now()
            if self.once().admitted:
                clock.advance(SETTLE)
                settle = self.once()
                assert settle.admitted == 0 and settle.settled >= 1, settle
            if at + step > end:
                return
            clock.advance(at + step - clock.now())

    def slots(self, sid: UUID) -> list[datetime]:
        return [a.slot for a in self.admissions if a.schedule == sid]


# --- a runtime several processes share ---------------------------------------------------


class DirRuntime:
    """A durable runtime kept in ``root`` (see the module docstring)."""

    def __init__(self, root: Path, *, log: Path | None = None, instant: bool = True) -> None:
        self.root = root
        self.log = log
        self.instant = instant
        self.on_start: Callable[[], None] | None = None
        root.mkdir(parents=True, exist_ok=True)

    def _record(self, session_id: str) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads((self.root / f"{session_id}.json").read_text())
        except FileNotFoundError:
            return None
        return data

    def start(self, start: PassageStart) -> Presence:
        if self.log is not None:
            fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"{start.session_id} {os.getpid()}\n".encode())
            finally:
                os.close(fd)
        final = self.root / f"{start.session_id}.json"
        tmp = self.root / f".{start.session_id}.{os.getpid()}.tmp"
        tmp.write_text(
            json.dumps(
                {
                    "session": start.session_id,
                    "message": start.message_id,
                    "passage": start.passage_id,
                    "schedule": start.schedule_id,
                    "pid": os.getpid(),
                }
            )
        )
        try:
            os.link(tmp, final)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        if self.on_start is not None:
            self.on_start()
        return self.lookup(start.session_id, start.message_id)

    def lookup(self, session_id: str, message_id: str) -> Presence:
        record = self._record(session_id)
        if record is None:
            return Presence.ABSENT
        return Presence.PRESENT if record["message"] == message_id else Presence.UNKNOWN

    def observe(self, session_id: str) -> Observation:
        record = self._record(session_id)
        if record is None:
            raise NotFound(f"no passage was admitted for session {session_id!r}")
        done = self.instant or (self.root / f"{session_id}.exit").exists()
        report = Report(outcome="completed", summary="", at=datetime(2000, 1, 1, tzinfo=UTC))
        return Observation(
            launched=True,
            running=not done,
            exited=done,
            exit_status=0 if done else None,
            report=report if done else None,
        )

    def interrupt(self, session_id: str) -> None:
        (self.root / f"{session_id}.exit").touch()

    def finish(self, session_id: str) -> None:
        (self.root / f"{session_id}.exit").touch()

    def records(self) -> list[dict[str, Any]]:
        """Every admitted start (one file each: at most one per session by construction)."""
        return [json.loads(p.read_text()) for p in sorted(self.root.glob("*.json"))]


def start_calls(logs: list[Path]) -> dict[str, Counter[int]]:
    """Per session, how many ``start`` calls each process made (from the per-process logs)."""
    calls: dict[str, Counter[int]] = {}
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text().splitlines():
            session, pid = line.split()
            calls.setdefault(session, Counter())[int(pid)] += 1
    return calls


# --- the scheduler process ---------------------------------------------------------------


def worker_main(
    url: str,
    owner: str,
    runtime_dir: str,
    log: str,
    pipe: Pipe,
    kill_at: str | None = None,
    claim_batch: int | None = None,
) -> None:
    """A scheduler process: its own engine, store, fake clock and scheduler over a shared
    :class:`DirRuntime`. Commands on ``pipe``: ``("step", iso, die_after)`` sets the clock
    and runs one round, answering ``("ok", claimed, admissions, errors)``; with
    ``die_after`` (a number) the process SIGKILLs itself after that many committed write
    transactions and runtime starts of the round. ``("stop",)`` ends it. ``kill_at``
    names a crash point where the process SIGKILLs itself the first time it gets there
    (see :func:`install_kill`). ``claim_batch`` lowers how many free wakes a round
    claims, so that a few processes share a few hundred wakes. An exception is answered
    with ``("error", traceback)``."""
    if claim_batch is not None:
        scheduler_module.CLAIM_BATCH = claim_batch
    clock = FakeClock(datetime(2000, 1, 1, tzinfo=UTC))
    engine = create_engine_for(url)
    left: list[int | None] = [None]

    def tick() -> None:
        if left[0] is not None:
            left[0] -= 1
            if left[0] <= 0:
                die()

    try:
        store = CrashingStore(engine, clock)
        runtime = DirRuntime(Path(runtime_dir), log=Path(log))
        if kill_at is not None:
            install_kill(store, runtime, kill_at, die)
        else:
            store.after_write = tick
            runtime.on_start = tick
        scheduler = Scheduler(store, runtime, owner=owner)
        while True:
            command = pipe.recv()
            if command[0] != "step":
                pipe.send(("stopped",))
                return
            clock.set(datetime.fromisoformat(command[1]))
            left[0] = command[2] if len(command) > 2 else None
            result = scheduler.run_once()
            left[0] = None
            admissions = [(str(s), slot.isoformat()) for s, slot, _ in result.admissions]
            pipe.send(("ok", result.claimed, admissions, result.errors))
    except Exception:
        pipe.send(("error", traceback.format_exc()))
    finally:
        engine.dispose()


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


CRASH_POINTS = ("reserved", "started", "admitted", "observed")
"""Where the start path can die: after the reservation compare-and-swap commits, after the
runtime's ``start`` returns, after the admission compare-and-swap commits, and after the
observation of a settled passage, before its archive."""


class CrashingStore(Store):
    """A store that calls :attr:`after_write` after each committed outermost write
    transaction (a point where a process can die with the write durable)."""

    after_write: Callable[[], None] | None = None

    def run(
        self,
        fn: Callable[[Any], T],
        *,
        write: bool = True,
        wait: bool = True,
        savepoints: bool = True,
    ) -> T:
        nested = self.in_transaction
        out = super().run(fn, write=write, wait=wait, savepoints=savepoints)
        if write and not nested and self.after_write is not None:
            self.after_write()
        return out


def _pendings(store: Store) -> list[Any]:
    return [b.pending for b in all_bodies(store).values() if b.pending is not None]


def install_kill(store: CrashingStore, runtime: Any, point: str, crash: Callable[[], None]) -> None:
    """Make ``crash()`` happen once, at ``point`` (one of :data:`CRASH_POINTS`), whichever
    way the scheduler gets there (its set-based round or a look of its own): by watching
    the committed state after each write of ``store``, or by wrapping ``runtime``'s
    methods on this instance (fault injection)."""
    fired = False

    def once() -> None:
        nonlocal fired
        if not fired:
            fired = True
            crash()

    if point in ("reserved", "admitted"):
        admitted = point == "admitted"

        def after_write() -> None:
            if not fired and any(p.admitted is admitted for p in _pendings(store)):
                once()

        store.after_write = after_write
    elif point == "started":
        start = runtime.start

        def started(s: PassageStart) -> Presence:
            presence: Presence = start(s)
            once()
            return presence

        runtime.start = started
    elif point == "observed":
        observe = runtime.observe

        def observed(session_id: str) -> Observation:
            obs: Observation = observe(session_id)
            if obs.settled:
                once()
            return obs

        runtime.observe = observed
    else:
        raise ValueError(f"unknown crash point {point!r}")
