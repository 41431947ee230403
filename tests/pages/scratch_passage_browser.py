from __future__ import annotations

from typing import Any

from playwright.sync_api import Route, sync_playwright

from pages.conftest import Pages
from pages.test_passage_pages import Ran, admitted, finished, runtime  # noqa: F401
from web.browser_support import axe_violations, launch_chromium


def test_look(pages: Pages, admitted: Ran, finished: Ran) -> None:  # noqa: F811
    client = pages.sign_in("alice")
    seen: list[str] = []

    def handle(route: Route) -> None:
        req = route.request
        seen.append(req.url)
        headers = {k: v for k, v in req.headers.items() if k.lower().startswith("hx-")}
        reply = client.get(req.url.replace("http://testserver", ""), headers=headers)
        route.fulfill(status=reply.status_code, body=reply.content, headers={"content-type": reply.headers.get("content-type", "text/html")})

    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.route("http://testserver/**", handle)
        for name, ran in (("running", admitted), ("finished", finished)):
            page.goto("http://testserver" + ran.url(pages))
            page.wait_for_timeout(4500)
            v = axe_violations(page)
            print(name, [(x["id"], x["impact"], [n["target"] for n in x["nodes"]]) for x in v])
            page.screenshot(path=f"/tmp/passage-shots/{name}-1280.png", full_page=True)
            page.set_viewport_size({"width": 390, "height": 800})
            page.screenshot(path=f"/tmp/passage-shots/{name}-390.png", full_page=True)
            page.set_viewport_size({"width": 1280, "height": 900})
        print([u for u in seen if "/log" in u])
        browser.close()
