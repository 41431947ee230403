"""Which civil days a calendar rule matches, found by jumping, not stepping.

Days are counted from 1970-01-01 (day 0, a Thursday). A month's matching days
depend only on its length and the weekday of its first day, so they are
computed once per such pair and reused for every month of the century.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date

from kalends.civil.zones import EPOCH_ORDINAL

_ALL_DAYS = frozenset(range(1, 32))
_ALL_MONTHS = frozenset(range(1, 13))
_ALL_WEEKDAYS = frozenset(range(1, 8))
_MONTH_LENGTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_FIRST_DAY = date(1, 1, 1).toordinal() - EPOCH_ORDINAL
_LAST_DAY = date(9999, 12, 31).toordinal() - EPOCH_ORDINAL
# Days in 400 Gregorian years: the calendar repeats after them, weekdays included.
_CYCLE = 146_097


def iso_weekday(day: int) -> int:
    """ISO weekday (Monday=1) of a day number."""
    return (day + 3) % 7 + 1


@dataclass(frozen=True, slots=True)
class DayFilter:
    """Days matching a month set and a day-of-month / day-of-week combination.

    ``either`` selects Vixie cron's rule when both day fields are restricted:
    a day matches if it matches either field; otherwise it must match both.

    The cron extensions (issue 24 §4) add days to a field: ``last_day`` and
    ``last_workday`` (Monday-Friday) to the day-of-month field; ``last_weekdays``
    (the last such ISO weekday of the month) and ``nth_weekdays`` ((weekday, n):
    the n-th such weekday) to the day-of-week field. Like every day here they
    depend only on the month's length and first weekday, so they go into the
    same per-month tables and a plain rule's scan never looks at them.
    """

    days: frozenset[int] = _ALL_DAYS
    weekdays: frozenset[int] = _ALL_WEEKDAYS
    months: frozenset[int] = _ALL_MONTHS
    either: bool = False
    last_day: bool = False
    last_workday: bool = False
    last_weekdays: frozenset[int] = frozenset()
    nth_weekdays: frozenset[tuple[int, int]] = frozenset()
    _tables: dict[tuple[int, int], tuple[int, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _every_day: bool = field(default=False, init=False, compare=False, repr=False)
    # (length, matching days of month) by a month's first day within the 400-year cycle.
    _months: dict[int, tuple[int, tuple[int, ...]]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    # The month first_from answered from last: (its first day, the next month's, its days).
    _last_month: list[tuple[int, int, tuple[int, ...]]] = field(
        default_factory=lambda: [(1, 0, ())], init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        full = self.days == _ALL_DAYS and self.weekdays == _ALL_WEEKDAYS
        object.__setattr__(self, "_every_day", full and self.months == _ALL_MONTHS)

    @property
    def every_day(self) -> bool:
        return self._every_day

    def _month_table(self, length: int, first_weekday: int) -> tuple[int, ...]:
        key = (length, first_weekday)
        table = self._tables.get(key)
        if table is None:
            extended = self.last_day or self.last_workday or self.last_weekdays or self.nth_weekdays
            matches = []
            for dom in range(1, length + 1):
                weekday = (first_weekday + dom - 2) % 7 + 1
                in_days, in_weekdays = dom in self.days, weekday in self.weekdays
                if extended:
                    in_days = in_days or self._extra_day(dom, length, first_weekday)
                    in_weekdays = in_weekdays or self._extra_weekday(dom, weekday, length)
                if (in_days or in_weekdays) if self.either else (in_days and in_weekdays):
                    matches.append(dom)
            table = self._tables[key] = tuple(matches)
        return table

    def _extra_day(self, dom: int, length: int, first_weekday: int) -> bool:
        """Whether ``dom`` is the month's last day (``L``) or last weekday (``LW``)."""
        if self.last_day and dom == length:
            return True
        if self.last_workday:
            last_weekday = (first_weekday + length - 2) % 7 + 1
            # Saturday (6) goes back one day to Friday, Sunday (7) two.
            return dom == length - max(0, last_weekday - 5)
        return False

    def _extra_weekday(self, dom: int, weekday: int, length: int) -> bool:
        """Whether ``dom`` is the last (``5L``) or the n-th (``1#2``) such weekday."""
        if weekday in self.last_weekdays and dom + 7 > length:
            return True
        return (weekday, (dom - 1) // 7 + 1) in self.nth_weekdays

    def between(self, first: int, last: int) -> Iterable[int]:
        """Matching day numbers from ``first`` to ``last`` inclusive, ascending."""
        first, last = max(first, _FIRST_DAY), min(last, _LAST_DAY)
        if self._every_day:
            return range(first, last + 1)
        return self._scan(first, last)

    def first_from(self, first: int, last: int) -> int | None:
        """The first matching day from ``first`` to ``last`` inclusive, or ``None``."""
        first, last = max(first, _FIRST_DAY), min(last, _LAST_DAY)
        if first > last:
            return None
        if self._every_day:
            return first
        month_start, following, doms = self._last_month[0]
        if month_start <= first < following and doms and doms[-1] > first - month_start:
            day = month_start - 1 + doms[bisect_left(doms, first - month_start + 1)]
            return day if day <= last else None
        month_start = first - date.fromordinal(first + EPOCH_ORDINAL).day + 1
        months = self._months
        while month_start <= last:
            length, doms = months.get(month_start % _CYCLE) or self._month(month_start)
            if doms and doms[-1] > first - month_start:
                self._last_month[0] = (month_start, month_start + length, doms)
                day = month_start - 1 + doms[bisect_left(doms, first - month_start + 1)]
                return day if day <= last else None
            month_start += length
        return None

    def _scan(self, first: int, last: int) -> Iterator[int]:
        start = date.fromordinal(first + EPOCH_ORDINAL)
        year, month, from_dom = start.year, start.month, start.day
        month_start = first - from_dom + 1
        months = self.months
        while month_start <= last:
            length = _MONTH_LENGTHS[month - 1]
            if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
                length = 29
            if month in months:
                for dom in self._month_table(length, iso_weekday(month_start)):
                    if dom < from_dom:
                        continue
                    day = month_start + dom - 1
                    if day > last:
                        return
                    yield day
            month_start += length
            from_dom = 1
            month += 1
            if month == 13:
                year, month = year + 1, 1

    def _month(self, month_start: int) -> tuple[int, tuple[int, ...]]:
        """The length and the matching days of month of the month starting that day."""
        start = date.fromordinal(month_start + EPOCH_ORDINAL)
        year, month = start.year, start.month
        length = _MONTH_LENGTHS[month - 1]
        if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
            length = 29
        doms: tuple[int, ...] = ()
        if month in self.months:
            doms = self._month_table(length, iso_weekday(month_start))
        entry = self._months[month_start % _CYCLE] = (length, doms)
        return entry


def every_nth(anchor: int, step: int, first: int, last: int) -> range:
    """Days ``anchor + k*step`` (k ≥ 0) from ``first`` to ``last`` inclusive."""
    first = max(first, _FIRST_DAY)
    start = anchor if first <= anchor else anchor + -(-(first - anchor) // step) * step
    return range(start, min(last, _LAST_DAY) + 1, step)
