"""New zone data moves slots (issue 24 §3): a scheduler starting on zone data other than
the data a wake's next slot was computed with computes that slot again.

Every Sleep records the next slot with the zone data's version
(:func:`~kalends.civil.zone_data.zone_data_version`) on the schedule's wake. When a
scheduler starts, :func:`recompute_changed` takes the wakes recorded under another
version whose schedule is running, in batches, and computes each next slot again from
the document (:func:`~kalends.missions.document.next_due_or_end`):

- the same instant: the wake only takes the new version;
- another instant: a ``moved`` row in the slot ledger (reason ``zone-rules-changed``,
  ``at`` the new instant, ``other_at`` the old one, key ``moved:<new instant>``), and the
  wake is due now with the new slot and version, so a look decides it at once (it
  sleeps until the new instant, or launches a slot the new rules put in the past);
- no slot left: the wake is due now (the look ends the schedule).

Leases: only wakes no live scheduler holds (no owner, or a lease that ran out), plus, when
``token`` is given, this scheduler's own, selected with the claims' own locking statement
(``FOR UPDATE SKIP LOCKED`` on PostgreSQL, the write lock on SQLite), and written in the
same transaction. A live scheduler's wake is its own to look at; it is left alone, and
whoever claims it later on the new zone data recomputes it then (the scheduler runs
:func:`recompute_changed` over the wakes it takes over). Two schedulers starting at once
take disjoint wakes, and a row written twice is written once (its key).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.engine import Connection

from kalends.civil import next_slot
from kalends.civil.zones import wall_of
from kalends.errors import KalendsError
from kalends.missions.config import Config
from kalends.missions.document import Body, Phase, State, next_due_or_end
from kalends.missions.leases import free_wake
from kalends.missions.ledger import Entry, Outcome, Reason, iso, local_text
from kalends.missions.ledger_writes import record
from kalends.missions.reservation_writes import passage_zone
from kalends.missions.scheduler_rows import read_schedules
from kalends.storage.mission_tables import schedule_wakes, schedules
from kalends.storage.unit_of_work import Store

__all__ = ["ZONE_BATCH", "moved_entry", "recompute_changed"]

ZONE_BATCH = 500
"""How many wakes one transaction recomputes (kalends decision, as the claims' batch)."""

_W = schedule_wakes
_S = schedules

_VERSION_ONLY = (
    update(_W)
    .where(_W.c.schedule_id == bindparam("sid"), _W.c.zone_data == bindparam("old"))
    .values(zone_data=bindparam("zd"))
)
_DUE_NOW = (
    update(_W)
    .where(_W.c.schedule_id == bindparam("sid"), _W.c.zone_data == bindparam("old"))
    .values(due_at=bindparam("due"), next_slot_at=bindparam("slot"), zone_data=bindparam("zd"))
)


def _label(old: str, new: str) -> tuple[str, str]:
    """The two versions as a person reads them: the IANA names when they differ, else
    the whole texts (an edited copy of the same release)."""
    old_name, new_name = old.rsplit("-", 1)[0], new.rsplit("-", 1)[0]
    return (old_name, new_name) if old_name != new_name else (old, new)


def _minute(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def _slot_of(config: Config, body: Body, at: datetime) -> tuple[str, datetime]:
    """The zone and wall time of the next slot ``at`` (the policy's own slot when the
    search finds it there, else the policy's zone's wall time at that instant)."""
    origin = body.first_play_at
    if origin is not None and not config.one_shot:
        found = next_slot(config.policy, body.high_water or origin, origin=origin)
        if found is not None and found.at == at:
            return found.zone, found.local
    zone = passage_zone(config)
    return zone, wall_of(at, zone)


def moved_entry(
    config: Config, body: Body, old_at: datetime, new_at: datetime, old: str, new: str
) -> Entry:
    """The ledger row of the next slot moved from ``old_at`` (zone data ``old``) to
    ``new_at`` (zone data ``new``). Pure."""
    zone, local = _slot_of(config, body, new_at)
    was = wall_of(old_at, zone)
    a, b = _label(old, new)
    detail = (
        f"new zone rules ({a} → {b}) moved this slot from {_minute(was)} to "
        f"{_minute(local)} {zone} time (from {iso(old_at)} to {iso(new_at)})"
    )
    return Entry(
        key=f"moved:{iso(new_at)}",
        at=new_at,
        local=local_text(local),
        zone=zone,
        outcome=Outcome.MOVED,
        reason=Reason.ZONE_RULES_CHANGED,
        detail=detail,
        other_at=old_at,
    )


def _candidates(
    conn: Connection,
    now: datetime,
    version: str,
    after: UUID | None,
    token: str | None,
    only: Sequence[UUID] | None,
) -> list[Any]:
    free = [free_wake(now)]
    if token is not None:
        free.append(_W.c.lease_token == token)
    stmt = (
        select(_W.c.schedule_id, _W.c.next_slot_at, _W.c.zone_data)
        .join(_S, _S.c.id == _W.c.schedule_id)
        .where(
            _W.c.zone_data.is_not(None),
            _W.c.zone_data != version,
            _S.c.state == State.RUNNING.value,
            _S.c.phase == Phase.LIVE.value,
            or_(*free),
        )
        .order_by(_W.c.schedule_id)
        .limit(ZONE_BATCH)
    )
    if after is not None:
        stmt = stmt.where(_W.c.schedule_id > after)
    if only is not None:
        stmt = stmt.where(_W.c.schedule_id.in_(list(only)))
    # The claims' lock: a wake another transaction holds is skipped, never waited for.
    return list(conn.execute(stmt.with_for_update(of=_W, skip_locked=True)).all())


def _batch(
    conn: Connection,
    now: datetime,
    version: str,
    after: UUID | None,
    token: str | None,
    only: Sequence[UUID] | None,
) -> tuple[int, UUID | None]:
    """Recompute one batch; how many slots moved, and the last wake read (``None``: the
    batch was the last)."""
    rows = _candidates(conn, now, version, after, token, only)
    if not rows:
        return 0, None
    docs = read_schedules(conn, [r.schedule_id for r in rows])
    same: list[dict[str, Any]] = []
    due: list[dict[str, Any]] = []
    moved: list[tuple[UUID, Entry]] = []
    for r in rows:
        found = docs.get(r.schedule_id)
        try:
            doc = None if found is None else found.document()
        except KalendsError:
            continue  # its own look records why it does not parse
        if doc is None or doc.body.pending is not None or doc.body.interruption is not None:
            continue  # no next slot to sleep until: its next Sleep records one
        fence = {"sid": r.schedule_id, "old": r.zone_data, "zd": version}
        at = next_due_or_end(doc.config, doc.body)
        if not isinstance(at, datetime):
            due.append({**fence, "due": now, "slot": None, "zd": None})
        elif at == r.next_slot_at:
            same.append(fence)
        else:
            due.append({**fence, "due": now, "slot": at})
            if r.next_slot_at is not None:
                entry = moved_entry(doc.config, doc.body, r.next_slot_at, at, r.zone_data, version)
                moved.append((r.schedule_id, entry))
    if same:
        conn.execute(_VERSION_ONLY, same)
    if due:
        conn.execute(_DUE_NOW, due)
    if moved:
        record(conn, moved, now)
    last: UUID = rows[-1].schedule_id
    return len(moved), (last if len(rows) == ZONE_BATCH else None)


def recompute_changed(
    store: Store,
    now: datetime,
    version: str,
    *,
    token: str | None = None,
    only: Sequence[UUID] | None = None,
) -> int:
    """Compute again the next slot of every running schedule whose wake was recorded under
    zone data other than ``version`` and is free (or held under ``token``); ``only``:
    just these wakes. Records each moved slot in the ledger and makes its wake due now;
    how many slots moved (see the module docstring)."""
    if only is not None and not only:
        return 0
    moved = 0
    after: UUID | None = None
    while True:
        run = partial(_batch, now=now, version=version, after=after, token=token, only=only)
        count, after = store.run(run)
        moved += count
        if after is None:
            return moved
