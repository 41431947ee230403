"""A task's schedule and transitions, and recurring series (``kalends task schedule``,
``done``, ``reopen``, ``repeat``, ``skip`` and ``series``).

Task writes take the task's ``expectedRevision``; pause, resume and stop take the
series' own revision, which ``GET /api/series/{series}`` shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.routes.passages import passage_tasks
from kalends.api.routes.tasks_models import (
    CompleteBody,
    ScheduleBody,
    ScheduledTaskOut,
    SeriesOut,
    SeriesPath,
    SeriesRevision,
    SeriesStart,
    SeriesStartOut,
    SkipOut,
    TaskOut,
    TaskPath,
    TaskRevision,
    answer,
)
from kalends.api.security import ContextDep, PassageCaller, PrincipalDep, PrincipalOrPassageDep
from kalends.civil import get_zone
from kalends.tasks import Task

router = APIRouter(prefix="/api", tags=["schedules"], route_class=DispatchedRoute)


def _check_zones(data: dict[str, Any]) -> None:
    """Zones checked first, so that an unknown one is named where the body has it."""
    due = data.get("due")
    if isinstance(due, Mapping) and isinstance(due.get("zone"), str):
        get_zone(due["zone"], "due.zone")
    for i, reminder in enumerate(data.get("reminders") or ()):
        get_zone(reminder["zone"], f"reminders[{i}].zone")


@router.put(
    "/tasks/{task}/schedule",
    summary="Set a task's whole schedule: planned day, due value, priority and reminders",
    description=(
        "Replaces the schedule in one transaction (what is left out is cleared), bumps the "
        "task's revision and schedule revision and replaces its pending reminders. A wall "
        "time the zone skips or repeats (DST) is refused, never shifted. A reminder whose "
        "time has passed is kept, and `warnings` says so."
    ),
    response_model=ScheduledTaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def set_schedule(
    task: TaskPath, body: ScheduleBody, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    data = body.model_dump(exclude={"expectedRevision"})

    def checked(_current: Task | None) -> dict[str, Any]:
        # In the change's transaction, before the schedule is read and its task found.
        _check_zones(data)
        return data

    scheduled = ctx.services.changes.schedule(
        who.actor_id, task, body.expectedRevision, checked, from_current=False
    )
    return answer(scheduled.to_json())


@router.post(
    "/tasks/{task}/complete",
    summary="Complete a task; with open checklist items it needs completeSubtree",
    description=(
        "The open occurrence of a recurring series always needs `completeSubtree`; its "
        "completion creates the next occurrence in the same transaction. A running "
        "passage may complete the items of its own checklist with its token "
        "(`Authorization: Passage <token>`); any other task is 403 `passage-scope`, a "
        "forged or foreign token 401 `invalid-passage-token`, a settled passage's 409 "
        "`passage-settled`, and nothing is written."
    ),
    response_model=TaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def complete_task(
    task: TaskPath, body: CompleteBody, ctx: ContextDep, who: PrincipalOrPassageDep
) -> JSONResponse:
    if isinstance(who, PassageCaller):
        done = passage_tasks(ctx).complete(
            who.token, task, body.expectedRevision, complete_subtree=body.completeSubtree
        )
    else:
        done = ctx.services.tasks.complete(
            who.actor_id, task, body.expectedRevision, complete_subtree=body.completeSubtree
        )
    return answer(done.to_json())


@router.post(
    "/tasks/{task}/reopen",
    summary="Reopen a completed task (and its completed ancestors)",
    response_model=TaskOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def reopen_task(
    task: TaskPath, body: TaskRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    return answer(ctx.services.tasks.reopen(who.actor_id, task, body.expectedRevision).to_json())


@router.post(
    "/tasks/{task}/skip",
    summary="Skip a series' outstanding occurrence whole and create the next one",
    response_model=SkipOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def skip_task(
    task: TaskPath, body: TaskRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    return answer(ctx.services.changes.skip(who.actor_id, task, body.expectedRevision).to_json())


@router.post(
    "/tasks/{task}/series",
    summary="Make an open root task and its checklist the first occurrence of a series",
    status_code=201,
    response_model=SeriesStartOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def start_series(
    task: TaskPath, body: SeriesStart, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    repeated = ctx.services.changes.repeat(
        who.actor_id,
        task,
        body.expectedRevision,
        body.rule.model_dump(),
        time_of_day=body.time,
        zone=body.zone,
        end_date=body.until,
        count=body.count,
    )
    return answer(repeated.to_json(), 201)


@router.get(
    "/series/{series}",
    summary="A series: rule, status, its revision and its outstanding occurrence",
    response_model=SeriesOut,
    responses=error_responses(401, 403, 404, 422),
)
def get_series(series: SeriesPath, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer(ctx.services.series.get(who.actor_id, series).to_json())


@router.post(
    "/series/{series}/pause",
    summary="Pause a series: completing its outstanding occurrence then creates no next one",
    response_model=SeriesOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def pause_series(
    series: SeriesPath, body: SeriesRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    view = ctx.services.series.pause(who.actor_id, series, body.expectedRevision)
    return answer(view.to_json())


@router.post(
    "/series/{series}/resume",
    summary="Resume a paused series; with no occurrence outstanding, the next one is created",
    response_model=SeriesOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def resume_series(
    series: SeriesPath, body: SeriesRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    view = ctx.services.series.resume(who.actor_id, series, body.expectedRevision)
    return answer(view.to_json())


@router.post(
    "/series/{series}/stop",
    summary="Stop a series for good; its outstanding task stays, an ordinary task",
    response_model=SeriesOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def stop_series(
    series: SeriesPath, body: SeriesRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    view = ctx.services.series.stop(who.actor_id, series, body.expectedRevision)
    return answer(view.to_json())
