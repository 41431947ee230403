"""SQLite's write-ahead log copied back into the database by a thread of its own.

In WAL mode the commit that takes the log past 1,000 pages copies the log into the
database first (a checkpoint), in the thread that committed. In a server that thread is
the one answering requests: a schedule control writes about 10 pages, so one control in
a hundred paid 3-6 ms for the checkpoint while every request in flight waited (the
controls' p99.9 was that). A :class:`Checkpointer` takes the work over: the process's
connections checkpoint only past :data:`FALLBACK_CHECKPOINT_PAGES` (should the thread
ever fall behind), and the thread runs a passive checkpoint every
:data:`CHECKPOINT_SECONDS`, which never waits for a reader or a writer and does its
copying with the interpreter lock released.

Other processes on the same database keep SQLite's own setting. PostgreSQL has no such
log; a checkpointer there does nothing.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["CHECKPOINT_SECONDS", "FALLBACK_CHECKPOINT_PAGES", "Checkpointer"]

CHECKPOINT_SECONDS = 0.01
"""How often the thread checkpoints."""

FALLBACK_CHECKPOINT_PAGES = 16_384
"""Where the process's own connections still checkpoint (64 MiB of 4 KiB pages)."""

_log = logging.getLogger("kalends.storage")


def _hand_over(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    dbapi_connection.execute(f"PRAGMA wal_autocheckpoint = {FALLBACK_CHECKPOINT_PAGES}")


class Checkpointer:
    """Checkpoints ``engine``'s SQLite database from a thread until :meth:`stop`."""

    def __init__(self, engine: Engine, *, every: float = CHECKPOINT_SECONDS) -> None:
        self.engine = engine
        self.every = every
        self.checkpoints = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Checkpointer:
        """Hand the checkpoints of this process's connections over to the thread."""
        if self.engine.dialect.name != "sqlite" or self._thread is not None:
            return self
        event.listen(self.engine, "connect", _hand_over)
        # Pooled connections were made before: made again, they are handed over too.
        self.engine.dispose()
        self._thread = threading.Thread(target=self._run, name="kalends-checkpoints", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; the connections keep checkpointing past the fallback."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        raw: Any = self.engine.raw_connection()
        try:
            driver: sqlite3.Connection = raw.driver_connection
            while not self._stop.wait(self.every):
                try:
                    driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error as exc:
                    # Busy or locked now: the next tick tries again.
                    _log.debug("checkpoint deferred: %s", exc)
        finally:
            raw.close()
