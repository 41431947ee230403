"""Worker nodes and the beats of their passages (issue 23 §3: passages observed from any
machine).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "worker_nodes",
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("runtime_dir", sa.Text(), nullable=False),
        sa.Column("beat_key", sa.String(length=64), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("beat_at", UTCDateTime(), nullable=False),
        sa.Column("stopped_at", UTCDateTime(), nullable=True),
        sa.Column("forgotten_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_worker_nodes")),
        comment="Processes that run passages: identity, heartbeat and the key of their shims' beats.",
    )
    op.create_table(
        "passage_beats",
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("passage_id", sa.String(length=200), nullable=False),
        sa.Column("message_id", sa.String(length=200), nullable=False),
        sa.Column("schedule_id", sa.Uuid(), nullable=False),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("observation", sa.Text(), nullable=True),
        sa.Column("source", sa.String(length=8), nullable=True),
        sa.Column("beat_at", UTCDateTime(), nullable=False),
        sa.Column("interrupt_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "state IN ('asked', 'admitted', 'absent')", name=op.f("ck_passage_beats_state")
        ),
        sa.ForeignKeyConstraint(
            ["node_id"],
            ["worker_nodes.node_id"],
            name=op.f("fk_passage_beats_node_id_worker_nodes"),
        ),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_passage_beats")),
        comment="Which node admitted each passage session, and the last observation reported of it.",
    )
    with op.batch_alter_table("passage_beats", schema=None) as batch_op:
        batch_op.create_index("ix_passage_beats_node_id", ["node_id"], unique=False)
        batch_op.create_index("ix_passage_beats_schedule_id", ["schedule_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("passage_beats", schema=None) as batch_op:
        batch_op.drop_index("ix_passage_beats_schedule_id")
        batch_op.drop_index("ix_passage_beats_node_id")
    op.drop_table("passage_beats")
    op.drop_table("worker_nodes")
