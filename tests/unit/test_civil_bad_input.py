"""Bad input to the civil engine: each is refused with a ValueError naming its field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kalends.civil import (
    AmbiguousLocalTime,
    InvalidRule,
    NonexistentLocalTime,
    UnknownZone,
    get_zone,
    latest_due,
    next_instants,
    next_slot,
    next_slots,
    parse_rule,
    preview,
    resolve_user_local,
    slots_between,
)
from kalends.errors import InvalidInput

Json = dict[str, Any]
ZONE = "Europe/Berlin"
DAILY: Json = {"kind": "daily", "time": "09:00", "zone": ZONE}
CRON: Json = {"kind": "cron", "expression": "0 9 * * *", "zone": ZONE}


def refused(
    data: object, error: type[InvalidInput], field: str, *, in_message: bool = True
) -> InvalidInput:
    """Parses ``data``, expecting ``error`` about ``field``, named in the message too.

    Messages about a wall time in a gap or overlap state the fact as SPEC §2
    words it, so they name the field through ``.field`` only.
    """
    with pytest.raises(error) as caught:
        parse_rule(data)
    assert isinstance(caught.value, ValueError)
    assert caught.value.field == field
    if in_message:
        assert field in str(caught.value)
    return caught.value


class TestRuleShape:
    @pytest.mark.parametrize(
        ("data", "field"),
        [
            ({**DAILY, "kind": "hourly"}, "kind"),  # unknown kind
            ({**DAILY, "kind": 3}, "kind"),  # kind not a string
            ({"time": "09:00", "zone": ZONE}, "kind"),  # kind missing
            ({**DAILY, "colour": "red"}, "colour"),  # a field this kind does not have
            ({**DAILY, "expression": "0 9 * * *"}, "expression"),  # another kind's field
            ({"kind": "immediate", "minutes": 5}, "minutes"),  # immediate takes nothing
            ({**DAILY, "gap": "later"}, "gap"),  # gap is skip or shift
            ({**DAILY, "gap": None}, "gap"),  # and not null
        ],
    )
    def test_a_malformed_rule_names_the_field(self, data: Json, field: str) -> None:
        refused(data, InvalidRule, field)

    @pytest.mark.parametrize("data", [None, [], "daily", 5, [("kind", "daily")]])
    def test_a_rule_that_is_not_an_object_is_refused(self, data: object) -> None:
        refused(data, InvalidRule, "rule")

    @pytest.mark.parametrize("field", ["time", "zone"])
    def test_a_required_field_that_is_missing_is_named(self, field: str) -> None:
        data = {k: v for k, v in DAILY.items() if k != field}
        refused(data, InvalidRule, field)


class TestTimesOfDay:
    @pytest.mark.parametrize(
        "value",
        [
            "24:00",  # no hour 24
            "9:00",  # hours take two digits
            "09:60",  # no minute 60
            "09:00:60",  # no second 60 (no leap seconds)
            "",  # empty
            900,  # not text
            "09:00 ",  # trailing space
            "09h00",  # not the format
            "-1:00",  # negative
            None,  # null
        ],
    )
    def test_a_bad_time_is_refused_in_every_place_a_time_goes(self, value: object) -> None:
        refused({**DAILY, "time": value}, InvalidRule, "time")
        refused(
            {"kind": "times", "times": ["08:00", "12:00", value], "zone": ZONE},
            InvalidRule,
            "times[2]",
        )
        nested = {"kind": "calendars", "calendars": [DAILY, {**DAILY, "time": value}]}
        refused(nested, InvalidRule, "calendars[1].time")

    def test_more_than_eight_times_are_refused(self) -> None:
        times = [f"{h:02d}:00" for h in range(9)]
        refused({"kind": "times", "times": times, "zone": ZONE}, InvalidRule, "times")

    @pytest.mark.parametrize("times", [[], "09:00", None])
    def test_times_must_be_a_non_empty_list(self, times: object) -> None:
        refused({"kind": "times", "times": times, "zone": ZONE}, InvalidRule, "times")


class TestDays:
    @pytest.mark.parametrize("day", [0, 32, -1, "1", 1.0, True, None])
    def test_a_monthly_day_outside_1_to_31_is_refused(self, day: object) -> None:
        refused({"kind": "monthly", "day": day, "time": "09:00", "zone": ZONE}, InvalidRule, "day")

    @pytest.mark.parametrize(
        ("days", "field"),
        [
            ([], "days"),  # empty
            ("1,2", "days"),  # not a list
            ([1, 2, 1], "days[2]"),  # Monday twice
            ([0], "days[0]"),  # ISO weekdays start at Monday=1
            ([1, 8], "days[1]"),  # and end at Sunday=7
            ([1, "2"], "days[1]"),  # not a number
            ([True], "days[0]"),  # a boolean is not a weekday
        ],
    )
    def test_a_bad_weekday_list_names_the_entry(self, days: object, field: str) -> None:
        rule = {"kind": "weekdays", "days": days, "time": "09:00", "zone": ZONE}
        refused(rule, InvalidRule, field)

    @pytest.mark.parametrize("interval", [0, -1, 1.5, "2", True])
    def test_a_day_interval_must_be_a_positive_whole_number(self, interval: object) -> None:
        refused({**DAILY, "interval_days": interval}, InvalidRule, "interval_days")

    @pytest.mark.parametrize("days", [-1, 2.0, "1", None])
    def test_completion_relative_days_must_be_a_whole_number_of_days(self, days: object) -> None:
        rule = {"kind": "completion_relative", "days": days, "time": "09:00", "zone": ZONE}
        refused(rule, InvalidRule, "days")


class TestElapsedRules:
    @pytest.mark.parametrize(
        ("fields", "field"),
        [
            ({"minutes": 14}, "minutes"),  # under 15 minutes
            ({"minutes": 0}, "minutes"),  # zero
            ({"minutes": -30}, "minutes"),  # negative
            ({"minutes": 15.5}, "minutes"),  # not whole
            ({"minutes": "30"}, "minutes"),  # not a number
            ({"minutes": True}, "minutes"),  # a boolean is not a number
            ({"hours": 0}, "hours"),  # zero hours
            ({"hours": -1}, "hours"),  # negative hours
            ({"hours": 1.5}, "hours"),  # not whole
            ({"minutes": 30, "hours": 1}, "minutes"),  # both
            ({}, "minutes"),  # neither
        ],
    )
    def test_a_bad_interval_is_refused(self, fields: Json, field: str) -> None:
        refused({"kind": "every", **fields}, InvalidRule, field)

    @pytest.mark.parametrize(
        ("fields", "field"),
        [
            ({"minutes": 0}, "minutes"),  # zero
            ({"minutes": -5}, "minutes"),  # negative
            ({"minutes": 2.5}, "minutes"),  # a float
            ({"minutes": False}, "minutes"),  # a boolean
            ({"hours": 0}, "hours"),  # zero hours
            ({"hours": True}, "hours"),  # a boolean
            ({"hours": 0.5}, "hours"),  # a float
            ({"minutes": 5, "hours": 1}, "minutes"),  # both
        ],
    )
    def test_a_bad_delay_is_refused(self, fields: Json, field: str) -> None:
        refused({"kind": "after", **fields}, InvalidRule, field)

    def test_fifteen_minutes_and_one_hour_are_accepted(self) -> None:
        parse_rule({"kind": "every", "minutes": 15})
        parse_rule({"kind": "every", "hours": 1})
        parse_rule({"kind": "after", "minutes": 1})


class TestCalendars:
    def test_more_than_eight_calendars_are_refused(self) -> None:
        refused({"kind": "calendars", "calendars": [DAILY] * 9}, InvalidRule, "calendars")

    def test_eight_calendars_are_accepted(self) -> None:
        parse_rule({"kind": "calendars", "calendars": [DAILY] * 8})

    @pytest.mark.parametrize("calendars", [[], None, DAILY])
    def test_calendars_must_be_a_non_empty_list(self, calendars: object) -> None:
        refused({"kind": "calendars", "calendars": calendars}, InvalidRule, "calendars")

    @pytest.mark.parametrize(
        "inner",
        [
            {"kind": "calendars", "calendars": [DAILY]},  # nested calendars
            {"kind": "every", "minutes": 30},  # elapsed intervals share no calendar
            {"kind": "after", "minutes": 30},
            {"kind": "immediate"},
            {"kind": "at", "local": "2026-05-01T09:00:00", "zone": ZONE},
            {"kind": "completion_relative", "days": 1, "time": "09:00", "zone": ZONE},
        ],
    )
    def test_only_calendar_kinds_may_be_calendars(self, inner: Json) -> None:
        refused(
            {"kind": "calendars", "calendars": [DAILY, inner]}, InvalidRule, "calendars[1].kind"
        )

    def test_an_error_inside_a_calendar_is_named_by_its_path(self) -> None:
        rule = {"kind": "calendars", "calendars": [DAILY, {**CRON, "expression": "0 9 * *"}]}
        refused(rule, InvalidRule, "calendars[1].expression")
        refused(
            {"kind": "calendars", "calendars": [{**DAILY, "zone": "CET"}]},
            UnknownZone,
            "calendars[0].zone",
        )
        refused({"kind": "calendars", "calendars": ["daily"]}, InvalidRule, "calendars[0]")


class TestCronExpressions:
    @pytest.mark.parametrize(
        "expression",
        [
            "0 9 * *",  # four fields
            "0 0 9 * * *",  # six fields (no seconds field)
            "",  # empty
            60,  # not text
            "60 * * * *",  # minute 60
            "0 24 * * *",  # hour 24
            "0 0 0 * *",  # day of month 0
            "0 0 32 * *",  # day of month 32
            "0 0 * 0 *",  # month 0
            "0 0 * 13 *",  # month 13
            "0 0 * * 8",  # day of week 8
            "0 0 * foo *",  # not a month name
            "0 0 * * funday",  # not a day name
            "0 0 * * mon-",  # half a range
            "*/0 * * * *",  # step 0
            "*/x * * * *",  # step not a number
            "0-59/-1 * * * *",  # negative step
            "30-10 * * * *",  # a range that runs backwards
            "0 0 * dec-jan *",  # a range of names that runs backwards
            "0 0 * * sat-sun",  # sun is 0: backwards too
            "0,,5 * * * *",  # an empty list item
            "? * * * *",  # not Vixie cron
            "0 0 L-3 * *",  # an offset from the last day (issue 24 §4 accepts L and LW only)
        ],
    )
    def test_a_bad_expression_is_refused(self, expression: object) -> None:
        refused({**CRON, "expression": expression}, InvalidRule, "expression")


class TestZones:
    @pytest.mark.parametrize(
        "zone",
        [
            "Mars/Olympus_Mons",  # unknown
            "europe/berlin",  # names are case-sensitive
            "+01:00",  # a fixed offset
            "UTC+1",
            "Etc/GMT+1",
            "GMT+1",
            "CET",  # abbreviations
            "EST",
            "PST",
            "",  # empty
            5,  # not text
            "../etc/passwd",  # not a path either
            "Europe/../Europe/Berlin",
        ],
    )
    def test_fixed_offsets_abbreviations_and_unknown_names_are_not_zones(
        self, zone: object
    ) -> None:
        refused({**DAILY, "zone": zone}, UnknownZone, "zone")
        with pytest.raises(UnknownZone):
            get_zone(zone)

    def test_utc_and_iana_names_are_zones(self) -> None:
        parse_rule({**DAILY, "zone": "UTC"})
        parse_rule({**DAILY, "zone": "America/Argentina/Buenos_Aires"})


class TestUserLocalTimes:
    def test_an_at_rule_in_a_gap_is_refused_naming_the_transition(self) -> None:
        rule = {"kind": "at", "local": "2026-03-08T02:30:00", "zone": "America/New_York"}
        message = str(refused(rule, InvalidRule, "local", in_message=False))
        assert "2026-03-08T02:30:00 does not exist in America/New_York" in message
        assert "02:00" in message
        assert "03:00" in message

    def test_an_at_rule_in_an_overlap_is_refused_naming_the_transition(self) -> None:
        rule = {"kind": "at", "local": "2026-11-01T01:30:00", "zone": "America/New_York"}
        message = str(refused(rule, InvalidRule, "local", in_message=False))
        assert "2026-11-01T01:30:00" in message
        assert "America/New_York" in message
        assert "02:00" in message
        assert "01:00" in message

    @pytest.mark.parametrize(
        "local",
        [
            "2026-05-01 09:00:00",  # a space, not T
            "2026-05-01T09:00",  # seconds missing
            "2026-05-01T09:00:00+02:00",  # an offset
            "2026-05-01T09:00:00Z",
            "2026-02-30T09:00:00",  # no such date
            "2026-05-01T24:00:00",
            "",
            None,
        ],
    )
    def test_an_at_rule_needs_a_local_date_time_with_seconds_and_no_offset(
        self, local: object
    ) -> None:
        refused({"kind": "at", "local": local, "zone": ZONE}, InvalidRule, "local")

    def test_resolving_a_time_in_a_gap_names_the_transition(self) -> None:
        with pytest.raises(NonexistentLocalTime) as caught:
            resolve_user_local("2026-03-08T02:30:00", "America/New_York")
        assert isinstance(caught.value, ValueError)
        assert caught.value.field == "local"
        message = str(caught.value)
        assert "2026-03-08T02:30:00 does not exist in America/New_York" in message
        assert "02:00" in message
        assert "03:00" in message

    def test_resolving_a_time_in_an_overlap_names_the_transition(self) -> None:
        with pytest.raises(AmbiguousLocalTime) as caught:
            resolve_user_local(datetime(2026, 10, 25, 2, 30), "Europe/Berlin")
        assert isinstance(caught.value, ValueError)
        assert caught.value.field == "local"
        message = str(caught.value)
        assert "2026-10-25T02:30:00" in message
        assert "Europe/Berlin" in message
        assert "03:00" in message
        assert "02:00" in message

    @pytest.mark.parametrize(
        ("local", "zone", "error"),
        [
            ("2026-04-05T02:30:00", "Australia/Sydney", AmbiguousLocalTime),
            ("2026-10-04T02:00:00", "Australia/Sydney", NonexistentLocalTime),
            ("2011-12-30T12:00:00", "Pacific/Apia", NonexistentLocalTime),  # a skipped day
            ("2026-03-08T00:00:00", "America/Havana", NonexistentLocalTime),  # midnight gap
        ],
    )
    def test_other_gaps_and_overlaps_are_refused_too(
        self, local: str, zone: str, error: type[InvalidInput]
    ) -> None:
        with pytest.raises(error) as caught:
            resolve_user_local(local, zone)
        assert local in str(caught.value)
        assert zone in str(caught.value)

    def test_resolving_an_aware_local_time_or_in_an_unknown_zone_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as caught:
            resolve_user_local(datetime(2026, 5, 1, 9, tzinfo=UTC), ZONE)
        assert caught.value.field == "local"
        with pytest.raises(UnknownZone):
            resolve_user_local("2026-05-01T09:00:00", "CET")


NAIVE = datetime(2026, 5, 1, 9)
AWARE = datetime(2026, 5, 1, 9, tzinfo=UTC)


class TestNaiveInstants:
    @pytest.mark.parametrize(
        ("call", "field"),
        [
            (lambda r: next_slot(r, NAIVE), "after"),
            (lambda r: next_slots(r, NAIVE, 3), "after"),
            (lambda r: next_instants(r, NAIVE, 3), "after"),
            (lambda r: preview(r, NAIVE, 3), "after"),
            (lambda r: next_slots(r, AWARE, 3, origin=NAIVE), "origin"),
            (lambda r: slots_between(r, NAIVE, AWARE), "start"),
            (lambda r: slots_between(r, AWARE, NAIVE), "end"),
            (lambda r: latest_due(r, NAIVE), "now"),
            (lambda r: latest_due(r, AWARE, high_water=NAIVE), "high_water"),
            (lambda r: latest_due(r, AWARE, origin=NAIVE), "origin"),
        ],
    )
    @pytest.mark.parametrize(
        "rule", [DAILY, {"kind": "every", "minutes": 30}, {"kind": "immediate"}]
    )
    def test_a_naive_datetime_is_refused_naming_the_argument(
        self, call: Any, field: str, rule: Json
    ) -> None:
        with pytest.raises(InvalidInput) as caught:
            call(parse_rule(rule))
        assert isinstance(caught.value, ValueError)
        assert caught.value.field == field
        assert field in str(caught.value)

    def test_a_window_longer_than_a_century_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as caught:
            slots_between(parse_rule(DAILY), AWARE, AWARE.replace(year=2127))
        assert caught.value.field == "end"

    @pytest.mark.parametrize("count", [-1, 1.5, "3", True])
    def test_a_bad_count_is_refused(self, count: object) -> None:
        with pytest.raises(InvalidInput) as caught:
            next_slots(parse_rule(DAILY), AWARE, count)  # type: ignore[arg-type]
        assert caught.value.field == "count"
