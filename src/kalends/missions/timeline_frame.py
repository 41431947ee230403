"""Where the timeline's parts go (:mod:`kalends.missions.timeline`): x from time, y from
lane, the axis ticks in the zone's wall time and its offset changes as dashed lines, all
from the engine's zone data.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from xml.sax.saxutils import escape

from kalends.civil import Zone
from kalends.civil.zones import Resolution, local_seconds, to_naive_datetime
from kalends.missions.timeline_rows import OUTCOMES

MARGIN_LEFT = 136
MARGIN_RIGHT = 24
HEADER_HEIGHT = 28
DST_BAND_HEIGHT = 20
LANE_HEIGHT = 32
AXIS_HEIGHT = 46
# Slots of one lane closer than this many pixels are one grouped mark.
COLUMN_PX = 2
MIN_TICK_PX = 64
DST_FULL_LABEL_PX = 124
DST_SHORT_LABEL_PX = 36
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: str) -> str:
    """``value`` as XML character data (also safe inside double-quoted attributes)."""
    return escape(_NOT_XML.sub("\ufffd", value), {'"': "&quot;"})


def num(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


@dataclass(slots=True)
class Frame:
    """Where things go: x from time, y from lane."""

    start: datetime
    end: datetime
    width: int
    zone: Zone
    zone_name: str

    @property
    def x0(self) -> float:
        return float(MARGIN_LEFT)

    @property
    def plot_width(self) -> float:
        return float(self.width - MARGIN_LEFT - MARGIN_RIGHT)

    @property
    def columns(self) -> int:
        return math.ceil(self.plot_width / COLUMN_PX)

    @property
    def lanes_top(self) -> int:
        return HEADER_HEIGHT + DST_BAND_HEIGHT

    @property
    def lanes_bottom(self) -> int:
        return self.lanes_top + LANE_HEIGHT * len(OUTCOMES)

    @property
    def height(self) -> int:
        return self.lanes_bottom + AXIS_HEIGHT

    def x(self, at: datetime) -> float:
        share = (at - self.start) / (self.end - self.start)
        return self.x0 + min(1.0, max(0.0, share)) * self.plot_width

    def column(self, at: datetime) -> int:
        return min(int((self.x(at) - self.x0) / COLUMN_PX), self.columns - 1)

    def lane_y(self, outcome: str) -> float:
        return self.lanes_top + LANE_HEIGHT * (OUTCOMES.index(outcome) + 0.5)


def offset_said(delta: int) -> str:
    sign = "+" if delta > 0 else "\u2212"
    hours, rest = divmod(abs(delta), 3600)
    minutes = rest // 60
    said = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return sign + (said or "0m")


def transitions(frame: Frame) -> list[tuple[int, int, int]]:
    """The zone's offset changes strictly inside the window: (UTC second, old, new)."""
    tz = frame.zone
    first, last = frame.start.timestamp(), frame.end.timestamp()
    tz.cover(math.ceil(last))
    found = []
    i = max(1, bisect_right(tz.starts, first))
    while i < len(tz.starts) and tz.starts[i] < last:
        found.append((tz.starts[i], tz.offsets[i - 1], tz.offsets[i]))
        i += 1
    return found


def dst_lines(frame: Frame) -> Iterator[str]:
    changes = transitions(frame)
    xs = [frame.x(datetime.fromtimestamp(at, UTC)) for at, _, _ in changes]
    gap = min((b - a for a, b in pairwise(xs)), default=frame.plot_width)
    for (at, before, after), x in zip(changes, xs, strict=True):
        day = to_naive_datetime(at + before).date().isoformat()
        said = f"DST {offset_said(after - before)} {day}"
        wall = f"{to_naive_datetime(at + before):%H:%M} → {to_naive_datetime(at + after):%H:%M}"
        full = gap >= DST_FULL_LABEL_PX
        text = ""
        if gap >= DST_SHORT_LABEL_PX:
            # Only a full label near the right edge needs to run leftwards.
            right = full and x > frame.x0 + frame.plot_width - DST_FULL_LABEL_PX
            anchor, tx = ("end", x - 3) if right else ("start", x + 3)
            label = said if full else offset_said(after - before)
            text = (
                f'<text x="{num(tx)}" y="{HEADER_HEIGHT + 13}" text-anchor="{anchor}" '
                f'fill="currentColor" font-size="11">{xml_text(label)}</text>'
            )
        instant = datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")
        yield (
            f'<g class="dst" data-at="{instant}" data-delta="{after - before}">'
            f"<title>{xml_text(f'{said}: {wall} {frame.zone_name}')}</title>"
            f'<line x1="{num(x)}" y1="{HEADER_HEIGHT + 16}" x2="{num(x)}" '
            f'y2="{frame.lanes_bottom}" stroke="currentColor" stroke-dasharray="4 3"/>{text}</g>'
        )


