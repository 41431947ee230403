"""A schedule found by its ID alone: ``GET /api/missions/{id}`` (issue 18 §3).

A client that holds a schedule's ID but not its workspace's (the CLI in server mode)
reads its detail here instead of asking each workspace in turn. The answer is the one
``GET /api/workspaces/{id}/missions/{missionID}/schedule`` gives under the schedule's
own workspace. :meth:`~kalends.missions.ScheduleService.detail`, given no workspace,
checks the caller's role on whichever workspace holds the schedule: a schedule of a
workspace where the caller has none is answered as an ID nobody uses, word for word.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from kalends.api.answers import JsonAnswer
from kalends.api.dispatch import DispatchedRoute, inline_read
from kalends.api.errors import error_responses
from kalends.api.routes.mission_models import Document
from kalends.api.routes.mission_paths import MISSION, ScheduleID
from kalends.api.routes.passages import server_passages
from kalends.api.routes.schedules import DISPLAY_STATE
from kalends.api.security import ContextDep, PrincipalDep
from kalends.errors import NotFound

__all__ = ["router"]

router = APIRouter(tags=["missions"], route_class=DispatchedRoute)


@contextmanager
def _by_id(mission: UUID) -> Iterator[None]:
    """Names an unseen schedule by the path's ``id`` (the service names it ``schedule``)."""
    try:
        yield
    except NotFound as exc:
        if exc.details.get("field") != "schedule":
            raise
        raise NotFound(f"id: no schedule {mission}", field="id") from None


@router.get(
    MISSION,
    summary="A schedule's detail by its ID alone, in whichever workspace you may read it",
    description=(
        "The answer of `GET /api/workspaces/{id}/missions/{missionID}/schedule` under the "
        "schedule's own workspace. A schedule of a workspace where you have no role is 404, "
        "as for an ID nobody uses. " + DISPLAY_STATE
    ),
    response_model=Document,
    responses=error_responses(401, 404, 422, 503),
)
@inline_read()
def schedule_by_id(mission: ScheduleID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    with _by_id(mission):
        doc = ctx.services.schedules.detail(who.actor_id, mission)
    return JsonAnswer(server_passages(ctx).with_log_tail(doc))
