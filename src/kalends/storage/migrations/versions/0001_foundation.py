"""Foundation: leases and the kalends_meta key/value table.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends import __version__
from kalends.storage.schema import UTCDateTime

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("token", sa.String(64), nullable=False),
        sa.Column("acquired_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_leases"),
        sa.UniqueConstraint("token", name="uq_leases_token"),
        comment="Named, expiring claims; a token identifies one holding of one lease.",
    )
    meta = op.create_table(
        "kalends_meta",
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_kalends_meta"),
        comment="Facts about this database as key/value text, such as the version that created it.",
    )
    op.bulk_insert(meta, [{"key": "created_by", "value": f"kalends {__version__}"}])


def downgrade() -> None:
    op.drop_table("kalends_meta")
    op.drop_table("leases")
