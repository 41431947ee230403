"""Time as a dependency: the :class:`Clock` protocol and its two implementations.

:class:`SystemClock` is the only place in kalends that reads the wall clock.
Everything else takes a ``Clock`` (services) or a ``now`` argument (pure code),
so tests drive time with :class:`FakeClock`, including rolling it back.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from kalends.errors import InvalidInput

__all__ = ["Clock", "FakeClock", "SystemClock", "require_aware"]


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
