"""The tables of watched conversations: each schedule's cursors, and what each passage of
a watching schedule was handed.

A schedule's ``watch`` names conversations in its configuration; its cursors (how far it
has consumed each) live here, one row per conversation, and stay when a watch is removed
so a re-added source goes on from where it was (seed 002: "Keep watch cursor continuity
when a watch is removed"). The batch a passage was given is written with its
reservation, in the same transaction, so its input and the cursors a ``completed``
settlement advances to are exactly what it was handed, whatever was written since; the
row goes with the passage's archive.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table, Text, Uuid

from kalends.storage.mission_tables import PASSAGE_ID_LENGTH
from kalends.storage.schema import UTCDateTime, metadata

__all__ = ["passage_watch_reads", "watch_cursors"]

watch_cursors = Table(
    "watch_cursors",
    metadata,
    Column(
        "schedule_id",
        Uuid(),
        ForeignKey("schedules.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    # No foreign key: a deleted conversation's cursor is remembered, and fails closed.
    Column("conversation_id", Uuid(), primary_key=True),
    Column("cursor", Text(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    comment=(
        "How far each schedule has consumed each conversation it watches or watched: "
        "a cursor advanced only by a completed passage."
    ),
)

passage_watch_reads = Table(
    "passage_watch_reads",
    metadata,
    Column("passage_id", String(PASSAGE_ID_LENGTH), primary_key=True),
    Column(
        "schedule_id",
        Uuid(),
        ForeignKey("schedules.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("reads", Text(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Index("ix_passage_watch_reads_schedule_id", "schedule_id"),
    comment=(
        "The watched conversations' messages a reserved passage was handed, and the "
        "cursors its completed settlement advances to."
    ),
)
