"""A passage's open question holds its settlement (seed 002 "Settlement, result and
watched cursors": no applicable pending Form may remain): a passage that asked and
exited stays pending, ``settling`` with the reason ``question-open``, until a person
answers; then it is archived, and the schedule's next passage is told the answer and
who decided it. A passage to be interrupted (its schedule paused after it was reserved)
is not held: its open questions are withdrawn with its archive. At either archive, an
interface answer the passage never read loses its pending mark (its hand-over
definitely failed; the answer stands), while one it read keeps it pending for good.
Both databases."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from rich.console import Console

from kalends.cli.schedules import detail_view
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.questions import (
    CAUSE_NEVER_DELIVERED,
    CAUSE_UNCONFIRMED,
    HUMAN_DECISION_REQUIRED,
    Question,
    UiAnswer,
    ask,
)
from kalends.questions.passages import PassageQuestions
from missions.conftest import MissionWorld
from missions.scheduler_support import create, play, stored_body
from questions.principals import live_session

DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}
FIELDS = [{"id": "go", "kind": "confirm", "label": "Ship it?"}]


def _due(mw: MissionWorld, sid: UUID) -> datetime:
    return datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])


def _running(mw: MissionWorld) -> tuple[UUID, MemoryRuntime, Scheduler]:
    sid = create(mw, DAILY, f"create-hold-{mw.clock.now().timestamp()}")
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    mw.clock.set(_due(mw, sid) + timedelta(seconds=1))
    scheduler.run_once()
    assert stored_body(mw.store, sid).pending is not None
    return sid, runtime, scheduler


def _ask(mw: MissionWorld, sid: UUID, prompt: str = "Ship the release?") -> Question:
    pending = stored_body(mw.store, sid).pending
    assert pending is not None
    with mw.store.transaction() as conn:
        return ask(
            conn,
            mw.clock.now(),
            workspace_id=mw.home.id,
            schedule_id=sid,
            passage_id=pending.passage_id,
            prompt=prompt,
            fields=FIELDS,
            tag="ship-release",
        )


def _exit_completed(mw: MissionWorld, runtime: MemoryRuntime, sid: UUID) -> None:
    pending = stored_body(mw.store, sid).pending
    assert pending is not None
    runtime.report(pending.session_id, "completed", "asked and left")
    runtime.finish(pending.session_id, status=0)


def _looks(mw: MissionWorld, scheduler: Scheduler, n: int = 4) -> None:
    for _ in range(n):
        mw.clock.advance(timedelta(seconds=31))
        scheduler.run_once()


def test_an_open_question_holds_settlement_until_it_is_answered(mw: MissionWorld) -> None:
    sid, runtime, scheduler = _running(mw)
    question = _ask(mw, sid)
    first = stored_body(mw.store, sid).pending
    assert first is not None
    _exit_completed(mw, runtime, sid)
    _looks(mw, scheduler)

    held = stored_body(mw.store, sid).pending
    assert held is not None and held.passage_id == first.passage_id
    assert (held.status.value, held.reason) == ("settling", "question-open")
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["pending"]["reason"] == "question-open"
    shown = Console(width=80, record=True, file=io.StringIO())
    shown.print(detail_view(detail), soft_wrap=True)
    assert "settling (question-open: it asked a question nobody has answered yet;" in " ".join(
        shown.export_text().split()
    )

    answered = mw.services.questions.answer_from_api(
        mw.bob.id, question.id, {"go": True}, question.revision
    )
    assert answered.state.value == "answered"
    _looks(mw, scheduler, 2)
    body = stored_body(mw.store, sid)
    assert body.pending is None
    assert (body.results[-1].passage_id, body.results[-1].outcome) == (
        first.passage_id,
        "completed",
    )

    # The next passage (a Run now) is told the answer and who decided it.
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-told", expected_revision=rev)
    scheduler.run_once()
    second = stored_body(mw.store, sid).pending
    assert second is not None
    given: dict[str, Any] = runtime.started(second.session_id).input
    [told] = given["answers"]
    assert (told["questionId"], told["tag"], told["answer"], told["answeredVia"]) == (
        str(question.id),
        "ship-release",
        {"go": True},
        "api",
    )
    assert told["decision"]["decidedBy"] is None
    assert told["decision"]["humanGate"] == "unmet"
    assert told["decision"]["refusal"] == (
        "Human decision required: the user must answer this question from the kalends interface"
    )


def test_a_first_passage_is_told_no_answers(mw: MissionWorld) -> None:
    sid, runtime, _scheduler = _running(mw)
    pending = stored_body(mw.store, sid).pending
    assert pending is not None
    assert runtime.started(pending.session_id).input["answers"] is None


def test_a_passage_to_be_interrupted_is_not_held_and_its_questions_are_withdrawn(
    mw: MissionWorld,
) -> None:
    sid, runtime, scheduler = _running(mw)
    question = _ask(mw, sid)
    answered_first = _ask(mw, sid, "And the notes?")
    mw.services.questions.answer_from_api(
        mw.bob.id, answered_first.id, {"go": False}, answered_first.revision
    )
    _exit_completed(mw, runtime, sid)
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.pause(mw.bob.id, sid, request_id="pause-held", expected_revision=rev)
    _looks(mw, scheduler)

    body = stored_body(mw.store, sid)
    assert body.pending is None and body.results[-1].outcome == "completed"
    withdrawn = mw.services.questions.get(mw.bob.id, question.id)
    assert withdrawn.state.value == "withdrawn"
    kept = mw.services.questions.get(mw.bob.id, answered_first.id)
    assert (kept.state.value, kept.answer) == ("answered", {"go": False})


# --- the hand-over of interface answers at the archive (seed 002, "Wayfinder human
# decision mark"): a pending mark the passage never read is removed; one it read stays.


def _ui_answer(mw: MissionWorld, question: Question) -> UiAnswer:
    """bob answers in the interface with a live session: a pending mark, not yet read."""
    who = live_session(mw.store, mw.bob).principal
    secret = mw.services.questions.mint_token(mw.bob.id, who, question.id, {"go": True})
    return mw.services.questions.answer_from_ui(
        mw.bob.id, who, question.id, {"go": True}, secret, question.revision
    )


def _read_by_passage(mw: MissionWorld, sid: UUID, question: Question) -> None:
    """The pending passage reads its question with its own token (here: a token table
    that names it, as the runtime's signed token would)."""
    pending = stored_body(mw.store, sid).pending
    assert pending is not None
    speaker = {"passage-token": (pending.passage_id, str(sid))}.__getitem__
    PassageQuestions(questions=mw.services.questions, speaker=speaker).get(
        "passage-token", question.id
    )


def _told_next(mw: MissionWorld, runtime: MemoryRuntime, scheduler: Scheduler, sid: UUID) -> Any:
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id=f"run-now-{rev}", expected_revision=rev)
    scheduler.run_once()
    second = stored_body(mw.store, sid).pending
    assert second is not None
    return runtime.started(second.session_id).input["answers"]


