"""The missions pages in Debian's chromium against a real ``kalends serve``: the schedules
page and a schedule's page read, checked by axe in both color schemes and photographed;
Play, Run now and the passage's log followed live, Pause and Stop through the controls;
a reply lost after the server wrote (the server killed) shows the control uncertain, and
Check status resolves it once the server is back, without the control being sent again;
keyboard only; an **i** tip opened by touch; the dark theme chosen in the page; and the
core actions with script off."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from playwright.sync_api import Browser, Page, expect

from .browser_support import (
    VIEWPORT_HEIGHT,
    WIDTHS,
    LostReplyProxy,
    Server,
    check_axe,
    check_axe_both,
    login,
    screenshot,
    wait_for,
)

# A passage that says something, then runs long enough to be watched while it runs.
PASSAGE_COMMAND = "sh -c 'echo hello from the passage; sleep 3; echo done'"


def create_schedule(server: Server, title: str, *extra: str) -> dict[str, Any]:
    """A paused schedule in ``home`` made with the CLI as the owner: its receipt."""
    done = server.cli_here(
        "schedule",
        "create",
        "home",
        "--title",
        title,
        "--command",
        PASSAGE_COMMAND,
        *(extra or ("--daily", "02:30", "--zone", "America/New_York")),
        "--json",
        actor=server.owner,
    )
    assert done.exit_code == 0, (done.stdout, done.stderr)
    receipt: dict[str, Any] = json.loads(done.stdout)
    return receipt


def schedule_url(server: Server, home: dict[str, Any], receipt: dict[str, Any]) -> str:
    return f"{server.base_url}/w/{home['id']}/schedules/{receipt['missionId']}"


def state_of(server: Server, receipt: dict[str, Any]) -> str:
    shown = server.cli_here("schedule", "show", receipt["missionId"], "--json", actor=server.owner)
    assert shown.exit_code == 0, shown.stdout
    state: str = json.loads(shown.stdout)["state"]
    return state


def settled(server: Server, receipt: dict[str, Any], within: float = 20.0) -> None:
    """Waits until the schedule's passage has settled (its document says so)."""
    deadline = time.monotonic() + within
    while True:
        shown = server.cli_here(
            "schedule", "show", receipt["missionId"], "--json", actor=server.owner
        )
        doc = json.loads(shown.stdout)
        if doc["counters"]["settled"] >= 1 and doc["pending"] is None:
            return
        assert time.monotonic() < deadline, f"the passage did not settle: {doc['pending']}"
        time.sleep(0.2)


def control(page: Page, label: str) -> None:
    """Presses a control by its label, opening the menu first when it is in there."""
    button = page.locator("#controls button", has_text=re.compile(f"^{label}$"))
    if not button.is_visible():
        page.locator("#controls summary", has_text="More actions").click()
    button.click()


