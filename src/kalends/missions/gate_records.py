"""What a conditioned schedule's document keeps of its source: the checkpoint of each
source it ever followed, what the last read found, and what its last slots decided.

Seed 002: "First Play establishes their baseline, Pause/Resume preserves it, and
configuration retains removed source checkpoints". Each source is keyed by what it reads
(:func:`source_key`), so a configuration that removes a source and adds it back resumes
from its checkpoint. These are values with ``to_json`` / ``from_json``; the rules that
change them are :mod:`kalends.missions.gate`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from kalends.missions.config_condition import Condition
from kalends.missions.sources.outcomes import instant_text, parse_instant

__all__ = ["COMPLETED", "NOT_COMPLETED", "Checkpoint", "GateOutcome", "GateRecord", "source_key"]

COMPLETED = "completed"
"""A ``mission-completed`` source's checkpoint once its completion is consumed."""
NOT_COMPLETED = "pending"
"""A ``mission-completed`` source's baseline: nothing consumed (a completion before the
first Play still launches once)."""


def source_key(condition: Condition) -> str:
    """What identifies a source across configurations: its kind and what it reads
    (``git-branch`` the repository path and branch, ``files`` the sorted paths, the record
    kinds the mission they follow)."""
    spec = dict(condition.spec)
    if condition.kind == "git-branch":
        return f"git-branch:{spec['path']}:{spec['branch']}"
    if condition.kind == "files":
        return "files:" + json.dumps(sorted(spec["paths"]), separators=(",", ":"))
    if condition.kind == "conversation":
        return "conversation:" + json.dumps(sorted(spec["conversationIds"]), separators=(",", ":"))
    return f"{condition.kind}:{spec['missionId']}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """A source's baseline: the ``checkpoint`` it is compared with (a commit, a file-set
    digest, a success count, a consumed completion), when it was taken, and the
    observation it came from when a proof needs it (the per-file digests of a file set)."""

    checkpoint: str
    at: datetime
    observation: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"checkpoint": self.checkpoint, "at": instant_text(self.at)}
        if self.observation is not None:
            out["observation"] = dict(self.observation)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Checkpoint:
        checkpoint = d["checkpoint"]
        if not isinstance(checkpoint, str):
            raise ValueError("a checkpoint is a string")
        observation = d.get("observation")
        if observation is not None and not isinstance(observation, Mapping):
            raise ValueError("a checkpoint's observation is an object")
        return cls(checkpoint=checkpoint, at=parse_instant(d["at"]), observation=observation)


class GateOutcome(StrEnum):
    """What a slot of a conditioned schedule decided."""

    LAUNCHED = "launched"
    """The condition held: a passage was reserved with the observed proof."""
    SKIPPED = "skipped"
    """The condition did not hold (or the slot took the source's first baseline): no
    passage; the slot is consumed."""
    BLOCKED = "blocked"
    """The source could not be read completely: no passage, the slot is kept and read
    again; ``reason`` is the ``blockReason``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GateRecord:
    """One slot's decision: the slot, when it was decided, the outcome, a reason code
    (``changed``, ``unchanged``, ``baseline``, a ``blockReason``) and one line of detail."""

    slot: datetime
    at: datetime
    outcome: GateOutcome
    reason: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "slot": instant_text(self.slot),
            "at": instant_text(self.at),
            "outcome": self.outcome.value,
            "reason": self.reason,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GateRecord:
        return cls(
            slot=parse_instant(d["slot"]),
            at=parse_instant(d["at"]),
            outcome=GateOutcome(d["outcome"]),
            reason=str(d["reason"]),
            detail=str(d.get("detail", "")),
        )
