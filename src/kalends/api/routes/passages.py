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

``POST /api/passages/beats`` is where the shim of a passage started by a worker node
reports its start, its heartbeats and its end (issue 23 §3), so that a scheduler on any
machine observes the passage through the database. It takes no person's credential nor
the passage's token: the body names the node and the session and carries the shim's
token for them (:mod:`kalends.missions.beat_service`), which the command never sees.

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

from collections.abc import Callable, Coroutine
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from kalends.api.answers import JsonAnswer
from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute, inline_write
from kalends.api.errors import error_responses
from kalends.api.security import ContextDep, PrincipalDep
from kalends.conversations import MAX_MESSAGE_CHARS
from kalends.errors import TooLarge
from kalends.missions.agents import FINAL_OUTPUT_BYTES
from kalends.missions.beat_service import (
    DEFAULT_INTERRUPT_GRACE,
    MAX_AGENT_CHARS,
    MAX_BEAT_BODY_BYTES,
    MAX_NODE_ID_CHARS,
    MAX_SESSION_ID_CHARS,
    MAX_TOKEN_CHARS,
    Beat,
    BeatEvent,
    PassageBeats,
)
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.passage_conversation import PassageConversation
from kalends.missions.passage_tasks import PassageTasks
from kalends.missions.runtime.base import Observation, Report
from kalends.missions.runtime.observation import LOG_TAIL_BYTES
from kalends.missions.runtime.passages import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
from kalends.missions.runtime.process import OUTCOMES
from kalends.missions.runtime.server_passages import (
    NoRuntime,
    PassageTokenRefused,
    RuntimeDown,
    ServerPassages,
)

