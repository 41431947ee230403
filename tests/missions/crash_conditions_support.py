"""Crash points of a conditioned slot, for scheduler processes killed with SIGKILL.

The start path's points (:data:`~missions.scheduler_support.CRASH_POINTS`) are joined by
the gate's and the settlement's: a process dies with the source's reading in hand
before anything is written, inside the reservation's transaction (the proof written,
not committed), inside the archive's transaction (the proof consumed, not committed)
and right after it commits. :func:`condition_worker_main` is the scheduler process: its
own engine, store, fake clock and scheduler over a shared directory runtime whose
passages report the outcome written in the runtime root's ``outcome`` file.
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from multiprocessing.connection import Connection as Pipe
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.clock import FakeClock
from kalends.missions import batch as batch_module
from kalends.missions.controls import DocState
from kalends.missions.document import Body, load_body
from kalends.missions.gate import Reading, gate
from kalends.missions.gate_records import GateOutcome
from kalends.missions.runtime.base import Observation, Report
from kalends.missions.scheduler import Scheduler
from kalends.storage.engine import create_engine_for
from kalends.storage.mission_tables import schedules
from missions.scheduler_support import CrashingStore, DirRuntime, install_kill

__all__ = [
    "CONDITION_POINTS",
    "DoomedStore",
    "OutcomeRuntime",
    "condition_worker_main",
    "install_condition_kill",
]

CONDITION_POINTS = (
    "read",
    "reserving",
    "reserved",
    "observed",
    "archiving",
    "archived",
)
"""Where a conditioned slot's path can die: ``read`` the source's reading decided a
launch, before the reservation's transaction; ``reserving`` inside it, its
compare-and-swap done, before the commit; ``reserved`` right after that commit;
``observed`` a settled passage observed, before its archive; ``archiving`` inside the
archive's transaction (the proof consumed), before the commit; ``archived`` right after
that commit."""


class DoomedStore(CrashingStore):
    """A :class:`CrashingStore` that also calls :attr:`before_commit` with the connection
    at the end of each outermost write transaction, before it commits."""

    before_commit: Callable[[Connection], None] | None = None

    @contextmanager
    def transaction(
        self, write: bool = True, *, wait: bool = True, savepoints: bool = True
    ) -> Iterator[Connection]:
        outermost = not self.in_transaction
        with super().transaction(write, wait=wait, savepoints=savepoints) as conn:
            yield conn
            if write and outermost and self.before_commit is not None:
                self.before_commit(conn)


class OutcomeRuntime(DirRuntime):
    """A :class:`DirRuntime` whose passages report the outcome in ``<root>/outcome``
    (``completed`` when there is none) and exit 0 the moment they start."""

    def observe(self, session_id: str) -> Observation:
        seen = super().observe(session_id)
        said = self.root / "outcome"
        outcome = said.read_text().strip() if said.exists() else "completed"
        if seen.report is None:
            return seen
        report = Report(outcome=outcome, summary=outcome, at=datetime(2000, 1, 1, tzinfo=UTC))
        return Observation(
            launched=seen.launched,
            running=seen.running,
            exited=seen.exited,
            exit_status=seen.exit_status,
            report=report,
        )


def _bodies(conn: Connection) -> list[Body]:
    return [load_body(text) for text in conn.execute(select(schedules.c.body)).scalars()]


def _reserving(bodies: list[Body]) -> bool:
    return any(b.pending is not None and b.pending.proof is not None for b in bodies)


def _settled(bodies: list[Body]) -> int:
    return sum(b.settled for b in bodies)


def install_condition_kill(
    store: DoomedStore, runtime: OutcomeRuntime, point: str, crash: Callable[[], None]
) -> None:
    """Make ``crash()`` happen once, at ``point`` (one of :data:`CONDITION_POINTS`)."""
    if point in ("reserved", "observed"):
        install_kill(store, runtime, point, crash)
        return
    fired = False

    def once() -> None:
        nonlocal fired
        if not fired:
            fired = True
            crash()

    if point == "read":

        def gated(
            doc: DocState, slot: datetime, now: datetime, reading: Reading
        ) -> tuple[Body, GateOutcome]:
            body, outcome = gate(doc, slot, now, reading)
            if outcome is GateOutcome.LAUNCHED:
                once()
            return body, outcome

        batch_module.gate = gated  # type: ignore[attr-defined]  # (this process's only)
        return
    settled_before = store.run(lambda conn: _settled(_bodies(conn)), write=False)
    if point == "reserving":

        def reserving(conn: Connection) -> None:
            if not fired and _reserving(_bodies(conn)):
                once()

        store.before_commit = reserving
    elif point == "archiving":

        def archiving(conn: Connection) -> None:
            if not fired and _settled(_bodies(conn)) > settled_before:
                once()

        store.before_commit = archiving
    elif point == "archived":

        def archived() -> None:
            if not fired:
                count = store.run(lambda conn: _settled(_bodies(conn)), write=False)
                if count > settled_before:
                    once()

        store.after_write = archived
    else:
        raise ValueError(f"unknown crash point {point!r}")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def condition_worker_main(
    url: str,
    owner: str,
    runtime_dir: str,
    log: str,
    pipe: Pipe,
    kill_at: str | None = None,
    runtime_class: type[OutcomeRuntime] = OutcomeRuntime,
) -> None:
    """A scheduler process (see the module docstring). Commands on ``pipe``:
    ``("step", iso)`` sets the clock and runs one round, answering
    ``("ok", claimed, admitted, errors)``; ``("stop",)`` releases its wakes and ends it.
    With ``kill_at`` the process SIGKILLs itself the first time it gets there;
    ``runtime_class`` is the runtime it drives. An exception is answered with
    ``("error", traceback)``."""
    clock = FakeClock(datetime(2000, 1, 1, tzinfo=UTC))
    engine = create_engine_for(url)
    try:
        store = DoomedStore(engine, clock)
        runtime = runtime_class(Path(runtime_dir), log=Path(log))
        if kill_at is not None:
            install_condition_kill(store, runtime, kill_at, _die)
        scheduler = Scheduler(store, runtime, owner=owner)
        while True:
            command = pipe.recv()
            if command[0] != "step":
                scheduler.release()
                pipe.send(("stopped",))
                return
            clock.set(datetime.fromisoformat(command[1]))
            result = scheduler.run_once()
            pipe.send(("ok", result.claimed, result.admitted, result.errors))
    except Exception:
        pipe.send(("error", traceback.format_exc()))
    finally:
        engine.dispose()
