"""A schedule's slot ledger drawn as a timeline (issue 24 §2 "A picture").

People would rather look at a year than read a table of a thousand rows, so the web
panel's detail and the CLI (``--svg FILE``, ``--html FILE``) draw the ledger rows
(:mod:`kalends.missions.ledger`, in their JSON shape) as one SVG drawn by hand:

- time runs left to right from ``start`` to ``end``; one lane per outcome (launched,
  coalesced, skipped, moved), each with its own shape and colour (never colour alone),
  the lane's name and its count of slots at the left;
- a row is a mark with a ``<title>`` (what a pointer shows: local time, zone, outcome,
  reason, detail) and ``class``/``data-outcome``/``data-reason`` attributes; a summary
  row (``slots`` > 1) is a bar from its first slot to its last;
- the slots of one lane that fall into one column of :data:`COLUMN_PX` pixels are one
  grouped mark whose title counts them, and bars that touch at that resolution merge, so
  whatever the number of rows a lane draws at most one mark and one bar per column:
  :func:`mark_budget` (at most :data:`MAX_MARKS` at :data:`MAX_WIDTH`);
- the zone's offset changes inside the window (the engine's zone data) are dashed
  vertical lines labelled "DST +1h 2027-03-14";
- ticks are hours (windows of up to 2 days), days (up to 60 days) or months, thinned to
  :data:`MIN_TICK_PX` apart, labelled in the zone's local time;
- text and axes are ``currentColor``, so the page's theme decides them; the outcome
  colours keep a contrast of at least 3:1 on white and on #111.

Nothing here reads a clock, a file (but the engine's zone data) or the database.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kalends.civil import get_zone
from kalends.clock import require_aware
from kalends.errors import InvalidInput
from kalends.missions.timeline_frame import (
    COLUMN_PX,
    LANE_HEIGHT,
    MARGIN_LEFT,
    MARGIN_RIGHT,
    MIN_TICK_PX,
    Frame,
    axis,
    dst_lines,
    num,
    xml_text,
)
from kalends.missions.timeline_rows import (
    MAX_DETAIL_CHARS,
    OUTCOMES,
    Row,
    Tally,
    clip,
    parse_row,
    shown,
    summary_sentence,
    wall_text,
)

__all__ = [
    "COLOURS",
    "COLUMN_PX",
    "DEFAULT_WIDTH",
    "FIRST_YEAR",
    "LAST_YEAR",
    "MAX_DETAIL_CHARS",
    "MAX_MARKS",
    "MAX_WIDTH",
    "MAX_WINDOW",
    "MIN_TICK_PX",
    "MIN_WIDTH",
    "OUTCOMES",
    "SHAPES",
    "mark_budget",
    "summary_sentence",
    "timeline_html",
    "timeline_svg",
]
SVG_NS = "http://www.w3.org/2000/svg"
SHAPES = {"launched": "circle", "coalesced": "diamond", "skipped": "cross", "moved": "triangle"}
# kalends decision: contrast 4.1:1 or more on #fff and on #111 (tests compute it).
COLOURS = {
    "launched": "#2f8a3e",
    "coalesced": "#3a78d6",
    "skipped": "#d1452f",
    "moved": "#9b59c9",
}
MEANINGS = {
    "launched": "its passage was reserved",
    "coalesced": "missed, folded into a later catch-up passage",
    "skipped": "nothing launched for it",
    "moved": "moved by new zone data",
}
DEFAULT_WIDTH = 960
MIN_WIDTH = 480
MAX_WIDTH = 3840
MARK_RADIUS = 4.5
GROUP_RADIUS = 6.0
BAR_HEIGHT = 10
MIN_BAR_WIDTH = 2.0
# kalends decision: issue 24 asks for a day to ten years; beyond a century is refused.
MAX_WINDOW = timedelta(days=36_525)
# A window's wall times, a zone's offset away, must stay inside the calendar datetime keeps.
FIRST_YEAR = 2
LAST_YEAR = 9998


def mark_budget(width: int) -> int:
    """The most marks and bars a timeline ``width`` pixels wide draws, whatever its rows."""
    columns = math.ceil((width - MARGIN_LEFT - MARGIN_RIGHT) / COLUMN_PX)
    return 2 * len(OUTCOMES) * columns


MAX_MARKS = mark_budget(MAX_WIDTH)
_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


def _shape(outcome: str, cx: float, cy: float, r: float) -> str:
    x, y = num(cx), num(cy)
    match SHAPES[outcome]:
        case "circle":
            return f'<circle cx="{x}" cy="{y}" r="{num(r)}"/>'
        case "diamond":
            points = [(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)]
        case "triangle":
            points = [(cx, cy - r), (cx + r, cy + 0.8 * r), (cx - r, cy + 0.8 * r)]
        case _:
            a, b, c, d = num(cx - r), num(cy - r), num(cx + r), num(cy + r)
            return f'<path d="M{a} {b}L{c} {d}M{a} {d}L{c} {b}" stroke-width="2.2"/>'
    said = " ".join(f"{num(px)},{num(py)}" for px, py in points)
    return f'<polygon points="{said}"/>'


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _paint(outcome: str) -> str:
    colour = COLOURS[outcome]
    return f'fill="{colour}" stroke="{colour}"'


def _single_title(row: Row) -> str:
    lines = [f"{shown(row.local)} {row.zone}"]
    state = row.outcome + (f": {row.reason}" if row.reason else "")
    lines.append(state + (f" ({row.note})" if row.note else ""))
    if row.detail:
        lines.append(clip(row.detail))
    if row.passage_id:
        lines.append(f"passage {row.passage_id}")
    if row.other_at is not None:
        lines.append(f"before new zone data: {_iso(row.other_at)}")
    return "\n".join(lines)


def _reasons_said(rows: Sequence[Row]) -> str:
    weights: Counter[str] = Counter()
    for row in rows:
        weights[row.reason or "no reason"] += row.slots
    return ", ".join(f"{reason} {count:,}" for reason, count in sorted(weights.items()))


def _reason_attr(rows: Sequence[Row]) -> str:
    reasons = {row.reason for row in rows}
    if len(reasons) > 1:
        return "mixed"
    reason = reasons.pop()
    return reason if reason else "none"


def _span_said(frame: Frame, first: Row, last: Row) -> str:
    end = last.through or last.at
    end_local = last.local if last.through is None else wall_text(get_zone(last.zone), end)
    zones = first.zone if first.zone == last.zone else f"{first.zone} to {last.zone}"
    return f"{shown(first.local)} \u2013 {shown(end_local)} {zones}"


def _marks(frame: Frame, outcome: str, rows: Sequence[Row]) -> Iterator[str]:
    """The lane's single slots: one mark per row, or one grouped mark per crowded column."""
    cy = frame.lane_y(outcome)
    groups: list[list[Row]] = []
    last_column = -1
    for row in rows:
        column = frame.column(row.at)
        if groups and column == last_column:
            groups[-1].append(row)
        else:
            groups.append([row])
        last_column = column
    for group in groups:
        first, last = group[0], group[-1]
        reason = xml_text(_reason_attr(group))
        if len(group) == 1:
            at = _iso(first.at)
            yield (
                f'<g class="mark" data-outcome="{outcome}" data-reason="{reason}" '
                f'data-count="1" data-at="{at}"><title>{xml_text(_single_title(first))}</title>'
                f"{_shape(outcome, frame.x(first.at), cy, MARK_RADIUS)}</g>"
            )
            continue
        cx = frame.x0 + (frame.column(first.at) + 0.5) * COLUMN_PX
        title = (
            f"{len(group):,} {outcome} slots, {_span_said(frame, first, last)}\n"
            f"{_reasons_said(group)}"
        )
        yield (
            f'<g class="mark group" data-outcome="{outcome}" data-reason="{reason}" '
            f'data-count="{len(group)}" data-from="{_iso(first.at)}" data-to="{_iso(last.at)}">'
            f"<title>{xml_text(title)}</title>"
            f"{_shape(outcome, cx, cy, GROUP_RADIUS)}</g>"
        )


