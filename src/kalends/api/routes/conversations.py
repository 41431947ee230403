"""Conversations over HTTP: a workspace's threads of messages, read a page at a time,
and the messages people post, stream, finish, rewrite and delete.

Each route is a thin caller of :class:`~kalends.conversations.Conversations`, which
checks the caller's role on the conversation's workspace: viewers read, editors post,
authors (or a workspace's owners) rewrite and delete, owners of both workspaces move a
conversation. A conversation or message in a workspace the caller has no role on is
one that does not exist (404). Bodies are bounded here, before the service runs: a
title of at most :data:`~kalends.conversations.MAX_TITLE` characters, a text of at
most :data:`~kalends.conversations.MAX_MESSAGE_CHARS`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from kalends.api.dispatch import DispatchedRoute, inline_read
from kalends.api.errors import error_responses
from kalends.api.routes.mission_paths import WORKSPACE, WorkspaceID
from kalends.api.routes.tasks_models import MAX_REVISION, NO_NUL, answer, atomic
from kalends.api.security import ContextDep, PrincipalDep
from kalends.conversations import MAX_MESSAGE_CHARS, MAX_PAGE, MAX_TITLE, Message

__all__ = ["router"]

router = APIRouter(tags=["conversations"], route_class=DispatchedRoute)

CONVERSATIONS = WORKSPACE + "/conversations"
CONVERSATION = "/api/conversations/{conversation}"
MESSAGE = "/api/messages/{message}"

# A line of text: no control character, and not blank (the service strips the ends).
_TITLE = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"

Title = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TITLE, pattern=_TITLE)]
MessageText = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_MESSAGE_CHARS, pattern=NO_NUL)
]
Revision = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_REVISION,
        strict=True,
        description="The revision you last read; a changed object is refused with 409.",
    ),
]
ConversationID = Annotated[UUID, Path(description="The conversation's ID.")]
MessageID = Annotated[UUID, Path(description="The message's ID.")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- bodies --------------------------------------------------------------------------------


class NewConversation(Strict):
    title: Title = Field(description=f"One line of at most {MAX_TITLE} characters.")


class NewMessage(Strict):
    text: MessageText
    complete: bool = Field(
        default=True,
        strict=True,
        description="false: the message stays open for `…/append` until `…/finish`.",
    )


class AppendBody(Strict):
    text: MessageText = Field(description="Added at the end of the message's text.")
    expectedRevision: Revision


class FinishBody(Strict):
    expectedRevision: Revision


class EditBody(Strict):
    text: MessageText = Field(description="The message's whole new text.")
    expectedRevision: Revision


class MoveBody(Strict):
    workspace: UUID = Field(description="The workspace to move the conversation to.")
    expectedRevision: Revision


# --- answers -------------------------------------------------------------------------------


class ConversationOut(BaseModel):
    id: UUID
    workspaceId: UUID
    kind: Literal["thread", "passage"]
    title: str
    createdBy: UUID | None
    passageId: str | None
    scheduleId: UUID | None
    state: Literal["open", "streaming", "settled"]
    revision: int
    lastSeq: int = Field(description="The highest sequence number handed out so far.")
    placementDigest: str = Field(description="Changes when the conversation is moved.")
    createdAt: datetime
    updatedAt: datetime


class MessageOut(BaseModel):
    id: UUID
    conversationId: UUID
    seq: int
    role: Literal["user", "assistant", "system"]
    authorActorId: UUID | None
    authorPassageId: str | None
    text: str
    digest: str = Field(description="SHA-256 of the role and the text: changes on a rewrite.")
    complete: bool
    revision: int
    createdAt: datetime
    updatedAt: datetime
    completedAt: datetime | None


class MessagePageOut(BaseModel):
    messages: list[MessageOut]
    nextAfterSeq: int | None = Field(
        description="The `afterSeq` of the next page; null when no message follows."
    )


# --- routes --------------------------------------------------------------------------------


@router.post(
    CONVERSATIONS,
    summary="Start a thread in a workspace (editors and owners)",
    status_code=201,
    response_model=ConversationOut,
    responses=error_responses(401, 403, 404, 422),
)
def create_conversation(
    workspace: WorkspaceID, body: NewConversation, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    made = ctx.services.conversations.create(who.actor_id, workspace, body.title)
    return answer(made.to_json(), 201)


@router.get(
    CONVERSATIONS,
    summary="A workspace's conversations, threads and passages, newest activity first",
    response_model=list[ConversationOut],
    responses=error_responses(401, 404, 422),
)
@inline_read()
def list_conversations(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    found = ctx.services.conversations.list(who.actor_id, workspace)
    return answer([c.to_json() for c in found])


@router.get(
    CONVERSATION,
    summary="A conversation: its title, state, revision and last sequence number",
    response_model=ConversationOut,
    responses=error_responses(401, 404, 422),
)
@inline_read()
def get_conversation(
    conversation: ConversationID, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    return answer(ctx.services.conversations.get(who.actor_id, conversation).to_json())


@router.get(
    CONVERSATION + "/messages",
    summary="A page of a conversation's messages, by sequence number",
    description=(
        "At most `limit` messages whose sequence number is above `afterSeq`, ascending. "
        "When more follow, `nextAfterSeq` is the `afterSeq` of the next page."
    ),
    response_model=MessagePageOut,
    responses=error_responses(401, 404, 422),
)
@inline_read()
def list_messages(
    conversation: ConversationID,
    ctx: ContextDep,
    who: PrincipalDep,
    after_seq: Annotated[
        int,
        Query(
            alias="afterSeq",
            ge=0,
            le=MAX_REVISION,
            description="Only the messages after this sequence number (0: from the first).",
        ),
    ] = 0,
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE, description=f"At most this many (1 to {MAX_PAGE}).")
    ] = MAX_PAGE,
) -> JSONResponse:
    service = ctx.services.conversations

    def read() -> tuple[list[Message], bool]:
        page = service.messages(who.actor_id, conversation, after_seq=after_seq, limit=limit)
        more = len(page) == limit and bool(
            service.messages(who.actor_id, conversation, after_seq=page[-1].seq, limit=1)
        )
        return page, more

    page, more = atomic(ctx, read, write=False)
    return answer(
        {
            "messages": [m.to_json() for m in page],
            "nextAfterSeq": page[-1].seq if more else None,
        }
    )


@router.post(
    CONVERSATION + "/messages",
    summary="Post a message to a thread as yourself (role user; editors and owners)",
    status_code=201,
    response_model=MessageOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def post_message(
    conversation: ConversationID, body: NewMessage, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    made = ctx.services.conversations.post(
        who.actor_id, conversation, body.text, complete=body.complete
    )
    return answer(made.to_json(), 201)


@router.post(
    MESSAGE + "/append",
    summary="Add text to the end of your own open message",
    response_model=MessageOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def append_message(
    message: MessageID, body: AppendBody, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    changed = ctx.services.conversations.append(
        who.actor_id, message, body.text, body.expectedRevision
    )
    return answer(changed.to_json())


@router.post(
    MESSAGE + "/finish",
    summary="Mark your own open message complete",
    response_model=MessageOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def finish_message(
    message: MessageID, body: FinishBody, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    done = ctx.services.conversations.finish(who.actor_id, message, body.expectedRevision)
    return answer(done.to_json())


@router.patch(
    MESSAGE,
    summary="Rewrite a message (its author, or the workspace's owners); its seq stays",
    response_model=MessageOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def edit_message(
    message: MessageID, body: EditBody, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    changed = ctx.services.conversations.edit(
        who.actor_id, message, body.text, body.expectedRevision
    )
    return answer(changed.to_json())


@router.delete(
    MESSAGE,
    summary="Delete a message (its author, or the workspace's owners); its seq is not reused",
    status_code=204,
    responses=error_responses(401, 403, 404, 409, 422),
)
def delete_message(
    message: MessageID,
    ctx: ContextDep,
    who: PrincipalDep,
    expected_revision: Annotated[
        int,
        Query(
            alias="expectedRevision",
            ge=0,
            le=MAX_REVISION,
            description="The message's revision you last read; another one is a 409.",
        ),
    ],
) -> Response:
    ctx.services.conversations.delete(who.actor_id, message, expected_revision)
    return Response(status_code=204)


@router.post(
    CONVERSATION + "/move",
    summary="Move a conversation to another workspace (owners of both)",
    response_model=ConversationOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def move_conversation(
    conversation: ConversationID, body: MoveBody, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    moved = ctx.services.conversations.move(
        who.actor_id, conversation, body.workspace, body.expectedRevision
    )
    return answer(moved.to_json())
