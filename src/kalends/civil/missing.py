"""The nominal slots a rule does not produce, for the slot ledger (issue 24 §1).

A rule names wall times: a day filter and times of day in a zone. The slot
search (:mod:`kalends.civil.search`) yields the ones that exist and drops the
rest in silence, as SPEC §2 "Generated mission slots" asks. This module names
the dropped ones, so the ledger can hold a row for every nominal slot.

Which nominal slots are missing:

- a wall time inside a DST gap, when the rule's gap policy is ``skip``
  (``dst-gap``); under ``shift`` it is moved to the end of the gap and exists;
- a wall time on a civil day the zone skips whole, such as Pacific/Apia's
  2011-12-30 (``day-missing``), under either policy, since a shift has no day
  to land on;
- for an elapsed cron rule (``*`` in its minute or hour field), every matching
  wall minute inside a gap (``dst-gap``), the policy aside: elapsed cron follows
  real minutes, and those wall minutes never show; a skipped day is one long gap;
- for ``monthly``, each month without the chosen day (``day-missing``), named
  by the wall time the day would have had, such as ``2027-02-31T09:00:00``.
  Cron never yields such rows: a cron day of month matches existing days only.

Each row sorts at the moment it became certain that the slot will not exist:
the instant a gap ends (the transition; for a skipped day too) or, for a month
without the day, the local midnight that starts the next month (the end of the
gap if that midnight is skipped, the earlier instant if it repeats). Rows come
ascending by ``(at, local, zone)``; a window holds the rows with
``after < at <= until``, so consecutive windows never repeat nor lose a row.

In a union of calendars, a nominal slot (the same wall time in the same zone)
counts once, and not at all when another calendar produces it (a ``shift``
calendar with that day and time). kalends' decision: a ``shift`` wall time that
coalesces with another slot at the end of the gap is produced, not missing.

Only a window holding the end of a gap, or a month boundary for a ``monthly``
rule on day 29-31, needs any work; every other window answers by two
bisections over the zone's periods.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple

from kalends.civil.describe import MONTH_NAMES
from kalends.civil.rules import (
    Calendars,
    CompletionRelative,
    Daily,
    GapPolicy,
    Monthly,
    Rule,
)
from kalends.civil.search import (
    FIRST_SECOND,
    LAST_SECOND,
    SEARCH_BOUND_SECONDS,
    _compile,
    _ElapsedCron,
    _origin,
    _Wall,
)
from kalends.civil.values import instant_seconds
from kalends.civil.zones import DAY, EPOCH_ORDINAL, NAIVE_EPOCH, Resolution, Zone
from kalends.errors import InvalidInput

# kalends' decision: a century of an elapsed cron rule minute by minute in a zone
# with a one-hour gap a year is about 6,000 rows; a window asks for at most this many.
MAX_MISSING = 10_000
# The shortest month: only a monthly day past it can be missing from a month.
_SHORTEST_MONTH = 28
_FIRST_DAY = date(1, 1, 1).toordinal() - EPOCH_ORDINAL
_LAST_DAY = date(9999, 12, 31).toordinal() - EPOCH_ORDINAL
_fromtimestamp = datetime.fromtimestamp


class MissingReason(StrEnum):
    """Why a nominal slot does not exist."""

    DST_GAP = "dst-gap"
    DAY_MISSING = "day-missing"


class Missing(NamedTuple):
    """A nominal slot the rule does not produce, and the instant that became certain."""

    at: datetime
    local: str
    zone: str
    reason: MissingReason
    detail: str


class _Source:
    """One calendar's nominal wall times: matching days, times of day, and how gaps treat them."""

    __slots__ = ("days", "elapsed", "month_day", "shift", "times", "zone")

    def __init__(
        self,
        zone: Zone,
        times: tuple[int, ...],
        days: Callable[[int, int], Iterable[int]],
        *,
        shift: bool,
        elapsed: bool,
        month_day: int | None,
    ) -> None:
        self.zone, self.times, self.days = zone, times, days
        self.shift, self.elapsed, self.month_day = shift, elapsed, month_day

    def matches(self, day: int, time: int) -> bool:
        return time in self.times and any(True for _ in self.days(day, day))


