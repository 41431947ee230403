"""The Settings page in Debian's chromium against a real ``kalends serve``: a JSON web hook
on a real local HTTP receiver added as a push destination (shown only redacted), sent a
test message that arrives; a task given a due time and a push reminder (with the CLI),
which the server's own delivery loop sends to that receiver once its clock passes the
reminder; an API token created (its secret shown once); a calendar feed created (its
address shown once, the task in it); the 12-hour clock and the dark theme chosen; axe in
both schemes and screenshots at 1280 and 390 px; with script off a destination is added
and removed, the token and the feed revoked."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from playwright.sync_api import Browser, expect

from reminders import conftest as receivers
from reminders.conftest import HttpReceiver

from .browser_support import VIEWPORT_HEIGHT, WIDTHS, Server, check_axe_both, login, screenshot

# The real local HTTP receiver of the reminder tests.
http_receiver = receivers.http_receiver

SECRET = "journey-hook-secret"
TASK = "Water the plants"
DELIVERY_WITHIN = 20.0


def _cli_json(server: Server, *args: str) -> dict[str, Any]:
    done = server.cli_here(*args, "--json", actor=server.owner)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _wait_for(receiver: HttpReceiver, count: int, what: str) -> None:
    deadline = time.monotonic() + DELIVERY_WITHIN
    while len(receiver.received()) < count:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _local(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def test_destination_test_send_reminder_delivery_token_and_clock(
    browser: Browser, server: Server, http_receiver: HttpReceiver
) -> None:
    # Tomorrow 14:30 UTC on the server's clock: the 12-hour clock reads 2:30 PM.
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    server.shift_to(datetime(tomorrow.year, tomorrow.month, tomorrow.day, 14, 30, tzinfo=UTC))
    server.login_link = ""  # a link made on the moved clock
    context = browser.new_context(
        viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT}, timezone_id="UTC"
    )
    try:
        page = context.new_page()
        login(page, server)
        page.goto(f"{server.base_url}/settings")
        expect(page.get_by_role("heading", name="Settings", level=1)).to_be_visible()
        check_axe_both(page, "the empty Settings page")

        # A malformed URL: said beside the field, which has the focus; nothing added.
        field = page.get_by_label("Apprise URL")
        field.fill(f"not a url {SECRET}")
        page.get_by_role("button", name="Add destination").click()
        expect(page.locator("#err-dest_url")).to_contain_text("Not an Apprise URL")
        expect(page.get_by_label("Apprise URL")).to_be_focused()
        expect(page.get_by_label("Apprise URL")).to_have_attribute("aria-invalid", "true")
        expect(page.get_by_text("No push destination yet")).to_be_visible()
        assert SECRET not in page.content()
        check_axe_both(page, "the Settings page with an error beside a field")
        screenshot(page, "settings-error")

        # Add the receiver as a push destination: listed only in redacted form.
        url = http_receiver.json_url(f"hooks/{SECRET}")
        page.get_by_role("radio", name=re.compile("^Push")).check()
        page.get_by_label("Apprise URL").fill(url)
        page.get_by_role("button", name="Add destination").click()
        expect(page.get_by_text("Destination added.")).to_be_visible()
        shown = page.locator("code.dest")
        expect(shown).to_have_text(f"json://127.0.0.1:{http_receiver.port}/****/****")
        assert SECRET not in page.content()

        # A test message reaches the receiver now.
        page.get_by_role("button", name="Send a test message to push destination 1").click()
        expect(page.locator("#test-result")).to_contain_text("Test message sent")
        _wait_for(http_receiver, 1, "the test message")
        [tested] = http_receiver.received()
        assert tested.path == f"/hooks/{SECRET}"
        assert tested.json()["title"] == "kalends test message"

        # An API token: its secret shown once.
        page.get_by_label("Name").fill("journey laptop")
        page.get_by_label("Expires after (days)").fill("30")
        page.get_by_role("button", name="Create token").click()
        secret = page.locator("#new-token-secret")
        expect(secret).to_have_value(re.compile(r"^kal_"))
        token = secret.input_value()
        check_axe_both(page, "the Settings page with a destination and a new token")
        screenshot(page, "settings")
        page.goto(f"{server.base_url}/settings")
        assert token not in page.content()

        # A task due in an hour with a push reminder in two minutes (made with the CLI);
        # the server's delivery loop sends it once its clock passes the reminder.
        _cli_json(server, "list", "add", "Garden")
        task = _cli_json(server, "task", "add", "Garden", TASK)
        remind_at = (server.now() + timedelta(minutes=2)).replace(second=0, microsecond=0)
        _cli_json(
            server,
            "task",
            "schedule",
            task["ref"],
            "--expect",
            str(task["revision"]),
            "--due-local",
            _local(remind_at + timedelta(hours=1)),
            "--zone",
            "UTC",
            "--remind",
            f"push@{_local(remind_at)}",
        )
        assert len(http_receiver.received()) == 1  # not yet due
        server.advance(timedelta(minutes=5))
        _wait_for(http_receiver, 2, "the reminder")
        reminder = http_receiver.received()[1]
        assert reminder.path == f"/hooks/{SECRET}"
        assert reminder.json()["title"] == f"Reminder: {TASK}"
        assert reminder.header("Idempotency-Key")

        # A calendar feed: its address shown once, the task in it.
        page.get_by_role("button", name="Create a calendar feed").click()
        address = page.locator("#new-feed-url").input_value()
        feed_path = "/feeds/" + address.partition("/feeds/")[2]
        assert feed_path.endswith(".ics"), address
        screenshot(page, "settings-feed")
        with server.client() as api:
            feed = api.get(feed_path)
        assert feed.status_code == 200
        assert TASK in feed.text

        # The 12-hour clock and the dark theme, saved together.
        page.get_by_role("radio", name=re.compile("^12-hour")).check()
        page.get_by_role("radio", name="Dark").check()
        page.get_by_role("button", name="Save theme and clock").click()
        expect(page.get_by_text("Theme and clock saved.")).to_be_visible()
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        now_shown = page.locator("#appearance time").first.inner_text()
        assert re.fullmatch(r"\d{4}-\d\d-\d\d 2:3\d(:\d\d)? PM \w{3} UTC", now_shown), now_shown
        expect(page.locator("#tokens time").first).to_have_text(re.compile(r" [AP]M "))
        check_axe_both(page, "the Settings page, dark theme and 12-hour clock")
        state = context.storage_state()
    finally:
        context.close()

    # Script off: the forms post and land back on the page.
    quiet = browser.new_context(
        viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT},
        timezone_id="UTC",
        java_script_enabled=False,
        storage_state=state,
    )
    try:
        page = quiet.new_page()
        page.goto(f"{server.base_url}/settings")
        page.get_by_role("radio", name=re.compile("^Email")).check()
        page.get_by_label("Apprise URL").fill("mailto://me:pw-secret@example.com")
        page.get_by_role("button", name="Add destination").click()
        expect(page.get_by_text("Destination added.")).to_be_visible()
        assert "pw-secret" not in page.content()
        page.get_by_role("button", name="Remove email destination 1").click()
        expect(page.get_by_text("Destination removed.")).to_be_visible()
        expect(page.get_by_text("No email destination yet")).to_be_visible()
        page.get_by_role("button", name="Revoke token journey laptop").click()
        expect(page.get_by_text("Token revoked")).to_be_visible()
        page.get_by_role("button", name=re.compile("^Revoke the calendar feed")).click()
        expect(page.get_by_text("Calendar feed revoked")).to_be_visible()
        with server.client() as api:
            answer = api.get("/api/tokens", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 401
            assert api.get(feed_path).status_code == 404
    finally:
        quiet.close()
