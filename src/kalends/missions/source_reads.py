"""Reading a conditioned schedule's source into a gate :data:`~kalends.missions.gate.Reading`.

Two families (seed 002, the five source conditions):

- **Workspace sources** (``git-branch``, ``files``): :func:`read_workspace` reads the
  source in a worker thread under one cancellable ten-second budget, then reads it once
  more under the same budget (the revalidation right before the reservation is
  written): the two reads must agree, or the read is incomplete. The proof is computed
  under that budget too (the commits between the baseline and the observed commit, the
  listed files that changed).
- **Record sources** (``schedule-succeeded``, ``mission-completed``, ``conversation``):
  :func:`read_records` reads them in the caller's transaction: the followed schedules'
  documents, or the followed conversations
  (:mod:`kalends.missions.sources.conversations`: stable new messages after each
  conversation's cursor). A success count
  outlives the 30-result window, so it is the proof; a followed schedule that is gone,
  in another workspace or unreadable blocks with ``source-missing``; a count below the
  checkpoint (no retained proof of the success it consumed) with
  ``source-proof-missing``; a cycle with ``source-cycle``.

A ``mission-completed`` source is a state, not a count: it holds while the one-time
schedule has a completed passage that this schedule has not consumed. Its baseline is
``pending`` (nothing consumed); a successful passage consumes ``completed``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.missions.condition_check import cycle_of
from kalends.missions.config import load_config
from kalends.missions.config_condition import Condition
from kalends.missions.document import Phase, load_body
from kalends.missions.gate import Blocked, Observed, Reading
from kalends.missions.gate_records import COMPLETED, NOT_COMPLETED, Checkpoint, source_key
from kalends.missions.limits import SOURCE_READ_BUDGET_SECONDS
from kalends.missions.sources import (
    WORKSPACE_KINDS,
    BlockReason,
    Budget,
    Observation,
    SourceBlocked,
    commits_between,
    files_change,
    observe,
)
from kalends.missions.sources.conversations import KIND as CONVERSATION
from kalends.missions.sources.conversations import read_followed, retained_cursors
from kalends.missions.sources.outcomes import instant_text
from kalends.storage.mission_tables import schedules, workspaces

__all__ = [
    "RecordSource",
    "first_baseline",
    "play_baseline",
    "is_workspace_source",
    "read_ahead",
    "read_records",
    "read_workspace",
]

_REREADS = 3
"""Reads of one observation at most: the first, and revalidations until two agree."""


def is_workspace_source(condition: Condition) -> bool:
    """Whether the condition is read from the workspace's files (in a worker thread)."""
    return condition.kind in WORKSPACE_KINDS


def read_workspace(
    condition: Condition,
    workspace_root: str | Path,
    baseline: Checkpoint | None,
    at: datetime,
    *,
    budget: Budget | None = None,
    git: str = "git",
) -> Reading:
    """Read a ``git-branch`` or ``files`` source, revalidate it, and give its proof against
    ``baseline``. Blocks the calling thread for at most the budget (ten seconds unless
    given); cancelling ``budget`` ends it early as an incomplete read."""
    key = source_key(condition)
    budget = budget or Budget.start(SOURCE_READ_BUDGET_SECONDS)
    found: Observation | None = None
    for _ in range(_REREADS):
        read = observe(condition, workspace_root, budget, at=at, git_executable=git)
        if isinstance(read, SourceBlocked):
            return _blocked(key, read)
        if found is not None and read.checkpoint == found.checkpoint:
            break
        found = read
    else:
        return Blocked(
            key=key, kind=condition.kind, at=at, reason=BlockReason.SOURCE_UNREADABLE.value,
            detail="the source kept changing while it was read; read again at the next look",
        )  # fmt: skip
    assert found is not None
    observation = found.to_json()
    change: dict[str, Any] | None = None
    base = None if baseline is None else baseline.checkpoint
    if base is not None and base != found.checkpoint:
        if condition.kind == "git-branch":
            proof = commits_between(
                base, found.checkpoint, dict(condition.spec)["path"], workspace_root, budget,
                at=at, git=git,
            )  # fmt: skip
            if isinstance(proof, SourceBlocked):
                return _blocked(key, proof)
            change = proof.to_json()
        elif baseline is not None and baseline.observation is not None:
            try:
                before = Observation.from_json(baseline.observation)
            except (ValueError, KeyError, TypeError):
                before = None
            change = files_change(before, found).to_json() if before is not None else None
    return Observed(
        key=key, kind=condition.kind, at=at, checkpoint=found.checkpoint,
        observation=observation, baseline=base, change=change,
    )  # fmt: skip


