"""The clocks: the system one reads real time; the fake one moves only when told."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest

from kalends.clock import Clock, FakeClock, SystemClock, require_aware
from kalends.errors import InvalidInput

START = datetime(2025, 3, 30, 0, 59, 59, tzinfo=UTC)
TOKYO = timezone(timedelta(hours=9))


class TestSystemClock:
    def test_now_is_aware_utc_and_close_to_the_real_time(self) -> None:
        clock = SystemClock()
        before = datetime.now(UTC)
        now = clock.now()
        assert now.tzinfo is UTC
        assert before <= now <= datetime.now(UTC)

    def test_monotonic_never_goes_backwards(self) -> None:
        clock = SystemClock()
        readings = [clock.monotonic() for _ in range(100)]
        assert readings == sorted(readings)

    def test_both_clocks_satisfy_the_protocol(self) -> None:
        assert isinstance(SystemClock(), Clock)
        assert isinstance(FakeClock(START), Clock)


class TestFakeClock:
    def test_time_stands_still_until_moved(self) -> None:
        clock = FakeClock(START)
        assert clock.now() == clock.now() == START
        assert clock.monotonic() == 0.0

    def test_an_aware_start_in_another_zone_is_kept_as_the_same_instant_in_utc(self) -> None:
        clock = FakeClock(datetime(2025, 1, 1, 9, 0, tzinfo=TOKYO))
        assert clock.now() == datetime(2025, 1, 1, 0, 0, tzinfo=UTC)
        assert clock.now().tzinfo is UTC

    @pytest.mark.parametrize(
        "step",
        [
            90,  # whole seconds
            90.0,  # float seconds
            timedelta(minutes=1, seconds=30),  # a timedelta
        ],
    )
    def test_advance_moves_the_wall_and_monotonic_clocks_together(
        self, step: float | timedelta
    ) -> None:
        clock = FakeClock(START)
        assert clock.advance(step) == START + timedelta(seconds=90)
        assert clock.now() == START + timedelta(seconds=90)
        assert clock.monotonic() == 90.0

    def test_set_rolls_the_wall_clock_back_but_not_the_monotonic_clock(self) -> None:
        clock = FakeClock(START)
        clock.advance(10)
        earlier = START - timedelta(hours=1)
        assert clock.set(earlier) == earlier
        assert clock.now() == earlier
        assert clock.monotonic() == 10.0

    def test_set_converts_an_aware_instant_to_utc(self) -> None:
        clock = FakeClock(START)
        clock.set(datetime(2025, 6, 1, 9, 0, tzinfo=TOKYO))
        assert clock.now() == datetime(2025, 6, 1, 0, 0, tzinfo=UTC)
        assert clock.now().tzinfo is UTC

    def test_concurrent_advances_are_never_lost(self) -> None:
        clock = FakeClock(START)

        def tick() -> None:
            for _ in range(1000):
                clock.advance(timedelta(microseconds=1))

        threads = [threading.Thread(target=tick) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert clock.now() == START + timedelta(microseconds=8000)


class TestFakeClockBadInput:
    def test_a_naive_start_is_refused_naming_the_field(self) -> None:
        with pytest.raises(InvalidInput, match="naive 2025-01-01T00:00:00") as caught:
            FakeClock(datetime(2025, 1, 1))
        assert caught.value.field == "start"

    def test_setting_a_naive_datetime_is_refused_and_the_clock_stays(self) -> None:
        clock = FakeClock(START)
        with pytest.raises(InvalidInput) as caught:
            clock.set(datetime(2025, 1, 1))
        assert caught.value.field == "to"
        assert clock.now() == START

    @pytest.mark.parametrize(
        "step",
        [
            -1,  # negative seconds: use set() to go back
            timedelta(seconds=-1),  # negative timedelta
            float("nan"),  # not a number of seconds
            "5",  # a string
            True,  # a bool is not a number of seconds
        ],
    )
    def test_advance_refuses_anything_but_a_forward_step_and_the_clock_stays(
        self, step: object
    ) -> None:
        clock = FakeClock(START)
        with pytest.raises(InvalidInput) as caught:
            clock.advance(step)  # type: ignore[arg-type]
        assert caught.value.field == "by"
        assert (clock.now(), clock.monotonic()) == (START, 0.0)

    def test_a_value_that_is_not_a_datetime_is_refused(self) -> None:
        with pytest.raises(InvalidInput, match="must be a datetime, not str"):
            require_aware("2025-01-01T00:00:00Z", "at")  # type: ignore[arg-type]
