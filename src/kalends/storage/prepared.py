"""Statements of the hot paths, compiled once per database and run on the driver's own
cursor, inside the caller's transaction.

SQLAlchemy spends 15-45 us on each execution of a statement before and after the
database's own work (the execution context, parameter and result set-up, events, a Row
per row): for the credential check and a few reads that every request makes, that is
more than the reads themselves (a token lookup: 28 us, of which SQLite's part is 3).
A :class:`Prepared` statement is still a SQLAlchemy Core statement, compiled by
SQLAlchemy for the connection's dialect the first time it runs there; each run then
converts the parameters with the statement's own bind processors, hands the SQL to the
driver and converts the columns with their types' result processors, as SQLAlchemy
would, and nothing else. Driver errors are translated as the unit of work translates
them (a busy database is :class:`~kalends.errors.DatabaseBusy`).

Listeners of ``before_cursor_execute`` still see each statement (with no cursor nor
execution context), so statements can be counted. What it leaves out, on purpose:
statement logging (``echo``), the other execution events, and ``IN`` lists expanded at
run time (refused when prepared: bind a fixed shape).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any
from uuid import UUID

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Table,
    TypeDecorator,
    Uuid,
    bindparam,
    insert,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.type_api import TypeEngine

from kalends.storage.unit_of_work import translate_error

__all__ = ["COPY_ROWS", "Prepared", "inserting", "run_sql", "unnest_of", "unnest_params"]

Processor = Callable[[Any], Any]
_NO_PARAMS: Mapping[str, Any] = {}
COPY_ROWS = 8
"""From this many rows on PostgreSQL, :func:`inserting`'s statement copies them in."""
# Values whose conversion :meth:`Prepared.many` reuses when they recur (equal values of
# these types convert alike).
_MEMO_TYPES = frozenset({datetime, UUID, str})


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    # Positional drivers (SQLite): the bind names in placeholder order; else None.
    order: tuple[str, ...] | None
    # The driver's name of each bind (named drivers escape some names).
    names: dict[str, str]
    defaults: dict[str, Any]
    binds: dict[str, Processor | None]
    # One processor per column (None: as the driver gives it), and the row type.
    columns: tuple[Processor | None, ...]
    row: type[tuple[Any, ...]] | None


