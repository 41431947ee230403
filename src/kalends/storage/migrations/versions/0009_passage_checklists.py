"""Passage checklists: each workspace's task list, and the checklist root of each passage.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workspace_lists",
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("list_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["list_id"], ["lists.id"], name=op.f("fk_workspace_lists_list_id_lists")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_lists_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", name=op.f("pk_workspace_lists")),
        sa.UniqueConstraint("list_id", name=op.f("uq_workspace_lists_list_id")),
        comment="The task list a workspace's passage checklists go to: one per workspace.",
    )
    op.create_table(
        "passage_checklists",
        sa.Column("passage_id", sa.String(length=64), nullable=False),
        sa.Column("schedule_id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_passage_checklists_schedule_id_schedules"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_passage_checklists_task_id_tasks")
        ),
        sa.PrimaryKeyConstraint("passage_id", name=op.f("pk_passage_checklists")),
        sa.UniqueConstraint("task_id", name=op.f("uq_passage_checklists_task_id")),
        comment=(
            "The checklist each passage was given: the root task of the template's items, which "
            "the passage's own token may tick and comment."
        ),
    )
    op.create_index(
        "ix_passage_checklists_schedule_id", "passage_checklists", ["schedule_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_passage_checklists_schedule_id", table_name="passage_checklists")
    op.drop_table("passage_checklists")
    op.drop_table("workspace_lists")