def _bars(frame: Frame, outcome: str, rows: Sequence[Row]) -> Iterator[str]:
    """The lane's summary rows as bars; bars that touch at column resolution merge."""
    merged: list[list[Row]] = []
    reach = -1
    for row in rows:
        assert row.through is not None
        if merged and frame.column(row.at) <= reach:
            merged[-1].append(row)
            reach = max(reach, frame.column(row.through))
        else:
            merged.append([row])
            reach = frame.column(row.through)
    cy = frame.lane_y(outcome)
    for group in merged:
        first = group[0]
        last = max(group, key=lambda row: row.through or row.at)
        x1 = frame.x(first.at)
        x2 = max(frame.x(last.through or last.at), x1 + MIN_BAR_WIDTH)
        slots = sum(row.slots for row in group)
        head = (
            f"{slots:,} {outcome} slots in one summary row"
            if len(group) == 1
            else f"{slots:,} {outcome} slots in {len(group)} summary rows"
        )
        lines = [head, _span_said(frame, first, last), _reasons_said(group)]
        if len(group) == 1 and first.detail:
            lines.append(clip(first.detail))
        yield (
            f'<g class="bar" data-outcome="{outcome}" '
            f'data-reason="{xml_text(_reason_attr(group))}" '
            f'data-count="{slots}"><title>{xml_text(chr(10).join(lines))}</title>'
            f'<rect x="{num(x1)}" y="{num(cy - BAR_HEIGHT / 2)}" width="{num(x2 - x1)}" '
            f'height="{BAR_HEIGHT}" fill-opacity="0.45" stroke-width="1.5"/></g>'
        )