class Prepared:
    """A Core statement run on the driver: :meth:`rows`, :meth:`first`, :meth:`rowcount`.

    ``typed=False`` leaves every column as the driver gives it (text, numbers): for
    statements whose columns are read as stored. Rows are named tuples (by the columns'
    keys) when typed, plain tuples otherwise.
    """

    def __init__(self, statement: Executable, *, typed: bool = True) -> None:
        if not isinstance(statement, ClauseElement):
            raise TypeError(f"a Core statement is expected, got {type(statement).__name__}")
        self.statement = statement
        self.typed = typed
        self._by_dialect: dict[str, _Compiled] = {}

    def __repr__(self) -> str:
        return f"Prepared({str(self.statement)[:60]!r}...)"

    def _compile(self, dialect: Dialect) -> _Compiled:
        compiled = self.statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)
        binds: dict[str, Processor | None] = {}
        defaults: dict[str, Any] = {}
        for name, bind in compiled.binds.items():
            if bind.expanding:
                raise ValueError(f"{self!r}: bind {name!r} is an expanding IN list")
            binds[name] = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if not bind.required:
                defaults[name] = bind.effective_value
        if "POSTCOMPILE" in compiled.string:
            raise ValueError(f"{self!r}: it has parameters rendered at run time")
        columns: tuple[Processor | None, ...] = ()
        row: type[tuple[Any, ...]] | None = None
        selected = getattr(self.statement, "selected_columns", None)
        if self.typed and selected is not None:
            columns = tuple(
                c.type.dialect_impl(dialect).result_processor(dialect, None) for c in selected
            )
            row = _row_type([c.key for c in selected])
        escaped = getattr(compiled, "escaped_bind_names", None) or {}
        return _Compiled(
            sql=compiled.string,
            order=tuple(compiled.positiontup) if compiled.positiontup is not None else None,
            names={name: escaped.get(name, name) for name in binds},
            defaults=defaults,
            binds=binds,
            columns=columns,
            row=row,
        )

    def _run(self, conn: Connection, params: Mapping[str, Any]) -> Any:
        found = self._found(conn.dialect)
        values = {**found.defaults, **params} if found.defaults else params
        converted: dict[str, Any] = {}
        for name, process in found.binds.items():
            try:
                value = values[name]
            except KeyError:
                raise KeyError(f"{self!r}: no value for bind {name!r}") from None
            converted[name] = process(value) if process is not None else value
        driver_params: Any
        if found.order is not None:
            driver_params = tuple(converted[name] for name in found.order)
        else:
            driver_params = {found.names[name]: value for name, value in converted.items()}
        return found, _execute(conn, found.sql, driver_params)

    def _found(self, dialect: Dialect) -> _Compiled:
        found = self._by_dialect.get(dialect.name)
        if found is None:
            found = self._by_dialect[dialect.name] = self._compile(dialect)
        return found

    def _converted(
        self, found: _Compiled, params: Sequence[Mapping[str, Any]], layout: Sequence[str]
    ) -> list[list[Any]]:
        """Each of ``params`` through the binds' processors, as a list of values in
        ``layout``'s order (bind names); a recurring instant, UUID or text is converted
        once. A bind with no processor (most of them) is only picked."""
        defaults = found.defaults
        binds = found.binds
        pick = _picker(layout)
        steps: list[tuple[int, Processor, dict[Any, Any]]] = [
            (i, process, {}) for i, name in enumerate(layout) if (process := binds[name])
        ]
        rows: list[list[Any]] = []
        for given in params:
            values = {**defaults, **given} if defaults else given
            try:
                row = pick(values)
            except KeyError as exc:
                raise KeyError(f"{self!r}: no value for bind {exc.args[0]!r}") from None
            for i, process, memo in steps:
                value = row[i]
                if value is None:
                    continue
                if type(value) in _MEMO_TYPES:
                    try:
                        row[i] = memo[value]
                    except KeyError:
                        row[i] = memo[value] = process(value)
                else:
                    row[i] = process(value)
            rows.append(row)
        return rows

    def columns(
        self, conn: Connection, params: Sequence[Mapping[str, Any]], names: Sequence[str]
    ) -> list[list[Any]]:
        """The values of ``names`` (binds of the statement) in each of ``params``, converted
        as :meth:`many` converts them, one list per bind: a column of values, for a
        statement that binds each as one array."""
        rows = self._converted(self._found(conn.dialect), params, names)
        return [list(column) for column in zip(*rows, strict=True)] if rows else []

    def many(self, conn: Connection, params: Sequence[Mapping[str, Any]]) -> int:
        """Runs the statement (an INSERT, UPDATE or DELETE) once for each of ``params``,
        in one call of the driver's ``executemany``; how many rows it changed in all.

        Each value goes through its bind's processor as :meth:`rows` converts it, but an
        instant, UUID or text that recurs under one bind (a round's ``now``, its actor,
        its list) is converted once per call."""
        if not params:
            return 0
        dialect = conn.dialect
        found = self._found(dialect)
        driver_params: list[Any]
        if found.order is not None:
            driver_params = self._converted(found, params, found.order)
        else:
            layout = list(found.binds)
            names = [found.names[name] for name in layout]
            driver_params = [
                dict(zip(names, row, strict=True)) for row in self._converted(found, params, layout)
            ]
        _watch(conn, found.sql, driver_params)
        driver: Any = conn.connection.driver_connection
        cursor = driver.cursor()
        try:
            cursor.executemany(found.sql, driver_params)
            count: int = cursor.rowcount
        except dialect.loaded_dbapi.Error as exc:
            raise _translated(dialect, found.sql, driver_params, exc) from exc
        finally:
            cursor.close()
        return count

    def rows(self, conn: Connection, params: Mapping[str, Any] = _NO_PARAMS) -> list[Any]:
        """Every row the statement selects."""
        found, cursor = self._run(conn, params)
        fetched = cursor.fetchall()
        if found.row is None:
            return list(fetched)
        return [_typed(found, r) for r in fetched]

    def first(self, conn: Connection, params: Mapping[str, Any] = _NO_PARAMS) -> Any | None:
        """The first row the statement selects, or ``None``."""
        found, cursor = self._run(conn, params)
        fetched = cursor.fetchone()
        if fetched is None:
            return None
        if found.row is None:
            return fetched
        return _typed(found, fetched)

    def rowcount(self, conn: Connection, params: Mapping[str, Any] = _NO_PARAMS) -> int:
        """How many rows the statement (an UPDATE, INSERT or DELETE) changed."""
        _found, cursor = self._run(conn, params)
        count: int = cursor.rowcount
        return count


