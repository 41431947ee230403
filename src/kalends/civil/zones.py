"""IANA zones as periods of constant UTC offset, and resolution of wall times.

Between two transitions a zone's offset is constant, so a wall time resolves by
one bisection and a subtraction; only wall times inside a gap or an overlap need
more thought. Zone data is read the way :mod:`zoneinfo` reads it: the system's
zone files first, then the ``tzdata`` package.
"""

from __future__ import annotations

import re
import threading
import zoneinfo
from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import IntEnum
from functools import cache
from importlib import resources
from pathlib import Path

from kalends.civil.tzif import PosixRule, parse_tzif
from kalends.errors import UnknownZone

DAY = 86_400
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NAIVE_EPOCH = datetime(1970, 1, 1)
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_FAR_PAST = -(2**62)
_FAR_FUTURE = 2**62
# Footer rules are expanded to this year when a zone loads; later years on demand.
_INITIAL_HORIZON_YEAR = 2200
_MAX_YEAR = 9999

_ZONE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*$")
_REJECTED_PREFIXES = ("Etc/", "SystemV/", "posix/", "right/")


class Resolution(IntEnum):
    """How a wall time maps onto the time line."""

    EXACT = 0
    FOLD = 1
    GAP = 2


@dataclass(frozen=True, slots=True)
class Transition:
    """A change of offset, told as the wall clock shows it."""

    at: int
    local_before: int
    local_after: int


