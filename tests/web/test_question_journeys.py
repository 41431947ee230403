"""The question pages in Debian's chromium against a real ``kalends serve``: questions a
passage asked (made on the server's database through the questions service, as a
passage's ``ask`` would) are answered in the browser, and the marks are read back from
that database.

(1) A real click on "Send the answer" asks for a one-use token and records the answer
with a pending mark, which becomes a person's decision once the passage confirms it.
(2) A click a script makes (``element.click()``, a dispatched click event) and a
``requestSubmit()`` answer with no token and no mark; a dispatched Enter sends nothing.
(3) Keyboard only: Tab to a field, Enter submits with a trusted key press: a pending mark.
(4) With script off the form answers, with no mark. axe in both color schemes,
screenshots at 1280 and 390 px.

The whole way once more with a real passage: a schedule's command runs ``kalends ask``
and waits; a real click answers it; the passage acknowledges the answer, which confirms
the mark (the page then says a person decided), and reports the answer it was given."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

from playwright.sync_api import Browser, Page, Request, expect

from kalends.questions import AnswerVia, MarkState, Question, Questions, QuestionState
from kalends.storage.migrate import open_store

from .browser_support import (
    VIEWPORT_HEIGHT,
    WIDTHS,
    Server,
    check_axe_both,
    login,
    screenshot,
    shifted_clock,
)

FULL: list[dict[str, Any]] = [
    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]},
    {"id": "why", "kind": "text", "label": "Why?", "maxLength": 200},
    {"id": "ok", "kind": "confirm", "label": "I read the logs"},
]
SHORT: list[dict[str, Any]] = [
    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]},
    {"id": "ok", "kind": "confirm", "label": "I read the logs"},
]
SEND = "Send the answer"
VIEWER = "vera"
FORM_BUTTON = "form[data-question-form] button[type=submit]"


@contextmanager
def questions_of(server: Server) -> Iterator[Questions]:
    """The questions service on the server's own database, on its clock."""
    with shifted_clock(server.offset):
        store = open_store(server.database)
        try:
            yield Questions(store)
        finally:
            store.engine.dispose()


def ask(server: Server, workspace: str, passage: str, prompt: str, fields: Any) -> Question:
    with questions_of(server) as service:
        return service.ask(
            workspace_id=UUID(workspace),
            schedule_id=None,
            passage_id=passage,
            prompt=prompt,
            fields=fields,
        )


def state_of(server: Server, question: Question) -> tuple[Question, list[tuple[MarkState, str]]]:
    """The question as stored, and its marks (state, attempt)."""
    with questions_of(server) as service:
        found = service.get(server.owner, question.id)
        marks = [(m.state, m.attempt_id) for m in service.marks(server.owner, question.id)]
    return found, marks


