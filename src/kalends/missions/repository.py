"""Every read and write of the schedule service: schedule rows with the reader's role,
creation receipts, and control records, inside the caller's transaction.

Reads return frozen values (:mod:`kalends.missions.rows`). A control's write is the
document's compare-and-swap (:mod:`kalends.missions.stored_documents`) with its record;
a schedule keeps at most 64 records and evicts the oldest completed ones past that,
raising its eviction bound over them, so that the status read of an evicted request says
``unknown`` and never guesses.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import and_, bindparam, delete, func, insert, null, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.errors import Conflict, KalendsError, LimitReached
from kalends.missions import wakes
from kalends.missions.config import Config
from kalends.missions.controls import Action, Applied
from kalends.missions.document import Body, Phase, State
from kalends.missions.limits import MAX_CONTROL_RECORDS
from kalends.missions.refusals import APPLIED, insert_refusal, refusal_outcome
from kalends.missions.requests import ControlRequest
from kalends.missions.rows import ControlRead, ControlRecord, ScheduleRead, ScheduleRow
from kalends.missions.stored_documents import (
    cas_params,
    cas_swap,
    document_texts,
    tombstone_room,
    tombstone_size,
)
from kalends.storage.mission_tables import (
    schedule_controls,
    schedule_wakes,
    scheduler_leases,
    schedules,
    workspace_members,
    workspaces,
)
from kalends.storage.prepared import Prepared
from kalends.storage.unit_of_work import for_update

__all__ = [
    "Raced",
    "control_record",
    "insert_schedule",
    "live_count",
    "read_for_control",
    "read_page",
    "read_receipt",
    "read_revision",
    "read_schedule",
    "record_control",
    "record_refusal",
    "write_control",
]

_wm = workspace_members
_S = schedules
_W = schedule_wakes
_L = scheduler_leases
_sc = schedule_controls
_rc = schedule_controls.alias("repeat_of")

# What reads show of a schedule's wake: whether a live scheduler holds it, and lastError
# (kept on the wake row, outside the document revision).
_WAKE_COLUMNS = (
    _W.c.owner.label("wake_owner"),
    _L.c.expires_at.label("wake_lease"),
    _W.c.last_error_code.label("last_error_code"),
    _W.c.last_error_at.label("last_error_at"),
    _W.c.last_error_message.label("last_error_message"),
)
# A schedule's row with its wake's columns and the actor's role on its workspace (the
# fields of ScheduleRead, in their order).
_SCHEDULE_ROW = (
    select(_S, *_WAKE_COLUMNS, _wm.c.role)
    .select_from(
        _S.outerjoin(
            _wm,
            and_(_wm.c.workspace_id == _S.c.workspace_id, _wm.c.actor_id == bindparam("actor_id")),
        )
        .outerjoin(_W, _W.c.schedule_id == _S.c.id)
        .outerjoin(_L, _L.c.token == _W.c.lease_token)
    )
    .where(_S.c.id == bindparam("schedule_id"))
)
_SCHEDULE = Prepared(_SCHEDULE_ROW)
# A control's first read: the schedule's row, the record of its request ID if that
# request was answered before (applied or refused), and how many records the schedule
# keeps (the bound of 64).
_SCHEDULE_FOR_CONTROL = Prepared(
    _SCHEDULE_ROW.add_columns(
        *(column.label(f"repeat_{column.key}") for column in _rc.c),
        select(func.count())
        .select_from(_sc)
        .where(_sc.c.schedule_id == _S.c.id)
        .scalar_subquery()
        .label("control_count"),
    ).outerjoin(
        _rc, and_(_rc.c.schedule_id == _S.c.id, _rc.c.request_id == bindparam("request_id"))
    )
)
# Eviction past the bound of control records: a long-lived schedule evicts on every
# control. The oldest completed records, read and then deleted by the same selection (in
# the control's transaction, which holds the schedule's row), all run on the driver.
_OLDEST = (
    select(_sc.c.request_id, _sc.c.recorded_revision)
    .where(_sc.c.schedule_id == bindparam("schedule_id"), _sc.c.complete)
    # (a refusal's record shares its recorded revision with others: one order for both)
    .order_by(_sc.c.recorded_revision, _sc.c.request_id)
    .limit(bindparam("excess"))
)
_OLDEST_COMPLETE = Prepared(_OLDEST)
_EVICT = Prepared(
    delete(_sc).where(
        _sc.c.schedule_id == bindparam("schedule_id"),
        _sc.c.request_id.in_(_OLDEST.with_only_columns(_sc.c.request_id).scalar_subquery()),
    )
)
_RAISE_EVICTED = {
    dialect: Prepared(
        update(_S)
        .where(_S.c.id == bindparam("b_schedule_id"))
        .values(
            evicted_control_revision=greatest(_S.c.evicted_control_revision, bindparam("bound"))
        )
    )
    for dialect, greatest in (("sqlite", func.max), ("postgresql", func.greatest))
}
_INSERT_CONTROL = Prepared(insert(_sc).values({c.name: bindparam(c.name) for c in _sc.c}))
_SUPERSEDE = Prepared(
    update(_sc)
    .where(
        _sc.c.schedule_id == bindparam("b_schedule_id"),
        # (two comparisons, not IN, so the driver runs it as it is prepared)
        or_(_sc.c.action == Action.PAUSE.value, _sc.c.action == Action.STOP.value),
        _sc.c.complete.is_(False),
    )
    .values(complete=True)
)
_CONTROL = Prepared(
    select(_sc).where(
        _sc.c.schedule_id == bindparam("schedule_id"),
        _sc.c.request_id == bindparam("request_id"),
    )
)


class Raced(Conflict):
    """The compare-and-swap found another revision, or a concurrent attempt of the same
    request recorded its answer first: another writer won, and this one wrote nothing."""


# --- reads ------------------------------------------------------------------------------


def read_schedule(conn: Connection, actor_id: UUID, schedule_id: UUID) -> ScheduleRead | None:
    """The schedule with ``actor_id``'s role on its workspace, or ``None`` when none."""
    row = _SCHEDULE.first(conn, {"actor_id": actor_id, "schedule_id": schedule_id})
    return None if row is None else ScheduleRead.from_row(row)


