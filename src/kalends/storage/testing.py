"""A pytest plugin that runs storage tests on every reachable backend.

Register it once, in the top-level ``tests/conftest.py``::

    pytest_plugins = ["kalends.storage.testing"]

Fixtures: ``storage_backend`` (``"sqlite"`` or ``"postgresql"``; every test
that uses it, directly or through the fixtures below, runs once per available
backend),
``storage_target`` (a fresh, empty database of that backend), ``fake_clock``
and ``store`` (a migrated :class:`Store` on the target, driven by the fake clock).

A test's migrated database is a copy: each process migrates one template database per
backend with the real migrations, once, and every ``store`` starts from a copy of it
(the SQLite file copied; on PostgreSQL the statements the migrations sent, recorded
while they ran, sent again into the test's schema in one transaction), which takes a
few milliseconds where running the migrations takes a few hundred.

SQLite always runs, on a file in the test's temporary directory. PostgreSQL
runs when ``KALENDS_TEST_DATABASE_URL`` names a server (then it must answer, or
the tests fail) or when a local server answers within
:data:`PROBE_TIMEOUT_SECONDS` at one of :data:`LOCAL_POSTGRESQL_URLS`; each test
gets a private schema ``k_<random>`` reached through ``search_path`` and dropped
afterwards. Without a server the PostgreSQL variants are left out, not skipped
one by one; the session summary says which backends ran, and why one did not.
"""

from __future__ import annotations

import atexit
import getpass
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Engine, event, select, text
from sqlalchemy.engine import make_url

from kalends.clock import FakeClock
from kalends.config import mask_password, normalize_database_url, resolve_database_url
from kalends.storage import migrate
from kalends.storage.engine import DEFAULT_BUSY_TIMEOUT_MS, WRITE_OPTION, create_engine_for
from kalends.storage.migrate import open_store
from kalends.storage.prepared import Prepared
from kalends.storage.schema import metadata
from kalends.storage.unit_of_work import Store, lock_store

# The real migrations, whatever a test process later puts in their place (below).
upgrade = migrate.upgrade

__all__ = [
    "BACKENDS",
    "ENV_TEST_DATABASE_URL",
    "FAKE_CLOCK_START",
    "LOCAL_POSTGRESQL_URLS",
    "PROBE_TIMEOUT_SECONDS",
    "PostgresqlServer",
    "StorageTarget",
    "discover_postgresql",
    "migrated",
    "provision",
    "real_migrations",
    "statements_sent",
]

ENV_TEST_DATABASE_URL = "KALENDS_TEST_DATABASE_URL"
BACKENDS = ("sqlite", "postgresql")
PROBE_TIMEOUT_SECONDS = 2
LOCAL_POSTGRESQL_URLS = tuple(
    dict.fromkeys(
        f"postgresql+psycopg://{user}@127.0.0.1:5432/test"
        for user in ("postgres", getpass.getuser())
    )
)
FAKE_CLOCK_START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

_RAN = pytest.StashKey[set[str]]()
_LEFT_OUT = pytest.StashKey[str]()


@dataclass(frozen=True, slots=True)
class PostgresqlServer:
    """Where the PostgreSQL tests run, or why they cannot."""

    url: str | None
    required: bool
    reason: str


@cache
def discover_postgresql() -> PostgresqlServer:
    """Find the PostgreSQL server for tests: the environment's, else a local one that answers."""
    explicit = os.environ.get(ENV_TEST_DATABASE_URL, "").strip()
    candidates = (normalize_database_url(explicit),) if explicit else LOCAL_POSTGRESQL_URLS
    failures = []
    for url in candidates:
        try:
            with _admin_connection(url):
                return PostgresqlServer(url=url, required=bool(explicit), reason="")
        except psycopg.Error as exc:
            failures.append(f"{mask_password(url)} ({str(exc).strip().splitlines()[0]})")
    return PostgresqlServer(
        url=None, required=bool(explicit), reason="not reachable at " + ", ".join(failures)
    )


