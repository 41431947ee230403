"""Which dates a series emits (seed 000, "Recurrence"): rules that keep the wall time,
calendar days in the series' zone, inclusive end dates, counts, the 100-year bound,
catch-up without a backlog, and DST gaps and overlaps.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from uuid import UUID

import pytest

from kalends.tasks import TimedValue
from kalends.tasks.series_rules import (
    SEARCH_DAYS,
    SeriesKind,
    SeriesRule,
    next_date,
    successor_date,
)

from .support import World, dates, instant, occurrences, series_row, task_row

NEW_YORK = "America/New_York"


def advance(world: World, series_id: UUID, *, skip: bool = False) -> UUID | None:
    """Completes (or skips) the outstanding occurrence; returns the next one's root, if any."""
    current = world.outstanding(series_id)
    if skip:
        world.skip(current)
    else:
        world.complete(current)
    return world.view(series_id).outstanding_task_id


def timed_series(
    world: World, rule: dict[str, Any], anchor: str, time: str, zone: str, **options: Any
) -> UUID:
    """A series at ``time`` in ``zone`` whose first occurrence is due on ``anchor`` then."""
    root = world.create("Recurring")
    world.schedule(root.id, {"due": {"local": f"{anchor}T{time}", "zone": zone}})
    return world.start(root.id, rule, time_of_day=time, zone=zone, **options).id


def due_of(world: World, task_id: UUID) -> TimedValue:
    due = world.task(task_id).due
    assert isinstance(due, TimedValue)
    return due


class TestRulesKeepTheWallTime:
    @pytest.mark.parametrize(
        ("rule", "expected"),
        [
            # Every second day; 8 March 2026 is the first day of daylight time in New York.
            ({"kind": "daily", "interval_days": 2}, ["2026-03-09", "2026-03-11", "2026-03-13"]),
            # Monday and Thursday (Monday=1).
            ({"kind": "weekdays", "days": [1, 4]}, ["2026-03-09", "2026-03-12", "2026-03-16"]),
            # Two calendar days after each completion, which happens on the due day.
            ({"kind": "completion_relative", "days": 2}, ["2026-03-09", "2026-03-11"]),
        ],
    )
    def test_daily_weekdays_and_completion_relative_retain_the_chosen_local_wall_time(
        self, world: World, rule: dict[str, Any], expected: list[str]
    ) -> None:
        world.at("2026-03-07T12:00")
        series_id = timed_series(world, rule, "2026-03-07", "09:15:00", NEW_YORK)

        seen = []
        for _ in expected:
            next_root = advance(world, series_id)
            assert next_root is not None
            due = due_of(world, next_root)
            seen.append(due.local.date().isoformat())
            # 09:15 on both sides of the DST change, so the instant moves by an hour.
            assert (due.local.time().isoformat(), due.zone) == ("09:15:00", NEW_YORK)
            assert due.at == instant(due.local.isoformat(), NEW_YORK)
            world.at(due.at.strftime("%Y-%m-%dT%H:%M"))

        assert seen == expected


class TestCompletionRelative:
    @pytest.mark.parametrize(
        ("zone", "completed_at", "expected"),
        [
            # 23:30 on 7 March in New York is already 8 March in UTC, and 24 hours
            # later it is 00:30 on 9 March (the night loses an hour).
            (NEW_YORK, "2026-03-08T04:30", date(2026, 3, 8)),
            # 00:30 on 5 April in Sydney is 4 April in UTC; 24 hours later Sydney has
            # fallen back and shows 23:30 on 5 April.
            ("Australia/Sydney", "2026-04-04T13:30", date(2026, 4, 6)),
        ],
    )
    def test_completion_relative_means_calendar_days_in_the_selected_timezone_not_24_hour_periods(
        self, world: World, zone: str, completed_at: str, expected: date
    ) -> None:
        root = world.create("Relative")
        view = world.start(
            root.id, {"kind": "completion_relative", "days": 1}, time_of_day="09:00", zone=zone
        )
        world.at(completed_at)

        next_root = advance(world, view.id)

        assert next_root is not None
        assert occurrences(world.store, view.id)[-1].occurrence_date == expected
        assert due_of(world, next_root).local.date() == expected


