"""The slot ledger in Debian's chromium against a real ``kalends serve`` (issue 24 §1):
a schedule at 02:30 New York that skips DST gaps runs through the weekend of 2027-03-14
on the server's own scheduler, then the server is down for three days; its page shows the
skipped 02:30 of Sunday and the slots coalesced into the catch-up inline in History, the
**Why didn't it run?** form answers for 2027-03-14T02:30 with script on and off, and the
full ledger page counts, filters and pages; axe finds nothing serious (with script on:
axe is a script) and each page is photographed at 1280 and 390 px."""

from __future__ import annotations

import json
import re
import time
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

POLICY = {"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "skip"}
DST_GAP = (
    "Skipped — DST gap: 02:30 does not exist in America/New_York on 2027-03-14: "
    "clocks jump from 02:00 to 03:00"
)


def _show(server: Server, sid: str) -> dict[str, Any]:
    shown = server.cli_here("schedule", "show", sid, "--json", actor=server.owner)
    assert shown.exit_code == 0, (shown.stdout, shown.stderr)
    doc: dict[str, Any] = json.loads(shown.stdout)
    return doc


def _settled(server: Server, sid: str, count: int, within: float = 30.0) -> dict[str, Any]:
    """Waits until the schedule has settled ``count`` passages and none is pending."""
    deadline = time.monotonic() + within
    while True:
        doc = _show(server, sid)
        if doc["counters"]["settled"] >= count and doc["pending"] is None:
            return doc
        assert time.monotonic() < deadline, (
            f"passage {count} did not settle: {doc['counters']}, {doc['pending']}"
        )
        time.sleep(0.25)


def no_sideways_scroll(page: Page) -> None:
    """At a phone's width (390 px) the page needs no sideways scrolling."""
    before = page.viewport_size
    page.set_viewport_size({"width": WIDTHS[1], "height": VIEWPORT_HEIGHT})
    try:
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= WIDTHS[1], f"{page.url} is {wide} px wide at {WIDTHS[1]} px"
    finally:
        if before is not None:
            page.set_viewport_size(before)


def _at(server: Server, when: str) -> None:
    server.shift_to(datetime.fromisoformat(when).replace(tzinfo=UTC))


@pytest.fixture(scope="module")
def nightly(server: Server, home: dict[str, Any]) -> Iterator[dict[str, str]]:
    """The schedule's story, lived by the server: created and played on Friday 12 March
    2027, it launches on Saturday at 02:30 EST; Sunday's 02:30 does not exist; Monday's
    launches at 02:30 EDT; then the server is stopped until Thursday noon (UTC), when it
    catches up Thursday's slot and coalesces Tuesday's and Wednesday's into it."""
    _at(server, "2027-03-12T12:00:00")
    made = server.cli_here(
        "schedule",
        "create",
        "home",
        "--title",
        "Nightly across DST",
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
    _at(server, "2027-03-13T07:30:00")
    _settled(server, sid, 1)
    _at(server, "2027-03-15T06:30:00")
    _settled(server, sid, 2)
    server.stop()  # the outage: no scheduler runs
    _at(server, "2027-03-18T12:00:00")
    server.restart()
    doc = _settled(server, sid, 3)
    catch_up = next(r for r in doc["results"] if r["slot"] == "2027-03-18T06:30:00Z")
    yield {
        "id": sid,
        "url": f"{server.base_url}/w/{home['id']}/schedules/{sid}",
        "catch_up": catch_up["passageId"],
    }


@pytest.fixture(scope="module")
def signed_in(browser: Browser, server: Server, nightly: dict[str, str]) -> Iterator[Page]:
    """A page signed in as the owner after the story (its clock is past the outage)."""
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT})
    try:
        page = context.new_page()
        login(page, server)
        yield page
    finally:
        context.close()


def test_history_shows_the_dst_gap_and_the_coalesced_slots_inline(
    signed_in: Page, nightly: dict[str, str]
) -> None:
    page = signed_in
    page.goto(nightly["url"])
    history = page.get_by_role("region", name=re.compile(r"^History"))
    rows = history.locator("tbody tr")
    expect(rows).to_have_count(6)
    expect(rows.nth(0)).to_contain_text("2027-03-18 02:30 Thu America/New_York")
    expect(rows.nth(0)).to_contain_text("started 5 h 30 min after its slot (caught up)")
    for n in (1, 2):
        expect(rows.nth(n)).to_contain_text("Coalesced")
        expect(rows.nth(n)).to_contain_text("— no scheduler was running")
        link = rows.nth(n).get_by_role("link", name=re.compile("catch-up passage"))
        expect(link).to_have_attribute("href", re.compile(nightly["catch_up"] + "$"))
    expect(rows.nth(4)).to_contain_text(DST_GAP)
    expect(rows.nth(4)).to_contain_text("2027-03-14 02:30 America/New_York")
    expect(rows.nth(4).locator(".badge")).to_have_text(re.compile("Skipped"))
    check_axe_both(page, "schedule with its ledger in History")
    screenshot(page, "ledger-history")
    no_sideways_scroll(page)


