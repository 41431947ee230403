"""What a passage's reservation writes beside its document: the task checklist made from
the schedule's template (SPEC §4 "Templates"), in the reservation's own transaction, and
the counts its settlement records.

Every caller that reserves a passage (the scheduler's set-based round, a look of its own,
Run now) calls :func:`write_checklist` in the transaction of the compare-and-swap that
wrote the pending record, only when that write applied: the checklist and the pending
record that names it are committed together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.civil import Calendars
from kalends.errors import NotFound
from kalends.missions.checklists import (
    ChecklistSpec,
    checklist_counts,
    checklist_items,
    create_checklists,
    slot_title,
)
from kalends.missions.config import Config
from kalends.missions.document import Pending

__all__ = [
    "Reserved",
    "passage_zone",
    "read_counts",
    "read_items",
    "write_checklist",
    "write_checklists",
]


def passage_zone(config: Config) -> str:
    """The zone a checklist's title shows the slot in: the policy's own (a calendar
    union's first calendar's), UTC for elapsed and immediate policies."""
    policy = config.policy
    if isinstance(policy, Calendars):
        return next((c.zone for c in policy.calendars), "UTC")
    zone = getattr(policy, "zone", None)
    return zone if isinstance(zone, str) else "UTC"


def write_checklist(
    conn: Connection,
    *,
    schedule_id: UUID,
    workspace_id: UUID,
    config: Config,
    pending: Pending,
    now: datetime,
) -> None:
    """Create the pending passage's checklist (nothing when it has none): one
    reservation's :func:`write_checklists`."""
    reserved = Reserved(
        schedule_id=schedule_id, workspace_id=workspace_id, config=config, pending=pending
    )
    write_checklists(conn, [reserved], now)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reserved:
    """A reservation just written: its schedule, workspace, configuration and passage."""

    schedule_id: UUID
    workspace_id: UUID
    config: Config
    pending: Pending


def write_checklists(
    conn: Connection, reserved: list[Reserved], now: datetime
) -> dict[str, list[dict[str, Any]]]:
    """:func:`write_checklist` for a round's reservations at once; the items of the
    checklists made, by passage (for the passages' input files)."""
    specs = [
        ChecklistSpec(
            checklist_id=UUID(r.pending.checklist_id),
            workspace_id=r.workspace_id,
            title=slot_title(
                r.config.title,
                r.pending.slot,
                passage_zone(r.config),
                reserved_at=r.pending.reserved_at,
            ),
            template=r.config.template,
            passage_id=r.pending.passage_id,
            schedule_id=r.schedule_id,
        )
        for r in reserved
        if r.pending.checklist_id is not None
    ]
    return create_checklists(conn, specs, now) if specs else {}


def read_counts(conn: Connection, pending: Pending) -> tuple[int, int] | None:
    """The ``(open, done)`` items of the passage's checklist; ``None`` when it has none."""
    if pending.checklist_id is None:
        return None
    try:
        return checklist_counts(conn, UUID(pending.checklist_id))
    except NotFound:
        return None


def read_items(conn: Connection, pendings: list[Pending]) -> dict[str, list[dict[str, Any]]]:
    """The checklist items of those passages that have a checklist, by passage ID, for
    their input files."""
    out: dict[str, list[dict[str, Any]]] = {}
    for pending in pendings:
        if pending.checklist_id is None:
            continue
        try:
            out[pending.passage_id] = checklist_items(conn, UUID(pending.checklist_id))
        except NotFound:
            continue
    return out