@dataclass(slots=True)
class StorageTarget:
    """A fresh, empty database of one backend; its URL works with ``--database`` too."""

    backend: str
    url: str
    schema: str | None = None
    _engines: list[Engine] = field(default_factory=list)
    pooled: bool = False
    """(PostgreSQL) the schema is a migrated one of this process's pool, reset and given
    back when the test ends."""

    def engine(self, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> Engine:
        """Return a new engine on this database, disposed when the test ends."""
        engine = create_engine_for(self.url, busy_timeout_ms=busy_timeout_ms)
        self._engines.append(engine)
        return engine

    def dispose(self) -> None:
        for engine in self._engines:
            engine.dispose()
        self._engines.clear()


@contextmanager
def provision(backend: str, directory: Path) -> Iterator[StorageTarget]:
    """Create an empty database of ``backend`` for one test and remove it afterwards."""
    if backend == "sqlite":
        target = StorageTarget("sqlite", f"sqlite:///{directory / 'kalends.sqlite3'}")
        try:
            yield target
        finally:
            target.dispose()
        return
    server = discover_postgresql()
    if server.url is None:
        raise RuntimeError(f"PostgreSQL is {server.reason}")
    schema = f"k_{secrets.token_hex(6)}"
    with _admin_connection(server.url) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    target = StorageTarget("postgresql", _with_search_path(server.url, schema), schema)
    _PROVISIONED[schema] = target
    try:
        yield target
    finally:
        _PROVISIONED.pop(schema, None)
        target.dispose()
        with _admin_connection(server.url) as admin:
            if not (target.pooled and _give_back(admin, schema)):
                admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that needs ``storage_backend`` once per available backend."""
    if "storage_backend" not in metafunc.fixturenames:
        return
    backends = list(BACKENDS)
    server = discover_postgresql()
    if server.url is None and not server.required:
        # Leave the PostgreSQL variants out rather than list a skip for each.
        backends.remove("postgresql")
        metafunc.config.stash[_LEFT_OUT] = f"PostgreSQL {server.reason}"
    metafunc.parametrize("storage_backend", backends, indirect=True)


@pytest.fixture
def storage_backend(request: pytest.FixtureRequest) -> str:
    """The backend a storage test runs on: ``"sqlite"`` or ``"postgresql"``."""
    backend: str = request.param
    if backend == "postgresql":
        server = discover_postgresql()
        if server.url is None:
            pytest.fail(
                f"{ENV_TEST_DATABASE_URL} is set but PostgreSQL is {server.reason}", pytrace=False
            )
    request.config.stash.setdefault(_RAN, set()).add(backend)
    return backend


@pytest.fixture
def storage_target(storage_backend: str, tmp_path: Path) -> Iterator[StorageTarget]:
    """A fresh, empty database (not migrated) of the backend under test."""
    with provision(storage_backend, tmp_path) as target:
        yield target


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock that stands still at :data:`FAKE_CLOCK_START` until moved."""
    return FakeClock(FAKE_CLOCK_START)


@pytest.fixture
def store(storage_target: StorageTarget, fake_clock: FakeClock) -> Store:
    """A migrated store on the backend under test, on the fake clock."""
    migrated(storage_target)
    return open_store(storage_target.engine(), fake_clock)


def migrated(target: StorageTarget) -> None:
    """Brings the fresh, empty ``target`` to the newest schema: a copy of this process's
    template database of its backend, which the real migrations made."""
    if target.backend == "sqlite":
        shutil.copyfile(_sqlite_template(), make_url(target.url).database or "")
        return
    assert target.schema is not None
    with _admin_connection(target.url) as conn:
        if _POOL:
            # A migrated schema reset by an earlier test takes the empty one's name.
            pooled = _POOL.pop()
            with conn.transaction():
                conn.execute(sql.SQL("DROP SCHEMA {}").format(sql.Identifier(target.schema)))
                conn.execute(
                    sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                        sql.Identifier(pooled), sql.Identifier(target.schema)
                    )
                )
        else:
            _replay(conn)
    target.pooled = True


