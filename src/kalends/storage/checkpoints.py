"""SQLite's write-ahead log copied back into the database by a thread of its own, soon
after each write, and not at all while nothing is written.

In WAL mode the commit that takes the log past 1,000 pages copies the log into the
database first (a checkpoint), in the thread that committed. In a server that thread is
the one answering requests: a schedule control writes about 10 pages, so one control in
a hundred paid 3-6 ms for the checkpoint while every request in flight waited (the
controls' p99.9 was that). A :class:`Checkpointer` takes the work over: the process's
connections checkpoint only past :data:`FALLBACK_CHECKPOINT_PAGES` (should the thread
ever fall behind), and the thread runs passive checkpoints, which never wait for a
reader or a writer and do their copying with the interpreter lock released.

When the thread checkpoints (kalends' decision, measured with ``bench/idle.py`` and
``bench/api.py``, figures in the README's Performance section):

- A write transaction of this process that commits wakes it (SQLAlchemy's ``commit``
  event, which comes just before the ``COMMIT``); it checkpoints
  :data:`CHECKPOINT_SECONDS` later, time for that commit to land and for the commits
  right behind it to join the same checkpoint. Under a steady stream of writes that is
  one checkpoint every :data:`CHECKPOINT_SECONDS`, as when it polled.
- A write's wake that finds no commit landed since its last look (SQLite's
  ``data_version``) came before its ``COMMIT`` landed: the log is looked at again as
  when a checkpoint is incomplete, until that commit is seen.
- A checkpoint that could not copy the whole log (a reader still needs old pages, or
  another checkpoint ran) is tried again after :data:`CHECKPOINT_SECONDS`, then after
  twice as long each time while nothing is written, up to :data:`IDLE_SECONDS`.
- Otherwise it sleeps :data:`IDLE_SECONDS` and checkpoints once (a commit whose wake
  came before its ``COMMIT`` landed, or a write no event announced, is copied then).

So an idle server's thread wakes once every :data:`IDLE_SECONDS` instead of 100 times
a second. Other processes on the same database keep SQLite's own setting. PostgreSQL has
no such log; a checkpointer there does nothing.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine import Connection

from kalends.storage.engine import WRITE_OPTION

__all__ = ["CHECKPOINT_SECONDS", "FALLBACK_CHECKPOINT_PAGES", "IDLE_SECONDS", "Checkpointer"]

CHECKPOINT_SECONDS = 0.01
"""How long after a write the thread checkpoints; the first retry of an incomplete one."""

IDLE_SECONDS = 30.0
"""The longest the thread sleeps: with nothing written, it wakes this often."""

FALLBACK_CHECKPOINT_PAGES = 16_384
"""Where the process's own connections still checkpoint (64 MiB of 4 KiB pages)."""

_READY_TIMEOUT = 5.0
"""How long :meth:`Checkpointer.start` waits for its thread to read the log's state."""

_log = logging.getLogger("kalends.storage")


def _hand_over(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    dbapi_connection.execute(f"PRAGMA wal_autocheckpoint = {FALLBACK_CHECKPOINT_PAGES}")


class Checkpointer:
    """Checkpoints ``engine``'s SQLite database from a thread until :meth:`stop`: ``delay``
    seconds after a write commits, and every ``idle`` seconds when nothing is written.

    ``wakes`` counts the times the thread woke (a write, a retry or the idle interval,
    not :meth:`stop`), ``checkpoints`` the checkpoints it ran, ``last`` what the last one
    found: SQLite's (busy, frames in the log, frames copied), all copied when the last
    two are equal.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        delay: float = CHECKPOINT_SECONDS,
        idle: float = IDLE_SECONDS,
    ) -> None:
        self.engine = engine
        self.delay = delay
        self.idle = idle
        self.wakes = 0
        self.checkpoints = 0
        self.last: tuple[int, int, int] | None = None
        self._written = threading.Event()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Checkpointer:
        """Hand the checkpoints of this process's connections over to the thread, and
        have this engine's write commits wake it."""
        if self.engine.dialect.name != "sqlite" or self._thread is not None:
            return self
        event.listen(self.engine, "connect", _hand_over)
        # Pooled connections were made before: made again, they are handed over too.
        self.engine.dispose()
        self._thread = threading.Thread(target=self._run, name="kalends-checkpoints", daemon=True)
        self._thread.start()
        # A commit wakes the thread only once it has read where the log stands: a commit
        # that landed before that read would be awaited in vain.
        self._ready.wait(_READY_TIMEOUT)
        event.listen(self.engine, "commit", self._committing)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; the connections keep checkpointing past the fallback."""
        self._stop.set()
        self._written.set()
        if self._thread is not None:
            if event.contains(self.engine, "commit", self._committing):
                event.remove(self.engine, "commit", self._committing)
            self._thread.join(timeout)

    def _committing(self, connection: Connection) -> None:
        # Every transaction of the process commits through here, the event loop's too:
        # a read (kalends' read transactions say so) has nothing to copy, and a set
        # event needs no second set.
        if (
            connection.get_execution_options().get(WRITE_OPTION) is not False
            and not self._written.is_set()
        ):
            self._written.set()

    def _run(self) -> None:
        try:
            raw: Any = self.engine.raw_connection()
        except BaseException:
            self._ready.set()  # (start() need not wait for a thread that ended)
            raise
        try:
            driver: sqlite3.Connection = raw.driver_connection
            retry: float | None = None  # the wait before the next try of an incomplete one
            seen = _data_version(driver)  # changes when another connection commits
            self._ready.set()
            awaited = False  # a write's wake came and its commit has not been seen yet
            while True:
                written = self._written.wait(self.idle if retry is None else retry)
                if self._stop.is_set():
                    return
                self.wakes += 1
                # The commit event comes before the COMMIT: let it, and those just behind
                # it, land first.
                if written and self._stop.wait(self.delay):
                    return
                self._written.clear()
                if self._stop.is_set():
                    # stop() came between the wake and the clear, which took its wake.
                    return
                version = _data_version(driver)
                awaited = awaited or written
                if version != seen:
                    awaited, seen = False, version
                # No commit landed since the last look while one is awaited: the COMMIT
                # that woke the thread is still on its way (a loaded machine), so the
                # log is looked at again as if incomplete.
                if self._checkpoint(driver) and not awaited:
                    retry = None
                elif written or retry is None:
                    retry = self.delay
                else:
                    retry = min(retry * 2, self.idle)
        finally:
            raw.close()

    def _checkpoint(self, driver: sqlite3.Connection) -> bool:
        """Run one passive checkpoint; whether it copied the whole log."""
        try:
            busy, frames, copied = driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            # Busy or locked now: tried again soon.
            _log.debug("checkpoint deferred: %s", exc)
            return False
        self.checkpoints += 1
        self.last = (int(busy), int(frames), int(copied))
        return not busy and frames == copied


def _data_version(driver: sqlite3.Connection) -> int | None:
    """SQLite's count of commits by other connections as this one sees it, or ``None``."""
    try:
        row = driver.execute("PRAGMA data_version").fetchone()
    except sqlite3.Error:
        return None
    return int(row[0])
