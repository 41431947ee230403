"""A brute-force oracle for the civil-time engine (docs/civil-engine.md, "Semantics").

Deliberately naive and independent of kalends: zones come from the stdlib
:mod:`zoneinfo` only, wall-clock rules walk local dates one by one and resolve
every wall time by trying both folds and round-tripping through UTC, elapsed cron
walks UTC minutes, and cron expressions are parsed here again from the text.
Speed does not matter; obviousness does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

SHIFTED = "shifted"
EARLIER = "earlier-of-two"
SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)
# Resolving a slot moves it by at most a day; walking a few more dates is cheap.
DATE_MARGIN = 3


class OracleSlot(NamedTuple):
    """What the engine's ``Slot`` must equal: ``dst`` as its plain string value."""

    at: datetime
    local: datetime
    zone: str
    dst: str | None


class Resolution(NamedTuple):
    """A wall time on the time line: ``kind`` is "exact", "overlap" or "gap"."""

    kind: str
    at: datetime


@cache
def tz(zone: str) -> ZoneInfo:
    return ZoneInfo(zone)


def wall(at: datetime, zone: str) -> datetime:
    """The naive wall time ``zone`` shows at the instant ``at``.

    Through UTC: ``astimezone`` to the datetime's own zone returns it unchanged, so a wall
    time that zone skipped (made by adding to an aware datetime) would stay skipped."""
    return at.astimezone(UTC).astimezone(tz(zone)).replace(tzinfo=None)


def utc_offset(at: datetime, zone: str) -> timedelta:
    offset = at.astimezone(UTC).astimezone(tz(zone)).utcoffset()
    assert offset is not None
    return offset


def classify(local: datetime, zone: str) -> Resolution:
    """Where the wall time ``local`` is: once, twice (earlier instant) or in a gap (its end)."""
    candidates = sorted({local.replace(tzinfo=tz(zone), fold=f).astimezone(UTC) for f in (0, 1)})
    existing = [u for u in candidates if wall(u, zone) == local]
    if len(existing) == 1:
        return Resolution("exact", existing[0])
    if len(existing) > 1:
        return Resolution("overlap", existing[0])
    return Resolution("gap", first_instant_past(local, zone, candidates[0], candidates[-1]))


def first_instant_past(local: datetime, zone: str, low: datetime, high: datetime) -> datetime:
    """The earliest instant in (low, high] whose wall time is later than ``local``.

    For a wall time in a gap this is the transition that opens the gap's end:
    ``low`` (converted with the later offset) shows a wall time before the gap
    and ``high`` (converted with the earlier offset) one after it.
    """
    assert wall(low, zone) < local < wall(high, zone), (local, zone, low, high)
    lo, hi = int(low.timestamp()), int(high.timestamp())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wall(datetime.fromtimestamp(mid, UTC), zone) > local:
            hi = mid
        else:
            lo = mid
    return datetime.fromtimestamp(hi, UTC)


def date_has_local_time(day: date, gap_end: datetime, zone: str) -> bool:
    """Whether any wall time of ``day`` exists, given a gap on ``day`` that ends at ``gap_end``.

    Around the gap the wall clock runs forward, so the day exists iff the last
    second before the gap already shows ``day`` or the first after it still does.
    """
    midnight = datetime.combine(day, time())
    return wall(gap_end - SECOND, zone) >= midnight or wall(gap_end, zone) < midnight + DAY


def resolve_wall_time(local: datetime, zone: str, gap: str) -> tuple[datetime, str | None] | None:
    """Semantics 1: the instant and DST note of a generated wall time, or None for no slot."""
    kind, at = classify(local, zone)
    if kind == "exact":
        return at, None
    if kind == "overlap":
        return at, EARLIER
    if gap == "skip" or not date_has_local_time(local.date(), at, zone):
        return None
    return at, SHIFTED


# --- cron, parsed again from the text ------------------------------------------------

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


