"""The scheduler process of the burst tests, as
:func:`~missions.scheduler_support.worker_main` but with bounded rounds (``claim_batch``
free wakes claimed, ``look_batch`` due wakes looked at, per round) and a crash armed for
one round at a named point of the set-based round.

The points (:data:`BURST_CRASHES`) are where the round can die between its writes:

* ``reserved``: the reservation transaction committed, no passage started (the process
  dies as the first ``start`` is called, before it acts);
* ``started``: ``count`` passages started (the round's others not), the admission
  transaction not made;
* ``admitted``: the admission transaction committed (the first committed write after a
  start of the round), the round's answer not sent.
"""

from __future__ import annotations

import os
import signal
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection as Pipe
from pathlib import Path

from kalends.clock import FakeClock
from kalends.missions import scheduler as scheduler_module
from kalends.missions.runtime.base import PassageStart, Presence
from kalends.missions.scheduler import Scheduler
from kalends.storage.engine import create_engine_for
from missions.scheduler_support import CrashingStore, DirRuntime

__all__ = ["BURST_CRASHES", "BurstCrash", "burst_worker"]

BURST_CRASHES = ("reserved", "started", "admitted")


@dataclass(frozen=True, slots=True)
class BurstCrash:
    """Where one round dies: ``point`` (one of :data:`BURST_CRASHES`); for ``started``,
    after how many starts of the round."""

    point: str
    count: int = 0

    def __post_init__(self) -> None:
        if self.point not in BURST_CRASHES:
            raise ValueError(f"unknown crash point {self.point!r}")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _Armed:
    """The crash of the current round, if any, and what the round did so far."""

    def __init__(self) -> None:
        self.crash: BurstCrash | None = None
        self.starts = 0

    def arm(self, crash: BurstCrash | None) -> None:
        self.crash = crash
        self.starts = 0

    def before_start(self) -> None:
        if self.crash is not None and self.crash.point == "reserved":
            _die()

    def after_start(self) -> None:
        self.starts += 1
        crash = self.crash
        if crash is not None and crash.point == "started" and self.starts >= crash.count:
            _die()

    def after_write(self) -> None:
        if self.crash is not None and self.crash.point == "admitted" and self.starts:
            _die()


class _CrashingRuntime(DirRuntime):
    """A :class:`DirRuntime` whose ``start`` calls may die as the round's crash says."""

    def __init__(self, root: Path, armed: _Armed, *, log: Path) -> None:
        super().__init__(root, log=log)
        self.armed = armed

    def start(self, start: PassageStart) -> Presence:
        self.armed.before_start()
        presence = super().start(start)
        self.armed.after_start()
        return presence


def burst_worker(
    url: str,
    owner: str,
    runtime_dir: str,
    log: str,
    pipe: Pipe,
    claim_batch: int,
    look_batch: int,
) -> None:
    """A scheduler process: its own engine, store, fake clock and scheduler over a shared
    :class:`~missions.scheduler_support.DirRuntime`. Commands on ``pipe``:
    ``("step", iso, crash)`` sets the clock and runs one round, dying as ``crash`` (a
    :class:`BurstCrash` or ``None``) says, else answering ``("ok", claimed, looked,
    reserved, admissions, errors)``; ``("stop",)`` releases nothing and ends it (the
    wakes stay leased, as a process that stopped answering leaves them). An exception
    is answered with ``("error", traceback)``."""
    scheduler_module.CLAIM_BATCH = claim_batch
    scheduler_module.LOOK_BATCH = look_batch
    clock = FakeClock(datetime(2000, 1, 1, tzinfo=UTC))
    engine = create_engine_for(url)
    armed = _Armed()
    try:
        store = CrashingStore(engine, clock)
        store.after_write = armed.after_write
        runtime = _CrashingRuntime(Path(runtime_dir), armed, log=Path(log))
        scheduler = Scheduler(store, runtime, owner=owner)
        while True:
            command = pipe.recv()
            if command[0] != "step":
                pipe.send(("stopped",))
                return
            clock.set(datetime.fromisoformat(command[1]))
            armed.arm(command[2])
            result = scheduler.run_once()
            armed.arm(None)
            admissions = [(str(s), slot.isoformat()) for s, slot, _ in result.admissions]
            pipe.send(
                ("ok", result.claimed, result.looked, result.reserved, admissions, result.errors)
            )
    except Exception:
        pipe.send(("error", traceback.format_exc()))
    finally:
        engine.dispose()