def token_requests(page: Page) -> list[str]:
    """The token requests ``page`` makes from now on (their URLs)."""
    seen: list[str] = []

    def note(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/token"):
            seen.append(request.url)

    page.on("request", note)
    return seen


def test_answers_by_click_script_keyboard_and_without_script(
    owner_page: Page, browser: Browser, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    clicked = ask(
        server, home["id"], "psg_journey_1", "Release 2.0 tonight?\nThe tests are green.", FULL
    )
    scripted = ask(server, home["id"], "psg_journey_2", "Rotate the signing keys?", SHORT)
    submitted = ask(server, home["id"], "psg_journey_3", "Archive last year's logs?", SHORT)
    keyed = ask(server, home["id"], "psg_journey_4", "Restart the mirror?", SHORT)
    plain = ask(server, home["id"], "psg_journey_5", "Prune the caches?", SHORT)
    dispatched = ask(server, home["id"], "psg_journey_6", "Renew the certificate?", SHORT)
    minted = token_requests(page)

    # The Now page lists them and the navigation counts them, in words.
    page.goto(f"{server.base_url}/")
    expect(page.get_by_role("heading", name="Questions waiting for you (6)")).to_be_visible()
    expect(page.locator(".nav-questions")).to_have_text("6 questions waiting")
    check_axe_both(page, "now with questions")
    screenshot(page, "now-questions")
    page.goto(f"{server.base_url}/w/{home['id']}/questions")
    expect(page.get_by_role("heading", level=1)).to_have_text("Questions — home")
    check_axe_both(page, "questions")
    screenshot(page, "questions")

    # (1) A real click: a token is minted, the answer is recorded with a pending mark.
    page.get_by_role("link", name="Release 2.0 tonight?").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Question")
    page.get_by_label("Why?").fill("Wait for the\nrelease notes")
    page.get_by_role("checkbox", name="I read the logs").check()
    # No choice made: the token is refused, the form is sent and refused beside the
    # field, which has focus; what was typed is kept and nothing is written.
    page.get_by_role("button", name=SEND).click()
    expect(page.locator("#err-go")).to_have_text("Missing; every field needs a value")
    expect(page.get_by_role("radio", name="yes")).to_be_focused()
    expect(page.get_by_label("Why?")).to_have_value("Wait for the\nrelease notes")
    expect(page.get_by_role("checkbox", name="I read the logs")).to_be_checked()
    assert state_of(server, clicked) == (clicked, [])
    check_axe_both(page, "question (refused)")
    screenshot(page, "question-refused")
    page.get_by_role("radio", name="later").check()
    check_axe_both(page, "question (open)")
    screenshot(page, "question-open")
    page.get_by_role("button", name=SEND).click()
    expect(page.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()
    assert len(minted) == 2, minted  # the refused one and this one
    found, marks = state_of(server, clicked)
    assert found.state is QuestionState.ANSWERED and found.answered_via is AnswerVia.UI
    assert found.answer == {"go": "later", "why": "Wait for the\nrelease notes", "ok": True}
    assert marks == [(MarkState.PENDING, found.attempt_id)]
    expect(page.locator("#decision")).to_have_text(
        "! Not a person's decision: the interface answer's hand-over is not confirmed (pending)"
    )
    assert found.attempt_id is not None
    with questions_of(server) as service:
        service.confirm_handover(clicked.id, found.attempt_id)
    page.reload()
    expect(page.locator("#decision")).to_have_text(
        "✓ Decided by a person in the kalends interface (confirmed)"
    )
    check_axe_both(page, "question (answered)")
    screenshot(page, "question-answered")

    # (2) A click made by a script, and requestSubmit(): no token, no mark.
    for question, how in (
        (scripted, f"document.querySelector('{FORM_BUTTON}').click()"),
        (submitted, "document.querySelector('form[data-question-form]').requestSubmit()"),
        (
            dispatched,
            f"document.querySelector('{FORM_BUTTON}')"
            ".dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}))",
        ),
    ):
        page.goto(f"{server.base_url}/questions/{question.id}")
        page.get_by_role("radio", name="yes").check()
        # A key press a script makes sends nothing at all.
        page.evaluate(
            "document.querySelector('input[name=answer-go]')"
            ".dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}))"
        )
        assert page.url.endswith(f"/questions/{question.id}")
        page.evaluate(how)
        expect(page.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()
        found, marks = state_of(server, question)
        assert (found.state, found.answer, marks) == (
            QuestionState.ANSWERED,
            {"go": "yes", "ok": False},
            [],
        ), how
        expect(page.locator("#decision")).to_have_text(
            "! Not a person's decision: answered in the kalends interface without a hand-over mark"
        )
    assert len(minted) == 2, minted

    # (3) Keyboard only: Tab to the choice, an arrow picks, Tab, Space ticks, Enter sends.
    page.goto(f"{server.base_url}/questions/{keyed.id}")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "answer-go":
            break
    expect(page.get_by_role("radio", name="yes")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("radio", name="later")).to_be_checked()
    page.keyboard.press("Tab")
    expect(page.get_by_role("checkbox", name="I read the logs")).to_be_focused()
    page.keyboard.press("Space")
    page.keyboard.press("Enter")
    expect(page.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()
    assert len(minted) == 3, minted
    found, marks = state_of(server, keyed)
    assert found.answer == {"go": "later", "ok": True}
    assert marks == [(MarkState.PENDING, found.attempt_id)]

    # (4) Script off: the form answers, with no mark.
    off = browser.new_context(
        viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT}, java_script_enabled=False
    )
    try:
        noscript = off.new_page()
        login(noscript, server)
        noscript.goto(f"{server.base_url}/questions/{plain.id}")
        expect(noscript.locator("html")).to_have_class("no-js")
        noscript.get_by_role("radio", name="later").check()
        noscript.get_by_role("button", name=SEND).click()
        expect(noscript.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()
        found, marks = state_of(server, plain)
        assert (found.answer, found.answered_via, marks) == (
            {"go": "later", "ok": False},
            AnswerVia.UI,
            [],
        )
        expect(noscript.locator("#decision")).to_contain_text("Not a person's decision")
    finally:
        off.close()

    # A viewer of the workspace reads a question with no form.
    waiting = ask(server, home["id"], "psg_journey_7", "Move the backups?", SHORT)
    added = server.cli_here("actor", "add", VIEWER, "--name", "Vera Viewer")
    assert added.exit_code == 0, added.stdout
    shared = server.cli_here(
        "workspace", "member", "set", home["id"], VIEWER, "--role", "viewer", actor=server.owner
    )
    assert shared.exit_code == 0, (shared.stdout, shared.stderr)
    narrow = browser.new_context(viewport={"width": WIDTHS[1], "height": VIEWPORT_HEIGHT})
    try:
        reader = narrow.new_page()
        reader.goto(server.fresh_login_link(actor=VIEWER))
        reader.goto(f"{server.base_url}/questions/{waiting.id}")
        expect(reader.locator(".question-text")).to_have_text("Move the backups?")
        expect(reader.get_by_role("button", name=SEND)).to_have_count(0)
        expect(reader.get_by_role("radio")).to_have_count(0)
        expect(reader.locator("main")).to_contain_text(
            "You are a viewer of this workspace: you can read this question but not answer it."
        )
        check_axe_both(reader, "question (viewer, 390 px)")
        screenshot(reader, "question-viewer")
    finally:
        narrow.close()
    with questions_of(server) as service:
        service.withdraw_open("psg_journey_7")

    page.goto(f"{server.base_url}/")
    expect(page.get_by_role("heading", name="Questions waiting for you (0)")).to_be_visible()
    expect(page.locator(".nav-questions")).to_have_count(0)


# A passage that asks a question with `kalends ask` (its first argument: the kalends
# executable), waits for the answer and reports it.
ASKING_PASSAGE = """\
set -e
answer=$("$1" ask "Deploy the mirror now?" --choice go=yes,later --confirm ok \\
  --label "ok=I checked the disk")
"$1" report completed --summary "answered: $(echo "$answer" | tr '\\n' ' ')"
"""


def schedule_doc(server: Server, mission: str) -> dict[str, Any]:
    shown = server.cli_here("schedule", "show", mission, "--json", actor=server.owner)
    assert shown.exit_code == 0, (shown.stdout, shown.stderr)
    doc: dict[str, Any] = json.loads(shown.stdout)
    return doc


def wait_until(what: str, check: Callable[[], Any], within: float = 30.0) -> Any:
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen within {within} s"
        time.sleep(0.25)


def test_a_passage_asks_and_a_click_becomes_its_confirmed_human_decision(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    workspace = server.directory / "workspaces" / "home"
    (workspace / "ask.sh").write_text(ASKING_PASSAGE)
    kalends = str(Path(sys.executable).with_name("kalends"))
    made = server.cli_here(
        "schedule",
        "create",
        "home",
        "--title",
        "Mirror deploy",
        "--command",
        f"sh ask.sh {kalends}",
        "--daily",
        "02:30",
        "--zone",
        "America/New_York",
        "--json",
        actor=server.owner,
    )
    assert made.exit_code == 0, (made.stdout, made.stderr)
    mission = json.loads(made.stdout)["missionId"]
    for action in ("play", "run-now"):
        done = server.cli_here("schedule", action, mission, actor=server.owner)
        assert done.exit_code == 0, (action, done.stdout, done.stderr)
    server.wake()

    def asked() -> Question | None:
        with questions_of(server) as service:
            found = service.list_open(server.owner, UUID(home["id"]))
        return next((q for q in found if q.prompt == "Deploy the mirror now?"), None)

    question: Question = wait_until("the passage's question", asked)
    assert question.schedule_id == UUID(mission)
    page.goto(f"{server.base_url}/questions/{question.id}")
    expect(page.get_by_role("link", name="Mirror deploy")).to_have_attribute(
        "href", f"/w/{home['id']}/schedules/{mission}"
    )
    passage_link = page.get_by_role("link", name=question.passage_id)
    expect(passage_link).to_have_attribute(
        "href", f"/w/{home['id']}/schedules/{mission}/passages/{question.passage_id}"
    )
    page.get_by_role("radio", name="later").check()
    page.get_by_role("checkbox", name="I checked the disk").check()
    page.get_by_role("button", name=SEND).click()
    expect(page.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()

    # The passage reads the answer and acknowledges it: the mark is confirmed.
    def confirmed() -> bool:
        _, marks = state_of(server, question)
        return [state for state, _ in marks] == [MarkState.CONFIRMED]

    wait_until("the passage's acknowledgement", confirmed)
    page.reload()
    expect(page.locator("#decision")).to_have_text(
        "✓ Decided by a person in the kalends interface (confirmed)"
    )
    expect(page.locator("#mark")).to_contain_text("Hand-over to the passage: confirmed")

    # The passage went on with the answer and reported it.
    def reported() -> str | None:
        doc = schedule_doc(server, mission)
        latest = doc.get("latestResult") or {}
        return str(latest.get("summary")) if doc["pending"] is None and latest else None

    summary = wait_until("the passage's report", reported)
    assert summary == "answered: go=later ok=true ", summary
    page.get_by_role("link", name=question.passage_id).click()
    expect(page.get_by_role("heading", name="Questions waiting for an answer (0)")).to_be_visible()
    check_axe_both(page, "passage with its question answered")