class TestBounds:
    def test_end_dates_are_inclusive(self, world: World) -> None:
        world.at("2026-03-05T12:00")
        root = world.create("Bounded")
        world.schedule(root.id, {"due": "2026-03-05"})
        view = world.start(root.id, {"kind": "daily"}, end_date=date(2026, 3, 7))

        assert advance(world, view.id) is not None
        last = advance(world, view.id)

        assert last is not None
        assert world.task(last).due == date(2026, 3, 7)
        assert advance(world, view.id) is None
        assert world.view(view.id).status == "ended"
        assert dates(occurrences(world.store, view.id)) == [
            date(2026, 3, 5),
            date(2026, 3, 6),
            date(2026, 3, 7),
        ]

    def test_a_series_cannot_end_before_it_starts(self, world: World) -> None:
        root = world.create("Backwards")
        world.schedule(root.id, {"due": "2026-03-05"})

        with pytest.raises(ValueError, match="end before it starts"):
            world.start(root.id, {"kind": "daily"}, end_date=date(2026, 3, 4))

    def test_counts_include_emitted_occurrences_including_explicit_skips(
        self, world: World
    ) -> None:
        world.at("2026-03-05T12:00")
        root = world.create("Three times")
        view = world.start(root.id, {"kind": "daily"}, count=3)

        assert advance(world, view.id, skip=True) is not None  # the 1st, skipped
        assert advance(world, view.id) is not None  # the 2nd, completed

        assert advance(world, view.id, skip=True) is None  # the 3rd: the count is reached
        row = series_row(world.store, view.id)
        assert (row.status, row.emitted) == ("ended", 3)
        assert [o.status for o in occurrences(world.store, view.id)] == [
            "skipped",
            "completed",
            "skipped",
        ]

    def test_calendar_dates_missed_while_a_task_remains_outstanding_do_not_consume_the_count(
        self, world: World
    ) -> None:
        world.at("2026-03-05T12:00")
        root = world.create("Twice")
        view = world.start(root.id, {"kind": "daily"}, count=2)
        # Ten daily dates pass while the first occurrence stays open.
        world.at("2026-03-15T12:00")

        second = advance(world, view.id)

        assert second is not None
        assert dates(occurrences(world.store, view.id)) == [date(2026, 3, 5), date(2026, 3, 15)]
        assert series_row(world.store, view.id).emitted == 2

    def test_rules_are_bounded_to_a_100_year_next_date_search(self) -> None:
        asked: list[date] = []

        def never(day: date) -> bool:
            asked.append(day)
            return False

        rule = SeriesRule(kind=SeriesKind.DAILY, interval_days=1)
        start = date(2026, 1, 1)

        assert next_date(rule, start, start, never) is None
        assert max(asked) == start + timedelta(days=SEARCH_DAYS)
        assert SEARCH_DAYS == 36_525  # 100 years of 365.25 days
        asked.clear()
        relative = SeriesRule(kind=SeriesKind.COMPLETION_RELATIVE, offset_days=3)
        assert successor_date(relative, start, start, start, never) is None
        assert len(asked) <= SEARCH_DAYS + 1

    def test_a_date_found_just_within_100_years_is_still_emitted(self) -> None:
        start = date(2026, 1, 1)
        last = start + timedelta(days=SEARCH_DAYS)
        rule = SeriesRule(kind=SeriesKind.DAILY, interval_days=1)

        assert next_date(rule, start, start, lambda day: day == last) == last
        assert next_date(rule, start, start, lambda day: day > last) is None

    def test_the_100_year_bound_stops_at_the_calendar_end_for_far_future_tasks(
        self, world: World
    ) -> None:
        root = world.create("Far future")
        world.schedule(root.id, {"due": "9950-01-01"})

        view = world.start(root.id, {"kind": "daily"})

        assert view.next_date == date(9950, 1, 2)

    def test_a_series_at_the_end_of_the_calendar_ends_instead_of_failing(
        self, world: World
    ) -> None:
        root = world.create("Last days")
        world.schedule(root.id, {"due": "9999-12-30"})
        view = world.start(root.id, {"kind": "daily"})

        world.complete(root.id)

        assert world.view(view.id).status in ("active", "ended")
        assert all(o.occurrence_date <= date.max for o in occurrences(world.store, view.id))


