"""Reading IANA zone data: TZif files (RFC 8536) and their POSIX TZ footer rules.

The result is a zone's list of UTC offset changes, which :mod:`kalends.civil.zones`
turns into periods of constant offset.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from datetime import date

_DAY = 86_400
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


@dataclass(frozen=True, slots=True)
class TzifData:
    """Explicit transitions (UTC epoch seconds → offset after it) and the footer rule."""

    initial_offset: int
    transitions: tuple[tuple[int, int], ...]
    footer: PosixRule | None


def parse_tzif(data: bytes) -> TzifData:
    """Parses a TZif file of any version, preferring its 64-bit block."""
    if data[:4] != b"TZif":
        raise ValueError("not a TZif file")
    version = data[4:5]
    counts = struct.unpack(">6l", data[20:44])
    if version in (b"2", b"3", b"4"):
        skip = _block_size(counts, 4)
        offset = 44 + skip
        if data[offset : offset + 4] != b"TZif":
            raise ValueError("TZif second header missing")
        counts = struct.unpack(">6l", data[offset + 20 : offset + 44])
        transitions, initial, end = _read_block(data, offset + 44, counts, 8)
        footer_text = data[end:].split(b"\n")[1].decode("ascii") if b"\n" in data[end:] else ""
        footer = parse_posix_rule(footer_text) if footer_text else None
        return TzifData(initial_offset=initial, transitions=transitions, footer=footer)
    transitions, initial, _ = _read_block(data, 44, counts, 4)
    return TzifData(initial_offset=initial, transitions=transitions, footer=None)


def _block_size(counts: tuple[int, ...], time_size: int) -> int:
    isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt = counts
    return (
        timecnt * time_size
        + timecnt
        + typecnt * 6
        + charcnt
        + leapcnt * (time_size + 4)
        + isstdcnt
        + isutcnt
    )


def _read_block(
    data: bytes, offset: int, counts: tuple[int, ...], time_size: int
) -> tuple[tuple[tuple[int, int], ...], int, int]:
    isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt = counts
    fmt = f">{timecnt}{'q' if time_size == 8 else 'l'}"
    times = struct.unpack_from(fmt, data, offset)
    offset += timecnt * time_size
    indices = data[offset : offset + timecnt]
    offset += timecnt
    types = [struct.unpack_from(">lBB", data, offset + 6 * i) for i in range(typecnt)]
    offset += typecnt * 6 + charcnt + leapcnt * (time_size + 4) + isstdcnt + isutcnt
    offsets = [t[0] for t in types]
    transitions = tuple((t, offsets[i]) for t, i in zip(times, indices, strict=True))
    return transitions, offsets[0] if offsets else 0, offset


# --- POSIX TZ strings -------------------------------------------------------------

_NAME = r"(?:<[^>]+>|[A-Za-z]{3,})"
_OFFSET = r"[+-]?\d{1,3}(?::\d{2}){0,2}"
_DATE = r"(?:J\d{1,3}|\d{1,3}|M\d{1,2}\.\d\.\d)"
_POSIX = re.compile(
    rf"^(?P<std>{_NAME})(?P<stdoff>{_OFFSET})"
    rf"(?:(?P<dst>{_NAME})(?P<dstoff>{_OFFSET})?"
    rf",(?P<start>{_DATE})(?:/(?P<starttime>{_OFFSET}))?"
    rf",(?P<end>{_DATE})(?:/(?P<endtime>{_OFFSET}))?)?$"
)


def _seconds(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    parts = [int(p) for p in text.lstrip("+-").split(":")]
    parts += [0] * (3 - len(parts))
    return sign * (parts[0] * 3600 + parts[1] * 60 + parts[2])


@dataclass(frozen=True, slots=True)
class PosixRule:
    """A POSIX TZ rule: standard offset, and optionally a yearly DST period."""

    std_offset: int
    dst_offset: int | None = None
    start: str = ""
    start_time: int = 7200
    end: str = ""
    end_time: int = 7200

    def transitions(self, year: int) -> list[tuple[int, int]]:
        """The rule's offset changes in ``year``, as (UTC epoch seconds, new offset)."""
        if self.dst_offset is None:
            return []
        start = _rule_day(self.start, year) * _DAY + self.start_time - self.std_offset
        end = _rule_day(self.end, year) * _DAY + self.end_time - self.dst_offset
        return sorted([(start, self.dst_offset), (end, self.std_offset)])


def parse_posix_rule(text: str) -> PosixRule:
    """Parses a TZif footer such as ``EST5EDT,M3.2.0,M11.1.0``; POSIX offsets count westward."""
    match = _POSIX.match(text)
    if match is None:
        raise ValueError(f"unsupported POSIX TZ rule {text!r}")
    std = -_seconds(match["stdoff"])
    if match["dst"] is None:
        return PosixRule(std_offset=std)
    dst = -_seconds(match["dstoff"]) if match["dstoff"] else std + 3600
    return PosixRule(
        std_offset=std,
        dst_offset=dst,
        start=match["start"],
        start_time=_seconds(match["starttime"]) if match["starttime"] else 7200,
        end=match["end"],
        end_time=_seconds(match["endtime"]) if match["endtime"] else 7200,
    )


def _rule_day(spec: str, year: int) -> int:
    """Days since the epoch of a POSIX date spec (``Jn``, ``n`` or ``Mm.w.d``) in ``year``."""
    jan1 = date(year, 1, 1).toordinal() - _EPOCH_ORDINAL
    if spec.startswith("M"):
        month, week, weekday = (int(p) for p in spec[1:].split("."))
        first = date(year, month, 1)
        # POSIX weekday: 0 = Sunday; isoweekday: 7 = Sunday.
        delta = (weekday - first.isoweekday() % 7) % 7
        day = 1 + delta + 7 * (week - 1)
        days_in_month = (date(year + month // 12, month % 12 + 1, 1) - first).days
        while day > days_in_month:
            day -= 7
        return first.toordinal() - _EPOCH_ORDINAL + day - 1
    if spec.startswith("J"):
        n = int(spec[1:])
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return jan1 + n - 1 + (1 if leap and n >= 60 else 0)
    return jan1 + int(spec)
