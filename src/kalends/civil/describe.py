"""A rule in words: one exact English sentence for every recurrence rule.

Cron is described from the sets :func:`~kalends.civil.cron.parse_cron` matches, not
from its text, so equivalent spellings read the same (``0,30`` and ``*/30`` are both
"every 30 minutes") and the sentence says only what kalends matches. Two day fields
that are both restricted match a day that matches either (Vixie cron); the sentence
says "or" then, and "if that day is" when a ``*``-led field makes them both apply.

The cron extensions (issue 24 §4) are said as days of the month: ``L`` "the last
day of the month", ``LW`` "the last weekday of the month", ``5L`` "the last Friday
of the month", ``1#2`` "the second Monday of the month"; they join their field's
other items with "and", and the two fields combine as plain ones do.

A time skipped by a DST change runs at the end of the gap unless the rule says
``"gap": "skip"``; only the skip is said, and only for rules with wall times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import pairwise

from kalends.civil.cron import CronSpec
from kalends.civil.rules import (
    After,
    At,
    CalendarRule,
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
from kalends.civil.values import format_time_of_day

__all__ = ["describe"]

# Lists of cron wall times longer than this are said field by field instead.
MAX_LISTED_TIMES = 8
SKIP_NOTE = "; a time missing on a DST change is skipped"

_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WORKWEEK = frozenset(range(1, 6))
_WEEKEND = frozenset({6, 7})
_ALL_WEEK = frozenset(range(1, 8))


def describe(rule: Rule) -> str:
    """The rule as one sentence a person reads (times 24-hour, the zone in brackets)."""
    if isinstance(rule, Calendars):
        return _calendars(rule)
    return _one(rule, rule.gap)


def _one(rule: Rule, gap: GapPolicy | None) -> str:
    match rule:
        case Immediate():
            return "Once, at Play"
        case At(local=local, zone=zone):
            return f"Once, at {_local(local)} ({zone})"
        case After():
            return f"Once, {_duration(rule.seconds)} after Play"
        case Every():
            every = "hour" if rule.seconds == 3600 else _duration(rule.seconds)
            return f"Every {every}, the first one interval after Play"
        case CompletionRelative(days=days, time=time, zone=zone):
            when = (
                "on the day of completion"
                if days == 0
                else f"{_count(days, 'day')} after completion"
            )
            return f"Once, {when} at {_clock(time)} ({zone})" + _skip(gap)
        case Daily(time=time, zone=zone, interval_days=step):
            if step is None or step == 1:
                return f"Every day at {_clock(time)} ({zone})" + _skip(gap)
            return (
                f"Every {step} days at {_clock(time)} ({zone}), counting from the day of Play"
                + _skip(gap)
            )
        case Weekdays(days=days, time=time, zone=zone):
            return f"Every {_weekdays(frozenset(days))} at {_clock(time)} ({zone})" + _skip(gap)
        case Times(times=times, zone=zone):
            clocks = _join([_clock(t) for t in sorted(set(times))])
            return f"Every day at {clocks} ({zone})" + _skip(gap)
        case Monthly(day=day, time=time, zone=zone):
            text = f"On day {day} of each month at {_clock(time)} ({zone})"
            if day > 28:
                text += f"; months without day {day} are skipped"
            return text + _skip(gap)
        case Cron(spec=spec, zone=zone):
            return f"{_cron(spec)} ({zone})" + (_skip(gap) if spec.wall_clock else "")
    raise TypeError(f"not a rule: {rule!r}")  # pragma: no cover


def _calendars(rule: Calendars) -> str:
    """The calendars' sentences joined; a skip that holds for every calendar with wall
    times is said once, at the end."""
    walled = [c for c in rule.calendars if _has_wall_times(c)]
    gaps = {c.gap or rule.gap for c in walled}
    once = bool(walled) and gaps == {GapPolicy.SKIP}
    parts = [_one(c, None if once else c.gap or rule.gap) for c in rule.calendars]
    text = "; and ".join(p if i == 0 else p[0].lower() + p[1:] for i, p in enumerate(parts))
    return text + (SKIP_NOTE if once else "")


def _has_wall_times(rule: CalendarRule) -> bool:
    return not isinstance(rule, Cron) or rule.spec.wall_clock


def _skip(gap: GapPolicy | None) -> str:
    return SKIP_NOTE if gap is GapPolicy.SKIP else ""


# --- words for values ------------------------------------------------------------------


def _clock(seconds: int) -> str:
    return format_time_of_day(seconds)


def _local(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S" if value.second else "%Y-%m-%d %H:%M")


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _duration(seconds: int) -> str:
    hours, minutes = divmod(seconds // 60, 60)
    parts = ([_count(hours, "hour")] if hours else []) + (
        [_count(minutes, "minute")] if minutes else []
    )
    return " ".join(parts)


def _join(items: Sequence[str], word: str = "and") -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {word} {items[-1]}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _weekdays(days: frozenset[int]) -> str:
    """ISO weekdays after "Every": ``weekday``, ``weekend day``, ``day`` or their names."""
    if days == _ALL_WEEK:
        return "day"
    if days == _WORKWEEK:
        return "weekday"
    if days == _WEEKEND:
        return "weekend day"
    return _join([_DAY_NAMES[d - 1] for d in sorted(days)])


# --- cron ------------------------------------------------------------------------------

# One field's set, cut into what a person reads.
_Step = tuple[int, int, int]  # (step, first, last)


def _progression(values: Sequence[int]) -> int | None:
    """The common difference of an ascending run of at least two values, if any."""
    if len(values) < 2:
        return None
    step = values[1] - values[0]
    ok = all(b - a == step for a, b in pairwise(values))
    return step if ok else None


def _runs(values: Sequence[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive values, as ``(first, last)``."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _items(values: Sequence[int], name: Callable[[int], str]) -> list[str]:
    """Values as a list: a run of three or more as "A through B", others one by one."""
    out: list[str] = []
    for first, last in _runs(values):
        if last - first >= 2:
            out.append(f"{name(first)} through {name(last)}")
        else:
            out.extend(name(v) for v in range(first, last + 1))
    return out


def _field(
    values: frozenset[int], low: int, high: int, unit: str, name: Callable[[int], str] = str
) -> str | None:
    """A numeric field in crontab words (``every 2nd hour``, ``every hour from 9 through
    17``, ``hour 9 and 17``); ``None`` for the whole range."""
    ordered = sorted(values)
    if ordered == list(range(low, high + 1)):
        return None
    step = _progression(ordered)
    if step is not None and step > 1:
        first, last = ordered[0], ordered[-1]
        # Two values read as a step only when it divides the field (0,30 but not 0,45).
        whole = len(ordered) >= 3 or step * len(ordered) == high - low + 1
        if first == low and last + step > high and whole:
            return f"every {_ordinal(step)} {unit}"
        if len(ordered) >= 3:
            return f"every {_ordinal(step)} {unit} from {name(first)} through {name(last)}"
    if step == 1 and len(ordered) >= 3:
        return f"every {unit} from {name(ordered[0])} through {name(ordered[-1])}"
    return f"{unit} {_join(_items(ordered, name))}"


def _named(values: frozenset[int], names: Sequence[str], unit: str, word: str = "and") -> str:
    """Weekdays or months by name: one run of three or more as ``every {unit} from A
    through B``, otherwise listed (runs as "A through B")."""
    ordered = sorted(values)
    runs = _runs(ordered)
    if len(runs) == 1 and runs[0][1] - runs[0][0] >= 2:
        first, last = runs[0]
        return f"every {unit} from {names[first]} through {names[last]}"
    return _join(_items(ordered, lambda v: names[v]), word)


def _weekday_order(days: frozenset[int]) -> tuple[frozenset[int], tuple[str, ...]]:
    """ISO weekdays renumbered Sunday-first when that keeps a run whole (Sunday through
    Tuesday), with the names for that numbering."""
    if 7 in days and 6 not in days:
        return frozenset(0 if d == 7 else d for d in days), ("Sunday", *_DAY_NAMES[:6])
    return days, ("", *_DAY_NAMES)


def _cron_time(spec: CronSpec) -> tuple[str, bool]:
    """The time part, and whether it named wall times (then "every day" reads well)."""
    minutes, hours = spec.minutes, spec.hours
    if len(minutes) * len(hours) <= MAX_LISTED_TIMES and len(minutes) < 60 and len(hours) < 24:
        return f"At {_join([_clock(t) for t in spec.times_of_day()])}", True
    minute = _field(minutes, 0, 59, "minute")
    hour = _field(hours, 0, 23, "hour")
    ordered = sorted(minutes)
    step = _progression(ordered)
    if minute is None:
        text = "Every minute"
    elif step is not None and ordered[0] == 0 and 60 % step == 0 and step * len(ordered) == 60:
        text = f"Every {step} minutes"
    else:
        text = f"At {minute}"
    if hour is not None:
        text += f" past {hour}"
    elif text.startswith("At"):
        text += " past every hour"
    return text, False


_NTH = ("first", "second", "third", "fourth", "fifth")


def _dom_extras(spec: CronSpec) -> list[str]:
    """The day-of-month extensions, in the order L, LW."""
    return [
        text
        for present, text in (
            (spec.last_day, "the last day of the month"),
            (spec.last_workday, "the last weekday of the month"),
        )
        if present
    ]


def _dow_extras(spec: CronSpec) -> list[str]:
    """The day-of-week extensions, n-th ones first (by n, then weekday), then the last ones."""
    nth = [
        f"the {_NTH[n - 1]} {_DAY_NAMES[d - 1]}"
        for d, n in sorted(spec.nth_weekdays, key=lambda p: (p[1], p[0]))
    ]
    last = [f"the last {_DAY_NAMES[d - 1]}" for d in sorted(spec.last_weekdays)]
    items = nth + last
    return [_join(items) + " of the month"] if items else []


def _cron_days(spec: CronSpec) -> str | None:
    """The day part, Vixie's rule said as "or"; ``None`` for every day."""
    if spec.extended:
        return _extended_days(spec)
    dom = _field(spec.days, 1, 31, "day-of-month")
    dow = None if spec.weekdays == _ALL_WEEK else spec.weekdays
    either = not (spec.dom_star or spec.dow_star)
    if either and (dom is None or dow is None):
        return None  # one field matches every day, so either matches every day
    if dow is None:
        return None if dom is None else f"on {dom}"
    days, names = _weekday_order(dow)
    if dom is None:
        return f"on {_named(days, names, 'day-of-week')}"
    if either:
        return f"on {dom}, or on {_named(days, names, 'day-of-week')}"
    listed = [names[d] for d in sorted(days)]
    return f"on {dom} if that day is a {_join(listed, 'or')}"