def _lanes(frame: Frame, tally: Tally) -> Iterator[str]:
    for outcome in OUTCOMES:
        y = frame.lane_y(outcome)
        top = y - LANE_HEIGHT / 2
        yield (
            f'<g class="lane-label" data-outcome="{outcome}">'
            f'<line x1="{num(frame.x0)}" y1="{num(top)}" '
            f'x2="{num(frame.x0 + frame.plot_width)}" y2="{num(top)}" '
            'stroke="currentColor" stroke-opacity="0.12"/>'
            f"<g {_paint(outcome)}>{_shape(outcome, 14, y, MARK_RADIUS)}</g>"
            f'<text x="26" y="{num(y + 4)}" fill="currentColor" font-size="12">{outcome} '
            f"{tally.by_outcome[outcome]:,}</text></g>"
        )


def _window(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start, end = require_aware(start, "start"), require_aware(end, "end")
    if start >= end:
        raise InvalidInput("start: the window's start must come before its end", field="start")
    if end - start > MAX_WINDOW:
        raise InvalidInput("end: a timeline spans at most 100 years", field="end")
    if start.year < FIRST_YEAR or end.year > LAST_YEAR:
        raise InvalidInput(
            f"start: a timeline lies within the years {FIRST_YEAR} to {LAST_YEAR}", field="start"
        )
    return start, end


def _prepare(
    rows: Sequence[Mapping[str, Any]], start: datetime, end: datetime, zone: str, width: int
) -> tuple[Frame, dict[str, list[Row]], dict[str, list[Row]], Tally]:
    start, end = _window(start, end)
    tz = get_zone(zone)
    if not isinstance(width, int) or isinstance(width, bool) or not MIN_WIDTH <= width <= MAX_WIDTH:
        raise InvalidInput(f"width: from {MIN_WIDTH} to {MAX_WIDTH} pixels", field="width")
    if isinstance(rows, str | bytes) or not isinstance(rows, Sequence):
        raise InvalidInput("rows: a list of ledger rows is required", field="rows")
    frame = Frame(start=start, end=end, width=width, zone=tz, zone_name=zone)
    singles: dict[str, list[Row]] = {outcome: [] for outcome in OUTCOMES}
    summaries: dict[str, list[Row]] = {outcome: [] for outcome in OUTCOMES}
    tally = Tally()
    for index, raw in enumerate(rows):
        row = parse_row(index, raw, zone)
        last = row.through or row.at
        if last < start or row.at > end:
            tally.outside += row.slots
            continue
        (summaries if row.slots > 1 else singles)[row.outcome].append(row)
        tally.by_outcome[row.outcome] += row.slots
        tally.by_reason[(row.outcome, row.reason)] += row.slots
    for lanes in (singles, summaries):
        for lane in lanes.values():
            lane.sort(key=lambda row: row.at)
    return frame, singles, summaries, tally


def _svg(
    frame: Frame,
    singles: Mapping[str, Sequence[Row]],
    summaries: Mapping[str, Sequence[Row]],
    tally: Tally,
    title: str,
    ident: str,
    *,
    heading: bool = True,
) -> str:
    desc = summary_sentence(tally.by_reason, tally.outside)
    parts = [
        f'<svg xmlns="{SVG_NS}" class="timeline" role="img" '
        f'aria-labelledby="{ident}-title {ident}-desc" width="{frame.width}" '
        f'height="{frame.height}" viewBox="0 0 {frame.width} {frame.height}" '
        f'font-family="system-ui, sans-serif">',
        f'<title id="{ident}-title">{xml_text(title)}</title>',
        f'<desc id="{ident}-desc">{xml_text(desc)}</desc>',
    ]
    if heading:
        parts.append(
            f'<text class="heading" x="{MARGIN_LEFT}" y="18" fill="currentColor" '
            f'font-size="14" font-weight="600">{xml_text(title)}</text>'
        )
    parts.extend(_lanes(frame, tally))
    parts.extend(axis(frame))
    parts.extend(dst_lines(frame))
    if tally.total == 0:
        first, last = wall_text(frame.zone, frame.start), wall_text(frame.zone, frame.end)
        note = f"No slots between {shown(first)} and {shown(last)} ({frame.zone_name})."
        parts.append(
            f'<text class="empty" x="{num(frame.x0 + frame.plot_width / 2)}" '
            f'y="{num((frame.lanes_top + frame.lanes_bottom) / 2 + 4)}" text-anchor="middle" '
            f'fill="currentColor" font-size="13">{xml_text(note)}</text>'
        )
    for outcome in OUTCOMES:
        parts.append(f'<g class="lane" data-outcome="{outcome}" {_paint(outcome)}>')
        parts.extend(_bars(frame, outcome, summaries[outcome]))
        parts.extend(_marks(frame, outcome, singles[outcome]))
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _check_ident(ident: str) -> str:
    if not isinstance(ident, str) or not _IDENT.match(ident):
        raise InvalidInput("ident: a letter, then letters, digits, - or _", field="ident")
    return ident


def _check_title(title: str) -> str:
    if not isinstance(title, str):
        raise InvalidInput("title: text is required", field="title")
    return title


def timeline_svg(
    rows: Sequence[Mapping[str, Any]],
    *,
    start: datetime,
    end: datetime,
    zone: str,
    title: str,
    width: int = DEFAULT_WIDTH,
    ident: str = "timeline",
) -> str:
    """The ledger ``rows`` between ``start`` and ``end`` (aware) as an SVG document, its
    ticks and DST lines in ``zone``. ``ident`` prefixes the element IDs (two timelines on
    one page need two). Rows outside the window are counted in the description, not drawn.
    Bad input raises :class:`InvalidInput` (an unknown zone :class:`UnknownZone`)."""
    _check_title(title)
    _check_ident(ident)
    frame, singles, summaries, tally = _prepare(rows, start, end, zone, width)
    return _svg(frame, singles, summaries, tally, title, ident)


_PAGE_STYLE = """\
:root { color-scheme: light dark; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5rem; background: #fff; color: #111; }
@media (prefers-color-scheme: dark) { body { background: #111; color: #eee; } }
figure { margin: 1rem 0; }
.scroll { overflow-x: auto; }
svg.timeline { max-width: 100%; min-width: 45rem; height: auto; }
ul.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; }
ul.legend svg { vertical-align: middle; }
table { border-collapse: collapse; margin-top: 1rem; }
caption { text-align: left; font-weight: 600; }
th, td { padding: .25rem .75rem; text-align: left; border-bottom: 1px solid; }
td.count { text-align: right; font-variant-numeric: tabular-nums; }"""


def _legend_icon(inner: str) -> str:
    return (
        f'<svg xmlns="{SVG_NS}" width="18" height="18" viewBox="0 0 18 18" '
        f'aria-hidden="true" focusable="false">{inner}</svg>'
    )


def _legend() -> str:
    items = [
        f'<li data-outcome="{outcome}">'
        f"{_legend_icon(f'<g {_paint(outcome)}>{_shape(outcome, 9, 9, MARK_RADIUS)}</g>')} "
        f"<strong>{outcome}</strong> ({SHAPES[outcome]}): {MEANINGS[outcome]}</li>"
        for outcome in OUTCOMES
    ]
    bar = '<rect x="1" y="5" width="16" height="8" fill="currentColor" fill-opacity="0.45"/>'
    dst = '<line x1="9" y1="0" x2="9" y2="18" stroke="currentColor" stroke-dasharray="4 3"/>'
    items += [
        f"<li>{_legend_icon(bar)} a bar: a summary row standing for many slots</li>",
        f"<li>{_legend_icon(dst)} a dashed line: the zone's clocks change (DST)</li>",
        "<li>a larger mark: several slots too close to draw apart; its tip counts them</li>",
    ]
    return (
        '<section aria-labelledby="legend-heading"><h2 id="legend-heading">Legend</h2>'
        f'<ul class="legend">{"".join(items)}</ul></section>'
    )


def _counts_table(tally: Tally) -> str:
    body = []
    for (outcome, reason), count in sorted(
        tally.by_reason.items(), key=lambda item: (OUTCOMES.index(item[0][0]), item[0][1] or "")
    ):
        body.append(
            f'<tr data-outcome="{outcome}"><td>{outcome}</td><td>{xml_text(reason or "—")}</td>'
            f'<td class="count">{count:,}</td></tr>'
        )
    if not body:
        body.append('<tr><td colspan="3">No slots.</td></tr>')
    return (
        "<table><caption>Slots by outcome and reason</caption><thead><tr>"
        '<th scope="col">Outcome</th><th scope="col">Reason</th><th scope="col">Slots</th>'
        f"</tr></thead><tbody>{''.join(body)}</tbody><tfoot><tr>"
        f'<th scope="row" colspan="2">Total</th><td class="count">{tally.total:,}</td>'
        "</tr></tfoot></table>"
    )


def timeline_html(
    rows: Sequence[Mapping[str, Any]],
    *,
    start: datetime,
    end: datetime,
    zone: str,
    title: str,
) -> str:
    """A standalone HTML5 page: the timeline inline, a legend and the counts by outcome
    and reason; no script, nothing loaded from elsewhere. Bad input as :func:`timeline_svg`."""
    _check_title(title)
    frame, singles, summaries, tally = _prepare(rows, start, end, zone, DEFAULT_WIDTH)
    # The page's own heading names it; the drawing does not say it twice.
    svg = _svg(frame, singles, summaries, tally, title, "timeline", heading=False)
    first, last = wall_text(frame.zone, frame.start), wall_text(frame.zone, frame.end)
    window = f"From {shown(first)} to {shown(last)}, local time in {zone}."
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{xml_text(title)}</title>\n<style>\n{_PAGE_STYLE}\n</style>\n</head>\n<body>\n"
        f"<main>\n<h1>{xml_text(title)}</h1>\n<p>{xml_text(window)}</p>\n"
        f"<p>{xml_text(summary_sentence(tally.by_reason, tally.outside))}</p>\n"
        '<figure><div class="scroll" tabindex="0" role="region" aria-label="Timeline">\n'
        f"{svg}\n</div></figure>\n{_legend()}\n{_counts_table(tally)}\n</main>\n"
        "</body>\n</html>\n"
    )
