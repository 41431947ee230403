"""Creating SQLAlchemy engines configured the way kalends relies on.

SQLite: WAL journal, foreign keys on, a busy timeout, and SQLAlchemy's documented
recipe that stops pysqlite from emitting its own ``BEGIN``: the DBAPI connection
runs with ``isolation_level=None`` and the engine's ``begin`` event emits
``BEGIN IMMEDIATE`` for write transactions (the write lock is taken up front) or
a deferred ``BEGIN`` for reads. Transactional DDL and savepoints then behave.
The execution option :data:`WRITE_OPTION` chooses: true for a write, false for
a read (made read-only with ``PRAGMA query_only``, as PostgreSQL's ``READ ONLY``),
absent for a plain deferred read-write transaction.

A new SQLite file is created ``0600`` before SQLite opens it, so its ``-wal`` and
``-shm`` files, which SQLite gives the database file's mode, are private too.

PostgreSQL: psycopg 3, ``pool_pre_ping``, and ``lock_timeout`` set to the same
busy timeout so a blocked statement reports "lock not available" instead of
waiting forever; the unit of work retries it like SQLite's ``SQLITE_BUSY``.

Either way :func:`renew_connections` makes every connection opened so far reconnect
before its next use: a SQLite connection keeps the access its file allowed when it
was opened (one opened while the file was read-only stays read-only), and a
PostgreSQL one stays with the server it reached.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Engine, create_engine, event
from sqlalchemy import exc as exc_module
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.pool import ConnectionPoolEntry

from kalends.config import normalize_database_url
from kalends.errors import InvalidInput

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_MS",
    "NOWAIT_OPTION",
    "SQLITE_FILE_MODE",
    "WRITE_OPTION",
    "create_engine_for",
    "dialect_name",
    "is_renewed",
    "renew_connections",
]

DEFAULT_BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another writer's lock before the database reports busy."""

WRITE_OPTION = "kalends_write"
"""Execution option read by the ``begin`` hook: true for a write, false for a read-only one."""

NOWAIT_OPTION = "kalends_nowait"
"""Execution option read by SQLite's ``begin`` hook: true, a write transaction that cannot
take the write lock at once fails busy instead of waiting for it (a caller that must not
block). PostgreSQL ignores it."""

SQLITE_FILE_MODE = 0o600
"""The mode of a SQLite file kalends creates (SQLite gives ``-wal`` and ``-shm`` the same)."""

_WAL_RETRY_SECONDS = 0.01
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def create_engine_for(
    url: str,
    *,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    schema: str | None = None,
    echo: bool = False,
) -> Engine:
    """Return an engine for ``url`` (normalised by :mod:`kalends.config`).

    ``schema`` (PostgreSQL only) sets the connections' ``search_path``, so every
    unqualified table, including Alembic's version table, lives in that schema.
    """
    if busy_timeout_ms < 0:
        raise InvalidInput("busy_timeout_ms must be zero or more", field="busy_timeout_ms")
    normalized = normalize_database_url(url)
    parsed = make_url(normalized)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if schema is not None:
            raise InvalidInput("schema applies to PostgreSQL only", field="schema")
        # ``?synchronous=full`` on a SQLite URL: fsync every commit, not only checkpoints.
        synchronous = str(parsed.query.get("synchronous", SQLITE_SYNCHRONOUS)).upper()
        if synchronous not in SQLITE_SYNCHRONOUS_LEVELS:
            raise InvalidInput(
                f"database: synchronous must be one of {', '.join(SQLITE_SYNCHRONOUS_LEVELS)}",
                field="database",
            )
        bare = parsed.difference_update_query(["synchronous"])
        engine = _sqlite_engine(
            bare.render_as_string(hide_password=False), busy_timeout_ms, echo, synchronous
        )
    else:
        engine = _postgresql_engine(normalized, busy_timeout_ms, schema, echo)
    _track_generations(engine)
    return engine


SQLITE_SYNCHRONOUS = "NORMAL"
"""SQLite durability by default: WAL with ``synchronous=NORMAL`` (``?synchronous=full``: more)."""
SQLITE_SYNCHRONOUS_LEVELS = ("NORMAL", "FULL", "EXTRA")

SQLITE_CACHE_KIB = 65_536
"""The page cache of each SQLite connection, in KiB (SQLite allocates it as it fills)."""


def dialect_name(bind: Engine | Connection) -> str:
    """Return ``"sqlite"`` or ``"postgresql"`` for an engine or connection."""
    return bind.dialect.name


class _Generation:
    """How many times an engine's connections were renewed; a connection remembers the
    count it was opened at (:func:`is_renewed`)."""

    __slots__ = ("count", "lock")

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()


_GENERATIONS: WeakKeyDictionary[Engine, _Generation] = WeakKeyDictionary()
_GENERATION_KEY = "kalends_generation"


def renew_connections(engine: Engine) -> None:
    """Make every connection ``engine`` opened until now give way to a new one.

    The pool is replaced (SQLAlchemy's ``dispose``): its idle connections close now and
    each checkout opens a new one. A connection checked out now belongs to the old pool:
    its holder asks :func:`is_renewed` and closes it for good (``invalidate``) instead of
    giving it back, as :class:`kalends.storage.unit_of_work.Store` does.
    """
    generation = _GENERATIONS.get(engine)
    if generation is not None:
        with generation.lock:
            generation.count += 1
    engine.dispose()


