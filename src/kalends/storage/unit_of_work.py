"""The unit of work: one database transaction per operation, retried when busy.

:meth:`Store.transaction` commits only on a clean exit and rolls back on any
exception (but one marked by :func:`keeping_writes`). On SQLite a write
transaction begins with ``BEGIN IMMEDIATE``, so the write lock is taken before
the first read and a read-then-write can never fail half-way on a lock upgrade;
a read transaction begins deferred. On
PostgreSQL transactions are ordinary ``READ COMMITTED`` ones; claims lock rows
with :func:`for_update`. Read transactions are read-only on both backends.

:meth:`Store.run` is the entry point for services: it runs a callable in a
transaction and, when the database is busy (SQLite ``SQLITE_BUSY``/``LOCKED``,
PostgreSQL serialization failure, deadlock or lock timeout), rolls back and
runs the callable again, up to :data:`MAX_ATTEMPTS` times in all.

A write that fails because the database refused to be written (SQLite: read-only or
I/O errors; PostgreSQL: a server that became read-only, such as a standby after a
failover) renews every connection (:func:`kalends.storage.engine.renew_connections`):
a SQLite connection opened while the file was read-only stays read-only even once the
file is writable again, and a PostgreSQL one stays with the server it reached.
:meth:`Store.run` then runs the callable once more on a new connection, so the first
write after the cause is gone succeeds. :meth:`Store.accepts_writes` tells readiness
whether a write would succeed now.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Engine, insert, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, OperationalError, StatementError
from sqlalchemy.sql.selectable import GenerativeSelect

from kalends.clock import Clock, SystemClock
from kalends.errors import DatabaseBusy, InvalidInput, KalendsError, StorageError
from kalends.storage.engine import (
    NOWAIT_OPTION,
    WRITE_OPTION,
    create_engine_for,
    is_renewed,
    renew_connections,
)
from kalends.storage.schema import kalends_meta

__all__ = [
    "BACKOFF_BASE_SECONDS",
    "BACKOFF_MAX_SECONDS",
    "MAX_ATTEMPTS",
    "Store",
    "for_update",
    "is_busy_error",
    "keeping_writes",
    "lock_store",
    "refused_write",
    "translate_error",
]

MAX_ATTEMPTS = 5
"""How many times :meth:`Store.run` tries a busy transaction before raising DatabaseBusy."""

BACKOFF_BASE_SECONDS = 0.02
BACKOFF_MAX_SECONDS = 0.5

_SQLITE_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
# The file refused the write, or reading or opening it failed: the connection may be stale.
_SQLITE_REFUSED_CODES = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN}
# serialization_failure, deadlock_detected, lock_not_available
_POSTGRES_BUSY_STATES = {"40001", "40P01", "55P03"}
_POSTGRES_READ_ONLY_STATE = "25006"
_POSTGRES_NO_PRIVILEGE_STATE = "42501"

T = TypeVar("T")
S = TypeVar("S", bound=GenerativeSelect)
E = TypeVar("E", bound=BaseException)

_KEEPS_WRITES = "__kalends_keeps_writes__"


def keeping_writes(error: E) -> E:
    """``error``, marked so that every transaction it leaves commits what was written in it
    instead of rolling it back: for a refusal whose own record must outlive it (a
    schedule control refused, its refusal recorded under its request ID). Raise it only
    when each write before it in the transaction is one that must stand; if the commit
    fails, that failure is raised instead and nothing is written."""
    setattr(error, _KEEPS_WRITES, True)
    return error


def _keeps_writes(error: BaseException) -> bool:
    return getattr(error, _KEEPS_WRITES, False) is True


def for_update(stmt: S, *, skip_locked: bool = False) -> S:
    """Return ``stmt`` locking the rows it selects until the transaction ends.

    On PostgreSQL this renders ``FOR UPDATE [SKIP LOCKED]``; SQLite has no row
    locks and renders nothing, its ``BEGIN IMMEDIATE`` already holding the
    database's single write lock.
    """
    return stmt.with_for_update(skip_locked=skip_locked)


_STORE_LOCK = text("SELECT pg_advisory_xact_lock(:key, hashtext(coalesce(current_schema(), '')))")


def lock_store(conn: Connection, key: int) -> None:
    """Serialise the transactions that take ``key`` (a 32-bit number) on this store until
    the transaction ends. On PostgreSQL an advisory lock named by ``key`` and the schema
    the store lives in, so stores in other schemas of the database never wait for it;
    SQLite's ``BEGIN IMMEDIATE`` already serialises every writer."""
    if conn.dialect.name == "postgresql":
        conn.execute(_STORE_LOCK, {"key": key})


