"""Questions: what passages ask people, the marks of interface answers, answer tokens.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "questions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("schedule_id", sa.Uuid(), nullable=True),
        sa.Column("passage_id", sa.String(length=64), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("fields", sa.Text(), nullable=False),
        sa.Column("schema_digest", sa.String(length=64), nullable=False),
        sa.Column("tag", sa.String(length=64), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("answered_at", UTCDateTime(), nullable=True),
        sa.Column("answered_by", sa.Uuid(), nullable=True),
        sa.Column("answered_via", sa.String(length=16), nullable=True),
        sa.Column("attempt_id", sa.String(length=36), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("asked_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "state IN ('open', 'answered', 'withdrawn')", name=op.f("ck_questions_state")
        ),
        sa.CheckConstraint(
            "answered_via IS NULL OR answered_via IN ('ui', 'api', 'cli', 'coordinator')",
            name=op.f("ck_questions_answered_via"),
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_questions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_questions_schedule_id_schedules"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["answered_by"], ["actors.id"], name=op.f("fk_questions_answered_by_actors")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_questions")),
        comment="Questions passages ask people, and their answers.",
    )
    op.create_index("ix_questions_workspace_id", "questions", ["workspace_id"], unique=False)
    op.create_index("ix_questions_passage_id", "questions", ["passage_id"], unique=False)
    op.create_index("ix_questions_schedule_id", "questions", ["schedule_id"], unique=False)
    op.create_table(
        "question_marks",
        sa.Column("question_id", sa.Uuid(), nullable=False),
        sa.Column("attempt_id", sa.String(length=36), nullable=False),
        sa.Column("passage_id", sa.String(length=64), nullable=False),
        sa.Column("answered_at", UTCDateTime(), nullable=False),
        sa.Column("via", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("principal_kind", sa.String(length=16), nullable=False),
        sa.Column("principal_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("confirmed_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint("via = 'ui'", name=op.f("ck_question_marks_via")),
        sa.CheckConstraint(
            "state IN ('pending', 'confirmed')", name=op.f("ck_question_marks_state")
        ),
        sa.CheckConstraint(
            "principal_kind IN ('session', 'device')",
            name=op.f("ck_question_marks_principal_kind"),
        ),
        sa.ForeignKeyConstraint(
            ["question_id"],
            ["questions.id"],
            name=op.f("fk_question_marks_question_id_questions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("question_id", "attempt_id", name=op.f("pk_question_marks")),
        comment="Two-phase marks of answers given through the kalends interface.",
    )
    op.create_table(
        "answer_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("question_id", sa.Uuid(), nullable=False),
        sa.Column("schema_digest", sa.String(length=64), nullable=False),
        sa.Column("answer_digest", sa.String(length=64), nullable=False),
        sa.Column("principal_kind", sa.String(length=16), nullable=False),
        sa.Column("principal_id", sa.String(length=64), nullable=False),
        sa.Column("minted_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("consumed_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "principal_kind IN ('session', 'device')",
            name=op.f("ck_answer_tokens_principal_kind"),
        ),
        sa.ForeignKeyConstraint(
            ["question_id"],
            ["questions.id"],
            name=op.f("fk_answer_tokens_question_id_questions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_answer_tokens_token_hash")),
        comment=(
            "One-use tokens binding an interface answer to its question, form, answer "
            "and principal, found by the SHA-256 of their secret."
        ),
    )
    op.create_index("ix_answer_tokens_question_id", "answer_tokens", ["question_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_answer_tokens_question_id", table_name="answer_tokens")
    op.drop_table("answer_tokens")
    op.drop_table("question_marks")
    op.drop_index("ix_questions_schedule_id", table_name="questions")
    op.drop_index("ix_questions_passage_id", table_name="questions")
    op.drop_index("ix_questions_workspace_id", table_name="questions")
    op.drop_table("questions")
