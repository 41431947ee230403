"""``missing_slots`` agrees with a brute-force oracle, row for row.

The oracle knows nothing of kalends: zones come from :mod:`zoneinfo`, a wall
time exists iff converting it to UTC with fold 0 or fold 1 and back shows it
again (``oracle.classify``), and a civil day exists iff some wall time of it
does (``oracle.date_has_local_time``). It walks the civil days of the window,
and resolves every nominal wall time of the days around each transition of
the zone (``oracle.transitions``, found with zoneinfo by stepping and
bisecting): away from a transition the offset is constant and every wall time
exists. Elapsed cron is walked the same way, each matching wall minute of those
days. Monthly walks the months and resolves the midnight that starts the next one.

A row's reason and instant follow the conventions of :mod:`kalends.civil.missing`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, NamedTuple

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from kalends.civil import Missing, missing_slots, parse_rule

from . import oracle

Json = dict[str, Any]

ZONES = (
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",  # 30-minute DST
    "Pacific/Apia",  # 2011-12-30 skipped
    "America/Sao_Paulo",  # transitions at midnight until 2019
    "Asia/Kathmandu",  # +05:30 -> +05:45 in 1986: a 15-minute gap
)
START = datetime(2000, 1, 1, tzinfo=UTC)
END = datetime(2040, 1, 1, tzinfo=UTC)
ORIGIN = datetime(2000, 1, 1, 12, tzinfo=UTC)
# Wall times near the hours these zones change: 00:00 (Sao Paulo, Apia), 02:00, 03:00 (Apia).
GAP_TIMES = ["00:00", "00:30", "02:15", "02:45", "03:30", "09:00"]


class Row(NamedTuple):
    at: datetime
    local: str
    zone: str
    reason: str


# --- the oracle -------------------------------------------------------------------------


class Nominal(NamedTuple):
    """One calendar's nominal wall times, as the oracle reads its JSON."""

    zone: str
    gap: str
    matches: Callable[[date], bool]
    times: list[time]
    elapsed: bool
    month_day: int | None


def nominal(rule: Json, origin: datetime, inherited: str) -> Nominal:
    zone: str = rule["zone"]
    gap: str = rule.get("gap", inherited)
    kind = rule["kind"]
    times = [oracle.parse_time(t) for t in rule.get("times", [rule.get("time", "00:00")])]
    month_day = None
    matches: Callable[[date], bool] = lambda d: True  # noqa: E731
    elapsed = False
    if kind == "cron":
        cron = oracle.parse_cron(rule["expression"])
        matches = cron.matches_date
        times = [time(h, m) for h in sorted(cron.hours) for m in sorted(cron.minutes)]
        elapsed = not cron.wall_clock
    elif kind == "weekdays":
        days = set(rule["days"])
        matches = lambda d: d.isoweekday() in days  # noqa: E731
    elif kind == "monthly":
        month_day = rule["day"]
        matches = lambda d: d.day == month_day  # noqa: E731
    elif kind == "daily" and "interval_days" in rule:
        anchor, step = oracle.wall(origin, zone).date(), rule["interval_days"]
        matches = lambda d: (d - anchor).days >= 0 and (d - anchor).days % step == 0  # noqa: E731
    return Nominal(zone, gap, matches, times, elapsed, month_day)


def transition_dates(zone: str, after: datetime, until: datetime) -> list[date]:
    """The local dates within two days of a transition near the window."""
    dates: set[date] = set()
    for at in oracle.transitions(zone, 1970, 2045):
        if after - 3 * oracle.DAY <= at <= until + 3 * oracle.DAY:
            day = oracle.wall(at, zone).date()
            dates.update(day + k * oracle.DAY for k in range(-2, 3))
    return sorted(dates)


def gap_rows(source: Nominal, others: list[Nominal], after: datetime, until: datetime) -> list[Row]:
    rows = []
    for day in transition_dates(source.zone, after, until):
        if not source.matches(day):
            continue
        for t in source.times:
            local = datetime.combine(day, t)
            kind, at = oracle.classify(local, source.zone)
            if kind != "gap" or not after < at <= until:
                continue
            if source.elapsed:
                reason = "dst-gap"
            elif not oracle.date_has_local_time(day, at, source.zone):
                reason = "day-missing"
            elif source.gap == "shift" or any(
                o.zone == source.zone
                and o.gap == "shift"
                and not o.elapsed
                and o.matches(day)
                and t in o.times
                for o in others
            ):
                continue  # shifted to the end of the gap: a slot, not missing
            else:
                reason = "dst-gap"
            rows.append(Row(at, f"{local:%Y-%m-%dT%H:%M:%S}", source.zone, reason))
    return rows


