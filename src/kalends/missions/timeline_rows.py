"""Ledger rows read for the timeline (:mod:`kalends.missions.timeline`): each row of the
JSON shape checked (a bad one refused naming its field, ``rows[3].outcome``), wall times
as people read them, and the slots counted by outcome and reason in one sentence.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kalends.civil import Zone, get_zone
from kalends.civil.zones import to_naive_datetime
from kalends.clock import require_aware
from kalends.errors import InvalidInput

OUTCOMES = ("launched", "coalesced", "skipped", "moved")
MAX_DETAIL_CHARS = 280


@dataclass(frozen=True, slots=True)
class Row:
    at: datetime
    through: datetime | None
    outcome: str
    reason: str | None
    local: str
    zone: str
    note: str | None
    passage_id: str | None
    detail: str | None
    slots: int
    other_at: datetime | None


def instant(value: object, name: str, *, required: bool) -> datetime | None:
    if value is None and not required:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(
                f"{name}: {value!r} is not an ISO 8601 instant", field=name
            ) from None
    if not isinstance(value, datetime):
        raise InvalidInput(f"{name}: an ISO 8601 instant is required", field=name)
    return require_aware(value, name)


def optional_text(row: Mapping[str, Any], key: str, name: str) -> str | None:
    value = row.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name}.{key}: text or null is required", field=f"{name}.{key}")
    return value


def parse_row(index: int, row: object, zone: str) -> Row:
    name = f"rows[{index}]"
    if not isinstance(row, Mapping):
        raise InvalidInput(f"{name}: a ledger row (an object) is required", field=name)
    outcome = row.get("outcome")
    if outcome not in OUTCOMES:
        raise InvalidInput(
            f"{name}.outcome: {outcome!r} is not one of {', '.join(OUTCOMES)}",
            field=f"{name}.outcome",
        )
    at = instant(row.get("slot"), f"{name}.slot", required=True)
    assert at is not None
    slots = row.get("slots", 1)
    slots = 1 if slots is None else slots
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        raise InvalidInput(f"{name}.slots: a whole number of 1 or more", field=f"{name}.slots")
    through = instant(row.get("through"), f"{name}.through", required=slots > 1)
    if through is not None and through < at:
        raise InvalidInput(f"{name}.through: before its slot", field=f"{name}.through")
    row_zone = optional_text(row, "zone", name) or zone
    local = optional_text(row, "local", name)
    if local is None:
        local = wall_text(get_zone(row_zone, f"{name}.zone"), at)
    return Row(
        at=at,
        through=through if slots > 1 else None,
        outcome=str(outcome),
        reason=optional_text(row, "reason", name),
        local=local,
        zone=row_zone,
        note=optional_text(row, "note", name),
        passage_id=optional_text(row, "passageId", name),
        detail=optional_text(row, "detail", name),
        slots=slots,
        other_at=instant(row.get("otherAt"), f"{name}.otherAt", required=False),
    )


def wall_text(tz: Zone, at: datetime) -> str:
    second = math.floor(at.timestamp())
    tz.cover(second)
    return to_naive_datetime(second + tz.offset_at(second)).strftime("%Y-%m-%dT%H:%M:%S")


def shown(local: str) -> str:
    """A ledger wall time as people read it: ``2027-03-14 02:30`` (seconds when not 0)."""
    shown = local.replace("T", " ", 1)
    return shown[:16] if len(shown) == 19 and shown.endswith(":00") else shown


def clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 1] + "…"


@dataclass(slots=True)
class Tally:
    """Slots drawn, by outcome and by outcome and reason; slots outside the window."""

    by_outcome: Counter[str] = field(default_factory=Counter)
    by_reason: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    outside: int = 0

    @property
    def total(self) -> int:
        return sum(self.by_outcome.values())


def summary_sentence(tally_rows: Mapping[tuple[str, str | None], int], outside: int = 0) -> str:
    """One sentence of counts: "365 slots: 360 launched, 4 skipped (dst-gap 1, paused 3),
    1 coalesced." from slots counted by (outcome, reason)."""
    by_outcome: Counter[str] = Counter()
    for (outcome, _), count in tally_rows.items():
        by_outcome[outcome] += count
    total = sum(by_outcome.values())
    if total == 0:
        sentence = "No slots."
    else:
        parts = []
        for outcome in sorted(by_outcome, key=lambda o: (-by_outcome[o], OUTCOMES.index(o))):
            reasons = sorted(
                (reason, count)
                for (of, reason), count in tally_rows.items()
                if of == outcome and reason is not None and count
            )
            said = ", ".join(f"{reason} {count:,}" for reason, count in reasons)
            parts.append(f"{by_outcome[outcome]:,} {outcome}" + (f" ({said})" if said else ""))
        sentence = f"{total:,} slot{'s' if total != 1 else ''}: {', '.join(parts)}."
    if outside:
        sentence += f" {outside:,} more outside the window, not drawn."
    return sentence