def _replay(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """The migrations' recorded statements, sent into the connection's schema."""
    statements = _postgresql_script()
    with conn.transaction(), conn.cursor() as cursor:
        for statement, parameters, many in statements:
            if many:
                cursor.executemany(statement, parameters)
            elif parameters is None:
                cursor.execute(statement)
            else:
                cursor.execute(statement, parameters)


# --- the pool of migrated PostgreSQL schemas ---------------------------------------------
#
# Replaying the migrations into a new schema costs PostgreSQL a few hundred milliseconds
# of catalog writes (seconds on a busy machine), and dropping it more; emptying a few
# dozen small tables costs a few. So a test's migrated schema is not dropped when it
# ends: its rows are deleted, the rows the migrations wrote are put back, its sequences
# restart, and it waits in this process's pool for the next test that migrates, which
# renames it to its own schema's name. A schema whose structure or privileges a test
# changed (its fingerprint differs from a freshly migrated one's) is dropped instead.

_POOL: list[str] = []
_POOL_LIMIT = 4


def _fingerprint(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> str:
    """What a test could change in a schema beyond its rows, cheaply: its privileges, and
    each relation's name, kind, privileges and counts of columns, checks and triggers
    (an added or dropped table, index, sequence, column, check or trigger, a grant or a
    revoke), and its functions."""
    row = conn.execute(
        """
        WITH n AS (SELECT oid, nspacl FROM pg_namespace WHERE nspname = %(s)s)
        SELECT md5(concat_ws('|',
          (SELECT nspacl::text FROM n),
          (SELECT string_agg(concat_ws(':', c.relname, c.relkind, c.relnatts, c.relchecks,
                                       c.relhastriggers, c.relacl), ',' ORDER BY c.relname)
             FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM n)),
          (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM n))))
        """,
        {"s": schema},
    ).fetchone()
    assert row is not None
    return str(row[0])


@dataclass(frozen=True, slots=True)
class _Template:
    """A freshly migrated schema, as the pool checks and restores one."""

    fingerprint: str
    tables: tuple[str, ...]
    sequences: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...], tuple[tuple[Any, ...], ...]], ...]


@cache
def _template() -> _Template:
    """What the migrations make: read once from a schema they were replayed into."""
    server = discover_postgresql()
    assert server.url is not None
    schema = f"k_template_{os.getpid()}_{secrets.token_hex(4)}"
    with _admin_connection(server.url) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            with _admin_connection(_with_search_path(server.url, schema)) as conn:
                _replay(conn)
            tables = tuple(
                str(r[0])
                for r in admin.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename",
                    (schema,),
                )
            )
            sequences = tuple(
                str(r[0])
                for r in admin.execute(
                    "SELECT sequencename FROM pg_sequences WHERE schemaname = %s", (schema,)
                )
            )
            rows = []
            for table in tables:
                cursor = admin.execute(
                    sql.SQL("SELECT * FROM {}.{}").format(
                        sql.Identifier(schema), sql.Identifier(table)
                    )
                )
                found = tuple(tuple(r) for r in cursor.fetchall())
                if found:
                    columns = tuple(str(d.name) for d in cursor.description or ())
                    rows.append((table, columns, found))
            return _Template(_fingerprint(admin, schema), tables, sequences, tuple(rows))
        finally:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def _give_back(admin: psycopg.Connection[tuple[object, ...]], schema: str) -> bool:
    """Reset the test's migrated ``schema`` into the pool; ``False`` when it must be
    dropped instead (the pool is full, or the test changed more than rows)."""
    if len(_POOL) >= _POOL_LIMIT:
        return False
    template = _template()
    try:
        if _fingerprint(admin, schema) != template.fingerprint:
            return False
        name = f"k_pool_{os.getpid()}_{secrets.token_hex(4)}"
        with admin.transaction():
            # Foreign keys are triggers: replica mode deletes in any order.
            admin.execute("SET LOCAL session_replication_role = replica")
            admin.execute("SET LOCAL lock_timeout = '5s'")
            for table in template.tables:
                admin.execute(
                    sql.SQL("DELETE FROM {}.{}").format(
                        sql.Identifier(schema), sql.Identifier(table)
                    )
                )
            for table, columns, found in template.rows:
                statement = sql.SQL("INSERT INTO {}.{} ({}) VALUES ({})").format(
                    sql.Identifier(schema),
                    sql.Identifier(table),
                    sql.SQL(", ").join(sql.Identifier(c) for c in columns),
                    sql.SQL(", ").join(sql.Placeholder() for _ in columns),
                )
                with admin.cursor() as cursor:
                    cursor.executemany(statement, found)
            for sequence in template.sequences:
                admin.execute(
                    sql.SQL("ALTER SEQUENCE {}.{} RESTART").format(
                        sql.Identifier(schema), sql.Identifier(sequence)
                    )
                )
            admin.execute(
                sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                    sql.Identifier(schema), sql.Identifier(name)
                )
            )
    except psycopg.Error:
        return False
    _POOL.append(name)
    return True


