"""Workspaces and their mission schedules (seed 002) over HTTP.

The seed's routes, with ``{id}`` a workspace ID and ``{missionID}`` a schedule ID:
paused creation and its receipt, pages of at most eight documents, the detail, the
controls (each with ``requestID`` idempotency and ``expectedRevision``
compare-and-swap), Run now on its own route, the exact control-status read, preview,
history and a passage's log. Every route is a thin caller of
:class:`~kalends.missions.ScheduleService` or :class:`~kalends.missions.Workspaces`:
one transaction per operation, the services checking the caller's role.

A schedule is addressed through its own workspace only: under another workspace's
path it is not found, whatever the caller may see elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kalends.api.answers import JsonAnswer
from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute, inline_read, inline_write
from kalends.api.errors import ErrorBody, error_response, error_responses
from kalends.api.routes.passages import RuntimeDown, runtime_root
from kalends.api.routes.tasks_actors import require_server_owner
from kalends.api.routes.tasks_models import ACTOR_KEY
from kalends.api.security import ContextDep, PrincipalDep
from kalends.civil import MAX_CALENDARS
from kalends.errors import InvalidInput, KalendsError, NotFound
from kalends.missions import ACTIONS, Action, ControlOutcome, Member, Receipt, Workspace
from kalends.missions.config import CONDITION_KINDS, ONE_SHOT_KINDS, POLICY_KINDS, Restart
from kalends.missions.limits import (
    MAX_ARG_CHARS,
    MAX_COMMAND_ARGS,
    MAX_CONDITION_ITEMS,
    MAX_CONFIG_BYTES,
    MAX_CONTROL_RECORDS,
    MAX_DOCUMENT_BYTES,
    MAX_ENV_VALUE_CHARS,
    MAX_ENV_VARS,
    MAX_INSTRUCTION_CHARS,
    MAX_PAGE,
    MAX_PREVIEW,
    MAX_REASON_BYTES,
    MAX_REQUEST_ID,
    MAX_RESULTS,
    MAX_SCHEDULES,
    MAX_STORED_TITLE,
    MAX_SUMMARY_BYTES,
    MAX_TEMPLATE_ITEMS,
    MAX_TITLE,
    MAX_TOMBSTONE_BYTES,
    MAX_TOMBSTONES,
    MIN_EVERY_SECONDS,
    MIN_REQUEST_ID,
)
from kalends.missions.runtime.passages import find_passage, passage_log_tail, read_passage
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.workspaces import MAX_NAME, OutsideWorkspace

__all__ = ["router"]


WORKSPACES = "/api/workspaces"
WORKSPACE = WORKSPACES + "/{id}"
SCHEDULED = WORKSPACE + "/missions/scheduled"
SCHEDULE = WORKSPACE + "/missions/{missionID}/schedule"
PASSAGE_LOG = WORKSPACE + "/missions/{missionID}/passages/{passageID}/log"

# A revision a JSON client can hold exactly (2^53 - 1).
MAX_REVISION = 2**53 - 1
MAX_PATH_CHARS = 4096
DEFAULT_PREVIEW = 5
RUNTIME_KINDS = ("process",)
REQUEST_ID_PATTERN = rf"^[A-Za-z0-9._:-]{{{MIN_REQUEST_ID},{MAX_REQUEST_ID}}}$"
# A passage ID (psg_…) or its session ID (ses_…): the runtime's session-ID alphabet.
PASSAGE_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$"

RUN_NOW_ROUTE = SCHEDULE + "/run-now"
ControlAction = Literal["play", "pause", "stop", "resume", "check", "configure", "delete"]
CONTROL_ACTIONS: tuple[str, ...] = tuple(a.value for a in ACTIONS if a is not Action.RUN_NOW)


# --- run-now through the control route: 400 before anything else ----------------------------


class _RunNowElsewhere(Exception):
    """The control route was asked for Run now, which has its own route."""


class _MissionRoute(DispatchedRoute):
    """Answers :class:`_RunNowElsewhere` with 400 ``run-now-own-route`` (the error handlers
    have no 400 for a domain error, and the refusal must come before body validation)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except _RunNowElsewhere:
                return error_response(
                    400,
                    "run-now-own-route",
                    "run-now is not a control of this route: POST …/schedule/run-now",
                    {"field": "action", "route": RUN_NOW_ROUTE},
                )

        return route


