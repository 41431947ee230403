"""The ledger drawn as a timeline: what the SVG and the page say, read back as XML."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from kalends.errors import InvalidInput, UnknownZone
from kalends.missions.timeline import (
    COLOURS,
    COLUMN_PX,
    DEFAULT_WIDTH,
    MAX_MARKS,
    MAX_WIDTH,
    OUTCOMES,
    mark_budget,
    timeline_html,
    timeline_svg,
)

Json = dict[str, Any]
SVG = "http://www.w3.org/2000/svg"
NS = f"{{{SVG}}}"
NEW_YORK = "America/New_York"
BERLIN = "Europe/Berlin"
# The plot's left edge and width at the default width (the lane labels take the left).
X0 = 136.0
PLOT = DEFAULT_WIDTH - 136.0 - 24.0

YEAR_START = datetime(2027, 1, 1, 5, tzinfo=UTC)  # midnight in New York
YEAR_END = datetime(2028, 1, 1, 5, tzinfo=UTC)


def z(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def row(
    at: datetime,
    outcome: str = "launched",
    reason: str | None = None,
    *,
    zone: str = NEW_YORK,
    detail: str | None = None,
    slots: int = 1,
    through: datetime | None = None,
) -> Json:
    """A ledger row in its JSON shape; its wall time from the standard library's zones."""
    local = at.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%dT%H:%M:%S")
    return {
        "slot": z(at),
        "local": local,
        "zone": zone,
        "outcome": outcome,
        "reason": reason,
        "note": None,
        "passageId": "p-1" if outcome in ("launched", "coalesced") else None,
        "detail": detail,
        "slots": slots,
        "through": None if through is None else z(through),
        "otherAt": None,
        "decidedAt": z(at + timedelta(seconds=2)),
    }


def daily(start: datetime, days: int, **kwargs: Any) -> list[Json]:
    return [row(start + timedelta(days=d, hours=9), **kwargs) for d in range(days)]


def draw(rows: list[Json], **kwargs: Any) -> ET.Element:
    options: dict[str, Any] = {
        "start": YEAR_START,
        "end": YEAR_END,
        "zone": NEW_YORK,
        "title": "Nightly backup",
    }
    options.update(kwargs)
    return ET.fromstring(timeline_svg(rows, **options))


def marks(root: ET.Element, kind: str = "mark") -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if kind in (g.get("class") or "").split()]


def title_of(element: ET.Element) -> str:
    found = element.find(f"{NS}title")
    assert found is not None and found.text is not None
    return found.text


def mark_x(mark: ET.Element) -> float:
    """The horizontal centre of a mark's shape, whichever shape it is."""
    shape = next(iter(mark.iter(f"{NS}circle")), None)
    if shape is not None:
        return float(shape.get("cx", "nan"))
    polygon = next(iter(mark.iter(f"{NS}polygon")), None)
    if polygon is not None:
        return float(polygon.get("points", "").split()[0].split(",")[0])
    path = next(iter(mark.iter(f"{NS}path")))
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path.get("d", ""))]
    return (numbers[0] + numbers[2]) / 2


def expected_x(at: datetime, start: datetime = YEAR_START, end: datetime = YEAR_END) -> float:
    return X0 + (at - start) / (end - start) * PLOT


def luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


