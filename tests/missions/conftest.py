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

from kalends.auth.grants import Privilege
from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.identity import Actor, Role
from kalends.missions import ScheduleService, Workspace, Workspaces
from kalends.storage.unit_of_work import Store


@dataclass(frozen=True, slots=True)
class MissionWorld:
    services: Services
    clock: FakeClock
    alice: Actor
    bob: Actor
    carol: Actor
    dave: Actor
    home: Workspace
    away: Workspace

    @property
    def store(self) -> Store:
        return self.services.store

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
    directory = services.directory
    (root / "home").mkdir()
    (root / "away").mkdir()
    with services.store.transaction():
        alice = directory.add_actor("alice", "Alice", "alice@example.com")
        bob = directory.add_actor("bob", "Bob")
        carol = directory.add_actor("carol", "Carol")
        dave = directory.add_actor("dave", "Dave")
        home = services.workspaces.add(alice.id, root / "home", "home")
        services.workspaces.set_member(alice.id, home.id, bob.id, Role.EDITOR)
        services.workspaces.set_member(alice.id, home.id, carol.id, Role.VIEWER)
        away = services.workspaces.add(dave.id, root / "away", "away")
        for runner in (alice, bob, dave):
            services.grants.grant(runner.id, Privilege.RUN)
    return MissionWorld(
        services=services,
        clock=clock,
        alice=alice,
        bob=bob,
        carol=carol,
        dave=dave,
        home=home,
        away=away,
    )


@pytest.fixture
def mw(store: Store, fake_clock: FakeClock, tmp_path: Path) -> MissionWorld:
    return make_mission_world(build(store), fake_clock, tmp_path)
