"""Login throttling: failed password checks slow down whoever makes them, not the account.

A lock-out after a few failures lets anyone who knows a handle keep its owner out, and
one spread over many addresses keeps them out from everywhere. So nothing here ever
refuses an account as such: every wait belongs to an *address*, is counted from a
failure made *at that address*, and is at most :data:`MAX_DELAY`.

Three tallies of recent failures, each with its :class:`Backoff` (the first failures
free, then a wait that doubles with each further failure, up to the cap):

- **one account from one address** (:data:`PAIR_BACKOFF`), counted from that pair's
  last failure: the ordinary guesser, and the user who mistypes;
- **one address over every account** (:data:`ADDRESS_BACKOFF`), counted from the
  address's last failure: one address guessing the passwords of many accounts;
- **one account over every address** (:data:`ACCOUNT_BACKOFF`): guessing spread over
  many addresses. It delays only addresses that have failed on that account
  themselves, and counts from *their* last failure on it — so an address that never
  failed there is never delayed by it, and no one elsewhere can make the wait longer.

An address where the account signed in lately (a password or a login link, within
:data:`TRUST_MEMORY`) is waived from the address and account tallies: only its own
failures on that account delay it. Attempts refused while waiting are not failures:
they neither count nor move the wait. Login links are not throttled at all, and
redeeming one counts as a sign-in at its address.

What this gives up: someone with many addresses gets a few guesses per address and
account before the waits grow, where an account lock-out would have stopped them —
at the price of stopping the real user too. IPv6 addresses count by /64 network (a
single host commonly holds one), so one machine cannot pose as many addresses.

Why not hold the real user: they, at an address with no failures on their account
(or where they signed in before), are never delayed by failures elsewhere; after
their own mistakes they wait at most :data:`MAX_DELAY` after their last one. An
attacker at their very address shares that address's tallies — the login link then
still works.

State lives in memory, per process, on the clock's monotonic time (changes of the
wall clock do not move it). :meth:`LoginThrottle.attempt` counts an attempt as a
failure while it checks it, so parallel guesses cannot all pass one check, and
:meth:`LoginThrottle.succeeded` withdraws it again.
"""

from __future__ import annotations

import ipaddress
import math
import threading
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from kalends.clock import Clock
from kalends.errors import InvalidInput, RateLimited

__all__ = [
    "ACCOUNT_BACKOFF",
    "ADDRESS_BACKOFF",
    "FAILURE_MEMORY",
    "MAX_DELAY",
    "MAX_TRACKED",
    "PAIR_BACKOFF",
    "TRUST_MEMORY",
    "Backoff",
    "LoginKey",
    "LoginThrottle",
    "address_group",
    "throttle_key",
]

