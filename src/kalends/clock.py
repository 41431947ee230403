"""Time as a dependency: the :class:`Clock` protocol and its implementations.

:class:`SystemClock` is the only place in kalends that reads the wall clock.
Everything else takes a ``Clock`` (services) or a ``now`` argument (pure code),
so tests drive time with :class:`FakeClock`, including rolling it back.

:class:`FileClock` is a testing and simulation aid for real processes: the instant is
read from a file that another process writes (``KALENDS_CLOCK_FILE``, honoured by
``kalends worker`` only; see :func:`clock_from_environment`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol, runtime_checkable

from kalends.errors import InvalidInput

__all__ = [
    "ENV_CLOCK_FILE",
    "Clock",
    "FakeClock",
    "FileClock",
    "SystemClock",
    "clock_from_environment",
    "require_aware",
]

ENV_CLOCK_FILE = "KALENDS_CLOCK_FILE"
"""Names a :class:`FileClock`'s file for ``kalends worker`` (a testing and simulation aid)."""


@runtime_checkable
class Clock(Protocol):
    """A source of the current instant and of elapsed time."""

    def now(self) -> datetime:
        """Return the current instant as an aware datetime in UTC."""
        ...

    def monotonic(self) -> float:
        """Return seconds from an arbitrary origin that never go backwards."""
        ...


def require_aware(value: datetime, field: str) -> datetime:
    """Return ``value`` converted to UTC; refuse a naive datetime, naming ``field``."""
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be a datetime, not {type(value).__name__}", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(
            f"{field} must be an aware datetime (with a time zone), got naive {value.isoformat()}",
            field=field,
        )
    return value.astimezone(UTC)


class SystemClock:
    """The real clock of the machine."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def __repr__(self) -> str:
        return "SystemClock()"


class FakeClock:
    """A clock that moves only when told to; safe to share between threads.

    :meth:`advance` moves both the wall clock and the monotonic clock forward.
    :meth:`set` moves only the wall clock, forwards or backwards, as an NTP
    correction or a manual change of the system time would.
    """

    def __init__(self, start: datetime) -> None:
        self._lock = threading.Lock()
        self._now = require_aware(start, "start")
        self._monotonic = 0.0

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic

    def advance(self, by: float | timedelta) -> datetime:
        """Move time forward by ``by`` (seconds or a timedelta) and return the new instant."""
        step = by if isinstance(by, timedelta) else _seconds(by)
        if step < timedelta(0):
            raise InvalidInput(
                f"advance() moves time forward only, got {step}; use set() to roll the clock back",
                field="by",
            )
        with self._lock:
            self._now += step
            self._monotonic += step.total_seconds()
            return self._now

    def set(self, to: datetime) -> datetime:
        """Set the wall clock to ``to`` (which may be in the past); the monotonic clock stays."""
        instant = require_aware(to, "to")
        with self._lock:
            self._now = instant
            return instant

    def __repr__(self) -> str:
        return f"FakeClock({self.now().isoformat()})"


class FileClock:
    """A clock whose instant another process sets: ``path`` holds one ISO 8601 instant
    with an offset or ``Z`` (write it whole, e.g. a temporary file renamed over it). The
    monotonic clock is the machine's. A testing and simulation aid: it lets a test drive
    real ``kalends worker`` processes through days in seconds."""

    POLL_SECONDS = 0.1
    """How often :meth:`waiting` looks whether the file changed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def now(self) -> datetime:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except (OSError, ValueError) as exc:
            raise InvalidInput(
                f"{ENV_CLOCK_FILE}: {str(self.path)!r} holds no ISO 8601 instant ({exc})",
                field=ENV_CLOCK_FILE,
            ) from exc
        return require_aware(value, ENV_CLOCK_FILE)

    def monotonic(self) -> float:
        return time.monotonic()

    def stamp(self) -> tuple[int, int, int]:
        """What changes when the file is written: its inode, size and modification time."""
        try:
            found = self.path.stat()
        except OSError:
            return (0, 0, 0)
        return (found.st_ino, found.st_size, found.st_mtime_ns)

    def waiting(
        self, wait: Callable[[float, threading.Event], bool]
    ) -> Callable[[float, threading.Event], bool]:
        """``wait`` (seconds, stop event; true when woken), also woken when the file
        changes: time moved, so a loop sleeping until an instant looks again."""

        def waiter(seconds: float, stop: threading.Event) -> bool:
            seen = self.stamp()
            deadline = time.monotonic() + seconds
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if wait(min(left, self.POLL_SECONDS), stop) or stop.is_set():
                    return True
                if self.stamp() != seen:
                    return True

        return waiter

    def __repr__(self) -> str:
        return f"FileClock({str(self.path)!r})"


def clock_from_environment(environ: Mapping[str, str] | None = None) -> Clock:
    """A :class:`FileClock` on the file ``KALENDS_CLOCK_FILE`` names, else the system's."""
    path = (os.environ if environ is None else environ).get(ENV_CLOCK_FILE, "").strip()
    if not path:
        return SystemClock()
    clock = FileClock(path)
    clock.now()  # (refused now, not in the middle of a loop)
    return clock


def _seconds(value: float) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(
            f"by must be seconds (a number) or a timedelta, not {type(value).__name__}",
            field="by",
        )
    try:
        return timedelta(seconds=value)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(
            f"by must be a finite number of seconds, got {value}", field="by"
        ) from exc
