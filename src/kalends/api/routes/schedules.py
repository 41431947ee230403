"""A workspace's mission schedules over HTTP (seed 002).

The seed's routes, with ``{id}`` a workspace ID and ``{missionID}`` a schedule ID:
paused creation and its receipt, pages of at most eight documents, the detail, the
controls (each with ``requestID`` idempotency and ``expectedRevision``
compare-and-swap), Run now on its own route, the exact control-status read, preview
and history. Every route is a thin caller of
:class:`~kalends.missions.ScheduleService`: one transaction per operation, the service
checking the caller's role.

A schedule is addressed through its own workspace only: under another workspace's
path it is not found, whatever the caller may see elsewhere
(:func:`~kalends.api.routes.mission_paths.in_path`).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from kalends.api.answers import JsonAnswer
from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute, inline_read, inline_write
from kalends.api.errors import ErrorBody, error_response, error_responses
from kalends.api.routes.mission_models import (
    MAX_REVISION,
    AgentPresetOut,
    CapabilitiesOut,
    ControlBody,
    ControlOut,
    ControlStatusOut,
    CreateBody,
    Document,
    HistoryOut,
    LimitsOut,
    PageOut,
    PreviewDraftBody,
    PreviewDraftOut,
    ReceiptOut,
    RunNowBody,
    SlotOut,
)
from kalends.api.routes.mission_paths import (
    RUN_NOW_ROUTE,
    SCHEDULE,
    SCHEDULED,
    MissionID,
    RequestIDPath,
    WorkspaceID,
    in_path,
)
from kalends.api.routes.passages import server_passages
from kalends.api.security import ContextDep, PrincipalDep
from kalends.civil import MAX_CALENDARS
from kalends.errors import InvalidInput
from kalends.missions import ACTIONS, Action, ControlOutcome, Receipt
from kalends.missions.agents import PRESETS
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
    MAX_GATE_RECORDS,
    MAX_INSTRUCTION_CHARS,
    MAX_PAGE,
    MAX_PREVIEW,
    MAX_PROOF_COMMITS,
    MAX_PROOF_SUBJECT_CHARS,
    MAX_REASON_BYTES,
    MAX_REMEMBERED_CONVERSATIONS,
    MAX_REQUEST_ID,
    MAX_RESULTS,
    MAX_SCHEDULES,
    MAX_SOURCE_CHECKPOINTS,
    MAX_SOURCE_FILE_BYTES,
    MAX_STORED_TITLE,
    MAX_SUMMARY_BYTES,
    MAX_TEMPLATE_ITEMS,
    MAX_TITLE,
    MAX_TOMBSTONE_BYTES,
    MAX_TOMBSTONES,
    MIN_EVERY_SECONDS,
    MIN_REQUEST_ID,
    ON_CHANGE_CHECK_MINUTES,
    SOURCE_READ_BUDGET_SECONDS,
)

__all__ = ["DISPLAY_STATE", "router"]

DEFAULT_PREVIEW = 5
RUNTIME_KINDS = ("process",)
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


# --- helpers ----------------------------------------------------------------------------------


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


def _receipt_out(r: Receipt) -> ReceiptOut:
    return ReceiptOut(**r.to_json())


def _control_out(o: ControlOutcome) -> ControlOut:
    return ControlOut(**o.to_json())


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


@router.post(
    SCHEDULED + "/preview",
    summary="Preview a draft configuration: its sentence, next slots and warnings; writes nothing",
    description=(
        "For the editor. Without `missionID` the draft is a new schedule's configuration, "
        "checked as creation checks it (the same 422 errors) and previewed as if Play "
        "happened now. With `missionID` it is an edit of that schedule: `config` names the "
        "fields that change, read as `configure` reads `changes`; the answer adds `before` "
        "(the saved configuration's next slots) and `catchUp` (whether saving launches a "
        "catch-up passage at once, for `catchUpSlot`). Editors and owners only."
    ),
    response_model=PreviewDraftOut,
    responses=error_responses(401, 403, 404, 409, 413, 422, 503),
)
def preview_draft(
    workspace: WorkspaceID,
    body: PreviewDraftBody,
    ctx: ContextDep,
    who: PrincipalDep,
) -> JSONResponse:
    with _fields_under("config"), in_path(workspace):
        answer = ctx.services.schedules.preview_draft(
            who.actor_id, workspace, body.config, body.count, schedule=body.missionID
        )
    return JsonAnswer(answer)


# What a read says of the state that really holds (kalends.missions.views).
DISPLAY_STATE = (
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
    description=DISPLAY_STATE,
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
    summary="What this server supports: controls, policy kinds, limits, page size, runtimes, "
    "agent presets",
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def capabilities(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> CapabilitiesOut:
    ctx.services.workspaces.get(who.actor_id, workspace)
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
            maxRememberedConversations=MAX_REMEMBERED_CONVERSATIONS,
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
            sourceReadBudgetSeconds=SOURCE_READ_BUDGET_SECONDS,
            maxSourceFileBytes=MAX_SOURCE_FILE_BYTES,
            maxProofCommits=MAX_PROOF_COMMITS,
            maxProofSubjectChars=MAX_PROOF_SUBJECT_CHARS,
            maxGateRecords=MAX_GATE_RECORDS,
            maxSourceCheckpoints=MAX_SOURCE_CHECKPOINTS,
            onChangeCheckMinutes=ON_CHANGE_CHECK_MINUTES,
        ),
        pageSize=MAX_PAGE,
        runtimeKinds=list(RUNTIME_KINDS),
        passageReports=server_passages(ctx).keeps_passages,
        agentPresets=[AgentPresetOut(**p.to_json()) for p in PRESETS.values()],
    )


# --- one schedule -----------------------------------------------------------------------------


@router.get(
    SCHEDULE,
    summary="A schedule's detail: state, policy, counters, pending passage, 30 results, actions",
    description=DISPLAY_STATE,
    response_model=Document,
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def schedule_detail(
    workspace: WorkspaceID, mission: MissionID, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    with in_path(workspace):
        doc = ctx.services.schedules.detail(who.actor_id, mission, workspace=workspace)
    # The service's JSON as is: no second validation pass over a document of up to 256 KiB.
    return JsonAnswer(server_passages(ctx).with_log_tail(doc))


def _short_control(values: dict[str, Any]) -> bool:
    """Whether a control may run on the event loop: not a Play when the server supervises
    itself, which may wait on systemd (service supervision), outside any transaction."""
    body, ctx = values.get("body"), values.get("ctx")
    supervised = isinstance(ctx, ApiContext) and ctx.services.supervisor is not None
    return not (supervised and isinstance(body, ControlBody) and body.action == Action.PLAY.value)


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
@inline_write(when=_short_control)
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

    with in_path(workspace):
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
    with in_path(workspace):
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
    with in_path(workspace):
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
    with in_path(workspace):
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
    with in_path(workspace):
        doc = ctx.services.schedules.detail(who.actor_id, mission, workspace=workspace)
    return HistoryOut(
        missionId=doc["id"],
        revision=doc["revision"],
        counters=doc.get("counters"),
        results=doc.get("results") or [],
    )
