"""The scheduler process of the watched cursors' SIGKILL tests: the crash-point process of
:mod:`missions.crash_conditions_support` (its store, kill points and pipe commands), over
a runtime that also keeps each passage's input, so the test reads what a passage was
handed whichever process started it."""

from __future__ import annotations

import json
import os
import traceback
from datetime import UTC, datetime
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any

from kalends.clock import FakeClock
from kalends.missions.runtime.base import PassageStart, Presence
from kalends.missions.scheduler import Scheduler
from kalends.storage.engine import create_engine_for
from missions.crash_conditions_support import DoomedStore, OutcomeRuntime, install_condition_kill
from missions.scheduler_support import die

__all__ = ["InputRuntime", "handed", "watch_worker_main"]


class InputRuntime(OutcomeRuntime):
    """An :class:`OutcomeRuntime` that writes each start's input to
    ``<root>/<session>.input`` (whole, by rename) before it admits the start."""

    def start(self, start: PassageStart) -> Presence:
        tmp = self.root / f".{start.session_id}.{os.getpid()}.input.tmp"
        tmp.write_text(json.dumps(start.input))
        tmp.replace(self.root / f"{start.session_id}.input")
        return super().start(start)


def handed(runtime_dir: Path, session_id: str) -> list[str]:
    """The texts of the messages the passage of ``session_id`` was handed from its one
    watched source (its input as the runtime got it)."""
    given: dict[str, Any] = json.loads((runtime_dir / f"{session_id}.input").read_text())
    [source] = given["watched"]
    return [message["text"] for message in source["messages"]]


def watch_worker_main(
    url: str, owner: str, runtime_dir: str, log: str, pipe: Pipe, kill_at: str | None = None
) -> None:
    """:func:`~missions.crash_conditions_support.condition_worker_main` over an
    :class:`InputRuntime`: ``("step", iso)`` sets the clock and runs one round, answering
    ``("ok", claimed, admitted, errors)``; ``("stop",)`` releases the process's wakes and
    ends it; with ``kill_at`` (one of
    :data:`~missions.crash_conditions_support.CONDITION_POINTS`) the process SIGKILLs
    itself the first time it gets there. An exception is answered with
    ``("error", traceback)``."""
    clock = FakeClock(datetime(2000, 1, 1, tzinfo=UTC))
    engine = create_engine_for(url)
    try:
        store = DoomedStore(engine, clock)
        runtime = InputRuntime(Path(runtime_dir), log=Path(log))
        if kill_at is not None:
            install_condition_kill(store, runtime, kill_at, die)
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