def is_renewed(connection: Connection) -> bool:
    """Whether :func:`renew_connections` was called on the engine (one made by
    :func:`create_engine_for`) since ``connection`` (not invalidated) was opened: its
    holder should close it and take another."""
    generation = _GENERATIONS.get(connection.engine)
    if generation is None or not generation.count:
        return False
    opened = connection.connection.info.get(_GENERATION_KEY, 0)
    return bool(opened < generation.count)


def _track_generations(engine: Engine) -> None:
    generation = _GENERATIONS[engine] = _Generation()

    @event.listens_for(engine, "connect")
    def _opened(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info[_GENERATION_KEY] = generation.count


# Connections kept open per SQLite engine: the server's request threads (40) plus its
# background loops; more may open under a burst and are closed on return.
SQLITE_POOL_SIZE = 48
SQLITE_POOL_OVERFLOW = 16


def _sqlite_engine(url: str, busy_timeout_ms: int, echo: bool, synchronous: str) -> Engine:
    # The sqlite3 ``timeout`` is the same busy handler as the pragma; keep them equal.
    database = make_url(url).database
    engine = create_engine(
        url,
        echo=echo,
        connect_args={"timeout": busy_timeout_ms / 1000},
        # A server runs each request in a pool of threads (40 by default): keep a
        # connection for each, or every extra one is opened (PRAGMAs, a cold page
        # cache) and closed again per request.
        pool_size=SQLITE_POOL_SIZE,
        max_overflow=SQLITE_POOL_OVERFLOW,
    )

    if database and database != ":memory:" and not database.startswith("file:"):
        path = Path(database)

        @event.listens_for(engine, "do_connect")
        def _create_private(*_args: Any) -> None:
            _create_private_file(path)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        # Take BEGIN away from pysqlite: it would skip it for SELECT and DDL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            _enable_wal(cursor, busy_timeout_ms)
            cursor.execute("PRAGMA foreign_keys = ON")
            # NORMAL is durable across application crashes in WAL mode; FULL also across
            # power loss (each commit waits for the disk).
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
            # A page cache of SQLITE_CACHE_KIB per connection instead of SQLite's 2 MiB:
            # a 500-task checklist copy touches index pages all over a large database.
            cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
            cursor.execute("PRAGMA temp_store = MEMORY")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION)
        # query_only outlives the transaction on a pooled connection: the connection's
        # record remembers it, and it is set whenever the next transaction wants another.
        query_only = write is False
        state = connection.connection.info
        if state.get("query_only") is not query_only:
            connection.exec_driver_sql(f"PRAGMA query_only = {'ON' if query_only else 'OFF'}")
            state["query_only"] = query_only
        # Straight to the driver (every transaction runs this): its error is wrapped as
        # SQLAlchemy's own, so a busy database is recognised and retried as usual.
        begin = "BEGIN IMMEDIATE" if write else "BEGIN"
        driver = connection.connection.driver_connection
        nowait = write and connection.get_execution_options().get(NOWAIT_OPTION)
        try:
            if nowait:
                driver.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
                try:
                    driver.execute(begin)  # type: ignore[union-attr]
                finally:
                    driver.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")  # type: ignore[union-attr]
            else:
                driver.execute(begin)  # type: ignore[union-attr]
        except sqlite3.Error as exc:
            raise exc_module.DBAPIError.instance(
                begin, None, exc, sqlite3.Error, dialect=connection.dialect
            ) from exc

    return engine


def _create_private_file(path: Path) -> None:
    """Creates ``path`` empty (an empty file is an empty SQLite database) with
    :data:`SQLITE_FILE_MODE`, unless it exists; SQLite would create it ``0644``."""
    if path.exists():
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, SQLITE_FILE_MODE)
    except FileExistsError:
        return  # another connection created it first
    except OSError:
        return  # SQLite reports why it cannot open the file, as it always did
    try:
        os.fchmod(fd, SQLITE_FILE_MODE)  # whatever the umask
    finally:
        os.close(fd)


def _enable_wal(cursor: sqlite3.Cursor, busy_timeout_ms: int) -> None:
    # The WAL switch is persistent, and SQLite answers it "database is locked" at
    # once, without the busy handler, while another connection is switching too.
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while cursor.execute("PRAGMA journal_mode").fetchone() != ("wal",):
        try:
            cursor.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_WAL_RETRY_SECONDS)


def _postgresql_engine(url: str, busy_timeout_ms: int, schema: str | None, echo: bool) -> Engine:
    parsed = make_url(url)
    # connect_args replace the URL's own ``options``: keep those, e.g. a search_path.
    existing = parsed.query.get("options")
    options = [existing] if isinstance(existing, str) else []
    # lock_timeout=0 would mean "wait forever" on PostgreSQL, unlike SQLite.
    options.append(f"-c lock_timeout={max(1, int(busy_timeout_ms))}")
    if schema is not None:
        if not _SCHEMA_NAME.match(schema):
            raise InvalidInput(f"schema {schema!r} is not a plain SQL identifier", field="schema")
        options.append(f"-c search_path={schema}")
    connect_args: dict[str, Any] = {"options": " ".join(options)}
    return create_engine(url, echo=echo, pool_pre_ping=True, connect_args=connect_args)
