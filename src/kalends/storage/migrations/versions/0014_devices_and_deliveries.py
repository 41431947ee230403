"""Paired devices (a device flag on API tokens, one-time pairing links) and when an
interface answer was delivered to its passage.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("device", sa.Boolean(), server_default=sa.text("false"), nullable=False)
        )
    op.create_table(
        "device_pairings",
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("lifetime_seconds", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_device_pairings_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("secret_hash", name=op.f("pk_device_pairings")),
        comment="One-time device pairing links, found by the SHA-256 of their secret; used once.",
    )
    with op.batch_alter_table("device_pairings", schema=None) as batch_op:
        batch_op.create_index("ix_device_pairings_actor_id", ["actor_id"], unique=False)
    with op.batch_alter_table("question_marks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("delivered_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("question_marks", schema=None) as batch_op:
        batch_op.drop_column("delivered_at")
    with op.batch_alter_table("device_pairings", schema=None) as batch_op:
        batch_op.drop_index("ix_device_pairings_actor_id")
    op.drop_table("device_pairings")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("device")