def month_rows(source: Nominal, after: datetime, until: datetime) -> list[Row]:
    assert source.month_day is not None
    rows = []
    for year in range(after.year - 1, until.year + 2):
        for month in range(1, 13):
            following = date(year + month // 12, month % 12 + 1, 1)
            if (following - date(year, month, 1)).days >= source.month_day:
                continue
            _, at = oracle.classify(datetime.combine(following, time()), source.zone)
            if after < at <= until:
                for t in source.times:
                    local = f"{year:04d}-{month:02d}-{source.month_day:02d}T{t:%H:%M:%S}"
                    rows.append(Row(at, local, source.zone, "day-missing"))
    return rows


def expected_rows(rule: Json, after: datetime, until: datetime, origin: datetime) -> list[Row]:
    if rule["kind"] == "calendars":
        leaves = [nominal(c, origin, rule.get("gap", "shift")) for c in rule["calendars"]]
    else:
        leaves = [nominal(rule, origin, "shift")]
    by_wall: dict[tuple[str, str], Row] = {}
    for source in leaves:
        others = [o for o in leaves if o is not source]
        found = gap_rows(source, others, after, until)
        if source.month_day is not None and source.month_day > 28:
            found += month_rows(source, after, until)
        for row in found:
            kept = by_wall.get((row.local, row.zone))
            # The same wall time twice: a lost day outranks an elapsed cron's gap.
            if kept is None or (row.reason == "day-missing" and kept.reason == "dst-gap"):
                by_wall[(row.local, row.zone)] = row
    return sorted(by_wall.values())


def observed(found: list[Missing]) -> list[Row]:
    for r in found:
        assert r.at.utcoffset() == timedelta(0), r
        if r.reason == "dst-gap":
            clock = r.local[11:16] + (r.local[16:] if r.local[17:] != "00" else "")
            assert r.detail.startswith(f"{clock} does not exist in {r.zone} on {r.local[:10]}: ")
        elif r.local[:10] == r.detail[:10]:
            assert r.detail == f"{r.local[:10]} does not exist in {r.zone}", r
        else:
            assert r.detail.endswith(f" has no day {int(r.local[8:10])}"), r
    return [Row(r.at, r.local, r.zone, r.reason.value) for r in found]


def assert_agrees(rule: Json, after: datetime, until: datetime, origin: datetime) -> None:
    expected = expected_rows(rule, after, until, origin)
    got = missing_slots(parse_rule(rule), after, until, origin=origin)
    assert observed(got) == expected


# --- forty years of every rule in every zone ------------------------------------------------


def rules_for(zone: str) -> dict[str, Json]:
    skip: Json = {"zone": zone, "gap": "skip"}
    return {
        "daily 02:30 skip": {"kind": "daily", "time": "02:30", **skip},
        "daily 00:30 skip": {"kind": "daily", "time": "00:30", **skip},
        "daily 02:30 shift": {"kind": "daily", "time": "02:30", "zone": zone, "gap": "shift"},
        "daily 09:00": {"kind": "daily", "time": "09:00", "zone": zone},
        "weekdays 00:30": {"kind": "weekdays", "days": [5, 6, 7], "time": "00:30", **skip},
        "weekdays 02:30": {"kind": "weekdays", "days": [7], "time": "02:30", **skip},
        "times skip": {"kind": "times", "times": GAP_TIMES, **skip},
        "times shift": {"kind": "times", "times": GAP_TIMES, "zone": zone},
        "monthly 29": {"kind": "monthly", "day": 29, "time": "09:00", "zone": zone},
        "monthly 30 skip": {"kind": "monthly", "day": 30, "time": "00:30", **skip},
        "monthly 31": {"kind": "monthly", "day": 31, "time": "02:30", "zone": zone},
        "wall cron": {"kind": "cron", "expression": "30 2 * * *", **skip},
        "wall cron shift": {"kind": "cron", "expression": "30 2 * * *", "zone": zone},
        "elapsed cron */15": {"kind": "cron", "expression": "*/15 * * * *", "zone": zone},
        "elapsed cron hour 2": {"kind": "cron", "expression": "* 2 * * *", "zone": zone},
        "calendars of two zones": {
            "kind": "calendars",
            "gap": "skip",
            "calendars": [
                {"kind": "daily", "time": "02:30", "zone": zone},
                {"kind": "times", "times": ["00:30", "02:30"], "zone": "Europe/Berlin"},
            ],
        },
        "daily every 3 days": {"kind": "daily", "time": "02:30", "interval_days": 3, **skip},
    }


CASES = [(zone, name) for zone in ZONES for name in rules_for(zone)]


@pytest.mark.parametrize(("zone", "name"), CASES, ids=[f"{z}-{n}" for z, n in CASES])
def test_forty_years_agree_with_the_oracle(zone: str, name: str) -> None:
    assert_agrees(rules_for(zone)[name], START, END, ORIGIN)


def test_the_forty_years_hold_every_kind_of_row() -> None:
    """The sweep above is not vacuous: it meets each reason in the zones that have them."""
    apia = rules_for("Pacific/Apia")["times skip"]
    assert {r.reason for r in expected_rows(apia, START, END, ORIGIN)} == {
        "dst-gap",
        "day-missing",
    }
    # 02:00-02:59 of each spring gap in New York, 02:00-02:29 in Lord Howe
    for zone, count in [("America/New_York", 40 * 60), ("Australia/Lord_Howe", 40 * 30)]:
        rule = rules_for(zone)["elapsed cron hour 2"]
        assert len(expected_rows(rule, START, END, ORIGIN)) == count
    monthly = rules_for("Europe/Berlin")["monthly 31"]
    assert len(expected_rows(monthly, START, END, ORIGIN)) == 40 * 5


# --- windows near transitions ---------------------------------------------------------------


def clock(at: datetime, zone: str, minutes: int) -> str:
    return f"{oracle.wall(at, zone) - timedelta(minutes=minutes):%H:%M}"


KINDS = (
    "daily",
    "times",
    "weekdays",
    "monthly",
    "wall cron",
    "elapsed cron",
    "calendars",
    "every 3 days",
)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Json, datetime, datetime, datetime]:
    """A rule whose wall times fall near a transition, and a window of hours or days around it."""
    zone = draw(st.sampled_from(ZONES))
    at = draw(st.sampled_from(oracle.transitions(zone, 1970, 2045)))
    # Minutes before the wall time after the transition: mostly inside the gap, if any.
    t = clock(at, zone, draw(st.integers(0, 90) | st.sampled_from([0, 1, 15, 30, 60])))
    day = oracle.wall(at, zone).date()
    gap = draw(st.sampled_from([{}, {"gap": "skip"}, {"gap": "shift"}]))
    other = draw(st.sampled_from(ZONES))
    kind = draw(st.sampled_from(KINDS))
    rule: Json = {"kind": "daily", "time": t, "zone": zone, **gap}
    if kind == "times":
        later = clock(at, zone, draw(st.integers(-30, 30)))
        rule = {"kind": "times", "times": sorted({t, later}), "zone": zone, **gap}
    elif kind == "weekdays":
        rule = {"kind": "weekdays", "days": [day.isoweekday()], "time": t, "zone": zone, **gap}
    elif kind == "monthly":
        month_day = draw(st.sampled_from([day.day, 29, 30, 31]))
        rule = {"kind": "monthly", "day": month_day, "time": t, "zone": zone, **gap}
    elif kind == "wall cron":
        rule = {"kind": "cron", "expression": f"{t[3:]} {int(t[:2])} * * *", "zone": zone, **gap}
    elif kind == "elapsed cron":
        expression = draw(st.sampled_from(["*/15 * * * *", f"* {int(t[:2])} * * *", "* * * * *"]))
        rule = {"kind": "cron", "expression": expression, "zone": zone, **gap}
    elif kind == "calendars":
        calendars = [
            {"kind": "daily", "time": t, "zone": zone, **draw(st.sampled_from([{}, gap]))},
            {"kind": "daily", "time": clock(at, other, 0), "zone": other},
            {"kind": "times", "times": [t], "zone": zone, "gap": "skip"},
        ]
        rule = {"kind": "calendars", "calendars": calendars, **gap}
    elif kind == "every 3 days":
        rule = {**rule, "interval_days": 3}
    event("rule", kind)
    before = draw(st.integers(0, 3 * 86_400))
    after = at - timedelta(seconds=before)
    until = at + timedelta(seconds=draw(st.integers(-before, 3 * 86_400)))
    origin = at - timedelta(days=draw(st.integers(0, 6)), hours=draw(st.integers(0, 23)))
    return rule, after, until, origin


@given(scenarios())
def test_windows_near_transitions_agree_with_the_oracle(
    scenario: tuple[Json, datetime, datetime, datetime],
) -> None:
    rule, after, until, origin = scenario
    expected = expected_rows(rule, after, until, origin)
    event("rows", "none" if not expected else "some")
    event("reasons", str(sorted({r.reason for r in expected})))
    assert observed(missing_slots(parse_rule(rule), after, until, origin=origin)) == expected


@given(scenarios(), st.integers(0, 6 * 86_400))
def test_a_window_split_anywhere_gives_the_same_rows(
    scenario: tuple[Json, datetime, datetime, datetime], offset: int
) -> None:
    rule, after, until, origin = scenario
    parsed = parse_rule(rule)
    middle = min(after + timedelta(seconds=offset), max(after, until))
    whole = missing_slots(parsed, after, until, origin=origin)
    halves = missing_slots(parsed, after, middle, origin=origin) + missing_slots(
        parsed, middle, until, origin=origin
    )
    assert halves == whole
