"""Who may open or post the question pages (:mod:`kalends.web.pages_questions`): a table
with a row per route, each asked by someone signed out, by a non-member of the workspace
(dave), a viewer (carol), the editor with a forged CSRF token and the editor (bob). A
route of the module in no row fails the suite. A refused post writes nothing: the question
stays open at its revision with no mark; the editor's token and answer are then taken.

The token route answers JSON for the page's script: a signed-out caller gets 401 there,
not the sign-in page."""

from __future__ import annotations

from kalends.questions import QuestionState
from pages.access_support import Row, ask_refused_then_editor, assert_every_route_has_its_row
from pages.conftest import Pages
from pages.test_page_access import every, member_read, member_write

MODULE = ("kalends.web.pages_questions",)
ANSWER = {"expected_revision": "1", "answer-go": "yes", "answer-ok": "yes"}

# The paths' fields: {ws} the workspace, {q} the question.
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
    assert_every_route_has_its_row(pages, MODULE, ROWS, ("GET", "/questions/{question}"))


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
    ids = {"ws": str(world.home.id), "q": str(question.id)}

    def state() -> tuple[str, int, int]:
        found = service.get(alice, question.id)
        return found.state.value, found.revision, len(service.marks(alice, question.id))

    assert state() == ("open", 1, 0)
    ask_refused_then_editor(pages, ROWS, ids, state)
    # Posted without a token (as with script off): answered, with no mark.
    assert state() == (QuestionState.ANSWERED.value, 2, 0)
