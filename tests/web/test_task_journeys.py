"""The task list pages in Debian's chromium against a real ``kalends serve``: a list made
in the page and shared with a viewer (who sees no write control), a checklist of three
levels built through the add form, due chips and priority in words, reordering by
keyboard (Alt+arrows) and by dragging a handle with the pointer, completing a task with
its checklist; then a touch journey on a phone's width (taps, and a finger dragging a
handle) and the core actions with script off. Each page is checked by axe in both color
schemes where script runs, and photographed at 1280 and 390 px."""

from __future__ import annotations

import json
import re
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

VIEWER = "vic"


def cli(server: Server, *args: str, actor: str | None = None) -> dict[str, Any]:
    """``kalends ARGS --json`` as ``actor`` (the owner by default) on the server's
    database: what it printed."""
    done = server.cli_here(*args, "--json", actor=actor or server.owner)
    assert done.exit_code == 0, (args, done.stdout, done.stderr)
    printed: dict[str, Any] = json.loads(done.stdout)
    return printed


def schedule(server: Server, task: str, *options: str) -> None:
    """``kalends task schedule TASK OPTIONS`` at the task's current revision."""
    revision = cli(server, "task", "show", task)["revision"]
    cli(server, "task", "schedule", task, "--expect", str(revision), *options)


def titles(page: Page, parent: str | None = None) -> list[str]:
    """The titles of the top level of the tree (or of ``parent``'s checklist), in order."""
    scope = "ul.tree[data-reorder] > li" if parent is None else f"#task-{parent} > ul > li"
    found: list[str] = page.locator(f"{scope} > .task-row .task-title").all_inner_texts()
    return found


def row(page: Page, title: str) -> Any:
    return page.locator("li.task-item", has=page.locator(f".task-title:text-is('{title}')")).last


def touch_drag(page: Page, item: Any, onto: Any) -> None:
    """One finger on ``item``'s drag handle, moved in steps to the top quarter of
    ``onto``'s row and lifted: real touch events through the browser's input layer, which
    the page sees as pointer events of type touch."""
    # Both rows on the screen: the target's in the middle.
    onto.evaluate("el => el.scrollIntoView({block: 'center'})")
    handle = item.locator(":scope > .task-row [data-drag]").bounding_box()
    target = onto.locator(":scope > .task-row").bounding_box()
    assert handle is not None and target is not None
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    to_y = target["y"] + target["height"] / 4
    cdp = page.context.new_cdp_session(page)

    def send(kind: str, points: list[dict[str, float]]) -> None:
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    send("touchStart", [{"x": x, "y": y}])
    for i in range(1, 9):
        send("touchMove", [{"x": x, "y": y + (to_y - y) * i / 8}])
    send("touchEnd", [])
    cdp.detach()


def add_task(page: Page, title: str, under: str | None = None) -> None:
    """Adds a task through the add form (under ``under`` by its row's Add item link)."""
    if under is not None:
        row(page, under).locator(":scope > .task-row").get_by_role(
            "link", name=f"Add item under {under}"
        ).click()
        expect(page.get_by_label("Place")).to_have_value(re.compile(".+"))
    page.get_by_label("Title").fill(title)
    page.get_by_role("button", name="Add task").click()
    expect(page.locator("#said")).to_contain_text(f"Added: “{title}”")


