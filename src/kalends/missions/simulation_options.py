"""What a simulation runs (issue 24 §2): the window, outages and pauses, how long passages
take and how often they fail, and the end bounds given beside the configuration.

Text forms, shared by every edge: a duration ``40m``, ``1h30m``, ``90s``, ``2d``; a
distribution of passage durations ``40m`` (always), ``30m-2h`` (uniform between) or
``exp:40m`` (exponential with that mean); an interval ``FROM/TO`` of two local times
``YYYY-MM-DDTHH:MM[:SS]`` or dates ``YYYY-MM-DD`` (midnight) in the simulation's zone.

kalends decision on intervals beyond the window: an outage or pause is clipped to the
window, and one wholly outside it is dropped (a user who pastes a year's outage list
simulates a month of it); overlapping intervals of one kind are merged.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from kalends.civil.values import resolve_user_local
from kalends.errors import InvalidInput

__all__ = [
    "DEFAULT_SEED",
    "MAX_PASSAGE_DURATION",
    "MAX_SIMULATION_WINDOW",
    "Durations",
    "Interval",
    "SimulationOptions",
    "parse_durations",
    "parse_interval",
    "parse_local_or_date",
    "parse_span",
]

# Issue 24 §2: "bad input (windows over 10 years ...) gets clear errors". Ten years of
# 365.25 days, as the ledger reads bound their window.
MAX_SIMULATION_WINDOW = timedelta(days=3_653)
# kalends decision: a passage drawn longer than a week is cut to a week (an exponential
# draw's tail), so one draw never holds a schedule for the rest of a year.
MAX_PASSAGE_DURATION = timedelta(days=7)
# kalends decision: runs are reproducible by default; --seed picks another sequence.
DEFAULT_SEED = 24

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_SPAN = re.compile(r"^(?:\d+[smhd])+$")
_PART = re.compile(r"(\d+)([smhd])")
_LOCAL = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_span(text: object, field: str) -> timedelta:
    """A duration written as numbers with units s, m, h, d (``40m``, ``1h30m``) or ``0``."""
    value = text.strip().lower() if isinstance(text, str) else None
    if value == "0":
        return timedelta(0)
    if value is None or not _SPAN.match(value):
        raise InvalidInput(
            f"{field}: expected a duration such as 40m, 1h30m, 90s or 2d, got {text!r}",
            field=field,
        )
    seconds = sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(value))
    return timedelta(seconds=seconds)


class DurationKind(StrEnum):
    FIXED = "fixed"
    UNIFORM = "uniform"
    EXPONENTIAL = "exponential"


@dataclass(frozen=True, slots=True, kw_only=True)
class Durations:
    """How long each passage runs: ``low`` always (fixed), uniform in ``[low, high]``, or
    exponential with mean ``low``; every draw whole seconds, at most a week."""

    kind: DurationKind = DurationKind.FIXED
    low: timedelta = timedelta(0)
    high: timedelta = timedelta(0)

    def draw(self, rng: random.Random) -> timedelta:
        if self.kind is DurationKind.FIXED:
            seconds = self.low.total_seconds()
        elif self.kind is DurationKind.UNIFORM:
            seconds = rng.uniform(self.low.total_seconds(), self.high.total_seconds())
        else:
            seconds = rng.expovariate(1.0 / self.low.total_seconds())
        capped = min(seconds, MAX_PASSAGE_DURATION.total_seconds())
        return timedelta(seconds=math.floor(capped))

    def text(self) -> str:
        if self.kind is DurationKind.FIXED:
            return _span_text(self.low)
        if self.kind is DurationKind.UNIFORM:
            return f"{_span_text(self.low)}-{_span_text(self.high)}"
        return f"exp:{_span_text(self.low)}"


def _span_text(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    if seconds == 0:
        return "0s"
    out = ""
    for unit in ("d", "h", "m", "s"):
        amount, seconds = divmod(seconds, _UNITS[unit])
        if amount:
            out += f"{amount}{unit}"
    return out


def parse_durations(text: object, field: str = "duration") -> Durations:
    """``40m`` (fixed), ``30m-2h`` (uniform) or ``exp:40m`` (exponential mean)."""
    value = text.strip().lower() if isinstance(text, str) else ""
    if value.startswith("exp:"):
        mean = parse_span(value[4:], field)
        if mean <= timedelta(0):
            raise InvalidInput(f"{field}: the mean of exp: must be above 0, got {text!r}")
        return Durations(kind=DurationKind.EXPONENTIAL, low=_bounded(mean, field))
    if "-" in value:
        first, _, second = value.partition("-")
        low, high = parse_span(first, field), parse_span(second, field)
        if high < low:
            raise InvalidInput(
                f"{field}: the range {text!r} ends before it starts; write LOW-HIGH",
                field=field,
            )
        return Durations(
            kind=DurationKind.UNIFORM, low=_bounded(low, field), high=_bounded(high, field)
        )
    try:
        fixed = parse_span(value, field)
    except InvalidInput:
        raise InvalidInput(
            f"{field}: expected 40m (always), 30m-2h (uniform between) or exp:40m "
            f"(exponential with that mean), got {text!r}",
            field=field,
        ) from None
    return Durations(low=_bounded(fixed, field))


def _bounded(value: timedelta, field: str) -> timedelta:
    if value > MAX_PASSAGE_DURATION:
        raise InvalidInput(
            f"{field}: a passage runs at most 7 days in a simulation, got {_span_text(value)}",
            field=field,
        )
    return value


def parse_local_or_date(text: object, zone: str, field: str) -> datetime:
    """A local time ``YYYY-MM-DDTHH:MM[:SS]`` or a date (its midnight) in ``zone``, as a
    UTC instant; a wall time the zone skips or repeats is refused, naming the change."""
    value = text.strip() if isinstance(text, str) else ""
    if _DATE.match(value):
        value += "T00:00:00"
    elif _LOCAL.match(value) and len(value) == 16:
        value += ":00"
    if not _LOCAL.match(value):
        raise InvalidInput(
            f"{field}: expected a local time YYYY-MM-DDTHH:MM or a date YYYY-MM-DD, got {text!r}",
            field=field,
        )
    return resolve_user_local(value, zone, field)


@dataclass(frozen=True, slots=True)
class Interval:
    """``[start, end)``, UTC instants."""

    start: datetime
    end: datetime


def parse_interval(text: object, zone: str, field: str) -> Interval:
    """``FROM/TO``, two local times (or dates) in ``zone``; ``TO`` after ``FROM``."""
    value = text.strip() if isinstance(text, str) else ""
    if value.count("/") != 1:
        raise InvalidInput(
            f"{field}: expected FROM/TO such as 2027-01-10T00:00/2027-01-12T08:00, got {text!r}",
            field=field,
        )
    first, second = value.split("/")
    start = parse_local_or_date(first, zone, field)
    end = parse_local_or_date(second, zone, field)
    if end <= start:
        raise InvalidInput(f"{field}: {text!r} ends before it starts", field=field)
    return Interval(start, end)


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationOptions:
    """A simulation's window ``[start, end)`` and what happens in it. ``max_passages``,
    ``until_local`` (a local ``YYYY-MM-DDTHH:MM:SS`` in ``zone``) and ``within`` (a
    ``{"minutes"|"hours"|"days": n}``) replace the configuration's end bounds of that
    name. ``exact``: run the scheduler at every wake, the hourly ones a running
    scheduler makes between far slots included (slower; the same ledger)."""

    start: datetime
    end: datetime
    zone: str = "UTC"
    outages: tuple[Interval, ...] = ()
    pauses: tuple[Interval, ...] = ()
    durations: Durations = field(default_factory=Durations)
    fail_rate: float = 0.0
    seed: int = DEFAULT_SEED
    max_passages: int | None = None
    until_local: str | None = None
    within: dict[str, int] | None = None
    exact: bool = False

    def checked(self) -> SimulationOptions:
        """These options with intervals clipped and merged; refused when the window is
        empty or over ten years, or the fail rate is outside [0, 1]."""
        for name, value in (("from", self.start), ("to", self.end)):
            if value.tzinfo is None:
                raise InvalidInput(f"{name}: an instant needs its zone", field=name)
        if self.end <= self.start:
            raise InvalidInput("to: the window ends before it starts", field="to")
        if self.end - self.start > MAX_SIMULATION_WINDOW:
            days = (self.end - self.start).days
            raise InvalidInput(
                f"to: a simulation covers at most 10 years (3,653 days), got {days} days",
                field="to",
            )
        if not isinstance(self.fail_rate, float | int) or not 0 <= self.fail_rate <= 1:
            raise InvalidInput(
                f"fail-rate: must be between 0 and 1, got {self.fail_rate}", field="fail-rate"
            )
        return _replace_intervals(self)


def _clip(intervals: tuple[Interval, ...], start: datetime, end: datetime) -> tuple[Interval, ...]:
    kept = sorted(
        (Interval(max(i.start, start), min(i.end, end)) for i in intervals),
        key=lambda i: i.start,
    )
    merged: list[Interval] = []
    for interval in kept:
        if interval.end <= interval.start:
            continue
        if merged and interval.start <= merged[-1].end:
            merged[-1] = Interval(merged[-1].start, max(merged[-1].end, interval.end))
        else:
            merged.append(interval)
    return tuple(merged)


def _replace_intervals(options: SimulationOptions) -> SimulationOptions:
    start, end = options.start.astimezone(UTC), options.end.astimezone(UTC)
    return replace(
        options,
        start=start,
        end=end,
        outages=_clip(options.outages, start, end),
        pauses=_clip(options.pauses, start, end),
        fail_rate=float(options.fail_rate),
    )
