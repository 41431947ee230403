"""The slot ledger's rows, as pure rules: what each decision about a schedule's slots
records (issue 24 §1).

Every nominal slot of a running schedule gets one row when it is decided, in the
transaction of the write that decides it:

==========================  ==========================================================
the decision                the rows
==========================  ==========================================================
a slot launches             ``launched`` (its passage; ``dst-shifted`` when moved out
                            of a DST gap); each older missed slot ``coalesced`` into it
                            with the reason it was missed
a conditioned slot skips    ``skipped`` ``condition-false``; older missed slots
                            ``skipped`` with the reason they were missed
the schedule ends           the slots up to now and the next one ``skipped``
                            ``quota`` or ``end-bound``
Play after a pause          the slots passed over ``skipped`` ``paused`` (seed 002: a
                            paused calendar resumes at a future slot)
Stop                        the slots passed over and the next one ``skipped``
                            ``stopped``
==========================  ==========================================================

Each passing also records the nominal slots the rule does not produce
(:func:`~kalends.civil.missing.missing_slots`: ``dst-gap``, ``day-missing``). A missed
slot was missed because a passage was pending (``pending-passage``: seed 002 allows at
most one), its source could not be read (``condition-false``), or otherwise because no
scheduler looked at it in time (``no-scheduler``: an outage). A passing writes at most
:data:`MAX_PASSED_ROWS` rows; the older rest become one summary row.

Nothing here reads a clock or the database: :mod:`kalends.missions.ledger_writes`
writes what these functions return.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from kalends.civil import Slot, next_slot, next_slots
from kalends.civil.missing import Missing, missing_slots
from kalends.civil.search import DstNote
from kalends.missions.config import Config
from kalends.missions.document import Body, EndReason, end_at, quota_limit
from kalends.missions.gate_records import GateOutcome

__all__ = [
    "LATE_AFTER",
    "MAX_PASSED_ROWS",
    "RETAIN_AGE",
    "RETAIN_ROWS",
    "Entry",
    "Outcome",
    "Reason",
    "end_entries",
    "entry_json",
    "iso",
    "launch_entries",
    "local_text",
    "passed_entries",
    "play_entries",
    "skip_entries",
    "stop_entries",
]

# Issue 24 §1: the slots of an outage are written when the scheduler comes back, at most
# 1,000 rows per outage per schedule, the rest summarised in one row.
MAX_PASSED_ROWS = 1_000
# Issue 24 §1: retention per schedule, the last 1,000 rows or 90 days, whichever is more.
RETAIN_ROWS = 1_000
RETAIN_AGE = timedelta(days=90)
# kalends decision: a launch this long after its slot says when it came (caught up).
LATE_AFTER = timedelta(minutes=1)
# How many slots one engine call enumerates while a passing is counted.
_CHUNK = 4_096


class Outcome(StrEnum):
    """What became of a slot."""

    LAUNCHED = "launched"
    COALESCED = "coalesced"
    SKIPPED = "skipped"
    MOVED = "moved"


class Reason(StrEnum):
    """Why a slot did not launch on time (or, ``dst-shifted``, launched moved)."""

    PAUSED = "paused"
    STOPPED = "stopped"
    END_BOUND = "end-bound"
    QUOTA = "quota"
    CONDITION_FALSE = "condition-false"
    PENDING_PASSAGE = "pending-passage"
    NO_SCHEDULER = "no-scheduler"
    DST_GAP = "dst-gap"
    DST_SHIFTED = "dst-shifted"
    DAY_MISSING = "day-missing"
    ZONE_RULES_CHANGED = "zone-rules-changed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One ledger row of a schedule (its schedule and decision time are the writer's).

    ``key`` identifies the slot: its instant for a slot that exists, ``missing:`` with
    its wall time and zone for one that does not, ``summary:`` with the first slot's
    instant for a summary row standing for ``slots`` slots from ``at`` to ``through``."""

    key: str
    at: datetime
    local: str
    zone: str
    outcome: Outcome
    reason: Reason | None = None
    note: str | None = None
    passage_id: str | None = None
    detail: str | None = None
    slots: int = 1
    through: datetime | None = None
    other_at: datetime | None = None


def iso(value: datetime) -> str:
    """An instant as the ledger says it: UTC to the second (slots are whole seconds)."""
    return value.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def local_text(value: datetime) -> str:
    """A wall time as the ledger keeps it: ``YYYY-MM-DDTHH:MM:SS``."""
    return value.strftime("%Y-%m-%dT%H:%M:%S")


def _of_slot(
    slot: Slot,
    outcome: Outcome,
    reason: Reason | None,
    detail: str | None,
    passage_id: str | None = None,
) -> Entry:
    return Entry(
        key=iso(slot.at),
        at=slot.at,
        local=local_text(slot.local),
        zone=slot.zone,
        outcome=outcome,
        reason=reason,
        note=None if slot.dst is None else slot.dst.value,
        passage_id=passage_id,
        detail=detail,
    )