class TestMarks:
    def test_the_svg_is_well_formed_xml_in_the_svg_namespace(self) -> None:
        root = draw(daily(YEAR_START, 3))
        assert root.tag == f"{NS}svg"

    def test_each_outcome_draws_one_mark_per_row_with_its_own_shape_and_colour(self) -> None:
        outcomes = ["launched"] * 5 + ["coalesced"] * 3 + ["skipped"] * 2 + ["moved"]
        rows = [
            row(YEAR_START + timedelta(days=7 * i, hours=9), outcome, None)
            for i, outcome in enumerate(outcomes)
        ]
        drawn = marks(draw(rows))
        assert Counter(m.get("data-outcome") for m in drawn) == Counter(outcomes)
        shapes = {"launched": "circle", "coalesced": "polygon", "skipped": "path"}
        shapes["moved"] = "polygon"
        for mark in drawn:
            outcome = mark.get("data-outcome", "")
            assert [child.tag for child in mark][1] == f"{NS}{shapes[outcome]}"
        # colour comes from the mark's lane, which carries its outcome too
        root = draw(rows)
        for lane in marks(root, "lane"):
            outcome = lane.get("data-outcome", "")
            assert lane.get("fill") == COLOURS[outcome]
            assert {m.get("data-outcome") for m in marks(lane)} <= {outcome}

    def test_diamond_and_triangle_differ_as_shapes(self) -> None:
        rows = [row(YEAR_START + timedelta(days=1), "coalesced", "no-scheduler")]
        rows.append(row(YEAR_START + timedelta(days=2), "moved", "zone-rules-changed"))
        drawn = {m.get("data-outcome"): m for m in marks(draw(rows))}
        diamond = drawn["coalesced"].find(f"{NS}polygon")
        triangle = drawn["moved"].find(f"{NS}polygon")
        assert diamond is not None and triangle is not None
        assert len(diamond.get("points", "").split()) == 4
        assert len(triangle.get("points", "").split()) == 3

    def test_each_marks_title_names_its_local_time_zone_outcome_reason_and_detail(self) -> None:
        at = datetime(2027, 3, 14, 7, 0, tzinfo=UTC)
        gap = row(at, "skipped", "dst-gap", detail="02:30 does not exist on 14 March")
        gap["local"] = "2027-03-14T02:30:00"
        (mark,) = marks(draw([gap]))
        said = title_of(mark)
        assert said.splitlines()[0] == "2027-03-14 02:30 America/New_York"
        assert "skipped: dst-gap" in said
        assert "02:30 does not exist on 14 March" in said
        assert mark.get("data-reason") == "dst-gap"
        assert mark.get("data-at") == "2027-03-14T07:00:00Z"

    def test_a_mark_without_a_reason_says_none(self) -> None:
        (mark,) = marks(draw(daily(YEAR_START, 1)))
        assert mark.get("data-reason") == "none"
        assert title_of(mark).splitlines()[1] == "launched"

    def test_x_grows_with_time_across_every_lane(self) -> None:
        outcomes = ("launched", "skipped", "coalesced", "moved")
        rows = [
            row(
                YEAR_START + timedelta(days=d, hours=9),
                outcomes[d % 4],
                "paused" if d % 4 else None,
            )
            for d in range(0, 365, 3)
        ]
        drawn = sorted(marks(draw(rows)), key=lambda m: m.get("data-at", ""))
        xs = [mark_x(m) for m in drawn]
        assert len(xs) == len(rows)
        assert all(a < b for a, b in pairwise(xs))

    def test_a_mark_sits_where_its_instant_falls_in_the_window(self) -> None:
        at = datetime(2027, 7, 2, 17, tzinfo=UTC)
        (mark,) = marks(draw([row(at)]))
        assert mark_x(mark) == pytest.approx(expected_x(at), abs=0.06)

    def test_the_lane_labels_count_slots_per_outcome(self) -> None:
        rows = daily(YEAR_START, 4) + daily(YEAR_START, 2, outcome="skipped", reason="paused")
        root = draw(rows)
        labels = {g.get("data-outcome"): "".join(g.itertext()) for g in marks(root, "lane-label")}
        assert labels == {
            "launched": "launched 4",
            "coalesced": "coalesced 0",
            "skipped": "skipped 2",
            "moved": "moved 0",
        }