# Every limit below is a kalends decision; no standard prescribes them.
# Failures of one address on one account before it waits: five, as the README always said.
PAIR_FREE_FAILURES = 5
# Failures of one address over all accounts, or of one account over all addresses, before
# those tallies delay anyone: people behind one shared address mistype without waiting.
SHARED_FREE_FAILURES = 20
# The first wait, in seconds; each further failure doubles it.
FIRST_DELAY = 5.0
# The longest wait, in seconds: the old five-minute lock-out is now the worst case.
MAX_DELAY = 300.0
# How long a failure counts, in seconds.
FAILURE_MEMORY = 24 * 3600.0
# How long an address where an account signed in stays waived from the shared tallies.
TRUST_MEMORY = 30 * 24 * 3600.0
# Past this many names in one tally, those that failed least recently are forgotten first.
MAX_TRACKED = 100_000
# An IPv6 address counts as its network of this prefix length.
IPV6_PREFIX = 64

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """How failures delay the next attempt: not at all for the first ``free``, then
    ``first`` seconds, doubled by each further failure, at most ``cap`` seconds."""

    free: int
    first: float = FIRST_DELAY
    cap: float = MAX_DELAY

    def __post_init__(self) -> None:
        if isinstance(self.free, bool) or not isinstance(self.free, int) or self.free < 0:
            raise InvalidInput(f"free: a count of at least 0, got {self.free!r}", field="free")
        for name in ("first", "cap"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 < value < math.inf:
                raise InvalidInput(f"{name}: must be positive seconds, got {value!r}", field=name)
        if self.cap < self.first:
            raise InvalidInput(
                f"cap: must be at least first ({self.first!r}), got {self.cap!r}", field="cap"
            )

    def delay(self, failures: int) -> float:
        """Seconds to wait after the last of ``failures`` recent failures."""
        if failures < self.free:
            return 0.0
        return float(min(self.cap, self.first * 2.0 ** min(failures - self.free, 64)))

    @property
    def saturation(self) -> int:
        """The fewest failures whose delay is the cap: counting more changes nothing."""
        doublings = 0
        while self.first * 2.0**doublings < self.cap:
            doublings += 1
        return self.free + doublings


PAIR_BACKOFF = Backoff(free=PAIR_FREE_FAILURES)
ADDRESS_BACKOFF = Backoff(free=SHARED_FREE_FAILURES)
ACCOUNT_BACKOFF = Backoff(free=SHARED_FREE_FAILURES)


@dataclass(frozen=True, slots=True)
class LoginKey:
    """Which account is tried from where: a handle, already normalised, and an address group."""

    account: str
    address: str


def address_group(remote: str) -> str:
    """The address whose failures count together: an IPv4 address (also written as
    IPv4-mapped IPv6), an IPv6 address's /64 network, or anything else as given."""
    try:
        ip = ipaddress.ip_address(remote)
    except ValueError:
        return remote
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        drop = 128 - IPV6_PREFIX
        return str(ipaddress.IPv6Network((int(ip) >> drop << drop, IPV6_PREFIX)))
    return str(ip)


def throttle_key(handle: str, remote: str) -> LoginKey:
    """The throttle key of ``handle`` (normalised by the caller, once) tried from ``remote``."""
    return LoginKey(account=handle, address=address_group(remote))


class _Tally(Generic[K]):
    """Recent failure times per name, oldest first; names kept in the order they last failed.

    Only the latest failures of a name are kept, twice as many as make the longest wait:
    the spare half keeps the wait at its longest when attempts that succeeded are
    withdrawn again. Not thread-safe: :class:`LoginThrottle` holds its lock.
    """

    def __init__(self, backoff: Backoff, memory: float) -> None:
        self.backoff = backoff
        self.memory = memory
        self._names: dict[K, deque[float]] = {}

    def recent(self, name: K, now: float) -> deque[float] | None:
        """The failure times of ``name`` that still count, or ``None``."""
        times = self._names.get(name)
        if times is None:
            return None
        while times and times[0] <= now - self.memory:
            times.popleft()
        if not times:
            del self._names[name]
            return None
        return times

    def wait(self, name: K, now: float) -> float:
        """Seconds ``name`` waits for its own failures; 0 or less when it need not."""
        times = self.recent(name, now)
        if times is None:
            return 0.0
        return times[-1] + self.backoff.delay(len(times)) - now

    def count(self, name: K, now: float) -> int:
        times = self.recent(name, now)
        return 0 if times is None else len(times)

    def add(self, name: K, now: float) -> None:
        times = self._names.pop(name, None)
        if times is None:
            self._make_room(now)
            times = deque(maxlen=2 * max(1, self.backoff.saturation))
        times.append(now)
        # Re-inserted, so the names stay in the order of their latest failure.
        self._names[name] = times

    def withdraw(self, name: K, at: float) -> None:
        """Take back the failure counted at ``at`` (an attempt that succeeded)."""
        times = self._names.get(name)
        if times is not None and at in times:
            times.remove(at)

    def drop(self, name: K) -> None:
        self._names.pop(name, None)

    def _make_room(self, now: float) -> None:
        names = self._names
        while names:
            oldest = next(iter(names))
            times = names[oldest]
            if times and times[-1] > now - self.memory and len(names) < MAX_TRACKED:
                return
            del names[oldest]


class LoginThrottle:
    """Delays password checks per account and address as the module says; thread-safe.

    ``pair``, ``address`` and ``account`` are the three tallies' backoffs; ``memory``
    is how long a failure counts and ``trust_memory`` how long a sign-in waives its
    address from the shared tallies, both in seconds.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        pair: Backoff = PAIR_BACKOFF,
        address: Backoff = ADDRESS_BACKOFF,
        account: Backoff = ACCOUNT_BACKOFF,
        memory: float = FAILURE_MEMORY,
        trust_memory: float = TRUST_MEMORY,
    ) -> None:
        for name, value in (("memory", memory), ("trust_memory", trust_memory)):
            if not isinstance(value, int | float) or not 0 < value < math.inf:
                raise InvalidInput(f"{name}: must be positive seconds, got {value!r}", field=name)
        self.clock = clock
        self.trust_memory = float(trust_memory)
        self._lock = threading.Lock()
        self._pairs: _Tally[LoginKey] = _Tally(pair, float(memory))
        self._addresses: _Tally[str] = _Tally(address, float(memory))
        self._accounts: _Tally[str] = _Tally(account, float(memory))
        # Where each account signed in, and when last; in the order of that sign-in.
        self._trusted: dict[LoginKey, float] = {}
        # Attempts counted by attempt() and not yet settled: when each began.
        self._pending: dict[LoginKey, list[float]] = {}

    def wait(self, key: LoginKey) -> float:
        """Seconds before ``key`` may attempt again; 0 when it may now."""
        with self._lock:
            return self._wait(key, self.clock.monotonic())

    def check(self, key: LoginKey) -> None:
        """Raise :class:`RateLimited` (with ``retry_after``) while ``key`` has to wait."""
        with self._lock:
            self._check(key, self.clock.monotonic())

    def attempt(self, key: LoginKey) -> None:
        """Check ``key`` as :meth:`check` does and count an attempt now, failed until it succeeds.

        Then call :meth:`succeeded` or :meth:`failed` (which does not count it twice).
        """
        now = self.clock.monotonic()
        with self._lock:
            self._check(key, now)
            self._record(key, now)
            self._pending.setdefault(key, []).append(now)

    def failed(self, key: LoginKey) -> None:
        """Count a failed attempt of ``key`` in all three tallies."""
        now = self.clock.monotonic()
        with self._lock:
            if self._settle(key) is None:
                self._record(key, now)

    def succeeded(self, key: LoginKey) -> None:
        """The account signed in at the key's address: forget the failures of ``key``, and
        waive the address from the shared tallies for this account from now on.

        An attempt counted by :meth:`attempt` is withdrawn from the shared tallies; other
        failures there run out by themselves.
        """
        now = self.clock.monotonic()
        with self._lock:
            started = self._settle(key)
            self._pairs.drop(key)
            if started is not None:
                self._addresses.withdraw(key.address, started)
                self._accounts.withdraw(key.account, started)
            self._trust(key, now)

    def _wait(self, key: LoginKey, now: float) -> float:
        wait = self._pairs.wait(key, now)
        if not self._is_trusted(key, now):
            wait = max(wait, self._addresses.wait(key.address, now))
            own = self._pairs.recent(key, now)
            if own is not None:
                spread = self._accounts.backoff.delay(self._accounts.count(key.account, now))
                wait = max(wait, own[-1] + spread - now)
        return max(0.0, wait)

    def _check(self, key: LoginKey, now: float) -> None:
        wait = self._wait(key, now)
        if wait > 0:
            raise RateLimited(
                f"too many failed attempts; try again in {max(1, math.ceil(wait))} seconds",
                retry_after=wait,
            )

    def _record(self, key: LoginKey, now: float) -> None:
        self._pairs.add(key, now)
        self._addresses.add(key.address, now)
        self._accounts.add(key.account, now)

    def _settle(self, key: LoginKey) -> float | None:
        """Take the oldest attempt of ``key`` still open, if any, and return when it began."""
        started = self._pending.get(key)
        if not started:
            return None
        first = started.pop(0)
        if not started:
            del self._pending[key]
        return first

    def _is_trusted(self, key: LoginKey, now: float) -> bool:
        since = self._trusted.get(key)
        return since is not None and since > now - self.trust_memory

    def _trust(self, key: LoginKey, now: float) -> None:
        trusted = self._trusted
        trusted.pop(key, None)
        while trusted:
            oldest = next(iter(trusted))
            if trusted[oldest] > now - self.trust_memory and len(trusted) < MAX_TRACKED:
                break
            del trusted[oldest]
        trusted[key] = now
