"""The hand-over of an interface answer to its passage (seed 002, "Wayfinder human decision
mark"), which in kalends is the passage's own read of its answer:

- delivery: the passage's first read of the answer (its token's ``get``) records when
  the mark was delivered; people's reads never do;
- definitely failed: a passage that ended without ever reading its answer loses the
  pending mark at its archive (one statement whatever the number of questions); the
  answer stands and its decision says it never reached the passage;
- uncertain: a mark read but never acknowledged stays pending for good;
- revalidation: the acknowledgement confirms the mark only while the session or device
  that answered is live; otherwise it is refused and nothing is written.

Both databases.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from kalends.auth import SESSION_TTL
from kalends.errors import InvalidInput, NotFound, Unauthenticated
from kalends.missions.question_holds import fail_undelivered_handovers, told_answers_many
from kalends.questions import (
    CAUSE_NEVER_DELIVERED,
    CAUSE_PENDING,
    CAUSE_UNCONFIRMED,
    HUMAN_DECISION_REQUIRED,
    MarkState,
    Principal,
    PrincipalGone,
    PrincipalKind,
    Question,
    QuestionState,
    UiAnswer,
    drop_undelivered_marks,
)
from kalends.questions.passages import AttemptRefused, PassageQuestions
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store

from .conftest import ANSWER, PASSAGE, World
from .principals import live_session, paired_device, revoke_device, sign_out

OTHER_PASSAGE = "passage-0002"
# What each passage's token is, as the runtime's signed tokens would say.
TOKENS = {"token-a": (PASSAGE, None), "token-b": (OTHER_PASSAGE, None)}


def speaking(token: str) -> tuple[str, str | None]:
    """The passage a token speaks for; any other token is refused, as the runtime's is."""
    found = TOKENS.get(token)
    if found is None:
        raise Unauthenticated("not a passage token")
    return found


def passage(world: World) -> PassageQuestions:
    return PassageQuestions(questions=world.questions, speaker=speaking)


def answered(world: World, who: Principal | None = None, **asking: Any) -> UiAnswer:
    """A question of ``PASSAGE`` (unless ``asking`` names another) answered by bob in the
    interface with a fresh live session (or ``who``)."""
    asked = world.ask(**asking)
    principal = live_session(world.store, world.bob).principal if who is None else who
    secret = world.questions.mint_token(world.bob.id, principal, asked.id, ANSWER)
    return world.questions.answer_from_ui(
        world.bob.id, principal, asked.id, ANSWER, secret, asked.revision
    )


def archive(world: World, passage_id: str = PASSAGE) -> None:
    """What the archive's transaction does with the passage's marks."""
    with world.store.transaction() as conn:
        fail_undelivered_handovers(conn, passage_id)


def cause(world: World, question: Question) -> tuple[str | None, str, str | None]:
    found = world.questions.decision(world.alice.id, question.id)
    return found.decided_by, found.human_gate, found.cause


@contextmanager
def statements(store: Store) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(str(args[2]))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", record)


class TestDelivery:
    def test_the_passages_first_read_delivers_the_mark_once(self, world: World) -> None:
        given = answered(world)
        world.clock.advance(5)
        read_at = world.clock.now()
        found = passage(world).get("token-a", given.question.id)
        assert (found.state, found.answer, found.attempt_id) == (
            QuestionState.ANSWERED,
            ANSWER,
            given.attempt_id,
        )
        [mark] = world.questions.marks(world.alice.id, given.question.id)
        assert (mark.state, mark.delivered_at) == (MarkState.PENDING, read_at)
        assert mark.to_json()["deliveredAt"] == read_at.isoformat().replace("+00:00", "Z")
        assert cause(world, given.question) == (None, "unmet", CAUSE_UNCONFIRMED)

        world.clock.advance(5)
        with nothing_written(world.store):
            assert passage(world).get("token-a", given.question.id) == found
        [again] = world.questions.marks(world.alice.id, given.question.id)
        assert again.delivered_at == read_at

    def test_peoples_reads_deliver_nothing(self, world: World) -> None:
        given = answered(world)
        q = world.questions
        with nothing_written(world.store):
            q.get(world.carol.id, given.question.id)
            q.marks(world.carol.id, given.question.id)
            q.decision(world.bob.id, given.question.id)
            q.open_for(world.alice.id)
        [mark] = q.marks(world.alice.id, given.question.id)
        assert mark.delivered_at is None
        assert cause(world, given.question) == (None, "unmet", CAUSE_PENDING)

    def test_an_open_question_or_an_answer_of_another_door_is_only_read(self, world: World) -> None:
        still_open = world.ask()
        by_api = world.ask()
        world.questions.answer_from_api(world.bob.id, by_api.id, ANSWER, 1)
        with nothing_written(world.store):
            assert passage(world).get("token-a", still_open.id).state is QuestionState.OPEN
            assert passage(world).get("token-a", by_api.id).answered_via is not None

    def test_a_confirmed_mark_keeps_its_delivery(self, world: World) -> None:
        given = answered(world)
        q_id = given.question.id
        read_at = world.clock.now()
        passage(world).get("token-a", q_id)
        world.clock.advance(2)
        confirmed = passage(world).received("token-a", q_id, given.attempt_id)
        assert (confirmed.state, confirmed.delivered_at, confirmed.confirmed_at) == (
            MarkState.CONFIRMED,
            read_at,
            read_at + timedelta(seconds=2),
        )
        with nothing_written(world.store):
            passage(world).get("token-a", q_id)

    @pytest.mark.parametrize(
        ("token", "question", "error"),
        [
            ("token-b", None, NotFound),  # another passage's question
            ("token-a", "not-a-question", InvalidInput),  # malformed
            ("token-a", "00000000-0000-4000-8000-000000000001", NotFound),  # unknown
            ("forged", None, Unauthenticated),  # not a passage's token
        ],
    )
    def test_bad_reads_are_refused_and_deliver_nothing(
        self, world: World, token: str, question: str | None, error: type[Exception]
    ) -> None:
        given = answered(world)
        with nothing_written(world.store), pytest.raises(error):
            passage(world).get(token, question or given.question.id)


