"""Missions (seed 002): workspaces and durable schedule documents with idempotent controls."""

from kalends.missions.config import Config, config_from_json, config_to_json
from kalends.missions.controls import ACTIONS, Action
from kalends.missions.document import Body, PassageStatus, Pending, Phase, Result, State
from kalends.missions.service import (
    ControlOutcome,
    ControlStatus,
    Page,
    Receipt,
    ScheduleService,
    check_request_id,
)
from kalends.missions.workspaces import Member, Workspace, Workspaces

__all__ = [
    "ACTIONS",
    "Action",
    "Body",
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
    "config_from_json",
    "config_to_json",
]
