"""The rows a scheduler reads, as frozen values built in one place (``from_row``): a
schedule with its workspace's path, and one of its own due wakes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from kalends.missions import service as docs
from kalends.missions.controls import DocState
from kalends.missions.document import Phase
from kalends.storage.among import among
from kalends.storage.mission_tables import schedule_wakes, schedules, workspaces

__all__ = ["DueWake", "SchedulerRow", "due_wakes", "read_schedule", "read_schedules"]

_S = schedules
_W = schedule_wakes


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerRow:
    """A schedule's stored row as the scheduler reads it: what parses into its document
    (:meth:`document`), what a compare-and-swap or a compaction writes against, and where
    its passages run."""

    id: UUID
    workspace_id: UUID
    workspace_path: str
    phase: str
    state: str
    revision: int
    evicted_control_revision: int
    title: str
    creation_request_id: str
    config: str | None  # None for a tombstone
    body: str | None

    @classmethod
    def from_row(cls, row: Any) -> SchedulerRow:
        return cls(
            id=row.id,
            workspace_id=row.workspace_id,
            workspace_path=row.workspace_path,
            phase=row.phase,
            state=row.state,
            revision=int(row.revision),
            evicted_control_revision=int(row.evicted_control_revision),
            title=row.title,
            creation_request_id=row.creation_request_id,
            config=row.config,
            body=row.body,
        )

    def document(self) -> DocState | None:
        """The parsed document; ``None`` for a tombstone, which has none.
        :class:`~kalends.errors.CorruptDocument` when it does not parse."""
        if self.phase == Phase.TOMBSTONE.value:
            return None
        return docs.doc_of(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class DueWake:
    """One of a scheduler's own wakes that is due: ``armed`` fences its update against a
    control that armed it since; ``polls`` is the pending-fallback step; ``failures`` the
    failed looks in a row."""

    schedule_id: UUID
    armed: int
    polls: int
    failures: int

    @classmethod
    def from_row(cls, row: Any) -> DueWake:
        return cls(
            schedule_id=row.schedule_id,
            armed=int(row.armed),
            polls=int(row.polls),
            failures=int(row.failures),
        )


_COLUMNS = select(
    _S.c.id,
    _S.c.workspace_id,
    workspaces.c.path.label("workspace_path"),
    _S.c.phase,
    _S.c.state,
    _S.c.revision,
    _S.c.evicted_control_revision,
    _S.c.title,
    _S.c.creation_request_id,
    _S.c.config,
    _S.c.body,
).join(workspaces, workspaces.c.id == _S.c.workspace_id)
_ROW = _COLUMNS.where(_S.c.id == bindparam("sid"))
_MY_DUE = (
    select(_W.c.schedule_id, _W.c.armed, _W.c.polls, _W.c.failures)
    .where(_W.c.lease_token == bindparam("me"), _W.c.due_at <= bindparam("now"))
    .order_by(_W.c.due_at)
    .limit(bindparam("limit"))
)


def read_schedule(conn: Connection, schedule_id: UUID) -> SchedulerRow | None:
    """The schedule's row, or ``None`` when there is none."""
    row = conn.execute(_ROW, {"sid": schedule_id}).first()
    return None if row is None else SchedulerRow.from_row(row)


def read_schedules(conn: Connection, schedule_ids: list[UUID]) -> dict[UUID, SchedulerRow]:
    """The rows of those schedules that exist, by ID."""
    if not schedule_ids:
        return {}
    # (fetched at once: iterating a result fetches row by row)
    found = conn.execute(_COLUMNS.where(among(conn, _S.c.id, schedule_ids))).all()
    return {row.id: SchedulerRow.from_row(row) for row in found}


def due_wakes(conn: Connection, token: str, now: datetime, limit: int) -> list[DueWake]:
    """The due wakes held under the lease ``token``, earliest first, at most ``limit``."""
    found = conn.execute(_MY_DUE, {"me": token, "now": now, "limit": limit})
    return [DueWake.from_row(row) for row in found]
