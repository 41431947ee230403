"""Asking, reading and answering questions through the API and the command line, and
the passage deciding itself: exact values, limits, the role matrix, stale revisions and
refusals that write nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kalends.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    LimitReached,
    NotFound,
    RevisionConflict,
)
from kalends.questions import (
    CAUSE_API,
    CAUSE_CLI,
    CAUSE_COORDINATOR,
    CAUSE_NOT_ANSWERED,
    MAX_OPEN_PER_PASSAGE,
    AnswerVia,
    QuestionState,
    parse_fields,
    schema_digest,
)
from kalends.storage.testing import nothing_written

from .conftest import ANSWER, FIELDS, PASSAGE, World


class TestAsk:
    def test_a_passage_asks_an_open_question_with_its_digest(self, world: World) -> None:
        now = world.clock.now()
        asked = world.ask(tag="release-go")
        assert asked.workspace_id == world.home.id
        assert (asked.schedule_id, asked.passage_id) == (None, PASSAGE)
        assert asked.prompt == "Release today?"
        assert asked.fields == parse_fields(FIELDS)
        assert asked.schema_digest == schema_digest("Release today?", parse_fields(FIELDS))
        assert (asked.tag, asked.state, asked.revision) == ("release-go", QuestionState.OPEN, 1)
        assert (asked.answer, asked.answered_at, asked.answered_by, asked.answered_via) == (
            None,
            None,
            None,
            None,
        )
        assert asked.asked_at == asked.updated_at == now
        assert world.questions.get(world.carol.id, asked.id) == asked

    def test_its_json_is_camel_case(self, world: World) -> None:
        shown = world.ask().to_json()
        assert shown["passageId"] == PASSAGE
        assert shown["fields"] == FIELDS
        assert shown["state"] == "open"
        assert shown["answeredVia"] is None
        assert shown["askedAt"].endswith("Z")

    def test_a_schedule_of_the_workspace_is_kept(self, world: World) -> None:
        receipt = world.services.schedules.create(
            world.alice.id,
            world.home.id,
            {
                "title": "Morning report",
                "objective": "Summarise yesterday's commits.",
                "profile": {"command": ["echo", "hello"]},
                "policy": {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
            },
            request_id="question-schedule-0001",
        )
        assert receipt.mission_id is not None
        asked = world.questions.ask(
            workspace_id=world.home.id,
            schedule_id=receipt.mission_id,
            passage_id=PASSAGE,
            prompt="Go?",
            fields=FIELDS,
        )
        assert asked.schedule_id == receipt.mission_id
        # The same schedule named with another workspace is refused.
        with nothing_written(world.store), pytest.raises(NotFound) as caught:
            world.questions.ask(
                workspace_id=world.away.id,
                schedule_id=receipt.mission_id,
                passage_id=PASSAGE,
                prompt="Go?",
                fields=FIELDS,
            )
        assert caught.value.details["field"] == "schedule"

    def test_a_passage_holds_at_most_eight_open_questions(self, world: World) -> None:
        for _ in range(MAX_OPEN_PER_PASSAGE):
            world.ask()
        with nothing_written(world.store), pytest.raises(LimitReached) as caught:
            world.ask()
        assert caught.value.message == "questions: a passage has at most 8 open questions"
        # Another passage has its own allowance.
        assert world.ask(passage_id="passage-0002").state is QuestionState.OPEN

    def test_an_answered_question_frees_its_place(self, world: World) -> None:
        made = [world.ask() for _ in range(MAX_OPEN_PER_PASSAGE)]
        world.questions.answer_from_api(world.bob.id, made[0].id, ANSWER, 1)
        assert world.ask().state is QuestionState.OPEN

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"prompt": ""}, "prompt"),  # empty prompt
            ({"fields": []}, "fields"),  # no fields
            ({"tag": "Bad Tag"}, "tag"),  # malformed tag
            ({"passage_id": "bad id"}, "passage"),  # malformed passage ID
        ],
    )
    def test_bad_input_is_refused_and_writes_nothing(
        self, world: World, change: dict[str, Any], field: str
    ) -> None:
        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.ask(**change)
        assert caught.value.field == field

    def test_an_unknown_workspace_is_not_found(self, world: World) -> None:
        with nothing_written(world.store), pytest.raises(NotFound) as caught:
            world.ask(workspace_id=uuid.uuid4())
        assert caught.value.details["field"] == "workspace"

    def test_open_for_passage_lists_only_that_passages_open_questions(self, world: World) -> None:
        first = world.ask()
        world.clock.advance(1)
        second = world.ask()
        world.ask(passage_id="passage-0002")
        assert [q.id for q in world.questions.open_for_passage(PASSAGE)] == [first.id, second.id]
        world.questions.answer_from_api(world.bob.id, first.id, ANSWER, 1)
        assert [q.id for q in world.questions.open_for_passage(PASSAGE)] == [second.id]
        assert world.questions.open_for_passage("passage-none") == []


class TestRead:
    def test_list_open_shows_the_workspaces_open_questions_oldest_first(self, world: World) -> None:
        first = world.ask()
        world.clock.advance(1)
        second = world.ask(passage_id="passage-0002")
        world.ask(workspace_id=world.away.id)
        world.clock.advance(1)
        answered = world.ask()
        world.questions.answer_from_api(world.alice.id, answered.id, ANSWER, 1)
        for actor in (world.alice, world.bob, world.carol):
            listed = world.questions.list_open(actor.id, world.home.id)
            assert [q.id for q in listed] == [first.id, second.id]

    def test_a_stranger_sees_no_workspace_and_no_question(self, world: World) -> None:
        asked = world.ask()
        with pytest.raises(NotFound) as caught:
            world.questions.list_open(world.dave.id, world.home.id)
        assert caught.value.details["field"] == "workspace"
        with pytest.raises(NotFound) as caught:
            world.questions.get(world.dave.id, asked.id)
        assert caught.value.message == f"question: no question {asked.id}"
        # bob is no member of away: its questions are unknown to him.
        away = world.ask(workspace_id=world.away.id)
        with pytest.raises(NotFound):
            world.questions.get(world.bob.id, away.id)
        with pytest.raises(NotFound):
            world.questions.decision(world.bob.id, away.id)

    def test_unknown_and_malformed_ids(self, world: World) -> None:
        with pytest.raises(NotFound):
            world.questions.get(world.alice.id, uuid.uuid4())
        with pytest.raises(InvalidInput) as caught:
            world.questions.get(world.alice.id, "not-an-id")
        assert caught.value.field == "question"
        with pytest.raises(InvalidInput) as caught:
            world.questions.list_open(world.alice.id, "not-an-id")
        assert caught.value.details["field"] == "workspace"
        with pytest.raises(NotFound):
            world.questions.get("nobody", world.ask().id)


class TestAnswerFromApi:
    @pytest.mark.parametrize(
        ("via", "door", "cause"),
        [
            ("api", AnswerVia.API, CAUSE_API),  # the HTTP API
            ("cli", AnswerVia.CLI, CAUSE_CLI),  # the command line
        ],
    )
    def test_an_editor_answers_and_it_is_never_the_humans_decision(
        self, world: World, via: str, door: AnswerVia, cause: str
    ) -> None:
        asked = world.ask()
        world.clock.advance(5)
        done = world.questions.answer_from_api(world.bob.id, asked.id, ANSWER, 1, via=via)
        assert done.state is QuestionState.ANSWERED
        assert done.answer == ANSWER
        assert (done.answered_by, done.answered_via, done.revision) == (world.bob.id, door, 2)
        assert done.answered_at == done.updated_at == world.clock.now()
        assert world.questions.marks(world.carol.id, asked.id) == []
        told = world.questions.decision(world.carol.id, asked.id)
        assert (told.decided_by, told.human_gate, told.cause) == (None, "unmet", cause)

    def test_an_owner_answers_too(self, world: World) -> None:
        asked = world.ask()
        done = world.questions.answer_from_api(world.alice.id, asked.id, ANSWER, 1)
        assert done.answered_by == world.alice.id

    def test_a_viewer_is_forbidden_and_a_stranger_finds_nothing(self, world: World) -> None:
        asked = world.ask()
        with nothing_written(world.store):
            with pytest.raises(Forbidden):
                world.questions.answer_from_api(world.carol.id, asked.id, ANSWER, 1)
            with pytest.raises(NotFound):
                world.questions.answer_from_api(world.dave.id, asked.id, ANSWER, 1)

    def test_a_stale_revision_is_a_revision_conflict(self, world: World) -> None:
        asked = world.ask()
        with nothing_written(world.store), pytest.raises(RevisionConflict) as caught:
            world.questions.answer_from_api(world.bob.id, asked.id, ANSWER, 2)
        assert (caught.value.expected, caught.value.actual) == (2, 1)

    def test_an_answered_question_is_refused(self, world: World) -> None:
        asked = world.ask()
        world.questions.answer_from_api(world.bob.id, asked.id, ANSWER, 1)
        with nothing_written(world.store), pytest.raises(Conflict) as caught:
            world.questions.answer_from_api(world.alice.id, asked.id, ANSWER, 2)
        assert type(caught.value) is Conflict
        assert caught.value.message == "question: the question is answered; it takes no answer"

    @pytest.mark.parametrize(
        ("answer", "revision", "via", "field"),
        [
            ({"go": "no", "why": "", "ok": True}, 1, "api", "answer.go"),  # not an option
            ({"go": "yes"}, 1, "api", "answer.why"),  # fields left out
            (ANSWER, 0, "api", "expected_revision"),  # revision out of range
            (ANSWER, "1", "api", "expected_revision"),  # revision not a number
            (ANSWER, 1, "ui", "via"),  # the interface is not this door
            (ANSWER, 1, "coordinator", "via"),  # nor is the passage
        ],
    )
    def test_bad_input_is_refused_and_writes_nothing(
        self, world: World, answer: Any, revision: Any, via: str, field: str
    ) -> None:
        asked = world.ask()
        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.questions.answer_from_api(world.bob.id, asked.id, answer, revision, via=via)
        assert caught.value.field == field


class TestCoordinatorDecision:
    def test_the_passage_decides_its_own_question_without_a_mark(self, world: World) -> None:
        asked = world.ask()
        done = world.questions.coordinator_decision(PASSAGE, asked.id, ANSWER)
        assert (done.state, done.answered_via, done.answered_by) == (
            QuestionState.ANSWERED,
            AnswerVia.COORDINATOR,
            None,
        )
        assert world.questions.marks(world.alice.id, asked.id) == []
        told = world.questions.decision(world.alice.id, asked.id)
        assert (told.decided_by, told.human_gate, told.cause) == (
            "coordinator",
            "unmet",
            CAUSE_COORDINATOR,
        )

    def test_another_passages_question_is_not_found(self, world: World) -> None:
        asked = world.ask()
        with nothing_written(world.store), pytest.raises(NotFound):
            world.questions.coordinator_decision("passage-other", asked.id, ANSWER)

    def test_a_bad_answer_or_an_answered_question_is_refused(self, world: World) -> None:
        asked = world.ask()
        with nothing_written(world.store), pytest.raises(InvalidInput):
            world.questions.coordinator_decision(PASSAGE, asked.id, {"go": "yes"})
        world.questions.answer_from_api(world.bob.id, asked.id, ANSWER, 1)
        with nothing_written(world.store), pytest.raises(Conflict):
            world.questions.coordinator_decision(PASSAGE, asked.id, ANSWER)

    def test_an_unanswered_question_is_not_decided(self, world: World) -> None:
        asked = world.ask()
        assert world.questions.decision(world.carol.id, asked.id).cause == CAUSE_NOT_ANSWERED


class TestWithdraw:
    def test_a_settled_passages_open_questions_are_withdrawn_and_take_no_answer(
        self, world: World
    ) -> None:
        first = world.ask()
        answered = world.ask()
        world.questions.answer_from_api(world.bob.id, answered.id, ANSWER, 1)
        other = world.ask(passage_id="passage-0002")
        world.clock.advance(7)
        gone = world.questions.withdraw_open(PASSAGE)
        assert [(q.id, q.state, q.revision) for q in gone] == [
            (first.id, QuestionState.WITHDRAWN, 2)
        ]
        assert gone[0].updated_at == world.clock.now()
        assert world.questions.open_for_passage(PASSAGE) == []
        assert world.questions.get(world.bob.id, answered.id).state is QuestionState.ANSWERED
        assert world.questions.get(world.bob.id, other.id).state is QuestionState.OPEN
        told = world.questions.decision(world.carol.id, first.id)
        assert (told.decided_by, told.cause) == (None, CAUSE_NOT_ANSWERED)
        with nothing_written(world.store), pytest.raises(Conflict) as caught:
            world.questions.answer_from_api(world.bob.id, first.id, ANSWER, 2)
        assert caught.value.message == "question: the question is withdrawn; it takes no answer"
        with nothing_written(world.store):
            assert world.questions.withdraw_open(PASSAGE) == []

    def test_a_malformed_passage_id_is_refused(self, world: World) -> None:
        with nothing_written(world.store), pytest.raises(InvalidInput):
            world.questions.withdraw_open("bad id")
