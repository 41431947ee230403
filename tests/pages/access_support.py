"""What the access tables of the conversation and question pages share: a row whose path
is filled from the table's IDs, the check that a module's routes and the table's rows
are the same, and the run of the table in which every persona but the editor (bob) is
refused without a write, then bob is let through."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from pages.conftest import Pages, csrf_of
from pages.test_page_access import PERSONAS, ask_everyone, page_routes

EDITOR = "bob"


@dataclass(frozen=True)
class Row:
    """A route as served (``method``, ``template``); the ``path`` to ask, whose fields the
    table's IDs fill; the form to post (``None`` to get) and each persona's answer."""

    method: str
    template: str
    path: str
    data: dict[str, str] | None
    expect: dict[str, int | str]

    def build(self, ids: Mapping[str, str], csrf: str) -> tuple[str, dict[str, Any] | None]:
        url = self.path.format(**ids)
        return url, None if self.data is None else {"csrf": csrf, **self.data}


def assert_every_route_has_its_row(
    pages: Pages, modules: tuple[str, ...], rows: Sequence[Row], sample: tuple[str, str]
) -> None:
    """Every route the page ``modules`` serve has its row, and every row its route;
    ``sample``, a route they serve, keeps the check from passing on no routes."""
    app = pages.world.client.app
    assert isinstance(app, FastAPI)
    served = page_routes(app, modules)
    assert sample in served  # not vacuous
    rowed = {(row.method, row.template) for row in rows}
    assert served - rowed == set(), f"routes of {', '.join(modules)} in no row"
    assert rowed - served == set(), "rows of routes nobody serves"


def signed_in(pages: Pages) -> tuple[dict[str, TestClient], dict[str, str]]:
    """Each persona's client and CSRF token: signed out, dave, carol, bob, and bob with a
    forged token."""
    clients: dict[str, TestClient] = {"anon": pages.client("alice")}
    tokens = {"anon": ""}
    for who in ("dave", "carol", EDITOR):
        clients[who] = pages.sign_in(who)
        tokens[who] = csrf_of(clients[who].get("/").text)
    clients["forged"], tokens["forged"] = clients[EDITOR], "forged-token"
    return clients, tokens


def ask_refused_then_editor(
    pages: Pages, rows: Sequence[Row], ids: Mapping[str, str], state: Callable[[], object]
) -> None:
    """Asks every row as each persona but the editor, who all get what the rows expect
    and leave ``state()`` as it was; then as the editor, who gets what the rows expect."""
    clients, tokens = signed_in(pages)
    refusing = [p for p in PERSONAS if p != EDITOR]
    before = state()
    seen = ask_everyone(rows, refusing, clients, tokens, ids)
    assert seen == [], "\n".join(seen)
    assert state() == before, "a refused post wrote"
    seen = ask_everyone(rows, [EDITOR], clients, tokens, ids)
    assert seen == [], "\n".join(seen)