@atexit.register
def _drop_pool() -> None:
    """This process's pooled schemas, dropped when it ends."""
    if not _POOL:
        return
    server = discover_postgresql()
    if server.url is None:
        return
    try:
        with _admin_connection(server.url) as admin:
            for name in _POOL:
                admin.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )
    except psycopg.Error:
        pass
    _POOL.clear()


@cache
def _sqlite_template() -> Path:
    """A SQLite file the migrations brought to the newest schema (its log checkpointed
    into it, so that the one file is the whole database)."""
    path = Path(tempfile.mkdtemp(prefix="kalends-template-")) / "template.sqlite3"
    engine = create_engine_for(f"sqlite:///{path}")
    try:
        upgrade(engine)
        with engine.connect() as conn:
            conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
    finally:
        engine.dispose()
    return path


Statement = tuple[str, Any, bool]


@cache
def _postgresql_script() -> tuple[Statement, ...]:
    """Every statement the migrations sent to an empty schema, with its parameters, in
    order (the schema is dropped afterwards)."""
    sent: list[Statement] = []

    def record(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        bare = context is not None and getattr(context, "no_parameters", False)
        sent.append((statement, None if bare else parameters, many))

    with tempfile.TemporaryDirectory() as directory, provision("postgresql", Path(directory)) as t:
        engine = t.engine()
        event.listen(engine, "before_cursor_execute", record)
        try:
            upgrade(engine)
        finally:
            event.remove(engine, "before_cursor_execute", record)
    return tuple(sent)


# --- empty databases brought to the newest schema from the template ---------------------
#
# Many tests open their empty database through kalends' own entry points (open_services,
# open_store, the command line run in-process), which run the real migrations: about a
# second on PostgreSQL and a fifth of one on SQLite each time, a quarter of the command
# line tests' time. In a test process, an empty database is brought to the newest schema
# from this process's template instead (which the real migrations made): the SQLite
# template's schema and rows written into it, a PostgreSQL schema this plugin provisioned
# swapped for a pooled migrated one (or the recorded statements replayed into it), under
# the lock the migrations take. A database with any table migrates for real, as does
# every database a subprocess opens; the ``real_migrations`` fixture turns the template
# off for a test (the migration tests use it).

_PROVISIONED: dict[str, StorageTarget] = {}
"""The PostgreSQL targets this process provisioned and has not removed, by schema."""
_FROM_TEMPLATE = [True]


@pytest.fixture
def real_migrations() -> Iterator[None]:
    """Empty databases are migrated by the real migrations during the test."""
    _FROM_TEMPLATE[0] = False
    try:
        yield
    finally:
        _FROM_TEMPLATE[0] = True


def _template_upgrade(engine_or_url: Engine | str) -> str:
    """:func:`kalends.storage.migrate.upgrade` in a test process: an empty database from
    the template, any other by the real migrations."""
    if not _FROM_TEMPLATE[0]:
        return upgrade(engine_or_url)
    if isinstance(engine_or_url, Engine):
        engine = engine_or_url
    else:
        engine = create_engine_for(resolve_database_url(engine_or_url))
    try:
        filled = _fill_sqlite(engine) if engine.dialect.name == "sqlite" else _fill_pg(engine)
        return migrate.HEAD_REVISION if filled else upgrade(engine)
    finally:
        if engine is not engine_or_url:
            engine.dispose()


def _fill_sqlite(engine: Engine) -> bool:
    """The SQLite template's schema and rows written into the empty database of
    ``engine``, in one write transaction; ``False`` when it is not empty (nothing done)."""
    if engine.url.database in (None, "", ":memory:"):
        return False
    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
                return False
            for statement, rows in _sqlite_script():
                if rows:
                    conn.exec_driver_sql(statement, rows)
                else:
                    conn.exec_driver_sql(statement)
    return True


def _fill_pg(engine: Engine) -> bool:
    """The empty schema of ``engine`` migrated from the template (a provisioned target's
    swapped for a pooled one when the pool has one), under the migrations' lock;
    ``False`` when it is not empty (nothing done)."""
    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            lock_store(conn, migrate.MIGRATION_LOCK_KEY)
            schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
            if schema is None:
                return False
            tables = conn.exec_driver_sql(
                "SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
            ).scalar()
            if tables:
                return False
            target = _PROVISIONED.get(str(schema))
            if target is not None and _POOL:
                server = discover_postgresql()
                assert server.url is not None
                with _admin_connection(server.url) as admin, admin.transaction():
                    pooled = _POOL.pop()
                    admin.execute(sql.SQL("DROP SCHEMA {}").format(sql.Identifier(str(schema))))
                    admin.execute(
                        sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                            sql.Identifier(pooled), sql.Identifier(str(schema))
                        )
                    )
            else:  # (in this transaction: psycopg makes the replay's own a savepoint)
                driver: Any = conn.connection.driver_connection
                _replay(driver)
            if target is not None:
                target.pooled = True
    return True