def read_for_control(
    conn: Connection, actor_id: UUID, schedule_id: UUID, request_id: str
) -> ControlRead | None:
    """A control's first read (one statement), or ``None`` when there is no such schedule."""
    key = {"actor_id": actor_id, "schedule_id": schedule_id, "request_id": request_id}
    row = _SCHEDULE_FOR_CONTROL.first(conn, key)
    return None if row is None else ControlRead.from_row(row)


def control_record(conn: Connection, schedule_id: UUID, request_id: str) -> ControlRecord | None:
    """The record of ``request_id`` on the schedule, applied or refused, if kept."""
    row = _CONTROL.first(conn, {"schedule_id": schedule_id, "request_id": request_id})
    return None if row is None else ControlRecord.from_row(row)


def read_revision(conn: Connection, schedule_id: UUID) -> int | None:
    """The schedule's revision now (``None``: no such schedule)."""
    revision = conn.execute(select(_S.c.revision).where(_S.c.id == schedule_id)).scalar()
    return None if revision is None else int(revision)


def read_receipt(conn: Connection, workspace_id: UUID, request_id: str) -> ScheduleRow | None:
    """The schedule (or tombstone) that ``request_id`` created in the workspace, if any."""
    row = conn.execute(
        select(_S).where(_S.c.workspace_id == workspace_id, _S.c.creation_request_id == request_id)
    ).first()
    return None if row is None else ScheduleRow.from_row(row)