def missing_slots(
    rule: Rule,
    after: datetime,
    until: datetime,
    *,
    origin: datetime | None = None,
    limit: int = MAX_MISSING,
) -> list[Missing]:
    """Nominal slots of ``rule`` with ``after < at <= until`` that the rule does not produce.

    Ascending by ``(at, local, zone)``, at most ``limit`` (the earliest). ``origin``
    is as in :func:`~kalends.civil.search.next_slots` and defaults to ``after``.
    An empty or inverted window has no rows; a window spans at most 100 years.
    """
    after_s = _seconds(after, "after")
    until_s = _seconds(until, "until")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= MAX_MISSING:
        raise InvalidInput(
            f"limit: must be a whole number from 0 to {MAX_MISSING}, got {limit!r}", field="limit"
        )
    if until_s - after_s > SEARCH_BOUND_SECONDS:
        raise InvalidInput("until: a window spans at most 100 years", field="until")
    origin_s = _origin(origin, after_s)
    after_s, until_s = max(after_s, FIRST_SECOND), min(until_s, LAST_SECOND)
    if until_s <= after_s or limit == 0:
        return []
    sources = _sources(rule, origin_s) if _uses_origin(rule) else _fixed_sources(rule)
    rows: list[Missing] = []
    for source in sources:
        found = _gap_rows(source, sources, after_s, until_s, limit)
        if source.month_day is not None:
            found += _month_rows(source, source.month_day, after_s, until_s, limit)
            found.sort()
        rows += found[:limit]
    if len(sources) > 1:
        rows.sort()
        # Sorted, one wall time's rows are adjacent, and day-missing comes before dst-gap.
        rows = [r for i, r in enumerate(rows) if not i or rows[i - 1][:3] != r[:3]]
    return rows[:limit]


def _seconds(instant: datetime, field: str) -> int:
    # Whole UTC seconds, the scheduler's usual instants, skip the general conversion.
    if type(instant) is datetime and instant.tzinfo is UTC and not instant.microsecond:
        return int(instant.timestamp())
    return instant_seconds(instant, field)


def _uses_origin(rule: Rule) -> bool:
    if isinstance(rule, Calendars):
        return any(_uses_origin(c) for c in rule.calendars)
    return isinstance(rule, CompletionRelative) or (
        isinstance(rule, Daily) and rule.interval_days is not None
    )


@lru_cache(maxsize=1024)
def _fixed_sources(rule: Rule) -> tuple[_Source, ...]:
    """The sources of a rule that does not depend on the origin, built once per rule."""
    return _sources(rule, 0)


def _sources(rule: Rule, origin: int) -> tuple[_Source, ...]:
    leaves: list[tuple[Rule, GapPolicy | None]] = (
        [(c, rule.gap) for c in rule.calendars] if isinstance(rule, Calendars) else [(rule, None)]
    )
    sources = []
    for leaf, inherited in leaves:
        plan = _compile(leaf, origin, inherited)
        if isinstance(plan, _Wall):
            month_day = leaf.day if isinstance(leaf, Monthly) else None
            sources.append(
                _Source(
                    plan.zone,
                    plan.times,
                    plan.days,
                    shift=plan.shift,
                    elapsed=False,
                    month_day=month_day if month_day and month_day > _SHORTEST_MONTH else None,
                )
            )
        elif isinstance(plan, _ElapsedCron):
            sources.append(
                _Source(
                    plan.zone,
                    plan.times,
                    plan.days.between,
                    shift=False,
                    elapsed=True,
                    month_day=None,
                )
            )
        # Immediate, After and Every follow elapsed time and miss nothing.
    return tuple(sources)


