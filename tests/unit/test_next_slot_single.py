"""``next_slot``'s own path: bad inputs, instants in any zone, and the plans it keeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from kalends.civil import next_slot, next_slots, parse_rule
from kalends.civil import search as engine
from kalends.errors import InvalidInput

AFTER = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)
RULES: list[dict[str, Any]] = [
    {"kind": "cron", "expression": "0 9 * * 1-5", "zone": "Europe/Berlin"},
    {"kind": "cron", "expression": "*/15 * * * *", "zone": "America/New_York"},
    {"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "shift"},
    {"kind": "monthly", "day": 31, "time": "10:00", "zone": "Australia/Sydney"},
    {"kind": "daily", "time": "07:00", "zone": "Europe/London", "interval_days": 3},
    {"kind": "every", "minutes": 45},
    {"kind": "after", "hours": 5},
    {"kind": "immediate"},
    {"kind": "completion_relative", "days": 2, "time": "09:00", "zone": "Asia/Tokyo"},
    {
        "kind": "calendars",
        "calendars": [
            {"kind": "daily", "time": "02:30", "zone": "America/New_York"},
            {"kind": "weekdays", "days": [1, 3], "time": "03:00", "zone": "America/New_York"},
        ],
    },
]


def batch_first(rule: Any, after: datetime, origin: datetime | None) -> Any:
    found = next_slots(rule, after, 1, origin=origin)
    return found[0] if found else None


class TestBadInput:
    @pytest.mark.parametrize(
        ("after", "origin", "field"),
        [
            (datetime(2026, 3, 7, 12), None, "after"),
            ("2026-03-07T12:00:00Z", None, "after"),
            (None, None, "after"),
            (AFTER, datetime(2026, 3, 1), "origin"),
            (AFTER, "2026-03-01T00:00:00Z", "origin"),
            (AFTER, 1_772_000_000, "origin"),
        ],
    )
    @pytest.mark.parametrize("data", [RULES[0], RULES[4], RULES[5]])
    def test_a_naive_or_non_datetime_instant_is_refused_naming_it(
        self, data: dict[str, Any], after: Any, origin: Any, field: str
    ) -> None:
        rule = parse_rule(data)
        with pytest.raises(InvalidInput) as caught:
            next_slot(rule, after, origin=origin)
        assert caught.value.field == field
        # A refused call leaves nothing behind that changes the next good one.
        assert next_slot(rule, AFTER, origin=AFTER) == batch_first(rule, AFTER, AFTER)


class TestInstantsInAnyZone:
    @pytest.mark.parametrize("data", RULES)
    @pytest.mark.parametrize(
        "shown_in",
        [UTC, ZoneInfo("UTC"), ZoneInfo("Pacific/Chatham"), timezone(timedelta(hours=-9))],
    )
    def test_the_same_instant_in_another_zone_gives_the_same_slot(
        self, data: dict[str, Any], shown_in: Any
    ) -> None:
        rule = parse_rule(data)
        origin = AFTER - timedelta(days=1, minutes=7)
        expected = batch_first(rule, AFTER, origin)
        assert next_slot(rule, AFTER.astimezone(shown_in), origin=origin) == expected
        assert next_slot(rule, AFTER, origin=origin.astimezone(shown_in)) == expected

    @pytest.mark.parametrize("data", RULES)
    def test_sub_second_instants_count_from_their_whole_second(self, data: dict[str, Any]) -> None:
        rule = parse_rule(data)
        after = AFTER + timedelta(microseconds=999_999)
        origin = AFTER - timedelta(hours=1, microseconds=1)
        assert next_slot(rule, after, origin=origin) == batch_first(rule, after, origin)
        assert next_slot(rule, after) == batch_first(rule, after, None)


class TestKeptPlans:
    @pytest.mark.parametrize("data", RULES)
    def test_each_origin_of_one_rule_gets_its_own_answer(self, data: dict[str, Any]) -> None:
        rule = parse_rule(data)
        for hours in (0, 1, 25, 49, 1000, 1):
            origin = AFTER - timedelta(hours=hours, seconds=13)
            assert next_slot(rule, AFTER, origin=origin) == batch_first(rule, AFTER, origin)
        assert next_slot(rule, AFTER) == batch_first(rule, AFTER, None)

    def test_answers_stay_right_when_the_kept_plans_are_dropped(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(engine, "_KEPT_PLANS", 2)
        monkeypatch.setattr(engine, "_KEPT_ORIGINS", 2)
        for round_ in range(3):
            for data in RULES:
                rule = parse_rule(data)  # a new object each time: ids get reused
                origin = AFTER - timedelta(hours=round_ * 7 + 1)
                got = next_slot(rule, AFTER, origin=origin)
                assert got == batch_first(rule, AFTER, origin)

    def test_the_hundred_year_bound_and_the_last_day_hold(self) -> None:
        rule = parse_rule({"kind": "cron", "expression": "0 0 29 2 *", "zone": "Europe/Berlin"})
        assert next_slot(rule, AFTER) == batch_first(rule, AFTER, None)
        never = parse_rule({"kind": "cron", "expression": "0 0 30 2 *", "zone": "Europe/Berlin"})
        assert next_slot(never, AFTER) is None
        late = datetime(9999, 12, 30, 12, tzinfo=UTC)
        for data in RULES:
            rule = parse_rule(data)
            assert next_slot(rule, late, origin=late) == batch_first(rule, late, late)