def test_a_shared_list_built_reordered_and_completed_with_its_checklist(
    owner_page: Page, browser: Browser, server: Server
) -> None:
    page = owner_page
    added = server.cli_here("actor", "add", VIEWER, "--name", "Vic Viewer")
    assert added.exit_code == 0, added.stdout
    page.goto(f"{server.base_url}/lists")
    expect(page.get_by_role("heading", level=1)).to_have_text("Task lists")
    page.get_by_label("Name").fill("Trip")
    page.get_by_role("button", name="Create list").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Trip")
    list_url = page.url.split("?")[0]

    # Share with a viewer through the owner's form.
    page.get_by_label("Person (handle)").fill(VIEWER)
    page.get_by_label("Role").select_option("viewer")
    page.get_by_role("button", name="Save role").click()
    expect(page.locator("#said")).to_contain_text("Members changed")
    expect(page.get_by_role("row", name=re.compile(f"{VIEWER} .*viewer"))).to_be_visible()

    # A checklist of three levels, and siblings to reorder.
    add_task(page, "Pack")
    add_task(page, "Clothes", under="Pack")
    add_task(page, "Socks", under="Clothes")
    add_task(page, "Tickets")
    add_task(page, "Passport")
    assert titles(page) == ["Pack", "Tickets", "Passport"]
    pack = row(page, "Pack").get_attribute("data-task")
    tickets = row(page, "Tickets").get_attribute("data-task")
    assert pack and tickets
    today = server.now().date().isoformat()
    schedule(server, tickets, "--due", today, "--priority", "1")
    schedule(server, pack, "--due", "2020-01-01")
    page.goto(list_url)
    expect(row(page, "Tickets")).to_contain_text("today")
    expect(row(page, "Tickets")).to_contain_text("high priority")
    expect(row(page, "Pack").locator(":scope > .task-row")).to_contain_text("overdue")
    expect(page.locator("#task-" + pack + " > ul > li > ul .task-title")).to_have_text("Socks")
    check_axe_both(page, "list (owner)")
    screenshot(page, "task-list")

    # Keyboard: Alt+ArrowUp on a focused task moves it up; focus comes back to it.
    row(page, "Passport").locator(".task-title").first.focus()
    page.keyboard.press("Alt+ArrowUp")
    expect(page.locator("#said")).to_contain_text("Moved: “Passport”")
    assert titles(page) == ["Pack", "Passport", "Tickets"]
    expect(page.locator(":focus")).to_have_text("Passport")
    # The handle answers the arrows alone.
    row(page, "Passport").locator("[data-drag]").first.focus()
    page.keyboard.press("ArrowDown")
    expect(page.locator("#said")).to_contain_text("Moved: “Passport”")
    assert titles(page) == ["Pack", "Tickets", "Passport"]
    expect(page.locator(":focus")).to_have_attribute("data-drag", "")

    # Pointer: drag Passport's handle above Pack (all of the tree in view).
    page.evaluate("window.scrollTo(0, 0)")
    handle = row(page, "Passport").locator("[data-drag]").first.bounding_box()
    target = row(page, "Pack").locator(".task-row").first.bounding_box()
    assert handle and target
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(target["x"] + 40, target["y"] + 10, steps=8)
    expect(row(page, "Pack")).to_have_class(re.compile("drop-before"))
    page.mouse.up()
    expect(page.locator("#said")).to_contain_text("Moved: “Passport”")
    assert titles(page) == ["Passport", "Pack", "Tickets"]

    # Done on Pack alone is refused (open items); with its items, all are done.
    pack_row = row(page, "Pack").locator(":scope > .task-row")
    pack_row.get_by_role("button", name="Done: Pack").click()
    expect(page.locator("#refused")).to_contain_text("open checklist item(s) remain")
    row(page, "Pack").locator(":scope > .task-row").get_by_label("with its 2 open items").check()
    row(page, "Pack").locator(":scope > .task-row").get_by_role("button", name="Done: Pack").click()
    expect(page.locator("#said")).to_contain_text("Completed: “Pack”")
    for title in ("Pack", "Clothes", "Socks"):
        expect(row(page, title).locator(":scope > .task-row .state-word")).to_have_text("done")
    check_axe_both(page, "list (after completing)")

    # Keyboard only: from the top of the page, Tab reaches Passport's Done; Enter presses it.
    page.goto(list_url)
    page.locator("body").press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('aria-label')") == "Done: Passport":
            break
    else:
        pytest.fail("Tab never reached Passport's Done")
    page.keyboard.press("Enter")
    expect(page.locator("#said")).to_contain_text("Completed: “Passport”")

    # The Now page lists the task due today.
    page.goto(f"{server.base_url}/")
    due = page.locator("section.due-list")
    expect(due).to_contain_text("Tickets")
    expect(due).to_contain_text("due today")
    check_axe_both(page, "now (tasks due)")
    screenshot(page, "now-tasks-due")

    # A stale page: Tickets is completed elsewhere; its Done shows what was sent and what holds.
    page.goto(list_url)
    revision = cli(server, "task", "show", tickets)["revision"]
    cli(server, "task", "done", tickets, "--expect", str(revision))
    row(page, "Tickets").get_by_role("button", name="Done: Tickets").click()
    conflict = page.locator("#conflict")
    expect(conflict).to_contain_text("“Tickets” changed before your Done arrived")
    expect(conflict).to_contain_text(f"Done at revision {revision}")
    expect(conflict).to_contain_text(f"completed at revision {revision + 1}")
    check_axe_both(page, "list (conflict)")
    screenshot(page, "task-list-conflict")

    # The viewer sees the list and no write control.
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT})
    try:
        seen = context.new_page()
        seen.goto(server.fresh_login_link(actor=VIEWER))
        seen.goto(f"{server.base_url}/lists")
        expect(seen.get_by_role("row", name=re.compile("Trip"))).to_contain_text("viewer")
        check_axe_both(seen, "lists (viewer)")
        screenshot(seen, "task-lists-viewer")
        seen.get_by_role("link", name="Trip").click()
        expect(seen.get_by_text("You are a viewer of this list")).to_be_visible()
        expect(seen.locator(".task-title")).to_have_count(5)
        expect(seen.get_by_role("button", name=re.compile("^(Done|Reopen|Skip)"))).to_have_count(0)
        expect(seen.locator("form.row-actions, [data-drag], #add, #share")).to_have_count(0)
        check_axe_both(seen, "list (viewer)")
        screenshot(seen, "task-list-viewer")
    finally:
        context.close()


