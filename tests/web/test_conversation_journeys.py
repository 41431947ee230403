"""The conversation pages in Debian's chromium against a real ``kalends serve``: the
owner opens a workspace's conversations from its schedules page, starts a thread, is
refused an empty message beside the field (focused), posts one with the keyboard only;
a viewer reads it with no form; with script off a message is posted and read. axe in
both color schemes, screenshots at 1280 and 390 px."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Browser, Page, expect

from .browser_support import (
    VIEWPORT_HEIGHT,
    WIDTHS,
    Server,
    check_axe_both,
    login,
    screenshot,
)

VIEWER = "wendy"


def test_a_thread_started_posted_to_by_keyboard_and_read_by_a_viewer(
    owner_page: Page, browser: Browser, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    page.goto(f"{server.base_url}/w/{home['id']}/schedules")
    page.get_by_role("link", name="Conversations").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Conversations — home")
    expect(page.locator(".empty")).to_contain_text("No conversation in this workspace yet.")
    page.get_by_label("Title").fill("Release notes")
    page.get_by_role("button", name="Start the conversation").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Release notes")
    expect(page.get_by_role("status")).to_contain_text("Conversation started.")
    thread_url = page.url.split("?")[0]

    # An empty message: refused beside the field, which has focus.
    page.get_by_role("button", name="Post").click()
    text = page.get_by_role("textbox", name="Message")
    expect(page.locator("#err-text")).to_have_text("Must be a non-empty string")
    expect(text).to_be_focused()
    expect(text).to_have_attribute("aria-invalid", "true")

    # Keyboard only: type, Tab to Post, Enter.
    text.type("Ship on Friday.\nNotes in the tracker.")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Post")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("Message posted.")
    first = page.locator("#message-1")
    expect(first).to_contain_text("#1")
    expect(first).to_contain_text(server.owner)
    expect(first.locator(".message-text")).to_have_text("Ship on Friday.\nNotes in the tracker.")
    check_axe_both(page, "conversation")
    screenshot(page, "conversation")
    page.goto(f"{server.base_url}/w/{home['id']}/conversations")
    expect(page.get_by_role("link", name="Release notes")).to_be_visible()
    check_axe_both(page, "conversations")
    screenshot(page, "conversations")

    # A viewer reads it, with no form.
    added = server.cli_here("actor", "add", VIEWER, "--name", "Wendy Viewer")
    assert added.exit_code == 0, added.stdout
    shared = server.cli_here(
        "workspace", "member", "set", home["id"], VIEWER, "--role", "viewer", actor=server.owner
    )
    assert shared.exit_code == 0, (shared.stdout, shared.stderr)
    context = browser.new_context(viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT})
    try:
        viewer = context.new_page()
        answer = viewer.goto(server.fresh_login_link(actor=VIEWER))
        assert answer is not None and viewer.url == f"{server.base_url}/"
        viewer.goto(thread_url)
        expect(viewer.locator("#message-1")).to_contain_text("Ship on Friday.")
        expect(viewer.get_by_role("textbox", name="Message")).to_have_count(0)
        expect(viewer.locator("main")).to_contain_text(
            "You are a viewer of this workspace: you can read this conversation"
        )
        check_axe_both(viewer, "conversation (viewer, 390 px)")
    finally:
        context.close()

    # Script off: posting works, the page reads.
    off = browser.new_context(
        viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT}, java_script_enabled=False
    )
    try:
        plain = off.new_page()
        login(plain, server)
        plain.goto(thread_url)
        expect(plain.locator("html")).to_have_class("no-js")
        plain.get_by_role("textbox", name="Message").fill("Posted without script.")
        plain.get_by_role("button", name="Post").click()
        expect(plain.locator("#message-2")).to_contain_text("Posted without script.")
    finally:
        off.close()
