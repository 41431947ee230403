"""The civil engine agrees with the brute-force oracle of ``oracle.py``, slot for slot.

Rules are random over every kind, zones are drawn from a list of the awkward
ones (half-hour DST, midnight transitions, negative DST, skipped days), and the
``after`` instants are aimed at DST transitions. Each comparison asks the engine
for one slot more than the oracle finds in a window, so a slot the engine adds
inside the window, or one it misses, fails the test.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from kalends.civil import (
    Slot,
    latest_due,
    next_instants,
    next_slot,
    next_slots,
    parse_cron,
    parse_rule,
    preview,
    rule_to_json,
    slots_between,
)

from . import oracle
from .oracle import OracleSlot

Json = dict[str, Any]

ZONES = (
    "Australia/Lord_Howe",  # 30-minute DST
    "Pacific/Apia",  # 2011-12-30 skipped
    "Pacific/Fakaofo",  # 2011-12-30 skipped too
    "America/Santiago",  # transitions at midnight
    "America/Havana",  # transitions at midnight
    "America/Asuncion",  # transitions at midnight
    "Europe/Dublin",  # negative DST in winter
    "Antarctica/Troll",  # 2-hour DST
    "Africa/Casablanca",  # DST suspended for Ramadan
    "America/New_York",
    "Europe/Berlin",
    "Australia/Sydney",
    "Asia/Kathmandu",  # +05:45
    "America/St_Johns",  # -03:30, with DST
    "Pacific/Chatham",  # +12:45 / +13:45
    "America/Nuuk",
    "America/Godthab",  # a link to America/Nuuk
    "Asia/Tehran",
    "America/Sao_Paulo",
    "Europe/London",
    "Europe/Moscow",
    "Pacific/Kiritimati",  # +14, skipped 1994-12-31
    "Pacific/Kwajalein",  # skipped 1993-08-21
    "America/Caracas",  # -04:30 from 2007 to 2016
    "Asia/Gaza",
    "Asia/Jerusalem",
    "Africa/Cairo",
    "America/Mexico_City",
    "Asia/Pyongyang",  # -00:30 in 2015
    "Australia/Adelaide",
    "Pacific/Norfolk",
    "America/Scoresbysund",
    "Europe/Lisbon",
    "Asia/Dhaka",  # DST once, in 2009
    "Africa/Monrovia",  # -00:44:30 until 1972: offsets in seconds
    "America/Los_Angeles",
    "UTC",
)

FIRST = int(datetime(1970, 1, 1, tzinfo=UTC).timestamp())
LAST = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp())
MINUTE_WINDOW = timedelta(days=3)
DAY_WINDOW = timedelta(days=62)


def observed(slot: Slot) -> OracleSlot:
    """An engine slot as the oracle writes one, after checking the types the doc promises."""
    assert slot.at.utcoffset() == timedelta(0), slot
    assert slot.local.tzinfo is None, slot
    assert slot.dst is None or slot.dst.value in (oracle.SHIFTED, oracle.EARLIER), slot
    return OracleSlot(slot.at, slot.local, slot.zone, None if slot.dst is None else str(slot.dst))


class Scenario(NamedTuple):
    rule: Json
    after: datetime
    origin: datetime
    window: timedelta

    @property
    def end(self) -> datetime:
        return self.after + self.window

    def oracle_slots(self) -> list[OracleSlot]:
        """The oracle's slots with ``after < at <= end``."""
        found = oracle.slots(self.rule, self.after, self.end, origin=self.origin)
        return [s for s in found if s.at > self.after]


def assert_agrees(s: Scenario) -> None:
    expected = s.oracle_slots()
    event("DST notes in the window", str(sorted({str(x.dst) for x in expected})))
    event("slots in the window", "none" if not expected else "1-9" if len(expected) < 10 else "10+")
    got = next_slots(parse_rule(s.rule), s.after, len(expected) + 1, origin=s.origin)
    assert [observed(g) for g in got[: len(expected)]] == expected
    if len(got) > len(expected):
        assert got[-1].at > s.end, f"the engine found {got[-1]}, the oracle nothing in the window"


