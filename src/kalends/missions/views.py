"""What reads show of a schedule document: the list entry, the detail, a tombstone.

Projections are JSON-ready dicts (camelCase keys) built from one read of the row;
they never show environment values or other secrets of the runner profile, and
they never start or settle anything.

``state`` and ``desiredState`` are what the document records; ``displayState`` with
``displayReason`` is what really holds, for people (the first row that applies):

============  ===============================================================  ==============
displayState  when                                                             displayReason
============  ===============================================================  ==============
interrupted   running, with an interruption recorded                           its reason
finished      running, nothing pending and no slot left (the bound that ended  an EndReason
              it); no scheduler needs to hold it
interrupted   running with a slot or a pending passage left, and no live       no-scheduler
              scheduler holds its wake (seed 002: desired running without a
              live Job)
the desired   otherwise (paused, stopped, running and held)                    null
============  ===============================================================  ==============
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from kalends.civil import Rule, describe
from kalends.missions.config import Config, Profile, config_to_json
from kalends.missions.controls import ACTIONS, DocState, refusal
from kalends.missions.document import (
    Body,
    EndReason,
    PassageStatus,
    Phase,
    State,
    end_at,
    next_due,
    next_due_or_end,
    one_shot_slot,
    quota_exhausted,
    quota_limit,
    quota_used,
)
from kalends.missions.gate_records import GateOutcome, source_key
from kalends.missions.limits import ON_CHANGE_CHECK_MINUTES
from kalends.missions.rows import Schedule, ScheduleRead

__all__ = [
    "available_actions",
    "block_reason",
    "iso",
    "policy_sentence",
    "project",
    "project_tombstone",
    "source_block",
]


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


ON_CHANGE_SENTENCE = (
    f"Whenever the condition holds, checked every {ON_CHANGE_CHECK_MINUTES} minutes from Play"
)


def policy_sentence(config: Config) -> str:
    """The policy in words (:func:`kalends.civil.describe`; the event-only ``on-change``
    policy by its checks)."""
    return _sentence(config.policy, config.on_change)


@lru_cache(maxsize=1024)
def _sentence(rule: Rule, on_change: bool) -> str:
    # Projections are on the hot read paths; a policy is said once, not per read.
    return ON_CHANGE_SENTENCE if on_change else describe(rule)


def available_actions(doc: DocState) -> list[str]:
    """The controls :func:`refusal` allows now (durable-state candidates; every
    mutation checks again under its compare-and-swap)."""
    return [a.value for a in ACTIONS if refusal(a, doc) is None]


_UNSET: Any = object()


def block_reason(doc: DocState, due: datetime | None = _UNSET) -> str | None:
    """Why no new passage can start now, or ``None`` when the next slot may start one."""
    body = doc.body
    if doc.phase is not Phase.LIVE:
        return "deleting"
    if doc.state is State.STOPPED:
        return "stopped"
    if doc.state is State.PAUSED:
        return "paused"
    if body.interruption is not None:
        return "interrupted"
    if body.pending is not None:
        return "pending-passage"
    if quota_exhausted(doc.config, body):
        return "quota-exhausted"
    if (next_due(doc.config, body) if due is _UNSET else due) is None:
        return "ended"
    return source_block(doc)


def source_block(doc: DocState) -> str | None:
    """The source's ``blockReason`` when the last slot's read was blocked and that slot is
    still waiting (``source-missing``, ``source-unreadable``, ``source-cycle``, ...)."""
    body = doc.body
    if doc.config.condition is None or not body.gates:
        return None
    last = body.gates[-1]
    if last.outcome is not GateOutcome.BLOCKED:
        return None
    if body.high_water is not None and last.slot <= body.high_water:
        return None
    return last.reason


def _source(doc: DocState) -> dict[str, Any] | None:
    """What the condition's source shows: its baseline, the last read, and what the
    newest slots decided (newest first)."""
    condition = doc.config.condition
    if condition is None:
        return None
    body = doc.body
    key = source_key(condition)
    baseline = body.checkpoint(key)
    observed = body.observed if body.observed and body.observed.get("key") == key else None
    return {
        "key": key,
        "baseline": None if baseline is None else baseline.to_json(),
        "lastObservation": observed,
        "lastSlot": body.gates[-1].to_json() if body.gates else None,
        "slots": [g.to_json() for g in reversed(body.gates)],
        "otherCheckpoints": sorted(k for k, _ in body.sources if k != key),
    }


def _display_state(
    doc: DocState, scheduler: dict[str, Any] | None, ended: EndReason | None
) -> tuple[str, str | None]:
    """``(displayState, displayReason)``: what really holds (the table in the module
    docstring). ``scheduler``: :func:`_scheduler`'s read (``None``: not read); ``ended``:
    the bound that leaves a running schedule with nothing pending no slot."""
    body = doc.body
    if doc.state is State.RUNNING and doc.phase is Phase.LIVE:
        if body.interruption is not None:
            return "interrupted", body.interruption
        if body.pending is None and ended is not None:
            return "finished", ended.value
        if scheduler is not None and not scheduler["live"]:
            return "interrupted", "no-scheduler"
    return doc.state.value, None


def _pending(body: Body) -> dict[str, Any] | None:
    if body.pending is None:
        return None
    out = body.pending.to_json()
    profile = out.pop("profile", None) or {}
    if profile:
        out["profile"] = Profile(
            command=tuple(profile.get("command", ())),
            env=tuple((k, "") for k in profile.get("env", {})),
            cwd=profile.get("cwd", "."),
        ).public()
    return out


def _scheduler(row: Schedule, now: datetime | None) -> dict[str, Any] | None:
    """Whether a live scheduler holds the schedule's wake (``None``: not read)."""
    if now is None or not isinstance(row, ScheduleRead):
        return None
    live = row.wake_owner is not None and row.wake_lease is not None and row.wake_lease > now
    return {
        "live": live,
        "owner": row.wake_owner if live else None,
        "leaseExpiresAt": iso(row.wake_lease) if live else None,
    }


