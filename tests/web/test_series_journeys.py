"""The task page in Debian's chromium against a real ``kalends serve`` on a clock set to
5 March 2026 (New York's clocks go forward on the 8th): a due time in the gap is refused
in the form with the transition named and the values kept; the reminder's time follows
the form before it is saved (with script), and the saved schedule shows it; made a daily
series at 02:30 New York, its next dates mark the 8th as a day without an occurrence;
Done with the checklist makes the next occurrence, which is skipped in turn; the series
is paused with the keyboard only; axe in both schemes and screenshots at 1280 and 390
px; with script off the page reads and Done works."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .browser_support import (
    VIEWPORT_HEIGHT,
    WIDTHS,
    Server,
    check_axe_both,
    login,
    screenshot,
)

NY = "America/New_York"
START = datetime(2026, 3, 5, 12, 0, tzinfo=UTC)


def _cli_json(server: Server, *args: str) -> dict[str, Any]:
    done = server.cli_here(*args, "--json", actor=server.owner)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.fixture(scope="module")
def world(server: Server, page: Page) -> dict[str, Any]:
    """The server's clock on 5 March 2026, a list with a task and a checklist item made
    with the CLI, and the module's page signed in as the owner."""
    server.shift_to(START)
    made = _cli_json(server, "list", "add", "Home")
    root = _cli_json(server, "task", "add", "Home", "Feed the cat")
    _cli_json(server, "task", "add", "Home", "Fresh water", "--parent", root["ref"])
    server.login_link = ""  # a link made on the moved clock
    login(page, server)
    return {"list": made, "root": root}


def _timeline(page: Page) -> Any:
    return page.locator("ol.timeline")


