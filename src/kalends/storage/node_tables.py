"""The tables of worker nodes and of the beats of their passages (issue 23 §3).

A node is one process running a scheduler with a process runtime (``kalends worker``,
``kalends serve``); ``worker_nodes`` keeps its identity, its heartbeat and the key that
signs its shims' beats. ``passage_beats`` keeps, per passage session, which node admitted
it (or was asked whether it did) and the last observation reported about it, by the node
itself or by the passage's shim over HTTP, so that a scheduler on any machine can observe
a passage through the database. Nodes are never deleted: a person declares a vanished
node gone (``forgotten_at``), and its rows stay for the record.
"""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, ForeignKey, Index, String, Table, Text, Uuid

from kalends.storage.schema import UTCDateTime, metadata

__all__ = [
    "BEAT_KEY_LENGTH",
    "BEAT_SOURCES",
    "BEAT_STATES",
    "NODE_ID_LENGTH",
    "NODE_NAME_LENGTH",
    "SESSION_ID_LENGTH",
    "passage_beats",
    "worker_nodes",
]

# 16 random bytes as hex.
NODE_ID_LENGTH = 32
# A host name (at most 253 characters in DNS; kalends keeps 200, cut by the caller).
NODE_NAME_LENGTH = 200
# 32 random bytes as hex.
BEAT_KEY_LENGTH = 64
# Session, passage and message IDs as the scheduler derives them, with room.
SESSION_ID_LENGTH = 200
BEAT_STATES = ("asked", "admitted", "absent")
BEAT_SOURCES = ("node", "shim")

worker_nodes = Table(
    "worker_nodes",
    metadata,
    Column("node_id", String(NODE_ID_LENGTH), primary_key=True),
    Column("name", String(NODE_NAME_LENGTH), nullable=False),
    Column("runtime_dir", Text(), nullable=False),
    Column("beat_key", String(BEAT_KEY_LENGTH), nullable=False),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("beat_at", UTCDateTime(), nullable=False),
    Column("stopped_at", UTCDateTime(), nullable=True),
    Column("forgotten_at", UTCDateTime(), nullable=True),
    comment="Processes that run passages: identity, heartbeat and the key of their shims' beats.",
)

passage_beats = Table(
    "passage_beats",
    metadata,
    Column("session_id", String(SESSION_ID_LENGTH), primary_key=True),
    Column("passage_id", String(SESSION_ID_LENGTH), nullable=False),
    Column("message_id", String(SESSION_ID_LENGTH), nullable=False),
    Column("schedule_id", Uuid(), nullable=False),
    Column("node_id", String(NODE_ID_LENGTH), ForeignKey("worker_nodes.node_id"), nullable=False),
    Column("state", String(16), nullable=False),
    Column("observation", Text(), nullable=True),
    Column("source", String(8), nullable=True),
    Column("beat_at", UTCDateTime(), nullable=False),
    Column("interrupt_at", UTCDateTime(), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    CheckConstraint("state IN ('asked', 'admitted', 'absent')", name="state"),
    Index("ix_passage_beats_schedule_id", "schedule_id"),
    Index("ix_passage_beats_node_id", "node_id"),
    comment="Which node admitted each passage session, and the last observation reported of it.",
)
