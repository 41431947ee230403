"""The mission routes' JSON at the edge: path-free inputs, request bodies and the shapes
of the answers (seed 002).

Most answers are the services' own ``to_json()``; the models below check the bodies
and describe the answers in /openapi.json. A free-form JSON object (a configuration,
its changes) is refused when it carries a lone surrogate, which nothing can store.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kalends.api.routes.mission_paths import REQUEST_ID_PATTERN
from kalends.missions.limits import MAX_PREVIEW, MAX_REQUEST_ID, MAX_RESULTS, MIN_REQUEST_ID
from kalends.missions.workspaces import MAX_NAME

# A revision a JSON client can hold exactly (2^53 - 1).
MAX_REVISION = 2**53 - 1
MAX_PATH_CHARS = 4096
ControlAction = Literal["play", "pause", "stop", "resume", "check", "configure", "delete"]


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


class PreviewDraftBody(Strict):
    config: dict[str, Any] = Field(
        description="A new schedule's configuration; with `missionID`, the fields an edit "
        "of that schedule changes (the others kept, as `configure` reads `changes`)."
    )
    count: int = Field(default=5, ge=1, le=MAX_PREVIEW, strict=True, description="How many slots.")
    missionID: UUID | None = Field(
        default=None, description="The schedule the draft edits; none for a new one."
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


class SupervisionOut(BaseModel):
    state: Literal["enabled", "already", "off", "unavailable", "failed"] = Field(
        description="`enabled` now, `already` before, `off` by the service-wide preference, "
        "`unavailable` without a systemd user manager, `failed` with the error."
    )
    message: str = Field(description="One sentence: what was done, or what to run instead.")
    unit: str | None = Field(description="The unit file's path, when it concerns one.")


class ControlOut(BaseModel):
    requestId: str
    action: str
    status: str = Field(description="`applied`.")
    expectedRevision: int
    revision: int = Field(description="The revision the control recorded.")
    complete: bool = Field(description="False while it waits on the runtime (Pause/Stop).")
    repeated: bool = Field(description="The request ID had been seen: nothing acted again.")
    schedule: Document
    supervision: SupervisionOut | None = Field(
        default=None,
        description="Only on an applied human Play: what it did of service supervision "
        "(the unit installed and enabled, or why not). Never a refusal of the Play.",
    )


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
    maxRememberedConversations: int
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
    sourceReadBudgetSeconds: int
    maxSourceFileBytes: int
    maxProofCommits: int
    maxProofSubjectChars: int
    maxGateRecords: int
    maxSourceCheckpoints: int
    onChangeCheckMinutes: int


class AgentPresetOut(BaseModel):
    name: str = Field(description="What a profile's `agent` names.")
    command: list[str] = Field(
        description="Its arguments, run without a shell; each placeholder ({prompt}, "
        "{objective}, …) is replaced inside its own argument."
    )
    executable: str = Field(description="The program it runs: the command's first argument.")
    finalMessage: str = Field(
        description="How kalends reads the agent's final message from its output: "
        "json-result, last-lines or none."
    )
    reports: str = Field(description="How the agent ends and what kalends makes of it.")


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
    agentPresets: list[AgentPresetOut] = Field(
        description="The agent presets a profile may name, as `kalends profile presets` lists them."
    )


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


class PreviewDraftOut(BaseModel):
    sentence: str = Field(description="The policy in words.")
    slots: list[SlotOut] = Field(description="The draft's next slots.")
    warnings: list[str] = Field(description="What saving or the first Play would meet.")
    before: list[SlotOut] | None = Field(
        default=None, description="An edit: the saved configuration's next slots."
    )
    catchUp: bool | None = Field(
        default=None,
        description="An edit: whether saving launches a catch-up passage at once (a running "
        "schedule whose new policy has a slot after the last one processed and not after now).",
    )
    catchUpSlot: SlotOut | None = Field(default=None, description="That catch-up's slot.")
