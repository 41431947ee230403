"""The tables of conversations: ordered threads of messages in a workspace.

A conversation is a ``thread`` people post to, or the ``passage`` transcript of one
mission passage (its input, what it says, its report), ``streaming`` until the passage
settles. Each message has a stable ID and a sequence number unique in its
conversation, handed out from the conversation's ``last_seq`` and never reused, even
after a delete; its ``digest`` is the SHA-256 of its role, a NUL and its text, so a
rewritten message is told from an unchanged one by its digest alone.
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
)

from kalends.storage.mission_tables import PASSAGE_ID_LENGTH
from kalends.storage.schema import UTCDateTime, metadata

__all__ = ["MAX_TITLE", "conversation_messages", "conversations"]

# kalends decision: a conversation's title is a line, at most 200 characters.
MAX_TITLE = 200
# A message's digest: SHA-256 in hex.
DIGEST_LENGTH = 64

conversations = Table(
    "conversations",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("workspace_id", Uuid(), ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("title", String(MAX_TITLE), nullable=False),
    Column("created_by", Uuid(), ForeignKey("actors.id"), nullable=True),
    Column("passage_id", String(PASSAGE_ID_LENGTH), nullable=True, unique=True),
    # SET NULL: a transcript outlives its schedule's row, and a conversation moved to
    # another workspace must not vanish with a schedule of the one it left.
    Column("schedule_id", Uuid(), ForeignKey("schedules.id", ondelete="SET NULL"), nullable=True),
    Column("state", String(16), nullable=False),
    Column("revision", Integer(), nullable=False),
    Column("last_seq", Integer(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    CheckConstraint("kind IN ('thread', 'passage')", name="kind"),
    CheckConstraint("state IN ('open', 'streaming', 'settled')", name="state"),
    Index("ix_conversations_workspace_id_updated_at", "workspace_id", "updated_at"),
    Index("ix_conversations_schedule_id", "schedule_id"),
    comment="Threads people post to, and each passage's own transcript (streaming until settled).",
)

conversation_messages = Table(
    "conversation_messages",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column(
        "conversation_id",
        Uuid(),
        ForeignKey("conversations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("seq", Integer(), nullable=False),
    Column("role", String(16), nullable=False),
    Column("author_actor_id", Uuid(), ForeignKey("actors.id"), nullable=True),
    Column("author_passage_id", String(PASSAGE_ID_LENGTH), nullable=True),
    Column("text", Text(), nullable=False),
    Column("digest", String(DIGEST_LENGTH), nullable=False),
    Column("complete", Boolean(), nullable=False),
    Column("revision", Integer(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("completed_at", UTCDateTime(), nullable=True),
    CheckConstraint("role IN ('user', 'assistant', 'system')", name="role"),
    UniqueConstraint("conversation_id", "seq"),
    comment="The messages of conversations, by sequence number (never reused after a delete).",
)
