"""Who decided a question: the human gate (seed 002, "Wayfinder human decision mark").

A question counts as decided by a person (``"human"``) only when it was answered
through the kalends interface and the mark of that very attempt is ``confirmed``. The
passage's own decision (``"coordinator"``) needs no mark and is never counted as a
person's. Everything else leaves the gate unmet, with the refusal the passage reads and
the cause as its detail:

==================================  ===============  ======================================
answer                              decidedBy        cause
==================================  ===============  ======================================
none (open or withdrawn)            null             not answered yet
API                                 null             answered through the API, …
command line                        null             answered through the command line, …
interface, mark pending, unread     null             … hand-over is not confirmed (pending)
interface, mark pending, read       null             … reached the passage, unacknowledged
interface, its attempt's mark gone  null             … never reached the passage
interface, answered without a mark  null             … without a hand-over mark
interface, mark confirmed           ``human``        (gate met)
the passage itself                  ``coordinator``  decided by the passage itself
==================================  ===============  ======================================

A pending mark never qualifies: the passage may have read the answer without its
acknowledgement ever arriving (uncertain: it stays pending for good), or its
acknowledgement was refused because the session or device that answered was signed out
or revoked meanwhile. When a passage ended without ever reading its interface answer,
the hand-over definitely failed and its pending mark was removed at the passage's
archive (:func:`~kalends.questions.records.drop_undelivered_marks`); the answer stands.
Only the mark of the attempt that recorded the current answer counts.
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
    "CAUSE_NEVER_DELIVERED",
    "CAUSE_NO_MARK",
    "CAUSE_NOT_ANSWERED",
    "CAUSE_PENDING",
    "CAUSE_UNCONFIRMED",
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
CAUSE_UNCONFIRMED = (
    "the interface answer reached the passage, but its receipt was not acknowledged: "
    "the hand-over is unconfirmed (pending)"
)
CAUSE_NEVER_DELIVERED = (
    "the interface answer never reached the passage: it ended before reading it, "
    "so the hand-over definitely failed"
)
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
    if question.attempt_id is None:
        return _unmet(question, CAUSE_NO_MARK)
    own = [
        mark
        for mark in marks
        if mark.question_id == question.id and mark.attempt_id == question.attempt_id
    ]
    if any(mark.state is MarkState.CONFIRMED for mark in own):
        return Decision(
            question_id=question.id,
            decided_by="human",
            human_gate="met",
            refusal=None,
            cause=None,
        )
    if not own:
        # The attempt's mark was written with the answer: gone, it was removed because
        # the passage ended without ever reading the answer.
        return _unmet(question, CAUSE_NEVER_DELIVERED)
    read = any(mark.delivered_at is not None for mark in own)
    return _unmet(question, CAUSE_UNCONFIRMED if read else CAUSE_PENDING)
