"""Authentication: accounts, cookie sessions, API tokens and one-time login links.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=True),
        sa.Column("is_owner", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("password_changed_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_accounts_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("actor_id", name=op.f("pk_accounts")),
        comment="Actors who may sign in; the password (argon2id) is absent until one is set.",
    )
    op.create_table(
        "auth_sessions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_auth_sessions_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_auth_sessions")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_auth_sessions_secret_hash")),
        comment="Browser sessions, found by the SHA-256 of their cookie secret; expiry slides.",
    )
    op.create_index("ix_auth_sessions_actor_id", "auth_sessions", ["actor_id"], unique=False)
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_api_tokens_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_api_tokens_secret_hash")),
        comment="Bearer tokens for programs, found by the SHA-256 of the token; no expiry is never.",
    )
    op.create_index("ix_api_tokens_actor_id", "api_tokens", ["actor_id"], unique=False)
    op.create_table(
        "login_links",
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_login_links_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("secret_hash", name=op.f("pk_login_links")),
        comment="One-time sign-in links, found by the SHA-256 of their secret; redeemed once.",
    )
    op.create_index("ix_login_links_actor_id", "login_links", ["actor_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_login_links_actor_id", table_name="login_links")
    op.drop_table("login_links")
    op.drop_index("ix_api_tokens_actor_id", table_name="api_tokens")
    op.drop_table("api_tokens")
    op.drop_index("ix_auth_sessions_actor_id", table_name="auth_sessions")
    op.drop_table("auth_sessions")
    op.drop_table("accounts")
