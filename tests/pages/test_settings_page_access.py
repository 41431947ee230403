"""Who may open or post every Settings route: a table with a row per route of
``kalends.web.pages_settings``, each asked by someone signed out, by another person
(dave, who has settings of his own but none of alice's), by alice with a forged CSRF token
and by alice herself. A route of the module in no row fails the suite."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from pages.conftest import Pages, csrf_of
from pages.test_page_access import SIGN_IN, ask_everyone, page_routes

MODULE = ("kalends.web.pages_settings",)
# The personas of a row, in the order they are asked; "forged" is alice with a wrong token.
PERSONAS = ("anon", "dave", "forged", "alice")
# Alice's push destination at position 1; nobody listens on port 9 of the loopback.
DESTINATION = "json://127.0.0.1:9/hooks/alice-secret"


@dataclass(frozen=True)
class Ids:
    token: str
    feed: str


Build = Callable[[Ids, str], tuple[str, dict[str, Any] | None]]


@dataclass(frozen=True)
class Row:
    method: str
    template: str
    build: Build
    expect: dict[str, int | str]


def get(path: str) -> Build:
    return lambda ids, _csrf: (path, None)


def post(path: str, **data: Any) -> Build:
    return lambda ids, csrf: (
        path.format(token=ids.token, feed=ids.feed),
        {"csrf": csrf, **data},
    )


def own(status: int | str, other: int | str | None = None) -> dict[str, int | str]:
    """A write on one's own settings: alice gets ``status``, dave ``other`` (his own
    settings hold nothing of alice's) or the same."""
    return {
        "anon": SIGN_IN,
        "dave": status if other is None else other,
        "forged": 403,
        "alice": status,
    }


ROWS = [
    Row("GET", "/settings", get("/settings"), {**dict.fromkeys(PERSONAS, 200), "anon": SIGN_IN}),
    # A test message to alice's destination (its send refused: the page says so, 200).
    Row(
        "POST",
        "/settings/destinations/test",
        post("/settings/destinations/test", channel="push", position=1),
        own(200, other=404),
    ),
    Row(
        "POST",
        "/settings/destinations/remove",
        post("/settings/destinations/remove", channel="push", position=1),
        own(303, other=404),
    ),
    Row(
        "POST",
        "/settings/destinations",
        post("/settings/destinations", channel="push", url="json://127.0.0.1:9/hooks/new"),
        own(303),
    ),
    Row(
        "POST",
        "/settings/tokens",
        post("/settings/tokens", name="from the table", expires_in_days="7"),
        own(201),
    ),
    Row(
        "POST",
        "/settings/tokens/{token_id}/revoke",
        post("/settings/tokens/{token}/revoke"),
        own(303, other=404),
    ),
    Row("POST", "/settings/feeds", post("/settings/feeds"), own(201)),
    Row(
        "POST",
        "/settings/feeds/{feed_id}/revoke",
        post("/settings/feeds/{feed}/revoke"),
        own(303, other=404),
    ),
    Row(
        "POST",
        "/settings/appearance",
        post("/settings/appearance", theme="dark", clock="12"),
        own(303),
    ),
]


def test_every_settings_route_has_its_row_in_the_table(pages: Pages) -> None:
    app = pages.world.client.app
    assert isinstance(app, FastAPI)
    served = page_routes(app, MODULE)
    assert ("GET", "/settings") in served  # not vacuous
    rows = {(row.method, row.template) for row in ROWS}
    assert served - rows == set(), "settings routes in no row"
    assert rows - served == set(), "rows of routes nobody serves"


def test_each_persona_gets_what_its_own_settings_allow(pages: Pages) -> None:
    alice = pages.world.actors["alice"].id
    pages.world.services.destinations.add(alice, alice, "push", DESTINATION)
    [token] = pages.world.accounts.tokens(alice)
    feed = pages.world.services.feeds.create(alice, base_url="http://example.com")
    ids = Ids(str(token.id), str(feed.feed.id))
    clients: dict[str, TestClient] = {"anon": pages.client("bob")}
    tokens = {"anon": ""}
    for who in ("dave", "alice"):
        clients[who] = pages.sign_in(who)
        tokens[who] = csrf_of(clients[who].get("/settings").text)
    clients["forged"], tokens["forged"] = clients["alice"], "forged-token"
    seen = ask_everyone(ROWS, PERSONAS, clients, tokens, ids)
    assert seen == [], "\n".join(seen)
    # What the table's writes left: alice's own changes only; dave's his own.
    dave = pages.world.actors["dave"].id
    mine = pages.world.services.destinations.list(alice, alice)
    assert [d.url for d in mine] == ["json://127.0.0.1:9/hooks/new"]
    theirs = pages.world.services.destinations.list(dave, dave)
    assert [d.url for d in theirs] == ["json://127.0.0.1:9/hooks/new"]
    assert not next(t for t in pages.world.accounts.tokens(alice) if t.id == token.id).active
    assert all(t.active for t in pages.world.accounts.tokens(dave) if t.name == "tests")
    feeds = {f.id: f.active for f in pages.world.services.feeds.list(alice)}
    assert feeds[feed.feed.id] is False
    assert len(feeds) == 2  # and the one the table made
    assert len(pages.world.services.feeds.list(dave)) == 1
