"""The simulation page in Debian's chromium against a real ``kalends serve`` (issue 24 §2):
a schedule at 02:30 Berlin that skips DST gaps is simulated from its page across the
weekend of 2027-03-28 (Berlin's clocks go forward at 02:00) with a server outage after
it, with script on and off; the page shows the counts, the timeline with its DST line,
the skipped 02:30 of Sunday and the slots coalesced after the outage; bad input is said
at its field; axe finds nothing serious in either theme; no sideways scrolling at 390 px
(the drawing scrolls inside its own region); screenshots at 1280 and 390 px."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from .browser_support import (
    SCREENSHOTS,
    VIEWPORT_HEIGHT,
    WIDTHS,
    Server,
    check_axe_both,
    login,
    screenshot,
)
from .test_ledger_journeys import _settled, no_sideways_scroll

POLICY = {"kind": "daily", "time": "02:30", "zone": "Europe/Berlin", "gap": "skip"}
# The window and the outage the journey types (Berlin wall times).
FORM = {
    "From": "2027-03-20",
    "To (not included)": "2027-04-10",
    "Outage from": "2027-03-30T00:00",
    "Outage to": "2027-04-01T12:00",
    "Duration": "40m",
}


@pytest.fixture(scope="module")
def berlin(server: Server, home: dict[str, Any]) -> Iterator[dict[str, str]]:
    """A Berlin schedule, created and played on 2027-03-15; the server launches its slot
    of 16 March (02:30 CET) and the page is read that morning."""
    server.shift_to(datetime(2027, 3, 15, 12, tzinfo=UTC))
    made = server.cli_here(
        "schedule",
        "create",
        "home",
        "--title",
        "Berlin nightly",
        "--command",
        "true",
        "--policy",
        json.dumps(POLICY),
        "--json",
        actor=server.owner,
    )
    assert made.exit_code == 0, (made.stdout, made.stderr)
    sid = json.loads(made.stdout)["missionId"]
    played = server.cli_here("schedule", "play", sid, actor=server.owner)
    assert played.exit_code == 0, (played.stdout, played.stderr)
    server.shift_to(datetime(2027, 3, 16, 1, 40, tzinfo=UTC))
    _settled(server, sid, 1)
    url = f"{server.base_url}/w/{home['id']}/schedules/{sid}"
    yield {"id": sid, "url": url, "simulate": url + "/simulate"}


def _fill(page: Page) -> None:
    for label, value in FORM.items():
        page.get_by_label(label, exact=True).fill(value)


def _check_result(page: Page) -> None:
    result = page.locator("#result")
    expect(result).to_be_visible()
    counts = result.locator("ul.counts")
    # 21 nightly slots: 28 March's 02:30 does not exist (skipped); the outage from 30
    # March 00:00 to 1 April 12:00 (Berlin) misses 30 and 31 March and 1 April's slots:
    # the scheduler coming back catches up the latest (1 April) and coalesces the others.
    expect(counts.locator('[data-outcome="launched"]')).to_contain_text("18 slots")
    expect(counts.locator('[data-outcome="coalesced"]')).to_contain_text("2 slots")
    expect(counts.locator('[data-outcome="skipped"]')).to_contain_text("1 slot")
    expect(result.locator("#reason-counts")).to_contain_text("DST gap 1")
    expect(result.locator("#reason-counts")).to_contain_text("no scheduler running 2")
    drawing = page.get_by_role("region", name="Timeline")
    svg = drawing.locator("svg.timeline")
    expect(svg).to_have_count(1)
    expect(svg.locator("g.dst")).to_have_attribute("data-at", "2027-03-28T01:00:00Z")
    expect(svg.locator('g.mark[data-outcome="skipped"]')).to_have_attribute(
        "data-reason", "dst-gap"
    )
    dst = result.locator("ul.dst-slots li")
    expect(dst).to_have_count(1)
    expect(dst.first).to_contain_text("2027-03-28 02:30 Europe/Berlin")
    expect(dst.first).to_contain_text("DST gap")


def test_simulating_berlins_dst_weekend_with_an_outage_with_script_on(
    browser: Browser, server: Server, berlin: dict[str, str]
) -> None:
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT})
    try:
        page = context.new_page()
        login(page, server)
        page.goto(berlin["url"])
        # The schedule's page draws its recorded year: the one launch of 16 March.
        year = page.get_by_role("region", name="The last year")
        expect(year.locator("svg.timeline g.mark")).to_have_count(1)
        expect(year.locator('svg.timeline g.mark[data-outcome="launched"]')).to_have_attribute(
            "data-at", "2027-03-16T01:30:00Z"
        )
        expect(page.locator("#year-caption")).to_contain_text("1 slot the ledger recorded")
        check_axe_both(page, "schedule with its last year")
        screenshot(page, "schedule-last-year")
        no_sideways_scroll(page)
        page.get_by_role("link", name="Simulate a year").click()
        expect(page).to_have_url(berlin["simulate"])
        expect(page.get_by_label("From", exact=True)).to_have_value("2027-03-16")
        expect(page.get_by_label("To (not included)")).to_have_value("2028-03-15")
        check_axe_both(page, "simulate (the form)")
        _fill(page)
        page.get_by_role("button", name="Simulate").click()
        expect(page).to_have_url(re.compile(r"/simulate\?run=1&.*#result$"))
        _check_result(page)
        check_axe_both(page, "simulate (a result)")
        screenshot(page, "simulate-berlin")
        no_sideways_scroll(page)
        # The drawing keeps its width and scrolls inside its own region on a phone.
        page.set_viewport_size({"width": WIDTHS[1], "height": VIEWPORT_HEIGHT})
        region = page.get_by_role("region", name="Timeline")
        scrolls = region.evaluate("(el) => el.scrollWidth > el.clientWidth")
        assert scrolls, "the timeline should scroll inside its region at 390 px"
        page.set_viewport_size({"width": WIDTHS[0], "height": VIEWPORT_HEIGHT})
        # Bad input: a window ending before it starts and a malformed duration.
        page.get_by_label("To (not included)").fill("2027-03-01")
        page.get_by_label("Duration", exact=True).fill("forty minutes")
        page.get_by_role("button", name="Simulate").click()
        alerts = page.get_by_role("alert")
        expect(alerts.filter(has_text="the window ends before it starts")).to_have_count(1)
        expect(alerts.filter(has_text="30m-2h")).to_have_count(1)
        to = page.get_by_label("To (not included)")
        expect(to).to_have_attribute("aria-invalid", "true")
        expect(to).to_be_focused()
        expect(page.locator("#result")).to_have_count(0)
        check_axe_both(page, "simulate (refused)")
        screenshot(page, "simulate-refused")
        no_sideways_scroll(page)
    finally:
        context.close()


def test_simulating_with_script_off(
    browser: Browser, server: Server, berlin: dict[str, str]
) -> None:
    context: BrowserContext = browser.new_context(
        viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT}, java_script_enabled=False
    )
    try:
        page = context.new_page()
        login(page, server)
        page.goto(berlin["simulate"])
        expect(page.locator("html")).to_have_class("no-js")
        _fill(page)
        page.get_by_role("button", name="Simulate").click()
        expect(page).to_have_url(re.compile(r"/simulate\?run=1&.*#result$"))
        _check_result(page)
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= WIDTHS[1], f"the page is {wide} px wide at {WIDTHS[1]} px"
        # (axe runs on script: this page is checked with it on, above)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "simulate-noscript-390.png"), full_page=True)
    finally:
        context.close()