def is_busy_error(exc: BaseException) -> bool:
    """Tell whether ``exc`` means "another transaction holds a lock: try again"."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    if isinstance(orig, sqlite3.OperationalError):
        code = getattr(orig, "sqlite_errorcode", None)
        if code is not None:
            return (code & 0xFF) in _SQLITE_BUSY_CODES
        message = str(orig).lower()
        return "database is locked" in message or "database table is locked" in message
    return getattr(orig, "sqlstate", None) in _POSTGRES_BUSY_STATES


def refused_write(exc: BaseException) -> bool:
    """Tell whether ``exc``, raised in a write transaction, means "the database refused to be
    written": SQLite read-only, I/O and cannot-open errors, PostgreSQL's read-only state
    (``25006``, in a transaction begun read-write). In a read transaction the same errors
    are the transaction's own read-only mode at work, not this.

    ``exc`` is a driver's error, SQLAlchemy's wrapper of one, or the :class:`StorageError`
    :func:`translate_error` made of that wrapper.
    """
    if isinstance(exc, StorageError):
        cause = exc.__cause__
        return isinstance(cause, DBAPIError) and refused_write(cause)
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    code = getattr(orig, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _SQLITE_REFUSED_CODES
    if isinstance(orig, sqlite3.OperationalError):
        return "readonly database" in str(orig).lower()
    return getattr(orig, "sqlstate", None) == _POSTGRES_READ_ONLY_STATE


class _WriteProbed(Exception):
    """The write probe wrote its row: roll it back."""


@dataclass(slots=True)
class _Active:
    connection: Connection
    write: bool
    savepoints: bool


@dataclass(slots=True)
class _Kept:
    """The connection one thread's outermost transactions reuse (:meth:`Store.keep_connection`)."""

    thread: int
    connection: Connection | None = None
    busy: bool = False


