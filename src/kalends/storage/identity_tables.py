"""The table of who acts in kalends: actors (people and service accounts).

Lists, workspaces, reminders and credentials all refer to ``actors.id``; an actor is
never deleted, so an ID read from a live credential stays valid.
"""

from __future__ import annotations

from sqlalchemy import Column, String, Table, Uuid

from kalends.storage.schema import UTCDateTime, metadata

__all__ = ["actors"]

actors = Table(
    "actors",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("handle", String(64), nullable=False, unique=True),
    Column("display_name", String(200), nullable=False),
    Column("email", String(320), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    comment="People who act on lists and tasks and receive reminders.",
)
