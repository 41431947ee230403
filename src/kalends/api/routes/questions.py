"""Questions over HTTP, as people reach them: a workspace's open questions, one question
with who decided it, and an answer given through the API.

Each route is a thin caller of :class:`~kalends.questions.Questions`, which checks the
caller's role on the question's workspace: viewers read, editors answer. A question in
a workspace the caller has no role on is one that does not exist (404).

An answer through the API is recorded as such (``answeredVia: "api"``) and never with a
hand-over mark: it never counts as a person's decision, and the ``decision`` readout
says why. A person's decision is an answer given in the kalends interface.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.routes.mission_paths import WORKSPACE, WorkspaceID
from kalends.api.routes.passage_questions import MarkOut
from kalends.api.routes.tasks_models import MAX_REVISION, answer, atomic
from kalends.api.security import ContextDep, PrincipalDep
from kalends.questions import Question

__all__ = ["question_view", "router"]

router = APIRouter(tags=["questions"], route_class=DispatchedRoute)

QUESTIONS = WORKSPACE + "/questions"
QUESTION = "/api/questions/{question}"

QuestionID = Annotated[UUID, Path(description="The question's ID.")]


def question_view(ctx: ApiContext, actor: UUID, question: UUID) -> dict[str, Any]:
    """The question as a person reads it: the question, who decided it (``decision``)
    and its hand-over marks (``marks``, oldest first), read in one transaction."""
    service = ctx.services.questions

    def read() -> dict[str, Any]:
        found = service.get(actor, question)
        return {
            **found.to_json(),
            "decision": service.decision(actor, question).to_json(),
            "marks": [mark.to_json() for mark in service.marks(actor, question)],
        }

    return atomic(ctx, read, write=False)


class AnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: dict[str, Any] = Field(description="One value per field, keyed by field ID.")
    expectedRevision: int = Field(
        ge=1,
        le=MAX_REVISION,
        strict=True,
        description="The question's revision you last read; a changed question is a 409.",
    )
    via: Literal["api", "cli"] = Field(
        default="api",
        description="`cli` when sent by `kalends question answer --server`; else `api`.",
    )


class QuestionOut(BaseModel):
    id: UUID
    workspaceId: UUID
    scheduleId: UUID | None
    passageId: str
    prompt: str
    fields: list[dict[str, Any]]
    schemaDigest: str
    tag: str | None
    state: str = Field(description="`open`, `answered` or `withdrawn`.")
    answer: dict[str, Any] | None
    answeredAt: str | None
    answeredBy: UUID | None
    answeredVia: str | None = Field(description="`ui`, `api`, `cli` or `coordinator`.")
    revision: int
    askedAt: str
    updatedAt: str


class DecisionOut(BaseModel):
    questionId: UUID
    decidedBy: str | None = Field(description="`human`, `coordinator`, or null.")
    humanGate: str = Field(description="`met` or `unmet`.")
    refusal: str | None
    cause: str | None = Field(description="Why the answer is no person's decision.")


class QuestionReadOut(QuestionOut):
    decision: DecisionOut
    marks: list[MarkOut]


@router.get(
    QUESTIONS,
    summary="A workspace's open questions, oldest first (at most 200)",
    response_model=list[QuestionOut],
    responses=error_responses(401, 404, 422),
)
def list_questions(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    found: list[Question] = ctx.services.questions.list_open(who.actor_id, workspace)
    return answer([q.to_json() for q in found])


@router.get(
    QUESTION,
    summary="A question, who decided it, and its hand-over marks",
    response_model=QuestionReadOut,
    responses=error_responses(401, 404, 422),
)
def get_question(question: QuestionID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer(question_view(ctx, who.actor_id, question))


@router.post(
    QUESTION + "/answer",
    summary="Answer an open question through the API (editors and owners)",
    description=(
        "Recorded as answered through the API, never with a hand-over mark: it is no "
        "person's decision (`decision.cause` says so). A question no longer open, or at "
        "another revision, is a 409; a value a field refuses is a 422 naming its path "
        "(`answer.FIELD`)."
    ),
    response_model=QuestionReadOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def answer_question(
    question: QuestionID, body: AnswerBody, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    service = ctx.services.questions

    def write() -> dict[str, Any]:
        service.answer_from_api(
            who.actor_id, question, body.answer, body.expectedRevision, via=body.via
        )
        return question_view(ctx, who.actor_id, question)

    return answer(atomic(ctx, write))
