"""Where the mission routes are: their paths, their path parameters, and the 404 of a
schedule named under a workspace it is not one of.

A schedule is addressed through its own workspace (``{id}`` a workspace ID,
``{missionID}`` a schedule ID); under another workspace's path it is not found, whatever
the caller may see elsewhere. ``GET /api/missions/{id}`` finds one by its ID alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated
from uuid import UUID

from fastapi import Path

from kalends.errors import NotFound
from kalends.missions.limits import MAX_REQUEST_ID, MIN_REQUEST_ID
from kalends.missions.workspaces import OutsideWorkspace

__all__ = [
    "MISSION",
    "PASSAGE_ID_PATTERN",
    "PASSAGE_LOG",
    "REQUEST_ID_PATTERN",
    "RUN_NOW_ROUTE",
    "SCHEDULE",
    "SCHEDULED",
    "WORKSPACE",
    "WORKSPACES",
    "MissionID",
    "RequestIDPath",
    "ScheduleID",
    "WorkspaceID",
    "in_path",
]

WORKSPACES = "/api/workspaces"
WORKSPACE = WORKSPACES + "/{id}"
SCHEDULED = WORKSPACE + "/missions/scheduled"
SCHEDULE = WORKSPACE + "/missions/{missionID}/schedule"
PASSAGE_LOG = WORKSPACE + "/missions/{missionID}/passages/{passageID}/log"
RUN_NOW_ROUTE = SCHEDULE + "/run-now"
# A schedule by its ID alone, in whichever workspace holds it.
MISSION = "/api/missions/{id}"

REQUEST_ID_PATTERN = rf"^[A-Za-z0-9._:-]{{{MIN_REQUEST_ID},{MAX_REQUEST_ID}}}$"
# A passage ID (psg_…) or its session ID (ses_…): the runtime's session-ID alphabet.
PASSAGE_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$"

WorkspaceID = Annotated[UUID, Path(alias="id", description="The workspace ID.")]
MissionID = Annotated[UUID, Path(alias="missionID", description="The schedule (mission) ID.")]
ScheduleID = Annotated[UUID, Path(alias="id", description="The schedule (mission) ID.")]
RequestIDPath = Annotated[
    str,
    Path(
        alias="requestID",
        pattern=REQUEST_ID_PATTERN,
        description=f"A request ID: {MIN_REQUEST_ID}-{MAX_REQUEST_ID} of `A-Z a-z 0-9 . _ : -`.",
    ),
]


@contextmanager
def in_path(workspace: UUID) -> Iterator[None]:
    """Names a schedule of another workspace (or of none) by its path parameter."""
    try:
        yield
    except OutsideWorkspace as exc:
        raise NotFound(
            f"missionID: no schedule {exc.schedule} in workspace {workspace}", field="missionID"
        ) from None
