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

from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.conversations import Conversations
from kalends.storage.unit_of_work import Store
from missions.world_support import BaseWorld, make_world


@dataclass(frozen=True, slots=True)
class World(BaseWorld):
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
    return make_world(World, build(store), fake_clock, tmp_path)
