"""The runtime part of a schedule document, and the pure rules that read it.

The stored body (``"v": 1``) holds what controls and the scheduler change:
configuration and temporal generations, the first Play and the origins it
freezes, the high-water mark of processed slots, counters that outlive the
30-result window, the ``checks`` counter, the pending passage, the results, an
interruption and the task-created mark. Nothing here reads a clock: every
function that needs the time takes ``now``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import orjson

from kalends.civil import (
    After,
    At,
    Immediate,
    latest_due,
    next_slot,
    next_slots,
    resolve_user_local,
    wall_of,
)
from kalends.civil.search import DstNote, Slot
from kalends.errors import InvalidInput
from kalends.missions.config import Config
from kalends.missions.gate_records import Checkpoint, GateRecord
from kalends.missions.limits import (
    MAX_REASON_BYTES,
    MAX_RESULTS,
    MAX_SOURCE_CHECKPOINTS,
    MAX_SUMMARY_BYTES,
)
from kalends.missions.stored_text import fit_stored

__all__ = [
    "BODY_VERSION",
    "Body",
    "DstNote",
    "EndReason",
    "Phase",
    "check_not_past",
    "latest_missed",
    "quota_exhausted",
    "quota_limit",
    "PassageStatus",
    "Pending",
    "Result",
    "State",
    "archive",
    "consumed",
    "dump_body",
    "end_at",
    "load_body",
    "manual_identity",
    "next_due",
    "next_due_or_end",
    "one_shot_slot",
    "preview_slots",
    "quota_used",
    "with_checkpoint",
]

BODY_VERSION = 1


class State(StrEnum):
    """The desired state; stopped is terminal."""

    PAUSED = "paused"
    RUNNING = "running"
    STOPPED = "stopped"


class Phase(StrEnum):
    """Where a document is in its life: live, deleted but not yet reconciled, a tombstone."""

    LIVE = "live"
    DELETING = "deleting"
    TOMBSTONE = "tombstone"


class PassageStatus(StrEnum):
    """Seed 002 "Daily document snapshot": the pending passage's status."""

    STARTING = "starting"
    RUNNING = "running"
    SETTLING = "settling"
    UNCERTAIN = "uncertain"


def _iso(value: datetime | None) -> str | None:
    """An instant as stored: UTC, ``Z``; the text of a recent instant is remembered (a
    round writes its instant and its slot into every document it reserves)."""
    if value is None:
        return None
    text = _ISO.get(value)
    if text is None:
        text = value.astimezone(UTC).isoformat().replace("+00:00", "Z")
        if len(_ISO) >= _ISO_KEPT:
            _ISO.clear()
        _ISO[value] = text
    return text


# Equal instants are equal whatever their zone, and are written alike (in UTC).
_ISO: dict[datetime, str] = {}
_ISO_KEPT = 4096


def _instant(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"not an instant: {value!r}")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"instant without an offset: {value!r}")
    return parsed.astimezone(UTC)


def _proof(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("key"), str):
        raise ValueError("a pending passage's proof is an object naming its source key")
    if not isinstance(value.get("checkpoint"), str):
        raise ValueError("a pending passage's proof names the checkpoint it consumes")
    return value


