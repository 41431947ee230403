"""Recurrence rules of task series and their dates (seed 000, "Recurrence"). Pure code.

``daily{interval_days}``, ``weekdays{days}`` (Monday=1) and
``completion_relative{days}`` count calendar days in the series' zone, never
24-hour periods. A date whose wall time does not exist in the zone is skipped.
Catch-up picks the latest eligible past date, otherwise the next future date:
never a backlog. Every search stops after 100 years.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

from kalends.errors import InvalidInput

# Seed 000: rules are bounded to a 100-year next-date search.
SEARCH_DAYS = 36_525
# Seed 000: a series supports a live checklist of up to 500 tasks.
MAX_CHECKLIST_TASKS = 500


class SeriesKind(StrEnum):
    DAILY = "daily"
    WEEKDAYS = "weekdays"
    COMPLETION_RELATIVE = "completion_relative"


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesRule:
    """One of the three task-series rules; JSON round-trips exactly."""

    kind: SeriesKind
    interval_days: int = 1
    days: tuple[int, ...] = ()
    offset_days: int = 0

    def to_json(self) -> dict[str, Any]:
        match self.kind:
            case SeriesKind.DAILY:
                return {"kind": "daily", "interval_days": self.interval_days}
            case SeriesKind.WEEKDAYS:
                return {"kind": "weekdays", "days": list(self.days)}
            case SeriesKind.COMPLETION_RELATIVE:
                return {"kind": "completion_relative", "days": self.offset_days}

    @classmethod
    def parse(cls, data: object) -> SeriesRule:
        """Validates a rule's JSON; every error names its field."""
        if not isinstance(data, Mapping):
            raise InvalidInput("rule: a JSON object with a 'kind'", field="rule")
        kind = data.get("kind")
        allowed = {
            "daily": {"kind", "interval_days"},
            "weekdays": {"kind", "days"},
            "completion_relative": {"kind", "days"},
        }
        if kind not in allowed:
            raise InvalidInput(
                f"rule.kind: daily, weekdays or completion_relative, got {kind!r}",
                field="rule.kind",
            )
        extra = set(data) - allowed[str(kind)]
        if extra:
            name = sorted(extra)[0]
            raise InvalidInput(f"rule.{name}: not a field of a {kind} rule", field=f"rule.{name}")
        if kind == "daily":
            interval = _whole(data.get("interval_days", 1), "rule.interval_days", 1, 3650)
            return cls(kind=SeriesKind.DAILY, interval_days=interval)
        if kind == "weekdays":
            days = data.get("days")
            if not isinstance(days, list) or not days:
                raise InvalidInput(
                    "rule.days: a non-empty list of ISO weekdays (Monday=1)", field="rule.days"
                )
            for i, day in enumerate(days):
                _whole(day, f"rule.days[{i}]", 1, 7)
                if day in days[:i]:
                    raise InvalidInput(f"rule.days[{i}]: listed twice", field=f"rule.days[{i}]")
            return cls(kind=SeriesKind.WEEKDAYS, days=tuple(days))
        offset = _whole(data.get("days"), "rule.days", 0, 3650)
        return cls(kind=SeriesKind.COMPLETION_RELATIVE, offset_days=offset)


def _whole(value: object, field: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(f"{field}: a whole number {low}-{high}, got {value!r}", field=field)
    return value


def matches(rule: SeriesRule, anchor: date, day: date) -> bool:
    """Whether ``day`` is one of the calendar rule's dates."""
    if rule.kind is SeriesKind.DAILY:
        return day >= anchor and (day - anchor).days % rule.interval_days == 0
    if rule.kind is SeriesKind.WEEKDAYS:
        return day.isoweekday() in rule.days
    return False


def _step(rule: SeriesRule, anchor: date, day: date) -> date:
    """The first rule date at or after ``day`` (calendar rules)."""
    if rule.kind is SeriesKind.DAILY:
        if day <= anchor:
            return anchor
        behind = (day - anchor).days % rule.interval_days
        return day if behind == 0 else day + timedelta(days=rule.interval_days - behind)
    for ahead in range(7):
        candidate = day + timedelta(days=ahead)
        if candidate.isoweekday() in rule.days:
            return candidate
    raise AssertionError("a weekday rule names at least one day")  # pragma: no cover


def _ahead(day: date, days: int) -> date:
    """``day`` plus ``days``, stopping at the last date the calendar holds."""
    return day + timedelta(days=min(days, (date.max - day).days))


def _behind(day: date, days: int) -> date:
    return day - timedelta(days=min(days, (day - date.min).days))


def next_date(
    rule: SeriesRule, anchor: date, after: date, exists: Callable[[date], bool]
) -> date | None:
    """The first rule date after ``after`` whose wall time exists, within 100 years."""
    limit = _ahead(after, SEARCH_DAYS)
    # A week of margin keeps every step below date.max.
    if after >= _behind(date.max, 7):
        return None
    day = _step(rule, anchor, after + timedelta(days=1))
    while day <= limit:
        if exists(day):
            return day
        if day >= _behind(date.max, 7):
            return None
        day = _step(rule, anchor, day + timedelta(days=1))
    return None


def latest_date(
    rule: SeriesRule, anchor: date, after: date, upto: date, exists: Callable[[date], bool]
) -> date | None:
    """The latest rule date in ``(after, upto]`` whose wall time exists."""
    day = upto
    floor = max(after, _behind(upto, SEARCH_DAYS))
    while day > floor:
        if matches(rule, anchor, day) and exists(day):
            return day
        day -= timedelta(days=1)
    return None


def successor_date(
    rule: SeriesRule,
    anchor: date,
    previous: date,
    today: date,
    exists: Callable[[date], bool],
    end: date | None = None,
) -> date | None:
    """The next occurrence's date once the occurrence of ``previous`` is settled ``today``.

    Calendar rules catch up to the latest eligible date up to today, else the next
    future date; completion-relative counts its days from today.
    """
    if rule.kind is SeriesKind.COMPLETION_RELATIVE:
        if (date.max - today).days <= rule.offset_days:
            return None
        day = today + timedelta(days=rule.offset_days)
        limit = _ahead(day, SEARCH_DAYS)
        while day < limit:
            if exists(day):
                return day
            day += timedelta(days=1)
        return None
    # Catch-up looks no further than the end date: a missed date within it still counts.
    upto = today if end is None else min(today, end)
    caught_up = latest_date(rule, anchor, previous, upto, exists)
    if caught_up is not None:
        return caught_up
    return next_date(rule, anchor, max(previous, today), exists)
