"""Interface answers: the one-use token bound to question, form, answer and principal,
the pending mark written with the answer in one transaction, its confirmation and the
human gate it leads to (seed 002, "Wayfinder human decision mark"). The rules of the
hand-over itself (delivery, failure at the archive, revalidation) are in
``test_handover_rules.py``."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from kalends.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    LimitReached,
    NotFound,
    RevisionConflict,
)
from kalends.questions import (
    ANSWER_TOKEN_PREFIX,
    ANSWER_TOKEN_TTL,
    CAUSE_PENDING,
    MAX_LIVE_TOKENS,
    AnswerTokenRefused,
    AnswerVia,
    MarkState,
    PrincipalKind,
    Question,
    QuestionState,
    records,
)
from kalends.storage.question_tables import answer_tokens, questions
from kalends.storage.testing import nothing_written

from .conftest import ANSWER, PASSAGE, World
from .principals import live_session

OTHER_ANSWER = {**ANSWER, "go": "later"}


def mint(world: World, question: Question, answer: Any = None, **principal: Any) -> str:
    who = world.session(world.bob, **principal)
    return world.questions.mint_token(world.bob.id, who, question.id, answer or ANSWER)


class TestMint:
    def test_a_token_is_a_prefixed_secret_kept_only_as_its_digest(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        assert secret.startswith(ANSWER_TOKEN_PREFIX)
        (row,) = world.rows(answer_tokens)
        stored = dict(zip(answer_tokens.c.keys(), row, strict=True))
        assert secret not in {str(value) for value in stored.values()}
        assert stored["question_id"] == asked.id
        assert stored["schema_digest"] == asked.schema_digest
        assert (stored["principal_kind"], stored["principal_id"]) == ("session", "session-1")
        assert stored["minted_at"] == world.clock.now()
        assert stored["expires_at"] == world.clock.now() + timedelta(minutes=10)
        assert stored["consumed_at"] is None

    def test_roles_owner_and_editor_mint_a_viewer_is_forbidden_a_stranger_finds_nothing(
        self, world: World
    ) -> None:
        asked = world.ask()
        q = world.questions
        assert q.mint_token(world.alice.id, world.session(world.alice), asked.id, ANSWER)
        assert q.mint_token(world.bob.id, world.device(world.bob), asked.id, ANSWER)
        with nothing_written(world.store):
            with pytest.raises(Forbidden):
                q.mint_token(world.carol.id, world.session(world.carol), asked.id, ANSWER)
            with pytest.raises(NotFound):
                q.mint_token(world.dave.id, world.session(world.dave), asked.id, ANSWER)

    def test_another_actors_principal_is_forbidden(self, world: World) -> None:
        asked = world.ask()
        with nothing_written(world.store), pytest.raises(Forbidden):
            world.questions.mint_token(world.bob.id, world.session(world.alice), asked.id, ANSWER)

    @pytest.mark.parametrize(
        ("answer", "principal", "field"),
        [
            ({"go": "no"}, None, "answer.go"),  # not an option
            ("yes", None, "answer"),  # not an object
            (ANSWER, ("session", "s"), "principal"),  # a pair, not a principal
        ],
    )
    def test_bad_input_is_refused_and_writes_nothing(
        self, world: World, answer: Any, principal: Any, field: str
    ) -> None:
        asked = world.ask()
        who = world.session(world.bob) if principal is None else principal
        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.questions.mint_token(world.bob.id, who, asked.id, answer)
        assert caught.value.field == field

    def test_an_answered_question_takes_no_token(self, world: World) -> None:
        asked = world.ask()
        world.questions.answer_from_api(world.bob.id, asked.id, ANSWER, 1)
        with nothing_written(world.store), pytest.raises(Conflict):
            mint(world, asked)

    def test_unused_tokens_are_bounded_and_expired_ones_dropped(self, world: World) -> None:
        asked = world.ask()
        for _ in range(MAX_LIVE_TOKENS):
            mint(world, asked)
        with nothing_written(world.store), pytest.raises(LimitReached):
            mint(world, asked)
        world.clock.advance(ANSWER_TOKEN_TTL)
        mint(world, asked)
        assert len(world.rows(answer_tokens)) == 1


class TestAnswerFromUi:
    def test_the_answer_and_a_pending_mark_are_written_together(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        world.clock.advance(3)
        now = world.clock.now()
        given = world.questions.answer_from_ui(
            world.bob.id, world.session(world.bob), asked.id, ANSWER, secret, 1
        )
        done = given.question
        assert str(uuid.UUID(given.attempt_id)) == given.attempt_id
        assert (done.state, done.answered_via, done.answered_by) == (
            QuestionState.ANSWERED,
            AnswerVia.UI,
            world.bob.id,
        )
        assert (done.answer, done.answered_at, done.revision) == (ANSWER, now, 2)
        assert done.attempt_id == given.attempt_id
        (mark,) = world.questions.marks(world.carol.id, asked.id)
        assert (mark.attempt_id, mark.state, mark.via, mark.passage_id) == (
            given.attempt_id,
            MarkState.PENDING,
            "ui",
            PASSAGE,
        )
        assert (mark.principal_kind, mark.principal_id) == (PrincipalKind.SESSION, "session-1")
        assert mark.answered_at == mark.created_at == now
        assert mark.confirmed_at is None
        (token,) = world.rows(answer_tokens)
        assert token[answer_tokens.c.keys().index("consumed_at")] == now
        told = world.questions.decision(world.carol.id, asked.id)
        assert (told.decided_by, told.human_gate, told.cause) == (None, "unmet", CAUSE_PENDING)

    def test_a_failure_after_the_answer_leaves_no_answer_no_mark_and_the_token_unused(
        self, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        asked = world.ask()
        secret = mint(world, asked)

        def broken(*args: Any) -> Any:
            raise RuntimeError("the mark could not be written")

        monkeypatch.setattr(records, "write_mark", broken)
        with nothing_written(world.store), pytest.raises(RuntimeError):
            world.questions.answer_from_ui(
                world.bob.id, world.session(world.bob), asked.id, ANSWER, secret, 1
            )

    def test_roles_of_answering_from_the_interface(self, world: World) -> None:
        asked = world.ask()
        q = world.questions
        with nothing_written(world.store):
            with pytest.raises(Forbidden):
                q.answer_from_ui(
                    world.carol.id, world.session(world.carol), asked.id, ANSWER, "x", 1
                )
            with pytest.raises(NotFound):
                q.answer_from_ui(world.dave.id, world.session(world.dave), asked.id, ANSWER, "x", 1)
        secret = q.mint_token(world.alice.id, world.device(world.alice), asked.id, ANSWER)
        done = q.answer_from_ui(
            world.alice.id, world.device(world.alice), asked.id, ANSWER, secret, 1
        )
        assert done.question.answered_by == world.alice.id

    def test_a_stale_revision_refuses_and_keeps_the_token(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        who = world.session(world.bob)
        with nothing_written(world.store), pytest.raises(RevisionConflict):
            world.questions.answer_from_ui(world.bob.id, who, asked.id, ANSWER, secret, 2)
        assert world.questions.answer_from_ui(world.bob.id, who, asked.id, ANSWER, secret, 1)

    def test_an_answered_question_is_refused(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        world.questions.answer_from_api(world.alice.id, asked.id, ANSWER, 1)
        with nothing_written(world.store), pytest.raises(Conflict) as caught:
            world.questions.answer_from_ui(
                world.bob.id, world.session(world.bob), asked.id, ANSWER, secret, 2
            )
        assert type(caught.value) is Conflict

    @pytest.mark.parametrize(
        ("answer", "revision", "field"),
        [
            ({"go": "maybe"}, 1, "answer.go"),  # not an option
            (ANSWER, 0, "expected_revision"),  # out of range
            (ANSWER, None, "expected_revision"),  # missing
        ],
    )
    def test_bad_input_is_refused_and_writes_nothing(
        self, world: World, answer: Any, revision: Any, field: str
    ) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.questions.answer_from_ui(
                world.bob.id, world.session(world.bob), asked.id, answer, secret, revision
            )
        assert caught.value.field == field


class TestTokenBinding:
    """Each mismatch is refused with its reason, writes nothing, and leaves the token
    usable for the answer it was minted for."""

    def refused(
        self,
        world: World,
        question: Question,
        secret: Any,
        reason: str,
        *,
        answer: Any = None,
        kind: str = "session",
        principal_id: str = "session-1",
    ) -> None:
        who = (world.session if kind == "session" else world.device)(world.bob, principal_id)
        with nothing_written(world.store), pytest.raises(AnswerTokenRefused) as caught:
            world.questions.answer_from_ui(
                world.bob.id, who, question.id, answer or ANSWER, secret, question.revision
            )
        assert caught.value.message == f"token: {reason}; nothing was written"
        assert caught.value.details["field"] == "token"

    def still_usable(self, world: World, question: Question, secret: str) -> None:
        done = world.questions.answer_from_ui(
            world.bob.id, world.session(world.bob), question.id, ANSWER, secret, 1
        )
        assert done.question.answered_via is AnswerVia.UI

    def test_a_token_of_another_question(self, world: World) -> None:
        asked, other = world.ask(), world.ask()
        secret = mint(world, other)
        self.refused(world, asked, secret, "the answer token is for another question")
        self.still_usable(world, other, secret)

    def test_a_token_of_another_form(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        with world.store.transaction() as conn:
            conn.execute(update(questions).values(schema_digest="0" * 64))
        changed = world.questions.get(world.bob.id, asked.id)
        self.refused(world, changed, secret, "the answer token is for another form of the question")

    def test_a_token_of_another_answer(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        self.refused(
            world, asked, secret, "the answer token is for another answer", answer=OTHER_ANSWER
        )
        self.still_usable(world, asked, secret)

    def test_a_device_never_poses_as_a_session_of_the_same_id(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        self.refused(
            world,
            asked,
            secret,
            "the answer token is for another session or device",
            kind="device",
        )
        self.still_usable(world, asked, secret)

    def test_another_session_of_the_same_actor(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        self.refused(
            world,
            asked,
            secret,
            "the answer token is for another session or device",
            principal_id="session-2",
        )
        self.still_usable(world, asked, secret)

    @pytest.mark.parametrize(
        "secret",
        [
            ANSWER_TOKEN_PREFIX + "unknown",  # well-formed, never minted
            "kapi_" + "x" * 40,  # another kind of secret
            "",  # empty
            7,  # not text
        ],
    )
    def test_an_unknown_or_malformed_token(self, world: World, secret: Any) -> None:
        asked = world.ask()
        self.refused(world, asked, secret, "no such answer token")

    def test_a_token_expires_ten_minutes_after_its_minting(self, world: World) -> None:
        asked = world.ask()
        late = mint(world, asked)
        world.clock.advance(ANSWER_TOKEN_TTL)
        self.refused(world, asked, late, "the answer token has expired")
        in_time = mint(world, asked)
        world.clock.advance(ANSWER_TOKEN_TTL - timedelta(seconds=1))
        self.still_usable(world, asked, in_time)

    def test_a_token_serves_once(self, world: World) -> None:
        asked = world.ask()
        secret = mint(world, asked)
        world.questions.answer_from_ui(
            world.bob.id, world.session(world.bob), asked.id, ANSWER, secret, 1
        )
        # Nothing in kalends reopens an answered question; were it open again, the used
        # token would still answer nothing.
        with world.store.transaction() as conn:
            conn.execute(update(questions).values(state="open", answer=None, attempt_id=None))
        reopened = world.questions.get(world.bob.id, asked.id)
        self.refused(world, reopened, secret, "the answer token was already used")


class TestHandover:
    def given(self, world: World) -> tuple[Question, str]:
        asked = world.ask()
        who = live_session(world.store, world.bob).principal
        secret = world.questions.mint_token(world.bob.id, who, asked.id, ANSWER)
        done = world.questions.answer_from_ui(world.bob.id, who, asked.id, ANSWER, secret, 1)
        return done.question, done.attempt_id

    def test_a_confirmed_hand_over_is_the_humans_decision(self, world: World) -> None:
        question, attempt = self.given(world)
        world.clock.advance(2)
        mark = world.questions.confirm_handover(question.id, attempt)
        assert (mark.state, mark.confirmed_at) == (MarkState.CONFIRMED, world.clock.now())
        told = world.questions.decision(world.carol.id, question.id)
        assert told.to_json() == {
            "questionId": str(question.id),
            "decidedBy": "human",
            "humanGate": "met",
            "refusal": None,
            "cause": None,
        }
        # Confirming again changes nothing.
        world.clock.advance(2)
        with nothing_written(world.store):
            assert world.questions.confirm_handover(question.id, attempt) == mark

    def test_an_unread_unacknowledged_hand_over_stays_pending_and_never_qualifies(
        self, world: World
    ) -> None:
        question, attempt = self.given(world)
        world.clock.advance(timedelta(days=30))
        (mark,) = world.questions.marks(world.alice.id, question.id)
        assert (mark.attempt_id, mark.state) == (attempt, MarkState.PENDING)
        told = world.questions.decision(world.alice.id, question.id)
        assert (told.decided_by, told.human_gate, told.cause) == (None, "unmet", CAUSE_PENDING)

    def test_unknown_and_malformed_attempts_are_refused(self, world: World) -> None:
        question, _attempt = self.given(world)
        act = world.questions.confirm_handover
        with nothing_written(world.store):
            with pytest.raises(NotFound):
                act(question.id, str(uuid.uuid4()))
            with pytest.raises(NotFound):
                act(uuid.uuid4(), str(uuid.uuid4()))
            with pytest.raises(InvalidInput) as caught:
                act(question.id, "not-an-attempt")
            assert caught.value.field == "attempt"
