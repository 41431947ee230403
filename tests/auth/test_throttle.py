"""The login throttle on its own: a sliding window per key and per handle, on monotonic time,
safe under parallel attempts."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from kalends.auth import LoginThrottle
from kalends.auth import throttle as throttle_module
from kalends.auth.throttle import HANDLE_ATTEMPTS_FACTOR, throttle_key
from kalends.clock import FakeClock
from kalends.errors import InvalidInput, RateLimited


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2025, 3, 1, 12, 0, tzinfo=UTC))


def fail(throttle: LoginThrottle, key: str, times: int) -> None:
    for _ in range(times):
        throttle.failed(key)


class TestWindow:
    def test_the_limit_is_reached_at_the_fifth_failure_and_says_how_long_to_wait(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock)
        fail(throttle, "alice|10.0.0.1", 4)
        throttle.check("alice|10.0.0.1")
        throttle.failed("alice|10.0.0.1")
        with pytest.raises(RateLimited) as caught:
            throttle.check("alice|10.0.0.1")
        assert caught.value.retry_after == pytest.approx(300.0)
        assert caught.value.details == {"retry_after": 300.0}
        clock.advance(100)
        with pytest.raises(RateLimited) as caught:
            throttle.check("alice|10.0.0.1")
        assert caught.value.retry_after == pytest.approx(200.0)
        clock.advance(200)
        throttle.check("alice|10.0.0.1")

    def test_the_window_slides_one_failure_at_a_time(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock, attempts=3, window=60)
        for _ in range(3):
            throttle.failed("k")
            clock.advance(20)
        # Failures at 0, 20 and 40; now is 60: the first has just left the window.
        throttle.check("k")
        throttle.failed("k")
        with pytest.raises(RateLimited) as caught:
            throttle.check("k")
        assert caught.value.retry_after == pytest.approx(20.0)

    def test_wall_clock_changes_do_not_move_it(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock, attempts=1)
        throttle.failed("k")
        clock.set(datetime(2030, 1, 1, tzinfo=UTC))
        with pytest.raises(RateLimited):
            throttle.check("k")

    def test_a_success_clears_its_key_only(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock, attempts=2)
        fail(throttle, "alice|a", 2)
        fail(throttle, "alice|b", 2)
        throttle.succeeded("alice|a")
        throttle.check("alice|a")
        with pytest.raises(RateLimited):
            throttle.check("alice|b")


class TestHandles:
    def test_a_handle_is_limited_across_remotes_at_four_times_the_key_limit(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock, attempts=5)
        limit = 5 * HANDLE_ATTEMPTS_FACTOR
        for n in range(limit - 1):
            throttle.failed(throttle_key("alice", f"10.0.0.{n}"))
        throttle.check(throttle_key("alice", "192.0.2.1"))
        throttle.failed(throttle_key("alice", "10.0.1.1"))
        with pytest.raises(RateLimited):
            throttle.check(throttle_key("alice", "192.0.2.1"))
        throttle.check(throttle_key("bob", "192.0.2.1"))

    def test_a_success_leaves_the_handle_count_to_run_out(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock, attempts=1)
        for n in range(HANDLE_ATTEMPTS_FACTOR):
            throttle.failed(f"alice|{n}")
            throttle.succeeded(f"alice|{n}")
        with pytest.raises(RateLimited):
            throttle.check("alice|elsewhere")


class TestAttempts:
    def test_an_attempt_counts_before_its_outcome_is_known(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock, attempts=3)
        for _ in range(3):
            throttle.attempt("k")
        with pytest.raises(RateLimited):
            throttle.attempt("k")

    def test_a_failed_attempt_counts_once(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock, attempts=3)
        for _ in range(2):
            throttle.attempt("k")
            throttle.failed("k")
        throttle.check("k")

    def test_successful_attempts_are_withdrawn_from_the_handle_count(
        self, clock: FakeClock
    ) -> None:
        throttle = LoginThrottle(clock, attempts=1)
        for n in range(3 * HANDLE_ATTEMPTS_FACTOR):
            throttle.attempt(f"alice|{n}")
            throttle.succeeded(f"alice|{n}")
        throttle.check("alice|elsewhere")

    def test_parallel_attempts_pass_no_more_than_the_limit(self, clock: FakeClock) -> None:
        throttle = LoginThrottle(clock, attempts=5)
        barrier = threading.Barrier(20)
        outcomes: list[str] = []

        def attempt() -> None:
            barrier.wait(5)
            try:
                throttle.attempt("alice|10.0.0.1")
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
    @pytest.mark.parametrize(
        "kwargs",
        [
            {"attempts": 0},  # nothing would ever pass
            {"attempts": True},  # a boolean is not a count
            {"window": 0},  # no window
            {"window": -5.0},  # negative
            {"window": float("inf")},  # never forgets
        ],
    )
    def test_nonsense_settings_are_refused(self, clock: FakeClock, kwargs: dict[str, Any]) -> None:
        with pytest.raises(InvalidInput):
            LoginThrottle(clock, **kwargs)

    def test_the_longest_tracked_keys_are_forgotten_past_the_bound(
        self, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(throttle_module, "MAX_TRACKED", 2)
        throttle = LoginThrottle(clock, attempts=1)
        for key in ("a|1", "b|1", "c|1"):
            throttle.failed(key)
        throttle.check("a|1")
        with pytest.raises(RateLimited):
            throttle.check("c|1")

    def test_expired_keys_are_forgotten_before_recent_ones(
        self, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(throttle_module, "MAX_TRACKED", 2)
        throttle = LoginThrottle(clock, attempts=1, window=60)
        throttle.failed("first|1")
        clock.advance(10)
        throttle.failed("second|1")
        clock.advance(65)
        # "first" is tracked longest but failed again just now; "second" has expired.
        throttle.failed("first|1")
        throttle.failed("third|1")
        for key in ("first|1", "third|1"):
            with pytest.raises(RateLimited):
                throttle.check(key)