def read_page(
    conn: Connection, workspace_id: UUID, after: UUID | None, limit: int
) -> list[ScheduleRead]:
    """At most ``limit`` of the workspace's schedules in ID order after ``after``, tombstones
    included, with their wakes' columns (no role: the caller checked its own on the
    workspace)."""
    query = (
        select(_S, *_WAKE_COLUMNS, null().label("role"))
        .select_from(
            _S.outerjoin(_W, _W.c.schedule_id == _S.c.id).outerjoin(
                _L, _L.c.token == _W.c.lease_token
            )
        )
        .where(_S.c.workspace_id == workspace_id)
    )
    if after is not None:
        query = query.where(_S.c.id > after)
    rows = conn.execute(query.order_by(_S.c.id).limit(limit)).all()
    return [ScheduleRead.from_row(r) for r in rows]


# --- creation ---------------------------------------------------------------------------


def live_count(conn: Connection, workspace_id: UUID) -> int:
    """How many schedules (not tombstones) the workspace holds, read holding its row, so
    that concurrent creations in it count one after the other."""
    conn.execute(for_update(select(workspaces.c.id).where(workspaces.c.id == workspace_id))).first()
    live = conn.execute(
        select(func.count()).where(
            _S.c.workspace_id == workspace_id, _S.c.phase != Phase.TOMBSTONE.value
        )
    ).scalar_one()
    return int(live)


def insert_schedule(
    conn: Connection,
    *,
    schedule_id: UUID,
    workspace_id: UUID,
    config: Config,
    body: Body,
    request_id: str,
    digest: str,
    now: datetime,
) -> ScheduleRow | None:
    """Insert a new, paused document at revision 1 (``None``). When a concurrent creation
    of ``request_id`` in the workspace came first, nothing is written and that creation's
    schedule is returned. :class:`TooLarge` when the document is over its ceiling."""
    config_text, body_text, size = document_texts(config, body)
    try:
        with conn.begin_nested():
            conn.execute(
                insert(_S).values(
                    id=schedule_id,
                    workspace_id=workspace_id,
                    phase=Phase.LIVE.value,
                    state=State.PAUSED.value,
                    revision=1,
                    evicted_control_revision=0,
                    title=config.title,
                    creation_request_id=request_id,
                    creation_digest=digest,
                    config=config_text,
                    body=body_text,
                    size=size,
                    next_due_at=None,
                    created_at=now,
                    updated_at=now,
                )
            )
    except IntegrityError:
        first = read_receipt(conn, workspace_id, request_id)
        if first is None:
            raise
        return first
    return None


# --- controls ---------------------------------------------------------------------------


def write_control(
    conn: Connection,
    read: ControlRead,
    request: ControlRequest,
    applied: Applied,
    now: datetime,
) -> tuple[bool, ScheduleRow]:
    """The compare-and-swap write of a control's document and its record; whether the
    control is complete, and the row as written (for the reply, so the document is not
    read back). :class:`Raced` when another writer came first (nothing written)."""
    row = read.schedule
    phase = applied.phase
    complete = applied.complete
    values = cas_params(
        row, state=applied.state, phase=phase, config=applied.config, body=applied.body, now=now
    )
    tombstone = False
    if phase is Phase.DELETING and complete:
        tombstone = tombstone_room(conn, row)
        if tombstone:
            # Compaction drops the control records (the Delete's own is kept), so the
            # eviction bound covers every revision before the Delete.
            values.update(
                phase=Phase.TOMBSTONE.value,
                config=None,
                body=None,
                size=tombstone_size(row),
                evicted=request.expected,
            )
        else:
            complete = False
    if not cas_swap(conn, values):
        raise Raced
    if tombstone:
        conn.execute(delete(_sc).where(_sc.c.schedule_id == row.id))
    elif request.action is not Action.CONFIGURE or applied.state is State.RUNNING:
        # The scheduler looks again at once: to arm or cancel slots, start or observe
        # the pending passage, or interrupt it (seed 002: Pause/Stop cancel the Job).
        wakes.arm(conn, row.id, now)
    # The records the schedule keeps, read with it in this transaction (which holds
    # it): none added since, and none left once a tombstone's compaction dropped them.
    kept = 0 if tombstone else read.control_count
    revision = request.expected + 1
    evicted = record_control(conn, row, kept, request, revision, complete, now)
    written = ScheduleRow(
        id=row.id,
        workspace_id=row.workspace_id,
        phase=values["phase"],
        state=values["state"],
        revision=revision,
        evicted_control_revision=max(values["evicted"], evicted),
        title=values["title"],
        creation_request_id=row.creation_request_id,
        creation_digest=row.creation_digest,
        config=values["config"],
        body=values["body"],
        size=values["size"],
        next_due_at=values["next_due_at"],
        created_at=row.created_at,
        updated_at=now,
    )
    return complete, written


