"""Server privileges granted per actor: the run privilege.

Revision ID: 0008
Revises: 0007
Create Date: 2027-01-15
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "actor_grants",
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("privilege", sa.String(length=32), nullable=False),
        sa.Column("granted_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_actor_grants_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("actor_id", "privilege", name=op.f("pk_actor_grants")),
        comment="Server privileges granted to actors by the server's owner (who holds them all).",
    )


def downgrade() -> None:
    op.drop_table("actor_grants")
