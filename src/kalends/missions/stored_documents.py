"""A schedule document as stored: parsed from its row, measured against its ceilings, and
written whole by one compare-and-swap on its revision; a deleted one compacted into a
tombstone (seed 002 "Unified document foundation").

The schedule service and the scheduler both write documents through these. ``row`` is a
:class:`~kalends.missions.rows.StoredSchedule`: the service's
:class:`~kalends.missions.rows.ScheduleRow` or ``ScheduleRead``, or the scheduler's
:class:`~kalends.missions.scheduler_rows.SchedulerRow`, each read with its own further
columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from functools import cache, lru_cache
from typing import Any

from sqlalchemy import bindparam, delete, func, or_, select, update
from sqlalchemy.engine import Connection, Dialect

from kalends.errors import CorruptDocument, TooLarge
from kalends.missions.config import Config, dump_config, load_config
from kalends.missions.controls import Action, DocState
from kalends.missions.document import Body, Phase, State, dump_body, load_body, next_due
from kalends.missions.limits import (
    MAX_CONFIG_BYTES,
    MAX_DOCUMENT_BYTES,
    MAX_TOMBSTONE_BYTES,
    MAX_TOMBSTONES,
)
from kalends.missions.refusals import APPLIED
from kalends.missions.rows import StoredSchedule
from kalends.storage.mission_tables import schedule_controls, schedules, workspaces
from kalends.storage.prepared import Prepared, run_sql, unnest_of, unnest_params
from kalends.storage.unit_of_work import for_update
from kalends.storage.upsert import UNNEST_ROWS

__all__ = [
    "cas_params",
    "cas_swap",
    "cas_write",
    "cas_write_many",
    "compact",
    "doc_of",
    "document_texts",
    "tombstone_room",
    "tombstone_size",
]

_S = schedules
_sc = schedule_controls
# What a compare-and-swap sets: (its bind, the column).
_CAS_SETS = (
    ("phase", "phase"),
    ("state", "state"),
    ("revision", "revision"),
    ("title", "title"),
    ("config", "config"),
    ("body", "body"),
    ("size", "size"),
    ("next_due_at", "next_due_at"),
    ("updated_at", "updated_at"),
    ("evicted", "evicted_control_revision"),
)
_CAS = (
    update(_S)
    .where(_S.c.id == bindparam("b_id"), _S.c.revision == bindparam("b_expected"))
    .values({name: bindparam(bind) for bind, name in _CAS_SETS})
)
# The compare-and-swap run on the driver: one for a control, many at once for the
# scheduler's batches (SQLAlchemy's executemany converted each set's parameters one by
# one, the round's instant among them).
_CAS_ONE = Prepared(_CAS)


@lru_cache(maxsize=4096)
def _parse_config(text: str) -> tuple[Config, int]:
    return load_config(text), len(text.encode())


@lru_cache(maxsize=4096)
def _parse_body(text: str) -> tuple[Body, int]:
    return load_body(text), len(text.encode())


def doc_of(row: StoredSchedule) -> DocState:
    """The parsed document of a schedule row; :class:`CorruptDocument` when its stored text
    does not parse or is over its ceilings. Parsing is cached by the stored text (both
    parts are immutable values), so rereading an unchanged document costs a dict lookup."""
    try:
        if row.config is None or row.body is None:
            raise TypeError("the document's configuration or body is NULL")
        config, config_size = _parse_config(row.config)
        body, body_size = _parse_body(row.body)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptDocument(
            f"schedule {row.id}: the stored document does not parse: {exc}", schedule=str(row.id)
        ) from None
    # Seed 002: each read validates the document bounds; one over them fails, never guessed.
    size = config_size + body_size
    if config_size > MAX_CONFIG_BYTES or size > MAX_DOCUMENT_BYTES:
        raise CorruptDocument(
            f"schedule {row.id}: the stored document is {size} bytes (configuration "
            f"{config_size}), over its ceilings of {MAX_DOCUMENT_BYTES} ({MAX_CONFIG_BYTES})",
            schedule=str(row.id),
        )
    return DocState(str(row.id), Phase(row.phase), State(row.state), config, body)


def document_texts(
    config: Config, body: Body, config_text: str | None = None
) -> tuple[str, str, int]:
    """The stored texts and size of a document; :class:`TooLarge` when it is over its
    ceiling. ``config_text``: the stored text of an unchanged configuration, reused."""
    if config_text is None:
        config_text = dump_config(config)
    body_text = dump_body(body)
    size = len(config_text.encode()) + len(body_text.encode())
    if size > MAX_DOCUMENT_BYTES:
        raise TooLarge(
            f"document: {size} bytes is over the {MAX_DOCUMENT_BYTES}-byte ceiling; "
            "nothing was written",
            field="document",
            size=size,
            limit=MAX_DOCUMENT_BYTES,
        )
    return config_text, body_text, size


def _next_due_column(state: State, phase: Phase, config: Config, body: Body) -> datetime | None:
    if state is not State.RUNNING or phase is not Phase.LIVE or body.pending is not None:
        return None
    return next_due(config, body)


def cas_params(
    row: StoredSchedule,
    *,
    state: State,
    phase: Phase,
    config: Config,
    body: Body,
    now: datetime,
) -> dict[str, Any]:
    """The compare-and-swap parameters writing a whole document over ``row`` at
    ``row.revision`` (for :func:`cas_swap` and :func:`cas_write_many`); an unchanged
    configuration keeps its stored text. :class:`TooLarge` when the document is over its
    ceilings."""
    unchanged = row.config is not None and config is _parse_config(row.config)[0]
    config_text, body_text, size = document_texts(config, body, row.config if unchanged else None)
    return {
        "b_id": row.id,
        "b_expected": row.revision,
        "phase": phase.value,
        "state": state.value,
        "revision": int(row.revision) + 1,
        "title": config.title,
        "config": config_text,
        "body": body_text,
        "size": size,
        "next_due_at": _next_due_column(state, phase, config, body),
        "updated_at": now,
        "evicted": row.evicted_control_revision,
    }


def cas_swap(conn: Connection, params: dict[str, Any]) -> bool:
    """One compare-and-swap (from :func:`cas_params`, perhaps amended), run on the driver;
    whether it wrote (``False``: another writer changed the document first)."""
    return _CAS_ONE.rowcount(conn, params) == 1


def cas_write(
    conn: Connection,
    row: StoredSchedule,
    *,
    state: State,
    phase: Phase,
    config: Config,
    body: Body,
    now: datetime,
) -> int | None:
    """One compare-and-swap of a whole document against ``row.revision``; the new
    revision, or ``None`` when another writer changed it first (nothing written)."""
    params = cas_params(row, state=state, phase=phase, config=config, body=body, now=now)
    result = conn.execute(_CAS, params)
    return int(params["revision"]) if result.rowcount == 1 else None


def cas_write_many(conn: Connection, params: Sequence[dict[str, Any]]) -> list[bool]:
    """Many compare-and-swaps (from :func:`cas_params`) in one call of the driver when every
    one applies; which of them wrote. When a writer came first for any of them, the batch
    is rolled back to its savepoint and each is tried alone, so the others still apply.
    On PostgreSQL, from :data:`~kalends.storage.upsert.UNNEST_ROWS` documents, the batch
    is one ``UPDATE … FROM unnest(…)`` of one array a column (two IDs alike in a batch
    update one row: the count falls short, and each is tried alone)."""
    if len(params) > 1 and conn.dialect.supports_sane_multi_rowcount:
        with conn.begin_nested() as savepoint:
            if _cas_batch(conn, params) == len(params):
                return [True] * len(params)
            savepoint.rollback()
    return [_CAS_ONE.rowcount(conn, p) == 1 for p in params]


def _cas_batch(conn: Connection, params: Sequence[dict[str, Any]]) -> int:
    """The compare-and-swaps of ``params`` run at once; how many wrote."""
    if conn.dialect.name != "postgresql" or len(params) < UNNEST_ROWS:
        return _CAS_ONE.many(conn, params)
    columns = _CAS_ONE.columns(conn, params, _CAS_BINDS)
    return run_sql(conn, _cas_unnest_sql(conn.dialect), unnest_params(columns))


# The compare-and-swap's binds and the columns they set (the first two: the row's ID and
# the revision it expects).
_CAS_BINDS = ("b_id", "b_expected", *(b for b, _ in _CAS_SETS))


@cache
def _cas_unnest_sql(dialect: Dialect) -> str:
    quote = dialect.identifier_preparer
    typed = [_S.c.id, _S.c.revision, *(_S.c[name] for _, name in _CAS_SETS)]
    arrays = unnest_of([c.type for c in typed], dialect)
    sets = ", ".join(f"{quote.quote(name)} = v.{bind}" for bind, name in _CAS_SETS)
    table = quote.format_table(_S)
    return (
        f"UPDATE {table} SET {sets} FROM {arrays} AS v({', '.join(_CAS_BINDS)}) "
        f"WHERE {table}.{quote.quote('id')} = v.b_id "
        f"AND {table}.{quote.quote('revision')} = v.b_expected"
    )


def compact(conn: Connection, row: StoredSchedule, now: datetime) -> bool:
    """Turn a deleted, reconciled document into a tombstone when the registry has room;
    completes its Delete (seed 002 "Unified document foundation")."""
    if not tombstone_room(conn, row):
        return False
    result = conn.execute(
        update(_S)
        .where(_S.c.id == row.id, _S.c.revision == row.revision)
        .values(
            phase=Phase.TOMBSTONE.value,
            config=None,
            body=None,
            size=tombstone_size(row),
            revision=row.revision + 1,
            evicted_control_revision=row.revision,
            next_due_at=None,
            updated_at=now,
        )
    )
    if result.rowcount != 1:
        return False
    # Only the Delete's own record stays (a refused Delete's goes with the others).
    conn.execute(
        delete(_sc).where(
            _sc.c.schedule_id == row.id,
            or_(_sc.c.action != Action.DELETE.value, _sc.c.outcome != APPLIED),
        )
    )
    conn.execute(update(_sc).where(_sc.c.schedule_id == row.id).values(complete=True))
    return True


def tombstone_room(conn: Connection, row: StoredSchedule) -> bool:
    """Whether the workspace's tombstone registry can take one more entry."""
    conn.execute(
        for_update(select(workspaces.c.id).where(workspaces.c.id == row.workspace_id))
    ).first()
    count, total = conn.execute(
        select(func.count(), func.coalesce(func.sum(_S.c.size), 0)).where(
            _S.c.workspace_id == row.workspace_id, _S.c.phase == Phase.TOMBSTONE.value
        )
    ).one()
    return bool(count < MAX_TOMBSTONES and total + tombstone_size(row) <= MAX_TOMBSTONE_BYTES)


def tombstone_size(row: StoredSchedule) -> int:
    """The bytes ``row``'s entry takes in its workspace's tombstone registry."""
    entry = {
        "id": str(row.id),
        "title": row.title,
        "creationRequestId": row.creation_request_id,
        "deletedAt": "0000-00-00T00:00:00.000000Z",
    }
    return len(json.dumps(entry, ensure_ascii=False).encode())
