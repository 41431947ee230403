"""Paired devices in Debian's chromium against a real ``kalends serve``.

The owner makes a pairing link on Settings (shown once); a second browser, a phone's
width, opens the link (a page that names the device and its owner, and uses nothing up
until its button is pressed), pairs and lands on the Now page as the owner's device. It
answers a question a passage asked (made on the server's database through the questions
service, as the question journeys make them) with a real click: the answer's mark is
pending and names the device as its principal (seed 002, "Wayfinder human decision
mark": the UI principal is a login session or a paired device). The owner sees the
device on Settings and revokes it; the device's next page is the sign-in page. A second
device signs out, which unpairs it. axe in both color schemes on the Settings devices
section and the pairing page; screenshots at 1280 and 390 px.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Browser, Page, expect

from kalends.questions import MarkState

from .browser_support import VIEWPORT_HEIGHT, WIDTHS, Server, check_axe_both, screenshot
from .test_question_journeys import SHORT, ask, questions_of

SEND = "Send the answer"
DEVICE = "Kitchen tablet"
REVOKE_FORM = 'form[action^="/settings/devices/"][action$="/revoke"]'


def make_link(page: Page, server: Server, name: str) -> str:
    """Makes a pairing link for the device ``name`` on the owner's Settings page."""
    page.goto(f"{server.base_url}/settings#devices")
    section = page.locator("#devices")
    section.get_by_label("Which device").fill(name)
    section.get_by_role("button", name="Make a pairing link").click()
    expect(page.locator("#new-pairing")).to_contain_text(
        "Open it in the device's browser within 15 minutes"
    )
    link = page.locator("#new-pairing-url").input_value()
    assert link.startswith(f"{server.base_url}/pair/"), link
    return link


def test_the_owner_pairs_a_device_which_answers_as_itself_until_revoked(
    owner_page: Page, browser: Browser, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    link = make_link(page, server, DEVICE)
    expect(page.locator("#new-pairing")).to_contain_text(f"Pairing link for “{DEVICE}” made.")
    check_axe_both(page, "Settings with a new pairing link")
    screenshot(page, "settings-device-link")

    phone = browser.new_context(viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT})
    try:
        device = phone.new_page()
        # The pairing page: who it pairs as; opening it pairs nothing yet.
        device.goto(link)
        expect(device.get_by_role("heading", level=1)).to_have_text("Pair this browser")
        expect(device.locator(".pair-what")).to_have_text(
            f"Pair this browser as the device «{DEVICE}» of @{server.owner}?"
        )
        expect(device.locator("#pair-expiry")).to_contain_text("This link works once, until")
        assert all(c["name"] != "kalends_device" for c in phone.cookies())
        check_axe_both(device, "the pairing page")
        screenshot(device, "pair")
        device.get_by_role("button", name="Pair this browser").click()
        expect(device.get_by_role("heading", level=1)).to_have_text("Now")
        assert device.url == f"{server.base_url}/"
        expect(device.locator(".me")).to_contain_text(
            f"Signed in as {server.owner} on a paired device"
        )
        (cookie,) = [c for c in phone.cookies() if c["name"] == "kalends_device"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == "/"
        screenshot(device, "now-on-device")

        # The link is used up: opened again, it says so.
        device.goto(link)
        expect(device.get_by_role("heading", level=1)).to_have_text(
            "This pairing link cannot be used"
        )
        check_axe_both(device, "a used pairing link")
        screenshot(device, "pair-used")

        # A real click on the device answers with a pending mark naming the device.
        question = ask(server, home["id"], "psg_device_1", "Water the plants today?", SHORT)
        device.goto(f"{server.base_url}/questions/{question.id}")
        device.get_by_role("radio", name="later").check()
        device.get_by_role("checkbox", name="I read the logs").check()
        device.get_by_role("button", name=SEND).click()
        expect(device.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()
        with questions_of(server) as service:
            found = service.get(server.owner, question.id)
            marks = service.marks(server.owner, question.id)
        assert found.answer == {"go": "later", "ok": True}
        assert [(m.state, m.principal_kind.value) for m in marks] == [(MarkState.PENDING, "device")]

        # The owner's Settings list the device, used; its ID is the mark's principal.
        page.goto(f"{server.base_url}/settings#devices")
        row = page.locator("#devices tbody tr").filter(has_text=DEVICE)
        expect(row.locator('[data-label="Status"]')).to_have_text("● paired")
        expect(row.locator('[data-label="Last used"]')).not_to_have_text("never")
        action = row.locator(REVOKE_FORM).get_attribute("action")
        assert action is not None
        assert marks[0].principal_id == action.split("/")[3]
        check_axe_both(page, "Settings with a paired device")
        screenshot(page, "settings-devices")
        row.get_by_role("button", name=f"Revoke device {DEVICE}").click()
        expect(page.get_by_role("status").filter(has_text="Device revoked")).to_be_visible()
        expect(row.locator('[data-label="Status"]')).to_have_text("✗ revoked")

        # The device's next page load is the sign-in page.
        device.goto(f"{server.base_url}/")
        expect(device.get_by_role("heading", level=1)).to_have_text("Sign in to kalends")
        assert device.url == f"{server.base_url}/login"
        expect(device.locator("#device-ended")).to_contain_text(
            "This browser was paired as a device, and that pairing has ended"
        )
        assert all(c["name"] != "kalends_device" for c in phone.cookies())
        check_axe_both(device, "sign-in after the device was revoked")
        screenshot(device, "login-device-ended")
    finally:
        phone.close()


def test_signing_out_of_a_device_unpairs_it(
    owner_page: Page, browser: Browser, server: Server
) -> None:
    link = make_link(owner_page, server, "Hall phone")
    phone = browser.new_context(viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT})
    try:
        device = phone.new_page()
        device.goto(link)
        device.get_by_role("button", name="Pair this browser").click()
        expect(device.get_by_role("heading", level=1)).to_have_text("Now")
        device.goto(f"{server.base_url}/settings")
        expect(device.locator("#devices-refused")).to_have_text(
            "A paired device cannot pair other devices: sign in with your password in a "
            "browser of your own to pair one."
        )
        expect(device.get_by_role("button", name="Make a pairing link")).to_have_count(0)
        expect(device.get_by_role("button", name="Create token")).to_have_count(0)
        check_axe_both(device, "Settings seen from a device")
        screenshot(device, "settings-on-device")
        device.get_by_role("button", name="Sign out and unpair this device").click()
        expect(device.get_by_role("status")).to_contain_text(
            "You are signed out. This browser is no longer a paired device"
        )
        assert all(c["name"] != "kalends_device" for c in phone.cookies())
        device.goto(f"{server.base_url}/")
        expect(device.get_by_role("heading", level=1)).to_have_text("Sign in to kalends")
    finally:
        phone.close()
    owner_page.goto(f"{server.base_url}/settings#devices")
    row = owner_page.locator("#devices tbody tr").filter(has_text="Hall phone")
    expect(row.locator('[data-label="Status"]')).to_have_text("✗ revoked")
