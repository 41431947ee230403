"""Who decided a question: the human gate (seed 002, "Wayfinder human decision mark").

A question counts as decided by a person (``"human"``) only when it was answered
through the kalends interface and the mark of that very attempt is ``confirmed``. The
passage's own decision (``"coordinator"``) needs no mark and is never counted as a
person's. Everything else leaves the gate unmet, with the refusal the passage reads and
the cause as its detail:

==================================  ================  =====================================
answer                              decidedBy         cause
==================================  ================  =====================================
none (open or withdrawn)            null              not answered yet
API                                 null              answered through the API, …
command line                        null              answered through the command line, …
interface, mark pending             null              … hand-over is not confirmed (pending)
interface, no mark of its attempt   null              … without a hand-over mark
interface, mark confirmed           ``human``         (gate met)
the passage itself                  ``coordinator``   decided by the passage itself
==================================  ================  =====================================

A pending mark never qualifies, and an answer recorded after a failed interface attempt
never borrows that attempt's mark: only the mark of the attempt that recorded the
current answer counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from kalends.questions.values import AnswerVia, Mark, MarkState, Question, QuestionState

__all__ = [
    "CAUSE_API",
    "CAUSE_CLI",
    "CAUSE_COORDINATOR",
    "CAUSE_NO_MARK",
    "CAUSE_NOT_ANSWERED",
    "CAUSE_PENDING",
    "HUMAN_DECISION_REQUIRED",
    "Decision",
    "decision",
]

# Seed 002 ("Wayfinder human decision mark"), with kalends' interface named.
HUMAN_DECISION_REQUIRED = (
    "Human decision required: the user must answer this question from the kalends interface"
)
CAUSE_NOT_ANSWERED = "not answered yet"
CAUSE_API = "answered through the API, not the kalends interface"
CAUSE_CLI = "answered through the command line, not the kalends interface"
CAUSE_PENDING = "the interface answer's hand-over is not confirmed (pending)"
# kalends decision: an interface answer recorded without a mark (seed 002's fallback
# when no mark could be prepared, :meth:`Questions.answer_from_ui_unmarked`).
CAUSE_NO_MARK = "answered in the kalends interface without a hand-over mark"
CAUSE_COORDINATOR = "decided by the passage itself"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    question_id: UUID
    decided_by: Literal["human", "coordinator"] | None
    human_gate: Literal["met", "unmet"]
    refusal: str | None
    cause: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "questionId": str(self.question_id),
            "decidedBy": self.decided_by,
            "humanGate": self.human_gate,
            "refusal": self.refusal,
            "cause": self.cause,
        }


def _unmet(question: Question, cause: str, *, by: Literal["coordinator"] | None = None) -> Decision:
    return Decision(
        question_id=question.id,
        decided_by=by,
        human_gate="unmet",
        refusal=HUMAN_DECISION_REQUIRED,
        cause=cause,
    )


def decision(question: Question, marks: Iterable[Mark]) -> Decision:
    """Who decided ``question``, given its marks (see the module's table)."""
    via = question.answered_via
    if question.state is not QuestionState.ANSWERED or via is None:
        return _unmet(question, CAUSE_NOT_ANSWERED)
    if via is AnswerVia.COORDINATOR:
        return _unmet(question, CAUSE_COORDINATOR, by="coordinator")
    if via is AnswerVia.API:
        return _unmet(question, CAUSE_API)
    if via is AnswerVia.CLI:
        return _unmet(question, CAUSE_CLI)
    own = [
        mark
        for mark in marks
        if mark.question_id == question.id
        and question.attempt_id is not None
        and mark.attempt_id == question.attempt_id
    ]
    if any(mark.state is MarkState.CONFIRMED for mark in own):
        return Decision(
            question_id=question.id,
            decided_by="human",
            human_gate="met",
            refusal=None,
            cause=None,
        )
    return _unmet(question, CAUSE_PENDING if own else CAUSE_NO_MARK)
