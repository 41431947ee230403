"""Fixtures of the conversations suite: a fresh migrated database per test on SQLite and
(when reachable) PostgreSQL, with actors and workspaces.

``home``: alice owns it, bob edits, carol views; dave is a member of no workspace.
``away``: alice owns it alone (the target of moves).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kalends.auth.grants import Privilege
from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.conversations import Conversations
from kalends.identity import Actor, Role
from kalends.missions import Workspace
from kalends.storage.unit_of_work import Store


@dataclass(frozen=True, slots=True)
class World:
    services: Services
    clock: FakeClock
    root: Path
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
    def conversations(self) -> Conversations:
        return self.services.conversations

    def schedule(self) -> Any:
        """A new paused schedule in ``home`` (created by alice): its ID."""
        receipt = self.services.schedules.create(
            self.alice.id,
            self.home.id,
            {
                "title": "Morning report",
                "objective": "Summarise yesterday's commits.",
                "profile": {"command": ["echo", "hello"]},
                "policy": {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
            },
            request_id="conversation-schedule-0001",
        )
        assert receipt.mission_id is not None
        return receipt.mission_id


def digest_of(role: str, text: str) -> str:
    """The documented message digest, computed here independently."""
    return hashlib.sha256(role.encode() + b"\x00" + text.encode("utf-8")).hexdigest()


@pytest.fixture
def world(store: Store, fake_clock: FakeClock, tmp_path: Path) -> World:
    services = build(store)
    directory = services.directory
    (tmp_path / "home").mkdir()
    (tmp_path / "away").mkdir()
    with store.transaction():
        alice = directory.add_actor("alice", "Alice")
        bob = directory.add_actor("bob", "Bob")
        carol = directory.add_actor("carol", "Carol")
        dave = directory.add_actor("dave", "Dave")
        home = services.workspaces.add(alice.id, tmp_path / "home", "home")
        services.workspaces.set_member(alice.id, home.id, bob.id, Role.EDITOR)
        services.workspaces.set_member(alice.id, home.id, carol.id, Role.VIEWER)
        away = services.workspaces.add(alice.id, tmp_path / "away", "away")
        services.grants.grant(alice.id, Privilege.RUN)
    return World(
        services=services,
        clock=fake_clock,
        root=tmp_path,
        alice=alice,
        bob=bob,
        carol=carol,
        dave=dave,
        home=home,
        away=away,
    )