class Zone:
    """A zone's offset periods. Period ``i`` starts at UTC second ``starts[i]``.

    ``local_starts[i]`` and ``local_ends[i]`` bound the wall times period ``i``
    shows; a wall time in no period is in a gap, one in two periods is in an overlap.
    """

    __slots__ = (
        "_footer",
        "_horizon",
        "_lock",
        "covered",
        "exact_highs",
        "exact_lows",
        "local_ends",
        "local_starts",
        "name",
        "offsets",
        "starts",
    )

    def __init__(
        self,
        name: str,
        initial_offset: int,
        transitions: tuple[tuple[int, int], ...],
        footer: PosixRule | None,
    ) -> None:
        self.name = name
        self._footer = footer
        self._lock = threading.Lock()
        self.starts: list[int] = [_FAR_PAST]
        self.offsets: list[int] = [initial_offset]
        for at, offset in transitions:
            self._append(at, offset)
        self._horizon = datetime.fromtimestamp(self.starts[-1], UTC).year if transitions else 1800
        self.local_starts: list[int] = []
        self.local_ends: list[int] = []
        self.exact_lows: list[int] = []
        self.exact_highs: list[int] = []
        self.covered = 0
        self._extend(_INITIAL_HORIZON_YEAR)

    def _append(self, at: int, offset: int) -> None:
        if at <= self.starts[-1]:
            return
        if offset != self.offsets[-1]:
            self.starts.append(at)
            self.offsets.append(offset)

    def _extend(self, year: int) -> None:
        """Expands the footer rule up to ``year`` and recomputes the local bounds."""
        footer = self._footer
        if footer is not None:
            for y in range(self._horizon, year + 1):
                for at, offset in footer.transitions(y):
                    self._append(at, offset)
        self._horizon = max(self._horizon, year + 1)
        starts, offsets = self.starts, self.offsets
        local_starts = self.local_starts = [s + o for s, o in zip(starts, offsets, strict=True)]
        local_ends = self.local_ends = [s + o for s, o in zip(starts[1:], offsets, strict=False)]
        local_ends.append(_FAR_FUTURE)
        # Period i alone shows the wall times exact_lows[i] <= w < exact_highs[i].
        self.exact_lows = [local_starts[0], *map(max, local_starts[1:], local_ends)]
        self.exact_highs = [*map(min, local_ends, local_starts[1:]), local_ends[-1]]
        # cover(u) has nothing to do for every u below this second.
        self.covered = (
            _FAR_FUTURE if self._horizon > _MAX_YEAR else (self._horizon - 1972) * 365 * DAY
        )

    def cover(self, utc_second: int) -> None:
        """Makes sure the periods reach past ``utc_second`` (plus a year of margin)."""
        year = min(_MAX_YEAR, 1970 + utc_second // (365 * DAY) + 2)
        if year >= self._horizon:
            with self._lock:
                if year >= self._horizon:
                    self._extend(year)

    def index_at(self, utc_second: int) -> int:
        """The period holding the instant ``utc_second``."""
        return bisect_right(self.starts, utc_second) - 1

    def offset_at(self, utc_second: int) -> int:
        return self.offsets[bisect_right(self.starts, utc_second) - 1]

    def resolve(self, local: int) -> tuple[Resolution, int, int]:
        """Resolves a wall time (seconds since the local epoch).

        Returns ``(EXACT, instant, period)``, ``(FOLD, earlier instant, period of
        the earlier)`` or ``(GAP, instant the gap ends, period after the gap)``.
        """
        j = bisect_right(self.local_starts, local) - 1
        if j < 0:
            return Resolution.EXACT, local - self.offsets[0], 0
        if local < self.local_ends[j]:
            if j > 0 and local < self.local_ends[j - 1]:
                return Resolution.FOLD, local - self.offsets[j - 1], j - 1
            return Resolution.EXACT, local - self.offsets[j], j
        return Resolution.GAP, self.starts[j + 1], j + 1

    def transition_into(self, period: int) -> Transition:
        """The transition that starts ``period``, for messages."""
        return Transition(
            at=self.starts[period],
            local_before=self.local_ends[period - 1],
            local_after=self.local_starts[period],
        )

    def day_exists(self, day: int) -> bool:
        """Whether any wall time of the local day ``day`` (days since 1970-01-01) exists."""
        kind, _, period = self.resolve(day * DAY)
        if kind is not Resolution.GAP:
            return True
        return self.local_starts[period] < (day + 1) * DAY

    def __repr__(self) -> str:
        return f"Zone({self.name!r})"


def check_zone_name(name: object, field: str = "zone") -> str:
    """Rejects anything but an IANA area/location name (or ``UTC``)."""
    if not isinstance(name, str) or not name:
        raise UnknownZone(f"{field}: an IANA time zone name is required", field=field)
    if name in ("UTC", "Etc/UTC"):
        return name
    if not _ZONE_NAME.match(name) or "/" not in name or name.startswith(_REJECTED_PREFIXES):
        raise UnknownZone(
            f"{field}: {name!r} is not an IANA zone name such as 'Europe/Berlin' "
            "(fixed offsets and abbreviations are not zones)",
            field=field,
        )
    return name


def get_zone(name: object, field: str = "zone") -> Zone:
    """The zone called ``name``, loaded once and cached (a name asked for before is one
    dictionary lookup: a scheduler round asks for each schedule's zone)."""
    if type(name) is str:
        found = _LOADED.get(name)
        if found is not None:
            return found
    checked = check_zone_name(name, field)
    zone = _LOADED[checked] = _load_zone(checked, field)
    return zone


_LOADED: dict[str, Zone] = {}


@cache
def _load_zone(name: str, field: str) -> Zone:
    data = _zone_bytes(name)
    if data is None:
        raise UnknownZone(f"{field}: unknown time zone {name!r}", field=field)
    tzif = parse_tzif(data)
    return Zone(name, tzif.initial_offset, tzif.transitions, tzif.footer)


def _zone_bytes(name: str) -> bytes | None:
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    for root in zoneinfo.TZPATH:
        path = Path(root).joinpath(*parts)
        if path.is_file():
            data = path.read_bytes()
            return data if data[:4] == b"TZif" else None
    try:
        resource = resources.files("tzdata").joinpath("zoneinfo", *parts)
        if resource.is_file():
            data = resource.read_bytes()
            return data if data[:4] == b"TZif" else None
    except (ModuleNotFoundError, FileNotFoundError):  # pragma: no cover - tzdata is a dependency
        return None
    return None


def to_utc_datetime(second: int) -> datetime:
    return EPOCH + timedelta(seconds=second)


def to_naive_datetime(local: int) -> datetime:
    return NAIVE_EPOCH + timedelta(seconds=local)


def wall_of(instant: datetime, zone: str) -> datetime:
    """The wall time ``zone`` shows at ``instant`` (an aware datetime)."""
    tz = get_zone(zone)
    second = int(instant.timestamp())
    tz.cover(second)
    return to_naive_datetime(second + tz.offset_at(second))


def local_seconds(value: datetime) -> int:
    """Seconds since the local epoch of a naive wall time (microseconds dropped)."""
    return (value.toordinal() - EPOCH_ORDINAL) * DAY + (
        value.hour * 3600 + value.minute * 60 + value.second
    )
