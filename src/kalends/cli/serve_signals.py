"""The stop signals of ``kalends serve``: SIGTERM or SIGINT stops it gracefully, a second
one exits at once with 130."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from kalends.cli.logs import JsonFormatter, TextFormatter
from kalends.cli.worker import EXIT_INTERRUPTED

if TYPE_CHECKING:
    import uvicorn

__all__ = ["Stopping", "handling_signals"]

_log = logging.getLogger("kalends.serve")


@dataclass(slots=True)
class Stopping:
    """What the first stop signal stops: the loops (``stop``) and the server once it runs."""

    log_format: str = "text"
    stop: threading.Event = field(default_factory=threading.Event)
    server: uvicorn.Server | None = None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():
            _exit_at_once(signum, self.log_format)
        self.stop.set()
        if self.server is not None:
            self.server.should_exit = True


def _exit_at_once(signum: int, log_format: str) -> NoReturn:
    """The second signal: leave now, without waiting for requests or loops.

    The line is written straight to the file descriptor: the signal may have come while
    the log's stream held its lock."""
    record = _log.makeRecord(
        _log.name,
        logging.WARNING,
        __file__,
        0,
        "stopped at once by a second signal",
        (),
        None,
        extra={"signal": signal.Signals(signum).name},
    )
    formatter = JsonFormatter() if log_format == "json" else TextFormatter()
    try:
        os.write(2, (formatter.format(record) + "\n").encode())
    finally:
        os._exit(EXIT_INTERRUPTED)


@contextmanager
def handling_signals(stopping: Stopping) -> Iterator[None]:
    """SIGTERM and SIGINT go to ``stopping`` inside (in the main thread only; elsewhere
    signals cannot be handled), the earlier handlers again after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, stopping.handle) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