def test_touch_and_script_off_journeys(browser: Browser, server: Server) -> None:
    made = cli(server, "list", "add", "Chores")
    for title in ("Dishes", "Laundry", "Bins"):
        cli(server, "task", "add", made["id"], title)
    url = f"{server.base_url}/lists/{made['id']}"

    touch = browser.new_context(
        viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT}, has_touch=True, is_mobile=True
    )
    try:
        page = touch.new_page()
        login(page, server)
        page.goto(url)
        row(page, "Dishes").get_by_role("button", name="Move “Dishes” down").tap()
        expect(page.locator("#said")).to_contain_text("Moved: “Dishes”")
        assert titles(page) == ["Laundry", "Dishes", "Bins"]
        # A finger drags Bins' handle above Laundry: touch events as a phone sends them.
        touch_drag(page, row(page, "Bins"), row(page, "Laundry"))
        expect(page.locator("#said")).to_contain_text("Moved: “Bins”")
        assert titles(page) == ["Bins", "Laundry", "Dishes"]
        row(page, "Bins").get_by_role("button", name="Done: Bins").tap()
        expect(page.locator("#said")).to_contain_text("Completed: “Bins”")
        check_axe_both(page, "list (touch, 390 px)")
        screenshot(page, "task-list-touch")
    finally:
        touch.close()

    off = browser.new_context(
        viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT}, java_script_enabled=False
    )
    try:
        page = off.new_page()
        login(page, server)
        page.goto(url)
        expect(page.locator("html")).to_have_class("no-js")
        expect(page.locator("[data-drag]").first).to_be_hidden()
        row(page, "Laundry").get_by_role("button", name="Done: Laundry").click()
        expect(page.locator("#said")).to_contain_text("Completed: “Laundry”")
        row(page, "Bins").get_by_role("button", name="Reopen: Bins").click()
        expect(page.locator("#said")).to_contain_text("Reopened: “Bins”")
        row(page, "Laundry").get_by_role("button", name="Move “Laundry” up").click()
        assert titles(page) == ["Laundry", "Bins", "Dishes"]
        page.goto(f"{server.base_url}/lists")
        expect(page.get_by_role("row", name=re.compile("Chores"))).to_contain_text("owner")
        # (axe runs on script: these pages are checked with it on, above)
    finally:
        off.close()
