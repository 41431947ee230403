"""The picture of a schedule's year and its simulation page, without a browser (issue 24
§2): the schedule page draws the ledger rows of the last 365 days; the simulation page
runs :func:`~kalends.missions.simulation.simulate` on the schedule's saved configuration
and shows what it found, refuses bad input at its field with 422, lets a viewer
simulate, shows a stranger nothing, and writes nothing to the real database; on both
backends."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.missions.simulation import simulate
from kalends.missions.simulation_options import (
    SimulationOptions,
    parse_durations,
    parse_interval,
    parse_local_or_date,
)
from kalends.storage.testing import nothing_written
from kalends.web import pages_simulate
from kalends.web.pages_simulate import (
    WEB_MAX_SLOTS,
    WEB_MAX_WINDOW,
    SimulateForm,
    estimated_slots,
    options_of,
)
from pages.conftest import Pages

NEW_YORK = "America/New_York"
SKIP_GAPS = {"kind": "daily", "time": "02:30", "zone": NEW_YORK, "gap": "skip"}
SVG = "{http://www.w3.org/2000/svg}"
# The form of the New York case: the DST weekend and a three-day outage after it.
NY_FORM = {
    "run": "1",
    "from": "2027-03-01",
    "to": "2027-04-01",
    "outage-from": "2027-03-15T12:00",
    "outage-to": "2027-03-18T08:00",
    "pause-from": "",
    "pause-to": "",
    "duration": "40m",
    "fail-rate": "0",
    "seed": "24",
}


def _at(pages: Pages, when: str) -> None:
    pages.world.clock.set(datetime.fromisoformat(when).replace(tzinfo=UTC))


def _alice(pages: Pages) -> UUID:
    return pages.world.actors["alice"].id


def _play(pages: Pages, sid: str) -> None:
    rev = pages.world.services.schedules.detail(_alice(pages), sid)["revision"]
    pages.world.services.schedules.control(
        _alice(pages), sid, "play", request_id=f"req-sim-play-{rev}", expected_revision=rev
    )


def _recorded(pages: Pages) -> str:
    """Nightly at 02:30 New York, played on 2027-03-12: Saturday runs, Sunday's 02:30 does
    not exist, Monday runs, then no scheduler until Thursday noon (UTC): Thursday's slot
    is caught up, Tuesday's and Wednesday's coalesced into it."""
    _at(pages, "2027-03-12T12:00:00")
    sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
    _play(pages, sid)
    runtime = MemoryRuntime(clock=pages.world.clock, instant=True)
    scheduler = Scheduler(pages.world.services.store, runtime, owner="pages-sim")
    for when in ("2027-03-13T07:30:00", "2027-03-15T06:30:00", "2027-03-18T12:00:00"):
        _at(pages, when)
        scheduler.run_once()
        pages.world.clock.advance(timedelta(seconds=30))
        scheduler.run_once()
    return sid


def _base(pages: Pages, sid: str) -> str:
    return f"/w/{pages.world.home.id}/schedules/{sid}"


def _svg(html: str, ident: str) -> ET.Element:
    """The inline timeline whose IDs start with ``ident``, parsed as XML."""
    start = html.index(f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img" '
                       f'aria-labelledby="{ident}-title')  # fmt: skip
    end = html.index("</svg>", start) + len("</svg>")
    return ET.fromstring(html[start:end])


def _drawn(svg: ET.Element) -> Counter[str]:
    """Slots drawn per outcome: marks and bars, each counting the slots it stands for."""
    drawn: Counter[str] = Counter()
    for g in svg.iter(f"{SVG}g"):
        classes = (g.get("class") or "").split()
        if "mark" in classes or "bar" in classes:
            drawn[str(g.get("data-outcome"))] += int(g.get("data-count") or 0)
    return drawn


def _ledger(pages: Pages, sid: str) -> list[dict[str, Any]]:
    page = pages.world.services.schedules.ledger(_alice(pages), sid, limit=1000)
    return list(page["items"])


class TestTheSchedulePagesPicture:
    def test_the_last_year_draws_a_mark_for_every_recorded_slot(self, pages: Pages) -> None:
        sid = _recorded(pages)
        rows = _ledger(pages, sid)
        want = Counter(str(r["outcome"]) for r in rows)
        assert want["skipped"] == 1 and want["coalesced"] == 2, rows
        html = pages.sign_in("alice").get(_base(pages, sid)).text
        assert 'id="year-h">The last year</h2>' in html
        svg = _svg(html, "year")
        assert _drawn(svg) == want
        reasons = {g.get("data-reason") for g in svg.iter(f"{SVG}g") if g.get("data-reason")}
        assert {"dst-gap", "no-scheduler"} <= reasons
        # New York's clocks went forward on 2027-03-14 (07:00 UTC), inside the year drawn.
        dst = [g.get("data-at") for g in svg.iter(f"{SVG}g") if g.get("class") == "dst"]
        assert "2027-03-14T07:00:00Z" in dst
        caption = html.split('id="year-caption">', 1)[1].split("</p>", 1)[0]
        assert f"{sum(want.values())} slots the ledger recorded" in caption

    def test_a_schedule_without_rows_shows_no_picture_but_offers_a_simulation(
        self, pages: Pages
    ) -> None:
        _at(pages, "2027-03-12T12:00:00")
        sid = pages.schedule("alice", "Quiet", policy=SKIP_GAPS)
        html = pages.sign_in("alice").get(_base(pages, sid)).text
        assert "The last year" not in html and 'class="timeline"' not in html
        assert f'href="{_base(pages, sid)}/simulate">Simulate a year</a>' in html

    def test_rows_older_than_a_year_are_not_drawn(self, pages: Pages) -> None:
        sid = _recorded(pages)
        _at(pages, "2028-03-20T12:00:00")
        html = pages.sign_in("alice").get(_base(pages, sid)).text
        assert "The last year" not in html


def _ny_expected() -> tuple[dict[str, Any], dict[str, Any]]:
    options = SimulationOptions(
        start=parse_local_or_date("2027-03-01", NEW_YORK, "from"),
        end=parse_local_or_date("2027-04-01", NEW_YORK, "to"),
        zone=NEW_YORK,
        outages=(parse_interval("2027-03-15T12:00/2027-03-18T08:00", NEW_YORK, "outage"),),
        durations=parse_durations("40m"),
        seed=24,
    )
    config = {"title": "Nightly", "policy": SKIP_GAPS, "restart": "resume"}
    result = simulate(config, options)
    return result.counts, result.passages


def _section(html: str, heading: str) -> str:
    return html.split(f'id="{heading}"', 1)[1].split("<h3", 1)[0]


class TestTheSimulationPage:
    def test_the_form_offers_a_year_from_today_in_the_schedules_zone(self, pages: Pages) -> None:
        _at(pages, "2027-03-12T03:00:00")  # (still 11 March in New York)
        sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
        reply = pages.sign_in("alice").get(_base(pages, sid) + "/simulate")
        assert reply.status_code == 200
        assert 'name="from" type="date" value="2027-03-11"' in reply.text
        assert 'name="to" type="date" value="2028-03-10"' in reply.text
        assert 'id="result"' not in reply.text

    def test_new_yorks_dst_weekend_and_an_outage_show_what_simulate_finds(
        self, pages: Pages
    ) -> None:
        _at(pages, "2027-02-20T12:00:00")
        sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
        client = pages.sign_in("alice")
        with nothing_written(pages.world.services.store):
            reply = client.get(_base(pages, sid) + "/simulate", params=NY_FORM)
        assert reply.status_code == 200, reply.text
        html = reply.text
        counts, passages = _ny_expected()
        said = dict(re.findall(r'data-outcome="(\w+)">.*?<strong>([\d,]+)</strong>', html))
        for outcome in ("launched", "coalesced", "skipped", "moved"):
            assert int(said[outcome].replace(",", "")) == counts[outcome], (outcome, counts)
        assert counts["skipped"] >= 1 and counts["coalesced"] >= 1
        reasons = html.split('id="reason-counts">', 1)[1].split("</p>", 1)[0]
        assert f"DST gap {counts['reasons']['dst-gap']}" in reasons
        assert f"no scheduler running {counts['reasons']['no-scheduler']}" in reasons
        assert f"{passages['launched']} launched" in html
        svg = _svg(html, "sim")
        drawn = _drawn(svg)
        assert {k: drawn[k] for k in counts if k != "reasons"} == {
            k: v for k, v in counts.items() if k != "reasons"
        }
        dst = [g.get("data-at") for g in svg.iter(f"{SVG}g") if g.get("class") == "dst"]
        assert dst == ["2027-03-14T07:00:00Z"]
        touched = _section(html, "dst-h")
        assert "DST gap" in touched and "2027-03-14 02:30" in touched
        ends = _section(html, "ends-h")
        assert "2027-03-01" in ends and "2027-03-31" in ends
        assert re.search(r"simulated in \d+\.\d s", html)

    def test_a_viewer_may_simulate(self, pages: Pages) -> None:
        _at(pages, "2027-02-20T12:00:00")
        sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
        reply = pages.sign_in("carol").get(_base(pages, sid) + "/simulate", params=NY_FORM)
        assert reply.status_code == 200, reply.text
        assert 'id="result-h"' in reply.text

    @pytest.mark.parametrize("who", ["dave", "anon"])
    def test_a_stranger_gets_nothing(self, pages: Pages, who: str) -> None:
        _at(pages, "2027-02-20T12:00:00")
        sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
        # (dave's client before he signs in is anyone's)
        client = pages.client("dave") if who == "anon" else pages.sign_in(who)
        with nothing_written(pages.world.services.store):
            reply = client.get(
                _base(pages, sid) + "/simulate", params=NY_FORM, follow_redirects=False
            )
        # (a non-member: not found; signed out: to the sign-in page)
        assert reply.status_code == (404 if who == "dave" else 303)
        assert "Nightly" not in reply.text


# Each case: the form's changes, the field refused, and words of its message.
BAD = [
    # the window over the page's cap points to the command line
    ({"to": "2029-03-02"}, "to", "kalends simulate"),
    # a window that ends before it starts
    ({"to": "2027-02-01"}, "to", "ends before it starts"),
    # a malformed date
    ({"from": "2027-13-01"}, "from", "2027-13-01"),
    # an empty date
    ({"from": ""}, "from", "enter a date"),
    # an outage with one end
    ({"outage-to": ""}, "outage-to", "both ends"),
    # an outage that ends before it starts
    ({"outage-to": "2027-03-15T11:00"}, "outage-to", "ends before it starts"),
    # an outage in New York's DST gap
    ({"outage-from": "2027-03-14T02:30"}, "outage-from", "2027-03-14"),
    # a malformed outage time
    ({"outage-from": "soon"}, "outage-from", "YYYY-MM-DDTHH:MM"),
    # a pause that ends before it starts
    ({"pause-from": "2027-03-20T10:00", "pause-to": "2027-03-20T09:00"}, "pause-to", "before"),
    # a malformed duration
    ({"duration": "forty minutes"}, "duration", "30m-2h"),
    # a duration range backwards
    ({"duration": "2h-30m"}, "duration", "ends before it starts"),
    # a duration over the simulation's week
    ({"duration": "8d"}, "duration", "7 days"),
    # a fail rate over 1
    ({"fail-rate": "1.5"}, "fail-rate", "from 0 to 1"),
    # a fail rate that is no number
    ({"fail-rate": "often"}, "fail-rate", "from 0 to 1"),
    # a fail rate that is not a number at all
    ({"fail-rate": "nan"}, "fail-rate", "from 0 to 1"),
    # a negative seed
    ({"seed": "-3"}, "seed", "whole number"),
    # an overlong field
    ({"duration": "1m" * 40}, "duration", "at most 64 characters"),
]


class TestBadInput:
    @pytest.mark.parametrize(("change", "name", "words"), BAD)
    def test_bad_input_is_said_at_its_field_with_422_and_nothing_written(
        self, pages: Pages, change: dict[str, str], name: str, words: str
    ) -> None:
        _at(pages, "2027-02-20T12:00:00")
        sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
        client = pages.sign_in("alice")
        with nothing_written(pages.world.services.store):
            reply = client.get(_base(pages, sid) + "/simulate", params={**NY_FORM, **change})
        assert reply.status_code == 422, reply.text
        html = reply.text
        error = re.search(rf'<p class="error" id="err-{name}" role="alert">([^<]*)</p>', html)
        assert error is not None, html
        assert words in error.group(1)
        assert f'id="f-{name}"' in html
        field = html.split(f'id="f-{name}"', 1)[1].split(">", 1)[0]
        assert 'aria-invalid="true"' in field and f"err-{name}" in field
        assert 'id="result"' not in html

    def test_a_window_of_the_caps_length_is_taken_and_a_day_more_refused(self) -> None:
        assert timedelta(days=731) == WEB_MAX_WINDOW
        texts = {**NY_FORM, "from": "2027-01-01", "to": "2029-01-01"}  # (731 days)
        form = SimulateForm(texts=texts)
        options = options_of(form, NEW_YORK)
        assert options is not None and not form.errors
        assert options.end - options.start == WEB_MAX_WINDOW
        longer = SimulateForm(texts={**texts, "to": "2029-01-02"})
        assert options_of(longer, NEW_YORK) is None
        assert "732" in longer.errors["to"] and "kalends simulate" in longer.errors["to"]

    def test_a_run_past_the_step_cap_stops_and_points_to_the_command(
        self, pages: Pages, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # (the cap lowered to two progress reports, so the test stays short)
        monkeypatch.setattr(pages_simulate, "WEB_MAX_STEPS", 200)
        _at(pages, "2027-02-20T12:00:00")
        sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
        client = pages.sign_in("alice")
        form = {**NY_FORM, "to": "2028-02-01"}  # (about 11 steps a day with 40 min passages)
        with nothing_written(pages.world.services.store):
            reply = client.get(_base(pages, sid) + "/simulate", params=form)
        assert reply.status_code == 422
        error = reply.text.split('id="err-to" role="alert">', 1)[1].split("</p>", 1)[0]
        assert "200 steps" in error and "kalends simulate" in error
        assert 'id="result"' not in reply.text

    def test_a_window_with_too_many_slots_is_refused_before_it_runs(self, pages: Pages) -> None:
        _at(pages, "2027-02-20T12:00:00")
        sid = pages.schedule("alice", "Busy", policy={"kind": "every", "minutes": 15})
        client = pages.sign_in("alice")
        with nothing_written(pages.world.services.store):
            reply = client.get(_base(pages, sid) + "/simulate", params=NY_FORM)
        assert reply.status_code == 422
        error = reply.text.split('id="err-to" role="alert">', 1)[1].split("</p>", 1)[0]
        # 31 days of four slots an hour (New York's lost hour of 14 March is no slot less)
        assert "about 2,976 slots" in error, error
        assert f"at most {WEB_MAX_SLOTS:,}" in error and "kalends simulate" in error


class TestTheEstimate:
    def test_the_slots_of_a_window_are_estimated_from_the_next_ones_spacing(self) -> None:
        first = datetime(2027, 1, 1, tzinfo=UTC)
        hourly = [{"at": (first + timedelta(hours=n)).isoformat()} for n in range(100)]
        assert estimated_slots(hourly, first, first + timedelta(days=2)) == 48
        # fewer upcoming slots than the sample (an end bound soon): no estimate
        assert estimated_slots(hourly[:99], first, first + timedelta(days=2)) is None
