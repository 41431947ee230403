"""Helpers of the missions service tests: create schedules, reach states, and write a
stored document directly for states no control reaches (an interruption after a
restart, an uncertain passage, the task-created mark, archived results, garbage).

Direct writes leave the revision alone, as a scheduler write of its own would not;
tests read the revision back before the next control.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from kalends.missions import Body, Result
from kalends.missions.document import dump_body, load_body
from kalends.storage.mission_tables import schedules
from missions.conftest import MissionWorld, daily_config


def create(mw: MissionWorld, request_id: str = "create-0001", **overrides: Any) -> UUID:
    """A new paused schedule in ``home``, created by bob (an editor)."""
    receipt = mw.schedules.create(
        mw.bob.id, mw.home.id, daily_config(**overrides), request_id=request_id
    )
    assert receipt.status == "created" and receipt.mission_id is not None
    return receipt.mission_id


def revision(mw: MissionWorld, schedule_id: UUID) -> int:
    rev = mw.schedules.detail(mw.alice.id, schedule_id)["revision"]
    assert isinstance(rev, int)
    return rev


def control(
    mw: MissionWorld,
    schedule_id: UUID,
    action: str,
    request_id: str,
    changes: dict[str, Any] | None = None,
) -> int:
    """Apply ``action`` at the current revision as bob; the new revision."""
    out = mw.schedules.control(
        mw.bob.id,
        schedule_id,
        action,
        request_id=request_id,
        expected_revision=revision(mw, schedule_id),
        changes=changes,
    )
    assert not out.repeated
    return out.revision


def edit_body(mw: MissionWorld, schedule_id: UUID, change: Callable[[Body], Body]) -> None:
    """Rewrite the stored body of a live schedule through ``change``."""

    def run(conn: Connection) -> None:
        row = conn.execute(
            select(schedules.c.config, schedules.c.body).where(schedules.c.id == schedule_id)
        ).one()
        text = dump_body(change(load_body(row.body)))
        conn.execute(
            update(schedules)
            .where(schedules.c.id == schedule_id)
            .values(body=text, size=len(row.config.encode()) + len(text.encode()))
        )

    mw.store.run(run)


def write_columns(mw: MissionWorld, schedule_id: UUID, **values: Any) -> None:
    """Overwrite columns of a stored schedule row as they are given (garbage included)."""

    def run(conn: Connection) -> None:
        conn.execute(update(schedules).where(schedules.c.id == schedule_id).values(**values))

    mw.store.run(run)


def stored_body(mw: MissionWorld, schedule_id: UUID) -> Body:
    text = mw.store.run(
        lambda conn: conn.execute(
            select(schedules.c.body).where(schedules.c.id == schedule_id)
        ).scalar_one(),
        write=False,
    )
    return load_body(text)


def result(n: int, at: datetime, *, outcome: str = "completed", summary: str = "") -> Result:
    """The ``n``-th archived passage, settled at ``at``."""
    return Result(
        passage_id=f"psg_{n:04d}",
        trigger="manual",
        slot=None,
        outcome=outcome,
        reason=None,
        summary=summary or f"passage {n}",
        admitted_at=at,
        settled_at=at,
    )