def test_schedules_play_run_now_log_pause_stop(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    receipt = create_schedule(server, "Nightly build")
    page.goto(f"{server.base_url}/w/{home['id']}/schedules")
    expect(page.get_by_role("heading", level=1)).to_have_text("Schedules — home")
    row = page.get_by_role("row", name=re.compile("Nightly build"))
    expect(row).to_contain_text("Every day at 02:30 (America/New_York)")
    expect(row).to_contain_text("Paused")
    check_axe_both(page, "schedules")
    screenshot(page, "schedules")

    row.get_by_role("link", name="Nightly build").click()
    expect(page).to_have_url(schedule_url(server, home, receipt))
    expect(page.get_by_role("heading", level=1)).to_have_text("Nightly build")
    check_axe_both(page, "schedule (paused)")
    screenshot(page, "schedule-paused")

    control(page, "Play")
    result = page.locator("#control-result")
    expect(result).to_contain_text("Play applied")
    assert state_of(server, receipt) == "running"
    result.get_by_role("link", name="Reload the schedule").click()
    # Until the server's scheduler holds the schedule's wake (a moment after Play), the
    # page rightly shows it Interrupted: no live scheduler holds its work. Read again.
    deadline = time.monotonic() + 15
    while "Running" not in page.locator(".badge").first.inner_text():
        assert time.monotonic() < deadline, "no scheduler took the played schedule"
        page.wait_for_timeout(250)
        page.reload()
    expect(page.locator(".badge").first).to_contain_text("Running")

    control(page, "Run now")
    expect(result).to_contain_text("Run now applied")
    result.get_by_role("link", name="Reload the schedule").click()
    passage = page.locator("#pending-h + p a").first
    expect(passage).to_be_visible(timeout=15_000)
    passage.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Passage")
    log = page.locator("pre.log")
    expect(log).to_contain_text("hello from the passage", timeout=20_000)
    check_axe_both(page, "passage (running)")
    screenshot(page, "passage-running")
    # The log follows by itself until the passage ends.
    expect(log).to_contain_text("done", timeout=20_000)
    # Its settlement is a revision of the schedule: wait for it, so that the controls
    # below are sent from the revision that holds (else each is, rightly, a conflict).
    settled(server, receipt)

    page.goto(schedule_url(server, home, receipt))
    control(page, "Pause")
    expect(result).to_contain_text("Pause applied")
    assert state_of(server, receipt) == "paused"
    result.get_by_role("link", name="Reload the schedule").click()
    control(page, "Stop")
    expect(result).to_contain_text("Stop applied")
    result.get_by_role("link", name="Reload the schedule").click()
    expect(page.locator(".badge").first).to_contain_text("Stopped")
    expect(page.get_by_role("heading", name="History (1)")).to_be_visible()
    check_axe_both(page, "schedule (stopped, with history)")
    screenshot(page, "schedule-history")


@pytest.fixture
def proxied(browser: Browser, server: Server) -> Iterator[tuple[Page, LostReplyProxy]]:
    """A page of its own that reaches the server through the lost-reply proxy."""
    with LostReplyProxy(server.port) as proxy:
        context = browser.new_context(viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT})
        try:
            page = context.new_page()
            login(page, server, via=proxy.base_url)
            yield page, proxy
        finally:
            context.close()


def test_a_reply_lost_after_the_write_is_uncertain_until_check_status(
    proxied: tuple[Page, LostReplyProxy], server: Server, home: dict[str, Any]
) -> None:
    page, proxy = proxied
    receipt = create_schedule(server, "Lost reply")
    page.goto(f"{proxy.base_url}/w/{home['id']}/schedules/{receipt['missionId']}")
    request_id = page.locator("#controls form:has(button:text-is('Play')) [name=request_id]")
    sent_id = request_id.input_value()
    sent: list[dict[str, list[str]]] = []
    page.on(
        "request",
        lambda r: (
            sent.append(parse_qs(r.post_data or ""))
            if r.method == "POST" and r.url.endswith("/control")
            else None
        ),
    )
    trap = proxy.arm("POST", "/control", server.kill)
    control(page, "Play")
    wait_for(trap.fired, "the lost reply")
    uncertain = page.locator("#uncertain")
    expect(uncertain).to_contain_text("Uncertain")
    expect(uncertain).to_contain_text(sent_id)
    expect(page.locator("#controls button").first).to_be_disabled()
    # The write happened before the server died: the database says so.
    assert state_of(server, receipt) == "running"

    server.restart()
    proxy.upstream_port = server.port
    uncertain.get_by_role("link", name="Check status").click()
    expect(page.locator("#control-status")).to_contain_text("Play applied")
    expect(page.locator("#control-status")).to_contain_text(sent_id)
    # The page sent the control once, with the request ID it rendered: never a fresh one.
    # (Chromium itself may repeat a request whose reused connection closed without an
    # answer; it is the same request, and the service answers a repeat with the first
    # outcome, so Play acted once: revision 2.)
    assert [fields["request_id"] for fields in sent] == [[sent_id]]
    shown = server.cli_here("schedule", "show", receipt["missionId"], "--json", actor=server.owner)
    assert json.loads(shown.stdout)["revision"] == 2
    check_axe_both(page, "schedule (uncertain control)")
    screenshot(page, "schedule-uncertain")