class _Inserting(Prepared):
    """:func:`inserting`'s statement; on PostgreSQL :meth:`many` copies the rows in."""

    def __init__(self, table: Table, names: Sequence[str]) -> None:
        super().__init__(
            insert(table).values(
                {name: bindparam(name, type_=table.c[name].type) for name in names}
            )
        )
        self.table = table
        self._copy: dict[str, tuple[str, list[str] | None]] = {}

    def _copy_of(self, dialect: Dialect, names: Sequence[str]) -> tuple[str, list[str] | None]:
        """The ``COPY`` statement and, when every column has a binary form the driver
        writes, their types (else ``None``: the text form)."""
        found = self._copy.get(dialect.name)
        if found is None:
            quote = dialect.identifier_preparer
            columns = ", ".join(quote.quote(self.table.c[name].name) for name in names)
            types = [_binary_type(self.table.c[name].type) for name in names]
            known = None if None in types else [t for t in types if t is not None]
            binary = " (FORMAT BINARY)" if known is not None else ""
            found = self._copy[dialect.name] = (
                f"COPY {quote.format_table(self.table)} ({columns}) FROM STDIN{binary}",
                known,
            )
        return found

    def many(self, conn: Connection, params: Sequence[Mapping[str, Any]]) -> int:
        """The rows inserted by :meth:`Prepared.many`, or on PostgreSQL, from
        :data:`COPY_ROWS` rows, by one ``COPY ... FROM STDIN`` (the same rows, constraints
        and errors: an INSERT run once a row through the driver's pipeline cost the
        client twice the CPU; a few rows keep the INSERT, a round trip fewer), in the
        binary form where every column has one (20,000 task rows: 0.9 us of the
        client's CPU a row against 4.2 us as text, 4.5 us of the server's against 5.5)."""
        dialect = conn.dialect
        if dialect.name != "postgresql" or len(params) < COPY_ROWS:
            return super().many(conn, params)
        found = self._found(dialect)
        names = list(found.binds)
        sql, types = self._copy_of(dialect, names)
        rows = self._converted(found, params, names)
        _watch(conn, sql, rows)
        driver: Any = conn.connection.driver_connection
        try:
            with driver.cursor() as cursor, cursor.copy(sql) as copy:
                if types is not None:
                    copy.set_types(types)
                for row in rows:
                    copy.write_row(row)
        except dialect.loaded_dbapi.Error as exc:
            raise _translated(dialect, sql, rows, exc) from exc
        return len(rows)


def _binary_type(type_: TypeEngine[Any]) -> str | None:
    """The PostgreSQL type the driver writes a column of ``type_`` as in a binary
    ``COPY``, from the values its bind processor gives; ``None`` for a type left to the
    text form."""
    if isinstance(type_, TypeDecorator):
        type_ = type_.impl_instance
    if isinstance(type_, JSON):  # (the driver's JSON wrapper, as the bind processor gives)
        return "jsonb" if isinstance(type_, postgresql.JSONB) else "json"
    for kind, name in _BINARY_TYPES:
        if isinstance(type_, kind):
            if isinstance(type_, DateTime):
                return "timestamptz" if type_.timezone else "timestamp"
            return name
    return None


