"""The browser tests' ground: Debian's chromium logs in to a real ``kalends serve``
through its one-time link and lands on the web panel; the server's clock moves when the
test says; a reply lost after the server's write leaves the write done across a crash
and a restart; a chromium that cannot start fails the tests with what to install."""

from __future__ import annotations

import struct
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright

from .browser_support import (
    NEED_CHROMIUM,
    WIDTHS,
    LostReplyProxy,
    Server,
    check_axe,
    launch_chromium,
    login,
    screenshot,
    wait_for,
)

CSRF_COOKIE = "kalends_csrf"
CSRF_HEADER = "X-CSRF-Token"


def png_width(path: Path) -> int:
    """The width of the PNG image at ``path`` (its IHDR chunk)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width: int = struct.unpack(">I", head[16:20])[0]
    return width


def csrf(page: Page) -> str:
    """The CSRF token the login set, which unsafe requests send back in a header."""
    [token] = [c["value"] for c in page.context.cookies() if c["name"] == CSRF_COOKIE]
    return token


def test_the_login_link_logs_chromium_in_and_lands_on_the_root(
    owner_page: Page, server: Server
) -> None:
    page = owner_page  # login() saw the redirect to / after the link
    me = page.request.get(f"{server.base_url}/api/auth/me")
    assert me.status == 200, me.text()
    assert me.json()["actor"]["handle"] == server.owner

    page.goto(f"{server.base_url}/")
    shots = screenshot(page, "landing")
    assert [p.name for p in shots] == [
        f"landing-{width}-{scheme}.png" for scheme in ("light", "dark") for width in WIDTHS
    ]
    assert [png_width(p) for p in shots] == [*WIDTHS, *WIDTHS]
    assert page.viewport_size == {"width": WIDTHS[0], "height": 800}


def test_the_landing_page_has_a_heading_and_a_main_landmark_and_passes_axe(
    owner_page: Page, server: Server
) -> None:
    page = owner_page
    answer = page.goto(f"{server.base_url}/")
    assert answer is not None and answer.status == 200, answer
    assert "text/html" in answer.headers.get("content-type", ""), answer.headers
    # Rendered by the server: there once the page has loaded, nothing to wait for.
    assert page.locator("h1").count() == 1, page.content()[:2000]
    assert page.get_by_role("main").count() == 1, page.content()[:2000]
    check_axe(page, "the landing page")


def test_the_server_clock_moves_when_the_test_says(owner_page: Page, server: Server) -> None:
    page = owner_page
    later = server.now() + timedelta(hours=3)
    server.shift_to(later)
    made = page.request.post(
        f"{server.base_url}/api/tokens",
        data={"name": "clock"},
        headers={CSRF_HEADER: csrf(page)},
    )
    assert made.status == 201, made.text()
    created = datetime.fromisoformat(made.json()["token"]["createdAt"].replace("Z", "+00:00"))
    assert abs(created - later) < timedelta(minutes=1), (created, later)

    server.advance(timedelta(hours=1))
    again = page.request.post(
        f"{server.base_url}/api/tokens",
        data={"name": "clock-later"},
        headers={CSRF_HEADER: csrf(page)},
    )
    assert again.status == 201, again.text()
    created = datetime.fromisoformat(again.json()["token"]["createdAt"].replace("Z", "+00:00"))
    assert abs(created - later - timedelta(hours=1)) < timedelta(minutes=1), created


def test_another_profile_logs_in_with_a_fresh_link_made_on_the_shifted_clock(
    browser: Browser, server: Server
) -> None:
    # With the clock hours ahead, a link made on the real clock would have expired.
    if server.offset < 3600:
        server.advance(timedelta(hours=2))
    added = server.add_workspace("garden")
    other = browser.new_context()
    try:
        fresh = other.new_page()
        login(fresh, server)
        listed = fresh.request.get(f"{server.base_url}/api/workspaces")
        assert listed.status == 200, listed.text()
        assert [(w["id"], w["name"]) for w in listed.json()] == [(added["id"], "garden")]
    finally:
        other.close()


def tokens_named(page: Page, base: str, name: str) -> list[dict[str, Any]]:
    listed = page.request.get(f"{base}/api/tokens")
    assert listed.status == 200, listed.text()
    return [t for t in listed.json() if t["name"] == name]


def test_a_reply_lost_after_the_write_leaves_the_write_done_after_a_restart(
    owner_page: Page, server: Server
) -> None:
    page = owner_page
    with LostReplyProxy(server.port) as proxy:
        trap = proxy.arm("POST", "/api/tokens", server.kill)
        page.goto(f"{proxy.base_url}/api/auth/me")  # the page's origin is the proxy's
        outcome = page.evaluate(
            """async ([header, token]) => {
                try {
                    const answer = await fetch("/api/tokens", {
                        method: "POST",
                        headers: {"Content-Type": "application/json", [header]: token},
                        body: JSON.stringify({name: "lost-reply"}),
                    });
                    return "answered " + answer.status;
                } catch (error) {
                    return "failed: " + error;
                }
            }""",
            [CSRF_HEADER, csrf(page)],
        )
        wait_for(trap.fired, "the server's answer to the token's creation")
        assert outcome.startswith("failed: TypeError"), outcome
        assert trap.lost is not None and trap.lost.answer_start.startswith(b"HTTP/1.1 201")
        assert not server.running()

        port = server.port
        server.restart()
        assert server.port == port, "the restarted server took another port"
        proxy.upstream_port = server.port
        # The session outlived the crash; the write happened once.
        assert len(tokens_named(page, proxy.base_url, "lost-reply")) == 1


def test_a_chromium_that_cannot_start_fails_the_tests_saying_what_to_install(
    playwright: Playwright, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        launch_chromium(playwright, "/nonexistent/chromium")
    message = str(failed.value)
    assert message.startswith(f"{NEED_CHROMIUM}; launching /nonexistent/chromium failed: "), message
    assert NEED_CHROMIUM == "the browser tests need Debian's chromium: apt-get install chromium"

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception) as missing:
        launch_chromium(playwright)
    assert str(missing.value) == f"{NEED_CHROMIUM}; there is no chromium on PATH"


def test_check_axe_passes_a_sound_page_and_names_what_is_wrong_with_another(page: Page) -> None:
    page.set_content(
        '<!doctype html><html lang="en"><head><title>Sound</title></head>'
        "<body><main><h1>Sound</h1><p>Nothing wrong here.</p></main></body></html>"
    )
    check_axe(page, "a sound page")

    page.set_content(
        '<!doctype html><html lang="en"><head><title>Unsound</title></head>'
        '<body><main><h1>Unsound</h1><img src="chart.png" id="chart">'
        '<button id="act"></button></main></body></html>'
    )
    with pytest.raises(pytest.fail.Exception) as failed:
        check_axe(page, "an unsound page")
    message = str(failed.value)
    assert message.startswith("axe: 2 serious or critical violation(s) on an unsound page"), message
    assert "- image-alt (critical): Images must have alternative text" in message, message
    assert "    at #chart" in message, message
    assert "- button-name (critical): Buttons must have discernible text" in message, message
    assert "    at #act" in message, message
