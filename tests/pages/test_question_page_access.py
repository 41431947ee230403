"""Who may open or post the question pages (:mod:`kalends.web.pages_questions`): a table
with a row per route, each asked by someone signed out, by a non-member of the workspace
(dave), a viewer (carol), the editor with a forged CSRF token and the editor (bob). A
route of the module in no row fails the suite. A refused post writes nothing: the question
stays open at its revision with no mark; the editor's token and answer are then taken.

The token route answers JSON for the page's script: a signed-out caller gets 401 there,
not the sign-in page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from kalends.questions import QuestionState
from pages.conftest import Pages, csrf_of
from pages.test_page_access import (
    PERSONAS,
    ask_everyone,
    every,
    member_read,
    member_write,
    page_routes,
)

MODULE = ("kalends.web.pages_questions",)
ANSWER = {"expected_revision": "1", "answer-go": "yes", "answer-ok": "yes"}


@dataclass(frozen=True)
class Ids:
    workspace: str
    question: str


@dataclass(frozen=True)
class Row:
    method: str
    template: str
    path: str
    data: dict[str, str] | None
    expect: dict[str, int | str]

    def build(self, ids: Ids, csrf: str) -> tuple[str, dict[str, Any] | None]:
        url = self.path.format(ws=ids.workspace, q=ids.question)
        return url, None if self.data is None else {"csrf": csrf, **self.data}


ROWS = [
    Row("GET", "/w/{workspace}/questions", "/w/{ws}/questions", None, member_read()),
    Row("GET", "/questions/{question}", "/questions/{q}", None, member_read()),
    Row(
        "POST",
        "/questions/{question}/token",
        "/questions/{q}/token",
        ANSWER,
        every(200, anon=401, dave=404, carol=403, forged=403),
    ),
    # Last: it answers the question.
    Row("POST", "/questions/{question}/answer", "/questions/{q}/answer", ANSWER, member_write(303)),
]


def test_every_route_of_the_question_pages_has_its_row(pages: Pages) -> None:
    app = pages.world.client.app
    assert isinstance(app, FastAPI)
    served = page_routes(app, MODULE)
    assert ("GET", "/questions/{question}") in served  # not vacuous
    rows = {(row.method, row.template) for row in ROWS}
    assert served - rows == set(), "question page routes in no row"
    assert rows - served == set(), "rows of routes nobody serves"


def test_each_persona_gets_what_its_role_allows_and_a_refusal_writes_nothing(
    pages: Pages,
) -> None:
    world = pages.world
    service = world.services.questions
    alice = world.actors["alice"].id
    question = service.ask(
        workspace_id=world.home.id,
        schedule_id=None,
        passage_id="psg_table_1",
        prompt="Go ahead?",
        fields=[
            {"id": "go", "kind": "choice", "label": "Go?", "options": ["yes", "no"]},
            {"id": "ok", "kind": "confirm", "label": "Checked"},
        ],
    )
    ids = Ids(str(world.home.id), str(question.id))

    def state() -> tuple[str, int, int]:
        found = service.get(alice, question.id)
        return found.state.value, found.revision, len(service.marks(alice, question.id))

    clients: dict[str, TestClient] = {"anon": pages.client("alice")}
    tokens = {"anon": ""}
    for who in ("dave", "carol", "bob"):
        clients[who] = pages.sign_in(who)
        tokens[who] = csrf_of(clients[who].get("/").text)
    clients["forged"], tokens["forged"] = clients["bob"], "forged-token"
    refusing = [p for p in PERSONAS if p != "bob"]
    assert state() == ("open", 1, 0)
    seen = ask_everyone(ROWS, refusing, clients, tokens, ids)
    assert seen == [], "\n".join(seen)
    assert state() == ("open", 1, 0), "a refused post wrote"
    seen = ask_everyone(ROWS, ["bob"], clients, tokens, ids)
    assert seen == [], "\n".join(seen)
    # Posted without a token (as with script off): answered, with no mark.
    assert state() == (QuestionState.ANSWERED.value, 2, 0)