async def _refuse_run_now(request: Request) -> None:
    """Refuses ``action: run-now`` before the body is validated or anything is read."""
    try:
        data = await request.json()
    except ValueError:
        return  # not JSON: body validation answers 422
    if isinstance(data, dict) and data.get("action") == Action.RUN_NOW.value:
        raise _RunNowElsewhere


router = APIRouter(tags=["missions"], route_class=_MissionRoute)


# --- inputs -----------------------------------------------------------------------------------


def _encodable(value: Any) -> Any:
    """``value`` unchanged when every string in it is valid UTF-8 text. A free-form JSON
    object may carry a lone surrogate (``"\\ud800"``), which nothing can store or write;
    pydantic refuses it in ``str`` fields only."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (no lone surrogates)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _encodable(key)
            _encodable(item)
    elif isinstance(value, list):
        for item in value:
            _encodable(item)
    return value


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


WorkspaceID = Annotated[UUID, Path(alias="id", description="The workspace ID.")]
MissionID = Annotated[UUID, Path(alias="missionID", description="The schedule (mission) ID.")]
RequestIDPath = Annotated[
    str,
    Path(
        alias="requestID",
        pattern=REQUEST_ID_PATTERN,
        description=f"A request ID: {MIN_REQUEST_ID}-{MAX_REQUEST_ID} of `A-Z a-z 0-9 . _ : -`.",
    ),
]
RequestID = Annotated[
    str,
    Field(
        pattern=REQUEST_ID_PATTERN,
        description=(
            f"The client's idempotency key ({MIN_REQUEST_ID}-{MAX_REQUEST_ID} of "
            "`A-Z a-z 0-9 . _ : -`): the same request repeated acts once and answers the same; "
            "keep it, and read its status, when a reply is lost."
        ),
    ),
]
Revision = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_REVISION,
        strict=True,
        description="The document revision you read; another one is a conflict.",
    ),
]


class CreateBody(Strict):
    requestID: RequestID
    config: dict[str, Any] = Field(
        description="The configuration (title, objective, notes, profile, policy, condition, "
        "end, restart, template); see `GET …/missions/scheduled/capabilities`."
    )

    _text = field_validator("config")(_encodable)


class ControlBody(Strict):
    action: ControlAction = Field(
        description="The control. Run now has its own route (`…/schedule/run-now`)."
    )
    requestID: RequestID
    expectedRevision: Revision
    changes: dict[str, Any] | None = Field(
        default=None,
        description="configure only: the configuration fields to replace.",
    )

    _text = field_validator("changes")(_encodable)


class RunNowBody(Strict):
    requestID: RequestID
    expectedRevision: Revision


class WorkspaceBody(Strict):
    path: str = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        pattern=r"^[^\x00]*$",
        description="An existing directory of the server's machine; stored resolved.",
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NAME,
        description="Display name (default: the directory's name).",
    )


class MemberBody(Strict):
    role: Literal["owner", "editor", "viewer"]


# --- outputs ----------------------------------------------------------------------------------

Document = dict[str, Any]


class WorkspaceOut(BaseModel):
    id: str
    name: str
    path: str
    role: str = Field(description="Your role: owner, editor or viewer.")
    schedules: int = Field(description="Schedules that are not deleted.")
    createdAt: str


class MemberOut(BaseModel):
    actorId: str
    handle: str
    role: str


class WorkspaceDetailOut(WorkspaceOut):
    members: list[MemberOut]


class ReceiptOut(BaseModel):
    requestId: str
    status: Literal["created", "deleted", "unknown"] = Field(
        description="`unknown` proves nothing: the creation may not have happened, or not yet."
    )
    missionId: str | None
    workspaceId: str | None
    revision: int | None
    createdAt: str | None
    repeated: bool = Field(description="The request ID had been seen: nothing was created again.")
    schedule: Document | None = Field(description="The document's projection, when known.")


class PageOut(BaseModel):
    items: list[Document] = Field(
        description="At most eight documents in mission-ID order; deleted ones as tombstones "
        "(`kind: tombstone`)."
    )
    nextAfter: str | None = Field(description="Pass as `after` for the next page; null at the end.")


class ControlOut(BaseModel):
    requestId: str
    action: str
    status: str = Field(description="`applied`.")
    expectedRevision: int
    revision: int = Field(description="The revision the control recorded.")
    complete: bool = Field(description="False while it waits on the runtime (Pause/Stop).")
    repeated: bool = Field(description="The request ID had been seen: nothing acted again.")
    schedule: Document


class ControlStatusOut(BaseModel):
    requestId: str
    status: Literal["applied", "rejected", "unknown"] = Field(
        description="`rejected` only when the store proves it never applied and never can; "
        "`unknown` never authorizes a new request ID."
    )
    code: str | None = Field(
        description="When rejected: `revision-conflict` or `control-conflict`."
    )
    action: str | None
    expectedRevision: int | None
    revision: int | None
    complete: bool | None
    at: str | None
    reason: str | None


class SlotOut(BaseModel):
    at: str = Field(description="The instant (UTC).")
    local: str = Field(description="The wall-clock time in the policy's zone.")
    zone: str
    dst: str | None = Field(description="How a DST change affected the slot, if it did.")


class HistoryOut(BaseModel):
    missionId: str
    revision: int
    counters: dict[str, int] | None
    results: list[Document] = Field(
        description=f"The retained passage results (at most {MAX_RESULTS}), newest first."
    )


class LimitsOut(BaseModel):
    maxSchedules: int
    maxConfigBytes: int
    maxDocumentBytes: int
    maxResults: int
    maxControlRecords: int
    maxPage: int
    maxTitle: int
    maxStoredTitle: int
    maxTombstones: int
    maxTombstoneBytes: int
    maxInstructionChars: int
    maxConditionItems: int
    maxTemplateItems: int
    maxCalendars: int
    minEverySeconds: int
    maxCommandArgs: int
    maxArgChars: int
    maxEnvVars: int
    maxEnvValueChars: int
    minRequestId: int
    maxRequestId: int
    maxPreview: int
    maxSummaryBytes: int
    maxReasonBytes: int


class CapabilitiesOut(BaseModel):
    actions: list[str] = Field(description="Every control, Run now included.")
    controlActions: list[str] = Field(description="What `POST …/schedule` takes as `action`.")
    runNowRoute: str
    policyKinds: list[str]
    oneShotKinds: list[str]
    conditionKinds: list[str]
    restart: list[str]
    limits: LimitsOut
    pageSize: int
    runtimeKinds: list[str]
    passageReports: bool = Field(description="Whether this server has a runtime directory.")


class PassageLogOut(BaseModel):
    passageId: str | None
    sessionId: str
    scheduleId: str | None
    status: str = Field(description="admitted, running, exited, lost or unreadable.")
    exitStatus: int | None
    signal: int | None
    error: str | None
    report: dict[str, Any] | None
    interrupted: dict[str, Any] | None
    createdAt: str | None
    startedAt: str | None
    endedAt: str | None
    log: str = Field(description="The end of the passage's output.")


# --- helpers ----------------------------------------------------------------------------------


@contextmanager
def _in_path(workspace: UUID) -> Iterator[None]:
    """Names a schedule of another workspace (or of none) by its path parameter."""
    try:
        yield
    except OutsideWorkspace as exc:
        raise NotFound(
            f"missionID: no schedule {exc.schedule} in workspace {workspace}", field="missionID"
        ) from None


@contextmanager
def _fields_under(prefix: str) -> Iterator[None]:
    """Names a service's field relative to the request body (``title`` → ``config.title``)."""
    try:
        yield
    except InvalidInput as exc:
        field = exc.details.get("field")
        if isinstance(field, str) and field != prefix and not field.startswith(prefix + "."):
            exc.field = exc.details["field"] = f"{prefix}.{field}"
        raise