def _gap_rows(
    source: _Source, sources: tuple[_Source, ...], after: int, until: int, limit: int
) -> list[Missing]:
    """Rows for the nominal wall times inside each gap that ends in ``(after, until]``."""
    zone = source.zone
    zone.cover(until)
    starts, offsets = zone.starts, zone.offsets
    # Periods starting in (after, until]; a gap is a forward jump of the offset.
    first, stop = bisect_right(starts, after), bisect_right(starts, until)
    rows: list[Missing] = []
    for period in range(first, stop):
        if offsets[period] <= offsets[period - 1]:
            continue
        low, high = zone.local_ends[period - 1], zone.local_starts[period]
        gap = _Gap(zone, period)
        for day in source.days(low // DAY, (high - 1) // DAY):
            base = day * DAY
            for time in source.times:
                wall = base + time
                if wall < low:
                    continue
                if wall >= high:
                    break
                kind, _, gap_end = zone.resolve(wall)
                if kind is not Resolution.GAP or gap_end != period:  # pragma: no cover
                    continue
                if source.elapsed:
                    reason = MissingReason.DST_GAP
                elif not zone.day_exists(day):
                    reason = MissingReason.DAY_MISSING
                elif source.shift or _produced_elsewhere(source, sources, day, time):
                    continue
                else:
                    reason = MissingReason.DST_GAP
                rows.append(gap.row(wall, reason))
                if len(rows) >= limit:
                    return rows
    return rows


def _produced_elsewhere(source: _Source, sources: tuple[_Source, ...], day: int, time: int) -> bool:
    """Whether another calendar shifts this wall time of an existing day into a slot."""
    return any(
        other is not source
        and other.zone is source.zone
        and other.shift
        and not other.elapsed
        and other.matches(day, time)
        for other in sources
    )


class _Gap:
    """The rows of one gap: they share its end instant and the words for its jump."""

    __slots__ = ("after", "at", "before", "name")

    def __init__(self, zone: Zone, period: int) -> None:
        self.name = zone.name
        self.at = _fromtimestamp(zone.starts[period], UTC)
        self.before = _local_text(zone.local_ends[period - 1])
        self.after = _local_text(zone.local_starts[period])

    def row(self, wall: int, reason: MissingReason) -> Missing:
        local = _local_text(wall)
        date_text = local[:10]
        if reason is MissingReason.DAY_MISSING:
            detail = f"{date_text} does not exist in {self.name}"
        else:
            before, after = self.before, self.after
            if before[:10] == after[:10] == date_text:
                jump = f"{_clock(before)} to {_clock(after)}"
            else:
                jump = f"{before[:10]} {_clock(before)} to {after[:10]} {_clock(after)}"
            detail = (
                f"{_clock(local)} does not exist in {self.name} on {date_text}: "
                f"clocks jump from {jump}"
            )
        return Missing(self.at, local, self.name, reason, detail)


def _local_text(wall: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS``; ``isoformat`` pads every year to four digits."""
    return (NAIVE_EPOCH + timedelta(0, wall)).isoformat()


def _clock(local: str) -> str:
    """The time of day of a ``_local_text``, seconds shown only when not zero."""
    return local[11:16] if local[17:19] == "00" else local[11:19]


def _month_rows(source: _Source, day: int, after: int, until: int, limit: int) -> list[Missing]:
    """Rows for the months without ``day`` whose next month starts in ``(after, until]``."""
    zone = source.zone
    zone.cover(until)
    # The midnight that settles a month is on the next month's first day, or the
    # day after when that whole day is skipped; two days of margin cover both.
    first = max((after + zone.offset_at(after)) // DAY - 2, _FIRST_DAY)
    last = min((until + zone.offset_at(until)) // DAY + 1, _LAST_DAY)
    # From the month before ``first``'s own first day, which may settle that month.
    start_day = max(first - 1, _FIRST_DAY)
    start = date.fromordinal(start_day + EPOCH_ORDINAL)
    year, month = start.year, start.month
    month_start = start_day - start.day + 1
    rows: list[Missing] = []
    while True:
        length = _month_length(year, month)
        next_start = month_start + length
        if next_start > last:
            return rows
        if length < day and next_start >= first:
            _, at, _ = zone.resolve(next_start * DAY)
            if after < at <= until:
                for time in source.times:
                    hour, rest = divmod(time, 3600)
                    clock = f"{hour:02d}:{rest // 60:02d}:{rest % 60:02d}"
                    local = f"{year:04d}-{month:02d}-{day:02d}T{clock}"
                    detail = f"{MONTH_NAMES[month - 1]} {year} has no day {day}"
                    rows.append(
                        Missing(
                            _fromtimestamp(at, UTC),
                            local,
                            zone.name,
                            MissingReason.DAY_MISSING,
                            detail,
                        )
                    )
                if len(rows) >= limit:
                    return rows
        month_start = next_start
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def _month_length(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31