@cache
def _sqlite_script() -> tuple[tuple[str, list[tuple[Any, ...]] | None], ...]:
    """What makes the SQLite template: its tables, then its indexes, triggers and views,
    as its catalogue states them, and the rows the migrations wrote."""
    import sqlite3  # noqa: PLC0415

    order = {"table": 0, "index": 1, "trigger": 2, "view": 3}
    out: list[tuple[str, list[tuple[Any, ...]] | None]] = []
    with sqlite3.connect(_sqlite_template()) as template:
        made = template.execute(
            "SELECT type, name, sql FROM sqlite_master"
            " WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall()
        made.sort(key=lambda m: order[str(m[0])])
        out.extend((str(m[2]), None) for m in made)
        for kind, name, _ in made:
            if kind != "table":
                continue
            rows = template.execute(f'SELECT * FROM "{name}"').fetchall()
            if rows:
                marks = ", ".join("?" for _ in rows[0])
                out.append((f'INSERT INTO "{name}" VALUES ({marks})', rows))
    return tuple(out)


def pytest_configure(config: pytest.Config) -> None:
    pytest.MonkeyPatch().setattr(migrate, "upgrade", _template_upgrade)


# With pytest-xdist the tests run in worker processes: each reports the backends it
# ran on to the controller, which prints the one line for the whole run.
_WORKER_RAN = "kalends_backends_ran"
_WORKER_LEFT_OUT = "kalends_backends_left_out"


_CATALOGS = (
    "pg_class", "pg_attribute", "pg_attrdef", "pg_depend", "pg_type", "pg_constraint",
    "pg_index", "pg_namespace", "pg_sequence", "pg_statistic",
)  # fmt: skip
_CATALOG_REWRITE_BYTES = 16 * 1024 * 1024


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before any test (in the controller only): vacuum the catalogs of the PostgreSQL test
    database. Every schema a test makes and drops leaves dead catalog rows, and a server
    without autovacuum keeps them for good: each run's schemas would be slower to make
    than the last's. A catalog grown past :data:`_CATALOG_REWRITE_BYTES` is rewritten
    (``VACUUM FULL``, before the workers start); the others are vacuumed in place.

    The test database's commits then stop waiting for the server's log to reach the disk
    (``synchronous_commit = off`` for its new sessions): the tests kill client processes,
    never the server, and a commit is as visible and as atomic as with the wait (the
    PostgreSQL tests ran 15% faster)."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        return
    server = discover_postgresql()
    if server.url is None:
        return
    try:
        with _admin_connection(server.url) as admin:
            for catalog in _CATALOGS:
                row = admin.execute("SELECT pg_relation_size(%s::regclass)", (catalog,)).fetchone()
                size = int(str(row[0])) if row is not None else 0
                full = sql.SQL("FULL ") if size > _CATALOG_REWRITE_BYTES else sql.SQL("")
                admin.execute(
                    sql.SQL("VACUUM {}pg_catalog.{}").format(full, sql.Identifier(catalog))
                )
            database = make_url(server.url).database or "postgres"
            admin.execute(
                sql.SQL("ALTER DATABASE {} SET synchronous_commit = off").format(
                    sql.Identifier(database)
                )
            )
    except psycopg.Error:
        pass  # (not the database's owner: the tests run all the same, only slower)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if isinstance(workeroutput, dict):
        ran: set[str] = session.config.stash.get(_RAN, set())
        workeroutput[_WORKER_RAN] = sorted(ran)
        left_out = session.config.stash.get(_LEFT_OUT, None)
        if left_out is not None:
            workeroutput[_WORKER_LEFT_OUT] = left_out


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    output = getattr(node, "workeroutput", None) or {}
    config: pytest.Config = node.config
    config.stash.setdefault(_RAN, set()).update(output.get(_WORKER_RAN, ()))
    if _WORKER_LEFT_OUT in output:
        config.stash[_LEFT_OUT] = output[_WORKER_LEFT_OUT]


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    ran = config.stash.get(_RAN, set())
    if not ran:
        return
    line = "storage backends: " + ", ".join(name for name in BACKENDS if name in ran)
    left_out = config.stash.get(_LEFT_OUT, None)
    if left_out is not None and "postgresql" not in ran:
        line += f" ({left_out})"
    terminalreporter.write_line(line)


def _admin_connection(url: str) -> psycopg.Connection[tuple[object, ...]]:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=PROBE_TIMEOUT_SECONDS)


