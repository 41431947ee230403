"""A passage's log over HTTP: the records of one of a schedule's passages and the end of
its output, read from this server's runtime directory.

The route parses the path and asks
:class:`~kalends.missions.runtime.server_passages.ServerPassages`, which checks that the
caller may read the schedule in the path's workspace before it reads any passage; a
passage of another schedule is not found.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.routes.mission_models import PassageLogOut
from kalends.api.routes.mission_paths import (
    PASSAGE_ID_PATTERN,
    PASSAGE_LOG,
    MissionID,
    WorkspaceID,
    in_path,
)
from kalends.api.routes.passages import server_passages
from kalends.api.security import ContextDep, PrincipalDep
from kalends.errors import NotFound

__all__ = ["router"]

router = APIRouter(tags=["missions"], route_class=DispatchedRoute)


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
    with in_path(workspace):
        found = server_passages(ctx).of_schedule(who.actor_id, workspace, mission, passage)
    if found is None:
        raise NotFound(
            f"passageID: no passage {passage} of schedule {mission} on this server",
            field="passageID",
        )
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
