"""Recurrence rules: one data model with a ``kind`` tag, and its exact JSON form."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, cast

from kalends.civil.cron import CronSpec, parse_cron
from kalends.civil.values import (
    format_local,
    format_time_of_day,
    parse_local_datetime,
    parse_time_of_day,
    resolve_user_local,
)
from kalends.civil.zones import get_zone
from kalends.errors import InvalidInput, InvalidRule

# SPEC §2 / seed 002 "Visible timing, limits and editing": at most eight times and calendars.
MAX_TIMES = 8
MAX_CALENDARS = 8
# Seed 002: intervals are at least 15 minutes.
MIN_EVERY_SECONDS = 15 * 60
# A century of minutes bounds every elapsed delay or interval.
MAX_ELAPSED_MINUTES = 100 * 366 * 24 * 60


class GapPolicy(StrEnum):
    """What a generated wall time inside a DST gap becomes."""

    SKIP = "skip"
    SHIFT = "shift"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rule:
    kind: ClassVar[str]
    gap: GapPolicy | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Immediate(_Rule):
    """Once, at the origin (the moment of Play)."""

    kind: ClassVar[str] = "immediate"


@dataclass(frozen=True, slots=True, kw_only=True)
class At(_Rule):
    """Once, at a wall time in a zone."""

    kind: ClassVar[str] = "at"
    local: datetime
    zone: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _Elapsed(_Rule):
    minutes: int | None = None
    hours: int | None = None

    @property
    def seconds(self) -> int:
        return (self.minutes or 0) * 60 + (self.hours or 0) * 3600


@dataclass(frozen=True, slots=True, kw_only=True)
class After(_Elapsed):
    """Once, an elapsed delay after the origin."""

    kind: ClassVar[str] = "after"


@dataclass(frozen=True, slots=True, kw_only=True)
class Every(_Elapsed):
    """Every elapsed interval, the first one interval after the origin."""

    kind: ClassVar[str] = "every"


@dataclass(frozen=True, slots=True, kw_only=True)
class Daily(_Rule):
    """Every day (or every ``interval_days`` days from the origin's date) at a wall time."""

    kind: ClassVar[str] = "daily"
    time: int
    zone: str
    interval_days: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Weekdays(_Rule):
    """On chosen ISO weekdays (Monday=1) at a wall time."""

    kind: ClassVar[str] = "weekdays"
    days: tuple[int, ...]
    time: int
    zone: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Times(_Rule):
    """Every day at several wall times; duplicates coalesce."""

    kind: ClassVar[str] = "times"
    times: tuple[int, ...]
    zone: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Monthly(_Rule):
    """On a day of each month at a wall time; months without that day are skipped."""

    kind: ClassVar[str] = "monthly"
    day: int
    time: int
    zone: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Cron(_Rule):
    """A five-field cron expression in a zone."""

    kind: ClassVar[str] = "cron"
    expression: str
    zone: str
    spec: CronSpec = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionRelative(_Rule):
    """Once, a number of calendar days after the origin's date (a completion), at a wall time."""

    kind: ClassVar[str] = "completion_relative"
    days: int
    time: int
    zone: str


CalendarRule = Daily | Weekdays | Times | Monthly | Cron


@dataclass(frozen=True, slots=True, kw_only=True)
class Calendars(_Rule):
    """The union of up to eight calendars; simultaneous slots coalesce."""

    kind: ClassVar[str] = "calendars"
    calendars: tuple[CalendarRule, ...]


Rule = (
    Immediate
    | At
    | After
    | Every
    | Daily
    | Weekdays
    | Times
    | Monthly
    | Cron
    | Calendars
    | CompletionRelative
)


# --- parsing ----------------------------------------------------------------------


class _Reader:
    """Reads one JSON object, naming each field in errors and refusing unknown ones."""

    def __init__(self, data: object, prefix: str) -> None:
        if not isinstance(data, Mapping):
            raise InvalidRule(
                f"{prefix or 'rule'}: a rule is a JSON object with a 'kind'", field=prefix or "rule"
            )
        self.data: Mapping[str, Any] = data
        self.prefix = prefix
        self.used: set[str] = {"kind", "gap"}

    def name(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def fail(self, key: str, reason: str) -> InvalidRule:
        return InvalidRule(f"{self.name(key)}: {reason}", field=self.name(key))

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> Any:
        self.used.add(key)
        if key not in self.data:
            raise self.fail(key, "is required")
        return self.data[key]

    def integer(self, key: str, low: int, high: int, *, required: bool = True) -> int | None:
        if not required and key not in self.data:
            self.used.add(key)
            return None
        value = self.raw(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, f"must be a whole number, got {value!r}")
        if not low <= value <= high:
            raise self.fail(key, f"must be between {low} and {high}, got {value}")
        return value

    def time(self, key: str = "time") -> int:
        return _wrap(lambda: parse_time_of_day(self.raw(key), self.name(key)))

    def zone(self) -> str:
        zone = self.raw("zone")
        get_zone(zone, self.name("zone"))
        return str(zone)

    def gap(self) -> GapPolicy | None:
        if "gap" not in self.data:
            return None
        value = self.data["gap"]
        if value not in ("skip", "shift"):
            raise self.fail("gap", f"must be 'skip' or 'shift', got {value!r}")
        return GapPolicy(value)

    def finish(self) -> None:
        extra = sorted(set(self.data) - self.used)
        if extra:
            raise self.fail(extra[0], "is not a field of this rule kind")


def _wrap(read: Callable[[], int]) -> int:
    try:
        return read()
    except InvalidRule:
        raise
    except InvalidInput as exc:
        raise InvalidRule(exc.message, field=exc.field) from exc


def parse_rule(data: object) -> Rule:
    """Validates a rule's JSON form; every error names the offending field."""
    return _parse(data, "", nested=False)


def _parse(data: object, prefix: str, *, nested: bool) -> Rule:
    r = _Reader(data, prefix)
    kind = r.raw("kind")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None or (nested and kind not in _CALENDAR_KINDS):
        allowed = sorted(_CALENDAR_KINDS if nested else _PARSERS)
        raise r.fail("kind", f"unknown rule kind {kind!r}; expected one of {', '.join(allowed)}")
    rule: Rule = parser(r)
    r.finish()
    return rule


def _immediate(r: _Reader) -> Immediate:
    return Immediate(gap=r.gap())


def _at(r: _Reader) -> At:
    zone = r.zone()
    local = _wrap_local(r)
    try:
        resolve_user_local(local, zone, r.name("local"))
    except InvalidInput as exc:
        raise InvalidRule(exc.message, field=r.name("local")) from exc
    return At(local=local, zone=zone, gap=r.gap())


def _wrap_local(r: _Reader) -> datetime:
    try:
        return parse_local_datetime(r.raw("local"), r.name("local"))
    except InvalidRule:
        raise
    except InvalidInput as exc:
        raise InvalidRule(exc.message, field=exc.field) from exc


def _elapsed(r: _Reader, low_minutes: int) -> tuple[int | None, int | None]:
    if r.has("minutes") == r.has("hours"):
        raise r.fail("minutes", "give exactly one of 'minutes' or 'hours'")
    if r.has("minutes"):
        return r.integer("minutes", low_minutes, MAX_ELAPSED_MINUTES), None
    return None, r.integer("hours", max(1, -(-low_minutes // 60)), MAX_ELAPSED_MINUTES // 60)


def _after(r: _Reader) -> After:
    minutes, hours = _elapsed(r, 1)
    return After(minutes=minutes, hours=hours, gap=r.gap())


def _every(r: _Reader) -> Every:
    minutes, hours = _elapsed(r, MIN_EVERY_SECONDS // 60)
    return Every(minutes=minutes, hours=hours, gap=r.gap())


def _daily(r: _Reader) -> Daily:
    interval = r.integer("interval_days", 1, 36_500, required=False)
    return Daily(time=r.time(), zone=r.zone(), interval_days=interval, gap=r.gap())


def _weekdays(r: _Reader) -> Weekdays:
    days = r.raw("days")
    if not isinstance(days, list) or not days:
        raise r.fail("days", "must be a non-empty list of ISO weekdays (Monday=1 … Sunday=7)")
    for i, day in enumerate(days):
        if not isinstance(day, int) or isinstance(day, bool) or not 1 <= day <= 7:
            raise r.fail(f"days[{i}]", f"must be an ISO weekday 1-7 (Monday=1), got {day!r}")
        if day in days[:i]:
            raise r.fail(f"days[{i}]", f"weekday {day} is listed twice")
    return Weekdays(days=tuple(days), time=r.time(), zone=r.zone(), gap=r.gap())


def _times(r: _Reader) -> Times:
    times = r.raw("times")
    if not isinstance(times, list) or not times:
        raise r.fail("times", "must be a non-empty list of times HH:MM")
    if len(times) > MAX_TIMES:
        raise r.fail("times", f"at most {MAX_TIMES} times, got {len(times)}")
    parsed = tuple(
        _wrap(lambda t=t, i=i: parse_time_of_day(t, r.name(f"times[{i}]")))  # type: ignore[misc]
        for i, t in enumerate(times)
    )
    return Times(times=parsed, zone=r.zone(), gap=r.gap())


def _monthly(r: _Reader) -> Monthly:
    day = r.integer("day", 1, 31)
    assert day is not None
    return Monthly(day=day, time=r.time(), zone=r.zone(), gap=r.gap())


def _cron(r: _Reader) -> Cron:
    expression = r.raw("expression")
    spec = parse_cron(expression, r.name("expression"))
    return Cron(expression=expression, zone=r.zone(), spec=spec, gap=r.gap())


def _completion_relative(r: _Reader) -> CompletionRelative:
    days = r.integer("days", 0, 36_500)
    assert days is not None
    return CompletionRelative(days=days, time=r.time(), zone=r.zone(), gap=r.gap())


def _calendars(r: _Reader) -> Calendars:
    items = r.raw("calendars")
    if not isinstance(items, list) or not items:
        raise r.fail("calendars", "must be a non-empty list of calendar rules")
    if len(items) > MAX_CALENDARS:
        raise r.fail("calendars", f"at most {MAX_CALENDARS} calendars, got {len(items)}")
    rules = tuple(
        cast(CalendarRule, _parse(item, r.name(f"calendars[{i}]"), nested=True))
        for i, item in enumerate(items)
    )
    return Calendars(calendars=rules, gap=r.gap())


_PARSERS: dict[str, Callable[[_Reader], Any]] = {
    "immediate": _immediate,
    "at": _at,
    "after": _after,
    "every": _every,
    "daily": _daily,
    "weekdays": _weekdays,
    "times": _times,
    "monthly": _monthly,
    "cron": _cron,
    "calendars": _calendars,
    "completion_relative": _completion_relative,
}
_CALENDAR_KINDS = frozenset({"daily", "weekdays", "times", "monthly", "cron"})


# --- the JSON form ----------------------------------------------------------------


def rule_to_json(rule: Rule) -> dict[str, Any]:
    """The rule's JSON form; ``parse_rule(rule_to_json(r)) == r``."""
    out: dict[str, Any] = {"kind": rule.kind}
    match rule:
        case Immediate():
            pass
        case At(local=local, zone=zone):
            out.update(local=format_local(local), zone=zone)
        case After() | Every():
            out.update(
                {"minutes": rule.minutes} if rule.minutes is not None else {"hours": rule.hours}
            )
        case Daily(time=time, zone=zone, interval_days=interval):
            out.update(time=format_time_of_day(time), zone=zone)
            if interval is not None:
                out["interval_days"] = interval
        case Weekdays(days=days, time=time, zone=zone):
            out.update(days=list(days), time=format_time_of_day(time), zone=zone)
        case Times(times=times, zone=zone):
            out.update(times=[format_time_of_day(t) for t in times], zone=zone)
        case Monthly(day=day, time=time, zone=zone):
            out.update(day=day, time=format_time_of_day(time), zone=zone)
        case Cron(expression=expression, zone=zone):
            out.update(expression=expression, zone=zone)
        case CompletionRelative(days=days, time=time, zone=zone):
            out.update(days=days, time=format_time_of_day(time), zone=zone)
        case Calendars(calendars=calendars):
            out["calendars"] = [rule_to_json(c) for c in calendars]
    if rule.gap is not None:
        out["gap"] = rule.gap.value
    return out
