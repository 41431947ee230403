"""Who may open or post the conversation pages (:mod:`kalends.web.pages_conversations`):
a table with a row per route, each asked by someone signed out, by a non-member of the
workspace (dave), a viewer (carol), the editor with a forged CSRF token and the editor
(bob). A route of the module in no row fails the suite. A refused post writes nothing:
the workspace's conversations and the thread's messages are the same after it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from pages.conftest import Pages, csrf_of
from pages.test_page_access import (
    PERSONAS,
    ask_everyone,
    member_read,
    member_write,
    page_routes,
)

MODULE = ("kalends.web.pages_conversations",)


@dataclass(frozen=True)
class Ids:
    workspace: str
    conversation: str


@dataclass(frozen=True)
class Row:
    method: str
    template: str
    path: str
    data: dict[str, str] | None
    expect: dict[str, int | str]

    def build(self, ids: Ids, csrf: str) -> tuple[str, dict[str, Any] | None]:
        url = self.path.format(ws=ids.workspace, c=ids.conversation)
        return url, None if self.data is None else {"csrf": csrf, **self.data}


ROWS = [
    Row("GET", "/w/{workspace}/conversations", "/w/{ws}/conversations", None, member_read()),
    Row(
        "POST",
        "/w/{workspace}/conversations",
        "/w/{ws}/conversations",
        {"title": "From the table"},
        member_write(303),
    ),
    Row("GET", "/conversations/{conversation}", "/conversations/{c}", None, member_read()),
    Row(
        "POST",
        "/conversations/{conversation}/messages",
        "/conversations/{c}/messages",
        {"text": "From the table"},
        member_write(303),
    ),
]


def test_every_route_of_the_conversation_pages_has_its_row(pages: Pages) -> None:
    app = pages.world.client.app
    assert isinstance(app, FastAPI)
    served = page_routes(app, MODULE)
    assert ("GET", "/conversations/{conversation}") in served  # not vacuous
    rows = {(row.method, row.template) for row in ROWS}
    assert served - rows == set(), "conversation page routes in no row"
    assert rows - served == set(), "rows of routes nobody serves"


def test_each_persona_gets_what_its_role_allows_and_a_refusal_writes_nothing(
    pages: Pages,
) -> None:
    world = pages.world
    service = world.services.conversations
    alice = world.actors["alice"].id
    thread = service.create(alice, world.home.id, "Planning")
    ids = Ids(str(world.home.id), str(thread.id))

    def state() -> tuple[int, int]:
        return (
            len(service.list(alice, world.home.id)),
            service.get(alice, thread.id).last_seq,
        )

    clients: dict[str, TestClient] = {"anon": pages.client("alice")}
    tokens = {"anon": ""}
    for who in ("dave", "carol", "bob"):
        clients[who] = pages.sign_in(who)
        tokens[who] = csrf_of(clients[who].get("/").text)
    clients["forged"], tokens["forged"] = clients["bob"], "forged-token"
    refusing = [p for p in PERSONAS if p != "bob"]
    before = state()
    seen = ask_everyone(ROWS, refusing, clients, tokens, ids)
    assert seen == [], "\n".join(seen)
    assert state() == before, "a refused post wrote"
    seen = ask_everyone(ROWS, ["bob"], clients, tokens, ids)
    assert seen == [], "\n".join(seen)
    assert state() == (before[0] + 1, before[1] + 1)
