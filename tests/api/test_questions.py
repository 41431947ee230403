"""Questions over HTTP as people reach them: a workspace's open questions, one question
with who decided it and its marks, and an answer through the API (never a mark, never a
person's decision). Viewers read, editors answer, a non-member finds nothing; every
refusal writes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest

from api.conftest import ApiWorld
from api.questions_support import ANSWER, Asker, admit, ask, error, schedule_in_home, ui_answer
from kalends.missions.runtime.process import ProcessRuntime
from kalends.questions import (
    CAUSE_API,
    CAUSE_CLI,
    CAUSE_NOT_ANSWERED,
    CAUSE_PENDING,
    HUMAN_DECISION_REQUIRED,
)
from kalends.storage.testing import nothing_written
from runtime.support import kill_families


@dataclass(frozen=True, slots=True)
class Asked:
    runtime: ProcessRuntime
    asker: Asker


@pytest.fixture
def asked(api: ApiWorld) -> Iterator[Asked]:
    root = api.root / "runtime"
    runtime = ProcessRuntime(root, clock=api.clock)
    try:
        yield Asked(runtime, admit(runtime, api, "a", schedule_in_home(api)))
    finally:
        kill_families(root)


def unmet(question: object, cause: str) -> dict[str, object]:
    return {
        "questionId": str(question),
        "decidedBy": None,
        "humanGate": "unmet",
        "refusal": HUMAN_DECISION_REQUIRED,
        "cause": cause,
    }


class TestRead:
    def test_members_list_a_workspaces_open_questions_oldest_first(
        self, api: ApiWorld, asked: Asked
    ) -> None:
        made = []
        for _ in range(3):
            made.append(ask(api, asked.asker))
            api.clock.advance(timedelta(seconds=1))
        first, second, answered = made
        api.services.questions.answer_from_api(api.actors["bob"].id, answered.id, ANSWER, 1)
        for who in ("alice", "bob", "carol"):
            reply = api.client.get(
                f"/api/workspaces/{api.home.id}/questions", headers=api.headers(who)
            )
            assert reply.status_code == 200, reply.text
            assert reply.json() == [first.to_json(), second.to_json()]
        empty = api.client.get(
            f"/api/workspaces/{api.away.id}/questions", headers=api.headers("dave")
        )
        assert (empty.status_code, empty.json()) == (200, [])

    def test_a_non_member_finds_no_workspace_and_no_question(
        self, api: ApiWorld, asked: Asked
    ) -> None:
        question = ask(api, asked.asker)
        dave = api.headers("dave")
        error(
            api.client.get(f"/api/workspaces/{api.home.id}/questions", headers=dave),
            404,
            "not-found",
            "workspace",
        )
        error(
            api.client.get(f"/api/questions/{question.id}", headers=dave),
            404,
            "not-found",
            "question",
        )
        error(api.client.get(f"/api/questions/{question.id}"), 401, "unauthenticated")
        error(
            api.client.get("/api/questions/nope", headers=api.headers("bob")),
            422,
            "invalid-input",
            "question",
        )
        error(
            api.client.get(f"/api/questions/{uuid.uuid4()}", headers=api.headers("bob")),
            404,
            "not-found",
            "question",
        )

    def test_a_question_is_read_with_its_decision_and_marks(
        self, api: ApiWorld, asked: Asked
    ) -> None:
        question = ask(api, asked.asker)
        reply = api.client.get(f"/api/questions/{question.id}", headers=api.headers("carol"))
        assert reply.status_code == 200, reply.text
        assert reply.json() == {
            **question.to_json(),
            "decision": unmet(question.id, CAUSE_NOT_ANSWERED),
            "marks": [],
        }

        given = ui_answer(api, question)
        pending = api.client.get(f"/api/questions/{question.id}", headers=api.headers("carol"))
        [mark] = api.services.questions.marks(api.actors["carol"].id, question.id)
        assert pending.json() == {
            **given.question.to_json(),
            "decision": unmet(question.id, CAUSE_PENDING),
            "marks": [mark.to_json()],
        }
        assert mark.to_json()["state"] == "pending"

        api.services.questions.confirm_handover(question.id, given.attempt_id)
        confirmed = api.client.get(f"/api/questions/{question.id}", headers=api.headers("carol"))
        [mark] = api.services.questions.marks(api.actors["carol"].id, question.id)
        assert confirmed.json()["decision"] == {
            "questionId": str(question.id),
            "decidedBy": "human",
            "humanGate": "met",
            "refusal": None,
            "cause": None,
        }
        assert confirmed.json()["marks"] == [mark.to_json()]
        assert mark.to_json()["state"] == "confirmed"


class TestAnswer:
    def test_an_editor_answers_through_the_api_and_it_is_no_persons_decision(
        self, api: ApiWorld, asked: Asked
    ) -> None:
        question = ask(api, asked.asker)

        reply = api.client.post(
            f"/api/questions/{question.id}/answer",
            json={"answer": ANSWER, "expectedRevision": 1},
            headers=api.headers("bob"),
        )

        assert reply.status_code == 200, reply.text
        stored = api.services.questions.get(api.actors["bob"].id, question.id)
        assert reply.json() == {
            **stored.to_json(),
            "decision": unmet(question.id, CAUSE_API),
            "marks": [],
        }
        assert (stored.answered_via, stored.answer, stored.answered_by, stored.revision) == (
            "api",
            ANSWER,
            api.actors["bob"].id,
            2,
        )

    def test_the_command_line_says_so(self, api: ApiWorld, asked: Asked) -> None:
        question = ask(api, asked.asker)
        reply = api.client.post(
            f"/api/questions/{question.id}/answer",
            json={"answer": ANSWER, "expectedRevision": 1, "via": "cli"},
            headers=api.headers("alice"),
        )
        assert reply.status_code == 200, reply.text
        assert (reply.json()["answeredVia"], reply.json()["decision"]) == (
            "cli",
            unmet(question.id, CAUSE_CLI),
        )

    def test_refusals_write_nothing(self, api: ApiWorld, asked: Asked) -> None:
        question, answered = ask(api, asked.asker), ask(api, asked.asker)
        api.services.questions.answer_from_api(api.actors["bob"].id, answered.id, ANSWER, 1)
        ok = {"answer": ANSWER, "expectedRevision": 1}
        cases = [
            (question.id, ok, "carol", 403, "forbidden", None),
            (question.id, ok, "dave", 404, "not-found", "question"),
            (uuid.uuid4(), ok, "bob", 404, "not-found", "question"),
            (question.id, {**ok, "expectedRevision": 2}, "bob", 409, "revision-conflict", None),
            (answered.id, {**ok, "expectedRevision": 2}, "bob", 409, "conflict", "question"),
            (
                question.id,
                {**ok, "answer": {**ANSWER, "go": "no"}},
                "bob",
                422,
                "invalid-input",
                "answer.go",
            ),
            (
                question.id,
                {**ok, "answer": {**ANSWER, "why": "x" * 21}},
                "bob",
                422,
                "invalid-input",
                "answer.why",
            ),
            (
                question.id,
                {**ok, "answer": {**ANSWER, "ok": "yes"}},
                "bob",
                422,
                "invalid-input",
                "answer.ok",
            ),
            (
                question.id,
                {**ok, "answer": {"go": "yes"}},
                "bob",
                422,
                "invalid-input",
                "answer.why",
            ),
            (
                question.id,
                {**ok, "answer": {**ANSWER, "more": 1}},
                "bob",
                422,
                "invalid-input",
                "answer.more",
            ),
            (
                question.id,
                {**ok, "expectedRevision": 0},
                "bob",
                422,
                "invalid-input",
                "expectedRevision",
            ),
            (
                question.id,
                {**ok, "expectedRevision": "1"},
                "bob",
                422,
                "invalid-input",
                "expectedRevision",
            ),
            (question.id, {**ok, "via": "ui"}, "bob", 422, "invalid-input", "via"),
            (question.id, {**ok, "via": "coordinator"}, "bob", 422, "invalid-input", "via"),
            (question.id, {"answer": ANSWER}, "bob", 422, "invalid-input", "expectedRevision"),
        ]
        with nothing_written(api.store):
            for target, body, who, status, code, field in cases:
                reply = api.client.post(
                    f"/api/questions/{target}/answer", json=body, headers=api.headers(who)
                )
                error(reply, status, code, field)
            reply = api.client.post(f"/api/questions/{question.id}/answer", json=ok)
            error(reply, 401, "unauthenticated")
            # A passage's token speaks for no person.
            reply = api.client.post(
                f"/api/questions/{question.id}/answer", json=ok, headers=asked.asker.headers
            )
            error(reply, 401, "unauthenticated")
