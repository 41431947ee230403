"""Slot search: the next slots of a rule, slots in a window, and catch-up.

A rule compiles to a plan that generates slots as integers (UTC seconds and
wall seconds). Wall-clock plans walk matching days and times in wall time and
convert each with the offset of the current period, resolving carefully only
near a transition. Elapsed cron plans walk the zone's periods, since in each
period the wall clock runs in step with real time.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple

from kalends.civil.days import DayFilter, every_nth
from kalends.civil.rules import (
    After,
    At,
    Calendars,
    CompletionRelative,
    Cron,
    Daily,
    Every,
    GapPolicy,
    Immediate,
    Monthly,
    Rule,
    Times,
    Weekdays,
)
from kalends.civil.values import instant_seconds
from kalends.civil.zones import (
    DAY,
    EPOCH,
    EPOCH_ORDINAL,
    NAIVE_EPOCH,
    Resolution,
    Zone,
    get_zone,
    local_seconds,
)
from kalends.errors import InvalidInput

# SPEC §2: every next-slot search is bounded to 100 years and answers "none" past it.
SEARCH_YEARS = 100
SEARCH_BOUND_SECONDS = 36_525 * DAY
# A window query refuses to materialise more slots than this; narrow the window.
MAX_WINDOW_SLOTS = 100_000
DEFAULT_GAP = GapPolicy.SHIFT
# Instants a datetime can hold in any zone: a day inside the years 1 to 9999.
FIRST_SECOND = (date(1, 1, 2).toordinal() - EPOCH_ORDINAL) * DAY
LAST_SECOND = (date(9999, 12, 30).toordinal() - EPOCH_ORDINAL) * DAY
FIRST_DAY = date(1, 1, 1).toordinal() - EPOCH_ORDINAL
LAST_DAY = date(9999, 12, 31).toordinal() - EPOCH_ORDINAL

_fromtimestamp = datetime.fromtimestamp
_new_tuple = tuple.__new__
_SECOND = timedelta(seconds=1)
_FAR_PAST = -(2**62)


class DstNote(StrEnum):
    """How a DST transition changed a slot."""

    SHIFTED = "shifted"
    EARLIER = "earlier-of-two"


class Slot(NamedTuple):
    """One occurrence: the instant, the wall time shown in ``zone`` then, and any DST note."""

    at: datetime
    local: datetime
    zone: str
    dst: DstNote | None


# A generated slot: (UTC seconds, wall seconds, zone name, note).
Raw = tuple[int, int, str, DstNote | None]


class _Plan:
    def generate(self, after: int, end: int, count: int) -> list[Raw]:
        """Slots with ``after < at < end``, ascending, at most ``count``."""
        raise NotImplementedError

    def first(self, after: int, end: int) -> Raw | None:
        """The first slot with ``after < at < end``: exactly ``generate(after, end, 1)``."""
        found = self.generate(after, end, 1)
        return found[0] if found else None


class _Single(_Plan):
    def __init__(self, raw: Raw | None) -> None:
        self.raw = raw

    def generate(self, after: int, end: int, count: int) -> list[Raw]:
        raw = self.raw
        return [raw] if raw is not None and after < raw[0] < end and count > 0 else []

    def first(self, after: int, end: int) -> Raw | None:
        raw = self.raw
        return raw if raw is not None and after < raw[0] < end else None


class _Every(_Plan):
    def __init__(self, origin: int, step: int) -> None:
        self.origin, self.step = origin, step

    def generate(self, after: int, end: int, count: int) -> list[Raw]:
        origin, step = self.origin, self.step
        first = origin + max(1, (after - origin) // step + 1) * step
        stop = min(end, first + count * step)
        return [(u, u, "UTC", None) for u in range(first, stop, step)]

    def first(self, after: int, end: int) -> Raw | None:
        origin, step = self.origin, self.step
        first = origin + max(1, (after - origin) // step + 1) * step
        return (first, first, "UTC", None) if first < end else None


class _Wall(_Plan):
    """Matching days and times of day, each wall time resolved under the gap policy."""

    def __init__(
        self,
        zone: Zone,
        times: tuple[int, ...],
        days: Callable[[int, int], Iterable[int]] | DayFilter,
        shift: bool,
    ) -> None:
        self.zone, self.times, self.shift = zone, times, shift
        # A day filter is also asked for one day at a time by ``first``.
        self.filter = days if isinstance(days, DayFilter) else None
        self.every_day = self.filter is not None and self.filter.every_day
        self.days = days.between if isinstance(days, DayFilter) else days

    def generate(self, after: int, end: int, count: int) -> list[Raw]:
        zone, times, shift, name = self.zone, self.times, self.shift, self.zone.name
        zone.cover(end)
        offsets, local_starts, local_ends = zone.offsets, zone.local_starts, zone.local_ends
        last_period = len(offsets) - 1
        # A gap can carry a slot from an earlier day past ``after``; look two days back.
        first_day = (after + zone.offset_at(after)) // DAY - 2
        last_day = (end + zone.offset_at(end)) // DAY + 1
        low = high = offset = 0
        out: list[Raw] = []
        last_at = None
        for day in self.days(first_day, last_day):
            base = day * DAY
            for t in times:
                wall = base + t
                if low <= wall < high:
                    at, shown, note = wall - offset, wall, None
                else:
                    kind, at, p = zone.resolve(wall)
                    if kind is Resolution.EXACT:
                        low = max(local_starts[p], local_ends[p - 1] if p else local_starts[p])
                        high = local_ends[p]
                        if p < last_period:
                            high = min(high, local_starts[p + 1])
                        offset = offsets[p]
                        shown, note = wall, None
                    elif kind is Resolution.FOLD:
                        shown, note = wall, DstNote.EARLIER
                    elif shift and zone.day_exists(day):
                        shown, note = local_starts[p], DstNote.SHIFTED
                    else:
                        continue
                if at <= after:
                    continue
                if at >= end:
                    return out
                if at == last_at:
                    if note is None:
                        out[-1] = (at, shown, name, None)
                    continue
                last_at = at
                out.append((at, shown, name, note))
                if len(out) >= count:
                    return out
        return out

    def first(self, after: int, end: int) -> Raw | None:
        """``generate(after, end, 1)`` without scanning the wall times before ``after``'s.

        Let ``p`` be the period holding ``after`` and ``w`` its wall time. When the next
        period shows no wall time up to ``w`` (no overlap ahead), every wall time up to
        ``w`` resolves at or before ``after``: one of an earlier period, or in a gap before
        ``p``, resolves before ``starts[p]``; one of ``p`` is ``after`` or earlier, or the
        earlier pass of a repeat. So the scan starts just after ``w`` on ``w``'s own day
        instead of two days back, and yields the same first slot.
        """
        zone, times = self.zone, self.times
        if end >= zone.covered:
            zone.cover(end)
        starts = zone.starts
        p = bisect_right(starts, after) - 1
        offset = zone.offsets[p]
        # Wall times that resolve exactly into ``after``'s period, as generate caches them.
        low, high = zone.exact_lows[p], zone.exact_highs[p]
        after_wall = after + offset
        if after_wall >= high:
            skip_wall = _FAR_PAST  # an overlap ahead: scan as generate does
            first_day = after_wall // DAY - 2
        else:
            skip_wall = after_wall
            first_day = after_wall // DAY
            if after_wall % DAY >= times[-1]:
                first_day += 1  # no time of after's own day comes later
        last_day = (end + zone.offsets[bisect_right(starts, end) - 1]) // DAY + 1
        n = len(times)
        day_filter = self.filter
        if day_filter is None:
            days = iter(self.days(first_day, last_day))
            day = next(days, None)
        elif self.every_day and FIRST_DAY <= first_day <= last_day <= LAST_DAY:
            day = first_day  # what first_from answers, without the call
        else:
            day = day_filter.first_from(first_day, last_day)
        while day is not None:
            base = day * DAY
            i = bisect_right(times, skip_wall - base) if base <= skip_wall else 0
            while i < n:
                wall = base + times[i]
                i += 1
                if low <= wall < high:
                    at, shown, note = wall - offset, wall, None
                else:
                    kind, at, q = zone.resolve(wall)
                    if kind is Resolution.EXACT:
                        low, high = zone.exact_lows[q], zone.exact_highs[q]
                        offset = zone.offsets[q]
                        shown, note = wall, None
                    elif kind is Resolution.FOLD:
                        shown, note = wall, DstNote.EARLIER
                    elif self.shift and zone.day_exists(day):
                        shown, note = zone.local_starts[q], DstNote.SHIFTED
                    else:
                        continue
                if at <= after:
                    continue
                if at >= end:
                    return None
                return (at, shown, zone.name, note)
            if day_filter is None:
                day = next(days, None)
            else:
                day = day_filter.first_from(day + 1, last_day)
        return None


class _ElapsedCron(_Plan):
    """Every instant whose own wall time matches: gaps never match, repeats match twice."""

    def __init__(self, zone: Zone, times: tuple[int, ...], days: DayFilter) -> None:
        self.zone, self.times, self.days = zone, times, days

    def generate(self, after: int, end: int, count: int) -> list[Raw]:
        zone, times, name = self.zone, self.times, self.zone.name
        zone.cover(end)
        starts, offsets = zone.starts, zone.offsets
        out: list[Raw] = []
        p = zone.index_at(after + 1)
        while True:
            offset = offsets[p]
            period_end = starts[p + 1] if p + 1 < len(starts) else end
            low = max(after + 1, starts[p]) + offset
            high = min(period_end, end) + offset
            for day in self.days.between(low // DAY, (high - 1) // DAY):
                base = day * DAY
                for t in times:
                    wall = base + t
                    if wall < low:
                        continue
                    if wall >= high:
                        break
                    out.append((wall - offset, wall, name, None))
                    if len(out) >= count:
                        return out
            if period_end >= end:
                return out
            p += 1

    def first(self, after: int, end: int) -> Raw | None:
        """``generate(after, end, 1)``, each day's first time found by bisection."""
        zone, times, first_from = self.zone, self.times, self.days.first_from
        if end >= zone.covered:
            zone.cover(end)
        starts, offsets = zone.starts, zone.offsets
        last_period = len(starts) - 1
        n = len(times)
        p = bisect_right(starts, after + 1) - 1
        while True:
            offset = offsets[p]
            period_end = starts[p + 1] if p < last_period else end
            low = max(after + 1, starts[p]) + offset
            high = min(period_end, end) + offset
            last_day = (high - 1) // DAY
            day = first_from(low // DAY, last_day)
            while day is not None:
                base = day * DAY
                i = bisect_left(times, low - base) if base < low else 0
                if i < n:
                    wall = base + times[i]
                    if wall >= high:
                        break  # every later wall time of the period is past it too
                    return (wall - offset, wall, zone.name, None)
                day = first_from(day + 1, last_day)
            if period_end >= end:
                return None
            p += 1


class _Union(_Plan):
    def __init__(self, plans: tuple[_Plan, ...]) -> None:
        self.plans = plans

    def generate(self, after: int, end: int, count: int) -> list[Raw]:
        merged = sorted(
            (raw[0], i, raw)
            for i, plan in enumerate(self.plans)
            for raw in plan.generate(after, end, count)
        )
        out: list[Raw] = []
        for at, _, raw in merged:
            if out and out[-1][0] == at:
                if raw[3] is None and out[-1][3] is not None:
                    out[-1] = (at, out[-1][1], out[-1][2], None)
                continue
            out.append(raw)
            if len(out) >= count:
                break
        return out

    def first(self, after: int, end: int) -> Raw | None:
        # generate(after, end, 1) keeps the earliest slot of the first plan to give it.
        best: Raw | None = None
        for plan in self.plans:
            raw = plan.first(after, end)
            if raw is not None and (best is None or raw[0] < best[0]):
                best = raw
        return best


# --- compiling rules ----------------------------------------------------------------


def _gap(rule: Rule, inherited: GapPolicy | None) -> bool:
    return (rule.gap or inherited or DEFAULT_GAP) is GapPolicy.SHIFT


def _compile(rule: Rule, origin: int, inherited: GapPolicy | None = None) -> _Plan:
    match rule:
        case Immediate():
            return _Single((origin, origin, "UTC", None))
        case After():
            at = origin + rule.seconds
            return _Single((at, at, "UTC", None))
        case Every():
            return _Every(origin, rule.seconds)
        case At(local=local, zone=zone):
            wall = local_seconds(local)
            return _Wall(
                get_zone(zone), (wall % DAY,), lambda a, b: (wall // DAY,), _gap(rule, inherited)
            )
        case CompletionRelative(days=days, time=time, zone=zone):
            tz = get_zone(zone)
            target = (origin + tz.offset_at(origin)) // DAY + days
            return _Wall(tz, (time,), lambda a, b: (target,), _gap(rule, inherited))
        case Daily(interval_days=interval) if interval is not None:
            tz = get_zone(rule.zone)
            anchor = (origin + tz.offset_at(origin)) // DAY
            step = interval

            def nth(first: int, last: int) -> range:
                return every_nth(anchor, step, first, last)

            return _Wall(tz, (rule.time,), nth, _gap(rule, inherited))
        case Calendars(calendars=calendars):
            return _Union(tuple(_compile(c, origin, rule.gap or inherited) for c in calendars))
        case _:
            return _calendar_plan(rule, _gap(rule, inherited))


@lru_cache(maxsize=1024)
def _calendar_plan(rule: Rule, shift: bool) -> _Plan:
    """Plans that do not depend on the origin, compiled once per rule."""
    match rule:
        case Daily(time=time, zone=zone) | Weekdays(time=time, zone=zone):
            weekdays = (
                frozenset(rule.days) if isinstance(rule, Weekdays) else frozenset(range(1, 8))
            )
            return _Wall(get_zone(zone), (time,), DayFilter(weekdays=weekdays), shift)
        case Times(times=times, zone=zone):
            return _Wall(get_zone(zone), tuple(sorted(set(times))), DayFilter(), shift)
        case Monthly(day=day, time=time, zone=zone):
            return _Wall(get_zone(zone), (time,), DayFilter(days=frozenset({day})), shift)
        case Cron(spec=spec, zone=zone):
            days = DayFilter(
                days=spec.days,
                weekdays=spec.weekdays,
                months=spec.months,
                either=not (spec.dom_star or spec.dow_star),
                last_day=spec.last_day,
                last_workday=spec.last_workday,
                last_weekdays=spec.last_weekdays,
                nth_weekdays=spec.nth_weekdays,
            )
            if spec.wall_clock:
                return _Wall(get_zone(zone), spec.times_of_day(), days, shift)
            return _ElapsedCron(get_zone(zone), spec.times_of_day(), days)
    raise TypeError(f"not a calendar rule: {rule!r}")  # pragma: no cover


# --- queries --------------------------------------------------------------------------


def _slot(raw: Raw) -> Slot:
    at, shown, zone, note = raw
    # Adding to the naive epoch is several times cheaper than fromtimestamp + replace.
    return Slot(_fromtimestamp(at, UTC), NAIVE_EPOCH + timedelta(0, shown), zone, note)


def _count(count: object) -> int:
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InvalidInput(f"count: must be a whole number ≥ 0, got {count!r}", field="count")
    return count


def _origin(origin: datetime | None, default: int) -> int:
    return default if origin is None else instant_seconds(origin, "origin")


def _raw_next(rule: Rule, after: datetime, count: int, origin: datetime | None) -> list[Raw]:
    after_s = instant_seconds(after, "after")
    plan = _compile(rule, _origin(origin, after_s))
    end = min(after_s + SEARCH_BOUND_SECONDS, LAST_SECOND)
    return plan.generate(after_s, end, _count(count))


def next_slots(
    rule: Rule, after: datetime, count: int, *, origin: datetime | None = None
) -> list[Slot]:
    """The next ``count`` slots strictly after ``after``.

    Fewer come back when the rule ends or the 100-year bound is reached.
    """
    return [_slot(raw) for raw in _raw_next(rule, after, count, origin)]


def next_instants(
    rule: Rule, after: datetime, count: int, *, origin: datetime | None = None
) -> list[datetime]:
    """Like :func:`next_slots`, as UTC instants only."""
    return [_fromtimestamp(raw[0], UTC) for raw in _raw_next(rule, after, count, origin)]


def next_slot(rule: Rule, after: datetime, *, origin: datetime | None = None) -> Slot | None:
    """The first slot strictly after ``after``, or ``None`` within 100 years.

    The same slot as ``next_slots(rule, after, 1, origin=origin)``, found by the path a
    scheduler takes once per wake: the rule's plan kept between calls, one slot sought.
    """
    # A shortcut for the UTC datetimes slots carry, and _kept_plan's own, inlined.
    if after.__class__ is datetime and after.tzinfo is UTC:
        after_s = (after - EPOCH) // _SECOND
    else:
        after_s = instant_seconds(after, "after")
    entry = _plans.get(id(rule))
    plan = None
    if (
        entry is not None
        and entry[0] is rule
        and (origin is None or (origin.__class__ is datetime and origin.tzinfo is UTC))
    ):
        plan = entry[1]
        if plan is None and origin is not None:
            plan = entry[2].get((origin - EPOCH) // _SECOND)
    if plan is None:
        plan = _kept_plan(rule, origin, after_s)
    end = after_s + SEARCH_BOUND_SECONDS
    if end > LAST_SECOND:  # noqa: PLR1730 - cheaper than min() here
        end = LAST_SECOND
    raw = plan.first(after_s, end)
    if raw is None:
        return None
    at, shown, zone, note = raw
    return _new_tuple(
        Slot, (_fromtimestamp(at, UTC), NAIVE_EPOCH + timedelta(0, shown), zone, note)
    )


# Plans kept between single-slot calls, by the rule object's identity (the entry holds
# the rule, so its id stays its own while the entry lives). Calendar plans do not
# depend on the origin; the others are kept per origin.
_KEPT_PLANS = 16_384
_KEPT_ORIGINS = 8
_plans: dict[int, tuple[Rule, _Plan | None, dict[int, _Plan]]] = {}


def _kept_plan(rule: Rule, origin: datetime | None, after_s: int) -> _Plan:
    if origin is None or (origin.__class__ is datetime and origin.tzinfo is UTC):
        origin_s = None  # valid; converted only if the plan needs it
    else:
        origin_s = instant_seconds(origin, "origin")
    key = id(rule)
    entry = _plans.get(key)
    if entry is None or entry[0] is not rule:
        if len(_plans) >= _KEPT_PLANS:
            _plans.clear()
        plan = None if _uses_origin(rule) else _compile(rule, 0)
        entry = _plans[key] = (rule, plan, {})
    if entry[1] is not None:
        return entry[1]
    if origin is None:
        return _compile(rule, after_s)
    if origin_s is None:
        origin_s = (origin - EPOCH) // _SECOND
    by_origin = entry[2]
    found = by_origin.get(origin_s)
    if found is None:
        if len(by_origin) >= _KEPT_ORIGINS:
            by_origin.clear()
        found = by_origin[origin_s] = _compile(rule, origin_s)
    return found


def _uses_origin(rule: Rule) -> bool:
    """Whether :func:`_compile` reads the origin for this rule."""
    match rule:
        case Immediate() | After() | Every() | CompletionRelative():
            return True
        case Daily(interval_days=interval) if interval is not None:
            return True
        case Calendars(calendars=calendars):
            return any(_uses_origin(c) for c in calendars)
    return False


def slots_between(
    rule: Rule, start: datetime, end: datetime, *, origin: datetime | None = None
) -> list[Slot]:
    """Every slot with ``start <= at < end`` (a window of at most 100 years)."""
    start_s = _ceil_seconds(start, "start")
    end_s = _ceil_seconds(end, "end")
    if end_s - start_s > SEARCH_BOUND_SECONDS:
        raise InvalidInput("end: a window spans at most 100 years", field="end")
    plan = _compile(rule, _origin(origin, start_s))
    raws = plan.generate(
        max(start_s, FIRST_SECOND) - 1, min(end_s, LAST_SECOND), MAX_WINDOW_SLOTS + 1
    )
    if len(raws) > MAX_WINDOW_SLOTS:
        raise InvalidInput(
            f"end: the window holds more than {MAX_WINDOW_SLOTS} slots; narrow it", field="end"
        )
    return [_slot(raw) for raw in raws]


def _ceil_seconds(instant: datetime, field: str) -> int:
    whole = instant_seconds(instant, field)
    return whole + (1 if instant.microsecond else 0)


def latest_due(
    rule: Rule,
    now: datetime,
    *,
    high_water: datetime | None = None,
    origin: datetime | None = None,
) -> Slot | None:
    """The latest slot with ``high_water < at <= now``.

    Catch-up admits this one missed slot, never a backlog.
    """
    now_s = instant_seconds(now, "now")
    floor = max(now_s - SEARCH_BOUND_SECONDS, FIRST_SECOND)
    now_s = min(now_s, LAST_SECOND)
    if high_water is not None:
        floor = max(floor, instant_seconds(high_water, "high_water"))
    if floor >= now_s:
        return None
    plan = _compile(rule, _origin(origin, now_s))
    span = DAY
    while True:
        low = max(floor, now_s - span)
        raws = plan.generate(low, now_s + 1, MAX_WINDOW_SLOTS)
        while len(raws) == MAX_WINDOW_SLOTS:  # a dense rule: move up to the newest slots
            raws = plan.generate(raws[-1][0], now_s + 1, MAX_WINDOW_SLOTS)
        if raws:
            return _slot(raws[-1])
        if low == floor:
            return None
        span *= 4


def preview(rule: Rule, after: datetime, count: int) -> list[Slot]:
    """The next ``count`` slots with ``after`` as the origin.

    ``immediate`` shows its one slot, at the origin itself.
    """
    if isinstance(rule, Immediate):
        after_s = instant_seconds(after, "after")
        return [_slot((after_s, after_s, "UTC", None))][: _count(count)]
    return next_slots(rule, after, count, origin=after)
