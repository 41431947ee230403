"""Fixtures of the web pages' browser tests: one ``kalends serve`` and one page per
module, one chromium per test process (see browser_support.py)."""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from .browser_support import (
    SCREENSHOTS,
    VIEWPORT_HEIGHT,
    WIDTHS,
    Server,
    launch_chromium,
    login,
)

HANG_AFTER = 180.0
"""Seconds after which a test is taken for hung (a browser call that never returns)."""


@pytest.fixture(autouse=True)
def hang_guard() -> Iterator[None]:
    """Ends the test process when a test runs longer than :data:`HANG_AFTER`, after
    writing every thread's stack to ``test-output/web/hangs.log``: the run fails with the
    test named (pytest-xdist reports the crashed worker) instead of waiting for ever. The
    servers the process started die with it."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with (SCREENSHOTS / "hangs.log").open("a") as log:
        faulthandler.dump_traceback_later(HANG_AFTER, exit=True, file=log)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()


# Per module, not per session: Playwright's synchronous driver keeps an event loop
# running in the main thread while it is open, and the tests that a worker runs after a
# browser module would find it there (asyncio.run refuses to start inside it).
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian's chromium, headless; the tests fail (never skip) when it cannot start."""
    launched = launch_chromium(playwright)
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real ``kalends serve`` for the module, on a fresh SQLite database and a clock the
    tests move (``server.shift_to``, ``server.advance``); stopped by its PID at the end."""
    started = Server(tmp_path_factory.mktemp("web-serve"))
    try:
        yield started.start()
    finally:
        started.stop()


@pytest.fixture(scope="module")
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser profile (cookies, storage) for the module, 1280 px wide."""
    made = browser.new_context(viewport={"width": WIDTHS[0], "height": VIEWPORT_HEIGHT})
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def page(context: BrowserContext) -> Page:
    """The module's one page: its tests take turns with it."""
    return context.new_page()


@pytest.fixture(scope="module")
def owner_page(page: Page, server: Server) -> Page:
    """The module's page, logged in as the server's owner through the first start's
    one-time link (once for the module)."""
    login(page, server)
    return page


@pytest.fixture(scope="module")
def home(server: Server) -> dict[str, Any]:
    """A workspace ``home`` of the module's server, owned by its owner (what ``kalends
    workspace add --json`` printed)."""
    return server.add_workspace("home")