# --- strategies ----------------------------------------------------------------------

GAP_PRONE_TIMES = (
    "00:00",
    "00:30",
    "01:00",
    "01:30",
    "01:45",
    "02:00",
    "02:15",
    "02:30",
    "03:00",
    "03:30",
    "23:30",
    "23:59",
    "12:00",
)


def format_time(t: time) -> str:
    return f"{t:%H:%M:%S}" if t.second else f"{t:%H:%M}"


gaps = st.sampled_from((None, "skip", "shift"))
zones = st.sampled_from(ZONES)


def with_gap(rule: Json, gap: str | None) -> Json:
    return rule if gap is None else {**rule, "gap": gap}


class Focus(NamedTuple):
    """A transition of ``zone`` that a scenario aims at: its ``after``, times and days."""

    zone: str
    transition: datetime

    @property
    def day(self) -> date:
        return oracle.wall(self.transition, self.zone).date()

    def clocks(self, zone: str | None = None) -> st.SearchStrategy[time]:
        """Wall times in ``zone`` (default: the focus zone) around the transition.

        In the focus zone these fall mostly inside its gap or overlap, which is the
        wall-time span between what the old and the new offset show at the
        transition; in another zone they name the same instants, so calendars in
        two zones coincide.
        """
        shown_in = zone or self.zone
        before = oracle.wall(self.transition - oracle.SECOND, shown_in) + oracle.SECOND
        after = oracle.wall(self.transition, shown_in)
        low, span = min(before, after), abs(after - before) // timedelta(minutes=1)
        return st.builds(
            lambda minutes, grain: (low + timedelta(minutes=minutes // grain * grain)).time(),
            st.integers(0, max(span - 1, 0)) | st.integers(-30, span + 30) | st.integers(-180, 180),
            st.sampled_from((1, 15, 30)),
        )


@st.composite
def focuses(draw: st.DrawFn, zone: str) -> Focus:
    near = oracle.transitions(zone) or oracle.transitions("America/New_York")
    return Focus(zone, draw(st.sampled_from(near)))


def times_of_day(focus: Focus, zone: str | None = None) -> st.SearchStrategy[str]:
    return st.one_of(
        focus.clocks(zone).map(format_time),
        focus.clocks(zone).map(format_time),
        st.sampled_from(GAP_PRONE_TIMES),
        st.builds(time, st.integers(0, 23), st.integers(0, 59)).map(format_time),
        st.builds(time, st.integers(0, 23), st.integers(0, 59), st.integers(1, 59)).map(
            format_time
        ),
    )


@st.composite
def instants(draw: st.DrawFn, focus: Focus) -> datetime:
    """An instant in 1970-2100, usually hours or days before the focus transition."""
    if draw(st.sampled_from((True, True, True, False))):
        before = draw(st.integers(60, 6 * 3600) | st.integers(0, 4 * 86400))
        at = focus.transition - timedelta(seconds=before)
    else:
        at = datetime.fromtimestamp(draw(st.integers(FIRST, LAST)), UTC)
    # Whole minutes and hours make ``after`` land exactly on slots.
    grain = draw(st.sampled_from((1, 60, 900, 3600)))
    return datetime.fromtimestamp(int(at.timestamp()) // grain * grain, UTC)


@st.composite
def presented(draw: st.DrawFn, at: datetime, zone: str) -> datetime:
    """The same instant in UTC, in the rule's zone, or at a fixed offset."""
    shown_in: tzinfo = draw(
        st.sampled_from((UTC, ZoneInfo(zone), timezone(timedelta(hours=-9, minutes=-30))))
    )
    return at.astimezone(shown_in)


@st.composite
def origins(draw: st.DrawFn, after: datetime) -> datetime:
    """Usually a little before ``after`` (a Play or a completion), sometimes after it."""
    seconds = draw(st.integers(-2 * 86400, 30 * 86400))
    grain = draw(st.sampled_from((1, 60, 3600)))
    return datetime.fromtimestamp(int(after.timestamp() - seconds) // grain * grain, UTC)


@st.composite
def wall_rule(
    draw: st.DrawFn, focus: Focus, kind: str, zone: str, origin: datetime | None = None
) -> Json:
    """A wall-clock rule of ``kind`` (not cron) in ``zone``, aimed at the focus transition."""
    rule: Json = {"kind": kind}
    if kind == "times":
        rule["times"] = draw(st.lists(times_of_day(focus, zone), min_size=1, max_size=8))
    else:
        rule["time"] = draw(times_of_day(focus, zone))
    if kind == "weekdays":
        days = draw(st.lists(st.integers(1, 7), min_size=1, max_size=7, unique=True))
        if draw(st.booleans()) and focus.day.isoweekday() not in days:
            days.insert(draw(st.integers(0, len(days))), focus.day.isoweekday())
        rule["days"] = days
    if kind == "monthly":
        rule["day"] = draw(st.sampled_from((focus.day.day, 28, 29, 30, 31)) | st.integers(1, 31))
    if kind == "completion_relative":
        assert origin is not None
        to_focus = (focus.day - oracle.wall(origin, zone).date()).days
        aimed = st.integers(to_focus - 1, to_focus + 1).filter(lambda d: 0 <= d <= 40)
        rule["days"] = draw(aimed | st.integers(0, 40))
    rule["zone"] = zone
    if kind == "daily" and draw(st.booleans()):
        rule["interval_days"] = draw(st.integers(1, 10))
    return with_gap(rule, draw(gaps))


MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def cron_field(
    low: int, high: int, names: tuple[str, ...] = (), first: int = 0, values: Any = None
) -> st.SearchStrategy[str]:
    """One cron field: lists of ``*``, values, ranges and steps, names sometimes."""
    number = values if values is not None else st.integers(low, high)

    def show(value: int) -> st.SearchStrategy[str]:
        name_index = value - first
        if names and 0 <= name_index < len(names):
            return st.sampled_from((str(value), names[name_index], names[name_index].upper()))
        return st.just(str(value))

    def ordered(pair: tuple[int, int]) -> tuple[int, int]:
        return (min(pair), max(pair))

    single = number.flatmap(show)
    span = st.tuples(number, number).map(ordered)
    ranged = span.flatmap(lambda p: st.tuples(show(p[0]), show(p[1]))).map("-".join)
    step = st.integers(1, high - low + 1)
    item = st.one_of(
        st.just("*"),
        step.map(lambda n: f"*/{n}"),
        single,
        ranged,
        st.tuples(ranged, step).map(lambda p: f"{p[0]}/{p[1]}"),
        st.tuples(single, step).map(lambda p: f"{p[0]}/{p[1]}"),
    )
    return st.lists(item, min_size=1, max_size=3).map(",".join)


def cron_expressions(focus: Focus | None = None, zone: str | None = None) -> st.SearchStrategy[str]:
    """Five fields from the grammar; hours and minutes often those of the focus transition."""
    hours: st.SearchStrategy[int] = st.integers(0, 23) | st.sampled_from((0, 1, 2, 3))
    minutes: st.SearchStrategy[int] = st.integers(0, 59)
    days: st.SearchStrategy[int] = st.integers(1, 31)
    if focus is not None:
        hours = hours | focus.clocks(zone).map(lambda t: t.hour)
        minutes = minutes | focus.clocks(zone).map(lambda t: t.minute)
        days = days | st.just(focus.day.day)
    minute = cron_field(0, 59, values=minutes) | st.sampled_from(("0", "30", "*/15", "15,45", "*"))
    hour = cron_field(0, 23, values=hours) | st.sampled_from(("*", "*/2", "2", "0"))
    dom = st.just("*") | cron_field(1, 31, values=days)
    month = st.just("*") | cron_field(1, 12, MONTHS, 1)
    dow = st.just("*") | cron_field(0, 7, DAYS, 0)
    return st.tuples(minute, hour, dom, month, dow).map(" ".join)


def cron_rule(focus: Focus, zone: str) -> st.SearchStrategy[Json]:
    rule = st.builds(
        lambda e: {"kind": "cron", "expression": e, "zone": zone}, cron_expressions(focus, zone)
    )
    return st.tuples(rule, gaps).map(lambda pair: with_gap(*pair))


CALENDAR_KINDS = ("daily", "weekdays", "times", "monthly", "cron")


@st.composite
def calendar_entry(draw: st.DrawFn, focus: Focus) -> Json:
    zone = draw(st.just(focus.zone) | zones)
    kind = draw(st.sampled_from(CALENDAR_KINDS))
    if kind == "cron":
        return draw(cron_rule(focus, zone))
    rule = draw(wall_rule(focus, kind, zone))
    rule.pop("interval_days", None)
    return rule


def elapsed_rule() -> st.SearchStrategy[Json]:
    minutes = st.one_of(
        st.builds(lambda m: {"minutes": m}, st.integers(15, 3000)),
        st.builds(lambda h: {"hours": h}, st.integers(1, 100)),
    )
    delay = st.one_of(
        st.builds(lambda m: {"minutes": m}, st.integers(1, 5000)),
        st.builds(lambda h: {"hours": h}, st.integers(1, 70)),
    )
    return st.one_of(
        st.just({"kind": "immediate"}),
        minutes.map(lambda f: {"kind": "every", **f}),
        delay.map(lambda f: {"kind": "after", **f}),
    )


@st.composite
def scenarios(draw: st.DrawFn, kind: str, scale: int = 1) -> Scenario:
    """A rule of ``kind`` with an ``after`` near a transition, an origin and a window."""
    zone = draw(zones)
    focus = draw(focuses(zone))
    after = draw(instants(focus))
    origin = draw(origins(after))
    window = DAY_WINDOW
    rule: Json
    if kind in ("daily", "weekdays", "times", "monthly", "completion_relative"):
        rule = draw(wall_rule(focus, kind, zone, origin))
    elif kind == "cron":
        rule = draw(cron_rule(focus, zone))
        window = MINUTE_WINDOW
    elif kind == "elapsed":
        rule = draw(elapsed_rule())
        window = MINUTE_WINDOW if rule["kind"] == "every" else timedelta(days=4)
    elif kind == "calendars":
        entries = draw(st.lists(calendar_entry(focus), min_size=1, max_size=8))
        rule = with_gap({"kind": "calendars", "calendars": entries}, draw(gaps))
        if any(e["kind"] == "cron" for e in entries):
            window = MINUTE_WINDOW
    elif kind == "at":
        day_offset = timedelta(minutes=draw(st.integers(-1440, 62 * 1440)))
        local = oracle.wall(after, zone).replace(second=0) + day_offset
        assume(oracle.classify(local, zone).kind == "exact")
        rule = {"kind": "at", "local": local.isoformat(), "zone": zone}
    else:
        raise AssertionError(kind)
    return Scenario(rule, draw(presented(after, zone)), origin, window * scale)


KINDS = ("daily", "weekdays", "times", "monthly", "completion_relative", "cron", "elapsed", "at")
any_kind = st.sampled_from((*KINDS, "calendars"))


# --- agreement with the oracle ----------------------------------------------------------


class TestNextSlotsAgreeWithTheOracle:
    @given(scenarios("daily"))
    def test_daily_rules_agree_including_day_intervals(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("weekdays"))
    def test_weekday_rules_agree(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("times"))
    def test_rules_of_several_daily_times_agree(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("monthly"))
    def test_monthly_rules_agree(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("completion_relative"))
    def test_completion_relative_rules_agree(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("cron"))
    def test_cron_rules_agree_both_wall_clock_and_elapsed(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("elapsed"))
    def test_elapsed_rules_agree(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("at"))
    def test_one_time_rules_agree(self, s: Scenario) -> None:
        assert_agrees(s)

    @given(scenarios("calendars"))
    def test_calendar_unions_agree_and_coalesce(self, s: Scenario) -> None:
        assert_agrees(s)


class TestOriginsAgreeWithTheOracle:
    @given(scenarios("daily"), st.integers(1, 10), st.integers(-20 * 86400, 20 * 86400))
    def test_day_intervals_count_from_the_origins_date_wherever_the_origin_is(
        self, s: Scenario, interval: int, origin_shift: int
    ) -> None:
        rule = {**s.rule, "interval_days": interval}
        origin = s.after + timedelta(seconds=origin_shift)
        assert_agrees(s._replace(rule=rule, origin=origin))

    def test_an_origin_written_in_a_skipped_day_counts_from_its_real_date(self) -> None:
        # Kiritimati skipped 1994-12-31. A minute after 1994-12-30 23:59 (-10:00), added
        # to an aware datetime, reads "1994-12-31 00:00-10:00": the instant whose date
        # there is 1995-01-01, so every second day counts from 1995-01-01.
        zone = ZoneInfo("Pacific/Kiritimati")
        after = datetime(1994, 12, 30, 23, 59, tzinfo=zone)
        origin = after + timedelta(minutes=1)
        rule = {"kind": "daily", "time": "00:00", "zone": zone.key, "interval_days": 2}
        scenario = Scenario(rule, after, origin, timedelta(days=62))
        expected = scenario.oracle_slots()
        got = next_slots(parse_rule(rule), after, len(expected), origin=origin)
        assert [observed(g) for g in got] == expected
        assert expected[0].local == datetime(1995, 1, 1)


class TestQueriesAgreeWithTheOracle:
    @given(any_kind.flatmap(scenarios), st.floats(0, 1), st.booleans())
    def test_latest_due_is_the_last_oracle_slot_after_the_high_water(
        self, s: Scenario, fraction: float, just_after_a_slot: bool
    ) -> None:
        now = s.after + s.window * fraction
        seen = s.oracle_slots()
        if just_after_a_slot and seen:
            now = seen[len(seen) // 2].at
        expected = [x for x in seen if x.at <= now]
        got = latest_due(parse_rule(s.rule), now, high_water=s.after, origin=s.origin)
        assert (None if got is None else observed(got)) == (expected[-1] if expected else None)

    @given(any_kind.flatmap(scenarios), st.floats(0, 1))
    def test_slots_between_are_the_oracle_slots_of_the_window(
        self, s: Scenario, fraction: float
    ) -> None:
        start = s.after
        end = s.after + s.window * fraction
        expected = [x for x in oracle.slots(s.rule, start, end, origin=s.origin) if x.at < end]
        got = slots_between(parse_rule(s.rule), start, end, origin=s.origin)
        assert [observed(g) for g in got] == expected

    @given(any_kind.flatmap(scenarios), st.integers(0, 40))
    def test_next_instants_are_the_instants_of_next_slots(self, s: Scenario, count: int) -> None:
        rule = parse_rule(s.rule)
        slots = next_slots(rule, s.after, count, origin=s.origin)
        assert next_instants(rule, s.after, count, origin=s.origin) == [x.at for x in slots]
        one = next_slots(rule, s.after, 1, origin=s.origin)
        assert next_slot(rule, s.after, origin=s.origin) == (one[0] if one else None)

    @given(any_kind.flatmap(scenarios), st.floats(0, 1))
    def test_the_origin_defaults_to_after_start_or_now(self, s: Scenario, fraction: float) -> None:
        rule = parse_rule(s.rule)
        later = s.after + s.window * fraction
        assert next_slots(rule, s.after, 5) == next_slots(rule, s.after, 5, origin=s.after)
        assert slots_between(rule, s.after, later) == slots_between(
            rule, s.after, later, origin=s.after
        )
        assert latest_due(rule, later, high_water=s.after) == latest_due(
            rule, later, high_water=s.after, origin=later
        )

    @given(any_kind.flatmap(scenarios), st.integers(0, 20))
    def test_preview_is_next_slots_from_after_except_that_immediate_shows_its_origin(
        self, s: Scenario, count: int
    ) -> None:
        rule = parse_rule(s.rule)
        shown = preview(rule, s.after, count)
        if s.rule["kind"] == "immediate":
            at = s.after.astimezone(UTC)
            assert shown == [Slot(at, at.replace(tzinfo=None), "UTC", None)][:count]
        else:
            assert shown == next_slots(rule, s.after, count, origin=s.after)


class TestRulesAsJson:
    @given(any_kind.flatmap(scenarios))
    def test_canonical_json_round_trips_exactly(self, s: Scenario) -> None:
        rule = parse_rule(s.rule)
        assert rule_to_json(rule) == s.rule
        assert parse_rule(rule_to_json(rule)) == rule

    @given(cron_expressions())
    def test_cron_fields_parse_to_the_sets_the_oracle_reads(self, expression: str) -> None:
        spec = parse_cron(expression)
        mine = oracle.parse_cron(expression)
        assert (spec.minutes, spec.hours, spec.days, spec.months, spec.weekdays) == (
            mine.minutes,
            mine.hours,
            mine.days,
            mine.months,
            mine.weekdays,
        )
        assert (spec.dom_star, spec.dow_star, spec.wall_clock) == (
            mine.dom_star,
            mine.dow_star,
            mine.wall_clock,
        )


class TestSubSecondInstants:
    @given(elapsed_rule(), st.integers(FIRST, LAST), st.integers(1, 999_999))
    def test_elapsed_slots_count_from_the_origin_truncated_to_its_second(
        self, rule: Json, second: int, micro: int
    ) -> None:
        origin = datetime.fromtimestamp(second, UTC).replace(microsecond=micro)
        whole = origin.replace(microsecond=0)
        after = whole - timedelta(seconds=1)
        s = Scenario(rule, after, whole, timedelta(days=15))  # three 100-hour intervals fit
        expected = s.oracle_slots()[:3]
        assert [observed(g) for g in next_slots(parse_rule(rule), after, 3, origin=origin)] == (
            expected
        )


# --- regressions at named transitions -----------------------------------------------------


def local_day_slots(rule: Json, day: date, *, origin: datetime | None = None) -> list[OracleSlot]:
    """The engine's slots whose wall time falls on ``day``, checked against the oracle too."""
    start = datetime.combine(day - timedelta(days=2), time(), UTC)
    end = datetime.combine(day + timedelta(days=3), time(), UTC)
    got = [observed(x) for x in slots_between(parse_rule(rule), start, end, origin=origin)]
    assert got == [x for x in oracle.slots(rule, start, end, origin=origin or start) if x.at < end]
    return [x for x in got if x.local.date() == day]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def local(text: str) -> datetime:
    return datetime.fromisoformat(text)


class TestRegressionsAtNamedTransitions:
    @pytest.mark.parametrize("gap", ["skip", "shift"])
    @pytest.mark.parametrize("clock", ["00:00", "09:00", "23:59"])
    def test_apia_has_no_daily_slot_on_the_skipped_2011_12_30(self, gap: str, clock: str) -> None:
        rule = {"kind": "daily", "time": clock, "zone": "Pacific/Apia", "gap": gap}
        assert local_day_slots(rule, date(2011, 12, 30)) == []
        assert len(local_day_slots(rule, date(2011, 12, 29))) == 1
        assert len(local_day_slots(rule, date(2011, 12, 31))) == 1

    def test_lord_howe_every_quarter_hour_loses_two_slots_when_clocks_gain_half_an_hour(
        self,
    ) -> None:
        rule = {"kind": "cron", "expression": "*/15 * * * *", "zone": "Australia/Lord_Howe"}
        day = local_day_slots(rule, date(2026, 10, 4))
        assert len(day) == 94
        assert local("2026-10-04T02:00") not in [x.local for x in day]
        assert local("2026-10-04T02:15") not in [x.local for x in day]

    def test_lord_howe_every_quarter_hour_repeats_two_slots_when_clocks_lose_half_an_hour(
        self,
    ) -> None:
        rule = {"kind": "cron", "expression": "*/15 * * * *", "zone": "Australia/Lord_Howe"}
        day = local_day_slots(rule, date(2026, 4, 5))
        assert len(day) == 98
        assert [x.local for x in day].count(local("2026-04-05T01:45")) == 2

    def test_lord_howe_daily_0215_shifts_to_0230_or_is_skipped(self) -> None:
        shifted = {"kind": "daily", "time": "02:15", "zone": "Australia/Lord_Howe", "gap": "shift"}
        assert local_day_slots(shifted, date(2026, 10, 4)) == [
            OracleSlot(
                utc("2026-10-03T15:30"), local("2026-10-04T02:30"), "Australia/Lord_Howe", "shifted"
            )
        ]
        assert local_day_slots({**shifted, "gap": "skip"}, date(2026, 10, 4)) == []

    @pytest.mark.parametrize(
        ("gap", "expected"),
        [
            # The gap starts at midnight: 00:00 becomes the first instant after it, 01:00 CDT.
            (
                "shift",
                [
                    OracleSlot(
                        utc("2026-03-08T05:00"),
                        local("2026-03-08T01:00"),
                        "America/Havana",
                        "shifted",
                    )
                ],
            ),
            # Skipped: no slot that day.
            ("skip", []),
        ],
    )
    def test_havana_daily_midnight_in_the_midnight_gap(
        self, gap: str, expected: list[OracleSlot]
    ) -> None:
        rule = {"kind": "daily", "time": "00:00", "zone": "America/Havana", "gap": gap}
        assert local_day_slots(rule, date(2026, 3, 8)) == expected

    def test_havana_daily_midnight_takes_the_earlier_of_the_repeated_midnight(self) -> None:
        rule = {"kind": "daily", "time": "00:00", "zone": "America/Havana", "gap": "skip"}
        assert local_day_slots(rule, date(2026, 11, 1)) == [
            OracleSlot(
                utc("2026-11-01T04:00"),
                local("2026-11-01T00:00"),
                "America/Havana",
                "earlier-of-two",
            )
        ]

    def test_dublin_daily_0130_shifts_in_march_and_takes_the_earlier_in_october(self) -> None:
        rule = {"kind": "daily", "time": "01:30", "zone": "Europe/Dublin"}
        assert local_day_slots(rule, date(2026, 3, 29)) == [
            OracleSlot(
                utc("2026-03-29T01:00"), local("2026-03-29T02:00"), "Europe/Dublin", "shifted"
            )
        ]
        assert local_day_slots(rule, date(2026, 10, 25)) == [
            OracleSlot(
                utc("2026-10-25T00:30"),
                local("2026-10-25T01:30"),
                "Europe/Dublin",
                "earlier-of-two",
            )
        ]

    @pytest.mark.parametrize(
        ("day", "count"),
        [
            (date(2026, 11, 1), 25),  # 01:00 happens twice
            (date(2026, 3, 8), 23),  # 02:00 never happens
        ],
    )
    def test_hourly_cron_follows_elapsed_hours_in_new_york(self, day: date, count: int) -> None:
        rule = {"kind": "cron", "expression": "0 * * * *", "zone": "America/New_York"}
        slots = local_day_slots(rule, day)
        assert len(slots) == count
        assert all(x.dst is None for x in slots)

    @pytest.mark.parametrize(
        ("day", "expected"),
        [
            # 02:30 does not exist: shifted to 03:00 EDT.
            (
                date(2026, 3, 8),
                OracleSlot(
                    utc("2026-03-08T07:00"),
                    local("2026-03-08T03:00"),
                    "America/New_York",
                    "shifted",
                ),
            ),
            # 02:30 exists once (01:00-02:00 repeats): 02:30 EST.
            (
                date(2026, 11, 1),
                OracleSlot(
                    utc("2026-11-01T07:30"), local("2026-11-01T02:30"), "America/New_York", None
                ),
            ),
        ],
    )
    def test_cron_at_0230_fires_once_on_both_transition_days(
        self, day: date, expected: OracleSlot
    ) -> None:
        rule = {"kind": "cron", "expression": "30 2 * * *", "zone": "America/New_York"}
        assert local_day_slots(rule, day) == [expected]

    def test_kwajalein_has_no_slot_on_the_skipped_1993_08_21(self) -> None:
        rule = {"kind": "times", "times": ["00:00", "12:00", "23:59"], "zone": "Pacific/Kwajalein"}
        assert local_day_slots(rule, date(1993, 8, 21)) == []

    def test_monrovia_elapsed_cron_fires_at_whole_local_minutes_of_a_seconds_offset(self) -> None:
        rule = {"kind": "cron", "expression": "*/20 * * * *", "zone": "Africa/Monrovia"}
        slots = local_day_slots(rule, date(1971, 1, 1))
        assert len(slots) == 72
        assert slots[0] == OracleSlot(
            utc("1971-01-01T00:44:30"), local("1971-01-01T00:00"), "Africa/Monrovia", None
        )

    def test_latest_due_picks_only_the_newest_missed_slot(self) -> None:
        rule = parse_rule({"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"})
        now, high_water = utc("2026-05-10T12:00"), utc("2026-05-01T07:00")
        got = latest_due(rule, now, high_water=high_water)
        assert got is not None
        assert (got.at, got.local) == (utc("2026-05-10T07:00"), local("2026-05-10T09:00"))
        assert latest_due(rule, now, high_water=utc("2026-05-10T07:00")) is None

    def test_latest_due_without_a_high_water_finds_a_one_time_slot_years_back(self) -> None:
        rule = parse_rule({"kind": "at", "local": "2000-01-01T00:00:00", "zone": "Europe/Berlin"})
        got = latest_due(rule, utc("2026-05-10T12:00"))
        assert got is not None
        assert got.at == utc("1999-12-31T23:00")
        assert latest_due(rule, utc("1999-12-31T22:59:59")) is None

    @pytest.mark.parametrize("interval", [1, 2])
    def test_a_day_interval_starts_on_the_origins_date_even_when_it_is_one(
        self, interval: int
    ) -> None:
        # docs/civil-engine.md 5: the dates anchor + k*N (k >= 0), anchor = the origin's date.
        rule = {"kind": "daily", "time": "09:00", "zone": "UTC", "interval_days": interval}
        got = next_slot(parse_rule(rule), utc("2026-03-01T00:00"), origin=utc("2026-03-02T12:00"))
        assert got is not None
        assert got.at == utc("2026-03-02T09:00")

    def test_a_search_answers_none_past_a_century(self) -> None:
        rule = parse_rule({"kind": "at", "local": "2127-01-01T00:00:00", "zone": "Europe/Berlin"})
        assert next_slot(rule, utc("2026-01-01T00:00")) is None
        assert next_slot(rule, utc("2027-01-01T00:00")) is not None
        never = parse_rule({"kind": "cron", "expression": "0 0 30 2 *", "zone": "UTC"})
        assert next_slots(never, utc("2026-01-01T00:00"), 3) == []


# --- long runs (KALENDS_SLOW=1) -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("KALENDS_SLOW") != "1", reason="set KALENDS_SLOW=1")
class TestLongRuns:
    @settings(max_examples=500)
    @given(any_kind.flatmap(lambda kind: scenarios(kind, scale=6)))
    def test_rules_of_every_kind_agree_over_windows_six_times_longer(self, s: Scenario) -> None:
        assert_agrees(s)

    @settings(max_examples=500)
    @given(any_kind.flatmap(scenarios), st.floats(0, 1))
    def test_latest_due_agrees_over_many_more_examples(self, s: Scenario, fraction: float) -> None:
        now = s.after + s.window * fraction
        expected = [x for x in s.oracle_slots() if x.at <= now]
        got = latest_due(parse_rule(s.rule), now, high_water=s.after, origin=s.origin)
        assert (None if got is None else observed(got)) == (expected[-1] if expected else None)
