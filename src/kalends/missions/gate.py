"""The source gate of a conditioned slot, as pure rules: what a read of the source makes of
the document at that slot.

Seed 002 "Visible timing, limits and editing" and the five source conditions:
calendar-backed policies read their condition only at their slots (the event-only
``on-change`` policy at its 15-minute checks); a pending passage freezes the observed
proof, and only a successful settlement consumes it
(:func:`~kalends.missions.document.archive`). A slot's read ends one of three ways:

=====================  =====================================  ========  ===========  ======
the read               the document                           passage   high-water   checks
=====================  =====================================  ========  ===========  ======
blocked (missing,      the slot kept, ``blockReason`` shown,  none      unchanged    +0
unreadable, cycle,     read again later
no proof)
no baseline yet        the baseline taken from the read;      none      the slot     +0
                       the slot skipped (``baseline``)
unchanged              the slot skipped (``unchanged``)       none      the slot     +1
changed                the passage reserved with the proof    reserved  the slot     +1
=====================  =====================================  ========  ===========  ======

Nothing here reads a clock, a file or the database: :mod:`kalends.missions.source_reads`
makes the :data:`Reading`, the scheduler writes the body this module returns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from kalends.missions.controls import DocState
from kalends.missions.document import Body, with_checkpoint
from kalends.missions.gate_records import NOT_COMPLETED, Checkpoint, GateOutcome, GateRecord
from kalends.missions.limits import MAX_GATE_RECORDS
from kalends.missions.passages import reservation
from kalends.missions.sources.outcomes import instant_text

__all__ = ["Blocked", "Observed", "Reading", "gate", "holds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """A completed, revalidated read of the source ``key`` at ``at``: its ``checkpoint``,
    the observation as stored, and what changed since ``baseline`` (the checkpoint the
    read compared with; ``None`` when there was none) as the proof's ``change``."""

    key: str
    kind: str
    at: datetime
    checkpoint: str
    observation: dict[str, Any]
    baseline: str | None
    change: dict[str, Any] | None = None

    def proof(self) -> dict[str, Any]:
        """What the pending passage freezes (and its input file carries)."""
        return {
            "key": self.key,
            "kind": self.kind,
            "checkpoint": self.checkpoint,
            "baseline": self.baseline,
            "observedAt": self.observation.get("observedAt"),
            "observation": self.observation,
            "change": self.change,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Blocked:
    """A read of the source ``key`` that did not complete: ``reason`` is the
    ``blockReason`` (``source-missing``, ``source-unreadable``, ``source-cycle``, ...)."""

    key: str
    kind: str
    at: datetime
    reason: str
    detail: str


Reading = Observed | Blocked


def holds(body: Body, reading: Observed) -> bool | None:
    """Whether the condition holds: the read's checkpoint differs from the baseline
    (``None``: the source has no baseline yet)."""
    baseline = body.checkpoint(reading.key)
    if baseline is None:
        if reading.kind == "mission-completed":  # (its baseline is known without a read)
            return reading.checkpoint != NOT_COMPLETED
        return None
    return reading.checkpoint != baseline.checkpoint


def gate(
    doc: DocState, slot: datetime, now: datetime, reading: Reading
) -> tuple[Body, GateOutcome]:
    """The body after the conditioned ``slot`` read ``reading`` at ``now`` (the table in the
    module docstring), and what the slot decided."""
    body = doc.body
    if isinstance(reading, Blocked):
        observed = {
            "key": reading.key,
            "kind": reading.kind,
            "blockReason": reading.reason,
            "detail": reading.detail,
            "at": instant_text(reading.at),
        }
        record = GateRecord(
            slot=slot, at=now, outcome=GateOutcome.BLOCKED, reason=reading.reason,
            detail=reading.detail,
        )  # fmt: skip
        return _recorded(replace(body, observed=observed), record), GateOutcome.BLOCKED
    observed = {"key": reading.key, "kind": reading.kind, **reading.observation}
    changed = holds(body, reading)
    if changed is None:
        taken = Checkpoint(checkpoint=reading.checkpoint, at=now, observation=reading.observation)
        body = with_checkpoint(body, reading.key, taken)
        record = GateRecord(
            slot=slot, at=now, outcome=GateOutcome.SKIPPED, reason="baseline",
            detail="the source had no baseline: this read is its baseline",
        )  # fmt: skip
        body = replace(body, observed=observed, high_water=slot)
        return _recorded(body, record), GateOutcome.SKIPPED
    checks = body.checks_count + 1
    if body.checks_since is None:  # (seed 002: a document without tracking begins here)
        body = replace(body, checks_since=now)
    if not changed:
        record = GateRecord(
            slot=slot, at=now, outcome=GateOutcome.SKIPPED, reason="unchanged",
            detail="the source is as at its baseline",
        )  # fmt: skip
        body = replace(body, observed=observed, high_water=slot, checks_count=checks)
        return _recorded(body, record), GateOutcome.SKIPPED
    reserved = reservation(doc, slot, now)
    assert reserved.pending is not None
    pending = replace(reserved.pending, proof=reading.proof())
    record = GateRecord(
        slot=slot, at=now, outcome=GateOutcome.LAUNCHED, reason="changed",
        detail=_said(reading),
    )  # fmt: skip
    body = replace(reserved, pending=pending, observed=observed, checks_count=checks)
    return _recorded(body, record), GateOutcome.LAUNCHED


def _recorded(body: Body, record: GateRecord) -> Body:
    """``body`` with ``record`` as its newest gate record; a repeat of the newest (the same
    slot blocked for the same reason, read again) replaces it."""
    gates = body.gates
    if gates and gates[-1].slot == record.slot and gates[-1].outcome is record.outcome:
        gates = gates[:-1]
    return replace(body, gates=(*gates, record)[-MAX_GATE_RECORDS:])


def _said(reading: Observed) -> str:
    """One line of what changed."""
    change = reading.change or {}
    if reading.kind == "git-branch":
        commits = change.get("commits") or []
        more = "+" if change.get("truncated") else ""
        return f"{len(commits)}{more} new commit(s), now at {reading.checkpoint[:12]}"
    if reading.kind == "files":
        parts = [
            f"{len(change.get(k) or [])} {k}"
            for k in ("added", "modified", "removed")
            if change.get(k)
        ]
        return "files changed: " + (", ".join(parts) or "the set's digest")
    if reading.kind == "conversation":
        count = int(change.get("messages") or 0)
        where = len(change.get("conversations") or [])
        return f"{count} new message(s) in {where} followed conversation(s)"
    if reading.kind == "schedule-succeeded":
        return f"the followed schedule succeeded (success count {reading.checkpoint})"
    return "the followed one-time schedule completed"