def record_control(
    conn: Connection,
    row: ScheduleRead,
    count: int,
    request: ControlRequest,
    revision: int,
    complete: bool,
    now: datetime,
    *,
    outcome: str = APPLIED,
) -> int:
    """Insert the control record, evicting the oldest completed ones past the bound of
    64 (``count``: how many the schedule keeps now); returns the highest evicted
    revision (0 when none was evicted). A refusal's record (``outcome``) is left out,
    raising :class:`Raced`, when one of its request ID is there already."""
    bound = 0
    if count >= MAX_CONTROL_RECORDS:
        excess = count - MAX_CONTROL_RECORDS + 1
        oldest_key = {"schedule_id": row.id, "excess": excess}
        oldest = _OLDEST_COMPLETE.rows(conn, oldest_key)
        if len(oldest) < excess:
            raise LimitReached(
                f"schedule {row.id}: {MAX_CONTROL_RECORDS} controls are unresolved; "
                "wait for one to complete",
                limit=MAX_CONTROL_RECORDS,
            )
        _EVICT.rowcount(conn, oldest_key)
        bound = max(o.recorded_revision for o in oldest)
        _raise_evicted(conn, row.id, bound)
    act = request.action
    if act in (Action.PAUSE, Action.STOP) and not complete:
        # Seed 002: a schedule admits a single unresolved Pause/Stop; the newest one
        # carries the interruption, so it supersedes (completes) the earlier ones.
        _SUPERSEDE.rowcount(conn, {"b_schedule_id": row.id})
    values: dict[str, Any] = {
        "schedule_id": row.id,
        "request_id": request.request_id,
        "action": act.value,
        "expected_revision": request.expected,
        "recorded_revision": revision,
        "complete": complete,
        "digest": request.digest,
        "outcome": outcome,
        "at": now,
    }
    if outcome == APPLIED:
        _INSERT_CONTROL.rowcount(conn, values)
    elif conn.execute(insert_refusal(_sc, conn.dialect.name), values).first() is None:
        raise Raced
    return bound


def record_refusal(
    conn: Connection, read: ControlRead, request: ControlRequest, error: KalendsError, now: datetime
) -> bool:
    """Record ``error`` as the answer to ``request``; whether anything was written (no: a
    concurrent attempt of this request recorded its answer first). Run it before any
    other write of the transaction (:mod:`kalends.missions.refusals`)."""
    row = read.schedule
    # The revision it would have recorded: evicting its record bounds it.
    revision = min(request.expected, row.revision) + 1
    try:
        record_control(
            conn,
            row,
            read.control_count,
            request,
            revision,
            True,
            now,
            outcome=refusal_outcome(error),
        )
    except LimitReached:
        # Every record is an unresolved control's, so none makes room: unrecorded, the
        # refusal raises the eviction bound over it, and its status reads unknown.
        _raise_evicted(conn, row.id, revision)
    except Raced:
        return False
    return True


def _raise_evicted(conn: Connection, schedule_id: UUID, bound: int) -> None:
    _RAISE_EVICTED[conn.dialect.name].rowcount(conn, {"b_schedule_id": schedule_id, "bound": bound})
