"""The mission side of the HTTP API (seed 002): workspaces and their members, each
workspace's schedules, a schedule found by its ID alone, and a passage's log.

Each route is a thin caller of :class:`~kalends.missions.Workspaces`,
:class:`~kalends.missions.ScheduleService` or
:class:`~kalends.missions.runtime.server_passages.ServerPassages`: it parses its input,
runs one operation in one transaction with the caller as the acting actor (the services
check the caller's role), maps the errors and renders the answer.
"""

from __future__ import annotations

from fastapi import APIRouter

from kalends.api.dispatch import DispatchedRoute
from kalends.api.routes import (
    passage_log,
    schedule_by_id,
    schedule_ledger,
    schedules,
    workspaces,
)

__all__ = ["router"]

router = APIRouter(route_class=DispatchedRoute)
for _module in (workspaces, schedules, schedule_ledger, passage_log, schedule_by_id):
    router.include_router(_module.router)