class Store:
    """The database of one kalends instance: an engine, a clock and the unit of work.

    Safe to share between threads: each outermost transaction checks out its
    own connection; nesting is tracked per thread (per context).
    """

    def __init__(
        self,
        engine: Engine,
        clock: Clock | None = None,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise InvalidInput("max_attempts must be at least 1", field="max_attempts")
        self.engine = engine
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.dialect: str = engine.dialect.name
        self.max_attempts = max_attempts
        self._sleep = sleep
        self._active: ContextVar[_Active | None] = ContextVar(f"kalends-store-{id(self)}")
        self._kept: _Kept | None = None

    def __repr__(self) -> str:
        return f"Store({self.engine.url.render_as_string(hide_password=True)!r})"

    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread is inside one of this store's transactions."""
        return self._active.get(None) is not None

    @contextmanager
    def keep_connection(self) -> Iterator[None]:
        """Within this block the calling thread's outermost transactions reuse one
        connection instead of taking one from the pool and giving it back each time
        (about half of what an empty transaction costs): for the one thread that runs
        most transactions, a server's event loop. Another thread's transactions, and one
        begun while the kept connection is in a transaction, take one from the pool as
        before. While another thread keeps one, this block keeps none."""
        if self._kept is not None:
            yield
            return
        kept = self._kept = _Kept(threading.get_ident())
        try:
            yield
        finally:
            self._kept = None
            if kept.connection is not None:
                _give_back(kept.connection)

    def _connect(self) -> tuple[Connection, _Kept | None]:
        """A connection for an outermost transaction, and the keeper it came from."""
        kept = self._kept
        if kept is None or kept.busy or kept.thread != threading.get_ident():
            return self.engine.connect(), None
        if (
            kept.connection is not None
            and not kept.connection.closed
            and not kept.connection.invalidated
            and is_renewed(kept.connection)
        ):
            _give_back(kept.connection)
            kept.connection = None
        if kept.connection is None or kept.connection.closed or kept.connection.invalidated:
            kept.connection = self.engine.connect()
        kept.busy = True
        return kept.connection, kept

    @contextmanager
    def transaction(
        self, write: bool = True, *, wait: bool = True, savepoints: bool = True
    ) -> Iterator[Connection]:
        """Yield a connection inside a transaction; commit on a clean exit or on an error
        marked by :func:`keeping_writes`, else roll back.

        Inside a running transaction a write block opens a SAVEPOINT instead, rolled
        back alone if the block raises; a read block joins the running transaction as
        it is. A write transaction cannot nest inside a read one. Busy errors become
        :class:`DatabaseBusy`, other operational errors :class:`StorageError`; either
        way nothing was written. Not retried: use :meth:`run` for that.

        A write the database refused (:func:`refused_write`) renews every connection,
        this one first. Without ``wait``, a SQLite write transaction whose write lock
        another connection holds fails busy at once instead of waiting for it. Without
        ``savepoints`` the write blocks nested in this transaction open none: for a
        caller that lets any failure inside end the whole transaction (a savepoint costs
        a SAVEPOINT and a RELEASE, as much as two statements).
        """
        active = self._active.get(None)
        if active is not None:
            if write and not active.write:
                raise StorageError("a write transaction cannot be nested inside a read transaction")
            if not write or not active.savepoints:
                # A read has nothing to roll back, and without savepoints a failure rolls
                # back the whole transaction: no SAVEPOINT.
                yield active.connection
                return
            with active.connection.begin_nested() as savepoint:
                try:
                    yield active.connection
                except BaseException as exc:
                    if _keeps_writes(exc) and savepoint.is_active:
                        savepoint.commit()
                    raise
            return
        try:
            connection, kept = self._connect()
        except StatementError as exc:  # the database could not be opened
            translated = translate_error(exc)
            if translated is None:
                raise
            raise translated from exc
        try:
            options: dict[str, Any] = {WRITE_OPTION: write, NOWAIT_OPTION: not wait}
            if self.dialect == "postgresql":
                options["postgresql_readonly"] = not write
            connection.execution_options(**options)
            token = self._active.set(_Active(connection, write, savepoints))
            try:
                with connection.begin() as transaction:
                    try:
                        yield connection
                    except BaseException as exc:
                        if _keeps_writes(exc) and transaction.is_active:
                            transaction.commit()
                        raise
            finally:
                self._active.reset(token)
        except StatementError as exc:
            if write and refused_write(exc):
                if not connection.invalidated:
                    connection.invalidate(exc)
                renew_connections(self.engine)
            translated = translate_error(exc)
            if translated is None:
                raise
            raise translated from exc
        finally:
            if kept is None:
                _give_back(connection)
            else:
                kept.busy = False
                if connection.invalidated:
                    connection.close()
                    kept.connection = None

    def run(
        self,
        fn: Callable[[Connection], T],
        *,
        write: bool = True,
        wait: bool = True,
        savepoints: bool = True,
    ) -> T:
        """Return ``fn(connection)`` run in a transaction, retried whole while busy.

        ``fn`` may run several times, so it must have no effect outside the
        database. After :attr:`max_attempts` busy attempts this raises
        :class:`DatabaseBusy` with nothing written. Inside a running transaction
        ``fn`` runs once in a savepoint; the outermost ``run`` does the retrying.

        A write the database refused (:func:`refused_write`) runs once more, on a new
        connection: the first one may have been opened while the database was read-only.

        Without ``wait`` it is not retried when busy, and on SQLite a write lock held
        elsewhere is not waited for: :class:`DatabaseBusy` at once, nothing written.
        ``savepoints`` is :meth:`transaction`'s, for the outermost transaction.
        """
        if self.in_transaction:
            with self.transaction(write) as connection:
                return fn(connection)
        attempt = 1
        reconnected = False
        while True:
            try:
                with self.transaction(write, wait=wait, savepoints=savepoints) as connection:
                    return fn(connection)
            except DatabaseBusy as exc:
                if not wait:
                    raise
                if attempt >= self.max_attempts:
                    raise DatabaseBusy(
                        f"the database stayed busy through {attempt} attempts; nothing was written",
                        attempts=attempt,
                    ) from exc
                self._sleep(_backoff(attempt))
                attempt += 1
            except StorageError as exc:
                if reconnected or not write or not refused_write(exc):
                    raise
                reconnected = True

    def accepts_writes(self) -> bool:
        """Whether a write would succeed now: a write transaction inserts a row into
        ``kalends_meta`` and is rolled back. A database busy with another writer accepts
        writes (the probe does not wait for it). A refused probe renews every connection,
        so the writes that follow answer as the probe did.

        On SQLite the probe opens a connection of its own: an open connection keeps the
        access the file allowed when it was opened, so only a new one tells whether the
        file may be written now. On PostgreSQL a pooled connection tells.
        """

        def probe(conn: Connection) -> None:
            key = f"kalends.write-probe.{uuid.uuid4().hex}"
            conn.execute(insert(kalends_meta).values(key=key, value=""))
            raise _WriteProbed

        prober = self
        database = self.engine.url.database
        if self.dialect == "sqlite" and database and database != ":memory:":
            engine = create_engine_for(self.engine.url.render_as_string(hide_password=False))
            prober = Store(engine, self.clock, max_attempts=1)
        try:
            prober.run(probe, wait=False)
        except _WriteProbed:
            return True
        except DatabaseBusy:
            return True
        except StorageError as exc:
            if refused_write(exc):
                renew_connections(self.engine)
            return False
        finally:
            if prober is not self:
                prober.close()
        return False  # pragma: no cover (the probe always raises)

    def close(self) -> None:
        """Close every pooled connection; the store may still be used afterwards."""
        self.engine.dispose()


def translate_error(exc: StatementError) -> KalendsError | None:
    """Return the kalends error a SQLAlchemy error means, or ``None`` to let it through.

    A kalends error raised while binding parameters (a naive datetime) is itself.
    """
    if isinstance(exc.orig, KalendsError):
        return exc.orig
    if not isinstance(exc, DBAPIError):
        return None
    if is_busy_error(exc):
        return DatabaseBusy(
            "the database is busy (locked by another transaction); nothing was written: "
            + _one_line(exc.orig)
        )
    if getattr(exc.orig, "sqlstate", None) == _POSTGRES_READ_ONLY_STATE or _is_sqlite_readonly(exc):
        return StorageError(
            f"cannot write: the transaction or the database is read-only: {_one_line(exc.orig)}"
        )
    if getattr(exc.orig, "sqlstate", None) == _POSTGRES_NO_PRIVILEGE_STATE:
        return StorageError(
            f"the database refused kalends' role the privilege: {_one_line(exc.orig)}"
        )
    if isinstance(exc, OperationalError):
        return StorageError(f"the database could not complete the operation: {_one_line(exc.orig)}")
    return None


def _give_back(connection: Connection) -> None:
    """Closes ``connection``: back to its pool, or for good if its pool was renewed since
    it was opened (that pool is no longer the engine's, and would keep it open)."""
    if not connection.invalidated and is_renewed(connection):
        connection.invalidate()
    connection.close()


def _one_line(error: BaseException | None) -> str:
    return " ".join(str(error).split())


def _is_sqlite_readonly(exc: DBAPIError) -> bool:
    code = getattr(exc.orig, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) == sqlite3.SQLITE_READONLY


def _backoff(attempt: int) -> float:
    ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
    # Jitter keeps contending writers from retrying in lockstep.
    return random.uniform(ceiling / 2, ceiling)
