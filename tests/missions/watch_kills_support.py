"""The scheduler process of the watched cursors' SIGKILL tests: the crash-point process of
:mod:`missions.crash_conditions_support` (its store, kill points and pipe commands), over
a runtime that also keeps each passage's input, so the test reads what a passage was
handed whichever process started it."""

from __future__ import annotations

import json
import os
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any

from kalends.missions.runtime.base import PassageStart, Presence
from missions.crash_conditions_support import OutcomeRuntime, condition_worker_main

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
    condition_worker_main(url, owner, runtime_dir, log, pipe, kill_at, InputRuntime)