class TestDefinitelyFailed:
    def test_the_archive_removes_only_the_marks_the_passage_never_read(self, world: World) -> None:
        never_read, read, confirmed = answered(world), answered(world), answered(world)
        elsewhere = answered(world, passage_id=OTHER_PASSAGE)
        ours = passage(world)
        ours.get("token-a", read.question.id)
        ours.get("token-a", confirmed.question.id)
        ours.received("token-a", confirmed.question.id, confirmed.attempt_id)
        world.clock.advance(60)

        archive(world)

        marks = {
            given.question.id: world.questions.marks(world.alice.id, given.question.id)
            for given in (never_read, read, confirmed, elsewhere)
        }
        assert marks[never_read.question.id] == []
        assert [m.state for m in marks[read.question.id]] == [MarkState.PENDING]
        assert [m.state for m in marks[confirmed.question.id]] == [MarkState.CONFIRMED]
        assert [m.state for m in marks[elsewhere.question.id]] == [MarkState.PENDING]
        # The answer stands: the question is not reopened, and nothing else changed.
        kept = world.questions.get(world.alice.id, never_read.question.id)
        assert kept == never_read.question
        assert cause(world, never_read.question) == (None, "unmet", CAUSE_NEVER_DELIVERED)
        assert cause(world, read.question) == (None, "unmet", CAUSE_UNCONFIRMED)
        assert cause(world, confirmed.question)[:2] == ("human", "met")
        found = world.questions.decision(world.alice.id, never_read.question.id)
        assert found.refusal == HUMAN_DECISION_REQUIRED

    def test_a_removed_mark_cannot_be_acknowledged_afterwards(self, world: World) -> None:
        given = answered(world)
        archive(world)
        with nothing_written(world.store), pytest.raises(NotFound):
            world.questions.confirm_handover(given.question.id, given.attempt_id)

    def test_the_next_passage_is_told_the_answer_with_no_persons_decision(
        self, world: World
    ) -> None:
        given = answered(world)
        archive(world)
        with world.store.transaction(write=False) as conn:
            told = told_answers_many(conn, [PASSAGE])
        [answer] = told[PASSAGE]
        assert (answer["questionId"], answer["answer"], answer["answeredVia"]) == (
            str(given.question.id),
            ANSWER,
            "ui",
        )
        assert answer["decision"] == {
            "questionId": str(given.question.id),
            "decidedBy": None,
            "humanGate": "unmet",
            "refusal": HUMAN_DECISION_REQUIRED,
            "cause": CAUSE_NEVER_DELIVERED,
        }

    def test_one_statement_whatever_the_number_of_questions(self, world: World) -> None:
        answered(world)
        with statements(world.store) as one:
            archive(world)
        for _ in range(5):
            answered(world)
        with statements(world.store) as many:
            archive(world)
        writes = [s for s in many if s.lstrip().upper().startswith(("DELETE", "UPDATE"))]
        assert len(writes) == 1 and len(many) == len(one)

    def test_a_malformed_passage_is_refused_and_nothing_is_removed(self, world: World) -> None:
        answered(world)
        with (
            nothing_written(world.store),
            pytest.raises(InvalidInput) as caught,
            world.store.transaction() as conn,
        ):
            drop_undelivered_marks(conn, "no such passage!")
        assert caught.value.details["field"] == "passage"


