"""How the slot ledger looks on a schedule's pages: each row's outcome as a badge, its
reason in words, its DST note, and the History table that merges the settled passages
with the slots that did not launch on their own (issue 24 §1).

Pure functions of what the services return: a schedule's detail projection (its
``results``, newest first) and the rows of its ledger read (``ScheduleReads.ledger``,
ascending by slot). Nothing here reads a clock or the database.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kalends.civil import get_zone
from kalends.civil.zones import local_seconds, to_utc_datetime
from kalends.missions.ledger import LATE_AFTER
from kalends.web.schedule_display import Badge

__all__ = [
    "LEDGER_BADGES",
    "HistoryRow",
    "LedgerLine",
    "history_rows",
    "ledger_line",
    "lenient_instant",
    "nominal_text",
    "outcome_counts",
    "reason_counts",
    "summary_of",
]

# A ledger row's outcome as shown: a word and a symbol (the word says it), and a tone.
LEDGER_BADGES: dict[str, Badge] = {
    "launched": Badge("Launched", "▶", "ok"),
    "coalesced": Badge("Coalesced", "⤵", "idle"),
    "skipped": Badge("Skipped", "↷", "idle"),
    "moved": Badge("Moved", "⇄", "warn"),
}

# A reason in a few words, for the badge's side.
REASON_WORDS: dict[str, str] = {
    "paused": "paused",
    "stopped": "stopped",
    "end-bound": "end bound",
    "quota": "quota",
    "condition-false": "condition unchanged",
    "pending-passage": "passage pending",
    "no-scheduler": "no scheduler running",
    "dst-gap": "DST gap",
    "dst-shifted": "DST shift",
    "day-missing": "day missing",
    "zone-rules-changed": "new zone rules",
}

# Why a slot did not launch on its own, as the clause after its outcome.
_SKIPPED_SAID: dict[str, str] = {
    "paused": "paused",
    "stopped": "stopped",
    "end-bound": "end bound reached",
    "quota": "quota used up",
    "condition-false": "condition unchanged",
    "pending-passage": "passage pending (at most one passage is pending at a time)",
    "no-scheduler": "no scheduler was running",
}
_COALESCED_SAID: dict[str, str] = {
    "no-scheduler": "no scheduler was running",
    "pending-passage": "a passage was still pending",
    "paused": "paused",
    "condition-false": "its source could not be read",
}


def nominal_text(local: str | None) -> str:
    """A ledger row's wall time ``YYYY-MM-DDTHH:MM:SS`` as a page shows it
    (``2027-03-14 02:30``; seconds only when not zero); it may name a time that does not
    exist, which is why it is text and not an instant."""
    if not local:
        return "—"
    day, _, clock = local.partition("T")
    return f"{day} {clock[:5] if clock.endswith(':00') else clock}".strip()


@dataclass(frozen=True, slots=True)
class LedgerLine:
    """One ledger row as a page says it.

    ``words``: the reason in a few words (beside the badge); ``why``: what became of
    the slot, as the clause after the outcome ("DST gap: 02:30 does not exist …", "no
    scheduler was running"); ``into``: the catch-up passage a coalesced slot was folded
    into; ``detail``: the row's own sentence when it adds something; ``dst``: what a DST
    change did to it; ``was``: the instant a moved slot had under the previous zone
    rules; ``nominal``: the slot's wall time did not exist (a DST gap, a missing day)."""

    row: Mapping[str, Any]
    badge: Badge
    words: str
    why: str
    into: str | None
    detail: str | None
    dst: str | None
    was: str | None
    nominal: bool

    @property
    def summary(self) -> bool:
        return summary_of(self.row)


def _dst(row: Mapping[str, Any]) -> str | None:
    note = row.get("note")
    local = str(row.get("local") or "")
    day, _, clock = local.partition("T")
    if note == "shifted" or row.get("reason") == "dst-shifted":
        return (
            f"the planned wall time did not exist on {day} (clocks went forward) — "
            f"ran at {clock[:5]}"
        )
    if note == "earlier-of-two":
        return f"{clock[:5]} happened twice on {day} (clocks went back) — ran at the first"
    return None


def ledger_line(row: Mapping[str, Any]) -> LedgerLine:
    """The words of one ledger row (its JSON as the reads return it)."""
    outcome = str(row.get("outcome") or "")
    reason = str(row.get("reason") or "")
    detail = str(row.get("detail") or "") or None
    badge = LEDGER_BADGES.get(outcome, Badge(outcome.capitalize() or "Unknown", "•", "idle"))
    words = REASON_WORDS.get(reason, reason.replace("-", " "))
    into = str(row.get("passageId") or "") or None if outcome == "coalesced" else None
    was = str(row.get("otherAt") or "") or None if outcome == "moved" else None
    nominal = reason in ("dst-gap", "day-missing")
    if reason == "dst-gap":
        why, detail = f"DST gap: {detail or 'the wall time does not exist'}", None
    elif reason == "day-missing":
        why, detail = f"day missing: {detail or 'the day does not exist'}", None
    elif outcome == "coalesced":
        why = _COALESCED_SAID.get(reason, words)
    elif outcome == "skipped":
        why = _SKIPPED_SAID.get(reason, words)
    elif outcome == "moved":
        why = "moved by new zone rules"
    elif outcome == "launched":
        # The row's own sentence says the DST shift (the note says it here) and how late a
        # catch-up came with a UTC instant; the page says it from the row's instants.
        why, detail = ("" if reason == "dst-shifted" else words), _late(row)
    else:
        why = words
    if summary_of(row) or reason == "no-scheduler":
        # (the slot column says how many, from when to when; "no scheduler" says it all)
        detail = None
    return LedgerLine(
        row=row,
        badge=badge,
        words=words,
        why=why,
        into=into,
        detail=detail,
        dst=_dst(row),
        was=was,
        nominal=nominal,
    )


def _late(row: Mapping[str, Any]) -> str | None:
    """How long after its slot a launch was decided, when it was a catch-up."""
    slot, decided = _instant(row.get("slot")), _instant(row.get("decidedAt"))
    if slot is None or decided is None or decided - slot <= LATE_AFTER:
        return None
    return f"launched {_span(decided - slot)} after its slot (caught up)"


def summary_of(row: Mapping[str, Any]) -> bool:
    return int(row.get("slots") or 1) > 1


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One row of a schedule's History: a settled passage (``result``, with the ledger
    row of its launch when there is one) or a ledger row standing alone (``line``)."""

    result: Mapping[str, Any] | None
    line: LedgerLine | None

    @property
    def dst(self) -> str | None:
        return None if self.line is None else self.line.dst

    @property
    def late(self) -> str | None:
        """How long after its slot a settled passage started, when it was caught up."""
        if self.result is None:
            return None
        slot, began = _instant(self.result.get("slot")), _instant(self.result.get("admittedAt"))
        if slot is None or began is None or began - slot <= LATE_AFTER:
            return None
        return f"started {_span(began - slot)} after its slot (caught up)"


def _instant(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _span(delay: timedelta) -> str:
    """A delay in words: ``12 min``, ``5 h 30 min``, ``3 days 2 h``."""
    minutes = int(delay.total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes and not days else []
    return " ".join(parts) or "under a minute"


def _key(text: object) -> str:
    return str(text or "")


def history_rows(
    results: Sequence[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]]
) -> list[HistoryRow]:
    """The settled ``results`` (newest first) and the ledger ``rows`` of the same period
    (any order) as one list, newest first: a ``launched`` row whose passage settled is
    shown with it, never twice; every other row stands between the passages by its slot
    (a summary row by its last slot)."""
    launched: dict[str, Mapping[str, Any]] = {}
    alone: list[tuple[str, int, HistoryRow]] = []
    settled = {_key(r.get("passageId")) for r in results}
    for row in rows:
        passage = _key(row.get("passageId"))
        if row.get("outcome") == "launched" and passage in settled:
            launched[passage] = row
            continue
        when = _key(row.get("through") or row.get("slot"))
        alone.append((when, 0, HistoryRow(result=None, line=ledger_line(row))))
    merged = list(alone)
    for r in results:
        own = launched.get(_key(r.get("passageId")))
        when = _key(r.get("slot") or r.get("admittedAt") or r.get("settledAt"))
        line = None if own is None else ledger_line(own)
        # A passage sorts after the slots folded into it at the same instant.
        merged.append((when, 1, HistoryRow(result=r, line=line)))
    merged.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [item[2] for item in merged]


def outcome_counts(counts: Mapping[str, Any]) -> list[tuple[Badge, int]]:
    """The ledger read's ``counts`` by outcome (slots, summary rows counted whole), each
    with its badge, in the order launched, coalesced, skipped, moved."""
    return [(badge, int(counts.get(outcome) or 0)) for outcome, badge in LEDGER_BADGES.items()]


def reason_counts(counts: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The ledger read's ``counts`` by reason, in words, the most frequent first."""
    said = Counter({str(k): int(v) for k, v in dict(counts.get("reasons") or {}).items()})
    return [(REASON_WORDS.get(k, k.replace("-", " ")), n) for k, n in said.most_common() if n]


def lenient_instant(local: datetime, zone: str) -> datetime:
    """The UTC instant of a wall time in ``zone`` for a filter's bound: a wall time in a
    DST gap is taken as the end of the gap, a repeated one as its first pass (a bound
    never refuses; nothing a person enters here is stored)."""
    tz = get_zone(zone)
    wall = local_seconds(local)
    tz.cover(wall)
    _, instant, _ = tz.resolve(wall)
    return to_utc_datetime(instant)