def _of_missing(missing: Missing) -> Entry:
    return Entry(
        key=f"missing:{missing.local}@{missing.zone}",
        at=missing.at,
        local=missing.local,
        zone=missing.zone,
        outcome=Outcome.SKIPPED,
        reason=Reason(missing.reason.value),
        detail=missing.detail,
    )


def _span(delay: timedelta) -> str:
    minutes = int(delay.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"


def _cause(body: Body, at: datetime) -> tuple[Reason, str]:
    """Why the missed slot at ``at`` did not launch at its time, from what the document
    remembers: a passage pending then, a source that could not be read, or else no
    scheduler looking at it (an outage)."""
    for result in reversed(body.results):
        began = result.admitted_at or result.slot
        if began is not None and began <= at <= result.settled_at:
            return (
                Reason.PENDING_PASSAGE,
                f"passage {result.passage_id} was still pending (it settled "
                f"{iso(result.settled_at)}); at most one passage is pending at a time",
            )
    for gate in body.gates:
        if gate.slot == at and gate.outcome is GateOutcome.BLOCKED:
            return Reason.CONDITION_FALSE, f"its source could not be read: {gate.reason}"
    return (
        Reason.NO_SCHEDULER,
        "no live scheduler held the schedule's wake at its time (an outage)",
    )


class _Folded:
    """The slots a passing summarises: how many, by reason, the first and the last."""

    def __init__(self) -> None:
        self.count = 0
        self.reasons = Counter[str]()
        self.first: Entry | None = None
        self.last: Entry | None = None

    def add(self, entry: Entry) -> None:
        self.count += entry.slots
        self.reasons[entry.reason.value if entry.reason else entry.outcome.value] += entry.slots
        if self.first is None or entry.at < self.first.at:
            self.first = entry
        if self.last is None or entry.at > self.last.at:
            self.last = entry

    def entry(self, outcome: Outcome, passage_id: str | None) -> Entry:
        first, last = self.first, self.last
        assert first is not None and last is not None
        top = self.reasons.most_common(1)[0][0]
        said = ", ".join(f"{reason} {n}" for reason, n in self.reasons.most_common())
        return Entry(
            key=f"summary:{iso(first.at)}",
            at=first.at,
            local=first.local,
            zone=first.zone,
            outcome=outcome,
            reason=Reason(top) if top in Reason._value2member_map_ else None,
            passage_id=passage_id,
            detail=f"{self.count} slots from {first.local} to {last.local} ({said})",
            slots=self.count,
            through=last.at,
        )


def passed_entries(
    config: Config,
    body: Body,
    before: datetime,
    *,
    into: str | None = None,
    reason: Reason | None = None,
    detail: str | None = None,
    inclusive: bool = False,
) -> list[Entry]:
    """The rows of the slots newer than the high-water mark and before ``before`` (up to
    it with ``inclusive``) that a decision passes over: ``coalesced`` into the passage
    ``into`` when one launched, else ``skipped``; each with ``reason`` (and ``detail``)
    or the reason it was missed; the nominal slots the rule does not produce among them;
    at most :data:`MAX_PASSED_ROWS` rows, the older rest in one summary row."""
    origin = body.first_play_at
    if origin is None or config.one_shot:
        return []
    after = body.high_water or origin
    if before <= after:
        return []
    outcome = Outcome.SKIPPED if into is None else Outcome.COALESCED
    kept: deque[Entry] = deque()
    folded = _Folded()
    cursor = after
    count = 2
    # Most passings pass over nothing: the one slot after the mark tells (the engine's
    # single-slot path), and the search below runs only when it is passed over.
    first = next_slot(config.policy, after, origin=origin)
    while first is not None and (first.at < before or (first.at == before and inclusive)):
        slots = next_slots(config.policy, cursor, count, origin=origin)
        for slot in slots:
            if slot.at > before or (slot.at == before and not inclusive):
                break
            why, said = (reason, detail) if reason is not None else _cause(body, slot.at)
            kept.append(_of_slot(slot, outcome, why, said, into))
            if len(kept) > MAX_PASSED_ROWS:
                folded.add(kept.popleft())
        else:
            if len(slots) == count:
                cursor, count = slots[-1].at, _CHUNK
                continue
        break
    missing = [
        _of_missing(m)
        for m in missing_slots(config.policy, after, before, origin=origin)
        if m.at < before or inclusive
    ]
    entries = sorted([*kept, *missing], key=lambda e: (e.at, e.key))
    overflow = max(0, len(entries) - MAX_PASSED_ROWS)
    for e in entries[:overflow]:
        folded.add(e)
    if folded.first is None:
        return entries
    return [folded.entry(outcome, into), *entries[overflow:]]


def launch_entries(
    config: Config, body: Body, slot: Slot, passage_id: str, now: datetime
) -> list[Entry]:
    """The rows of launching ``slot`` as ``passage_id`` at ``now`` from ``body`` (the
    document before the reservation): the older missed slots coalesced into it, then the
    slot itself."""
    detail = None
    reason = None
    if slot.dst is DstNote.SHIFTED:
        reason = Reason.DST_SHIFTED
        detail = f"moved out of a DST gap: launched at {local_text(slot.local)} {slot.zone}"
    elif slot.dst is DstNote.EARLIER:
        detail = "the earlier of the two repeated times"
    if now - slot.at > LATE_AFTER:
        late = f"launched {_span(now - slot.at)} after its slot (caught up at {iso(now)})"
        detail = late if detail is None else f"{detail}; {late}"
    return [
        *passed_entries(config, body, slot.at, into=passage_id),
        _of_slot(slot, Outcome.LAUNCHED, reason, detail, passage_id),
    ]


def skip_entries(
    config: Config, body: Body, slot: Slot, reason: Reason, detail: str
) -> list[Entry]:
    """The rows of skipping ``slot`` for ``reason`` from ``body`` (the document before
    the decision): the older missed slots, then the slot itself."""
    return [
        *passed_entries(config, body, slot.at),
        _of_slot(slot, Outcome.SKIPPED, reason, detail),
    ]


def _next_after(config: Config, body: Body, now: datetime) -> Slot | None:
    origin = body.first_play_at
    if origin is None or config.one_shot:
        return None
    after = max(body.high_water or origin, now)
    found = next_slots(config.policy, after, 1, origin=origin)
    return found[0] if found else None


def end_entries(config: Config, body: Body, reason: EndReason | None, now: datetime) -> list[Entry]:
    """The rows of a schedule that ends at ``now`` for ``reason``: the slots up to now that
    did not launch and the next slot, ``skipped`` for the quota or the end bound (none for
    a one-shot policy done or a policy without slots)."""
    if reason is EndReason.QUOTA_EXHAUSTED:
        why = Reason.QUOTA
        said = f"the quota of {quota_limit(config)} passage(s) is used"
    elif reason in (EndReason.UNTIL_REACHED, EndReason.WITHIN_REACHED):
        why = Reason.END_BOUND
        end = end_at(config, body)
        said = "after the schedule's end bound" + ("" if end is None else f" ({iso(end)})")
    else:
        return []
    return _through_next(config, body, now, why, said)


def stop_entries(config: Config, body: Body, now: datetime) -> list[Entry]:
    """The rows of a Stop at ``now``: the slots passed over and the next one, ``stopped``."""
    return _through_next(
        config, body, now, Reason.STOPPED, f"the schedule was stopped at {iso(now)}"
    )


def _through_next(
    config: Config, body: Body, now: datetime, reason: Reason, detail: str
) -> list[Entry]:
    following = _next_after(config, body, now)
    if following is None:
        return passed_entries(config, body, now, reason=reason, detail=detail, inclusive=True)
    # (up to the next slot: a nominal slot the rule does not produce before it is kept too)
    entries = passed_entries(config, body, following.at, reason=reason, detail=detail)
    entries.append(_of_slot(following, Outcome.SKIPPED, reason, detail))
    return entries


def play_entries(config: Config, body: Body, now: datetime, *, paused: bool) -> list[Entry]:
    """The rows of a Play at ``now`` that passes over the missed slots (the high-water
    mark moves to now): ``paused`` when it resumes a paused schedule, otherwise each with
    the reason it was missed."""
    if not paused:
        return passed_entries(config, body, now, inclusive=True)
    since = body.last_pause_at
    said = "the schedule was paused" + ("" if since is None else f" at {iso(since)}")
    said += "; a paused calendar resumes at a future slot"
    return passed_entries(config, body, now, reason=Reason.PAUSED, detail=said, inclusive=True)


def entry_json(entry: Entry, decided_at: datetime | None = None) -> dict[str, Any]:
    """One row as the reads show it."""
    return {
        "slot": iso(entry.at),
        "local": entry.local,
        "zone": entry.zone,
        "outcome": entry.outcome.value,
        "reason": None if entry.reason is None else entry.reason.value,
        "note": entry.note,
        "passageId": entry.passage_id,
        "detail": entry.detail,
        "slots": entry.slots,
        "through": None if entry.through is None else iso(entry.through),
        "otherAt": None if entry.other_at is None else iso(entry.other_at),
        "decidedAt": None if decided_at is None else iso(decided_at),
    }
