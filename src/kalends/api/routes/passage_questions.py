"""Questions a passage asks with its own token: the HTTP form of ``kalends ask``.

The passage sends the token it found in ``KALENDS_PASSAGE_TOKEN`` as ``Authorization:
Passage <token>``, exactly as for ``POST /api/passages/report``: a missing, forged or
foreign token is 401 ``invalid-passage-token``, a settled passage's (spent) token 409
``passage-settled``. A login session or an API token is no credential here.

- ``POST /api/passages/questions`` asks a question in the workspace of the passage's
  own schedule (from its start record, never from the body);
- ``GET /api/passages/questions/{question}`` reads it back: its state and, once
  answered, the answer, ``answeredVia`` and, for an interface answer, ``attemptId``.
  This read is the answer's hand-over: the first one delivers the attempt's mark;
- ``POST …/received`` acknowledges the interface answer of ``attemptId``: its hand-over
  mark becomes ``confirmed``, and only then does the answer count as a person's
  decision, provided the session or device that answered is still live (else 409
  ``principal-gone``: the answer stands, the mark stays pending);
- ``POST …/decide`` records the passage's own decision (never a person's).

Another passage's question answers 404, as one that does not exist.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.routes.passages import PassageTokenDep, server_passages
from kalends.api.routes.tasks_models import answer
from kalends.api.security import ContextDep
from kalends.questions import MAX_FIELDS, MAX_PROMPT_CHARS, Question
from kalends.questions.passages import PassageQuestions
from kalends.questions.values import AnswerVia

__all__ = ["passage_questions", "router"]

router = APIRouter(prefix="/api/passages", tags=["passages"], route_class=DispatchedRoute)

QUESTION = "/questions/{question}"


def passage_questions(ctx: ApiContext) -> PassageQuestions:
    """What a passage's token may do with questions on this server, the token checked
    against this server's runtime directory."""
    return PassageQuestions(questions=ctx.services.questions, speaker=server_passages(ctx).speaking)


def passage_view(question: Question) -> dict[str, Any]:
    """A question as its passage reads it: the question, and the attempt of an
    interface answer (what ``…/received`` acknowledges), else ``null``."""
    attempt = question.attempt_id if question.answered_via is AnswerVia.UI else None
    return {**question.to_json(), "attemptId": attempt}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskBody(Strict):
    prompt: str = Field(
        max_length=MAX_PROMPT_CHARS,
        description=f"What is asked: at most {MAX_PROMPT_CHARS} characters.",
    )
    # The fields' shape is checked by the service, which names the exact path refused.
    fields: list[Any] = Field(
        max_length=MAX_FIELDS,
        description=(
            "1 to 16 fields: `{id, kind: choice, label, options}`, "
            "`{id, kind: text, label, maxLength}` or `{id, kind: confirm, label}`."
        ),
    )
    tag: str | None = Field(
        default=None, description="The decision it settles: a-z, 0-9 and -, at most 64."
    )


class ReceivedBody(Strict):
    attemptId: str = Field(max_length=64, description="The `attemptId` the answer came with.")


class DecideBody(Strict):
    answer: dict[str, Any] = Field(description="One value per field, keyed by field ID.")


class PassageQuestionOut(BaseModel):
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
    attemptId: str | None = Field(
        description="For an interface answer: the attempt to acknowledge with `…/received`."
    )


class MarkOut(BaseModel):
    questionId: UUID
    attemptId: str
    passageId: str
    answeredAt: str
    via: str
    state: str = Field(description="`pending` or `confirmed`.")
    principalKind: str
    createdAt: str
    confirmedAt: str | None
    deliveredAt: str | None = Field(
        description="When the passage first read the answer; `null` while it has not."
    )


@router.post(
    "/questions",
    summary="Ask a question with the passage's own token (`kalends ask`)",
    description=(
        "The question is asked in the workspace of the passage's own schedule. A passage "
        "has at most 8 open questions; a passage whose schedule this server does not know "
        "answers 404 `passage-without-schedule`."
    ),
    status_code=201,
    response_model=PassageQuestionOut,
    responses=error_responses(401, 404, 409, 422, 503),
)
def ask(body: AskBody, token: PassageTokenDep, ctx: ContextDep) -> JSONResponse:
    made = passage_questions(ctx).ask(token, body.prompt, body.fields, body.tag)
    return answer(passage_view(made), 201)


@router.get(
    QUESTION,
    summary="One of the passage's own questions, and its answer once given",
    description=(
        "Reading an interface answer hands it over: the first read delivers its attempt's "
        "mark (`deliveredAt`). A passage that ends without reading it definitely failed "
        "the hand-over: the mark is removed when the passage is archived."
    ),
    response_model=PassageQuestionOut,
    responses=error_responses(401, 404, 409, 422, 503),
)
def get_question(question: UUID, token: PassageTokenDep, ctx: ContextDep) -> JSONResponse:
    return answer(passage_view(passage_questions(ctx).get(token, question)))


@router.post(
    QUESTION + "/received",
    summary="Acknowledge the interface answer of an attempt: its mark is confirmed",
    description=(
        "Only the attempt that recorded the question's current interface answer: any other "
        "answers 409 `attempt-refused` and nothing is written. The session or device that "
        "answered must still be live: signed out, expired or revoked, it answers 409 "
        "`principal-gone`, nothing is written, and the answer stands without counting as "
        "a person's decision."
    ),
    response_model=MarkOut,
    responses=error_responses(401, 404, 409, 422, 503),
)
def received(
    question: UUID, body: ReceivedBody, token: PassageTokenDep, ctx: ContextDep
) -> JSONResponse:
    mark = passage_questions(ctx).received(token, question, body.attemptId)
    return answer(mark.to_json())


@router.post(
    QUESTION + "/decide",
    summary="The passage decides its own open question itself (never a person's decision)",
    response_model=PassageQuestionOut,
    responses=error_responses(401, 404, 409, 422, 503),
)
def decide(
    question: UUID, body: DecideBody, token: PassageTokenDep, ctx: ContextDep
) -> JSONResponse:
    decided = passage_questions(ctx).decide(token, question, body.answer)
    return answer(passage_view(decided))
