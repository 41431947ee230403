"""Fixtures of the missions suite: a fresh migrated database per test on SQLite and
(when reachable) PostgreSQL, with actors and workspaces.

``home`` (a temporary directory): alice owns it, bob edits, carol views.
``away``: dave owns it alone; alice, bob and carol are not members.
alice, bob and dave hold the run privilege (they create schedules); carol does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.missions import ScheduleService, Workspaces
from kalends.storage.unit_of_work import Store

from .world_support import BaseWorld, make_world


@dataclass(frozen=True, slots=True)
class MissionWorld(BaseWorld):
    @property
    def schedules(self) -> ScheduleService:
        return self.services.schedules

    @property
    def workspaces(self) -> Workspaces:
        return self.services.workspaces


def daily_config(**overrides: Any) -> dict[str, Any]:
    """A valid configuration: daily at 09:00 in Europe/Berlin, running `echo hello`."""
    config: dict[str, Any] = {
        "title": "Morning report",
        "objective": "Summarise yesterday's commits.",
        "profile": {"command": ["echo", "hello"], "env": {"API_TOKEN": "s3cret"}, "cwd": "."},
        "policy": {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
    }
    config.update(overrides)
    return config


def make_mission_world(services: Services, clock: FakeClock, root: Path) -> MissionWorld:
    return make_world(
        MissionWorld,
        services,
        clock,
        root,
        away_owner="dave",
        runners=("alice", "bob", "dave"),
        alice_email="alice@example.com",
    )


@pytest.fixture
def mw(store: Store, fake_clock: FakeClock, tmp_path: Path) -> MissionWorld:
    return make_mission_world(build(store), fake_clock, tmp_path)
