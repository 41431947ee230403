"""The viewer's settings: reminder destinations, API tokens, theme and clock."""

from __future__ import annotations

from fastapi import APIRouter

from kalends.web.render import WebRoute

__all__ = ["router"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)
