"""Schema migrations, run with Alembic from code (no ``alembic.ini``).

:func:`upgrade` applies every pending migration in one write transaction
(``BEGIN IMMEDIATE`` on SQLite; on PostgreSQL serialised between processes by
an advisory lock), so concurrent upgraders are safe and a failed migration
leaves the database as it was. :func:`open_store` upgrades a fresh or older
database on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.engine import Connection
from sqlalchemy.exc import StatementError

from kalends.clock import Clock
from kalends.config import resolve_database_url
from kalends.errors import UnknownSchemaRevision
from kalends.storage.engine import WRITE_OPTION, create_engine_for
from kalends.storage.unit_of_work import Store, lock_store, translate_error

__all__ = [
    "MIGRATIONS_DIR",
    "current_revision",
    "head_revision",
    "open_store",
    "upgrade",
]

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")

# Any fixed 32-bit key ("kale"): serialises kalends migrations of one store (its
# PostgreSQL schema: stores in other schemas of the database migrate side by side).
_MIGRATION_LOCK_KEY = 0x6B616C65


def alembic_config(connection: Connection | None = None) -> Config:
    """Return an Alembic config for the kalends migrations, bound to ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@cache
def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """Return the revision this version of kalends migrates databases to."""
    head = _script().get_current_head()
    if head is None:  # pragma: no cover - the package always ships migrations
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def current_revision(engine_or_url: Engine | str) -> str | None:
    """Return the database's schema revision, or ``None`` if it was never migrated."""
    with (
        _bound(engine_or_url) as engine,
        _translated(),
        engine.connect() as connection,
        connection.begin(),
    ):
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine_or_url: Engine | str) -> str:
    """Migrate the database to the head revision and return it; a no-op when up to date.

    Raises :class:`UnknownSchemaRevision` if a newer kalends migrated the database.
    """
    with _bound(engine_or_url) as engine, _translated(), engine.connect() as connection:
        connection.execution_options(**{WRITE_OPTION: True})
        with connection.begin():
            lock_store(connection, _MIGRATION_LOCK_KEY)
            _check_known(MigrationContext.configure(connection).get_current_revision())
            command.upgrade(alembic_config(connection), "head")
            revision = MigrationContext.configure(connection).get_current_revision()
    if revision is None:  # pragma: no cover - alembic records the head it reached
        raise RuntimeError("the upgrade recorded no revision")
    return revision


def open_store(url_or_engine: str | Engine | None = None, clock: Clock | None = None) -> Store:
    """Return a :class:`Store` on the database, migrating it to the head revision first.

    ``url_or_engine`` defaults as described in :func:`kalends.config.resolve_database_url`.
    """
    if isinstance(url_or_engine, Engine):
        engine = url_or_engine
    else:
        engine = create_engine_for(resolve_database_url(url_or_engine))
    try:
        if current_revision(engine) != head_revision():
            upgrade(engine)
    except BaseException:
        if engine is not url_or_engine:
            engine.dispose()
        raise
    return Store(engine, clock)


def _check_known(revision: str | None) -> None:
    if revision is None:
        return
    known = {script.revision for script in _script().walk_revisions()}
    if revision not in known:
        raise UnknownSchemaRevision(
            f"the database is at schema revision {revision!r}, which this kalends does not know "
            f"(its newest is {head_revision()!r}); upgrade kalends",
            revision=revision,
        )


@contextmanager
def _bound(engine_or_url: Engine | str) -> Iterator[Engine]:
    if isinstance(engine_or_url, Engine):
        yield engine_or_url
        return
    engine = create_engine_for(resolve_database_url(engine_or_url))
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except StatementError as exc:
        translated = translate_error(exc)
        if translated is None:
            raise
        raise translated from exc