__all__ = [
    "BeatRoute",
    "NoRuntime",
    "PassageTokenRefused",
    "RuntimeDown",
    "passage_beats",
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


# --- the shims' beats ---------------------------------------------------------------------------


def passage_beats(ctx: ApiContext) -> PassageBeats:
    """The shims' beats on this server's database, with the grace period of this server's
    runtime (its default when it runs no passages)."""
    grace = ctx.runtime.grace if ctx.runtime is not None else DEFAULT_INTERRUPT_GRACE
    return PassageBeats(store=ctx.services.store, grace=grace)


class BeatRoute(DispatchedRoute):
    """Refuses a beat over :data:`MAX_BEAT_BODY_BYTES` with 413 before its body is parsed
    (the server's own bound on every body is larger)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            if len(await request.body()) > MAX_BEAT_BODY_BYTES:
                raise TooLarge(
                    f"body: a beat is at most {MAX_BEAT_BODY_BYTES} bytes",
                    field="body",
                    limit=MAX_BEAT_BODY_BYTES,
                )
            return await handler(request)

        return route


class BeatReportIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: Literal["completed", "failed"] = Field(description="How the passage said it ended.")
    summary: str = Field(
        max_length=MAX_SUMMARY_BYTES,
        description=f"What it did: at most {MAX_SUMMARY_BYTES} bytes as stored.",
    )
    at: AwareDatetime = Field(description="When it reported (ISO 8601 with its offset).")


MAX_BEAT_ERROR_CHARS = 1024
"""Far above the shim's own notes (a command that could not run names itself and why)."""


class BeatObservationIn(BaseModel):
    """What the shim sees of its passage, as a local observation holds it."""

    model_config = ConfigDict(extra="forbid")

    launched: bool = Field(strict=True, description="The command was started.")
    running: bool = Field(strict=True, description="The command's main process still lives.")
    exited: bool = Field(strict=True, description="The command's end was recorded.")
    exitStatus: int | None = Field(
        default=None, ge=0, le=255, strict=True, description="Its exit status, if it exited."
    )
    signal: int | None = Field(
        default=None, ge=1, le=127, strict=True, description="The signal that ended it, if one."
    )
    descendants: bool = Field(
        default=False, strict=True, description="Other processes of its session still live."
    )
    interrupted: bool = Field(default=False, strict=True, description="kalends interrupted it.")
    error: str | None = Field(
        default=None,
        max_length=MAX_BEAT_ERROR_CHARS,
        description="Why it ended without a status or signal, or could not run at all "
        "(`lost`: the shim died; `cannot run 'x': ...`).",
    )
    startedAt: AwareDatetime | None = Field(default=None, description="When the command started.")
    endedAt: AwareDatetime | None = Field(default=None, description="When the command ended.")
    logTail: str = Field(
        default="",
        max_length=LOG_TAIL_BYTES,
        description=f"The last {LOG_TAIL_BYTES} bytes of its output, as text.",
    )
    report: BeatReportIn | None = Field(
        default=None, description="The passage's own final report, if it sent one."
    )

    def observation(self) -> Observation:
        report = self.report
        return Observation(
            launched=self.launched,
            running=self.running,
            exited=self.exited,
            exit_status=self.exitStatus,
            signal=self.signal,
            descendants=self.descendants,
            interrupted=self.interrupted,
            report=None
            if report is None
            else Report(outcome=report.outcome, summary=report.summary, at=report.at),
            started_at=self.startedAt,
            ended_at=self.endedAt,
            log_tail=self.logTail,
            error=self.error,
        )


class BeatBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = Field(description="The beat's format: 1.")
    node: str = Field(
        min_length=1,
        max_length=MAX_NODE_ID_CHARS,
        description="The ID of the node that started the passage.",
    )
    session: str = Field(
        min_length=1, max_length=MAX_SESSION_ID_CHARS, description="The passage's session ID."
    )
    token: str = Field(
        min_length=1,
        max_length=MAX_TOKEN_CHARS,
        description="The shim's token for this session of this node (from its `beat.json`).",
    )
    event: Literal["start", "beat", "exit"] = Field(
        description=(
            "`start` once the command started, `beat` while it (or another process of its "
            "session) runs, `exit` once the whole family ended."
        )
    )
    observation: BeatObservationIn
    agent: str | None = Field(
        default=None,
        max_length=MAX_AGENT_CHARS,
        description="The agent preset the passage's profile names (with an exit only).",
    )
    finalOutput: str | None = Field(
        default=None,
        max_length=FINAL_OUTPUT_BYTES,
        description=(
            "The end of the passage's output, with an exit of status 0 without a report: "
            "an agent preset's final message is read from it."
        ),
    )

    def beat(self) -> Beat:
        return Beat(
            node_id=self.node,
            session_id=self.session,
            token=self.token,
            event=BeatEvent(self.event),
            observation=self.observation.observation(),
            agent=self.agent,
            final_output=self.finalOutput,
        )


class BeatOut(BaseModel):
    interrupt: bool = Field(
        description="A scheduler asked for the passage to be interrupted: end its family."
    )
    grace: float = Field(description="Seconds between TERM and KILL when interrupting.")


@inline_write()
def record_beat(body: BeatBody, ctx: ContextDep) -> BeatOut:
    reply = passage_beats(ctx).record(body.beat())
    return BeatOut(interrupt=reply.interrupt, grace=reply.grace)


router.add_api_route(
    "/beats",
    record_beat,
    methods=["POST"],
    route_class_override=BeatRoute,
    summary="Record a passage's start, heartbeat or end, sent by its shim with its node's token",
    description=(
        "The shim of a passage started by a worker node reports here (issue 23 §3). The body "
        "names the node and the session and carries the shim's token for them: an unknown or "
        "forgotten node, or a wrong token, answers 401 `invalid-beat-token`; a session that "
        "is not admitted on that node 404 `passage-not-admitted`; a body over "
        f"{MAX_BEAT_BODY_BYTES} bytes 413. Nothing is written on a refusal. An observation "
        "that ended is final: later beats of the passage are answered, not recorded."
    ),
    response_model=BeatOut,
    responses=error_responses(401, 404, 413, 422, 503),
)
