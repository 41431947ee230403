"""The table of calendar feeds: each actor's secret iCalendar addresses.

As for API tokens, only the SHA-256 of a feed's secret is stored (in hex), and a feed
is found by that digest alone; a revoked feed stays listed with the time it was revoked.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table, Uuid

from kalends.storage.auth_tables import DIGEST_LENGTH
from kalends.storage.schema import UTCDateTime, metadata

__all__ = ["calendar_feeds"]

calendar_feeds = Table(
    "calendar_feeds",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("actor_id", Uuid(), ForeignKey("actors.id", ondelete="CASCADE"), nullable=False),
    Column("secret_hash", String(DIGEST_LENGTH), nullable=False, unique=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("revoked_at", UTCDateTime(), nullable=True),
    Column("last_used_at", UTCDateTime(), nullable=True),
    Index("ix_calendar_feeds_actor_id", "actor_id"),
    comment="Secret calendar feed addresses, found by the SHA-256 of their secret.",
)
