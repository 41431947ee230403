"""The role matrix of every people-facing method: owner, editor, viewer and an actor of
no workspace, and the interface fallback that records an answer without a mark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kalends.errors import Conflict, Forbidden, NotFound, RevisionConflict
from kalends.identity import Actor
from kalends.questions import CAUSE_NO_MARK, AnswerVia, Question, QuestionState
from kalends.storage.testing import nothing_written

from .conftest import ANSWER, World

Call = Callable[[World, Actor, Question], Any]

# What each method is called with; a writing method answers the question at revision 1.
CALLS: dict[str, Call] = {
    "get": lambda w, a, q: w.questions.get(a.id, q.id),
    "list_open": lambda w, a, q: w.questions.list_open(a.id, w.home.id),
    "marks": lambda w, a, q: w.questions.marks(a.id, q.id),
    "decision": lambda w, a, q: w.questions.decision(a.id, q.id),
    "mint_token": lambda w, a, q: w.questions.mint_token(a.id, w.session(a), q.id, ANSWER),
    "answer_from_ui": lambda w, a, q: w.questions.answer_from_ui(
        a.id,
        w.session(a),
        q.id,
        ANSWER,
        w.questions.mint_token(a.id, w.session(a), q.id, ANSWER)
        if a.handle in ("alice", "bob")
        else "kans_none",
        1,
    ),
    "answer_from_ui_unmarked": lambda w, a, q: w.questions.answer_from_ui_unmarked(
        a.id, q.id, ANSWER, 1
    ),
    "answer_from_api": lambda w, a, q: w.questions.answer_from_api(a.id, q.id, ANSWER, 1),
    "answer_from_cli": lambda w, a, q: w.questions.answer_from_api(
        a.id, q.id, ANSWER, 1, via="cli"
    ),
}
READS = ("get", "list_open", "marks", "decision")


@pytest.mark.parametrize("method", sorted(CALLS))
@pytest.mark.parametrize("who", ["alice", "bob", "carol", "dave"])
def test_the_role_matrix(world: World, method: str, who: str) -> None:
    """Reads: viewer and up. Writes: editor and up; a viewer is Forbidden. An actor of no
    workspace finds nothing, whatever the method."""
    asked = world.ask()
    actor: Actor = getattr(world, who)
    call = CALLS[method]
    if who == "dave":
        with nothing_written(world.store), pytest.raises(NotFound):
            call(world, actor, asked)
    elif who == "carol" and method not in READS:
        with nothing_written(world.store), pytest.raises(Forbidden):
            call(world, actor, asked)
    else:
        assert call(world, actor, asked) is not None


def test_a_principal_of_another_actor_cannot_answer(world: World) -> None:
    asked = world.ask()
    secret = world.questions.mint_token(
        world.alice.id, world.session(world.alice), asked.id, ANSWER
    )
    with nothing_written(world.store), pytest.raises(Forbidden):
        world.questions.answer_from_ui(
            world.bob.id, world.session(world.alice), asked.id, ANSWER, secret, 1
        )


class TestUnmarkedFallback:
    def test_the_answer_is_recorded_from_the_interface_without_a_mark(self, world: World) -> None:
        asked = world.ask()
        done = world.questions.answer_from_ui_unmarked(world.bob.id, asked.id, ANSWER, 1)
        assert (done.state, done.answered_via, done.attempt_id, done.answer) == (
            QuestionState.ANSWERED,
            AnswerVia.UI,
            None,
            ANSWER,
        )
        assert world.questions.marks(world.bob.id, asked.id) == []
        told = world.questions.decision(world.bob.id, asked.id)
        assert (told.decided_by, told.human_gate, told.cause) == (None, "unmet", CAUSE_NO_MARK)

    def test_stale_and_answered_questions_are_refused(self, world: World) -> None:
        asked = world.ask()
        with nothing_written(world.store), pytest.raises(RevisionConflict):
            world.questions.answer_from_ui_unmarked(world.bob.id, asked.id, ANSWER, 5)
        world.questions.answer_from_api(world.bob.id, asked.id, ANSWER, 1)
        with nothing_written(world.store), pytest.raises(Conflict):
            world.questions.answer_from_ui_unmarked(world.bob.id, asked.id, ANSWER, 2)
