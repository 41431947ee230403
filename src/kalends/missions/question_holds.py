"""What a passage's questions do to its schedule (SPEC §4 "Questions", seed 002
"Settlement, result and watched cursors": no applicable pending Form may remain).

- A question still open holds the passage's settlement: its process may have exited,
  but its family is not settled while an answer is still owed to it. The scheduler
  looks again later and archives it once every question is answered.
- A passage that is to be interrupted (its schedule paused, stopped or deleted after
  it was reserved) is not held: its open questions are withdrawn with its archive, in
  the same transaction, and nobody can answer them any more.
- The schedule's next passage is told the answers of the previous passage's questions
  in its input (``answers``), each with who decided it, so a passage that asked and
  exited learns the answer there instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from kalends.questions import (
    answered_for_passage,
    decision_of,
    open_for_passage,
    read_marks,
    withdraw_open,
)

__all__ = ["QUESTION_OPEN", "open_questions", "told_answers", "withdraw_questions"]

# The pending passage's reason while a question holds its settlement.
QUESTION_OPEN = "question-open"


def open_questions(conn: Connection, passage_id: str) -> int:
    """How many of the passage's questions are still open."""
    return len(open_for_passage(conn, passage_id))


def withdraw_questions(conn: Connection, now: datetime, passage_id: str) -> None:
    """The passage's open questions withdrawn (answered ones stay): at its archive."""
    withdraw_open(conn, now, passage_id)


def told_answers(conn: Connection, passage_id: str) -> list[dict[str, Any]]:
    """The answers of ``passage_id``'s questions as the next passage's input lists them:
    the question, the answer, how it was given and who decided."""
    told = []
    for question in answered_for_passage(conn, passage_id):
        answered_at = question.answered_at
        told.append(
            {
                "questionId": str(question.id),
                "prompt": question.prompt,
                "tag": question.tag,
                "answer": question.answer,
                "answeredVia": None
                if question.answered_via is None
                else question.answered_via.value,
                "answeredAt": None
                if answered_at is None
                else answered_at.isoformat().replace("+00:00", "Z"),
                "decision": decision_of(question, read_marks(conn, question.id)).to_json(),
            }
        )
    return told