def test_why_answers_for_the_missing_half_past_two_with_script_on(
    signed_in: Page, nightly: dict[str, str]
) -> None:
    page = signed_in
    page.goto(nightly["url"])
    page.get_by_label(re.compile("^Date and time in America/New_York")).fill("2027-03-14T02:30")
    page.get_by_role("button", name="Explain this time").click()
    expect(page).to_have_url(re.compile(r"\?at=2027-03-14T02%3A30#why-slot$"))
    answer = page.locator("#why-answer")
    expect(answer).to_contain_text("Skipped")
    expect(answer).to_contain_text("The slot at 2027-03-14")
    expect(answer).to_contain_text("DST gap")
    expect(page.get_by_label(re.compile("^Date and time"))).to_have_value("2027-03-14T02:30")
    check_axe_both(page, "why (a DST gap)")
    screenshot(page, "ledger-why")
    no_sideways_scroll(page)
    # A coalesced slot names the catch-up passage it was folded into.
    page.get_by_label(re.compile("^Date and time")).fill("2027-03-16T02:30")
    page.get_by_role("button", name="Explain this time").click()
    expect(answer).to_contain_text("Coalesced")
    expect(answer.get_by_role("link", name=re.compile(nightly["catch_up"]))).to_have_count(2)
    # Bad input is said at the field, and read out.
    page.goto(nightly["url"] + "?at=2027-03-14")
    expect(page.get_by_role("alert")).to_contain_text("a date alone names no slot")
    field = page.get_by_label(re.compile("^Date and time"))
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_be_focused()
    check_axe_both(page, "why (refused)")
    screenshot(page, "ledger-why-refused")


def test_why_answers_with_script_off(
    browser: Browser, server: Server, nightly: dict[str, str]
) -> None:
    context: BrowserContext = browser.new_context(
        viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT}, java_script_enabled=False
    )
    try:
        page = context.new_page()
        login(page, server)
        page.goto(nightly["url"])
        expect(page.locator("html")).to_have_class("no-js")
        page.get_by_label(re.compile("^Date and time")).fill("2027-03-14T02:30")
        page.get_by_role("button", name="Explain this time").click()
        expect(page).to_have_url(re.compile(r"\?at=2027-03-14T02%3A30#why-slot$"))
        expect(page.locator("#why-answer")).to_contain_text("DST gap")
        expect(page.locator("#why-answer")).to_contain_text("Skipped")
        # (axe runs on script: this page is checked with it on, above)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "ledger-why-noscript-390.png"), full_page=True)
    finally:
        context.close()


def test_the_full_ledger_counts_filters_and_pages(signed_in: Page, nightly: dict[str, str]) -> None:
    page = signed_in
    page.goto(nightly["url"])
    page.get_by_role("link", name="Full ledger").click()
    expect(page).to_have_url(nightly["url"] + "/ledger")
    expect(page.get_by_role("heading", level=1)).to_have_text("Slot ledger — Nightly across DST")
    counts = page.get_by_role("region", name=re.compile("^Counts"))
    expect(counts).to_contain_text("Launched 3 slots")
    expect(counts).to_contain_text("Coalesced 2 slots")
    expect(counts).to_contain_text("Skipped 1 slot")
    rows = page.locator("table.ledger tbody tr")
    expect(rows).to_have_count(6)
    expect(rows.nth(0)).to_contain_text("2027-03-13")  # earliest first
    check_axe_both(page, "ledger")
    screenshot(page, "ledger-page")
    no_sideways_scroll(page)
    page.get_by_label("From").fill("2027-03-14")
    page.get_by_label("To (included)").fill("2027-03-14")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"/ledger\?from=2027-03-14&to=2027-03-14$"))
    expect(rows).to_have_count(1)
    expect(rows.nth(0)).to_contain_text(DST_GAP)
    expect(page.get_by_role("link", name="All days")).to_be_visible()
    check_axe_both(page, "ledger (one day)")
    screenshot(page, "ledger-page-filtered")
