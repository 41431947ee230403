"""The tables of missions (seed 002): workspaces, schedule documents and control records.

A schedule document is one row: the columns that statements select or order by
(workspace, phase, desired state, revision, title, creation request) beside two
JSON texts, ``config`` (what Configure edits, at most 64 KiB) and ``body`` (the
runtime part: generations, origins, counters, pending passage, results). Every
mutation is one compare-and-swap on ``revision``. A deleted document becomes a
tombstone: its row stays, with both texts emptied, in the key order of the list.

A schedule's checklist template becomes real tasks per passage: each workspace has one
task list for them (``workspace_lists``), and each passage's checklist root is recorded
under the passage's ID (``passage_checklists``), which makes its creation idempotent.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)

from kalends.storage.schema import UTCDateTime, metadata

__all__ = [
    "SCHEDULES_FILLFACTOR",
    "passage_checklists",
    "schedule_controls",
    "schedule_wakes",
    "scheduler_leases",
    "schedules",
    "workspace_lists",
    "workspace_members",
    "workspaces",
]

REQUEST_ID_LENGTH = 64
# A passage ID as the scheduler derives it (``psg_`` and 26 hex digits), with room.
PASSAGE_ID_LENGTH = 64
# The share of each page of ``schedules`` PostgreSQL fills on insert (percent): the rest
# keeps a document's next versions on its page (migration 0020; issue 25).
SCHEDULES_FILLFACTOR = 70

workspaces = Table(
    "workspaces",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("name", String(120), nullable=False),
    Column("path", Text(), nullable=False, unique=True),
    Column("created_at", UTCDateTime(), nullable=False),
    comment="A registered directory (often a git checkout) where passages run.",
)

workspace_members = Table(
    "workspace_members",
    metadata,
    Column(
        "workspace_id", Uuid(), ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True),
    Column("role", String(16), nullable=False),
    CheckConstraint("role IN ('owner', 'editor', 'viewer')", name="role"),
    Index("ix_workspace_members_actor_id", "actor_id"),
    comment="Who may read (viewer), control (editor) or manage (owner) a workspace's schedules.",
)

schedules = Table(
    "schedules",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("workspace_id", Uuid(), ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
    Column("phase", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("revision", Integer(), nullable=False),
    Column("evicted_control_revision", Integer(), nullable=False),
    Column("title", String(120), nullable=False),
    Column("creation_request_id", String(REQUEST_ID_LENGTH), nullable=False),
    Column("creation_digest", String(64), nullable=False),
    Column("config", Text(), nullable=True),
    Column("body", Text(), nullable=True),
    Column("size", Integer(), nullable=False),
    Column("next_due_at", UTCDateTime(), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    CheckConstraint("phase IN ('live', 'deleting', 'tombstone')", name="phase"),
    CheckConstraint("state IN ('paused', 'running', 'stopped')", name="state"),
    UniqueConstraint("workspace_id", "creation_request_id"),
    Index("ix_schedules_workspace_id_id", "workspace_id", "id"),
    comment="Schedule documents (one row each, revision compare-and-swap) and their tombstones.",
    # Room for a document's next versions on its page (migration 0020).
    postgresql_with={"fillfactor": SCHEDULES_FILLFACTOR},
)

schedule_controls = Table(
    "schedule_controls",
    metadata,
    Column("schedule_id", Uuid(), ForeignKey("schedules.id", ondelete="CASCADE"), primary_key=True),
    Column("request_id", String(REQUEST_ID_LENGTH), primary_key=True),
    Column("action", String(16), nullable=False),
    Column("expected_revision", Integer(), nullable=False),
    Column("recorded_revision", Integer(), nullable=False),
    Column("complete", Boolean(), nullable=False),
    Column("digest", String(64), nullable=False),
    Column("outcome", Text(), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
    Index("ix_schedule_controls_schedule_id_recorded_revision", "schedule_id", "recorded_revision"),
    comment="The applied controls of a schedule (at most 64), read back by request ID.",
)

schedule_wakes = Table(
    "schedule_wakes",
    metadata,
    Column("schedule_id", Uuid(), ForeignKey("schedules.id", ondelete="CASCADE"), primary_key=True),
    Column("due_at", UTCDateTime(), nullable=False),
    Column("owner", String(200), nullable=True),
    # The lease it is held under: a row of scheduler_leases, whose expiry is the wake's.
    Column("lease_token", String(64), nullable=True),
    Column("orphaned", Boolean(), nullable=False),
    Column("armed", Integer(), nullable=False),
    Column("failures", Integer(), nullable=False),
    Column("polls", Integer(), nullable=False),
    Column("last_error_code", String(64), nullable=True),
    Column("last_error_message", Text(), nullable=True),
    Column("last_error_at", UTCDateTime(), nullable=True),
    # The slot the last look computed as next, and the zone data it was computed with
    # (issue 24 §3): a scheduler starting on other zone data recomputes it.
    Column("next_slot_at", UTCDateTime(), nullable=True),
    Column("zone_data", String(32), nullable=True),
    # The free wakes, earliest due first: what a claim takes (a held wake is not in it).
    Index(
        "ix_schedule_wakes_free_due_at",
        "due_at",
        postgresql_where=text("owner IS NULL"),
        sqlite_where=text("owner IS NULL"),
    ),
    # A scheduler's own due wakes, earliest first (its every round; issue 25).
    Index("ix_schedule_wakes_lease_token_due_at", "lease_token", "due_at"),
    comment=(
        "One durable wake per schedule that needs a scheduler: the Job of seed 002, held "
        "by one live scheduler under a lease; lastError lives here, outside the document."
    ),
)

scheduler_leases = Table(
    "scheduler_leases",
    metadata,
    Column("token", String(64), primary_key=True),
    Column("owner", String(200), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    comment=(
        "One lease per live scheduler, renewed as one row: the wakes naming its token are "
        "held until it expires, then free for another scheduler to take over."
    ),
)

workspace_lists = Table(
    "workspace_lists",
    metadata,
    Column(
        "workspace_id", Uuid(), ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("list_id", Uuid(), ForeignKey("lists.id"), nullable=False, unique=True),
    Column("created_at", UTCDateTime(), nullable=False),
    comment="The task list a workspace's passage checklists go to: one per workspace.",
)

passage_checklists = Table(
    "passage_checklists",
    metadata,
    Column("passage_id", String(PASSAGE_ID_LENGTH), primary_key=True),
    Column(
        "schedule_id",
        Uuid(),
        ForeignKey("schedules.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("task_id", Uuid(), ForeignKey("tasks.id"), nullable=False, unique=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Index("ix_passage_checklists_schedule_id", "schedule_id"),
    comment=(
        "The checklist each passage was given: the root task of the template's items, which "
        "the passage's own token may tick and comment."
    ),
)
