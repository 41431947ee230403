"""The task side of the HTTP API: lists, tasks, schedules, series, comments,
attachments, history, reminders, actors and their reminder destinations, over the
task services.

Each route is a thin caller: it parses its input, runs one user operation in one
transaction with the caller as the acting actor (the services check the caller's
current role on the list), and answers the domain's own JSON, the same the CLI's
``--json`` prints.
"""

from __future__ import annotations

from fastapi import APIRouter

from kalends.api.dispatch import DispatchedRoute
from kalends.api.routes import (
    tasks_actors,
    tasks_files,
    tasks_items,
    tasks_lists,
    tasks_schedule,
)

__all__ = ["router"]

router = APIRouter(route_class=DispatchedRoute)
for _module in (tasks_lists, tasks_items, tasks_schedule, tasks_files, tasks_actors):
    router.include_router(_module.router)
