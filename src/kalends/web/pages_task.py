"""A task's page: checklist, schedule, reminders, comments, attachments, history and
series timeline."""

from __future__ import annotations

from fastapi import APIRouter

from kalends.web.render import WebRoute

__all__ = ["router"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)