def _blocked(key: str, read: SourceBlocked) -> Blocked:
    return Blocked(
        key=key, kind=read.kind, at=read.observed_at, reason=read.reason.value, detail=read.detail
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordSource:
    """One schedule's record source to read: the schedule, its workspace, its condition
    and its checkpoint (``None`` before its baseline)."""

    schedule_id: UUID
    workspace_id: UUID
    condition: Condition
    baseline: Checkpoint | None


def read_records(conn: Connection, items: list[RecordSource], at: datetime) -> dict[UUID, Reading]:
    """The readings of ``items`` (``schedule-succeeded``, ``mission-completed`` and
    ``conversation``), by schedule, read in the caller's transaction: one query for every
    followed schedule, the followed conversations one by one."""
    targets: dict[UUID, Any] = {}
    wanted = set()
    for item in items:
        target = _target(item.condition)
        if target is not None:
            wanted.add(target)
    if wanted:
        found = conn.execute(
            select(schedules.c.id, schedules.c.workspace_id, schedules.c.phase, schedules.c.body)
            .where(schedules.c.id.in_(sorted(wanted)))
        )  # fmt: skip
        targets = {row.id: row for row in found}
    out: dict[UUID, Reading] = {}
    for item in items:
        if item.condition.kind == CONVERSATION:
            retained = (
                None if item.baseline is not None else retained_cursors(conn, item.schedule_id)
            )
            out[item.schedule_id] = read_followed(
                conn, item.condition, item.workspace_id, item.baseline, at, retained=retained
            )
        else:
            out[item.schedule_id] = _record_reading(conn, item, targets, at)
    return out


def _target(condition: Condition) -> UUID | None:
    try:
        return UUID(str(dict(condition.spec)["missionId"]))
    except (KeyError, ValueError):
        return None


def _record_reading(
    conn: Connection, item: RecordSource, targets: dict[UUID, Any], at: datetime
) -> Reading:
    condition = item.condition
    key, kind = source_key(condition), condition.kind

    def blocked(reason: BlockReason, detail: str) -> Blocked:
        return Blocked(key=key, kind=kind, at=at, reason=reason.value, detail=detail)

    target = _target(condition)
    row = None if target is None else targets.get(target)
    if row is None or row.workspace_id != item.workspace_id or row.phase != Phase.LIVE.value:
        return blocked(BlockReason.SOURCE_MISSING, f"no schedule {target} in this workspace")
    if cycle_of(conn, item.schedule_id, condition):
        return blocked(
            BlockReason.SOURCE_CYCLE,
            f"schedule {target}'s conditions lead back to this schedule",
        )
    try:
        body = json.loads(row.body)
        successful = int(body["counters"]["successful"])
        results = body.get("results") or []
    except (ValueError, KeyError, TypeError):
        return blocked(BlockReason.SOURCE_PROOF_MISSING, f"schedule {target} cannot be read")
    observed_at = instant_text(at)
    if kind == "schedule-succeeded":
        base = None if item.baseline is None else item.baseline.checkpoint
        if base is not None and (not base.isdigit() or successful < int(base)):
            return blocked(
                BlockReason.SOURCE_PROOF_MISSING,
                f"schedule {target} counts {successful} successes, fewer than the "
                f"{base} already consumed",
            )
        change = None
        if base is not None and successful > int(base):
            change = {"missionId": str(target), "successful": successful, "since": int(base)}
        return Observed(
            key=key, kind=kind, at=at, checkpoint=str(successful),
            observation={"successful": successful, "observedAt": observed_at},
            baseline=base, change=change,
        )  # fmt: skip
    completed = [r.get("passageId") for r in results if r.get("outcome") == "completed"]
    state = COMPLETED if successful > 0 else NOT_COMPLETED
    base = NOT_COMPLETED if item.baseline is None else item.baseline.checkpoint
    change = None
    if state != base:
        change = {"missionId": str(target), "passageId": completed[-1] if completed else None}
    return Observed(
        key=key, kind=kind, at=at, checkpoint=state,
        observation={"state": state, "observedAt": observed_at}, baseline=base, change=change,
    )  # fmt: skip


def play_baseline(
    conn: Connection,
    schedule_id: UUID,
    workspace_id: UUID,
    condition: Condition,
    now: datetime,
    *,
    read_before: Checkpoint | None = None,
) -> Checkpoint | None:
    """The baseline a first Play (or a source added to a played schedule) takes: a
    workspace source's is ``read_before``, read before the control's transaction (so no
    file or git read holds the database's write lock), a record source's is read in it
    (the followed schedule, or each followed conversation's position now). ``None`` when
    the source could not be read: the first slot then takes the baseline (and launches
    nothing)."""
    if is_workspace_source(condition):
        return read_before
    else:
        item = RecordSource(
            schedule_id=schedule_id, workspace_id=workspace_id, condition=condition, baseline=None
        )
        reading = read_records(conn, [item], now)[schedule_id]
    return first_baseline(reading, now)


def read_ahead(
    conn: Connection, schedule_id: UUID, condition: Condition | None
) -> tuple[UUID, str, Condition] | None:
    """What a control reads before its transaction to take a workspace source's baseline
    outside it: the workspace's ID and path and the condition to read (``condition``, else the
    stored one), or ``None`` when there is nothing to read (no such schedule, no
    workspace source, or its checkpoint is kept already)."""
    row = conn.execute(
        select(workspaces.c.id, workspaces.c.path, schedules.c.config, schedules.c.body)
        .join(workspaces, workspaces.c.id == schedules.c.workspace_id)
        .where(schedules.c.id == schedule_id)
    ).first()
    if row is None or row.config is None or row.body is None:
        return None
    try:
        stored = load_config(row.config)
        body = load_body(row.body)
    except (ValueError, KeyError, TypeError):
        return None
    wanted = condition if condition is not None else stored.condition
    if wanted is None or not is_workspace_source(wanted):
        return None
    if body.checkpoint(source_key(wanted)) is not None:
        return None
    return row.id, str(row.path), wanted


def first_baseline(reading: Reading, now: datetime) -> Checkpoint | None:
    """The baseline a first Play (or a source added while running) takes from ``reading``:
    what it observed (``mission-completed``: nothing consumed yet); ``None`` when the read
    was blocked (the first slot then takes it)."""
    if isinstance(reading, Blocked):
        return None
    if reading.kind == "mission-completed":
        return Checkpoint(checkpoint=NOT_COMPLETED, at=now)
    return Checkpoint(checkpoint=reading.checkpoint, at=now, observation=reading.observation)