def _with_search_path(url: str, schema: str) -> str:
    parsed = make_url(url)
    existing = parsed.query.get("options")
    options = f"-csearch_path={schema}"
    if isinstance(existing, str):
        options = f"{existing} {options}"
    return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)


Snapshot = dict[str, list[tuple[Any, ...]]]

# Using a credential records when it was last used (at most once a minute): that is
# the credential's bookkeeping, not an effect of the request it authenticated, so a
# refused request may still move these columns.
CREDENTIAL_BOOKKEEPING = {
    "api_tokens": frozenset({"last_used_at"}),
    "auth_sessions": frozenset({"last_seen_at", "expires_at"}),
}


def snapshot(store: Store) -> Snapshot:
    """Every row of every table kalends knows, in a stable order (without the
    :data:`CREDENTIAL_BOOKKEEPING` columns)."""
    with store.transaction(write=False) as conn:
        return {
            name: sorted((tuple(row) for row in read.rows(conn)), key=repr)
            for name, read in _table_reads()
        }


@cache
def _table_reads() -> tuple[tuple[str, Prepared], ...]:
    """Each table's read for :func:`snapshot`, run on the driver: tests take thousands of
    snapshots, and SQLAlchemy's own execution took half of some files' time."""
    reads = []
    for table in metadata.sorted_tables:
        skip = CREDENTIAL_BOOKKEEPING.get(table.name, frozenset())
        reads.append(
            (table.name, Prepared(select(*(c for c in table.columns if c.name not in skip))))
        )
    return tuple(reads)


@contextmanager
def nothing_written(store: Store) -> Iterator[None]:
    """Asserts that the block changes no row of any table (put it outside ``pytest.raises``)."""
    before = snapshot(store)
    yield
    after = snapshot(store)
    changed = sorted(name for name in before if before[name] != after[name])
    assert not changed, f"rows changed in {changed}"


@contextmanager
def statements_sent(engine: Engine, starting: str) -> Iterator[list[str]]:
    """The statements the block sends on ``engine`` that start with ``starting``, in
    order (SQLAlchemy's and the driver-level ones of :mod:`kalends.storage.prepared`)."""
    seen: list[str] = []

    def watch(*args: Any) -> None:
        if str(args[2]).startswith(starting):
            seen.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", watch)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", watch)