def _workspace_out(w: Workspace) -> WorkspaceOut:
    return WorkspaceOut(**w.to_json())


def _member_out(m: Member) -> MemberOut:
    return MemberOut(**m.to_json())


def _receipt_out(r: Receipt) -> ReceiptOut:
    return ReceiptOut(**r.to_json())


def _control_out(o: ControlOutcome) -> ControlOut:
    return ControlOut(**o.to_json())


def _with_log_tail(ctx: ApiContext, doc: Document) -> Document:
    """The detail with the end of the pending passage's output, when this server's runtime
    directory holds it (as ``kalends schedule show`` does)."""

    pending = doc.get("pending")
    if not isinstance(pending, dict) or not isinstance(pending.get("sessionId"), str):
        return doc
    try:
        root = runtime_root(ctx)
    except NotFound:
        return doc
    tail = passage_log_tail(root, pending["sessionId"])
    if tail is not None:
        pending["logTail"] = tail
    return doc


# --- workspaces -------------------------------------------------------------------------------


@router.get(
    WORKSPACES,
    summary="The workspaces you are a member of, with your role",
    tags=["workspaces"],
    responses=error_responses(401, 503),
)
@inline_read()
def list_workspaces(ctx: ContextDep, who: PrincipalDep) -> list[WorkspaceOut]:
    return [_workspace_out(w) for w in ctx.services.workspaces.list(who.actor_id)]