def _extended_days(spec: CronSpec) -> str | None:
    """The day part of an expression with extensions: each field's plain items, then its
    extensions; ``None`` for every day."""
    dom_full = spec.days == frozenset(range(1, 32))
    dow_full = spec.weekdays == _ALL_WEEK
    dom_extras, dow_extras = _dom_extras(spec), _dow_extras(spec)
    dom_plain = None if not spec.days else _field(spec.days, 1, 31, "day-of-month")
    dom = None if dom_full else _join([p for p in (dom_plain,) if p] + dom_extras)
    days, names = _weekday_order(spec.weekdays)
    dow_plain = _named(days, names, "day-of-week") if spec.weekdays else None
    dow = None if dow_full else _join([p for p in (dow_plain,) if p] + dow_extras)
    either = not (spec.dom_star or spec.dow_star)
    if either and (dom is None or dow is None):
        return None  # one field matches every day, so either matches every day
    if dow is None:
        return None if dom is None else f"on {dom}"
    if dom is None:
        return f"on {dow}"
    if either:
        return f"on {dom}, or on {dow}"
    listed = [names[d] for d in sorted(days)]
    kinds = ([f"a {_join(listed, 'or')}"] if listed else []) + dow_extras
    return f"on {dom} if that day is {_join(kinds, 'or')}"


def _cron(spec: CronSpec) -> str:
    text, at_times = _cron_time(spec)
    days = _cron_days(spec)
    months = None
    if spec.months != frozenset(range(1, 13)):
        months = f"in {_named(spec.months, ('', *MONTH_NAMES), 'month')}"
    if days is not None:
        text += f" {days}"
    elif at_times:
        text += " every day"
        if months is not None and months.startswith("in every month from"):
            months = months.removeprefix("in every month ")  # every day from March through …
    if months is not None:
        text += ("," if days is not None and ", or on" in days else "") + f" {months}"
    return text
