"""The tables of authentication: accounts, cookie sessions, API tokens, login links and
the server privileges granted to actors.

Only digests of secrets are stored: a session's cookie secret, a token and a
login link are high-entropy random strings, kept as their SHA-256 in hex and
found by that digest alone; a password is kept as its argon2id hash. Every row
belongs to an actor and goes with it.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    Uuid,
    text,
)

from kalends.storage.schema import UTCDateTime, metadata

__all__ = [
    "DIGEST_LENGTH",
    "PRIVILEGE_LENGTH",
    "TOKEN_NAME_LENGTH",
    "accounts",
    "actor_grants",
    "api_tokens",
    "auth_sessions",
    "device_pairings",
    "login_links",
]

# A SHA-256 digest in hex.
DIGEST_LENGTH = 64
# The longest name of an API token, in characters.
TOKEN_NAME_LENGTH = 120
# The longest name of a server privilege (``run``), in characters.
PRIVILEGE_LENGTH = 32

accounts = Table(
    "accounts",
    metadata,
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True),
    Column("password_hash", Text(), nullable=True),
    Column("is_owner", Boolean(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("password_changed_at", UTCDateTime(), nullable=True),
    comment="Actors who may sign in; the password (argon2id) is absent until one is set.",
)

auth_sessions = Table(
    "auth_sessions",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("secret_hash", String(DIGEST_LENGTH), nullable=False, unique=True),
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("last_seen_at", UTCDateTime(), nullable=False),
    Column("revoked_at", UTCDateTime(), nullable=True),
    Index("ix_auth_sessions_actor_id", "actor_id"),
    comment="Browser sessions, found by the SHA-256 of their cookie secret; expiry slides.",
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(TOKEN_NAME_LENGTH), nullable=False),
    Column("secret_hash", String(DIGEST_LENGTH), nullable=False, unique=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=True),
    Column("revoked_at", UTCDateTime(), nullable=True),
    Column("last_used_at", UTCDateTime(), nullable=True),
    # A paired device's credential (its browser holds it in the device cookie) rather
    # than a program's bearer token.
    Column("device", Boolean(), nullable=False, server_default=text("false")),
    Index("ix_api_tokens_actor_id", "actor_id"),
    comment="Bearer tokens for programs, found by the SHA-256 of the token; no expiry is never.",
)

device_pairings = Table(
    "device_pairings",
    metadata,
    Column("secret_hash", String(DIGEST_LENGTH), primary_key=True),
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(TOKEN_NAME_LENGTH), nullable=False),
    # The device credential's lifetime once paired; none means it never expires.
    Column("lifetime_seconds", Integer(), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime(), nullable=True),
    Index("ix_device_pairings_actor_id", "actor_id"),
    comment="One-time device pairing links, found by the SHA-256 of their secret; used once.",
)

login_links = Table(
    "login_links",
    metadata,
    Column("secret_hash", String(DIGEST_LENGTH), primary_key=True),
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime(), nullable=True),
    Index("ix_login_links_actor_id", "actor_id"),
    comment="One-time sign-in links, found by the SHA-256 of their secret; redeemed once.",
)

actor_grants = Table(
    "actor_grants",
    metadata,
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), primary_key=True),
    Column("privilege", String(PRIVILEGE_LENGTH), primary_key=True),
    Column("granted_at", UTCDateTime(), nullable=False),
    comment="Server privileges granted to actors by the server's owner (who holds them all).",
)
