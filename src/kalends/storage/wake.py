"""Waking sleeping workers when another process writes work for them.

A worker that has nothing due sleeps until the earliest due instant, or until a writer
tells it something changed:

- PostgreSQL: writers call :func:`notify` inside their transaction (``pg_notify``, sent
  at commit); the worker ``LISTEN``\\ s on a connection of its own.
- SQLite: there is no notification between processes; the worker watches
  ``PRAGMA data_version`` on a connection of its own, a counter that changes when any
  other connection commits. Reading it touches no table.

Either way a wake-up only makes the worker look again (one index seek); a spurious one
costs nothing else.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

__all__ = ["OUTBOX_CHANNEL", "SQLITE_POLL_SECONDS", "Waker", "notify", "open_waker"]

OUTBOX_CHANNEL = "kalends_outbox"
"""The notification channel of reminder intents."""

SQLITE_POLL_SECONDS = 0.2
"""How often a SQLite waker reads ``PRAGMA data_version``."""

_NOTIFY = text("SELECT pg_notify(:channel, '')")


def notify(conn: Connection, channel: str = OUTBOX_CHANNEL) -> None:
    """Wakes the workers listening on ``channel`` when this transaction commits (PostgreSQL)."""
    if conn.dialect.name == "postgresql":
        conn.execute(_NOTIFY, {"channel": channel})


class Waker(Protocol):
    def wait(self, timeout: float, stop: threading.Event) -> bool:
        """Sleeps up to ``timeout`` seconds; True when woken by a change (or ``stop``)."""
        ...

    def close(self) -> None: ...


class _SQLiteWaker:
    def __init__(self, engine: Engine) -> None:
        self._raw: Any = engine.raw_connection()
        self._version = self._read()

    def _read(self) -> int:
        cursor = self._raw.driver_connection.cursor()
        try:
            return int(cursor.execute("PRAGMA data_version").fetchone()[0])
        finally:
            cursor.close()

    def wait(self, timeout: float, stop: threading.Event) -> bool:
        remaining = timeout
        while remaining > 0:
            step = min(SQLITE_POLL_SECONDS, remaining)
            if stop.wait(step):
                return True
            remaining -= step
            version = self._read()
            if version != self._version:
                self._version = version
                return True
        return False

    def close(self) -> None:
        self._raw.close()


class _PostgresWaker:
    def __init__(self, engine: Engine, channel: str) -> None:
        raw: Any = engine.raw_connection()
        pg: Any = raw.driver_connection
        # A connection of its own, taken out of the pool for good: it listens in autocommit.
        raw.detach()
        pg.autocommit = True
        pg.execute(f"LISTEN {channel}")
        self._pg = pg

    def wait(self, timeout: float, stop: threading.Event) -> bool:
        # Listen in slices, so a stop request is seen within one of them.
        remaining = timeout
        while remaining > 0 and not stop.is_set():
            step = min(1.0, remaining)
            for _ in self._pg.notifies(timeout=step, stop_after=1):
                return True
            remaining -= step
        return stop.is_set()

    def close(self) -> None:
        self._pg.close()


def open_waker(engine: Engine, channel: str = OUTBOX_CHANNEL) -> Waker:
    """A waker for ``engine``'s database; close it when done."""
    if engine.dialect.name == "postgresql":
        return _PostgresWaker(engine, channel)
    return _SQLiteWaker(engine)
