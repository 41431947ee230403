"""Civil values as text: dates, wall times, times of day, and user-input resolution."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from kalends.civil.zones import (
    DAY,
    EPOCH_ORDINAL,
    Resolution,
    get_zone,
    local_seconds,
    to_naive_datetime,
    to_utc_datetime,
)
from kalends.errors import AmbiguousLocalTime, InvalidInput, NonexistentLocalTime

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_LOCAL = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$")
_TIME = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2}))?$")


def parse_date(text: object, field: str = "date") -> date:
    """A date written ``YYYY-MM-DD``."""
    match = _DATE.match(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput(f"{field}: expected a date YYYY-MM-DD, got {text!r}", field=field)
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError as exc:
        raise InvalidInput(
            f"{field}: {text!r} is not a calendar date ({exc})", field=field
        ) from exc


def parse_local_datetime(text: object, field: str = "local") -> datetime:
    """A wall time written ``YYYY-MM-DDTHH:MM:SS`` (seconds present, no offset)."""
    match = _LOCAL.match(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput(
            f"{field}: expected a local date-time YYYY-MM-DDTHH:MM:SS without offset, got {text!r}",
            field=field,
        )
    try:
        year, month, day, hour, minute, second = (int(g) for g in match.groups())
        return datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise InvalidInput(
            f"{field}: {text!r} is not a valid date-time ({exc})", field=field
        ) from exc


def parse_time_of_day(text: object, field: str = "time") -> int:
    """A time of day ``HH:MM`` or ``HH:MM:SS``, as seconds after midnight."""
    match = _TIME.match(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput(f"{field}: expected a time HH:MM or HH:MM:SS, got {text!r}", field=field)
    hour, minute, second = int(match[1]), int(match[2]), int(match[3] or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise InvalidInput(
            f"{field}: {text!r} is not a time of day (00:00 to 23:59:59)", field=field
        )
    return hour * 3600 + minute * 60 + second


def format_time_of_day(seconds: int) -> str:
    hour, rest = divmod(seconds, 3600)
    minute, second = divmod(rest, 60)
    return f"{hour:02d}:{minute:02d}" + (f":{second:02d}" if second else "")


def format_local(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S") if value.year >= 1000 else value.isoformat()[:19]


def format_wall(local: int) -> str:
    """A wall time in seconds since the local epoch, as ``YYYY-MM-DDTHH:MM:SS``."""
    return format_local(to_naive_datetime(local))


def epoch_day(value: date) -> int:
    return value.toordinal() - EPOCH_ORDINAL


def resolve_user_local(local: datetime | str, zone: str, field: str = "local") -> datetime:
    """The UTC instant of a wall time a person entered.

    A wall time the zone skips or repeats is refused with an error naming the
    transition, so nothing a person enters silently moves.
    """
    value = parse_local_datetime(local, field) if isinstance(local, str) else local
    if value.tzinfo is not None:
        raise InvalidInput(
            f"{field}: a local time carries no offset; the zone is given apart", field=field
        )
    tz = get_zone(zone)
    wall = local_seconds(value)
    tz.cover(wall)
    kind, instant, period = tz.resolve(wall)
    if kind is Resolution.EXACT:
        return to_utc_datetime(instant)
    if kind is Resolution.GAP:
        change = tz.transition_into(period)
        raise NonexistentLocalTime(
            f"{field}: {format_local(value)} does not exist in {zone}: clocks jump from "
            f"{_clock(change.local_before)} to {_clock(change.local_after)} on "
            f"{format_wall(change.local_before)[:10]}",
            field=field,
            local=format_local(value),
            zone=zone,
        )
    change = tz.transition_into(period + 1)
    raise AmbiguousLocalTime(
        f"{field}: {format_local(value)} is ambiguous in {zone}: clocks fall back from "
        f"{_clock(change.local_before)} to {_clock(change.local_after)} on "
        f"{format_wall(change.local_after)[:10]}, so it occurs twice",
        field=field,
        local=format_local(value),
        zone=zone,
    )


def _clock(local: int) -> str:
    return format_time_of_day(local % DAY)


def instant_seconds(instant: object, field: str) -> int:
    """Whole seconds since the epoch of an aware instant, rounded down; naive ones are refused."""
    if not isinstance(instant, datetime) or instant.utcoffset() is None:
        raise InvalidInput(
            f"{field}: an aware instant (with an offset or zone) is required, got {instant!r}",
            field=field,
        )
    return (instant - to_utc_datetime(0)) // timedelta(seconds=1)