def test_keyboard_only_reaches_and_presses_a_control_and_a_tip(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    receipt = create_schedule(server, "Keyboard")
    page.goto(schedule_url(server, home, receipt))
    page.locator("body").press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("Enter")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "Play":
            break
    else:
        pytest.fail("Tab never reached the Play control")
    page.keyboard.press("Enter")
    expect(page.locator("#control-result")).to_contain_text("Play applied")
    tip = page.get_by_role("button", name="About Technical details")
    tip.focus()
    expect(page.locator("#tech-tip")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#tech-tip")).to_be_hidden()
    page.locator("details.technical > summary").focus()
    page.keyboard.press("Enter")
    expect(page.locator("details.technical")).to_have_attribute("open", "")


def test_a_tap_opens_an_i_tip(browser: Browser, server: Server, home: dict[str, Any]) -> None:
    receipt = create_schedule(server, "Touch")
    context = browser.new_context(
        viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT}, has_touch=True, is_mobile=True
    )
    try:
        page = context.new_page()
        login(page, server)
        page.goto(schedule_url(server, home, receipt))
        tip = page.get_by_role("button", name="About Technical details")
        tip.tap()
        expect(page.locator("#tech-tip")).to_be_visible()
        expect(tip).to_have_attribute("aria-expanded", "true")
        page.get_by_role("heading", level=1).tap()
        expect(page.locator("#tech-tip")).to_be_hidden()
    finally:
        context.close()


def test_the_dark_theme_chosen_in_the_page_stays(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    page.goto(f"{server.base_url}/w/{home['id']}/schedules")
    page.get_by_label("Theme").select_option("dark")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(21, 23, 27)", background
    check_axe(page, "schedules (dark theme chosen)")
    page.goto(f"{server.base_url}/")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    page.get_by_label("Theme").select_option("")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("html")).not_to_have_attribute("data-theme", "dark")


def test_with_script_off_pages_read_and_controls_post(
    browser: Browser, server: Server, home: dict[str, Any]
) -> None:
    receipt = create_schedule(server, "No script")
    context = browser.new_context(
        viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT}, java_script_enabled=False
    )
    try:
        page = context.new_page()
        login(page, server)
        page.goto(schedule_url(server, home, receipt))
        expect(page.locator("html")).to_have_class("no-js")
        expect(page.get_by_role("heading", name="Upcoming (10)")).to_be_visible()
        page.locator("#controls button", has_text="Play").click()
        expect(page.locator("#control-status")).to_contain_text("Play applied")
        assert "?request=" in page.url
        # Without script the Play's word on supervision is said on the landing page.
        expect(page.locator(".supervision[role=status]")).to_contain_text("Service supervision")
        assert state_of(server, receipt) == "running"
        page.locator("#controls summary").click()
        page.locator("#controls button", has_text="Stop").click()
        expect(page.locator("#control-status")).to_contain_text("Stop applied")
        page.goto(f"{server.base_url}/")
        expect(page.get_by_role("heading", level=1)).to_have_text("Now")
        expect(
            page.get_by_role("heading", name=re.compile("^Launches in the next 24 hours"))
        ).to_be_visible()
        # (axe runs on script: these pages are checked with it on, in the other tests)
    finally:
        context.close()


def test_the_now_page_reads_and_passes_axe(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    receipt = create_schedule(server, "Soon")
    page.goto(schedule_url(server, home, receipt))
    control(page, "Play")
    expect(page.locator("#control-result")).to_contain_text("Play applied")
    page.goto(f"{server.base_url}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Now")
    upcoming = page.get_by_role("region", name=re.compile("^Launches in the next 24 hours"))
    expect(upcoming.get_by_role("link", name="Soon")).to_be_visible()
    check_axe_both(page, "now")
    screenshot(page, "now")


def test_the_sign_in_and_error_pages_pass_axe(browser: Browser, server: Server) -> None:
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT})
    try:
        page = context.new_page()
        page.goto(f"{server.base_url}/w/00000000-0000-0000-0000-000000000000/schedules")
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to kalends")
        check_axe_both(page, "sign-in")
        page.get_by_label("Handle").fill(server.owner)
        page.get_by_label("Password").fill("not the password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_be_visible()
        check_axe_both(page, "sign-in (refused)")
        screenshot(page, "sign-in-refused")
        login(page, server)
        page.goto(f"{server.base_url}/w/00000000-0000-0000-0000-000000000000/schedules")
        expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
        check_axe_both(page, "not found")
    finally:
        context.close()
