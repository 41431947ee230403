"""The tables of questions: what a passage asks a person, the marks of answers given
through the kalends interface, and the one-use tokens that let the interface answer.

A question's ``fields`` and ``answer`` are canonical JSON texts; ``schema_digest`` is the
SHA-256 of the canonical JSON of its prompt and fields. A ``question_marks`` row is
written ``pending`` before an interface answer is handed to its passage and becomes
``confirmed`` only once the hand-over succeeded for that very attempt (seed 002,
"Wayfinder human decision mark"). As for API tokens, only the SHA-256 of an answer
token's secret is stored.
"""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    Uuid,
)

from kalends.storage.auth_tables import DIGEST_LENGTH
from kalends.storage.mission_tables import PASSAGE_ID_LENGTH
from kalends.storage.schema import UTCDateTime, metadata

__all__ = [
    "ATTEMPT_ID_LENGTH",
    "PRINCIPAL_ID_LENGTH",
    "TAG_LENGTH",
    "answer_tokens",
    "question_marks",
    "questions",
]

# kalends decision: a decision tag is at most 64 characters of [a-z0-9-].
TAG_LENGTH = 64
# An attempt ID is the text of a UUID (8-4-4-4-12).
ATTEMPT_ID_LENGTH = 36
# kalends decision: a session's or a device's ID is at most 64 characters.
PRINCIPAL_ID_LENGTH = 64

questions = Table(
    "questions",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("workspace_id", Uuid(), ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
    # SET NULL: a question and its answer outlive their schedule's row.
    Column("schedule_id", Uuid(), ForeignKey("schedules.id", ondelete="SET NULL"), nullable=True),
    Column("passage_id", String(PASSAGE_ID_LENGTH), nullable=False),
    Column("prompt", Text(), nullable=False),
    Column("fields", Text(), nullable=False),
    Column("schema_digest", String(DIGEST_LENGTH), nullable=False),
    Column("tag", String(TAG_LENGTH), nullable=True),
    Column("state", String(16), nullable=False),
    Column("answer", Text(), nullable=True),
    Column("answered_at", UTCDateTime(), nullable=True),
    Column("answered_by", Uuid(), ForeignKey("actors.id"), nullable=True),
    Column("answered_via", String(16), nullable=True),
    # The interface attempt that recorded the answer: its mark must be the confirmed one.
    Column("attempt_id", String(ATTEMPT_ID_LENGTH), nullable=True),
    Column("revision", Integer(), nullable=False),
    Column("asked_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    CheckConstraint("state IN ('open', 'answered', 'withdrawn')", name="state"),
    CheckConstraint(
        "answered_via IS NULL OR answered_via IN ('ui', 'api', 'cli', 'coordinator')",
        name="answered_via",
    ),
    Index("ix_questions_workspace_id", "workspace_id"),
    Index("ix_questions_passage_id", "passage_id"),
    Index("ix_questions_schedule_id", "schedule_id"),
    comment="Questions passages ask people, and their answers.",
)

question_marks = Table(
    "question_marks",
    metadata,
    Column(
        "question_id",
        Uuid(),
        ForeignKey("questions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("attempt_id", String(ATTEMPT_ID_LENGTH), primary_key=True),
    Column("passage_id", String(PASSAGE_ID_LENGTH), nullable=False),
    Column("answered_at", UTCDateTime(), nullable=False),
    Column("via", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("principal_kind", String(16), nullable=False),
    Column("principal_id", String(PRINCIPAL_ID_LENGTH), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("confirmed_at", UTCDateTime(), nullable=True),
    # When the answer first left the server for its passage (the passage's own read):
    # a mark never delivered when its passage ended was definitely not handed over.
    Column("delivered_at", UTCDateTime(), nullable=True),
    CheckConstraint("via = 'ui'", name="via"),
    CheckConstraint("state IN ('pending', 'confirmed')", name="state"),
    CheckConstraint("principal_kind IN ('session', 'device')", name="principal_kind"),
    comment="Two-phase marks of answers given through the kalends interface.",
)

answer_tokens = Table(
    "answer_tokens",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("token_hash", String(DIGEST_LENGTH), nullable=False, unique=True),
    Column(
        "question_id",
        Uuid(),
        ForeignKey("questions.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("schema_digest", String(DIGEST_LENGTH), nullable=False),
    Column("answer_digest", String(DIGEST_LENGTH), nullable=False),
    Column("principal_kind", String(16), nullable=False),
    Column("principal_id", String(PRINCIPAL_ID_LENGTH), nullable=False),
    Column("minted_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("consumed_at", UTCDateTime(), nullable=True),
    CheckConstraint("principal_kind IN ('session', 'device')", name="principal_kind"),
    Index("ix_answer_tokens_question_id", "question_id"),
    comment="One-use tokens binding an interface answer to its question, form, answer "
    "and principal, found by the SHA-256 of their secret.",
)