def test_schedule_series_done_skip_and_pause_by_keyboard(
    page: Page, server: Server, world: dict[str, Any]
) -> None:
    page.goto(f"{server.base_url}/tasks/{world['root']['id']}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Feed the cat")
    expect(page.get_by_role("link", name="← Home")).to_have_attribute(
        "href", f"/lists/{world['list']['id']}"
    )
    expect(page.locator("ul.checklist")).to_contain_text("Fresh water")

    # A due time in New York's gap is refused in the form, the transition named.
    form = page.locator("form[data-task-schedule]")
    form.get_by_label("A day and time").check()
    form.get_by_label("Due day and time").fill("2026-03-08T02:30")
    form.get_by_label("Zone of that time").fill(NY)
    form.get_by_label("Reminder 1: how long before the due time").fill("15")
    form.get_by_role("button", name="Save schedule").click()
    error = page.locator("#err-due_local")
    expect(error).to_have_text(
        "2026-03-08T02:30:00 does not exist in America/New_York: clocks jump from 02:00 to "
        "03:00 on 2026-03-08"
    )
    due = page.get_by_label("Due day and time")
    expect(due).to_be_focused()
    expect(due).to_have_attribute("aria-invalid", "true")
    expect(due).to_have_value("2026-03-08T02:30")
    expect(page.get_by_label("Reminder 1: how long before the due time")).to_have_value("15")
    check_axe_both(page, "task (a due time in the gap)")
    screenshot(page, "task-dst-refused")

    # With script the reminder's time follows the form before it is saved.
    due.fill("2026-03-06T02:30")
    due.press("Tab")
    expect(page.locator("#rem0-at")).to_contain_text("2026-03-06 02:15 Fri America/New_York")
    expect(page.get_by_label("Reminder 1: how long before the due time")).to_have_value("15")
    page.get_by_role("button", name="Save schedule").click()
    expect(page.locator("#notice")).to_contain_text("Schedule saved.")
    expect(page.locator("#schedule-facts")).to_contain_text("2026-03-06 02:15 Fri America/New_York")

    # Made a daily series at 02:30 New York: the 8th has no 02:30.
    series = page.locator("form.series-form")
    series.get_by_label("Every N days").check()
    expect(series.get_by_label("Every how many days")).to_have_value("1")
    expect(series.locator("#f-s_after")).to_be_hidden()
    # The task's own due wall time and zone are offered.
    expect(series.get_by_label("Due at (HH:MM)")).to_have_value("02:30")
    expect(series.get_by_label("Zone", exact=True)).to_have_value(NY)
    series.get_by_role("button", name="Make it a series").click()
    expect(page.locator("#notice")).to_contain_text("It is a series now.")
    expect(page.locator(".series-card")).to_contain_text("Every day at 02:30 America/New_York")
    expect(_timeline(page)).to_contain_text("Outstanding")
    upcoming = page.locator("ul.upcoming li")
    expect(upcoming).to_have_count(6)
    expect(upcoming.nth(1)).to_contain_text(
        "02:30 does not exist on Sun 8 Mar (clocks go forward) — no occurrence that day"
    )
    expect(upcoming.nth(2)).to_contain_text("2026-03-09 02:30 Mon America/New_York")
    screenshot(page, "task-series")

    # Done with the checklist: the next occurrence is made, fresh.
    page.get_by_label("With its whole checklist").check()
    page.get_by_role("button", name="Done", exact=True).click()
    expect(page.locator("#notice")).to_contain_text("Marked done.")
    page.locator("#notice").get_by_role("link", name=re.compile("^#2 Feed the cat")).click()
    expect(page.locator("#task-state")).to_contain_text("Open")
    expect(_timeline(page).locator("li").nth(0)).to_contain_text("Done")
    expect(_timeline(page).locator("li").nth(1)).to_contain_text("Outstanding")
    expect(page.locator("ul.checklist")).to_contain_text("Fresh water")

    # Skip one: the next occurrence follows.
    page.get_by_role("button", name="Skip this occurrence").click()
    expect(page.locator("#notice")).to_contain_text("Occurrence skipped.")
    expect(_timeline(page).locator("li").nth(1)).to_contain_text("Skipped")
    page.locator("#notice").get_by_role("link", name=re.compile("^#3 Feed the cat")).click()
    rows = _timeline(page).locator("li")
    expect(rows.nth(2)).to_contain_text("No occurrence")
    expect(rows.nth(2)).to_contain_text("02:30 does not exist on Sun 8 Mar")
    expect(rows.nth(3)).to_contain_text("Outstanding")

    # Keyboard only: Tab to "Pause the series" and press Enter.
    page.locator("body").press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("Enter")
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "Pause the series":
            break
    else:
        pytest.fail("Tab never reached Pause the series")
    page.keyboard.press("Enter")
    expect(page.locator("#notice")).to_contain_text("Series paused.")
    expect(page.locator(".series-card")).to_contain_text("Paused")
    check_axe_both(page, "task (a paused series)")
    screenshot(page, "task-series-paused")


def test_with_script_off_the_page_reads_and_done_posts(
    browser: Browser, server: Server, world: dict[str, Any]
) -> None:
    task = _cli_json(server, "task", "add", "Home", "Take out the bins")
    _cli_json(server, "task", "add", "Home", "Recycling", "--parent", task["ref"])
    context = browser.new_context(
        viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT}, java_script_enabled=False
    )
    try:
        page = context.new_page()
        server.login_link = ""
        login(page, server)
        page.goto(f"{server.base_url}/tasks/{task['id']}")
        expect(page.locator("html")).to_have_class("no-js")
        expect(page.get_by_role("heading", level=1)).to_have_text("Take out the bins")
        expect(page.get_by_role("heading", name=re.compile(r"^History \(\d+\)$"))).to_be_visible()
        page.get_by_role("button", name="Done", exact=True).click()
        expect(page.locator("#problem")).to_contain_text("Done was refused")
        page.get_by_label("With its whole checklist").check()
        page.get_by_role("button", name="Done", exact=True).click()
        expect(page.locator("#notice")).to_contain_text("Marked done.")
        expect(page.locator("#task-state")).to_contain_text("Done")
        expect(page.locator("ul.checklist")).to_contain_text("Done")
        # (axe runs on script: this page is checked with it on, in the journey above)
    finally:
        context.close()