class TestUncertain:
    def test_a_mark_read_and_never_acknowledged_stays_pending_for_good(self, world: World) -> None:
        given = answered(world)
        passage(world).get("token-a", given.question.id)
        archive(world)
        world.clock.advance(timedelta(days=90))
        archive(world)
        [mark] = world.questions.marks(world.alice.id, given.question.id)
        assert mark.state is MarkState.PENDING and mark.delivered_at is not None
        assert cause(world, given.question) == (None, "unmet", CAUSE_UNCONFIRMED)


def _refused(world: World, given: UiAnswer) -> None:
    """The passage's acknowledgement is refused as the principal is gone: nothing is
    written, the mark stays pending, and it is no person's decision."""
    with nothing_written(world.store), pytest.raises(PrincipalGone) as caught:
        passage(world).received("token-a", given.question.id, given.attempt_id)
    assert caught.value.code == "principal-gone"
    assert caught.value.message == (
        "attemptId: the session or device that answered is signed out or revoked: the answer "
        "stands, but it cannot count as a person's decision; nothing was written"
    )
    [mark] = world.questions.marks(world.alice.id, given.question.id)
    assert mark.state is MarkState.PENDING
    assert cause(world, given.question) == (None, "unmet", CAUSE_UNCONFIRMED)


class TestRevalidation:
    def test_a_live_session_confirms(self, world: World) -> None:
        given = answered(world)
        passage(world).get("token-a", given.question.id)
        mark = passage(world).received("token-a", given.question.id, given.attempt_id)
        assert mark.state is MarkState.CONFIRMED
        assert cause(world, given.question)[:2] == ("human", "met")

    def test_a_signed_out_session_is_refused(self, world: World) -> None:
        session = live_session(world.store, world.bob)
        given = answered(world, session.principal)
        passage(world).get("token-a", given.question.id)
        sign_out(world.store, session)
        _refused(world, given)

    def test_an_expired_session_is_refused(self, world: World) -> None:
        given = answered(world)
        passage(world).get("token-a", given.question.id)
        world.clock.advance(SESSION_TTL)
        _refused(world, given)

    def test_a_paired_device_confirms_while_paired_and_is_refused_once_revoked(
        self, world: World
    ) -> None:
        kept_device = paired_device(world.store, world.bob)
        lost_device = paired_device(world.store, world.bob)
        kept, lost = answered(world, kept_device), answered(world, lost_device)
        for given in (kept, lost):
            passage(world).get("token-a", given.question.id)
        revoke_device(world.store, lost_device)
        _refused(world, lost)
        mark = passage(world).received("token-a", kept.question.id, kept.attempt_id)
        assert mark.state is MarkState.CONFIRMED

    def test_a_device_is_never_taken_for_a_session_of_the_same_id(self, world: World) -> None:
        session = live_session(world.store, world.bob)
        posing = Principal(
            kind=PrincipalKind.DEVICE, id=session.principal.id, actor_id=world.bob.id
        )
        given = answered(world, posing)
        passage(world).get("token-a", given.question.id)
        _refused(world, given)

    def test_a_confirmed_mark_stays_confirmed_after_sign_out(self, world: World) -> None:
        session = live_session(world.store, world.bob)
        given = answered(world, session.principal)
        mark = passage(world).received("token-a", given.question.id, given.attempt_id)
        sign_out(world.store, session)
        with nothing_written(world.store):
            again = passage(world).received("token-a", given.question.id, given.attempt_id)
        assert again == mark and again.state is MarkState.CONFIRMED

    @pytest.mark.parametrize(
        ("token", "attempt", "error"),
        [
            ("token-a", "not-an-attempt", InvalidInput),  # malformed
            ("token-a", None, InvalidInput),  # missing
            # not the current answer's attempt
            ("token-a", "00000000-0000-4000-8000-000000000002", AttemptRefused),
            ("token-b", "given", NotFound),  # another passage's question
            ("forged", "given", Unauthenticated),  # not a passage's token
        ],
    )
    def test_bad_acknowledgements_are_refused_and_write_nothing(
        self, world: World, token: str, attempt: str | None, error: type[Exception]
    ) -> None:
        session = live_session(world.store, world.bob)
        given = answered(world, session.principal)
        chosen = given.attempt_id if attempt == "given" else attempt
        with nothing_written(world.store), pytest.raises(error):
            passage(world).received(token, given.question.id, chosen)
        [mark] = world.questions.marks(world.alice.id, given.question.id)
        assert mark.state is MarkState.PENDING

    def test_a_refusal_for_another_reason_comes_before_revalidation(self, world: World) -> None:
        session = live_session(world.store, world.bob)
        given = answered(world, session.principal)
        sign_out(world.store, session)
        with nothing_written(world.store), pytest.raises(AttemptRefused):
            passage(world).received("token-a", given.question.id, str(uuid.uuid4()))
