"""The question pages without a browser, on SQLite and PostgreSQL: a workspace's open
questions, a question's typed form (a radio group, a text area with its limit, a check
box), the one-use token the page's script asks for and the two ways an answer is
recorded — with the token, an interface answer with a pending mark that counts as a
person's decision once the passage confirms it; without one, an answer recorded with no
mark that never counts — and each refusal: a token for another answer, a viewer, a
non-member, a stale revision, a bad value beside its field; the Now page's questions
waiting and the navigation's count."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from fastapi.testclient import TestClient

from kalends.questions import AnswerVia, MarkState, Question, QuestionState
from pages.conftest import Pages, csrf_of

FIELDS: list[dict[str, Any]] = [
    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]},
    {"id": "why", "kind": "text", "label": "Why?", "maxLength": 40},
    {"id": "ok", "kind": "confirm", "label": "I read the logs"},
]
GOOD = {"answer-go": "later", "answer-why": "Tests are red\r\non main", "answer-ok": "yes"}
CHECKED = {"go": "later", "why": "Tests are red\non main", "ok": True}


def _alice(pages: Pages) -> UUID:
    return pages.world.actors["alice"].id


def _ask(pages: Pages, prompt: str = "Release 2.0 tonight?", passage: str = "psg_q_1") -> Question:
    pages.world.clock.advance(60)  # asked a minute apart: oldest first is well defined
    return pages.world.services.questions.ask(
        workspace_id=pages.world.home.id,
        schedule_id=None,
        passage_id=passage,
        prompt=prompt,
        fields=FIELDS,
    )


def _bob(pages: Pages) -> tuple[TestClient, str]:
    client = pages.sign_in("bob")
    return client, csrf_of(client.get("/").text)


def _read(pages: Pages, question: Question) -> Question:
    return pages.world.services.questions.get(_alice(pages), question.id)


def _field_error(html: str, field: str) -> str:
    found = re.search(rf'<p class="error" id="err-{field}">([^<]*)</p>', html)
    assert found is not None, f"no error beside {field}"
    return found.group(1)


def _mint(client: TestClient, question: Question, data: dict[str, str]) -> str:
    reply = client.post(f"/questions/{question.id}/token", data=data)
    assert reply.status_code == 200, reply.text
    token = reply.json()["token"]
    assert isinstance(token, str) and token.startswith("kans_")
    return token


class TestThePages:
    def test_the_workspace_lists_its_open_questions(self, pages: Pages) -> None:
        first = _ask(pages, "Release 2.0 tonight?")
        second = _ask(pages, "Rotate <the> keys?", passage="psg_q_2")
        client, _ = _bob(pages)
        page = client.get(f"/w/{pages.world.home.id}/questions").text
        assert "<h1>Questions — home</h1>" in page
        assert "Waiting for an answer (2)" in page
        assert (
            f'<a href="/questions/{first.id}" class="question-prompt">Release 2.0 tonight?</a>'
            in page
        )
        assert "Rotate &lt;the&gt; keys?" in page and "<code>psg_q_2</code>" in page
        assert page.index(str(first.id)) < page.index(str(second.id))

    def test_the_question_shows_its_typed_form(self, pages: Pages) -> None:
        question = _ask(pages)
        client, _ = _bob(pages)
        page = client.get(f"/questions/{question.id}").text
        assert '<p class="question-text">Release 2.0 tonight?</p>' in page
        assert "passage <code>psg_q_1</code>" in page and "Waiting for an answer" in page
        assert "<legend>Ship it?</legend>" in page
        assert '<input type="radio" name="answer-go" value="yes">' in page
        assert '<input type="radio" name="answer-go" value="later">' in page
        assert re.search(r'<textarea id="f-why" name="answer-why" rows="4" maxlength="40"', page)
        assert "at most 40 characters" in page
        assert '<input type="checkbox" id="f-ok" name="answer-ok" value="yes">' in page
        assert f'action="/questions/{question.id}/answer"' in page
        assert f'data-token-url="/questions/{question.id}/token"' in page
        assert '<input type="hidden" name="expected_revision" value="1">' in page
        assert '<input type="hidden" name="token" value="">' in page
        assert '<script src="/static/questions.js' in page


class TestAnswering:
    def test_with_a_token_a_pending_mark_then_a_persons_decision_once_confirmed(
        self, pages: Pages
    ) -> None:
        question = _ask(pages)
        client, csrf = _bob(pages)
        form = {"csrf": csrf, "expected_revision": "1", **GOOD}
        token = _mint(client, question, form)
        reply = client.post(
            f"/questions/{question.id}/answer",
            data={**form, "token": token},
            follow_redirects=False,
        )
        assert reply.status_code == 303, reply.text
        assert reply.headers["location"] == f"/questions/{question.id}?done=answered"
        answered = _read(pages, question)
        assert answered.state is QuestionState.ANSWERED
        assert answered.answer == CHECKED
        assert answered.answered_via is AnswerVia.UI
        assert answered.answered_by == pages.world.actors["bob"].id
        service = pages.world.services.questions
        marks = service.marks(_alice(pages), question.id)
        assert [(m.state, m.attempt_id, m.principal_kind.value) for m in marks] == [
            (MarkState.PENDING, answered.attempt_id, "session")
        ]
        page = client.get(reply.headers["location"]).text
        assert "Answer recorded." in page
        assert "Not a person&#39;s decision: the interface answer&#39;s hand-over is not " in page
        assert "waiting for the passage to read the answer and confirm it has it (pending)" in page
        assert '<dd class="answer-value">later</dd>' in page
        assert '<dd class="answer-value">Yes</dd>' in page
        assert "by <strong>bob</strong> through the kalends interface" in page
        assert "Send the answer" not in page

        assert answered.attempt_id is not None
        service.confirm_handover(question.id, answered.attempt_id)
        page = client.get(f"/questions/{question.id}").text
        assert "Decided by a person in the kalends interface (confirmed)" in page
        assert service.decision(_alice(pages), question.id).decided_by == "human"
        # The token was used up: it answers nothing again.
        again = client.post(f"/questions/{question.id}/token", data=form)
        assert again.status_code == 409 and again.json()["code"] == "conflict"

    def test_without_a_token_recorded_with_no_mark_and_never_a_persons_decision(
        self, pages: Pages
    ) -> None:
        question = _ask(pages)
        client, csrf = _bob(pages)
        reply = client.post(
            f"/questions/{question.id}/answer",
            data={"csrf": csrf, "expected_revision": "1", "token": "", **GOOD},
            follow_redirects=False,
        )
        assert reply.status_code == 303, reply.text
        answered = _read(pages, question)
        assert answered.state is QuestionState.ANSWERED and answered.answer == CHECKED
        assert answered.answered_via is AnswerVia.UI and answered.attempt_id is None
        service = pages.world.services.questions
        assert service.marks(_alice(pages), question.id) == []
        decided = service.decision(_alice(pages), question.id)
        assert decided.decided_by is None and decided.human_gate == "unmet"
        page = client.get(reply.headers["location"]).text
        assert (
            "Not a person&#39;s decision: answered in the kalends interface without a "
            "hand-over mark" in page
        )
        assert 'id="mark"' not in page

    def test_the_passages_own_decision_is_said_as_such(self, pages: Pages) -> None:
        question = _ask(pages)
        service = pages.world.services.questions
        service.coordinator_decision("psg_q_1", question.id, CHECKED)
        client, _ = _bob(pages)
        page = client.get(f"/questions/{question.id}").text
        assert "Decided by the passage itself (the coordinator), not by a person" in page
        assert '<p id="decision" class="decision coordinator">' in page
        assert "through the passage itself" in page

    def test_a_token_answers_only_its_exact_answer_and_a_refusal_writes_nothing(
        self, pages: Pages
    ) -> None:
        question = _ask(pages)
        client, csrf = _bob(pages)
        form = {"csrf": csrf, "expected_revision": "1", **GOOD}
        token = _mint(client, question, form)
        other = {**form, "answer-go": "yes", "token": token}
        refused = client.post(f"/questions/{question.id}/answer", data=other)
        assert refused.status_code == 403
        assert "Not recorded: the answer token is for another answer; nothing was written." in (
            refused.text
        )
        # The typed answer is kept in the form.
        assert '<input type="radio" name="answer-go" value="yes" checked>' in refused.text
        assert ">Tests are red\non main</textarea>" in refused.text
        assert _read(pages, question).state is QuestionState.OPEN
        assert pages.world.services.questions.marks(_alice(pages), question.id) == []
        forged = client.post(
            f"/questions/{question.id}/answer", data={**form, "token": "kans_" + "x" * 40}
        )
        assert forged.status_code == 403 and "no such answer token" in forged.text
        assert _read(pages, question).revision == 1
        # The refused token is still good for the answer it was minted for.
        done = client.post(
            f"/questions/{question.id}/answer",
            data={**form, "token": token},
            follow_redirects=False,
        )
        assert done.status_code == 303
        assert [
            m.state for m in pages.world.services.questions.marks(_alice(pages), question.id)
        ] == [MarkState.PENDING]
        used = client.post(f"/questions/{question.id}/answer", data={**form, "token": token})
        assert used.status_code == 409

    def test_a_token_of_another_session_or_an_expired_one_is_refused(self, pages: Pages) -> None:
        question = _ask(pages)
        client, csrf = _bob(pages)
        form = {"csrf": csrf, "expected_revision": "1", **GOOD}
        token = _mint(client, question, form)
        # Signed in again: a new session, whose answers the first one's token is not for.
        again = pages.sign_in("bob")
        fresh = csrf_of(again.get("/").text)
        assert fresh != csrf
        other = again.post(
            f"/questions/{question.id}/answer", data={**form, "csrf": fresh, "token": token}
        )
        assert other.status_code == 403
        assert "the answer token is for another session or device; nothing was written" in (
            other.text
        )
        late = _mint(again, question, {**form, "csrf": fresh})
        pages.world.clock.advance(10 * 60)
        expired = again.post(
            f"/questions/{question.id}/answer", data={**form, "csrf": fresh, "token": late}
        )
        assert expired.status_code == 403
        assert "the answer token has expired; nothing was written" in expired.text
        assert _read(pages, question).state is QuestionState.OPEN
        assert pages.world.services.questions.marks(_alice(pages), question.id) == []

    def test_a_bad_value_is_refused_beside_its_field_with_the_answer_kept(
        self, pages: Pages
    ) -> None:
        question = _ask(pages)
        client, csrf = _bob(pages)
        form = {"csrf": csrf, "expected_revision": "1", **GOOD}
        missing = {k: v for k, v in form.items() if k != "answer-go"}
        reply = client.post(f"/questions/{question.id}/answer", data=missing)
        assert reply.status_code == 422
        assert _field_error(reply.text, "go") == "Missing; every field needs a value"
        assert '<a href="#f-go">Ship it? — Missing; every field needs a value</a>' in reply.text
        assert ">Tests are red\non main</textarea>" in reply.text
        long = client.post(
            f"/questions/{question.id}/answer", data={**form, "answer-why": "w" * 41}
        )
        assert long.status_code == 422
        assert _field_error(long.text, "why") == "Is 41 characters; at most 40"
        assert 'aria-invalid="true" autofocus>' + "w" * 41 + "</textarea>" in long.text
        bogus = client.post(f"/questions/{question.id}/answer", data={**form, "answer-go": "never"})
        assert bogus.status_code == 422
        assert _field_error(bogus.text, "go").startswith("Must be one of the options")
        minted = client.post(f"/questions/{question.id}/token", data=missing)
        assert minted.status_code == 422 and minted.json()["field"] == "answer.go"
        assert _read(pages, question).state is QuestionState.OPEN

    def test_a_stale_revision_is_409_with_the_typed_answer_kept(self, pages: Pages) -> None:
        question = _ask(pages)
        client, csrf = _bob(pages)
        form = {"csrf": csrf, "expected_revision": "1", **GOOD}
        stale = client.post(
            f"/questions/{question.id}/answer", data={**form, "expected_revision": "7"}
        )
        assert stale.status_code == 409
        assert "expected revision 7, it is 1" in stale.text
        assert '<input type="radio" name="answer-go" value="later" checked>' in stale.text
        assert _read(pages, question).state is QuestionState.OPEN
        # Answered meanwhile elsewhere: 409, and what was typed is shown, not recorded.
        pages.world.services.questions.answer_from_api(
            _alice(pages), question.id, {"go": "yes", "why": "", "ok": False}, 1
        )
        late = client.post(f"/questions/{question.id}/answer", data=form)
        assert late.status_code == 409
        assert "What you had answered (not recorded)" in late.text
        assert "Not a person&#39;s decision: answered through the API" in late.text
        assert _read(pages, question).answer == {"go": "yes", "why": "", "ok": False}


class TestWhoMay:
    def test_a_viewer_reads_without_a_form_and_a_forged_post_is_refused(self, pages: Pages) -> None:
        question = _ask(pages)
        carol = pages.sign_in("carol")
        csrf = csrf_of(carol.get("/").text)
        page = carol.get(f"/questions/{question.id}")
        assert page.status_code == 200 and "Release 2.0 tonight?" in page.text
        assert "Send the answer" not in page.text and 'name="answer-go"' not in page.text
        assert "you can read this question but not answer it" in page.text
        form = {"csrf": csrf, "expected_revision": "1", **GOOD}
        assert carol.post(f"/questions/{question.id}/answer", data=form).status_code == 403
        minted = carol.post(f"/questions/{question.id}/token", data=form)
        assert minted.status_code == 403 and "token" not in minted.json()
        assert _read(pages, question).state is QuestionState.OPEN

    def test_a_non_member_gets_nothing(self, pages: Pages) -> None:
        question = _ask(pages)
        dave = pages.sign_in("dave")
        csrf = csrf_of(dave.get("/").text)
        assert dave.get(f"/questions/{question.id}").status_code == 404
        assert dave.get(f"/w/{pages.world.home.id}/questions").status_code == 404
        form = {"csrf": csrf, "expected_revision": "1", **GOOD}
        assert dave.post(f"/questions/{question.id}/answer", data=form).status_code == 404
        assert dave.post(f"/questions/{question.id}/token", data=form).status_code == 404
        assert "Release 2.0" not in dave.get("/").text
        assert _read(pages, question).state is QuestionState.OPEN

    def test_the_token_needs_the_sessions_csrf_and_a_session(self, pages: Pages) -> None:
        question = _ask(pages)
        client, _ = _bob(pages)
        form = {"csrf": "forged", "expected_revision": "1", **GOOD}
        assert client.post(f"/questions/{question.id}/token", data=form).status_code == 403
        anon = pages.client("alice")
        signed_out = anon.post(f"/questions/{question.id}/token", data=form)
        assert signed_out.status_code == 401
        assert signed_out.json() == {"code": "sign-in-required", "message": "sign in again"}


class TestNow:
    def test_the_now_page_and_the_navigation_count_the_questions_waiting(
        self, pages: Pages
    ) -> None:
        client, csrf = _bob(pages)
        assert "question waiting" not in client.get("/").text
        first = _ask(pages, "Release 2.0 tonight?")
        _ask(pages, "Rotate the keys?", passage="psg_q_2")
        now = client.get("/").text
        assert "Questions waiting for you (2)" in now
        assert f'<a href="/questions/{first.id}">Release 2.0 tonight?</a>' in now
        assert '<span class="badge warn nav-questions">2 questions waiting</span>' in now
        client.post(
            f"/questions/{first.id}/answer",
            data={"csrf": csrf, "expected_revision": "1", **GOOD},
        )
        now = client.get("/").text
        assert "Questions waiting for you (1)" in now
        assert '<span class="badge warn nav-questions">1 question waiting</span>' in now
        # Elsewhere too: the count is in every page's navigation.
        other = client.get(f"/w/{pages.world.home.id}/questions").text
        assert "1 question waiting</span>" in other


class TestThePassage:
    def test_the_passage_lists_its_questions_and_the_question_links_back(
        self, pages: Pages
    ) -> None:
        schedule = pages.schedule("bob", "Nightly release")
        schedules = pages.world.services.schedules
        bob = pages.world.actors["bob"].id
        schedules.run_now(bob, schedule, request_id="run-questions-1", expected_revision=1)
        passage = schedules.detail(bob, schedule)["pending"]["passageId"]
        pages.world.clock.advance(60)
        question = pages.world.services.questions.ask(
            workspace_id=pages.world.home.id,
            schedule_id=UUID(schedule),
            passage_id=passage,
            prompt="Tag the release?",
            fields=FIELDS,
        )
        _ask(pages, "Another passage's question", passage="psg_q_other")
        client, csrf = _bob(pages)
        passage_url = f"/w/{pages.world.home.id}/schedules/{schedule}/passages/{passage}"
        page = client.get(passage_url).text
        assert "Questions waiting for an answer (1)" in page
        assert f'<a href="/questions/{question.id}">Tag the release?</a>' in page
        assert "Another passage" not in page
        shown = client.get(f"/questions/{question.id}").text
        assert f'passage <a href="{passage_url}"><code>{passage}</code></a>' in shown
        assert (
            f'of schedule <a href="/w/{pages.world.home.id}/schedules/{schedule}">'
            "Nightly release</a>" in shown
        )
        client.post(
            f"/questions/{question.id}/answer",
            data={"csrf": csrf, "expected_revision": "1", **GOOD},
        )
        page = client.get(passage_url).text
        assert "Questions waiting for an answer (0)" in page
        assert "This passage waits on no question." in page
