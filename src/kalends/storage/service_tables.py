"""The table of service-wide preferences: one row per preference this server keeps.

A preference that has no row holds its default; the one kalends keeps today is service
supervision (:mod:`kalends.supervision`), ON unless a person turned it OFF. A row is
written only by an explicit choice (``kalends service on|off``), never by a schedule's
creation, configuration, pause, stop or deletion.
"""

from __future__ import annotations

from sqlalchemy import Column, String, Table, Uuid

from kalends.storage.schema import UTCDateTime, metadata

__all__ = ["PREFERENCE_NAME_LENGTH", "PREFERENCE_VALUE_LENGTH", "service_preferences"]

PREFERENCE_NAME_LENGTH = 64
PREFERENCE_VALUE_LENGTH = 64

service_preferences = Table(
    "service_preferences",
    metadata,
    Column("name", String(PREFERENCE_NAME_LENGTH), primary_key=True),
    Column("value", String(PREFERENCE_VALUE_LENGTH), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    # No foreign key: the record of who chose outlives their account.
    Column("updated_by", Uuid(), nullable=True),
    comment="Service-wide preferences set explicitly; a missing row holds the default.",
)
