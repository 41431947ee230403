"""Writing the slot ledger: its rows, in the transaction of the decision that makes them,
and the retention that keeps it bounded (issue 24 §1).

A row is written once: its key is the schedule and the slot, and a row already there
is left alone, so a decision retried after a lost race or a crash never writes two. The
retention pass runs inside the scheduler's loop (:class:`Trimmer`); per schedule it keeps
the newest :data:`~kalends.missions.ledger.RETAIN_ROWS` rows and every row of the last
:data:`~kalends.missions.ledger.RETAIN_AGE`, whichever keeps more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.engine import Connection

from kalends.missions.ledger import RETAIN_AGE, RETAIN_ROWS, Entry
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.unit_of_work import Store
from kalends.storage.upsert import insert_missing

__all__ = ["TRIM_BATCH", "TRIM_EVERY", "Trimmer", "record", "trim"]

# kalends decision: a scheduler trims the ledger at most every 10 minutes, at most 5,000
# rows per pass, so retention never holds up a round.
TRIM_EVERY = timedelta(minutes=10)
TRIM_BATCH = 5_000

_KEY = ("schedule_id", "slot_key")


def record(conn: Connection, rows: Iterable[tuple[UUID, Entry]], now: datetime) -> None:
    """Write the ledger ``rows`` decided at ``now`` (a row already written stays)."""
    values: list[dict[str, Any]] = [
        {
            "schedule_id": schedule_id,
            "slot_key": e.key,
            "slot_at": e.at,
            "local": e.local,
            "zone": e.zone,
            "outcome": e.outcome.value,
            "reason": None if e.reason is None else e.reason.value,
            "note": e.note,
            "passage_id": e.passage_id,
            "detail": e.detail,
            "slots": e.slots,
            "through_at": e.through,
            "other_at": e.other_at,
            "decided_at": now,
        }
        for schedule_id, e in rows
    ]
    insert_missing(conn, slot_ledger, values, _KEY)


def trim(conn: Connection, now: datetime, *, limit: int = TRIM_BATCH) -> int:
    """Delete at most ``limit`` rows older than the retention age that are not among their
    schedule's newest :data:`RETAIN_ROWS`; how many were deleted."""
    cutoff = now - RETAIN_AGE
    crowded = (
        select(slot_ledger.c.schedule_id)
        .where(slot_ledger.c.slot_at < cutoff)
        .group_by(slot_ledger.c.schedule_id)
        .subquery()
    )
    ranked = (
        select(
            slot_ledger.c.schedule_id,
            slot_ledger.c.slot_key,
            slot_ledger.c.slot_at,
            func.row_number()
            .over(
                partition_by=slot_ledger.c.schedule_id,
                order_by=(slot_ledger.c.slot_at.desc(), slot_ledger.c.slot_key.desc()),
            )
            .label("newest"),
        )
        .where(slot_ledger.c.schedule_id.in_(select(crowded.c.schedule_id)))
        .subquery()
    )
    doomed: Sequence[Any] = conn.execute(
        select(ranked.c.schedule_id, ranked.c.slot_key)
        .where(ranked.c.newest > RETAIN_ROWS, ranked.c.slot_at < cutoff)
        .limit(limit)
    ).all()
    if not doomed:
        return 0
    keys = [(row.schedule_id, row.slot_key) for row in doomed]
    deleted = 0
    for start in range(0, len(keys), 500):
        part = keys[start : start + 500]
        result = conn.execute(
            delete(slot_ledger).where(
                tuple_(slot_ledger.c.schedule_id, slot_ledger.c.slot_key).in_(part)
            )
        )
        deleted += result.rowcount or 0
    return deleted


class Trimmer:
    """The retention pass of one scheduler: at most once per :data:`TRIM_EVERY`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._last: datetime | None = None

    def maybe(self, now: datetime) -> int:
        """Trim when the last pass is older than :data:`TRIM_EVERY`; rows deleted."""
        if self._last is not None and now - self._last < TRIM_EVERY and now >= self._last:
            return 0
        self._last = now
        return int(self.store.run(lambda conn: trim(conn, now)))
