"""The login throttle on its own: delays per account and address that grow and stop at a cap,
an account tally that delays only addresses that failed on it, on monotonic time, safe under
parallel attempts."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from kalends.auth import LoginThrottle
from kalends.auth import throttle as throttle_module
from kalends.auth.throttle import (
    ACCOUNT_BACKOFF,
    ADDRESS_BACKOFF,
    FAILURE_MEMORY,
    MAX_DELAY,
    PAIR_BACKOFF,
    TRUST_MEMORY,
    Backoff,
    LoginKey,
    address_group,
    throttle_key,
)
from kalends.clock import FakeClock
from kalends.errors import InvalidInput, RateLimited

FIRST = PAIR_BACKOFF.first


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2025, 3, 1, 12, 0, tzinfo=UTC))


def key(handle: str, remote: str = "198.51.100.1") -> LoginKey:
    return throttle_key(handle, remote)


def fail(throttle: LoginThrottle, login: LoginKey, times: int) -> None:
    for _ in range(times):
        throttle.failed(login)


def spray(throttle: LoginThrottle, handle: str, addresses: int) -> None:
    """One failure on ``handle`` from each of ``addresses`` distinct addresses."""
    for n in range(addresses):
        throttle.failed(key(handle, f"10.{n // 250}.{n % 250}.1"))


class TestBackoff:
    def test_the_delay_is_none_for_the_free_failures_then_doubles_up_to_the_cap(self) -> None:
        backoff = Backoff(free=2, first=5, cap=30)
        assert [backoff.delay(n) for n in range(7)] == [0, 0, 5, 10, 20, 30, 30]
        assert backoff.saturation == 5

    def test_a_huge_count_still_waits_the_cap(self) -> None:
        assert PAIR_BACKOFF.delay(10**6) == MAX_DELAY

    def test_the_limits_are_what_the_readme_says(self) -> None:
        assert (PAIR_BACKOFF.free, PAIR_BACKOFF.first, PAIR_BACKOFF.cap) == (5, 5.0, 300.0)
        assert ADDRESS_BACKOFF.free == ACCOUNT_BACKOFF.free == 20
        assert FAILURE_MEMORY == 24 * 3600 and TRUST_MEMORY == 30 * 24 * 3600

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"free": -1},  # a negative count
            {"free": True},  # a boolean is not a count
            {"free": 1, "first": 0},  # no delay at all
            {"free": 1, "first": float("inf")},  # forever
            {"free": 1, "first": 10, "cap": 5},  # a cap below the first delay
        ],
    )
    def test_nonsense_backoffs_are_refused(self, kwargs: dict[str, Any]) -> None:
        with pytest.raises(InvalidInput):
            Backoff(**kwargs)

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"memory": 0},  # failures never count
            {"memory": float("inf")},  # never forgets
            {"trust_memory": -1.0},  # negative
        ],
    )
    def test_nonsense_memories_are_refused(self, clock: FakeClock, kwargs: dict[str, Any]) -> None:
        with pytest.raises(InvalidInput):
            LoginThrottle(clock, **kwargs)


class TestOneAddressOnOneAccount:
    def test_the_fifth_failure_delays_the_next_attempt_by_seconds_not_minutes(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        fail(throttle, key("alice"), 4)
        throttle.check(key("alice"))
        throttle.failed(key("alice"))
        with pytest.raises(RateLimited) as caught:
            throttle.check(key("alice"))
        assert caught.value.retry_after == pytest.approx(FIRST)
        assert caught.value.details == {"retry_after": FIRST}
        clock.advance(FIRST)
        throttle.check(key("alice"))

    def test_each_further_failure_doubles_the_delay_until_the_cap(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        waits = []
        for _ in range(12):
            throttle.failed(key("alice"))
            waits.append(throttle.wait(key("alice")))
            clock.advance(throttle.wait(key("alice")))
        assert waits == [0, 0, 0, 0, 5, 10, 20, 40, 80, 160, 300, 300]

    def test_attempts_refused_while_waiting_neither_count_nor_move_the_wait(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        fail(throttle, key("alice"), 5)
        for _ in range(50):
            clock.advance(0.05)
            with pytest.raises(RateLimited):
                throttle.attempt(key("alice"))
        assert throttle.wait(key("alice")) == pytest.approx(FIRST - 2.5)

    def test_failures_are_forgotten_a_day_after_they_happened(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        fail(throttle, key("alice"), 5)
        clock.advance(FAILURE_MEMORY)
        throttle.failed(key("alice"))
        assert throttle.wait(key("alice")) == 0

    def test_wall_clock_changes_do_not_move_it(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        fail(throttle, key("alice"), 5)
        clock.set(datetime(2030, 1, 1, tzinfo=UTC))
        with pytest.raises(RateLimited):
            throttle.check(key("alice"))

    def test_a_success_clears_its_own_failures_only(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        fail(throttle, key("alice", "10.0.0.1"), 5)
        fail(throttle, key("alice", "10.0.0.2"), 5)
        throttle.succeeded(key("alice", "10.0.0.1"))
        throttle.check(key("alice", "10.0.0.1"))
        with pytest.raises(RateLimited):
            throttle.check(key("alice", "10.0.0.2"))


class TestSpreadOverAddresses:
    def test_an_address_that_never_failed_on_the_account_is_never_delayed_by_others(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        spray(throttle, "alice", 1000)
        assert throttle.wait(key("alice", "192.0.2.1")) == 0

    def test_an_address_that_failed_waits_the_accounts_delay_from_its_own_last_failure(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        mine = key("alice", "192.0.2.1")
        throttle.failed(mine)
        clock.advance(1)
        spray(throttle, "alice", ACCOUNT_BACKOFF.free + 3)
        # 24 failures on the account: 80 s, counted from this address's failure a second ago.
        assert throttle.wait(mine) == pytest.approx(80 - 1)
        # Failures elsewhere, however many and however late, never push it past the cap
        # after this address's own last failure.
        for _ in range(20):
            clock.advance(10)
            spray(throttle, "alice", 50)
        assert throttle.wait(mine) == pytest.approx(MAX_DELAY - 201)
        clock.advance(MAX_DELAY - 201)
        throttle.check(mine)

    def test_an_address_where_the_account_signed_in_is_delayed_by_its_own_failures_only(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        home = key("alice", "192.0.2.1")
        throttle.attempt(home)
        throttle.succeeded(home)
        spray(throttle, "alice", 100)
        fail(throttle, home, 4)
        assert throttle.wait(home) == 0
        throttle.failed(home)
        assert throttle.wait(home) == pytest.approx(FIRST)

    def test_a_sign_in_is_remembered_for_thirty_days(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        home = key("alice", "192.0.2.1")
        throttle.succeeded(home)
        clock.advance(TRUST_MEMORY)
        throttle.failed(home)
        spray(throttle, "alice", 100)
        assert throttle.wait(home) > 0

    def test_one_address_guessing_many_accounts_waits_on_every_account(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        for n in range(ADDRESS_BACKOFF.free):
            throttle.failed(key(f"user{n}", "203.0.113.9"))
        assert throttle.wait(key("someone-new", "203.0.113.9")) == pytest.approx(FIRST)
        assert throttle.wait(key("someone-new", "203.0.113.10")) == 0


class TestAddresses:
    @pytest.mark.parametrize(
        ("remote", "group"),
        [
            ("198.51.100.7", "198.51.100.7"),  # IPv4 as it is
            ("::ffff:198.51.100.7", "198.51.100.7"),  # IPv4-mapped IPv6 is that IPv4 address
            ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),  # IPv6 by its /64
            ("2001:DB8:1:2:bbbb::2", "2001:db8:1:2::/64"),  # the same /64, another spelling
            ("testclient", "testclient"),  # not an address: as given
            ("", ""),  # no address known
        ],
    )
    def test_addresses_count_in_groups(self, remote: str, group: str) -> None:
        assert address_group(remote) == group

    def test_one_ipv6_host_cannot_pose_as_many_addresses(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        for n in range(5):
            throttle.failed(key("alice", f"2001:db8::{n + 1:x}"))
        with pytest.raises(RateLimited):
            throttle.check(key("alice", "2001:db8::ffff"))


class TestAttempts:
    def test_an_attempt_counts_before_its_outcome_is_known(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        for _ in range(5):
            throttle.attempt(key("alice"))
        with pytest.raises(RateLimited):
            throttle.attempt(key("alice"))

    def test_a_failed_attempt_counts_once(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        for _ in range(4):
            throttle.attempt(key("alice"))
            throttle.failed(key("alice"))
        throttle.check(key("alice"))

    def test_successful_attempts_are_withdrawn_from_the_shared_tallies(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        for n in range(3 * ADDRESS_BACKOFF.free):
            throttle.attempt(key(f"user{n}", "203.0.113.9"))
            throttle.succeeded(key(f"user{n}", "203.0.113.9"))
        throttle.check(key("someone-new", "203.0.113.9"))

    def test_parallel_attempts_pass_no_more_than_the_free_failures(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock)
        barrier = threading.Barrier(20)
        outcomes: list[str] = []

        def attempt() -> None:
            barrier.wait(5)
            try:
                throttle.attempt(key("alice"))
                outcomes.append("passed")
            except RateLimited:
                outcomes.append("limited")

        threads = [threading.Thread(target=attempt) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert sorted(outcomes) == ["limited"] * 15 + ["passed"] * 5


class TestBounds:
    def test_the_least_recently_failed_are_forgotten_past_the_bound(
        self, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(throttle_module, "MAX_TRACKED", 2)
        throttle = LoginThrottle(clock)
        for handle in ("a", "b"):
            fail(throttle, key(handle), 5)
        fail(throttle, key("a"), 1)  # "a" failed last of the two
        fail(throttle, key("c"), 5)
        throttle.check(key("b"))
        for handle in ("a", "c"):
            with pytest.raises(RateLimited):
                throttle.check(key(handle))
