"""Missions (seed 002): workspaces and durable schedule documents with idempotent
controls, the scheduler that runs them, and the runtimes that start passages.

The names below load on first use, so a passage's ``kalends report`` (which needs only
:mod:`kalends.missions.runtime`) does not import the storage layer.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kalends.missions.coming import ComingPassage, coming_passages
    from kalends.missions.config import Config, config_from_json, config_to_json
    from kalends.missions.controls import ACTIONS, Action
    from kalends.missions.document import Body, PassageStatus, Pending, Phase, Result, State
    from kalends.missions.outcomes import ControlOutcome, ControlStatus, Page, Receipt
    from kalends.missions.requests import check_request_id
    from kalends.missions.service import ScheduleService
    from kalends.missions.workspaces import Member, Workspace, Workspaces

_WHERE = {
    "ComingPassage": "coming",
    "coming_passages": "coming",
    "Config": "config",
    "config_from_json": "config",
    "config_to_json": "config",
    "ACTIONS": "controls",
    "Action": "controls",
    "Body": "document",
    "PassageStatus": "document",
    "Pending": "document",
    "Phase": "document",
    "Result": "document",
    "State": "document",
    "ControlOutcome": "outcomes",
    "ControlStatus": "outcomes",
    "Page": "outcomes",
    "Receipt": "outcomes",
    "ScheduleService": "service",
    "check_request_id": "requests",
    "Member": "workspaces",
    "Workspace": "workspaces",
    "Workspaces": "workspaces",
}

__all__ = [
    "ACTIONS",
    "Action",
    "Body",
    "ComingPassage",
    "Config",
    "ControlOutcome",
    "ControlStatus",
    "Member",
    "Page",
    "PassageStatus",
    "Pending",
    "Phase",
    "Receipt",
    "Result",
    "ScheduleService",
    "State",
    "Workspace",
    "Workspaces",
    "check_request_id",
    "coming_passages",
    "config_from_json",
    "config_to_json",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kalends.missions' has no attribute {name!r}")
    value = getattr(import_module(f"kalends.missions.{module}"), name)
    globals()[name] = value
    return value