class TestSummaryRows:
    def test_a_summary_row_is_a_bar_from_its_first_slot_to_its_last(self) -> None:
        first = datetime(2027, 5, 1, 13, tzinfo=UTC)
        last = datetime(2027, 6, 10, 13, tzinfo=UTC)
        summary = row(first, "skipped", "no-scheduler", slots=41, through=last)
        root = draw([summary])
        (bar,) = marks(root, "bar")
        rect = bar.find(f"{NS}rect")
        assert rect is not None
        x = float(rect.get("x", "nan"))
        width = float(rect.get("width", "nan"))
        assert x == pytest.approx(expected_x(first), abs=0.06)
        assert x + width == pytest.approx(expected_x(last), abs=0.12)
        assert bar.get("data-count") == "41"
        assert bar.get("data-reason") == "no-scheduler"
        assert "41 skipped slots in one summary row" in title_of(bar)
        assert "2027-05-01 09:00 \u2013 2027-06-10 09:00 America/New_York" in title_of(bar)
        assert marks(root) == []
        desc = root.find(f"{NS}desc")
        assert desc is not None and desc.text == "41 slots: 41 skipped (no-scheduler 41)."

    def test_a_summary_row_reaching_past_the_window_is_cut_at_its_edge(self) -> None:
        first = datetime(2027, 12, 1, 14, tzinfo=UTC)
        summary = row(first, "skipped", "paused", slots=90, through=first + timedelta(days=89))
        (bar,) = marks(draw([summary]), "bar")
        rect = bar.find(f"{NS}rect")
        assert rect is not None
        right = float(rect.get("x", "nan")) + float(rect.get("width", "nan"))
        assert right == pytest.approx(X0 + PLOT, abs=0.12)

    def test_summary_rows_that_touch_merge_into_one_bar_counting_every_slot(self) -> None:
        first = datetime(2027, 2, 1, 14, tzinfo=UTC)
        rows = [
            row(first, "skipped", "paused", slots=10, through=first + timedelta(days=9)),
            row(
                first + timedelta(days=9),
                "skipped",
                "stopped",
                slots=5,
                through=first + timedelta(days=13),
            ),
            row(
                datetime(2027, 9, 1, 13, tzinfo=UTC),
                "skipped",
                "paused",
                slots=3,
                through=datetime(2027, 9, 3, 13, tzinfo=UTC),
            ),
        ]
        bars = marks(draw(rows), "bar")
        assert [b.get("data-count") for b in bars] == ["15", "3"]
        assert bars[0].get("data-reason") == "mixed"
        assert "15 skipped slots in 2 summary rows" in title_of(bars[0])
        assert "paused 10, stopped 5" in title_of(bars[0])


