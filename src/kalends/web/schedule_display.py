"""How a schedule document looks on a page: its state in a word and a symbol, its rule in
a sentence, its DST notes, and the gates before its next launch ("Why not now?").

Pure functions of the documents the services return (the API's detail projection); the
wording of bounds and conditions is the CLI's, so both edges say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kalends.cli.schedule_views import condition_text, display_zone, end_text

__all__ = [
    "ACTION_LABELS",
    "Badge",
    "Gate",
    "badge",
    "condition_text",
    "display_zone",
    "dst_note",
    "end_text",
    "sentence",
    "why_not_now",
]


# How a control is named on a page, by its action.
ACTION_LABELS: dict[str, str] = {
    "play": "Play",
    "resume": "Resume",
    "pause": "Pause",
    "stop": "Stop",
    "run-now": "Run now",
    "check": "Check",
    "configure": "Edit",
    "delete": "Delete",
}


@dataclass(frozen=True, slots=True)
class Badge:
    """A state as shown: a word, a symbol (decorative: the word says it) and a tone."""

    word: str
    symbol: str
    tone: str  # ok | warn | bad | idle


_BADGES: dict[str, Badge] = {
    "running": Badge("Running", "▶", "ok"),
    "paused": Badge("Paused", "‖", "warn"),
    "stopped": Badge("Stopped", "■", "idle"),
    "interrupted": Badge("Interrupted", "⚠", "bad"),
    "finished": Badge("Finished", "✓", "idle"),
    "deleting": Badge("Deleting", "…", "idle"),
    "deleted": Badge("Deleted", "✕", "idle"),
}


def badge(doc: Mapping[str, Any]) -> Badge:
    """The state that really holds (``displayState``), as a badge."""
    if doc.get("kind") == "tombstone":
        return _BADGES["deleted"]
    if doc.get("phase") == "deleting":
        return _BADGES["deleting"]
    shown = str(doc.get("displayState") or doc.get("state") or "")
    return _BADGES.get(shown, Badge(shown.capitalize() or "Unknown", "?", "idle"))


OUTCOME_BADGES: dict[str, Badge] = {
    "completed": Badge("Completed", "✓", "ok"),
    "failed": Badge("Failed", "✕", "bad"),
    "ended-without-report": Badge("Ended without report", "?", "warn"),
    "skipped": Badge("Skipped", "↷", "idle"),
}


def outcome_badge(outcome: str | None) -> Badge:
    if outcome is None:
        return Badge("Never run", "-", "idle")
    return OUTCOME_BADGES.get(outcome, Badge(outcome, "•", "idle"))


def sentence(doc: Mapping[str, Any]) -> str:
    """The schedule's rule in words: the document's ``sentence``, else its policy's kind."""
    said = doc.get("sentence")
    if isinstance(said, str) and said:
        return said
    policy = doc.get("policy") or {}
    return f"{policy.get('kind', 'no')} schedule"


def dst_note(slot: Mapping[str, Any]) -> str | None:
    """What a DST change did to a previewed slot, in words; ``None`` when nothing."""
    note = slot.get("dst")
    local = str(slot.get("local") or "")
    day, _, clock = local.partition("T")
    clock = clock[:5]
    if note == "shifted":
        return (
            f"the planned wall time does not exist on {day} (clocks go forward) — runs at {clock}"
        )
    if note == "earlier-of-two":
        return f"{clock} happens twice on {day} (clocks go back) — runs at the first"
    return None


@dataclass(frozen=True, slots=True)
class Gate:
    """One gate before the next launch: what it checks, whether it holds the launch back,
    and why."""

    name: str
    blocks: bool
    detail: str


def why_not_now(doc: Mapping[str, Any], now: datetime) -> list[Gate]:
    """The gates before the next launch, in the order the scheduler applies them: the
    state (paused, stopped), the end bounds, the quota, the source condition, a pending
    passage, and the next slot itself."""
    gates: list[Gate] = []
    state = str(doc.get("state") or "")
    shown = str(doc.get("displayState") or state)
    desired = str(doc.get("desiredState") or state)
    if desired == "running":
        gates.append(Gate("State", shown == "interrupted", _state_detail(doc, shown)))
    else:
        gates.append(Gate("State", True, f"the schedule is {desired}: Play or Resume starts it"))
    end = doc.get("end") or {}
    reason = str(doc.get("displayReason") or "")
    ended = reason in ("until-reached", "within-reached", "one-shot-done", "no-more-slots")
    if ended:
        bound = f"ended: {reason.replace('-', ' ')}"
    else:
        bound = "none set" if end_text(end) == "none" else f"not reached ({end_text(end)})"
    gates.append(Gate("End bounds", ended, bound))
    quota = doc.get("quota") or {}
    limit = quota.get("max")
    used = quota.get("used", 0)
    if limit is None:
        gates.append(Gate("Quota", False, f"{used} passage(s) admitted, no limit"))
    else:
        gates.append(Gate("Quota", used >= limit, f"{used} of {limit} passage(s) used"))
    condition = doc.get("condition")
    if condition:
        source = doc.get("source") or {}
        last = source.get("lastSlot") or {}
        outcome = str(last.get("outcome") or "")
        said = condition_text(condition)
        blocked = str(doc.get("blockReason") or "").startswith("source")
        if blocked:
            detail = f"cannot be read: {doc.get('blockReason')}"
        elif outcome == "skipped":
            why = f" ({last.get('reason')})" if last.get("reason") else ""
            detail = f"unchanged at the last slot{why}: launches only when {said}"
        elif outcome:
            detail = f"last slot: {outcome} ({said})"
        else:
            detail = f"read at the next slot: launches only when {said}"
        unchanged = outcome == "skipped"
        gates.append(Gate("Condition", blocked or unchanged, detail))
    pending = doc.get("pending")
    if pending:
        gates.append(
            Gate(
                "Pending passage",
                True,
                f"passage {pending.get('passageId')} is {pending.get('status')}: "
                "a new one waits until it settles",
            )
        )
    else:
        gates.append(Gate("Pending passage", False, "none"))
    due = doc.get("nextDueAt")
    if desired != "running":
        return gates
    gates.append(
        Gate(
            "Next slot",
            due is None,
            "no further slot" if due is None else "the next launch is at the slot shown",
        )
    )
    return gates


def _state_detail(doc: Mapping[str, Any], shown: str) -> str:
    if shown == "interrupted":
        return f"interrupted: {doc.get('interruptionReason') or doc.get('displayReason')}"
    if shown == "finished":
        return "running, with nothing left to launch"
    return "running"
