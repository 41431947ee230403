"""The slot ledger (issue 24 §1): one row per nominal slot of a running schedule, written
when the scheduler (or a control) decides it, so that "did it run at 02:30 on the DST
night, and why not last Tuesday?" has a recorded answer.

A row is keyed by its schedule and ``slot_key``: the slot's instant for a slot that
exists, its wall time and zone for one that does not (a DST gap, a missing day), or the
first slot a summary row stands for. Rows are written with the decision's own write, in
its transaction, and never twice (the key). The scheduler trims each schedule's rows to
the last 1,000 or 90 days, whichever keeps more (:mod:`kalends.missions.ledger_writes`).
"""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, Index, Integer, String, Table, Text, Uuid

from kalends.storage.schema import UTCDateTime, metadata

__all__ = [
    "LEDGER_OUTCOMES",
    "LEDGER_REASONS",
    "SLOT_KEY_LENGTH",
    "slot_ledger",
]

# "missing:" + a wall time + "@" + a zone name (at most 64), with room.
SLOT_KEY_LENGTH = 120
LEDGER_OUTCOMES = ("launched", "coalesced", "skipped", "moved")
LEDGER_REASONS = (
    "paused",
    "stopped",
    "end-bound",
    "quota",
    "condition-false",
    "pending-passage",
    "no-scheduler",
    "dst-gap",
    "dst-shifted",
    "day-missing",
    "zone-rules-changed",
)


def _listed(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


slot_ledger = Table(
    "slot_ledger",
    metadata,
    Column("schedule_id", Uuid(), primary_key=True),
    Column("slot_key", String(SLOT_KEY_LENGTH), primary_key=True),
    Column("slot_at", UTCDateTime(), nullable=False),
    Column("local", String(32), nullable=False),
    Column("zone", String(64), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("reason", String(32), nullable=True),
    Column("note", String(16), nullable=True),
    Column("passage_id", String(200), nullable=True),
    Column("detail", Text(), nullable=True),
    Column("slots", Integer(), nullable=False),
    Column("through_at", UTCDateTime(), nullable=True),
    Column("other_at", UTCDateTime(), nullable=True),
    Column("decided_at", UTCDateTime(), nullable=False),
    CheckConstraint(_listed("outcome", LEDGER_OUTCOMES), name="outcome"),
    CheckConstraint("reason IS NULL OR " + _listed("reason", LEDGER_REASONS), name="reason"),
    CheckConstraint("slots >= 1", name="slots"),
    Index("ix_slot_ledger_schedule_id_slot_at", "schedule_id", "slot_at"),
    comment=(
        "Every nominal slot of a running schedule as decided: launched, coalesced into a "
        "later passage, skipped with its reason, or moved by new zone rules."
    ),
)
