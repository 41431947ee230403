"""Missions: workspaces, their members, schedule documents and control records.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workspaces",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspaces")),
        sa.UniqueConstraint("path", name=op.f("uq_workspaces_path")),
        comment="A registered directory (often a git checkout) where passages run.",
    )
    op.create_table(
        "workspace_members",
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.CheckConstraint(
            "role IN ('owner', 'editor', 'viewer')", name=op.f("ck_workspace_members_role")
        ),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_workspace_members_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_members_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", "actor_id", name=op.f("pk_workspace_members")),
        comment="Who may read (viewer), control (editor) or manage (owner) a workspace's schedules.",
    )
    op.create_index(
        "ix_workspace_members_actor_id", "workspace_members", ["actor_id"], unique=False
    )
    op.create_table(
        "schedules",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("phase", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("evicted_control_revision", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=120), nullable=False),
        sa.Column("creation_request_id", sa.String(length=64), nullable=False),
        sa.Column("creation_digest", sa.String(length=64), nullable=False),
        sa.Column("config", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("next_due_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "phase IN ('live', 'deleting', 'tombstone')", name=op.f("ck_schedules_phase")
        ),
        sa.CheckConstraint(
            "state IN ('paused', 'running', 'stopped')", name=op.f("ck_schedules_state")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_schedules_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedules")),
        sa.UniqueConstraint(
            "workspace_id",
            "creation_request_id",
            name=op.f("uq_schedules_workspace_id_creation_request_id"),
        ),
        comment="Schedule documents (one row each, revision compare-and-swap) and their tombstones.",
    )
    op.create_index(
        "ix_schedules_workspace_id_id", "schedules", ["workspace_id", "id"], unique=False
    )
    op.create_table(
        "schedule_controls",
        sa.Column("schedule_id", sa.Uuid(), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("expected_revision", sa.Integer(), nullable=False),
        sa.Column("recorded_revision", sa.Integer(), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_schedule_controls_schedule_id_schedules"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("schedule_id", "request_id", name=op.f("pk_schedule_controls")),
        comment="The applied controls of a schedule (at most 64), read back by request ID.",
    )
    op.create_index(
        "ix_schedule_controls_schedule_id_recorded_revision",
        "schedule_controls",
        ["schedule_id", "recorded_revision"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(
        "ix_schedule_controls_schedule_id_recorded_revision", table_name="schedule_controls"
    )
    op.drop_table("schedule_controls")
    op.drop_index("ix_schedules_workspace_id_id", table_name="schedules")
    op.drop_table("schedules")
    op.drop_index("ix_workspace_members_actor_id", table_name="workspace_members")
    op.drop_table("workspace_members")
    op.drop_table("workspaces")