def _node(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError("a pending passage's node is the ID of a worker node")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    """The passage between reservation and archive, with its exact identities."""

    passage_id: str
    session_id: str
    message_id: str
    trigger: str  # "scheduled" or "manual"
    slot: datetime | None
    request_id: str | None
    status: PassageStatus
    admitted: bool
    reserved_at: datetime
    admitted_at: datetime | None = None
    reason: str | None = None
    profile: dict[str, Any] = field(default_factory=dict)
    config_generation: int = 1
    temporal_generation: int = 1
    checklist_id: str | None = None
    """The task checklist made from the template for this passage (its root task)."""
    proof: dict[str, Any] | None = None
    """The source observation frozen at the reservation (conditioned slots): its source
    ``key``, the ``checkpoint`` a successful settlement consumes, the ``observation`` and
    what changed since the baseline (``change``)."""
    node: str | None = None
    """The worker node whose scheduler reserved it, or admitted it after its reserving
    node answered it never did (issue 23 §3); ``None`` when reserved by a scheduler that
    is not a node (the memory runtime) or by a control (Run now) until a node admits
    it. A scheduler on another node observes it through the database, never locally."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "passageId": self.passage_id,
            "sessionId": self.session_id,
            "messageId": self.message_id,
            "trigger": self.trigger,
            "slot": _iso(self.slot),
            "requestId": self.request_id,
            "status": self.status.value,
            "admitted": self.admitted,
            "reservedAt": _iso(self.reserved_at),
            "admittedAt": _iso(self.admitted_at),
            "reason": self.reason,
            "profile": self.profile,
            "configGeneration": self.config_generation,
            "temporalGeneration": self.temporal_generation,
        }
        if self.checklist_id is not None:
            out["checklistId"] = self.checklist_id
        if self.proof is not None:
            out["proof"] = self.proof
        if self.node is not None:
            out["node"] = self.node
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Pending:
        reserved = _instant(d["reservedAt"])
        assert reserved is not None
        return cls(
            passage_id=d["passageId"],
            session_id=d["sessionId"],
            message_id=d["messageId"],
            trigger=d["trigger"],
            slot=_instant(d.get("slot")),
            request_id=d.get("requestId"),
            status=PassageStatus(d["status"]),
            admitted=bool(d["admitted"]),
            reserved_at=reserved,
            admitted_at=_instant(d.get("admittedAt")),
            reason=d.get("reason"),
            profile=dict(d.get("profile") or {}),
            config_generation=int(d.get("configGeneration", 1)),
            temporal_generation=int(d.get("temporalGeneration", 1)),
            checklist_id=d.get("checklistId"),
            proof=_proof(d.get("proof")),
            node=_node(d.get("node")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """One archived passage (seed 002 "Settlement, result and watched cursors")."""

    passage_id: str
    trigger: str
    slot: datetime | None
    outcome: str  # completed | failed | ended-without-report
    reason: str | None
    summary: str
    admitted_at: datetime | None
    settled_at: datetime
    checklist: dict[str, Any] | None = None
    """The passage's checklist at settlement: ``{"id", "open", "done"}``."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "passageId": self.passage_id,
            "trigger": self.trigger,
            "slot": _iso(self.slot),
            "outcome": self.outcome,
            "reason": self.reason,
            "summary": self.summary,
            "admittedAt": _iso(self.admitted_at),
            "settledAt": _iso(self.settled_at),
        }
        if self.checklist is not None:
            out["checklist"] = self.checklist
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Result:
        settled = _instant(d["settledAt"])
        assert settled is not None
        return cls(
            passage_id=d["passageId"],
            trigger=d["trigger"],
            slot=_instant(d.get("slot")),
            outcome=d["outcome"],
            reason=d.get("reason"),
            summary=d.get("summary", ""),
            admitted_at=_instant(d.get("admittedAt")),
            settled_at=settled,
            checklist=d.get("checklist"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Body:
    """The runtime part of a schedule document."""

    config_generation: int = 1
    temporal_generation: int = 1
    first_play_at: datetime | None = None
    last_play_at: datetime | None = None
    last_pause_at: datetime | None = None
    high_water: datetime | None = None
    admitted: int = 0
    settled: int = 0
    successful: int = 0
    checks_count: int = 0
    checks_since: datetime | None = None
    pending: Pending | None = None
    results: tuple[Result, ...] = ()
    interruption: str | None = None
    interrupted_at: datetime | None = None
    task_created: bool = False
    deleted_at: datetime | None = None
    sources: tuple[tuple[str, Checkpoint], ...] = ()
    """Every source's checkpoint by :func:`~kalends.missions.gate_records.source_key`,
    kept when a configuration removes the source."""
    observed: dict[str, Any] | None = None
    """The last completed or blocked read of the current source (its ``key`` included)."""
    gates: tuple[GateRecord, ...] = ()
    """What the newest slots of a conditioned schedule decided, oldest first."""

    def checkpoint(self, key: str) -> Checkpoint | None:
        """The checkpoint of the source ``key``, ``None`` before its baseline."""
        for k, c in self.sources:
            if k == key:
                return c
        return None

    def to_json(self) -> dict[str, Any]:
        out = {
            "v": BODY_VERSION,
            "configGeneration": self.config_generation,
            "temporalGeneration": self.temporal_generation,
            "firstPlayAt": _iso(self.first_play_at),
            "lastPlayAt": _iso(self.last_play_at),
            "lastPauseAt": _iso(self.last_pause_at),
            "highWater": _iso(self.high_water),
            "counters": {
                "admitted": self.admitted,
                "settled": self.settled,
                "successful": self.successful,
            },
            "checks": {"count": self.checks_count, "since": _iso(self.checks_since)},
            "pending": None if self.pending is None else self.pending.to_json(),
            "results": [r.to_json() for r in self.results],
            "interruption": None
            if self.interruption is None
            else {"reason": self.interruption, "at": _iso(self.interrupted_at)},
            "taskCreated": self.task_created,
            "deletedAt": _iso(self.deleted_at),
        }
        if self.sources:
            out["sources"] = {k: c.to_json() for k, c in self.sources}
        if self.observed is not None:
            out["observed"] = self.observed
        if self.gates:
            out["gates"] = [g.to_json() for g in self.gates]
        return out


def dump_body(body: Body) -> str:
    """The stored text of a body: compact JSON, non-ASCII characters as they are (as
    ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` writes it, but for a
    float's spelling), made by orjson: a scheduler writes two bodies an admission."""
    data = body.to_json()
    try:
        return orjson.dumps(data).decode()
    except TypeError:  # an integer past 64 bits in a profile or observation
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def load_body(text: str) -> Body:
    """A stored body; raises ``ValueError`` (or ``KeyError``) when it does not parse."""
    d = json.loads(text)
    if not isinstance(d, dict) or d.get("v") != BODY_VERSION:
        raise ValueError(f"unknown body version {d.get('v') if isinstance(d, dict) else d!r}")
    counters = d["counters"]
    checks = d["checks"]
    interruption = d.get("interruption")
    results = tuple(Result.from_json(r) for r in d["results"])
    if len(results) > MAX_RESULTS:
        raise ValueError(f"{len(results)} results, over the bound of {MAX_RESULTS}")
    return Body(
        config_generation=int(d["configGeneration"]),
        temporal_generation=int(d["temporalGeneration"]),
        first_play_at=_instant(d.get("firstPlayAt")),
        last_play_at=_instant(d.get("lastPlayAt")),
        last_pause_at=_instant(d.get("lastPauseAt")),
        high_water=_instant(d.get("highWater")),
        admitted=int(counters["admitted"]),
        settled=int(counters["settled"]),
        successful=int(counters["successful"]),
        checks_count=int(checks["count"]),
        checks_since=_instant(checks.get("since")),
        pending=None if d.get("pending") is None else Pending.from_json(d["pending"]),
        results=results,
        interruption=None if interruption is None else interruption["reason"],
        interrupted_at=None if interruption is None else _instant(interruption.get("at")),
        task_created=bool(d.get("taskCreated", False)),
        deleted_at=_instant(d.get("deletedAt")),
        sources=tuple(
            (str(k), Checkpoint.from_json(v)) for k, v in (d.get("sources") or {}).items()
        ),
        observed=d.get("observed"),
        gates=tuple(GateRecord.from_json(g) for g in d.get("gates") or ()),
    )


# --- quota, end bounds and slots ------------------------------------------------------


def quota_limit(config: Config) -> int | None:
    """How many passages may ever be admitted: one for one-shot policies."""
    limit = config.end.max_passages
    if config.one_shot:
        return 1 if limit is None else min(limit, 1)
    return limit


def quota_used(body: Body) -> int:
    """Admitted passages, plus a reserved passage not yet admitted (seed 002: an
    uncertain admission keeps its reservation until reconciliation)."""
    reserved = body.pending is not None and not body.pending.admitted
    return body.admitted + (1 if reserved else 0)


def quota_exhausted(config: Config, body: Body) -> bool:
    limit = quota_limit(config)
    return limit is not None and quota_used(body) >= limit


def end_at(config: Config, body: Body, *, origin: datetime | None = None) -> datetime | None:
    """The earliest time bound: the absolute last slot, or the elapsed end from first Play.

    ``origin`` stands in for a first Play that has not happened (previews).
    """
    bounds = []
    if config.end.until is not None:
        bounds.append(config.end.until)
    start = body.first_play_at or origin
    if config.end.within is not None and start is not None:
        bounds.append(start + config.end.within)
    return min(bounds) if bounds else None


def one_shot_slot(config: Config, origin: datetime) -> datetime:
    """The one slot of a one-shot policy whose relative origin is ``origin``."""
    policy = config.policy
    if isinstance(policy, Immediate):
        return origin
    if isinstance(policy, At):
        return resolve_user_local(policy.local, policy.zone)
    assert isinstance(policy, After)
    return origin + timedelta(seconds=policy.seconds)


class EndReason(StrEnum):
    """Which bound leaves a played schedule no slot to launch: what "finished" shows."""

    ONE_SHOT_DONE = "one-shot-done"  # a one-shot policy's single passage is used
    QUOTA_EXHAUSTED = "quota-exhausted"  # end.maxPassages passages were admitted
    UNTIL_REACHED = "until-reached"  # the next slot would be after end.until
    WITHIN_REACHED = "within-reached"  # the next slot would be after first Play + end.within
    NO_MORE_SLOTS = "no-more-slots"  # the policy has no further slot (within 100 years)


def next_due_or_end(config: Config, body: Body) -> datetime | EndReason | None:
    """The first slot newer than the high-water mark under the end bounds and the quota,
    or the bound that leaves none; ``None`` before the first Play.

    One reading for two readers: the scheduler drops a running schedule's wake exactly
    when no slot is left, and reads show that schedule as finished with this reason.
    """
    origin = body.first_play_at
    if origin is None:
        return None
    if quota_exhausted(config, body):
        return EndReason.ONE_SHOT_DONE if config.one_shot else EndReason.QUOTA_EXHAUSTED
    end = end_at(config, body)
    if config.one_shot:
        at = one_shot_slot(config, origin)
        if body.high_water is not None and at <= body.high_water:
            return EndReason.ONE_SHOT_DONE
    else:
        found = next_slot(config.policy, body.high_water or origin, origin=origin)
        if found is None:
            return EndReason.NO_MORE_SLOTS
        at = found.at
    if end is not None and at > end:
        return EndReason.UNTIL_REACHED if end == config.end.until else EndReason.WITHIN_REACHED
    return at


def next_due(config: Config, body: Body) -> datetime | None:
    """The first slot newer than the high-water mark under the end bounds and the quota.

    Display only (seed 002: ``nextDueAt`` is a projection; the scheduler decides from
    the recorded slots). ``None`` before the first Play, or when nothing is left.
    """
    found = next_due_or_end(config, body)
    return found if isinstance(found, datetime) else None


def latest_missed(config: Config, body: Body, now: datetime) -> Slot | None:
    """The latest slot newer than the high-water mark and not after ``now`` (catch-up)."""
    origin = body.first_play_at
    if origin is None:
        return None
    if config.one_shot:
        at = one_shot_slot(config, origin)
        if at > now or (body.high_water is not None and at <= body.high_water):
            return None
        policy = config.policy
        slot: Slot | None = (
            Slot(at, wall_of(at, policy.zone), policy.zone, None)
            if isinstance(policy, At)
            else Slot(at, at.replace(tzinfo=None), "UTC", None)
        )
    else:
        slot = latest_due(config.policy, now, high_water=body.high_water, origin=origin)
    end = end_at(config, body)
    if slot is None or (end is not None and slot.at > end):
        return None
    return slot


def preview_slots(config: Config, body: Body, now: datetime, count: int) -> list[Slot]:
    """The next ``count`` slots under the policy, the end bounds and the quota.

    Before the first Play the slots are shown as if Play happened at ``now``.
    """
    origin = body.first_play_at or now
    end = end_at(config, body, origin=origin)
    limit = quota_limit(config)
    room = count if limit is None else max(0, min(count, limit - quota_used(body)))
    if room == 0:
        return []
    if config.one_shot:
        at = one_shot_slot(config, origin)
        if body.high_water is not None and at <= body.high_water:
            return []
        slots = [Slot(at, at.replace(tzinfo=None), "UTC", None)]
    else:
        after = body.high_water or (origin if body.first_play_at else now)
        slots = next_slots(config.policy, after, room, origin=origin)
    return [s for s in slots if end is None or s.at <= end]


def manual_identity(schedule_id: str, request_id: str) -> tuple[str, str, str]:
    """The passage, session and message IDs of a Run now, derived from its request."""

    def derive(role: str) -> str:
        seed = f"{schedule_id}\x00manual\x00{request_id}\x00{role}"
        return hashlib.sha256(seed.encode()).hexdigest()[:26]

    return f"psg_{derive('passage')}", f"ses_{derive('session')}", f"msg_{derive('message')}"


def with_checkpoint(body: Body, key: str, checkpoint: Checkpoint) -> Body:
    """``body`` with the source ``key`` at ``checkpoint`` (added, or replacing its own, and
    then the newest); the checkpoints of removed sources beyond the newest
    :data:`~kalends.missions.limits.MAX_SOURCE_CHECKPOINTS` are dropped, oldest first."""
    kept = tuple((k, c) for k, c in body.sources if k != key)
    kept = kept[max(0, len(kept) - (MAX_SOURCE_CHECKPOINTS - 1)) :]
    return replace(body, sources=(*kept, (key, checkpoint)))


def consumed(proof: dict[str, Any], result: Result) -> Checkpoint:
    """The checkpoint a successful settlement leaves: the frozen proof's."""
    observation = proof.get("observation")
    return Checkpoint(
        checkpoint=proof["checkpoint"],
        at=result.settled_at,
        observation=observation if isinstance(observation, dict) else None,
    )


def archive(body: Body, result: Result) -> Body:
    """Archive ``result``: keep the newest 30, count it, clear pending (seed 002). Its
    summary and reason are cut to their byte bounds, so the document fits whatever the
    runtime reported (``missions/limits.py``)."""
    result = replace(
        result,
        summary=fit_stored(result.summary, MAX_SUMMARY_BYTES),
        reason=None if result.reason is None else fit_stored(result.reason, MAX_REASON_BYTES),
    )
    results = (*body.results, result)[-MAX_RESULTS:]
    successful = body.successful + (1 if result.outcome == "completed" else 0)
    pending = body.pending
    if result.outcome == "completed" and pending is not None and pending.proof is not None:
        # Seed 002: only successful settlement consumes the frozen proof; the baseline
        # advances to it in this same compare-and-swap. Failures leave it, so the next
        # slot sees the change again.
        body = with_checkpoint(body, pending.proof["key"], consumed(pending.proof, result))
    high_water = body.high_water
    if result.slot is not None and (high_water is None or result.slot > high_water):
        high_water = result.slot
    return replace(
        body,
        results=results,
        settled=body.settled + 1,
        successful=successful,
        pending=None,
        high_water=high_water,
    )


def check_not_past(config: Config, now: datetime) -> None:
    """First Play refuses an ``at`` or an absolute end already in the past."""
    if isinstance(config.policy, At):
        at = one_shot_slot(config, now)
        if at <= now:
            raise InvalidInput(
                f"policy.local: {config.policy.local.isoformat()} in {config.policy.zone} "
                "is already past; choose a future time",
                field="policy.local",
            )
    if config.end.until is not None and config.end.until <= now:
        raise InvalidInput(
            "end.until: the last slot bound is already past; nothing could ever launch",
            field="end.until",
        )
