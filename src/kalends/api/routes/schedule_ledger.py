"""A schedule's slot ledger over HTTP (issue 24 §1 "Reads"): its rows over a window page
by page, and why one wall time did or did not run.

``GET …/schedule/ledger`` and ``GET …/schedule/why`` are thin callers of
:meth:`~kalends.missions.ScheduleService.ledger` and
:meth:`~kalends.missions.ScheduleService.why`: read-only, for any member of the
schedule's workspace (viewers included), under the schedule's own workspace only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.routes.mission_paths import SCHEDULE, MissionID, WorkspaceID, in_path
from kalends.api.security import ContextDep, PrincipalDep
from kalends.missions.ledger import RETAIN_AGE, RETAIN_ROWS
from kalends.missions.ledger_reads import LEDGER_PAGE, MAX_LEDGER_PAGE, VERDICTS

__all__ = ["LedgerOut", "WhyOut", "router"]

router = APIRouter(tags=["missions"], route_class=DispatchedRoute)


class LedgerRowOut(BaseModel):
    slot: str = Field(description="The slot's instant (UTC); a summary row's first slot.")
    local: str = Field(
        description="The nominal wall time, YYYY-MM-DDTHH:MM:SS (a missing day keeps its "
        "impossible date, such as 2027-02-31T09:00:00)."
    )
    zone: str
    outcome: str = Field(description="launched, coalesced, skipped or moved.")
    reason: str | None = Field(
        description="Why it did not launch on time: paused, stopped, end-bound, quota, "
        "condition-false, pending-passage, no-scheduler, dst-gap, dst-shifted, day-missing, "
        "zone-rules-changed."
    )
    note: str | None = Field(description="The DST note: shifted or earlier-of-two.")
    passageId: str | None = Field(
        description="Launched: its passage; coalesced: the catch-up passage it was folded into."
    )
    detail: str | None = Field(description="One sentence.")
    slots: int = Field(description="How many slots the row stands for (>1: a summary row).")
    through: str | None = Field(description="A summary row's last slot (UTC).")
    otherAt: str | None = Field(description="A moved slot's instant under the old zone data.")
    decidedAt: str | None = Field(description="When the slot was decided (UTC).")


class LedgerCountsOut(BaseModel):
    launched: int
    coalesced: int
    skipped: int
    moved: int
    reasons: dict[str, int] = Field(description="Slots by reason.")


class LedgerOut(BaseModel):
    missionId: str
    zone: str = Field(description="The policy's zone (UTC for elapsed policies).")
    from_: str | None = Field(alias="from", description="The window's start (UTC).")
    to: str | None = Field(description="The window's end (UTC), excluded.")
    items: list[LedgerRowOut] = Field(description="The page's rows, ascending by slot.")
    nextAfter: str | None = Field(description="The next page's cursor; null on the last page.")
    counts: LedgerCountsOut = Field(
        description="The whole window's slots by outcome and reason (a summary row counts "
        "its slots), not only this page's."
    )


class NearSlotOut(BaseModel):
    slot: str
    local: str


class NearestOut(BaseModel):
    before: NearSlotOut | None
    after: NearSlotOut | None


class WhyOut(BaseModel):
    at: str = Field(description="The wall time asked, normalised to seconds.")
    zone: str
    instant: str | None = Field(description="Its instant (UTC); null when it does not exist.")
    verdict: str = Field(description=", ".join(VERDICTS) + ".")
    sentence: str = Field(description="One plain-English sentence answering why (not).")
    row: LedgerRowOut | None = Field(description="The ledger row that records the slot.")
    passage: dict[str, Any] | None = Field(description="The settled result of its passage.")
    nearest: NearestOut = Field(description="The policy's slots just before and after.")


_LEDGER_DESCRIPTION = (
    "One row per nominal slot as it was decided: launched, coalesced into a later catch-up "
    "passage, skipped with its reason, or moved by new zone rules. Rows overlapping the "
    "window `[from, to)` come ascending by slot (a summary row counts when any part of its "
    f"span does), at most `limit` (1-{MAX_LEDGER_PAGE}, default {LEDGER_PAGE}) per page; "
    "pass `nextAfter` back as `after` for the next. `from` and `to` are instants with an "
    "offset (`2027-03-14T00:00:00-05:00`, or `Z`); a window longer than 10 years or "
    "ending before it starts is 422. Per schedule the ledger keeps the last "
    f"{RETAIN_ROWS:,} rows or {RETAIN_AGE.days} days, whichever is more; a deleted "
    "schedule's ledger is empty."
)

_WHY_DESCRIPTION = (
    "`at` is a wall time `YYYY-MM-DDTHH:MM` (or with `:SS`) in `zone`, by default the "
    "policy's zone (a calendar union's first calendar's). The verdict is the outcome of the "
    "row that records the slot, else: `not-a-slot` (the nearest slots named), `not-yet`, "
    "`before-first-play`, `forgotten` (no row kept), `undecided` (due, not decided yet: "
    "why), or `nonexistent` (a wall time inside a DST gap). A repeated wall time answers "
    "for the pass a row records, else the pass that is a slot, and says which. A date "
    "alone, an unknown zone or a malformed time is 422; a deleted schedule is 404."
)


@router.get(
    SCHEDULE + "/ledger",
    summary="The slot ledger: every slot as decided (launched, coalesced, skipped, moved)",
    description=_LEDGER_DESCRIPTION,
    response_model=LedgerOut,
    response_model_by_alias=True,
    responses=error_responses(401, 403, 404, 422, 503),
)
def ledger(
    workspace: WorkspaceID,
    mission: MissionID,
    ctx: ContextDep,
    who: PrincipalDep,
    start: Annotated[
        datetime | None,
        Query(alias="from", description="The window's start: an instant with an offset."),
    ] = None,
    end: Annotated[
        datetime | None,
        Query(alias="to", description="The window's end (excluded): an instant with an offset."),
    ] = None,
    after: Annotated[
        str | None,
        Query(max_length=400, description="The cursor: a page's `nextAfter`."),
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_LEDGER_PAGE, description="At most this many rows.")
    ] = LEDGER_PAGE,
) -> dict[str, Any]:
    with in_path(workspace):
        return ctx.services.schedules.ledger(
            who.actor_id,
            mission,
            workspace=workspace,
            start=start,
            end=end,
            after=after,
            limit=limit,
        )


@router.get(
    SCHEDULE + "/why",
    summary="Why the slot at a wall time did or did not run, in one sentence",
    description=_WHY_DESCRIPTION,
    response_model=WhyOut,
    responses=error_responses(401, 403, 404, 422, 503),
)
def why(
    workspace: WorkspaceID,
    mission: MissionID,
    ctx: ContextDep,
    who: PrincipalDep,
    at: Annotated[
        str,
        Query(
            max_length=40,
            description="A wall time YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS, no offset.",
        ),
    ],
    zone: Annotated[
        str | None,
        Query(max_length=64, description="An IANA zone; by default the policy's."),
    ] = None,
) -> dict[str, Any]:
    with in_path(workspace):
        return ctx.services.schedules.why(who.actor_id, mission, at, zone=zone, workspace=workspace)