def unnest_of(types: Sequence[TypeEngine[Any]], dialect: Dialect) -> str:
    """``unnest(…)`` of one PostgreSQL array a column of ``types``, bound as
    :func:`unnest_params` names them (each a list of the column's values, converted as
    :meth:`Prepared.columns` converts them). Each array goes in the binary form where
    its type has one: no quoting nor escaping of each element, a document's JSON text
    among them (500 documents of 1 KB written by ``UPDATE … FROM unnest``: 13 us of the
    client's CPU a row against 62 us in the text form); else as text cast to the type. A
    string is bound as ``text`` of any length: a cast to the column's ``VARCHAR(n)``
    would cut an overlong value short, where the column, assigned from text, refuses it."""
    arrays = []
    for i, type_ in enumerate(types):
        binary = _binary_type(type_)
        arrays.append(
            f"%(c{i})b::{binary}[]"
            if binary is not None
            else f"%(c{i})s::{type_.compile(dialect=dialect)}[]"
        )
    return f"unnest({', '.join(arrays)})"


def unnest_params(columns: Sequence[list[Any]]) -> dict[str, list[Any]]:
    """The parameters of :func:`unnest_of`'s arrays: ``columns`` in their order."""
    return {f"c{i}": column for i, column in enumerate(columns)}


# Most specific first (Text is a String, SmallInteger an Integer).
_BINARY_TYPES: tuple[tuple[type[TypeEngine[Any]], str], ...] = (
    (Uuid, "uuid"),
    (String, "text"),
    (SmallInteger, "int2"),
    (BigInteger, "int8"),
    (Integer, "int4"),
    (Boolean, "bool"),
    (DateTime, "timestamptz"),
    (Date, "date"),
    (LargeBinary, "bytea"),
)


def inserting(table: Table, columns: Sequence[str] | None = None) -> Prepared:
    """An INSERT into ``table`` binding each of ``columns`` (by default every column) under
    its own key and type: for :meth:`Prepared.many`, each row giving every one of them
    (on PostgreSQL copied in)."""
    names = [c.key for c in table.columns] if columns is None else list(columns)
    return _Inserting(table, names)


def _picker(layout: Sequence[str]) -> Callable[[Mapping[str, Any]], list[Any]]:
    """A function reading ``layout``'s values out of a mapping, as a new list."""
    if not layout:
        return lambda values: []
    if len(layout) == 1:
        (name,) = layout
        return lambda values: [values[name]]
    get = itemgetter(*layout)
    return lambda values: list(get(values))


def run_sql(conn: Connection, sql: str, params: Mapping[str, Any]) -> int:
    """Runs ``sql`` (in the driver's parameter style) with ``params`` as they are, on the
    driver, inside the caller's transaction, its errors translated as a prepared
    statement's are; the rows it changed."""
    count: int = _execute(conn, sql, params).rowcount
    return count


def _execute(conn: Connection, sql: str, params: Any) -> Any:
    """The driver's cursor after running ``sql`` once with the driver's ``params``, seen
    by ``before_cursor_execute`` listeners, its errors translated."""
    dialect = conn.dialect
    watchers = conn.dispatch.before_cursor_execute
    if watchers:
        for watch in watchers:
            watch(conn, None, sql, params, None, False)
    driver: Any = conn.connection.driver_connection
    try:
        return driver.execute(sql, params)
    except dialect.loaded_dbapi.Error as exc:
        raise _translated(dialect, sql, params, exc) from exc


def _watch(conn: Connection, sql: str, rows: list[Any]) -> None:
    """Listeners of ``before_cursor_execute`` see a statement run for many rows."""
    watchers = conn.dispatch.before_cursor_execute
    if watchers:
        for watch in watchers:
            watch(conn, None, sql, rows, None, True)


def _translated(dialect: Dialect, sql: str, params: Any, exc: Exception) -> Exception:
    wrapped = DBAPIError.instance(sql, params, exc, dialect.loaded_dbapi.Error, dialect=dialect)
    translated = translate_error(wrapped)
    return translated if translated is not None else wrapped


def _row_type(keys: list[str]) -> type[tuple[Any, ...]]:
    made: type[tuple[Any, ...]] = namedtuple("Row", keys, rename=True)  # type: ignore[misc]
    return made


def _typed(found: _Compiled, fetched: tuple[Any, ...]) -> tuple[Any, ...]:
    assert found.row is not None
    return found.row(
        *[
            value if process is None or value is None else process(value)
            for process, value in zip(found.columns, fetched, strict=True)
        ]
    )
