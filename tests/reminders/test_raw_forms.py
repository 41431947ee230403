"""IDs and instants in the database's own form (``kalends.reminders.raw_forms.RAW``), as the
delivery worker's hot path reads them: converted lazily, they must come out exactly as
SQLAlchemy's ``Uuid`` and kalends' ``UTCDateTime`` read them.

The round trips run on SQLite and PostgreSQL (the ``store`` fixture).
"""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Column, MetaData, Table, Uuid, insert, select, type_coerce
from sqlalchemy.dialects import sqlite

from kalends.reminders.raw_forms import RAW, db_form, instant, instant_text, uuid_of, uuid_text
from kalends.storage.schema import UTCDateTime
from kalends.storage.unit_of_work import Store

IDS = [
    UUID(int=0),
    UUID(int=(1 << 128) - 1),
    UUID("12345678-9abc-4def-8123-456789abcdef"),
    # Random-looking but the same in every process (parallel workers collect alike).
    *(UUID(int=random.Random(n).getrandbits(128), version=4) for n in range(20)),
]
INSTANTS = [
    datetime(2026, 3, 2, 8, 55, tzinfo=UTC),
    datetime(2026, 3, 2, 8, 55, 0, 2400, tzinfo=UTC),
    datetime(2025, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(1999, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    # Not UTC: stored (and read back) as the same instant in UTC.
    datetime(2026, 3, 29, 3, 30, 0, 500_000, tzinfo=timezone(timedelta(hours=2))),
]

probe_metadata = MetaData()
probe = Table(
    "test_raw_forms_probe",
    probe_metadata,
    Column("id", Uuid(), primary_key=True),
    Column("at", UTCDateTime(), nullable=False),
)


def iso_z(value: datetime) -> str:
    """How a message spelled an instant before the raw forms: ISO 8601 in UTC, ``Z``."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class TestWithoutADatabase:
    @pytest.mark.parametrize("value", IDS, ids=str)
    def test_sqlite_hex_digits_make_the_same_uuid_and_text(self, value: UUID) -> None:
        assert uuid_of(value.hex) == value
        assert isinstance(uuid_of(value.hex), UUID)
        assert uuid_text(value.hex) == str(value)

    @pytest.mark.parametrize("value", IDS[:3], ids=str)
    def test_a_uuid_or_its_text_passes_too(self, value: UUID) -> None:
        assert uuid_of(value) is value
        assert uuid_text(value) == str(value)
        assert uuid_of(str(value)) == value
        assert uuid_text(str(value)) == str(value)

    @pytest.mark.parametrize("value", INSTANTS, ids=str)
    def test_sqlite_instant_text_reads_and_shows_as_the_datetime_does(
        self, value: datetime
    ) -> None:
        stored = UTCDateTime().process_bind_param(value, sqlite.dialect())
        assert isinstance(stored, str)
        assert instant(stored) == value
        assert instant(stored).tzinfo is UTC
        assert instant_text(stored) == iso_z(value)

    @pytest.mark.parametrize("value", INSTANTS, ids=str)
    def test_a_driver_datetime_reads_and_shows_in_utc(self, value: datetime) -> None:
        assert instant(value) == value
        assert instant(value).tzinfo is UTC
        assert instant_text(value) == iso_z(value)


class TestRoundTrip:
    def test_raw_reads_convert_to_what_the_typed_reads_give(self, store: Store) -> None:
        with store.transaction() as conn:
            probe_metadata.create_all(conn)
            rows = [{"id": i, "at": at} for i, at in zip(IDS, itertools.cycle(INSTANTS))]
            conn.execute(insert(probe), rows)
            typed = conn.execute(select(probe.c.id, probe.c.at).order_by(probe.c.id)).all()
            raw = conn.execute(
                select(type_coerce(probe.c.id, RAW), type_coerce(probe.c.at, RAW)).order_by(
                    probe.c.id
                )
            ).all()
            # Bound back in the raw form, the IDs find their rows.
            found = conn.execute(
                select(probe.c.id).where(
                    type_coerce(probe.c.id, RAW).in_(db_form(conn, [IDS[0], IDS[2]]))
                )
            ).scalars()
            assert set(found) == {IDS[0], IDS[2]}
            probe_metadata.drop_all(conn)
        assert len(raw) == len(typed) == len(IDS)
        for (raw_id, raw_at), (typed_id, typed_at) in zip(raw, typed, strict=True):
            assert uuid_of(raw_id) == typed_id
            assert uuid_text(raw_id) == str(typed_id)
            assert instant(raw_at) == typed_at
            assert instant(raw_at).tzinfo is UTC
            assert instant_text(raw_at) == iso_z(typed_at)
        # Raw IDs sort as the UUIDs do (the worker sorts claims by them).
        raw_ids: list[Any] = [r[0] for r in raw]
        assert sorted(raw_ids) == raw_ids
