"""Passages of this server's runtime: the report callback, and the listing.

``POST /api/passages/report`` is the HTTP form of ``kalends report``. The passage sends
the token it found in ``KALENDS_PASSAGE_TOKEN`` as ``Authorization: Passage <token>``;
the token is an HMAC over the passage's identities, signed with the secret of this
server's runtime directory, so it speaks for that one passage only and never for
another, nor for any person. A login session or an API token cannot report.

``GET /api/passages`` is the HTTP form of ``kalends passage ls``: the passages of this
server's runtime directory, newest first, as a person may see them.

``POST /api/passages/say`` is the HTTP form of ``kalends say``: a message in the
passage's own conversation, by the passage, with the same token.

The same token also ticks and comments the items of the passage's own checklist, on the
task routes ``POST /api/tasks/{task}/complete`` and ``POST /api/tasks/{task}/comments``
(:func:`passage_tasks`); it is no credential anywhere else. Any authenticated
caller may ask; the answer holds only the passages of schedules in workspaces where the
caller has a role (viewer or more), a deleted schedule's included while its tombstone
stays. A passage whose schedule the server's database does not know (another database's
worker, a record without one) is shown to nobody. Reading writes nothing.

The routes parse and render; the runtime directory is read and written by
:class:`~kalends.missions.runtime.server_passages.ServerPassages`, which asks the
services what a person may see.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ConfigDict, Field

from kalends.api.answers import JsonAnswer
from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.security import ContextDep, PrincipalDep
from kalends.conversations import MAX_MESSAGE_CHARS
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.passage_conversation import PassageConversation
from kalends.missions.passage_tasks import PassageTasks
from kalends.missions.runtime.passages import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
from kalends.missions.runtime.process import OUTCOMES
from kalends.missions.runtime.server_passages import (
    NoRuntime,
    PassageTokenRefused,
    RuntimeDown,
    ServerPassages,
)

__all__ = [
    "NoRuntime",
    "PassageTokenRefused",
    "RuntimeDown",
    "passage_conversation",
    "passage_tasks",
    "router",
    "server_passages",
]

router = APIRouter(prefix="/api/passages", tags=["passages"], route_class=DispatchedRoute)

PASSAGE_SCHEME = "passage"

_passage_header = APIKeyHeader(
    name="Authorization",
    scheme_name="passage",
    auto_error=False,
    description=(
        "A passage's own token (its `KALENDS_PASSAGE_TOKEN`): `Authorization: Passage <token>`. "
        "It speaks for that passage only."
    ),
)


def server_passages(ctx: ApiContext) -> ServerPassages:
    """This server's passages: its runtime's directory, else the settings' (or none)."""
    services = ctx.services
    return ServerPassages(
        runtime=ctx.runtime,
        runtime_dir=ctx.settings.runtime_dir,
        schedules=services.schedules,
        workspaces=services.workspaces,
        clock=services.store.clock,
    )


def passage_tasks(ctx: ApiContext) -> PassageTasks:
    """What a passage's token may do to tasks on this server: tick and comment its own
    checklist's items, the token checked against this server's runtime directory."""
    return PassageTasks(tasks=ctx.services.tasks, speaker=server_passages(ctx).speaker)


def passage_token(header: Annotated[str | None, Depends(_passage_header)]) -> str:
    """The token of ``Authorization: Passage <token>``; 401 without one."""
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != PASSAGE_SCHEME or not token:
        raise PassageTokenRefused(
            "send the passage's token (KALENDS_PASSAGE_TOKEN) as `Authorization: Passage <token>`"
        )
    return token


PassageTokenDep = Annotated[str, Depends(passage_token)]


def passage_conversation(ctx: ApiContext) -> PassageConversation:
    """What a passage's token may say on this server: messages in its own conversation."""
    return PassageConversation(store=ctx.services.store, speaker=server_passages(ctx).speaker)


class SayBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        min_length=1,
        max_length=MAX_MESSAGE_CHARS,
        description=f"The message: 1 to {MAX_MESSAGE_CHARS} characters, no NUL.",
    )
    role: Literal["assistant", "system"] = Field(
        default="assistant",
        description="`assistant` (what the passage says) or `system` (a note of its own).",
    )
    complete: bool = Field(
        default=True,
        description="`false` for a message still being written (a watcher waits for it).",
    )


class ReportBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: Literal["completed", "failed"] = Field(description="How the passage ended.")
    # A character takes at least one stored byte: the length is a quick first bound, and
    # the runtime refuses a summary over its byte bound (422 on ``summary``).
    summary: str = Field(
        max_length=MAX_SUMMARY_BYTES,
        description=(
            f"What the passage did: at most {MAX_SUMMARY_BYTES} bytes as stored (UTF-8, "
            f"JSON escapes counted): {MAX_SUMMARY_BYTES // 4} four-byte characters."
        ),
    )


class ReportOut(BaseModel):
    outcome: str = Field(description=" or ".join(f"`{o}`" for o in OUTCOMES) + ".")
    summary: str
    at: str = Field(description="When the report was recorded (ISO 8601).")


@router.post(
    "/report",
    summary="Record a passage's final report with its own passage token (`kalends report`)",
    description=(
        "The last report wins until the passage settles; afterwards it is final (409 "
        "`passage-settled`). A token that this server's runtime did not sign, or that names "
        "no passage of it, answers 401 `invalid-passage-token`; nothing is written on a refusal."
    ),
    responses=error_responses(401, 404, 409, 422, 503),
)
def report(body: ReportBody, token: PassageTokenDep, ctx: ContextDep) -> ReportOut:
    done = server_passages(ctx).report(token, body.outcome, body.summary)
    return ReportOut(
        outcome=done.outcome,
        summary=done.summary,
        at=done.at.isoformat().replace("+00:00", "Z"),
    )


# --- the listing ------------------------------------------------------------------------------


class PassageOut(BaseModel):
    """A passage's records, as ``kalends passage ls --json`` prints them. The fields read
    from the runtime's records are as the records hold them (``null`` when absent)."""

    passageId: Any
    sessionId: str
    messageId: Any
    scheduleId: Any
    directory: str = Field(description="Its directory on the server's machine.")
    status: Literal["admitted", "running", "exited", "lost", "unreadable"]
    exitStatus: Any
    signal: Any
    error: Any
    descendants: bool | None = Field(description="Processes of its session still run.")
    problem: str | None = Field(description="Why some record could not be read.")
    command: list[Any]
    envNames: list[str] = Field(description="The environment's names (never its values).")
    workspace: Any
    cwd: Any
    createdAt: Any
    startedAt: Any
    endedAt: Any
    pid: Any
    report: dict[str, Any] | None
    interrupted: dict[str, Any] | None


class PassagesOut(BaseModel):
    runtimeDir: str = Field(description="The server's runtime directory.")
    total: int = Field(description="How many passages you may see; `items` may hold fewer.")
    items: list[PassageOut] = Field(description="Newest first.")


@router.post(
    "/say",
    summary="Say something in the passage's own conversation with its token (`kalends say`)",
    description=(
        "A new last message of the passage's conversation, opened with its reservation. "
        "A passage without one (reserved before passages had conversations) answers 404; "
        "a settled one 409; a token this server's runtime did not sign 401. Nothing is "
        "written on a refusal."
    ),
    status_code=201,
    responses=error_responses(401, 404, 409, 422, 503),
)
def say(body: SayBody, token: PassageTokenDep, ctx: ContextDep) -> JSONResponse:
    said = passage_conversation(ctx).say(token, body.text, role=body.role, complete=body.complete)
    return JSONResponse(said.to_json(), status_code=201)


@router.get(
    "",
    summary="The passages of this server's runtime that you may see, newest first",
    description=(
        "Only the passages of schedules in workspaces where you have a role (`kalends "
        "passage ls`). 404 `no-runtime` when the server runs no passages; 503 "
        "`runtime-unavailable` when its runtime directory cannot be read."
    ),
    response_model=PassagesOut,
    responses=error_responses(401, 404, 422, 503),
)
def list_passages(
    ctx: ContextDep,
    who: PrincipalDep,
    limit: Annotated[
        int,
        Query(
            ge=0,
            le=MAX_LIST_LIMIT,
            description=f"At most this many, newest first (default {DEFAULT_LIST_LIMIT}; 0: all).",
        ),
    ] = DEFAULT_LIST_LIMIT,
) -> JSONResponse:
    return JsonAnswer(server_passages(ctx).visible(who.actor_id, limit).to_json())