class Cron(NamedTuple):
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # ISO: Monday=1 … Sunday=7
    dom_star: bool
    dow_star: bool
    wall_clock: bool

    def matches_date(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_days, in_weekdays = day.day in self.days, day.isoweekday() in self.weekdays
        if self.dom_star or self.dow_star:
            return in_days and in_weekdays
        return in_days or in_weekdays


def _cron_number(text: str, names: Sequence[str], first_name: int) -> int:
    if text.lower() in names:
        return names.index(text.lower()) + first_name
    return int(text)


def _cron_field(
    text: str, low: int, high: int, names: Sequence[str] = (), first: int = 0
) -> set[int]:
    values: set[int] = set()
    for item in text.split(","):
        body, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if body == "*":
            start, stop = low, high
        elif "-" in body:
            a, b = body.split("-")
            start, stop = _cron_number(a, names, first), _cron_number(b, names, first)
        else:
            start = _cron_number(body, names, first)
            stop = high if step_text else start
        values.update(v for v in range(start, stop + 1) if (v - start) % step == 0)
    return values


def parse_cron(expression: str) -> Cron:
    """Five fields; assumes the expression is valid (the engine rejects the others)."""
    minute, hour, dom, month, dow = expression.split()
    weekdays = {7 if d in (0, 7) else d for d in _cron_field(dow, 0, 7, _DAY_NAMES, 0)}
    return Cron(
        minutes=frozenset(_cron_field(minute, 0, 59)),
        hours=frozenset(_cron_field(hour, 0, 23)),
        days=frozenset(_cron_field(dom, 1, 31)),
        months=frozenset(_cron_field(month, 1, 12, _MONTH_NAMES, 1)),
        weekdays=frozenset(weekdays),
        dom_star=dom.startswith("*"),
        dow_star=dow.startswith("*"),
        wall_clock=not minute.startswith("*") and not hour.startswith("*"),
    )


# --- rules ---------------------------------------------------------------------------


class _Contribution(NamedTuple):
    at: datetime
    zone: str
    dst: str | None
    rank: int  # the contributing calendar's index; lower wins the zone


def parse_time(text: str) -> time:
    hour, minute, *second = (int(p) for p in text.split(":"))
    return time(hour, minute, second[0] if second else 0)


def _dates(lo: datetime, hi: datetime, zone: str) -> Iterator[date]:
    day = wall(lo, zone).date() - DATE_MARGIN * DAY
    last = wall(hi, zone).date() + DATE_MARGIN * DAY
    while day <= last:
        yield day
        day += DAY


def _wall_clock(
    zone: str,
    gap: str,
    matches: Callable[[date], bool],
    times: Sequence[time],
    lo: datetime,
    hi: datetime,
    rank: int,
) -> Iterator[_Contribution]:
    for day in _dates(lo, hi, zone):
        if not matches(day):
            continue
        for t in times:
            resolved = resolve_wall_time(datetime.combine(day, t), zone, gap)
            if resolved is not None and lo <= resolved[0] <= hi:
                yield _Contribution(resolved[0], zone, resolved[1], rank)


def _elapsed_cron(
    cron: Cron, zone: str, lo: datetime, hi: datetime, rank: int
) -> Iterator[_Contribution]:
    minute = lo.astimezone(UTC).replace(second=0, microsecond=0) - MINUTE
    while minute <= hi:
        # A wall time HH:MM:00 is shown at whole UTC minutes only when the offset is
        # whole minutes; zones with offsets in seconds (before ~1972) show it elsewhere.
        seen = set()
        for probe in (minute, minute + 59 * SECOND):
            shift = -int(utc_offset(probe, zone).total_seconds()) % 60
            seen.add(minute + timedelta(seconds=shift))
        for at in sorted(seen):
            shown = wall(at, zone)
            if (
                lo <= at <= hi
                and shown.second == 0
                and shown.minute in cron.minutes
                and shown.hour in cron.hours
                and cron.matches_date(shown.date())
            ):
                yield _Contribution(at, zone, None, rank)
        minute += MINUTE


def _elapsed_zone(rule: Mapping[str, Any]) -> str:
    zone = rule.get("zone")
    return zone if isinstance(zone, str) else "UTC"


def _interval(rule: Mapping[str, Any]) -> timedelta:
    if "minutes" in rule:
        return timedelta(minutes=rule["minutes"])
    return timedelta(hours=rule["hours"])


def _contributions(
    rule: Mapping[str, Any],
    lo: datetime,
    hi: datetime,
    origin: datetime,
    rank: int,
    inherited_gap: str,
) -> Iterator[_Contribution]:
    kind = rule["kind"]
    gap = rule.get("gap", inherited_gap)
    if kind == "calendars":
        for index, calendar in enumerate(rule["calendars"]):
            yield from _contributions(calendar, lo, hi, origin, index, gap)
        return
    if kind in ("immediate", "after"):
        at = origin if kind == "immediate" else origin + _interval(rule)
        if lo <= at <= hi:
            yield _Contribution(at, _elapsed_zone(rule), None, rank)
        return
    if kind == "every":
        step = _interval(rule)
        k = max(1, (lo - origin) // step)
        while origin + k * step <= hi:
            if origin + k * step >= lo:
                yield _Contribution(origin + k * step, _elapsed_zone(rule), None, rank)
            k += 1
        return
    zone: str = rule["zone"]
    if kind == "at":
        local = datetime.fromisoformat(rule["local"])
        resolution = classify(local, zone)
        assert resolution.kind == "exact", "an `at` rule in a gap or overlap must not parse"
        if lo <= resolution.at <= hi:
            yield _Contribution(resolution.at, zone, None, rank)
        return
    anchor = wall(origin, zone).date()
    matches: Callable[[date], bool]
    if kind == "cron":
        cron = parse_cron(rule["expression"])
        if not cron.wall_clock:
            yield from _elapsed_cron(cron, zone, lo, hi, rank)
            return
        matches = cron.matches_date
        times = [time(h, m) for h in sorted(cron.hours) for m in sorted(cron.minutes)]
    elif kind == "times":
        times = [parse_time(t) for t in rule["times"]]
        matches = _every_date
    else:
        times = [parse_time(rule["time"])]
        if kind == "daily":
            matches = _every_date
            if "interval_days" in rule:
                n: int = rule["interval_days"]
                matches = lambda d: (d - anchor).days >= 0 and (d - anchor).days % n == 0  # noqa: E731
        elif kind == "weekdays":
            days = set(rule["days"])
            matches = lambda d: d.isoweekday() in days  # noqa: E731
        elif kind == "monthly":
            day_of_month: int = rule["day"]
            matches = lambda d: d.day == day_of_month  # noqa: E731
        elif kind == "completion_relative":
            target = anchor + timedelta(days=rule["days"])
            matches = lambda d: d == target  # noqa: E731
        else:
            raise ValueError(f"the oracle does not know rule kind {kind!r}")
    yield from _wall_clock(zone, gap, matches, times, lo, hi, rank)


def _every_date(_: date) -> bool:
    return True


def slots(
    rule: Mapping[str, Any], lo: datetime, hi: datetime, *, origin: datetime
) -> list[OracleSlot]:
    """Every slot of ``rule`` with ``lo <= at <= hi``, ascending, coalesced.

    Slots on one instant coalesce: the zone (and so the local time) of the
    lowest-ranked contributor, and ``dst`` None when any contributor resolved
    exactly (otherwise the lowest-ranked contributor's note).
    """
    by_instant: dict[datetime, list[_Contribution]] = {}
    for c in _contributions(rule, lo.astimezone(UTC), hi.astimezone(UTC), origin, 0, "shift"):
        by_instant.setdefault(c.at.astimezone(UTC), []).append(c)
    result = []
    for at in sorted(by_instant):
        group = sorted(by_instant[at], key=lambda c: c.rank)
        dst = None if any(c.dst is None for c in group) else group[0].dst
        zone = group[0].zone
        result.append(OracleSlot(at, wall(at, zone), zone, dst))
    return result


@cache
def transitions(zone: str, first_year: int = 1970, last_year: int = 2100) -> tuple[datetime, ...]:
    """The instants ``zone`` changes offset, found by stepping two days at a time and bisecting.

    Only used to aim random instants at transitions, so two changes within two
    days that cancel out may be missed.
    """
    found = []
    step = 2 * DAY
    u = datetime(first_year, 1, 1, tzinfo=UTC)
    end = datetime(last_year + 1, 1, 1, tzinfo=UTC)
    offset = utc_offset(u, zone)
    while u < end:
        v = u + step
        if utc_offset(v, zone) != offset:
            lo, hi = int(u.timestamp()), int(v.timestamp())
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if utc_offset(datetime.fromtimestamp(mid, UTC), zone) == offset:
                    lo = mid
                else:
                    hi = mid
            found.append(datetime.fromtimestamp(hi, UTC))
            offset = utc_offset(v, zone)
        u = v
    return tuple(found)