class TestCrowding:
    def test_slots_in_distinct_columns_are_drawn_apart(self) -> None:
        columns = int(PLOT // COLUMN_PX)
        span = YEAR_END - YEAR_START
        rows = [row(YEAR_START + span * (i + 0.5) / columns) for i in range(columns)]
        drawn = marks(draw(rows))
        assert len(drawn) == columns
        assert marks(draw(rows), "group") == []

    def test_above_the_pixel_budget_slots_group_per_column_and_the_counts_add_up(self) -> None:
        span = YEAR_END - YEAR_START
        outcomes = ("launched",) * 45 + ("skipped", "coalesced", "moved", "skipped", "skipped")
        rows = [
            row(YEAR_START + span * i / 50_000, outcomes[i % 50], None if i % 50 < 45 else "paused")
            for i in range(50_000)
        ]
        root = draw(rows)
        drawn = marks(root)
        assert len(drawn) <= mark_budget(DEFAULT_WIDTH) // 2
        groups = marks(root, "group")
        assert groups, "fifty thousand slots in 800 pixels must group"
        added: Counter[str] = Counter()
        for mark in drawn:
            count = int(mark.get("data-count", "0"))
            added[mark.get("data-outcome", "")] += count
            if "group" in (mark.get("class") or ""):
                assert title_of(mark).startswith(f"{count:,} {mark.get('data-outcome')} slots, ")
        assert added == Counter(r["outcome"] for r in rows)
        # a group says the first and last instant it stands for, and groups keep time's order
        launched = [m for m in drawn if m.get("data-outcome") == "launched"]
        spans = [
            (m.get("data-from") or m.get("data-at") or "", m.get("data-to") or "") for m in launched
        ]
        assert all(a <= b for a, b in spans if b)
        xs = [mark_x(m) for m in launched]
        assert [s for s, _ in spans] == sorted(s for s, _ in spans)
        assert all(a < b for a, b in pairwise(xs))
        for outcome in ("skipped", "coalesced", "moved"):
            reasons = {m.get("data-reason") for m in drawn if m.get("data-outcome") == outcome}
            assert reasons == {"paused"}

    def test_a_groups_title_says_its_first_and_last_local_time_and_its_reasons(self) -> None:
        at = datetime(2027, 4, 1, 13, tzinfo=UTC)
        rows = [row(at, "skipped", "paused"), row(at + timedelta(minutes=5), "skipped", "quota")]
        (group,) = marks(draw(rows), "group")
        said = title_of(group)
        assert said.splitlines() == [
            "2 skipped slots, 2027-04-01 09:00 \u2013 2027-04-01 09:05 America/New_York",
            "paused 1, quota 1",
        ]
        assert group.get("data-reason") == "mixed"

    def test_at_the_widest_fifty_thousand_rows_stay_within_max_marks(self) -> None:
        span = YEAR_END - YEAR_START
        rows = [row(YEAR_START + span * i / 50_000, OUTCOMES[i % 4], None) for i in range(50_000)]
        svg = timeline_svg(
            rows, start=YEAR_START, end=YEAR_END, zone=NEW_YORK, title="Busy", width=MAX_WIDTH
        )
        root = ET.fromstring(svg)
        assert len(marks(root)) + len(marks(root, "bar")) <= MAX_MARKS
        assert sum(int(m.get("data-count", "0")) for m in marks(root)) == 50_000


# Offset changes in 2027, from the published rules: New York changes at 02:00 local on
# the second Sunday of March and the first Sunday of November, Berlin at 01:00 UTC on
# the last Sundays of March and October.
DST_2027 = [
    (
        NEW_YORK,
        [
            ("2027-03-14T07:00:00Z", "DST +1h 2027-03-14"),
            ("2027-11-07T06:00:00Z", "DST \u22121h 2027-11-07"),
        ],
    ),
    (
        BERLIN,
        [
            ("2027-03-28T01:00:00Z", "DST +1h 2027-03-28"),
            ("2027-10-31T01:00:00Z", "DST \u22121h 2027-10-31"),
        ],
    ),
]


class TestDst:
    @pytest.mark.parametrize(("zone", "changes"), DST_2027)
    def test_the_zones_2027_transitions_are_lines_where_they_happen(
        self, zone: str, changes: list[tuple[str, str]]
    ) -> None:
        start = datetime(2027, 1, 1, tzinfo=UTC)
        end = datetime(2028, 1, 1, tzinfo=UTC)
        lines = marks(draw([], start=start, end=end, zone=zone), "dst")
        assert [
            (g.get("data-at"), "".join(t.text or "" for t in g.iter(f"{NS}text"))) for g in lines
        ] == changes
        for g, (at, _) in zip(lines, changes, strict=True):
            line = g.find(f"{NS}line")
            assert line is not None
            when = datetime.fromisoformat(at)
            assert float(line.get("x1", "nan")) == pytest.approx(
                expected_x(when, start, end), abs=0.06
            )
            assert zone in title_of(g)

    def test_a_utc_window_has_no_dst_lines(self) -> None:
        assert marks(draw(daily(YEAR_START, 30), zone="UTC"), "dst") == []

    def test_only_transitions_inside_the_window_are_drawn(self) -> None:
        start = datetime(2027, 4, 1, tzinfo=UTC)
        end = datetime(2027, 10, 1, tzinfo=UTC)
        assert marks(draw([], start=start, end=end, zone=BERLIN), "dst") == []

    def test_crowded_lines_shorten_their_labels_and_then_keep_them_in_their_tips(self) -> None:
        start = datetime(2027, 1, 1, tzinfo=UTC)
        five = marks(draw([], start=start, end=start + timedelta(days=5 * 365), zone=BERLIN), "dst")
        assert len(five) == 10
        assert {"".join(t.text or "" for t in g.iter(f"{NS}text")) for g in five} == {
            "+1h",
            "\u22121h",
        }
        ten = marks(draw([], start=start, end=start + timedelta(days=10 * 365), zone=BERLIN), "dst")
        assert len(ten) == 20
        assert all(list(g.iter(f"{NS}text")) == [] for g in ten)
        assert all(title_of(g).startswith("DST ") for g in ten)

    def test_a_half_hour_change_says_its_minutes(self) -> None:
        start = datetime(2027, 1, 1, tzinfo=UTC)
        lines = marks(
            draw([], start=start, end=start + timedelta(days=365), zone="Australia/Lord_Howe"),
            "dst",
        )
        assert ["".join(t.text or "" for t in g.iter(f"{NS}text")) for g in lines] == [
            "DST \u221230m 2027-04-04",
            "DST +30m 2027-10-03",
        ]

    def test_the_fall_back_title_says_the_repeated_hour(self) -> None:
        start = datetime(2027, 11, 6, tzinfo=UTC)
        (line,) = marks(draw([], start=start, end=start + timedelta(days=2)), "dst")
        assert title_of(line) == "DST \u22121h 2027-11-07: 02:00 \u2192 01:00 America/New_York"


def tick_labels(root: ET.Element) -> list[str]:
    return ["".join(g.itertext()) for g in marks(root, "tick")]


class TestAxis:
    def test_a_year_is_ticked_by_month_in_local_time(self) -> None:
        labels = tick_labels(draw([]))
        assert labels == [f"2027-{m:02d}" for m in range(1, 13)] + ["2028-01"]

    def test_a_decade_is_ticked_by_years(self) -> None:
        start = datetime(2027, 1, 1, 5, tzinfo=UTC)
        labels = tick_labels(draw([], start=start, end=start + timedelta(days=3653)))
        assert labels == [str(year) for year in range(2027, 2038)]

    def test_a_month_is_ticked_by_days(self) -> None:
        start = datetime(2027, 3, 1, 5, tzinfo=UTC)
        labels = tick_labels(draw([], start=start, end=start + timedelta(days=20)))
        assert labels[0] == "03-01"
        assert all(re.fullmatch(r"03-\d\d", label) for label in labels)

    def test_a_day_is_ticked_by_hours_in_the_zones_wall_time(self) -> None:
        start = datetime(2027, 1, 10, 5, tzinfo=UTC)  # midnight in New York
        root = draw([], start=start, end=start + timedelta(days=1))
        ticks = {"".join(g.itertext()): g for g in marks(root, "tick")}
        assert "01-10" in ticks and "12:00" in ticks
        line = ticks["12:00"].find(f"{NS}line")
        assert line is not None
        # noon in New York is 17:00 UTC, twelve hours into the window
        assert float(line.get("x1", "nan")) == pytest.approx(X0 + PLOT / 2, abs=0.06)

    def test_an_hour_the_clocks_skip_gets_no_tick(self) -> None:
        start = datetime(2027, 3, 27, 23, tzinfo=UTC)  # midnight in Berlin
        labels = tick_labels(draw([], start=start, end=start + timedelta(hours=12), zone=BERLIN))
        assert "02:00" not in labels and "03:00" in labels and "01:00" in labels

    def test_the_axis_says_its_zone(self) -> None:
        root = draw([], zone=BERLIN)
        zone = [t for t in root.iter(f"{NS}text") if t.get("class") == "zone"]
        assert [t.text for t in zone] == ["Local time, Europe/Berlin"]


class TestText:
    def test_markup_in_a_detail_and_a_title_stays_text(self) -> None:
        nasty = '<script>alert("x")</script> & "quoted"'
        svg = timeline_svg(
            [row(YEAR_START + timedelta(days=3), "skipped", "paused", detail=nasty)],
            start=YEAR_START,
            end=YEAR_END,
            zone=NEW_YORK,
            title='Backups <b>&"all"',
        )
        root = ET.fromstring(svg)
        assert list(root.iter(f"{NS}script")) == [] and list(root.iter("script")) == []
        assert "<script>" not in svg
        (mark,) = marks(root)
        assert nasty in title_of(mark)
        heading = root.find(f"{NS}title")
        assert heading is not None and heading.text == 'Backups <b>&"all"'

    def test_characters_xml_cannot_hold_are_replaced(self) -> None:
        bell = row(YEAR_START + timedelta(days=3), detail="ring\x07\x00 done")
        (mark,) = marks(draw([bell]))
        assert "ring\ufffd\ufffd done" in title_of(mark)

    def test_a_long_detail_is_cut_in_the_tip(self) -> None:
        (mark,) = marks(draw([row(YEAR_START + timedelta(days=3), detail="x" * 5_000)]))
        assert len(title_of(mark)) < 400 and title_of(mark).endswith("\u2026\npassage p-1")

    def test_no_rows_give_an_axis_and_a_no_slots_note(self) -> None:
        root = draw([])
        assert marks(root) == [] and marks(root, "bar") == []
        assert len(tick_labels(root)) > 1
        empty = [t for t in root.iter(f"{NS}text") if t.get("class") == "empty"]
        assert [t.text for t in empty] == [
            "No slots between 2027-01-01 00:00 and 2028-01-01 00:00 (America/New_York)."
        ]
        desc = root.find(f"{NS}desc")
        assert desc is not None and desc.text == "No slots."

    def test_the_description_counts_outcomes_and_reasons_in_one_sentence(self) -> None:
        rows = daily(YEAR_START, 360)
        rows += [row(YEAR_START + timedelta(days=360, hours=9), "skipped", "dst-gap")]
        rows += daily(YEAR_START + timedelta(days=361), 3, outcome="skipped", reason="paused")
        rows += [row(YEAR_START + timedelta(days=364, hours=9), "coalesced", "no-scheduler")]
        desc = draw(rows).find(f"{NS}desc")
        assert desc is not None
        assert desc.text == (
            "365 slots: 360 launched, 4 skipped (dst-gap 1, paused 3), "
            "1 coalesced (no-scheduler 1)."
        )

    def test_rows_outside_the_window_are_counted_apart_and_not_drawn(self) -> None:
        rows = [*daily(YEAR_START, 2), row(YEAR_END + timedelta(days=3))]
        root = draw(rows)
        assert len(marks(root)) == 2
        desc = root.find(f"{NS}desc")
        assert desc is not None
        assert desc.text == "2 slots: 2 launched. 1 more outside the window, not drawn."

    def test_a_missing_local_time_is_the_slots_wall_time_in_its_zone(self) -> None:
        bare = {"slot": "2027-07-04T13:00:00Z", "outcome": "launched"}
        (mark,) = marks(draw([bare]))
        assert title_of(mark).splitlines()[0] == "2027-07-04 09:00 America/New_York"


class TestAccessibility:
    def test_the_svg_is_an_image_labelled_by_its_title_and_description(self) -> None:
        root = draw(daily(YEAR_START, 2), ident="backup-7")
        assert root.get("role") == "img"
        ids = (root.get("aria-labelledby") or "").split()
        assert ids == ["backup-7-title", "backup-7-desc"]
        by_id = {e.get("id"): e.tag for e in root.iter() if e.get("id")}
        assert by_id["backup-7-title"] == f"{NS}title"
        assert by_id["backup-7-desc"] == f"{NS}desc"

    @pytest.mark.parametrize("outcome", OUTCOMES)
    @pytest.mark.parametrize("background", ["#ffffff", "#111111"])
    def test_outcome_colours_keep_three_to_one_contrast_on_light_and_dark(
        self, outcome: str, background: str
    ) -> None:
        assert contrast(COLOURS[outcome], background) >= 3.0

    def test_the_contrast_computation_can_fail(self) -> None:
        assert contrast("#ffff00", "#ffffff") < 3.0
        assert contrast("#000000", "#ffffff") == pytest.approx(21.0)

    def test_text_and_axes_take_the_pages_colour(self) -> None:
        start = datetime(2027, 1, 1, tzinfo=UTC)
        root = draw(daily(start, 30), start=start, end=start + timedelta(days=365), zone=BERLIN)
        for text in root.iter(f"{NS}text"):
            assert text.get("fill") == "currentColor", ET.tostring(text)
        for line in root.iter(f"{NS}line"):
            stroke = line.get("stroke")
            assert stroke in (None, "currentColor")
        assert "#000" not in ET.tostring(root, encoding="unicode")


class Page(HTMLParser):
    """Collects the page's tags, checking that every element it opens it closes."""

    VOID = frozenset({"meta", "link", "br", "img", "input", "hr"})
    # SVG elements written self-closing
    SELF = frozenset({"circle", "polygon", "path", "line", "rect"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tags: Counter[str] = Counter()
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.attrs.extend(attrs)
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.attrs.extend(attrs)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def page(rows: list[Json]) -> tuple[str, Page]:
    html = timeline_html(
        rows, start=YEAR_START, end=YEAR_END, zone=NEW_YORK, title="Nightly <backup>"
    )
    parser = Page()
    parser.feed(html)
    parser.close()
    assert parser.open == []
    return html, parser


class TestPage:
    def test_the_page_holds_the_svg_a_legend_and_the_counts_and_no_script(self) -> None:
        rows = daily(YEAR_START, 10) + daily(YEAR_START, 2, outcome="skipped", reason="paused")
        html, parsed = page(rows)
        assert html.startswith("<!DOCTYPE html>")
        assert parsed.tags["script"] == 0 and "<script" not in html.lower()
        assert parsed.tags["title"] >= 2  # the page's and the SVG's
        assert parsed.tags["svg"] >= 1 and parsed.tags["table"] == 1
        text = "".join(parsed.text)
        assert "Nightly <backup>" in text
        for outcome in OUTCOMES:
            assert outcome in text
        assert "Legend" in text and "summary row" in text and "DST" in text
        assert "12 slots: 10 launched, 2 skipped (paused 2)." in text
        assert parsed.tags["h1"] == 1 and 'class="heading"' not in html  # named once

    def test_the_counts_table_has_a_row_per_outcome_and_reason(self) -> None:
        rows = daily(YEAR_START, 3) + daily(YEAR_START, 2, outcome="skipped", reason="paused")
        html, _ = page(rows)
        table = html[html.index("<table>") : html.index("</table>") + len("</table>")]
        cells = re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", table)
        assert cells == [
            "Outcome", "Reason", "Slots",
            "launched", "\u2014", "3",
            "skipped", "paused", "2",
            "Total", "5",
        ]  # fmt: skip

    def test_the_page_loads_nothing_from_elsewhere(self) -> None:
        html, parsed = page(daily(YEAR_START, 3))
        names = {name for name, _ in parsed.attrs}
        assert not names & {"src", "href", "action"}
        assert re.findall(r"https?://[^\"' ]+", html) == [SVG] * html.count(SVG)
        assert "@import" not in html and "url(" not in html

    def test_the_embedded_svg_parses_as_xml(self) -> None:
        html, _ = page(daily(YEAR_START, 3, detail='a <b> & "c"'))
        svg = html[html.index("<svg") : html.index("</svg>", html.index('class="timeline"')) + 6]
        assert ET.fromstring(svg).tag == f"{NS}svg"


def svg_of(rows: list[Json], **kwargs: Any) -> str:
    options: dict[str, Any] = {
        "start": YEAR_START,
        "end": YEAR_END,
        "zone": NEW_YORK,
        "title": "t",
    }
    options.update(kwargs)
    return timeline_svg(rows, **options)


class TestBadInput:
    @pytest.mark.parametrize(
        "window",
        [
            (YEAR_END, YEAR_START),  # reversed
            (YEAR_START, YEAR_START),  # empty
        ],
    )
    def test_a_window_that_does_not_move_forward_is_refused(
        self, window: tuple[datetime, datetime]
    ) -> None:
        with pytest.raises(InvalidInput, match="start"):
            svg_of([], start=window[0], end=window[1])

    @pytest.mark.parametrize("which", ["start", "end"])
    def test_a_naive_bound_is_refused(self, which: str) -> None:
        naive = {"start": YEAR_START, "end": YEAR_END}
        naive[which] = naive[which].replace(tzinfo=None)
        with pytest.raises(InvalidInput) as raised:
            svg_of([], **naive)
        assert raised.value.field == which

    def test_a_window_over_a_century_is_refused(self) -> None:
        with pytest.raises(InvalidInput, match="100 years"):
            svg_of([], end=YEAR_START + timedelta(days=40_000))

    @pytest.mark.parametrize(
        "window",
        [
            (datetime(1, 1, 1, tzinfo=UTC), datetime(1, 6, 1, tzinfo=UTC)),  # year 1
            (datetime(9999, 1, 1, tzinfo=UTC), datetime(9999, 6, 1, tzinfo=UTC)),  # year 9999
        ],
    )
    def test_a_window_at_the_calendars_ends_is_refused(
        self, window: tuple[datetime, datetime]
    ) -> None:
        with pytest.raises(InvalidInput, match="within the years"):
            svg_of([], start=window[0], end=window[1])

    @pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "EST5EDT", "", "+02:00"])
    def test_an_unknown_zone_is_the_engines_unknown_zone(self, zone: str) -> None:
        with pytest.raises(UnknownZone):
            svg_of([], zone=zone)

    def test_an_unknown_outcome_is_refused_naming_its_row(self) -> None:
        rows = daily(YEAR_START, 2)
        rows[1]["outcome"] = "exploded"
        with pytest.raises(InvalidInput, match="exploded") as raised:
            svg_of(rows)
        assert raised.value.field == "rows[1].outcome"

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"slot": "yesterday"}, "rows[0].slot"),  # not an instant
            ({"slot": "2027-01-01T09:00:00"}, "rows[0].slot"),  # naive
            ({"slot": None}, "rows[0].slot"),  # missing
            ({"slots": 0}, "rows[0].slots"),  # no slot
            ({"slots": True}, "rows[0].slots"),  # a boolean is no count
            ({"slots": "3"}, "rows[0].slots"),  # text is no count
            ({"slots": 3}, "rows[0].through"),  # a summary without its last slot
            ({"slots": 3, "through": "2026-01-01T00:00:00Z"}, "rows[0].through"),  # backwards
            ({"reason": 7}, "rows[0].reason"),  # not text
            ({"detail": ["x"]}, "rows[0].detail"),  # not text
            ({"otherAt": "soon"}, "rows[0].otherAt"),  # not an instant
        ],
    )
    def test_a_malformed_row_is_refused_naming_its_field(self, change: Json, field: str) -> None:
        bad = row(YEAR_START + timedelta(days=1)) | change
        with pytest.raises(InvalidInput) as raised:
            svg_of([bad])
        assert raised.value.field == field

    def test_a_row_that_is_not_an_object_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as raised:
            svg_of(["launched"])  # type: ignore[list-item]
        assert raised.value.field == "rows[0]"

    def test_a_row_in_an_unknown_zone_without_its_local_time_is_refused(self) -> None:
        bare = {"slot": "2027-07-04T13:00:00Z", "outcome": "launched", "zone": "Nowhere/Land"}
        with pytest.raises(UnknownZone):
            svg_of([bare])

    @pytest.mark.parametrize("width", [0, 479, MAX_WIDTH + 1])
    def test_a_width_out_of_range_is_refused(self, width: int) -> None:
        with pytest.raises(InvalidInput) as raised:
            svg_of([], width=width)
        assert raised.value.field == "width"

    def test_a_bad_element_id_prefix_is_refused(self) -> None:
        with pytest.raises(InvalidInput):
            svg_of([], ident='x" onload="y')

    def test_the_page_refuses_what_the_svg_refuses(self) -> None:
        with pytest.raises(InvalidInput):
            timeline_html([], start=YEAR_END, end=YEAR_START, zone=NEW_YORK, title="t")
        with pytest.raises(UnknownZone):
            timeline_html([], start=YEAR_START, end=YEAR_END, zone="Mars/Base", title="t")
        rows = [row(YEAR_START) | {"outcome": "maybe"}]
        with pytest.raises(InvalidInput):
            timeline_html(rows, start=YEAR_START, end=YEAR_END, zone=NEW_YORK, title="t")
