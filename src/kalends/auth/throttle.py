"""Login throttling: a few failures per key, more per handle, in a sliding window.

A key names who tries what, as ``f"{handle}|{remote}"``; its handle is the text
before the first ``|`` (handles never contain one). A key is refused after
``attempts`` failures within ``window`` seconds; a handle, from any number of
remotes together, after :data:`HANDLE_ATTEMPTS_FACTOR` times as many, which
stops guessing spread over many addresses without letting one address lock an
account out for long. State lives in memory, per process, and is driven by the
clock's monotonic time, so changes of the wall clock do not move it.

:meth:`LoginThrottle.check` then :meth:`LoginThrottle.failed` leaves a gap in
which parallel guesses all pass the check; :meth:`LoginThrottle.attempt` closes
it by counting the attempt as it checks, and :meth:`LoginThrottle.succeeded`
withdraws that count when the attempt succeeds.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from kalends.clock import Clock
from kalends.errors import InvalidInput, RateLimited

__all__ = ["HANDLE_ATTEMPTS_FACTOR", "MAX_TRACKED", "LoginThrottle", "throttle_key"]

# A handle tolerates this many times the failures of one key, from all remotes together.
HANDLE_ATTEMPTS_FACTOR = 4
# Past this many tracked keys (and handles), the oldest are forgotten first.
MAX_TRACKED = 100_000

_SEPARATOR = "|"


def throttle_key(handle: str, remote: str) -> str:
    """The throttle key of ``handle`` tried from ``remote``."""
    return f"{handle}{_SEPARATOR}{remote}"


class LoginThrottle:
    """Counts failed attempts per key and per handle; thread-safe."""

    def __init__(self, clock: Clock, *, attempts: int = 5, window: float = 300.0) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise InvalidInput(f"attempts: must be at least 1, got {attempts!r}", field="attempts")
        if not isinstance(window, int | float) or not 0 < window < float("inf"):
            raise InvalidInput(f"window: must be positive seconds, got {window!r}", field="window")
        self.clock = clock
        self.attempts = attempts
        self.window = float(window)
        self._lock = threading.Lock()
        self._keys: dict[str, deque[float]] = {}
        self._handles: dict[str, deque[float]] = {}
        # Attempts counted by attempt() and not yet settled: when each began.
        self._pending: dict[str, list[float]] = {}

    def check(self, key: str) -> None:
        """Raise :class:`RateLimited` if ``key`` or its handle has failed too often lately."""
        with self._lock:
            self._check(key, self.clock.monotonic())

    def attempt(self, key: str) -> None:
        """Check ``key`` as :meth:`check` does and count an attempt now, failed until it succeeds.

        Then call :meth:`succeeded` or :meth:`failed` (which does not count it twice).
        """
        now = self.clock.monotonic()
        with self._lock:
            self._check(key, now)
            self._record(key, now)
            self._pending.setdefault(key, []).append(now)

    def failed(self, key: str) -> None:
        """Count a failed attempt of ``key`` (and of its handle)."""
        now = self.clock.monotonic()
        with self._lock:
            if self._settle(key) is None:
                self._record(key, now)

    def succeeded(self, key: str) -> None:
        """Forget the failures of ``key``; its handle's count runs out by itself.

        An attempt counted by :meth:`attempt` is withdrawn from the handle's count too.
        """
        with self._lock:
            started = self._settle(key)
            self._keys.pop(key, None)
            times = self._handles.get(_handle(key))
            if started is not None and times is not None and started in times:
                times.remove(started)

    def _check(self, key: str, now: float) -> None:
        wait = max(
            self._wait(self._keys, key, self.attempts, now),
            self._wait(self._handles, _handle(key), self.attempts * HANDLE_ATTEMPTS_FACTOR, now),
        )
        if wait > 0:
            raise RateLimited(
                f"too many failed attempts; try again in {max(1, math.ceil(wait))} seconds",
                retry_after=wait,
            )

    def _record(self, key: str, now: float) -> None:
        self._count(self._keys, key, self.attempts, now)
        self._count(self._handles, _handle(key), self.attempts * HANDLE_ATTEMPTS_FACTOR, now)

    def _settle(self, key: str) -> float | None:
        """Take the oldest attempt of ``key`` still open, if any, and return when it began."""
        started = self._pending.get(key)
        if not started:
            return None
        first = started.pop(0)
        if not started:
            del self._pending[key]
        return first

    def _wait(self, table: dict[str, deque[float]], name: str, limit: int, now: float) -> float:
        """Seconds until ``name`` may try again; 0 when it may now."""
        times = table.get(name)
        if times is None:
            return 0.0
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del table[name]
            return 0.0
        if len(times) < limit:
            return 0.0
        return times[0] + self.window - now

    def _count(self, table: dict[str, deque[float]], name: str, limit: int, now: float) -> None:
        times = table.get(name)
        if times is None:
            if len(table) >= MAX_TRACKED:
                self._forget_expired(table, now)
            # Still full of recent failures: forget the longest-tracked name.
            if len(table) >= MAX_TRACKED:
                del table[next(iter(table))]
            # Only the latest ``limit`` failures can decide a refusal.
            times = table[name] = deque(maxlen=limit)
        times.append(now)

    def _forget_expired(self, table: dict[str, deque[float]], now: float) -> None:
        for name in [
            n for n, times in table.items() if not times or times[-1] <= now - self.window
        ]:
            del table[name]


def _handle(key: str) -> str:
    return key.split(_SEPARATOR, 1)[0]
