"""The query functions of the civil engine, through its public API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from kalends.civil import (
    DstNote,
    InvalidRule,
    latest_due,
    next_instants,
    next_slot,
    next_slots,
    parse_rule,
    preview,
    rule_to_json,
    slots_between,
)
from kalends.errors import InvalidInput


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def rule(**data: Any) -> Any:
    return parse_rule(data)


class TestRoundTrip:
    @pytest.mark.parametrize(
        "data",
        [
            {"kind": "immediate"},
            {"kind": "at", "local": "2026-03-08T09:00:00", "zone": "America/New_York"},
            {"kind": "after", "minutes": 90},
            {"kind": "after", "hours": 2},
            {"kind": "every", "minutes": 15},
            {"kind": "every", "hours": 6},
            {"kind": "daily", "time": "02:30", "zone": "America/New_York"},
            {"kind": "daily", "time": "07:00", "zone": "Europe/London", "interval_days": 3},
            {"kind": "weekdays", "days": [1, 2, 3, 4, 5], "time": "09:00", "zone": "Europe/Berlin"},
            # duplicates are kept in the document and coalesce only in the slots
            {"kind": "times", "times": ["08:00", "12:30", "08:00"], "zone": "Asia/Tokyo"},
            {"kind": "monthly", "day": 31, "time": "10:00", "zone": "Australia/Sydney"},
            {"kind": "cron", "expression": "*/15 * * * *", "zone": "America/New_York"},
            {
                "kind": "calendars",
                "calendars": [
                    {"kind": "daily", "time": "08:00", "zone": "Europe/Berlin", "gap": "skip"},
                    {"kind": "cron", "expression": "0 9 * * mon-fri", "zone": "Asia/Tokyo"},
                ],
                "gap": "shift",
            },
            {"kind": "completion_relative", "days": 3, "time": "07:00", "zone": "Europe/London"},
            # seconds survive when they are not zero
            {"kind": "daily", "time": "06:00:30", "zone": "UTC", "gap": "skip"},
        ],
    )
    def test_every_canonical_form_round_trips_exactly(self, data: dict[str, Any]) -> None:
        parsed = parse_rule(data)
        assert rule_to_json(parsed) == data
        assert parse_rule(rule_to_json(parsed)) == parsed

    def test_times_with_seconds_are_printed_in_the_short_form_when_seconds_are_zero(self) -> None:
        parsed = rule(kind="daily", time="09:00:00", zone="UTC")
        assert rule_to_json(parsed)["time"] == "09:00"


class TestNextSlots:
    def test_times_duplicates_and_equal_instants_coalesce(self) -> None:
        times = rule(kind="times", times=["08:00", "12:30", "08:00"], zone="Asia/Tokyo")
        slots = next_slots(times, utc(2026, 1, 1), 4)
        assert [s.local.strftime("%d %H:%M") for s in slots] == [
            "01 12:30",
            "02 08:00",
            "02 12:30",
            "03 08:00",
        ]

    def test_two_gap_times_shift_onto_the_gap_end_once_and_lose_the_note_beside_an_exact_slot(
        self,
    ) -> None:
        times = rule(kind="times", times=["02:15", "02:45", "03:00"], zone="America/New_York")
        slots = next_slots(times, utc(2026, 3, 8, 5), 2)
        assert slots[0].at == utc(2026, 3, 8, 7)
        assert slots[0].local == datetime(2026, 3, 8, 3, 0)
        assert slots[0].dst is None  # 03:00 itself exists, so the slot is exact
        assert slots[1].local == datetime(2026, 3, 9, 2, 15)

    def test_a_day_that_does_not_exist_has_no_slot_under_shift(self) -> None:
        daily = rule(kind="daily", time="10:00", zone="Pacific/Apia", gap="shift")
        slots = next_slots(daily, utc(2011, 12, 27, 21), 4)  # 11:00 on the 27th in Apia
        assert [s.local.date().isoformat() for s in slots] == [
            "2011-12-28",
            "2011-12-29",
            "2011-12-31",
            "2012-01-01",
        ]

    def test_next_instants_are_the_instants_of_next_slots(self) -> None:
        cron = rule(kind="cron", expression="*/15 1-3 * * *", zone="Europe/Berlin")
        after = utc(2026, 10, 24, 22)
        assert next_instants(cron, after, 50) == [s.at for s in next_slots(cron, after, 50)]

    def test_slots_are_strictly_after_the_given_instant(self) -> None:
        daily = rule(kind="daily", time="09:00", zone="UTC")
        assert next_slot(daily, utc(2026, 5, 1, 9)) is not None
        found = next_slot(daily, utc(2026, 5, 1, 9))
        assert found is not None and found.at == utc(2026, 5, 2, 9)

    def test_any_offset_of_the_query_instant_is_accepted(self) -> None:
        daily = rule(kind="daily", time="09:00", zone="UTC")
        tokyo = timezone(timedelta(hours=9))
        found = next_slot(daily, datetime(2026, 5, 1, 17, 59, tzinfo=tokyo))
        assert found is not None and found.at == utc(2026, 5, 1, 9)

    def test_a_rule_that_never_matches_answers_none_within_the_century_bound(self) -> None:
        never = rule(kind="cron", expression="0 0 30 2 *", zone="UTC")
        assert next_slot(never, utc(2026, 1, 1)) is None

    def test_a_rare_rule_beyond_a_hundred_years_answers_none(self) -> None:
        feb29_monday = rule(kind="cron", expression="0 0 29 2 *", zone="UTC")
        assert next_slot(feb29_monday, utc(2096, 3, 1)) is not None
        # 2100 is not a leap year: from 2096-03-01 the next 29 February is 2104.
        assert next_slot(feb29_monday, utc(2096, 3, 1)).at == utc(2104, 2, 29)  # type: ignore[union-attr]

    def test_one_shot_rules_yield_at_most_one_slot(self) -> None:
        origin = utc(2026, 1, 1, 12)
        assert [s.at for s in next_slots(rule(kind="after", hours=2), origin, 5)] == [
            utc(2026, 1, 1, 14)
        ]
        at = rule(kind="at", local="2026-03-08T09:00:00", zone="America/New_York")
        assert [s.at for s in next_slots(at, origin, 5)] == [utc(2026, 3, 8, 13)]
        assert next_slots(at, utc(2026, 3, 8, 13), 5) == []

    def test_every_keeps_its_phase_from_the_origin(self) -> None:
        every = rule(kind="every", minutes=90)
        origin = utc(2026, 1, 1, 0, 7)
        found = next_slots(every, utc(2026, 1, 2), 2, origin=origin)
        assert [s.at for s in found] == [utc(2026, 1, 2, 0, 7), utc(2026, 1, 2, 1, 37)]

    def test_interval_days_count_calendar_days_across_dst(self) -> None:
        every3 = rule(kind="daily", time="07:00", zone="Europe/London", interval_days=3)
        found = next_slots(every3, utc(2026, 3, 24), 3)
        assert [s.local for s in found] == [
            datetime(2026, 3, 24, 7),
            datetime(2026, 3, 27, 7),
            datetime(2026, 3, 30, 7),
        ]
        assert found[2].at == utc(2026, 3, 30, 6)  # BST after 29 March

    def test_completion_relative_counts_calendar_days_in_its_zone(self) -> None:
        relative = rule(kind="completion_relative", days=3, time="07:00", zone="Europe/London")
        completed = utc(2026, 3, 27, 23, 30)  # 23:30 GMT on Friday 27 March
        found = next_slots(relative, completed, 3)
        assert [(s.local, s.at) for s in found] == [(datetime(2026, 3, 30, 7), utc(2026, 3, 30, 6))]

    def test_a_negative_count_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as info:
            next_slots(rule(kind="immediate"), utc(2026, 1, 1), -1)
        assert info.value.field == "count"


class TestWindowsAndCatchUp:
    def test_a_window_is_half_open(self) -> None:
        hourly = rule(kind="cron", expression="0 * * * *", zone="UTC")
        found = slots_between(hourly, utc(2026, 1, 1, 1), utc(2026, 1, 1, 4))
        assert [s.at.hour for s in found] == [1, 2, 3]

    def test_a_window_too_dense_to_list_is_refused(self) -> None:
        minutely = rule(kind="cron", expression="* * * * *", zone="UTC")
        with pytest.raises(InvalidInput) as info:
            slots_between(minutely, utc(2026, 1, 1), utc(2027, 1, 1))
        assert info.value.field == "end"

    def test_catch_up_selects_only_the_latest_missed_slot(self) -> None:
        daily = rule(kind="daily", time="09:00", zone="Europe/Berlin")
        slot = latest_due(daily, utc(2026, 6, 10, 12), high_water=utc(2026, 6, 1, 7))
        assert slot is not None and slot.at == utc(2026, 6, 10, 7)

    def test_catch_up_finds_nothing_newer_than_the_high_water_mark(self) -> None:
        daily = rule(kind="daily", time="09:00", zone="Europe/Berlin")
        assert latest_due(daily, utc(2026, 6, 10, 12), high_water=utc(2026, 6, 10, 7)) is None

    def test_a_clock_rolled_back_behind_the_high_water_mark_finds_nothing(self) -> None:
        daily = rule(kind="daily", time="09:00", zone="Europe/Berlin")
        assert latest_due(daily, utc(2026, 6, 9, 12), high_water=utc(2026, 6, 10, 7)) is None

    def test_catch_up_of_a_sparse_rule_reaches_far_back(self) -> None:
        yearly = rule(kind="cron", expression="0 0 1 1 *", zone="UTC")
        slot = latest_due(yearly, utc(2026, 12, 31), high_water=utc(2020, 6, 1))
        assert slot is not None and slot.at == utc(2026, 1, 1)

    def test_catch_up_of_a_dense_rule_returns_the_newest(self) -> None:
        minutely = rule(kind="cron", expression="* * * * *", zone="UTC")
        slot = latest_due(minutely, utc(2026, 6, 1, 12, 0, 30), high_water=utc(2020, 1, 1))
        assert slot is not None and slot.at == utc(2026, 6, 1, 12)

    def test_the_repeated_hour_gives_one_daily_catch_up(self) -> None:
        daily = rule(kind="daily", time="01:30", zone="America/New_York")
        first = latest_due(daily, utc(2026, 11, 1, 7), high_water=utc(2026, 10, 31, 6))
        assert first is not None and first.dst is DstNote.EARLIER
        assert first.at == utc(2026, 11, 1, 5, 30)
        assert latest_due(daily, utc(2026, 11, 1, 7), high_water=first.at) is None


class TestPreview:
    def test_immediate_shows_its_one_slot_at_the_origin(self) -> None:
        found = preview(rule(kind="immediate"), utc(2026, 1, 1, 8), 3)
        assert [s.at for s in found] == [utc(2026, 1, 1, 8)]

    def test_a_rule_without_gap_is_previewed_with_shift(self) -> None:
        daily = rule(kind="daily", time="02:30", zone="America/New_York")
        found = preview(daily, utc(2026, 3, 8), 1)
        assert found[0].dst is DstNote.SHIFTED
        assert found[0].at == utc(2026, 3, 8, 7)

    def test_skip_drops_the_nonexistent_occurrence(self) -> None:
        daily = rule(kind="daily", time="02:30", zone="America/New_York", gap="skip")
        found = preview(daily, utc(2026, 3, 8), 1)
        assert found[0].local == datetime(2026, 3, 9, 2, 30)

    def test_naive_instants_are_refused(self) -> None:
        with pytest.raises(InvalidInput) as info:
            preview(rule(kind="immediate"), datetime(2026, 1, 1), 1)
        assert info.value.field == "after"

    def test_nested_calendars_are_refused(self) -> None:
        with pytest.raises(InvalidRule) as info:
            parse_rule({"kind": "calendars", "calendars": [{"kind": "calendars", "calendars": []}]})
        assert info.value.field == "calendars[0].kind"


class TestEdgesOfTheCalendar:
    def test_a_search_near_year_9999_stops_at_the_last_representable_day(self) -> None:
        daily = rule(kind="daily", time="09:00", zone="Pacific/Kiritimati")
        found = next_slots(daily, utc(9999, 12, 25), 10)
        assert found and found[-1].at < utc(9999, 12, 31)
        assert [s.local.day for s in found] == list(range(26, 26 + len(found)))  # UTC+14

    def test_catch_up_near_year_1_does_not_overflow(self) -> None:
        daily = rule(kind="daily", time="09:00", zone="UTC")
        slot = latest_due(daily, utc(1, 1, 5, 12))
        assert slot is not None and slot.at == utc(1, 1, 5, 9)

    def test_elapsed_cron_near_year_9999_stops_cleanly(self) -> None:
        every_minute = rule(kind="cron", expression="*/30 * * * *", zone="America/New_York")
        found = next_slots(every_minute, utc(9999, 12, 29, 12), 1000)
        assert 0 < len(found) < 1000
