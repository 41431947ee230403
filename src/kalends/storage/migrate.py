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
from typing import TYPE_CHECKING

from sqlalchemy import Engine, inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import StatementError

from kalends.clock import Clock
from kalends.config import resolve_database_url
from kalends.errors import UnknownSchemaRevision
from kalends.storage.engine import WRITE_OPTION, create_engine_for
from kalends.storage.schema import STATEMENT_CHECKED
from kalends.storage.unit_of_work import Store, lock_store, translate_error

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

__all__ = [
    "HEAD_REVISION",
    "MIGRATIONS_DIR",
    "compared",
    "current_revision",
    "head_revision",
    "open_store",
    "upgrade",
]

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")
HEAD_REVISION = "0021"
"""The newest migration's revision (``versions/0021_references_per_statement.py``): what
:func:`open_store` checks a database against without loading Alembic and the migration
scripts, which cost every process that opens a store about a tenth of a second. A new
migration moves it (tests/storage/test_migrations.py checks it against the scripts)."""
_VERSION_TABLE = "alembic_version"

# Any fixed 32-bit key ("kale"): serialises kalends migrations of one store (its
# PostgreSQL schema: stores in other schemas of the database migrate side by side).
MIGRATION_LOCK_KEY = 0x6B616C65


def compared(
    item: object, name: str | None, kind: str, reflected: bool, compare_to: object | None
) -> bool:
    """Whether a schema comparison (Alembic's ``include_object``) weighs ``item``: all but
    a foreign key the metadata declares and the database checks once a statement instead
    (:data:`~kalends.storage.schema.STATEMENT_CHECKED`, PostgreSQL's since 0021)."""
    return not (
        kind == "foreign_key_constraint"
        and not reflected
        and compare_to is None
        and name in STATEMENT_CHECKED
    )


def alembic_config(connection: Connection | None = None) -> Config:
    """Return an Alembic config for the kalends migrations, bound to ``connection``."""
    from alembic.config import Config  # noqa: PLC0415

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@cache
def _script() -> ScriptDirectory:
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """Return the revision this version of kalends migrates databases to."""
    return HEAD_REVISION


def script_head() -> str | None:
    """The head revision of the migration scripts themselves, as Alembic finds it."""
    return _script().get_current_head()


def current_revision(engine_or_url: Engine | str) -> str | None:
    """Return the database's schema revision, or ``None`` if it was never migrated."""
    with (
        _bound(engine_or_url) as engine,
        _translated(),
        engine.connect() as connection,
        connection.begin(),
    ):
        return _revision_of(connection)


def _revision_of(connection: Connection) -> str | None:
    """The revision recorded in the version table Alembic keeps (in the connection's
    schema, as Alembic reads it), ``None`` when there is none."""
    if not inspect(connection).has_table(_VERSION_TABLE):
        return None
    found = connection.execute(text(f"SELECT version_num FROM {_VERSION_TABLE}")).all()
    if len(found) > 1:
        raise RuntimeError(f"the database records {len(found)} schema revisions, not one")
    return None if not found else str(found[0][0])


def upgrade(engine_or_url: Engine | str) -> str:
    """Migrate the database to the head revision and return it; a no-op when up to date.

    Raises :class:`UnknownSchemaRevision` if a newer kalends migrated the database.
    """
    from alembic import command  # noqa: PLC0415

    with _bound(engine_or_url) as engine, _translated(), engine.connect() as connection:
        connection.execution_options(**{WRITE_OPTION: True})
        with connection.begin():
            lock_store(connection, MIGRATION_LOCK_KEY)
            _check_known(_revision_of(connection))
            command.upgrade(alembic_config(connection), "head")
            revision = _revision_of(connection)
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
