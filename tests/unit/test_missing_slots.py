"""Named cases for ``missing_slots``: the nominal slots a rule does not produce.

The expected rows are literals worked out from the zones' rules:

- America/New_York: 2027-03-14 02:00 EST -> 03:00 EDT at 07:00Z.
- Pacific/Apia: 2011-12-29 24:00 (-10:00) -> 2011-12-31 00:00 (+14:00) at
  2011-12-30T10:00Z, so 2011-12-30 does not exist.
- Australia/Lord_Howe: 2027-10-03 02:00 (+10:30) -> 02:30 (+11:00) at 2027-10-02T15:30Z.
- America/Asuncion: 2017-10-01 00:00 (-04:00) -> 01:00 (-03:00) at 04:00Z.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from kalends.civil import (
    MAX_MISSING,
    At,
    GapPolicy,
    Missing,
    MissingReason,
    format_local,
    missing_slots,
    parse_rule,
    slots_between,
)
from kalends.errors import InvalidInput

Json = dict[str, Any]
NY = "America/New_York"
BERLIN = "Europe/Berlin"
APIA = "Pacific/Apia"
LORD_HOWE = "Australia/Lord_Howe"
GAP = MissingReason.DST_GAP
DAY_MISSING = MissingReason.DAY_MISSING


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def rows(rule: Json, after: str, until: str, **more: Any) -> list[tuple[str, str, str, str]]:
    """The rows as (at in UTC, local, zone, reason), the shape most cases compare."""
    found = missing_slots(parse_rule(rule), utc(after), utc(until), **more)
    return [(r.at.strftime("%Y-%m-%dT%H:%M:%SZ"), r.local, r.zone, r.reason.value) for r in found]


def daily(time: str, zone: str, **more: Any) -> Json:
    return {"kind": "daily", "time": time, "zone": zone, **more}


class TestWallClockRules:
    def test_a_skipped_daily_time_in_the_spring_gap_is_one_dst_gap_row_at_the_transition(
        self,
    ) -> None:
        found = missing_slots(
            parse_rule(daily("02:30", NY, gap="skip")), utc("2027-01-01"), utc("2028-01-01")
        )
        assert found == [
            Missing(
                at=utc("2027-03-14T07:00:00"),
                local="2027-03-14T02:30:00",
                zone=NY,
                reason=GAP,
                detail="02:30 does not exist in America/New_York on 2027-03-14: "
                "clocks jump from 02:00 to 03:00",
            )
        ]
        assert found[0].at.tzinfo is UTC

    def test_a_shifted_daily_time_in_the_gap_exists_so_nothing_is_missing(self) -> None:
        assert rows(daily("02:30", NY, gap="shift"), "2027-01-01", "2028-01-01") == []
        # shift is the default policy
        assert rows(daily("02:30", NY), "2027-01-01", "2028-01-01") == []

    @pytest.mark.parametrize("gap", ["skip", "shift"])
    def test_a_civil_day_the_zone_skips_is_day_missing_under_either_policy(self, gap: str) -> None:
        found = missing_slots(
            parse_rule(daily("09:00", APIA, gap=gap)), utc("2011-12-01"), utc("2012-01-10")
        )
        assert found == [
            Missing(
                at=utc("2011-12-30T10:00:00"),
                local="2011-12-30T09:00:00",
                zone=APIA,
                reason=DAY_MISSING,
                detail="2011-12-30 does not exist in Pacific/Apia",
            )
        ]

    def test_a_half_hour_gap_misses_only_the_times_inside_it(self) -> None:
        rule = {
            "kind": "times",
            "times": ["01:59", "02:00", "02:15", "02:29:59", "02:30"],
            "zone": LORD_HOWE,
            "gap": "skip",
        }
        found = missing_slots(parse_rule(rule), utc("2027-09-01"), utc("2027-11-01"))
        assert [r.local for r in found] == [
            "2027-10-03T02:00:00",
            "2027-10-03T02:15:00",
            "2027-10-03T02:29:59",
        ]
        assert {r.at for r in found} == {utc("2027-10-02T15:30:00")}
        assert found[2].detail == (
            "02:29:59 does not exist in Australia/Lord_Howe on 2027-10-03: "
            "clocks jump from 02:00 to 02:30"
        )

    def test_weekdays_miss_the_gap_only_on_a_chosen_weekday(self) -> None:
        sunday = {"kind": "weekdays", "days": [7], "time": "02:30", "zone": NY, "gap": "skip"}
        monday = {**sunday, "days": [1]}
        assert rows(sunday, "2027-03-01", "2027-04-01") == [
            ("2027-03-14T07:00:00Z", "2027-03-14T02:30:00", NY, "dst-gap")
        ]
        assert rows(monday, "2027-03-01", "2027-04-01") == []

    def test_daily_every_three_days_counts_days_from_the_origin(self) -> None:
        rule = daily("02:30", NY, gap="skip", interval_days=3)
        # 2027-03-14 is 0 days from an origin on 2027-03-14, 2 days from one on the 12th.
        assert rows(rule, "2027-03-01", "2027-04-01", origin=utc("2027-03-11T12:00")) == [
            ("2027-03-14T07:00:00Z", "2027-03-14T02:30:00", NY, "dst-gap")
        ]
        assert rows(rule, "2027-03-01", "2027-04-01", origin=utc("2027-03-12T12:00")) == []
        # without an origin, `after` is the origin: 2027-03-02 + 12 days
        assert rows(rule, "2027-03-02T12:00", "2027-04-01") == [
            ("2027-03-14T07:00:00Z", "2027-03-14T02:30:00", NY, "dst-gap")
        ]

    def test_completion_relative_counts_days_from_the_origin(self) -> None:
        rule = {"kind": "completion_relative", "days": 2, "time": "02:30", "zone": NY}
        skipped = {**rule, "gap": "skip"}
        origin = utc("2027-03-12T15:00")
        assert rows(skipped, "2027-03-10", "2027-03-20", origin=origin) == [
            ("2027-03-14T07:00:00Z", "2027-03-14T02:30:00", NY, "dst-gap")
        ]
        assert rows(rule, "2027-03-10", "2027-03-20", origin=origin) == []

    def test_an_at_rule_in_a_gap_under_skip_is_missing(self) -> None:
        # parse_rule refuses such a wall time; a rule built directly can still name one.
        rule = At(local=datetime(2027, 3, 14, 2, 30), zone=NY, gap=GapPolicy.SKIP)
        found = missing_slots(rule, utc("2027-03-01"), utc("2027-04-01"))
        assert [(r.local, r.reason) for r in found] == [("2027-03-14T02:30:00", GAP)]

    @pytest.mark.parametrize(
        ("gap", "expected"),
        [
            # a wall-clock cron is like daily
            ("skip", [("2027-03-14T07:00:00Z", "2027-03-14T02:30:00", NY, "dst-gap")]),
            ("shift", []),
        ],
    )
    def test_a_wall_clock_cron_follows_its_gap_policy(
        self, gap: str, expected: list[tuple[str, str, str, str]]
    ) -> None:
        rule = {"kind": "cron", "expression": "30 2 * * *", "zone": NY, "gap": gap}
        assert rows(rule, "2027-01-01", "2028-01-01") == expected


class TestMonthly:
    def test_the_months_without_day_31_are_missing_at_the_next_months_local_midnight(
        self,
    ) -> None:
        rule = {"kind": "monthly", "day": 31, "time": "09:00", "zone": NY}
        assert rows(rule, "2027-01-01", "2028-01-01") == [
            ("2027-03-01T05:00:00Z", "2027-02-31T09:00:00", NY, "day-missing"),
            ("2027-05-01T04:00:00Z", "2027-04-31T09:00:00", NY, "day-missing"),
            ("2027-07-01T04:00:00Z", "2027-06-31T09:00:00", NY, "day-missing"),
            ("2027-10-01T04:00:00Z", "2027-09-31T09:00:00", NY, "day-missing"),
            ("2027-12-01T05:00:00Z", "2027-11-31T09:00:00", NY, "day-missing"),
        ]
        found = missing_slots(parse_rule(rule), utc("2027-02-01"), utc("2027-03-02"))
        assert [r.detail for r in found] == ["February 2027 has no day 31"]

    @pytest.mark.parametrize(
        ("day", "year", "months"),
        [
            (29, 2027, ["02"]),  # not a leap year
            (29, 2028, []),  # a leap year
            (30, 2028, ["02"]),
            (28, 2027, []),  # every month has a 28th
        ],
    )
    def test_only_the_months_shorter_than_the_day_are_missing(
        self, day: int, year: int, months: list[str]
    ) -> None:
        rule = {"kind": "monthly", "day": day, "time": "09:00", "zone": BERLIN}
        found = rows(rule, f"{year}-01-01", f"{year + 1}-01-01")
        assert [local[5:7] for _, local, _, _ in found] == months

    def test_a_next_month_midnight_inside_a_gap_settles_the_month_at_the_gaps_end(self) -> None:
        rule = {"kind": "monthly", "day": 31, "time": "09:00", "zone": "America/Asuncion"}
        assert rows(rule, "2017-09-15", "2017-10-15") == [
            ("2017-10-01T04:00:00Z", "2017-09-31T09:00:00", "America/Asuncion", "day-missing")
        ]

    def test_the_row_belongs_to_the_window_holding_its_instant(self) -> None:
        rule = parse_rule({"kind": "monthly", "day": 31, "time": "09:00", "zone": NY})
        settled = utc("2027-03-01T05:00:00")
        second = timedelta(seconds=1)
        assert len(missing_slots(rule, settled - second, settled)) == 1
        assert missing_slots(rule, settled, settled + second) == []

    def test_a_cron_day_31_matches_existing_days_only_and_misses_no_month(self) -> None:
        rule = {"kind": "cron", "expression": "0 9 31 * *", "zone": NY}
        assert rows(rule, "2027-01-01", "2028-01-01") == []


class TestElapsedCron:
    def test_every_matching_minute_inside_the_gap_is_missing_at_the_transition(self) -> None:
        rule = {"kind": "cron", "expression": "* 2 * * *", "zone": NY}
        found = rows(rule, "2027-03-13", "2027-03-15")
        assert [local for _, local, _, _ in found] == [
            f"2027-03-14T02:{m:02d}:00" for m in range(60)
        ]
        assert {(at, reason) for at, _, _, reason in found} == {("2027-03-14T07:00:00Z", "dst-gap")}

    def test_the_gap_policy_does_not_matter_for_elapsed_cron(self) -> None:
        rule = {"kind": "cron", "expression": "*/15 * * * *", "zone": NY}
        expected = rows({**rule, "gap": "skip"}, "2027-03-13", "2027-03-15")
        assert len(expected) == 4
        assert rows({**rule, "gap": "shift"}, "2027-03-13", "2027-03-15") == expected

    def test_a_skipped_day_is_one_long_gap_for_elapsed_cron(self) -> None:
        rule = {"kind": "cron", "expression": "0 * * * *", "zone": APIA}
        found = missing_slots(parse_rule(rule), utc("2011-12-29"), utc("2012-01-01"))
        assert [r.local for r in found] == [f"2011-12-30T{h:02d}:00:00" for h in range(24)]
        assert {r.reason for r in found} == {GAP}
        assert found[9].detail == (
            "09:00 does not exist in Pacific/Apia on 2011-12-30: "
            "clocks jump from 2011-12-30 00:00 to 2011-12-31 00:00"
        )

    def test_limit_keeps_the_earliest_rows(self) -> None:
        rule = {"kind": "cron", "expression": "* 2 * * *", "zone": NY}
        everything = rows(rule, "2027-01-01", "2029-01-01")
        assert len(everything) == 120
        assert rows(rule, "2027-01-01", "2029-01-01", limit=7) == everything[:7]
        assert rows(rule, "2027-01-01", "2029-01-01", limit=0) == []


class TestElapsedRules:
    @pytest.mark.parametrize(
        "rule",
        [
            {"kind": "every", "minutes": 15},
            {"kind": "after", "hours": 2},
            {"kind": "immediate"},
        ],
    )
    def test_elapsed_rules_never_miss_a_slot(self, rule: Json) -> None:
        assert rows(rule, "2027-03-14T00:00", "2027-03-15T00:00", origin=utc("2027-03-14")) == []


class TestCalendars:
    def test_each_calendar_misses_in_its_own_zone_with_the_inherited_policy(self) -> None:
        rule = {
            "kind": "calendars",
            "gap": "skip",
            "calendars": [daily("02:30", NY), daily("02:30", BERLIN)],
        }
        assert rows(rule, "2027-01-01", "2028-01-01") == [
            ("2027-03-14T07:00:00Z", "2027-03-14T02:30:00", NY, "dst-gap"),
            ("2027-03-28T01:00:00Z", "2027-03-28T02:30:00", BERLIN, "dst-gap"),
        ]

    def test_a_calendars_own_policy_overrides_the_inherited_one(self) -> None:
        rule = {
            "kind": "calendars",
            "gap": "skip",
            "calendars": [daily("02:30", NY, gap="shift"), daily("02:30", BERLIN)],
        }
        assert [zone for _, _, zone, _ in rows(rule, "2027-01-01", "2028-01-01")] == [BERLIN]

    def test_the_same_wall_time_in_the_same_zone_counts_once(self) -> None:
        rule = {
            "kind": "calendars",
            "gap": "skip",
            "calendars": [
                daily("02:30", NY),
                {"kind": "weekdays", "days": [7], "time": "02:30", "zone": NY},
            ],
        }
        assert rows(rule, "2027-01-01", "2028-01-01") == [
            ("2027-03-14T07:00:00Z", "2027-03-14T02:30:00", NY, "dst-gap")
        ]

    def test_a_wall_time_another_calendar_shifts_into_a_slot_is_not_missing(self) -> None:
        rule = {
            "kind": "calendars",
            "calendars": [daily("02:30", NY, gap="skip"), daily("02:30", NY, gap="shift")],
        }
        assert rows(rule, "2027-01-01", "2028-01-01") == []

    def test_a_day_missing_row_wins_over_an_elapsed_crons_row_for_the_same_wall_time(
        self,
    ) -> None:
        rule = {
            "kind": "calendars",
            "calendars": [
                {"kind": "cron", "expression": "0 * * * *", "zone": APIA},
                daily("09:00", APIA),
            ],
        }
        found = missing_slots(parse_rule(rule), utc("2011-12-29"), utc("2012-01-01"))
        assert len(found) == 24
        assert [(r.local, r.reason) for r in found if r.reason is DAY_MISSING] == [
            ("2011-12-30T09:00:00", DAY_MISSING)
        ]


class TestWindows:
    def test_a_row_is_in_the_window_after_its_start_up_to_and_including_its_end(self) -> None:
        rule = parse_rule(daily("02:30", NY, gap="skip"))
        at = utc("2027-03-14T07:00:00")
        second = timedelta(seconds=1)
        assert len(missing_slots(rule, at - second, at)) == 1
        assert missing_slots(rule, at, at + second) == []
        # microseconds: the instant is strictly after 06:59:59.5 and not after 07:00:00.5
        half = timedelta(microseconds=500_000)
        assert len(missing_slots(rule, at - half, at + half)) == 1
        assert missing_slots(rule, at + half, at + second) == []

    def test_any_aware_zone_gives_the_same_window(self) -> None:
        rule = parse_rule(daily("02:30", NY, gap="skip"))
        eastern = timezone(timedelta(hours=-5))
        after = datetime(2027, 3, 13, tzinfo=eastern)
        until = datetime(2027, 3, 15, tzinfo=eastern)
        assert missing_slots(rule, after, until) == missing_slots(
            rule, after.astimezone(UTC), until.astimezone(UTC)
        )
        assert len(missing_slots(rule, after, until)) == 1

    def test_consecutive_windows_give_every_row_once(self) -> None:
        apia = {"kind": "times", "times": ["00:30", "09:00"], "zone": APIA}
        rule = parse_rule(
            {"kind": "calendars", "gap": "skip", "calendars": [daily("02:30", NY), apia]}
        )
        start, end = utc("2009-01-01"), utc("2013-01-01")
        whole = missing_slots(rule, start, end)
        # four New York spring gaps; Apia's 2010-09-26 00:00 -> 01:00 and its lost day (twice)
        assert [(r.zone, r.reason) for r in whole].count((APIA, DAY_MISSING)) == 2
        assert len(whole) == 7
        pieces: list[Missing] = []
        edge = start
        while edge < end:
            pieces += missing_slots(rule, edge, min(edge + timedelta(days=37), end))
            edge += timedelta(days=37)
        assert pieces == whole

    def test_an_empty_or_inverted_window_has_no_rows(self) -> None:
        rule = parse_rule(daily("02:30", NY, gap="skip"))
        at = utc("2027-03-14T07:00:00")
        assert missing_slots(rule, at, at) == []
        assert missing_slots(rule, at + timedelta(days=1), at - timedelta(days=1)) == []

    def test_a_century_window_is_answered(self) -> None:
        rule = parse_rule({"kind": "monthly", "day": 31, "time": "09:00", "zone": NY})
        found = missing_slots(rule, utc("2000-01-01"), utc("2099-12-31"))
        assert len(found) == 500


class TestBadInput:
    RULE = parse_rule(daily("02:30", NY, gap="skip"))

    @pytest.mark.parametrize(
        ("after", "until", "field"),
        [
            (datetime(2027, 3, 1), utc("2027-04-01"), "after"),  # naive
            (utc("2027-03-01"), datetime(2027, 4, 1), "until"),  # naive
            ("2027-03-01T00:00:00Z", utc("2027-04-01"), "after"),  # text, not an instant
            (utc("2027-03-01"), None, "until"),
            (utc("1990-01-01"), utc("2091-01-01"), "until"),  # more than 100 years
        ],
    )
    def test_a_bad_window_is_refused_naming_its_field(
        self, after: Any, until: Any, field: str
    ) -> None:
        with pytest.raises(InvalidInput) as error:
            missing_slots(self.RULE, after, until)
        assert error.value.field == field
        assert field in str(error.value)

    @pytest.mark.parametrize("limit", [-1, MAX_MISSING + 1, True, 2.0, "10"])
    def test_a_bad_limit_is_refused(self, limit: Any) -> None:
        with pytest.raises(InvalidInput) as error:
            missing_slots(self.RULE, utc("2027-03-01"), utc("2027-04-01"), limit=limit)
        assert error.value.field == "limit"

    def test_a_naive_origin_is_refused(self) -> None:
        rule = parse_rule(daily("02:30", NY, gap="skip", interval_days=3))
        with pytest.raises(InvalidInput) as error:
            missing_slots(rule, utc("2027-03-01"), utc("2027-04-01"), origin=datetime(2027, 3, 1))
        assert error.value.field == "origin"


class TestPartition:
    """The existing slots and the missing rows are together the rule's nominal wall times."""

    def test_times_under_skip_in_new_york_over_a_year(self) -> None:
        rule = parse_rule(
            {"kind": "times", "times": ["01:30", "02:30", "23:00"], "zone": NY, "gap": "skip"}
        )
        # from 2027-01-01 12:00 to 2028-01-01 12:00 New York time: no slot near either end
        start, end = utc("2027-01-01T17:00"), utc("2028-01-01T17:00")
        existing = [format_local(s.local) for s in slots_between(rule, start, end)]
        missing = [r.local for r in missing_slots(rule, start, end)]
        nominal = ["2027-01-01T23:00:00"]
        day = date(2027, 1, 2)
        while day <= date(2027, 12, 31):
            nominal += [f"{day}T01:30:00", f"{day}T02:30:00", f"{day}T23:00:00"]
            day += timedelta(days=1)
        nominal += ["2028-01-01T01:30:00", "2028-01-01T02:30:00"]
        assert missing == ["2027-03-14T02:30:00"]
        assert not set(existing) & set(missing)
        assert sorted(existing + missing) == nominal

    def test_monthly_31_in_berlin_over_a_year(self) -> None:
        rule = parse_rule({"kind": "monthly", "day": 31, "time": "09:00", "zone": BERLIN})
        start, end = utc("2027-01-01"), utc("2028-01-01")
        existing = [format_local(s.local) for s in slots_between(rule, start, end)]
        missing = [r.local for r in missing_slots(rule, start, end)]
        assert len(existing) == 7
        assert sorted(existing + missing) == [f"2027-{m:02d}-31T09:00:00" for m in range(1, 13)]

    @pytest.mark.parametrize("gap", ["skip", "shift"])
    def test_daily_in_apia_around_its_lost_day(self, gap: str) -> None:
        rule = parse_rule(daily("09:00", APIA, gap=gap))
        start, end = utc("2011-12-01"), utc("2012-01-10")
        existing = [format_local(s.local) for s in slots_between(rule, start, end)]
        missing = [r.local for r in missing_slots(rule, start, end)]
        nominal = []
        day = date(2011, 12, 1)
        while day <= date(2012, 1, 10):  # +14:00: 2012-01-10 09:00 is 01-09T19:00Z
            nominal.append(f"{day}T09:00:00")
            day += timedelta(days=1)
        assert missing == ["2011-12-30T09:00:00"]
        assert sorted(existing + missing) == nominal