@router.post(
    WORKSPACES,
    summary=(
        "Register a directory as a workspace (the server's owner account only); "
        "you become its owner"
    ),
    tags=["workspaces"],
    status_code=201,
    responses=error_responses(401, 403, 409, 422, 503),
)
def add_workspace(body: WorkspaceBody, ctx: ContextDep, who: PrincipalDep) -> WorkspaceOut:
    # Passages run their profile's command in a workspace as the server's own user, so
    # choosing directories is the server owner's decision; members are then invited.
    require_server_owner(
        ctx, who, "register a directory: passages run commands in it as the server's user"
    )
    added = ctx.services.workspaces.add(who.actor_id, body.path, body.name)
    return _workspace_out(added)


@router.get(
    WORKSPACE,
    summary="A workspace: its path, your role, its live schedules and its members",
    tags=["workspaces"],
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def get_workspace(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> WorkspaceDetailOut:
    ws = ctx.services.workspaces

    def read() -> tuple[Workspace, list[Member]]:
        return ws.get(who.actor_id, workspace), ws.members(who.actor_id, workspace)

    found, members = ctx.services.store.run(lambda _conn: read(), write=False)
    return WorkspaceDetailOut(**found.to_json(), members=[_member_out(m) for m in members])


@router.delete(
    WORKSPACE,
    summary="Unregister a workspace (owners); refused while it holds schedules",
    tags=["workspaces"],
    status_code=204,
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def remove_workspace(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> Response:
    ctx.services.workspaces.remove(who.actor_id, workspace)
    return Response(status_code=204)


@router.get(
    WORKSPACE + "/members",
    summary="A workspace's members and their roles",
    tags=["workspaces"],
    responses=error_responses(401, 403, 404, 422, 503),
)
def list_members(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> list[MemberOut]:
    return [_member_out(m) for m in ctx.services.workspaces.members(who.actor_id, workspace)]


@router.put(
    WORKSPACE + "/members/{actorID}",
    summary="Give an actor a role on the workspace (owners); a workspace keeps an owner",
    tags=["workspaces"],
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def set_member(
    workspace: WorkspaceID,
    member: Annotated[
        str, Path(alias="actorID", pattern=ACTOR_KEY, description="The member's handle or ID.")
    ],
    body: MemberBody,
    ctx: ContextDep,
    who: PrincipalDep,
) -> MemberOut:
    made = ctx.services.workspaces.set_member(who.actor_id, workspace, member, body.role)
    return _member_out(made)


@router.delete(
    WORKSPACE + "/members/{actorID}",
    summary="Take an actor off the workspace (owners); the last owner stays",
    tags=["workspaces"],
    status_code=204,
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def remove_member(
    workspace: WorkspaceID,
    member: Annotated[
        str, Path(alias="actorID", pattern=ACTOR_KEY, description="The member's handle or ID.")
    ],
    ctx: ContextDep,
    who: PrincipalDep,
) -> Response:
    ctx.services.workspaces.remove_member(who.actor_id, workspace, member)
    return Response(status_code=204)


# --- the workspace's schedules ----------------------------------------------------------------


@router.post(
    SCHEDULED,
    summary="Create a schedule, paused (it starts nothing); idempotent by requestID",
    description=(
        "201 with the creation receipt; a repeat of the same request answers 200 with the same "
        "receipt (`repeated: true`) and creates nothing. The same requestID with another "
        "configuration is 409 `request-reused`."
    ),
    status_code=201,
    responses={
        200: {"model": ReceiptOut, "description": "A repeat: the original receipt."},
        **error_responses(401, 403, 404, 409, 413, 422, 503),
    },
)
def create_schedule(
    workspace: WorkspaceID,
    body: CreateBody,
    response: Response,
    ctx: ContextDep,
    who: PrincipalDep,
) -> ReceiptOut:
    with _fields_under("config"):
        receipt = ctx.services.schedules.create(
            who.actor_id, workspace, body.config, request_id=body.requestID
        )
    if receipt.repeated:
        response.status_code = 200
    return _receipt_out(receipt)


# What a read says of the state that really holds (kalends.missions.views).
_DISPLAY_STATE = (
    "`state` and `desiredState` are what the document records; `displayState` with "
    "`displayReason` is what really holds: `finished` for a running schedule with nothing "
    "left to launch (`one-shot-done`, `quota-exhausted`, `until-reached`, `within-reached`, "
    "`no-more-slots`), `interrupted` for one with a recorded interruption (its reason) or "
    "with a slot or a pending passage left that no live scheduler holds (`no-scheduler`), "
    "else the desired state (reason null)."
)


@router.get(
    SCHEDULED,
    summary="A page of at most eight schedules in mission-ID order (tombstones included)",
    description=_DISPLAY_STATE,
    response_model=PageOut,
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def page_schedules(
    workspace: WorkspaceID,
    ctx: ContextDep,
    who: PrincipalDep,
    after: Annotated[
        UUID | None, Query(description="The last mission ID of the previous page.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size.")] = MAX_PAGE,
) -> JSONResponse:
    page = ctx.services.schedules.page(who.actor_id, workspace, after=after, limit=limit)
    return JsonAnswer(page.to_json())


@router.get(
    SCHEDULED + "/requests/{requestID}",
    summary="The creation receipt of a request ID (after a lost creation reply)",
    description=(
        "A read only. `unknown` retains the uncertainty: it never proves the creation did not "
        "or will not happen; keep the request ID and read again, or repeat the same request."
    ),
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def creation_receipt(
    workspace: WorkspaceID, request_id: RequestIDPath, ctx: ContextDep, who: PrincipalDep
) -> ReceiptOut:
    return _receipt_out(ctx.services.schedules.receipt(who.actor_id, workspace, request_id))


@router.get(
    SCHEDULED + "/capabilities",
    summary="What this server supports: controls, policy kinds, limits, page size, runtimes",
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def capabilities(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> CapabilitiesOut:
    ctx.services.workspaces.get(who.actor_id, workspace)
    try:
        runtime_root(ctx)
        reports = True
    except NotFound:
        reports = False
    return CapabilitiesOut(
        actions=[a.value for a in ACTIONS],
        controlActions=list(CONTROL_ACTIONS),
        runNowRoute=RUN_NOW_ROUTE,
        policyKinds=list(POLICY_KINDS),
        oneShotKinds=sorted(ONE_SHOT_KINDS),
        conditionKinds=list(CONDITION_KINDS),
        restart=[r.value for r in Restart],
        limits=LimitsOut(
            maxSchedules=MAX_SCHEDULES,
            maxConfigBytes=MAX_CONFIG_BYTES,
            maxDocumentBytes=MAX_DOCUMENT_BYTES,
            maxResults=MAX_RESULTS,
            maxControlRecords=MAX_CONTROL_RECORDS,
            maxPage=MAX_PAGE,
            maxTitle=MAX_TITLE,
            maxStoredTitle=MAX_STORED_TITLE,
            maxTombstones=MAX_TOMBSTONES,
            maxTombstoneBytes=MAX_TOMBSTONE_BYTES,
            maxInstructionChars=MAX_INSTRUCTION_CHARS,
            maxConditionItems=MAX_CONDITION_ITEMS,
            maxTemplateItems=MAX_TEMPLATE_ITEMS,
            maxCalendars=MAX_CALENDARS,
            minEverySeconds=MIN_EVERY_SECONDS,
            maxCommandArgs=MAX_COMMAND_ARGS,
            maxArgChars=MAX_ARG_CHARS,
            maxEnvVars=MAX_ENV_VARS,
            maxEnvValueChars=MAX_ENV_VALUE_CHARS,
            minRequestId=MIN_REQUEST_ID,
            maxRequestId=MAX_REQUEST_ID,
            maxPreview=MAX_PREVIEW,
            maxSummaryBytes=MAX_SUMMARY_BYTES,
            maxReasonBytes=MAX_REASON_BYTES,
        ),
        pageSize=MAX_PAGE,
        runtimeKinds=list(RUNTIME_KINDS),
        passageReports=reports,
    )


# --- one schedule -----------------------------------------------------------------------------


@router.get(
    SCHEDULE,
    summary="A schedule's detail: state, policy, counters, pending passage, 30 results, actions",
    description=_DISPLAY_STATE,
    response_model=Document,
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def schedule_detail(
    workspace: WorkspaceID, mission: MissionID, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    with _in_path(workspace):
        doc = ctx.services.schedules.detail(who.actor_id, mission, workspace=workspace)
    # The service's JSON as is: no second validation pass over a document of up to 256 KiB.
    return JsonAnswer(_with_log_tail(ctx, doc))


@router.post(
    SCHEDULE,
    summary="Apply a control: play, pause, stop, resume, check, configure or delete",
    response_model=ControlOut,
    description=(
        "Idempotent by `requestID`: a repeat answers the original outcome (`repeated: true`) "
        "and acts once; the same requestID with another action, revision or changes is 409 "
        "`request-reused`. A stale `expectedRevision` is 409 `recurrence-revision-conflict`, a "
        "control the state refuses 409 `recurrence-control-conflict`, a busy store 503 "
        "`recurrence-not-dispatched` (keep the request ID and read its status). "
        "`run-now` is refused here with 400 `run-now-own-route`."
    ),
    responses={
        400: {
            "model": ErrorBody,
            "description": "`run-now-own-route`: Run now has its own route; nothing was read.",
        },
        **error_responses(401, 403, 404, 409, 413, 422, 503),
    },
)
@inline_write()
def control_schedule(
    workspace: WorkspaceID,
    mission: MissionID,
    who: PrincipalDep,
    _refused: Annotated[None, Depends(_refuse_run_now)],
    body: ControlBody,
    ctx: ContextDep,
) -> JSONResponse:
    if body.changes is not None and body.action != Action.CONFIGURE.value:
        raise InvalidInput("changes: only configure takes changes", field="changes")
    service = ctx.services.schedules

    def act() -> ControlOutcome:
        if body.action == Action.CONFIGURE.value:
            with _fields_under("changes"):
                return service.configure(
                    who.actor_id,
                    mission,
                    body.changes or {},
                    request_id=body.requestID,
                    expected_revision=body.expectedRevision,
                    workspace=workspace,
                )
        return service.control(
            who.actor_id,
            mission,
            body.action,
            request_id=body.requestID,
            expected_revision=body.expectedRevision,
            workspace=workspace,
        )

    with _in_path(workspace):
        return JsonAnswer(act().to_json())


@router.post(
    SCHEDULE + "/run-now",
    summary="Run now: reserve one passage outside the policy; idempotent by requestID",
    description=(
        "Allowed while paused or running with no pending passage and quota left. The same "
        "error contract as the controls."
    ),
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
@inline_write()
def run_now(
    workspace: WorkspaceID,
    mission: MissionID,
    body: RunNowBody,
    ctx: ContextDep,
    who: PrincipalDep,
) -> ControlOut:
    with _in_path(workspace):
        outcome = ctx.services.schedules.run_now(
            who.actor_id,
            mission,
            request_id=body.requestID,
            expected_revision=body.expectedRevision,
            workspace=workspace,
        )
    return _control_out(outcome)


@router.get(
    SCHEDULE + "/requests/{requestID}",
    summary="The exact status of a control by request ID: applied, rejected or unknown",
    description=(
        "A read only; it never resends. With `expectedRevision` (and `action`) of the original "
        "request the store may prove a `rejected`; otherwise an unrecorded request stays "
        "`unknown`."
    ),
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def control_status(
    workspace: WorkspaceID,
    mission: MissionID,
    request_id: RequestIDPath,
    ctx: ContextDep,
    who: PrincipalDep,
    expected_revision: Annotated[
        int | None,
        Query(alias="expectedRevision", ge=1, le=MAX_REVISION, description="The request's."),
    ] = None,
    action: Annotated[Action | None, Query(description="The request's action.")] = None,
) -> ControlStatusOut:
    with _in_path(workspace):
        status = ctx.services.schedules.control_status(
            who.actor_id,
            mission,
            request_id,
            expected_revision=expected_revision,
            action=action,
            workspace=workspace,
        )
    return ControlStatusOut(**status.to_json())


@router.get(
    SCHEDULE + "/preview",
    summary="The next slots under the policy, end bounds and quota (DST-affected ones marked)",
    responses=error_responses(401, 403, 404, 422, 503),
)
def preview(
    workspace: WorkspaceID,
    mission: MissionID,
    ctx: ContextDep,
    who: PrincipalDep,
    count: Annotated[int, Query(ge=1, le=MAX_PREVIEW, description="How many slots.")] = (
        DEFAULT_PREVIEW
    ),
) -> list[SlotOut]:
    with _in_path(workspace):
        slots = ctx.services.schedules.preview(who.actor_id, mission, count, workspace=workspace)
    return [SlotOut(**s) for s in slots]


@router.get(
    SCHEDULE + "/history",
    summary=f"The schedule's retained passage results (at most {MAX_RESULTS}) and counters",
    responses=error_responses(401, 403, 404, 422, 503),
)
def history(
    workspace: WorkspaceID, mission: MissionID, ctx: ContextDep, who: PrincipalDep
) -> HistoryOut:
    with _in_path(workspace):
        doc = ctx.services.schedules.detail(who.actor_id, mission, workspace=workspace)
    return HistoryOut(
        missionId=doc["id"],
        revision=doc["revision"],
        counters=doc.get("counters"),
        results=doc.get("results") or [],
    )


@router.get(
    PASSAGE_LOG,
    summary="A passage's records and the end of its output, from this server's runtime",
    description=(
        "The passage (its passage ID `psg_…` or session ID `ses_…`) must be one of this "
        "schedule's, in this server's runtime directory; 404 `no-runtime` when the server "
        "runs no passages."
    ),
    responses=error_responses(401, 403, 404, 422, 503),
)
def passage_log(
    workspace: WorkspaceID,
    mission: MissionID,
    passage: Annotated[
        str,
        Path(
            alias="passageID",
            pattern=PASSAGE_ID_PATTERN,
            description="A passage ID (psg_…) or its session ID (ses_…).",
        ),
    ],
    ctx: ContextDep,
    who: PrincipalDep,
) -> PassageLogOut:

    with _in_path(workspace):
        ctx.services.schedules.within(who.actor_id, workspace, mission)
    root = runtime_root(ctx)
    missing = NotFound(
        f"passageID: no passage {passage} of schedule {mission} on this server",
        field="passageID",
    )
    try:
        directory = find_passage(root, passage)
        found = read_passage(ProcessRuntime(root), directory)
    except NotFound:
        raise missing from None
    except (KalendsError, OSError) as exc:
        raise RuntimeDown(f"cannot read passage {passage}: {exc}") from None
    if found.start.get("scheduleId") != str(mission):
        raise missing
    out = found.to_json()
    obs = found.observation
    return PassageLogOut(
        passageId=out["passageId"],
        sessionId=out["sessionId"],
        scheduleId=out["scheduleId"],
        status=out["status"],
        exitStatus=out["exitStatus"],
        signal=out["signal"],
        error=out["error"],
        report=out["report"],
        interrupted=out["interrupted"],
        createdAt=out["createdAt"],
        startedAt=out["startedAt"],
        endedAt=out["endedAt"],
        log=obs.log_tail if obs is not None else "",
    )
