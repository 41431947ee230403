"""What a passage's questions do to its schedule (SPEC §4 "Questions", seed 002
"Settlement, result and watched cursors": no applicable pending Form may remain).

- A question still open holds the passage's settlement: its process may have exited,
  but its family is not settled while an answer is still owed to it. The scheduler
  looks again later and archives it once every question is answered.
- A passage that is to be interrupted (its schedule paused, stopped or deleted after
  it was reserved) is not held: its open questions are withdrawn with its archive, in
  the same transaction, and nobody can answer them any more.
- At every archive (settled or interrupted), the hand-over of an interface answer the
  passage never read definitely failed: its pending mark is removed in the archive's
  transaction (seed 002, "Wayfinder human decision mark": a definitely failed forward
  removes the mark). The answer stands; it is no person's decision. A mark the passage
  read but never acknowledged stays pending for good (uncertain).
- The schedule's next passage is told the answers of the previous passage's questions
  in its input (``answers``), each with who decided it, so a passage that asked and
  exited learns the answer there instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from kalends.missions.controls import DocState
from kalends.missions.document import Pending
from kalends.missions.watching import handed_many
from kalends.questions import (
    Mark,
    Question,
    answered_for_passages,
    decision_of,
    drop_undelivered_marks,
    marks_of,
    open_for_passage,
    withdraw_open,
)

__all__ = [
    "QUESTION_OPEN",
    "fail_undelivered_handovers",
    "open_questions",
    "told_answers_many",
    "start_extras",
    "withdraw_questions",
]

# The pending passage's reason while a question holds its settlement.
QUESTION_OPEN = "question-open"


def open_questions(conn: Connection, passage_id: str) -> int:
    """How many of the passage's questions are still open."""
    return len(open_for_passage(conn, passage_id))


def withdraw_questions(conn: Connection, now: datetime, passage_id: str) -> None:
    """The passage's open questions withdrawn (answered ones stay): at its archive."""
    withdraw_open(conn, now, passage_id)


def fail_undelivered_handovers(conn: Connection, passage_id: str) -> None:
    """The passage's interface answers it never read lose their pending marks (the
    hand-over definitely failed; the answers stand): at its archive, after its open
    questions are withdrawn. One statement whatever the number of questions."""
    drop_undelivered_marks(conn, passage_id)


def told_answers_many(
    conn: Connection, passage_ids: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """The answers of the passages' questions as the next passage's input lists them (the
    question, the answer, how it was given and who decided), in two statements whatever their number
    (a round's reservations), by passage (one without an answer is left out)."""
    answered = answered_for_passages(conn, passage_ids)
    marks = marks_of(conn, [q.id for told in answered.values() for q in told])
    return {
        passage: [_told(q, marks.get(q.id, [])) for q in told] for passage, told in answered.items()
    }


def _told(question: Question, marks: list[Mark]) -> dict[str, Any]:
    answered_at = question.answered_at
    return {
        "questionId": str(question.id),
        "prompt": question.prompt,
        "tag": question.tag,
        "answer": question.answer,
        "answeredVia": None if question.answered_via is None else question.answered_via.value,
        "answeredAt": None
        if answered_at is None
        else answered_at.isoformat().replace("+00:00", "Z"),
        "decision": decision_of(question, marks).to_json(),
    }


def start_extras(
    conn: Connection, starting: Sequence[tuple[DocState, Pending]]
) -> dict[str, tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]]:
    """What passages starting now are told beside their configuration, by passage: the
    answers to their schedule's previous passage's questions (``None`` for a first
    passage) and the watched messages they were handed (``None`` when they watch
    nothing). Three statements whatever their number (a round's starts)."""
    previous = {
        pending.passage_id: doc.body.results[-1].passage_id
        for doc, pending in starting
        if doc.body.results
    }
    told = told_answers_many(conn, list(previous.values()))
    handed = handed_many(conn, [pending.passage_id for _, pending in starting])
    return {
        pending.passage_id: (
            told.get(previous[pending.passage_id], []) if pending.passage_id in previous else None,
            handed.get(pending.passage_id),
        )
        for _, pending in starting
    }