def _last_error(row: Schedule) -> dict[str, Any] | None:
    """The wake's last error (``None``: none, or the wake's columns not read)."""
    if not isinstance(row, ScheduleRead) or row.last_error_code is None:
        return None
    return {
        "code": row.last_error_code,
        "at": iso(row.last_error_at),
        "message": row.last_error_message,
    }


def project(doc: DocState, row: Schedule, *, now: datetime | None = None) -> dict[str, Any]:
    """The full detail of a live or deleting document. A running schedule with no slot
    left is displayed as finished; with ``now`` and the wake's columns on ``row``, one
    with work left that no live scheduler holds is displayed as Interrupted (seed 002:
    desired running without a live Job)."""
    config, body = doc.config, doc.body
    running = doc.state is State.RUNNING and doc.phase is Phase.LIVE
    scheduler = _scheduler(row, now)
    ahead = next_due_or_end(config, body) if running and body.pending is None else None
    due = ahead if isinstance(ahead, datetime) else None
    shown, reason = _display_state(doc, scheduler, ahead if isinstance(ahead, EndReason) else None)
    one_shot_at = (
        one_shot_slot(config, body.first_play_at)
        if config.one_shot and body.first_play_at is not None
        else None
    )
    limit = quota_limit(config)
    used = quota_used(body)
    pending = body.pending
    cfg = config_to_json(config)
    return {
        "id": str(doc.schedule_id),
        "workspaceId": str(row.workspace_id),
        "kind": config.kind,
        "title": config.title,
        "objective": config.objective,
        "notes": config.notes,
        "state": "interrupted" if running and body.interruption is not None else doc.state.value,
        "desiredState": doc.state.value,
        "interruptionReason": body.interruption,
        "displayState": shown,
        "displayReason": reason,
        "lastError": _last_error(row),
        "phase": doc.phase.value,
        "revision": row.revision,
        "configGeneration": body.config_generation,
        "temporalGeneration": body.temporal_generation,
        "policy": config.policy_json(),
        "sentence": policy_sentence(config),
        "condition": cfg["condition"],
        "watch": cfg["watch"],
        "end": cfg["end"],
        "restart": config.restart.value,
        "profile": config.profile.public(),
        "template": cfg["template"],
        "firstPlayAt": iso(body.first_play_at),
        "frozen": {"oneShotAt": iso(one_shot_at), "endAt": iso(end_at(config, body))},
        "highWater": iso(body.high_water),
        "counters": {
            "admitted": body.admitted,
            "settled": body.settled,
            "successful": body.successful,
        },
        "quota": {
            "max": limit,
            "used": used,
            "remaining": None if limit is None else max(0, limit - used),
        },
        "checks": {"count": body.checks_count, "since": iso(body.checks_since)},
        "source": _source(doc),
        "pending": _pending(body),
        "latestResult": body.results[-1].to_json() if body.results else None,
        "results": [r.to_json() for r in reversed(body.results)],
        "locks": {
            "structural": pending is not None,
            "template": body.task_created,
            "readOnly": pending is not None and pending.status is PassageStatus.UNCERTAIN,
        },
        "nextDueAt": iso(due),
        "observation": {"status": "idle"}
        if pending is None
        else {"status": pending.status.value, "passageId": pending.passage_id},
        "availableActions": available_actions(doc),
        "blockReason": block_reason(doc, due if running and body.pending is None else _UNSET),
        "technical": {
            "scheduler": scheduler,
            "slot": iso(pending.slot) if pending is not None else None,
            "configGeneration": body.config_generation,
            "temporalGeneration": body.temporal_generation,
            "pendingCleanup": doc.phase is Phase.DELETING,
        },
        "evictedControlRevision": row.evicted_control_revision,
        "size": row.size,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


def project_tombstone(row: Schedule) -> dict[str, Any]:
    return {
        "id": str(row.id),
        "workspaceId": str(row.workspace_id),
        "kind": "tombstone",
        "title": row.title,
        "revision": row.revision,
        "phase": Phase.TOMBSTONE.value,
        "deletedAt": iso(row.updated_at),
        "createdAt": iso(row.created_at),
    }
