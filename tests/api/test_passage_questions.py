"""A passage's questions over HTTP (the HTTP form of ``kalends ask``), with its own
HMAC-signed token: ask in its schedule's workspace, read its own questions back (the
first read of an interface answer delivers its mark), acknowledge an interface answer's
attempt (the mark becomes confirmed while the session that answered is live), decide
itself. Every refusal writes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from api.conftest import ApiWorld
from api.questions_support import (
    ANSWER,
    FIELDS,
    Asker,
    admit,
    ask,
    bob_session,
    error,
    schedule_in_home,
    ui_answer,
)
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.runtime.token import sign
from kalends.questions import (
    CAUSE_UNCONFIRMED,
    HUMAN_DECISION_REQUIRED,
    MAX_OPEN_PER_PASSAGE,
    MarkState,
)
from kalends.storage.testing import nothing_written
from runtime.support import kill_families

ASK = "/api/passages/questions"


@dataclass(frozen=True, slots=True)
class Passages:
    runtime: ProcessRuntime
    schedule: str
    a: Asker
    b: Asker
    # A passage whose start record names a schedule this database does not know.
    stray: Asker


@pytest.fixture
def passages(api: ApiWorld) -> Iterator[Passages]:
    root = api.root / "runtime"
    runtime = ProcessRuntime(root, clock=api.clock)
    schedule = schedule_in_home(api)
    try:
        yield Passages(
            runtime,
            schedule,
            admit(runtime, api, "a", schedule),
            admit(runtime, api, "b", schedule),
            admit(runtime, api, "stray", "sch_unknown"),
        )
    finally:
        kill_families(root)


def url(question: object, tail: str = "") -> str:
    return f"{ASK}/{question}{tail}"


class TestAsk:
    def test_the_question_lands_in_the_workspace_of_the_passages_own_schedule(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        reply = api.client.post(
            ASK,
            json={"prompt": "Ship the release?", "fields": FIELDS, "tag": "ship"},
            headers=passages.a.headers,
        )

        assert reply.status_code == 201, reply.text
        body = reply.json()
        stored = api.services.questions.get(api.actors["carol"].id, body["id"])
        assert body == {**stored.to_json(), "attemptId": None}
        now = api.clock.now().isoformat().replace("+00:00", "Z")
        assert {k: v for k, v in body.items() if k not in ("id", "schemaDigest")} == {
            "workspaceId": str(api.home.id),
            "scheduleId": passages.schedule,
            "passageId": "psg_a",
            "prompt": "Ship the release?",
            "fields": FIELDS,
            "tag": "ship",
            "state": "open",
            "answer": None,
            "answeredAt": None,
            "answeredBy": None,
            "answeredVia": None,
            "revision": 1,
            "askedAt": now,
            "updatedAt": now,
            "attemptId": None,
        }
        listed = api.services.questions.list_open(api.actors["carol"].id, api.home.id)
        assert [str(q.id) for q in listed] == [body["id"]]

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"prompt": "", "fields": FIELDS}, "prompt"),
            ({"prompt": "x" * 4097, "fields": FIELDS}, "prompt"),
            ({"prompt": "Ship?", "fields": []}, "fields"),
            ({"prompt": "Ship?", "fields": "go"}, "fields"),
            (
                {"prompt": "Ship?", "fields": [{"id": "go", "kind": "choice", "label": "Go?"}]},
                "fields[0].options",
            ),
            (
                {"prompt": "Ship?", "fields": [{"id": "Go", "kind": "confirm", "label": "Go?"}]},
                "fields[0].id",
            ),
            ({"prompt": "Ship?", "fields": [FIELDS[0], FIELDS[0]]}, "fields[1].id"),
            ({"prompt": "Ship?", "fields": FIELDS, "tag": "Not A Tag"}, "tag"),
            # The workspace and the schedule are the passage's own: no body names them.
            ({"prompt": "Ship?", "fields": FIELDS, "workspaceId": "x"}, "workspaceId"),
            ({"prompt": "Ship?", "fields": FIELDS, "scheduleId": "x"}, "scheduleId"),
            ({"fields": FIELDS}, "prompt"),
        ],
    )
    def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(
        self, api: ApiWorld, passages: Passages, body: dict[str, object], field: str
    ) -> None:
        with nothing_written(api.store):
            reply = api.client.post(ASK, json=body, headers=passages.a.headers)
        error(reply, 422, "invalid-input", field)

    def test_tokens_that_speak_for_no_passage_are_refused(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        body = {"prompt": "Ship?", "fields": FIELDS}
        forged = sign(b"\x00" * 32, "psg_a", "ses_a")
        crossed = passages.runtime.token("psg_a", "ses_b")
        cases = [
            {},
            {"Authorization": f"Passage {forged}"},
            {"Authorization": f"Passage {crossed}"},
            {"Authorization": "Passage "},
            {"Authorization": f"Bearer {passages.a.token}"},
            api.headers("bob"),
        ]
        with nothing_written(api.store):
            for headers in cases:
                error(
                    api.client.post(ASK, json=body, headers=headers), 401, "invalid-passage-token"
                )

    def test_a_passage_of_no_known_schedule_asks_nothing(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        with nothing_written(api.store):
            reply = api.client.post(
                ASK, json={"prompt": "Ship?", "fields": FIELDS}, headers=passages.stray.headers
            )
        error(reply, 404, "passage-without-schedule", "schedule")

    def test_a_settled_passages_token_is_spent(self, api: ApiWorld, passages: Passages) -> None:
        passages.runtime.interrupt(passages.a.session_id)  # never launched: settles at once
        assert passages.runtime.observe(passages.a.session_id).settled
        with nothing_written(api.store):
            reply = api.client.post(
                ASK, json={"prompt": "Ship?", "fields": FIELDS}, headers=passages.a.headers
            )
        error(reply, 409, "passage-settled")

    def test_a_passage_has_at_most_eight_open_questions(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        for _ in range(MAX_OPEN_PER_PASSAGE):
            ask(api, passages.a)
        with nothing_written(api.store):
            reply = api.client.post(
                ASK, json={"prompt": "Ship?", "fields": FIELDS}, headers=passages.a.headers
            )
        error(reply, 409, "limit-reached")
        ask(api, passages.b)  # another passage's count is its own


class TestRead:
    def test_a_passage_reads_its_own_question_and_the_answer_once_given(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)
        first = api.client.get(url(asked.id), headers=passages.a.headers)
        assert first.status_code == 200, first.text
        assert first.json() == {**asked.to_json(), "attemptId": None}

        given = ui_answer(api, asked)
        second = api.client.get(url(asked.id), headers=passages.a.headers)

        assert second.status_code == 200, second.text
        body = second.json()
        assert body == {**given.question.to_json(), "attemptId": given.attempt_id}
        assert (body["state"], body["answer"], body["answeredVia"]) == ("answered", ANSWER, "ui")

    def test_the_passages_first_read_of_an_interface_answer_delivers_its_mark(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)
        given = ui_answer(api, asked)
        # People reading the question and its marks deliver nothing.
        with nothing_written(api.store):
            read = api.client.get(f"/api/questions/{asked.id}", headers=api.headers("carol"))
            assert read.status_code == 200, read.text
        [mark] = read.json()["marks"]
        assert mark["deliveredAt"] is None

        api.clock.advance(3)
        first = api.client.get(url(asked.id), headers=passages.a.headers)
        assert first.status_code == 200, first.text
        assert first.json()["attemptId"] == given.attempt_id
        [delivered] = api.services.questions.marks(api.actors["bob"].id, asked.id)
        assert (delivered.state, delivered.delivered_at) == (MarkState.PENDING, api.clock.now())
        instant = api.clock.now().isoformat().replace("+00:00", "Z")
        assert delivered.to_json()["deliveredAt"] == instant

        # Read again later: the first delivery stands.
        api.clock.advance(3)
        with nothing_written(api.store):
            again = api.client.get(url(asked.id), headers=passages.a.headers)
        assert again.json() == first.json()

    def test_an_api_answer_comes_without_an_attempt(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)
        api.services.questions.answer_from_api(api.actors["bob"].id, asked.id, ANSWER, 1)
        body = api.client.get(url(asked.id), headers=passages.a.headers).json()
        assert (body["answeredVia"], body["attemptId"], body["answer"]) == ("api", None, ANSWER)

    def test_another_passages_question_does_not_exist(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)
        error(
            api.client.get(url(asked.id), headers=passages.b.headers), 404, "not-found", "question"
        )
        error(
            api.client.get(url(uuid.uuid4()), headers=passages.a.headers),
            404,
            "not-found",
            "question",
        )
        error(api.client.get(url("nope"), headers=passages.a.headers), 422, "invalid-input")
        error(api.client.get(url(asked.id)), 401, "invalid-passage-token")
        error(
            api.client.get(url(asked.id), headers=api.headers("bob")), 401, "invalid-passage-token"
        )


class TestReceived:
    def test_the_passage_confirms_the_attempt_it_received_and_the_gate_is_met(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)
        given = ui_answer(api, asked)
        bob = api.actors["bob"].id
        assert api.services.questions.decision(bob, asked.id).human_gate == "unmet"

        reply = api.client.post(
            url(asked.id, "/received"),
            json={"attemptId": given.attempt_id},
            headers=passages.a.headers,
        )

        assert reply.status_code == 200, reply.text
        [mark] = api.services.questions.marks(bob, asked.id)
        assert mark.state is MarkState.CONFIRMED
        assert reply.json() == mark.to_json()
        decided = api.services.questions.decision(bob, asked.id)
        assert (decided.decided_by, decided.human_gate, decided.refusal) == ("human", "met", None)
        # Acknowledged again: it stays confirmed, nothing changes.
        with nothing_written(api.store):
            again = api.client.post(
                url(asked.id, "/received"),
                json={"attemptId": given.attempt_id},
                headers=passages.a.headers,
            )
        assert (again.status_code, again.json()) == (200, mark.to_json())

    def test_only_the_attempt_of_the_current_answer_is_confirmed(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)
        given = ui_answer(api, asked)
        cases = [
            ({"attemptId": str(uuid.uuid4())}, passages.a, 409, "attempt-refused", "attemptId"),
            ({"attemptId": "not-an-id"}, passages.a, 422, "invalid-input", "attemptId"),
            ({"attemptId": given.attempt_id}, passages.b, 404, "not-found", "question"),
            ({}, passages.a, 422, "invalid-input", None),
            ({"attemptId": given.attempt_id, "x": 1}, passages.a, 422, "invalid-input", None),
        ]
        with nothing_written(api.store):
            for body, asker, status, code, field in cases:
                reply = api.client.post(
                    url(asked.id, "/received"), json=body, headers=asker.headers
                )
                error(reply, status, code, field)
        [mark] = api.services.questions.marks(api.actors["bob"].id, asked.id)
        assert mark.state is MarkState.PENDING

    def test_a_signed_out_session_is_refused_and_the_mark_stays_pending(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)
        session = bob_session(api)
        given = ui_answer(api, asked, session=session)
        api.client.get(url(asked.id), headers=passages.a.headers)
        api.accounts.logout(session.secret)
        with nothing_written(api.store):
            reply = api.client.post(
                url(asked.id, "/received"),
                json={"attemptId": given.attempt_id},
                headers=passages.a.headers,
            )
        error(reply, 409, "principal-gone", "attemptId")
        assert reply.json()["message"] == (
            "attemptId: the session or device that answered is signed out or revoked: the "
            "answer stands, but it cannot count as a person's decision; nothing was written"
        )
        bob = api.actors["bob"].id
        [mark] = api.services.questions.marks(bob, asked.id)
        assert mark.state is MarkState.PENDING
        decided = api.services.questions.decision(bob, asked.id)
        assert (decided.decided_by, decided.human_gate, decided.cause) == (
            None,
            "unmet",
            CAUSE_UNCONFIRMED,
        )

    def test_an_answer_given_elsewhere_has_no_attempt_to_confirm(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        api_answered, still_open = ask(api, passages.a), ask(api, passages.a)
        api.services.questions.answer_from_api(api.actors["bob"].id, api_answered.id, ANSWER, 1)
        with nothing_written(api.store):
            for asked in (api_answered, still_open):
                reply = api.client.post(
                    url(asked.id, "/received"),
                    json={"attemptId": str(uuid.uuid4())},
                    headers=passages.a.headers,
                )
                error(reply, 409, "attempt-refused", "attemptId")


class TestDecide:
    def test_the_passage_decides_itself_and_it_is_no_persons_decision(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked = ask(api, passages.a)

        reply = api.client.post(
            url(asked.id, "/decide"), json={"answer": ANSWER}, headers=passages.a.headers
        )

        assert reply.status_code == 200, reply.text
        stored = api.services.questions.get(api.actors["bob"].id, asked.id)
        assert reply.json() == {**stored.to_json(), "attemptId": None}
        assert (stored.answered_via, stored.answer, stored.answered_by) == (
            "coordinator",
            ANSWER,
            None,
        )
        decided = api.services.questions.decision(api.actors["bob"].id, asked.id)
        assert (decided.decided_by, decided.human_gate, decided.refusal) == (
            "coordinator",
            "unmet",
            HUMAN_DECISION_REQUIRED,
        )
        assert api.services.questions.marks(api.actors["bob"].id, asked.id) == []

    def test_bad_answers_and_other_passages_questions_are_refused(
        self, api: ApiWorld, passages: Passages
    ) -> None:
        asked, answered = ask(api, passages.a), ask(api, passages.a)
        api.services.questions.answer_from_api(api.actors["bob"].id, answered.id, ANSWER, 1)
        cases = [
            (asked.id, {"answer": {**ANSWER, "go": "never"}}, passages.a, 422, "answer.go"),
            (asked.id, {"answer": {**ANSWER, "extra": 1}}, passages.a, 422, "answer.extra"),
            (asked.id, {"answer": {"go": "yes", "ok": True}}, passages.a, 422, "answer.why"),
            (asked.id, {"answer": ANSWER}, passages.b, 404, "question"),
            (answered.id, {"answer": ANSWER}, passages.a, 409, "question"),
        ]
        with nothing_written(api.store):
            for question, body, asker, status, field in cases:
                reply = api.client.post(url(question, "/decide"), json=body, headers=asker.headers)
                assert reply.status_code == status, reply.text
                assert reply.json()["details"]["field"] == field, reply.text
            error(
                api.client.post(
                    url(asked.id, "/decide"), json={"answer": "yes"}, headers=passages.a.headers
                ),
                422,
                "invalid-input",
            )
