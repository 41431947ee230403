"""Migrations on every backend: idempotent, automatic on first use, safe to race."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text, update

from kalends import __version__
from kalends.clock import FakeClock
from kalends.errors import StorageError, UnknownSchemaRevision
from kalends.storage.engine import WRITE_OPTION
from kalends.storage.migrate import (
    HEAD_REVISION,
    alembic_config,
    compared,
    current_revision,
    head_revision,
    open_store,
    script_head,
    upgrade,
)
from kalends.storage.mission_tables import SCHEDULES_FILLFACTOR
from kalends.storage.schema import STATEMENT_CHECKED, kalends_meta, metadata
from kalends.storage.testing import StorageTarget

# These tests are about the migrations themselves: run them, not the test template.
pytestmark = pytest.mark.usefixtures("real_migrations")

HEAD = head_revision()


class TestUpgrade:
    def test_the_head_revision_is_the_foundation(self) -> None:
        assert head_revision() == HEAD

    def test_the_head_revision_is_the_newest_migration_scripts(self) -> None:
        # open_store checks databases against the constant, without loading the scripts:
        # a new migration that leaves it behind would never be run by open_store.
        assert script_head() == HEAD_REVISION

    def test_a_database_recording_two_revisions_is_refused(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        upgrade(engine)
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0001')"))
        with pytest.raises(RuntimeError, match="2 schema revisions"):
            current_revision(engine)

    def test_a_fresh_database_has_no_revision_until_upgraded(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        assert current_revision(engine) is None
        assert upgrade(engine) == HEAD
        assert current_revision(engine) == HEAD

    def test_upgrading_twice_reports_the_same_revision_and_changes_nothing(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        assert upgrade(engine) == HEAD
        with engine.begin() as conn:
            conn.execute(update(kalends_meta).values(value="marker"))
        assert upgrade(engine) == HEAD
        with engine.connect() as conn:
            assert conn.execute(select(kalends_meta.c.value)).scalars().all() == ["marker"]
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).all()
        assert [tuple(v) for v in versions] == [(HEAD,)]

    def test_upgrade_accepts_a_url_as_well_as_an_engine(
        self, storage_target: StorageTarget
    ) -> None:
        assert upgrade(storage_target.url) == HEAD
        assert current_revision(storage_target.url) == HEAD

    def test_the_migrated_schema_matches_the_table_metadata(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        upgrade(engine)
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "include_object": compared}
            )
            assert compare_metadata(context, metadata) == []

    def test_schedules_leave_a_third_of_each_page_free_on_postgresql_and_back(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        upgrade(engine)

        def options() -> list[str] | None:
            with engine.connect() as conn:
                found: list[str] | None = conn.execute(
                    text("SELECT reloptions FROM pg_class WHERE oid = 'schedules'::regclass")
                ).scalar_one()
            return found

        if storage_target.backend != "postgresql":
            # SQLite has no fill factor: the table is as the metadata makes it.
            with engine.connect() as conn:
                created = conn.execute(
                    text("SELECT sql FROM sqlite_master WHERE name = 'schedules'")
                ).scalar_one()
            assert "fillfactor" not in created.lower()
            return
        assert options() == [f"fillfactor={SCHEDULES_FILLFACTOR}"]
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                command.downgrade(alembic_config(conn), "0019")
        assert current_revision(engine) == "0019"
        assert options() is None
        assert upgrade(engine) == HEAD
        assert options() == [f"fillfactor={SCHEDULES_FILLFACTOR}"]

    def test_the_busiest_references_become_triggers_on_postgresql_and_back(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        upgrade(engine)

        checked_tables = {
            fk.parent.name
            for table in metadata.tables.values()
            for fk in table.foreign_key_constraints
            if fk.name in STATEMENT_CHECKED
        }

        def found() -> tuple[set[str], int]:
            with engine.connect() as conn:
                keys = {
                    str(fk["name"])
                    for table in checked_tables
                    for fk in inspect(conn).get_foreign_keys(table)
                }
                if storage_target.backend != "postgresql":
                    return keys, 0
                triggers: int = conn.execute(
                    text(
                        "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                        " WHERE t.tgname LIKE 'kalends%'"
                        " AND c.relnamespace = current_schema()::regnamespace"
                    )
                ).scalar_one()
            return keys, triggers

        keys, triggers = found()
        if storage_target.backend != "postgresql":
            # SQLite keeps its foreign keys: checked in process, row by row, cheaply.
            assert keys >= STATEMENT_CHECKED
            return
        assert not keys & STATEMENT_CHECKED
        # On each of the 5 tables: one for its new rows, one for each reference changed (12);
        # on each of the 6 tables named: one for its deleted rows, one for a key changed.
        assert triggers == 5 + 12 + 6 * 2
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                command.downgrade(alembic_config(conn), "0020")
        assert found() == (keys | STATEMENT_CHECKED, 0)
        assert upgrade(engine) == HEAD
        assert found() == (keys, 5 + 12 + 6 * 2)

    def test_the_foundation_records_the_kalends_version_that_created_the_database(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        upgrade(engine)
        with engine.connect() as conn:
            rows = conn.execute(select(kalends_meta.c.key, kalends_meta.c.value)).all()
        assert [tuple(row) for row in rows] == [("created_by", f"kalends {__version__}")]

    def test_concurrent_upgrades_of_a_fresh_database_all_succeed_once(
        self, storage_target: StorageTarget
    ) -> None:
        engines = [storage_target.engine() for _ in range(4)]
        barrier = threading.Barrier(len(engines))
        outcomes: list[str | BaseException] = []

        def upgrader(n: int) -> None:
            barrier.wait(5)
            try:
                outcomes.append(upgrade(engines[n]))
            except BaseException as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=upgrader, args=(n,)) for n in range(len(engines))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert outcomes == [HEAD] * len(engines)
        with engines[0].connect() as conn:
            assert conn.execute(select(kalends_meta)).all() != []
            assert len(conn.execute(select(kalends_meta)).all()) == 1


class TestOpenStore:
    def test_a_fresh_database_is_upgraded_on_first_use(
        self, storage_target: StorageTarget, fake_clock: FakeClock
    ) -> None:
        store = open_store(storage_target.engine(), fake_clock)
        assert current_revision(store.engine) == HEAD
        assert store.clock is fake_clock

    def test_an_up_to_date_database_is_opened_as_it_is(
        self, storage_target: StorageTarget, fake_clock: FakeClock
    ) -> None:
        first = open_store(storage_target.engine(), fake_clock)
        with first.transaction() as conn:
            conn.execute(update(kalends_meta).values(value="marker"))
        second = open_store(storage_target.engine(), fake_clock)
        with second.transaction(write=False) as conn:
            assert conn.execute(select(kalends_meta.c.value)).scalar_one() == "marker"

    def test_a_database_from_a_newer_kalends_is_refused_naming_its_revision(
        self, storage_target: StorageTarget
    ) -> None:
        engine = storage_target.engine()
        upgrade(engine)
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        with pytest.raises(UnknownSchemaRevision, match="'9999'") as caught:
            open_store(engine)
        assert caught.value.revision == "9999"
        assert current_revision(engine) == "9999"

    def test_open_store_takes_a_url(self, storage_target: StorageTarget) -> None:
        store = open_store(storage_target.url)
        try:
            assert current_revision(store.engine) == HEAD
        finally:
            store.close()

    def test_a_database_that_cannot_be_opened_is_a_storage_error(self, tmp_path: Path) -> None:
        missing = tmp_path / "no-such-directory" / "kalends.sqlite3"
        with pytest.raises(StorageError, match="unable to open database file"):
            open_store(str(missing))
        assert not missing.parent.exists()


class TestPostgresqlSchemas:
    def test_tables_and_the_version_record_live_in_the_search_path_schema(
        self, postgresql_target: StorageTarget
    ) -> None:
        engine = postgresql_target.engine()
        upgrade(engine)
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names(schema=postgresql_target.schema))
            in_public = set(inspect(conn).get_table_names(schema="public"))
        assert {"alembic_version", "leases", "kalends_meta"} <= tables
        assert not {"alembic_version", "leases", "kalends_meta"} & in_public
