"""Fixtures of the questions suite: a fresh migrated database per test on SQLite and
(when reachable) PostgreSQL, with actors, a workspace and a question asked in it.

``home``: alice owns it, bob edits, carol views; dave is a member of no workspace.
``away``: alice owns it alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select

from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.identity import Actor
from kalends.questions import Principal, PrincipalKind, Question, Questions
from kalends.storage.question_tables import answer_tokens, question_marks, questions
from kalends.storage.unit_of_work import Store
from missions.world_support import BaseWorld, make_world

PASSAGE = "passage-0001"

# A question with one field of each kind.
FIELDS: list[dict[str, Any]] = [
    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]},
    {"id": "why", "kind": "text", "label": "Why?", "maxLength": 20},
    {"id": "ok", "kind": "confirm", "label": "Checked the logs"},
]
ANSWER: dict[str, Any] = {"go": "yes", "why": "tests pass", "ok": True}


@dataclass(frozen=True, slots=True)
class World(BaseWorld):
    @property
    def questions(self) -> Questions:
        return self.services.questions

    def ask(
        self,
        *,
        passage_id: str = PASSAGE,
        fields: Any = None,
        prompt: str = "Release today?",
        tag: str | None = None,
        workspace_id: UUID | None = None,
    ) -> Question:
        return self.questions.ask(
            workspace_id=self.home.id if workspace_id is None else workspace_id,
            schedule_id=None,
            passage_id=passage_id,
            prompt=prompt,
            fields=FIELDS if fields is None else fields,
            tag=tag,
        )

    def session(self, actor: Actor, session_id: str = "session-1") -> Principal:
        return Principal(kind=PrincipalKind.SESSION, id=session_id, actor_id=actor.id)

    def device(self, actor: Actor, device_id: str = "device-1") -> Principal:
        return Principal(kind=PrincipalKind.DEVICE, id=device_id, actor_id=actor.id)

    def rows(self, table: Any) -> list[tuple[Any, ...]]:
        with self.store.transaction(write=False) as conn:
            return [tuple(row) for row in conn.execute(select(table)).all()]

    def tables(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of the questions' tables, sorted: compared before and after a refusal."""
        return {
            table.name: sorted(self.rows(table), key=repr)
            for table in (questions, question_marks, answer_tokens)
        }


@pytest.fixture
def world(store: Store, fake_clock: FakeClock, tmp_path: Path) -> World:
    return make_world(World, build(store), fake_clock, tmp_path)