def instant_of_wall(tz: Zone, wall: datetime, *, skip_gap: bool) -> int | None:
    kind, instant, _ = tz.resolve(local_seconds(wall))
    return None if kind is Resolution.GAP and skip_gap else instant


def ticks(frame: Frame) -> list[tuple[datetime, str]]:
    """Axis ticks in the zone's local time, no closer than :data:`MIN_TICK_PX`."""
    tz, span = frame.zone, frame.end - frame.start
    tz.cover(math.ceil(frame.end.timestamp()))
    first = to_naive_datetime(
        math.floor(frame.start.timestamp()) + tz.offset_at(math.floor(frame.start.timestamp()))
    )
    last = to_naive_datetime(
        math.ceil(frame.end.timestamp()) + tz.offset_at(math.ceil(frame.end.timestamp()))
    )
    fits = frame.plot_width / MIN_TICK_PX
    walls: list[tuple[datetime, str]] = []
    if span <= timedelta(days=2):
        hours = span / timedelta(hours=1)
        step = next((s for s in (1, 2, 3, 4, 6, 12) if hours / s <= fits), 24)
        wall = first.replace(minute=0, second=0, microsecond=0)
        while wall <= last:
            if wall.hour % step == 0:
                walls.append((wall, wall.strftime("%m-%d") if wall.hour == 0 else f"{wall:%H:%M}"))
            wall += timedelta(hours=1)
    elif span <= timedelta(days=60):
        days = span / timedelta(days=1)
        step = next((s for s in (1, 2, 3, 7, 14) if days / s <= fits), 30)
        day = first.date()
        while day <= last.date():
            if (day.toordinal() - 1) % step == 0:
                walls.append((datetime(day.year, day.month, day.day), f"{day:%m-%d}"))
            day += timedelta(days=1)
    else:
        months = span / timedelta(days=30.44)
        steps = (1, 2, 3, 6, 12, 24, 60, 120, 240, 600)
        step = next((s for s in steps if months / s <= fits), 1200)
        index = first.year * 12 + first.month - 1
        while index <= last.year * 12 + last.month - 1:
            if index % step == 0:
                year, month = divmod(index, 12)
                label = f"{year}" if step >= 12 else f"{year}-{month + 1:02d}"
                walls.append((datetime(year, month + 1, 1), label))
            index += 1
    found: list[tuple[datetime, str]] = []
    for wall, label in walls:
        # An hour the clocks skip gets no tick; a midnight they skip, the first instant after.
        second = instant_of_wall(tz, wall, skip_gap=span <= timedelta(days=2))
        if second is None:
            continue
        at = datetime.fromtimestamp(second, UTC)
        if frame.start <= at <= frame.end and (not found or found[-1][0] < at):
            found.append((at, label))
    return found


def axis(frame: Frame) -> Iterator[str]:
    bottom = frame.lanes_bottom
    yield (
        f'<g class="axis" stroke="currentColor"><line x1="{num(frame.x0)}" y1="{bottom}" '
        f'x2="{num(frame.x0 + frame.plot_width)}" y2="{bottom}"/>'
    )
    for at, label in ticks(frame):
        x = num(frame.x(at))
        yield (
            f'<g class="tick"><line x1="{x}" y1="{frame.lanes_top}" x2="{x}" y2="{bottom + 5}" '
            f'stroke-opacity="0.18"/><line x1="{x}" y1="{bottom}" x2="{x}" y2="{bottom + 5}"/>'
            f'<text x="{x}" y="{bottom + 18}" text-anchor="middle" stroke="none" '
            f'fill="currentColor" font-size="11">{xml_text(label)}</text></g>'
        )
    yield (
        f'<text class="zone" x="{num(frame.x0 + frame.plot_width)}" y="{bottom + 36}" '
        f'text-anchor="end" stroke="none" fill="currentColor" font-size="11">'
        f"Local time, {xml_text(frame.zone_name)}</text></g>"
    )
