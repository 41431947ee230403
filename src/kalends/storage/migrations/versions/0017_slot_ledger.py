"""The slot ledger, and the next slot and zone data of each wake (issue 24: every slot's
decision kept; zone-data changes recomputed).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OUTCOMES = "outcome IN ('launched', 'coalesced', 'skipped', 'moved')"
_REASONS = (
    "reason IS NULL OR reason IN ('paused', 'stopped', 'end-bound', 'quota', "
    "'condition-false', 'pending-passage', 'no-scheduler', 'dst-gap', 'dst-shifted', "
    "'day-missing', 'zone-rules-changed')"
)


def upgrade() -> None:
    op.create_table(
        "slot_ledger",
        sa.Column("schedule_id", sa.Uuid(), nullable=False),
        sa.Column("slot_key", sa.String(length=120), nullable=False),
        sa.Column("slot_at", UTCDateTime(), nullable=False),
        sa.Column("local", sa.String(length=32), nullable=False),
        sa.Column("zone", sa.String(length=64), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=True),
        sa.Column("note", sa.String(length=16), nullable=True),
        sa.Column("passage_id", sa.String(length=200), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("through_at", UTCDateTime(), nullable=True),
        sa.Column("other_at", UTCDateTime(), nullable=True),
        sa.Column("decided_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(_OUTCOMES, name=op.f("ck_slot_ledger_outcome")),
        sa.CheckConstraint(_REASONS, name=op.f("ck_slot_ledger_reason")),
        sa.CheckConstraint("slots >= 1", name=op.f("ck_slot_ledger_slots")),
        sa.PrimaryKeyConstraint("schedule_id", "slot_key", name=op.f("pk_slot_ledger")),
        comment=(
            "Every nominal slot of a running schedule as decided: launched, coalesced into a "
            "later passage, skipped with its reason, or moved by new zone rules."
        ),
    )
    with op.batch_alter_table("slot_ledger", schema=None) as batch_op:
        batch_op.create_index(
            "ix_slot_ledger_schedule_id_slot_at", ["schedule_id", "slot_at"], unique=False
        )
    with op.batch_alter_table("schedule_wakes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("next_slot_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("zone_data", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("schedule_wakes", schema=None) as batch_op:
        batch_op.drop_column("zone_data")
        batch_op.drop_column("next_slot_at")
    with op.batch_alter_table("slot_ledger", schema=None) as batch_op:
        batch_op.drop_index("ix_slot_ledger_schedule_id_slot_at")
    op.drop_table("slot_ledger")