def test_a_settled_passage_that_never_read_its_interface_answer_loses_the_mark(
    mw: MissionWorld,
) -> None:
    sid, runtime, scheduler = _running(mw)
    never_read, read = _ask(mw, sid), _ask(mw, sid, "And the notes?")
    given, seen = _ui_answer(mw, never_read), _ui_answer(mw, read)
    _read_by_passage(mw, sid, read)
    _exit_completed(mw, runtime, sid)
    _looks(mw, scheduler, 2)
    assert stored_body(mw.store, sid).pending is None

    questions = mw.services.questions
    assert questions.marks(mw.bob.id, never_read.id) == []
    [kept] = questions.marks(mw.bob.id, read.id)
    assert (kept.attempt_id, kept.state.value) == (seen.attempt_id, "pending")
    assert kept.delivered_at is not None
    stands = questions.get(mw.bob.id, never_read.id)
    assert (stands.state.value, stands.answer, stands.attempt_id) == (
        "answered",
        {"go": True},
        given.attempt_id,
    )

    told = {answer["questionId"]: answer for answer in _told_next(mw, runtime, scheduler, sid)}
    assert told[str(never_read.id)]["decision"] == {
        "questionId": str(never_read.id),
        "decidedBy": None,
        "humanGate": "unmet",
        "refusal": HUMAN_DECISION_REQUIRED,
        "cause": CAUSE_NEVER_DELIVERED,
    }
    assert told[str(read.id)]["decision"]["cause"] == CAUSE_UNCONFIRMED
    assert told[str(read.id)]["answeredVia"] == "ui"


def test_an_interrupted_passage_loses_the_marks_it_never_read_too(mw: MissionWorld) -> None:
    sid, _runtime, scheduler = _running(mw)
    question, still_open = _ask(mw, sid), _ask(mw, sid, "And the notes?")
    _ui_answer(mw, question)
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.pause(mw.bob.id, sid, request_id="pause-unread", expected_revision=rev)
    _looks(mw, scheduler)

    body = stored_body(mw.store, sid)
    assert body.pending is None and body.results[-1].reason == "interrupted"
    assert mw.services.questions.marks(mw.bob.id, question.id) == []
    assert mw.services.questions.get(mw.bob.id, question.id).state.value == "answered"
    assert mw.services.questions.get(mw.bob.id, still_open.id).state.value == "withdrawn"
    decided = mw.services.questions.decision(mw.bob.id, question.id)
    assert (decided.decided_by, decided.cause) == (None, CAUSE_NEVER_DELIVERED)