class TestCatchUp:
    def test_calendar_catchup_selects_the_latest_eligible_past_date(self, world: World) -> None:
        # Monday, Wednesday and Friday at 09:00 in Berlin, from Monday 2 March 2026.
        world.at("2026-03-02T07:00")
        series_id = timed_series(
            world,
            {"kind": "weekdays", "days": [1, 3, 5]},
            "2026-03-02",
            "09:00:00",
            "Europe/Berlin",
        )
        # Completed on Thursday 12 March: the 4th, 6th, 9th and 11th were missed.
        world.at("2026-03-12T10:00")

        next_root = advance(world, series_id)

        assert next_root is not None
        assert due_of(world, next_root).local.isoformat() == "2026-03-11T09:00:00"

    def test_calendar_catchup_otherwise_selects_the_next_future_date(self, world: World) -> None:
        world.at("2026-03-02T07:00")
        series_id = timed_series(
            world,
            {"kind": "weekdays", "days": [1, 3, 5]},
            "2026-03-02",
            "09:00:00",
            "Europe/Berlin",
        )
        # Completed early on its own Monday: no later rule date has come yet.

        next_root = advance(world, series_id)

        assert next_root is not None
        assert due_of(world, next_root).local.isoformat() == "2026-03-04T09:00:00"

    def test_calendar_catchup_follows_the_interval_of_a_daily_rule(self, world: World) -> None:
        world.at("2026-03-01T12:00")
        root = world.create("Every third day")
        world.schedule(root.id, {"due": "2026-03-01"})
        view = world.start(root.id, {"kind": "daily", "interval_days": 3})
        world.at("2026-03-12T12:00")

        next_root = advance(world, view.id)

        assert next_root is not None
        # 1, 4, 7, 10, 13 March: the 10th is the latest rule date that has come.
        assert world.task(next_root).due == date(2026, 3, 10)

    def test_catchup_does_not_create_a_backlog(self, world: World) -> None:
        world.at("2026-03-01T12:00")
        root = world.create("Daily")
        world.schedule(root.id, {"due": "2026-03-01"})
        view = world.start(root.id, {"kind": "daily"})
        world.at("2026-04-30T12:00")

        advance(world, view.id)

        rows = occurrences(world.store, view.id)
        assert [(r.ordinal, r.status) for r in rows] == [(1, "completed"), (2, "outstanding")]
        assert rows[-1].occurrence_date == date(2026, 4, 30)

    def test_calendar_catchup_never_selects_a_date_after_the_end_date_over_an_eligible_one(
        self, world: World
    ) -> None:
        world.at("2026-03-05T12:00")
        root = world.create("Bounded")
        world.schedule(root.id, {"due": "2026-03-05"})
        view = world.start(root.id, {"kind": "daily"}, end_date=date(2026, 3, 10))
        world.at("2026-03-20T12:00")

        next_root = advance(world, view.id)

        # The 10th is the latest eligible past date: on the end date, so within it.
        assert next_root is not None
        assert world.task(next_root).due == date(2026, 3, 10)


class TestDaylightSavingTime:
    def test_generated_recurrence_dates_skip_nonexistent_dst_times(self, world: World) -> None:
        # 02:30 does not exist in New York on 8 March 2026 (02:00 jumps to 03:00).
        world.at("2026-03-07T12:00")
        series_id = timed_series(world, {"kind": "daily"}, "2026-03-07", "02:30:00", NEW_YORK)

        next_root = advance(world, series_id)

        assert next_root is not None
        due = due_of(world, next_root)
        assert due.local.isoformat() == "2026-03-09T02:30:00"
        assert due.at == instant("2026-03-09T02:30", NEW_YORK)

    def test_generated_recurrence_overlaps_select_the_earlier_instant(self, world: World) -> None:
        # 01:30 happens twice in New York on 1 November 2026: first at 05:30Z, then at 06:30Z.
        world.at("2026-10-31T12:00")
        series_id = timed_series(world, {"kind": "daily"}, "2026-10-31", "01:30:00", NEW_YORK)

        next_root = advance(world, series_id)

        assert next_root is not None
        due = due_of(world, next_root)
        assert due.local.isoformat() == "2026-11-01T01:30:00"
        assert due.at == instant("2026-11-01T01:30", NEW_YORK, fold=0)
        assert due.at.isoformat() == "2026-11-01T05:30:00+00:00"

    def test_a_nonexistent_time_is_skipped_in_a_half_hour_dst_zone(self, world: World) -> None:
        # Lord Howe Island moves from 02:00 to 02:30 on 4 October 2026.
        zone = "Australia/Lord_Howe"
        world.at("2026-10-03T03:00")
        series_id = timed_series(world, {"kind": "daily"}, "2026-10-03", "02:15:00", zone)

        next_root = advance(world, series_id)

        assert next_root is not None
        assert due_of(world, next_root).local.isoformat() == "2026-10-05T02:15:00"

    def test_the_local_time_and_timezone_remain_stored_explicitly(self, world: World) -> None:
        world.at("2026-10-31T12:00")
        series_id = timed_series(world, {"kind": "daily"}, "2026-10-31", "01:30:00", NEW_YORK)

        next_root = advance(world, series_id)

        assert next_root is not None
        row = task_row(world.store, next_root)
        assert (row.due_local, row.due_zone) == ("2026-11-01T01:30:00", NEW_YORK)
        series = series_row(world.store, series_id)
        assert (series.local_time, series.zone) == ("01:30:00", NEW_YORK)
