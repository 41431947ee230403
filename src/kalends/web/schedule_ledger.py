"""The slot ledger on a schedule's pages (issue 24 §1): the History that shows the slots
that did not launch on their own between the settled passages, the **Why didn't it run?**
answer, and the full ledger page's filter and values.

Each function calls the read service (:class:`~kalends.missions.ScheduleService`'s
``ledger`` and ``why``, which check the viewer's role in the page's workspace) and
shapes the answer for the templates; nothing here is written anywhere.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from kalends.civil.values import parse_date
from kalends.errors import InvalidInput
from kalends.missions import ScheduleService, Workspace
from kalends.missions.ledger_reads import LEDGER_PAGE, MAX_LEDGER_PAGE
from kalends.missions.limits import MAX_RESULTS
from kalends.web.ledger_display import (
    HistoryRow,
    LedgerLine,
    history_rows,
    ledger_line,
    lenient_instant,
    nominal_text,
    outcome_counts,
    reason_counts,
)
from kalends.web.schedule_display import Badge, display_zone
from kalends.web.session import Viewer

__all__ = [
    "HISTORY_PAGES",
    "VERDICT_BADGES",
    "LedgerFilter",
    "WhyValues",
    "history",
    "ledger_filter",
    "ledger_values",
    "why_values",
]

# The History shows the newest page of the ledger rows of its period (issue 24 §1); to
# find the newest, it reads at most this many of the largest pages, oldest first (the
# ledger pages ascending only). kalends' decision: 5,000 rows, five times what
# retention keeps by count; a period holding more shows its newest page of the last
# 5,000 and says that older rows are in the full ledger.
HISTORY_PAGES = 5
# The longest text a ``?at=`` may carry (a wall time with seconds is 19 characters).
MAX_AT = 40

# A why's verdict as shown: a word and a symbol, never colour alone.
VERDICT_BADGES: dict[str, Badge] = {
    "launched": Badge("Launched", "▶", "ok"),
    "coalesced": Badge("Coalesced", "⤵", "idle"),
    "skipped": Badge("Skipped", "↷", "idle"),
    "moved": Badge("Moved", "⇄", "warn"),
    "not-a-slot": Badge("Not a slot", "○", "idle"),
    "not-yet": Badge("Still to come", "…", "idle"),
    "undecided": Badge("Not decided yet", "…", "warn"),
    "before-first-play": Badge("Before the first Play", "○", "idle"),
    "forgotten": Badge("No longer kept", "?", "idle"),
    "nonexistent": Badge("Does not exist", "✕", "warn"),
}


def _period_start(results: Sequence[Mapping[str, Any]]) -> datetime | None:
    """Where the History's period begins: everything when the document keeps every
    result it has settled, else the oldest result it still shows."""
    if len(results) < MAX_RESULTS:
        return None
    oldest = results[-1]
    said = oldest.get("slot") or oldest.get("admittedAt") or oldest.get("settledAt")
    if not said:
        return None
    return datetime.fromisoformat(str(said).replace("Z", "+00:00"))


def history(
    reads: ScheduleService,
    actor: UUID | str,
    schedule: UUID | str,
    workspace: UUID,
    results: Sequence[Mapping[str, Any]],
) -> tuple[list[HistoryRow], bool]:
    """The History's rows, newest first: the settled ``results`` with the newest page of
    the ledger rows of their period between them; and whether older rows of the period
    were left to the full ledger."""
    start = _period_start(results)
    kept: deque[dict[str, Any]] = deque(maxlen=LEDGER_PAGE)
    seen = 0
    after: str | None = None
    more = False
    for _ in range(HISTORY_PAGES):
        page = reads.ledger(
            actor, schedule, workspace=workspace, start=start, after=after, limit=MAX_LEDGER_PAGE
        )
        items = page["items"]
        seen += len(items)
        kept.extend(items)
        after = page["nextAfter"]
        if after is None:
            break
    else:
        more = True
    older = more or seen > len(kept)
    return history_rows(results, kept), older


@dataclass(slots=True)
class WhyValues:
    """What the **Why didn't it run?** section shows: the wall time asked (as the form
    shows it again), the answer or the error, and the page's status."""

    at: str = ""
    answer: dict[str, Any] | None = None
    error: str | None = None
    badge: Badge | None = None
    line: LedgerLine | None = None
    status: int = 200

    def values(self) -> dict[str, Any]:
        return {
            "why_at": self.at,
            "why": self.answer,
            "why_error": self.error,
            "why_badge": self.badge,
            "why_line": self.line,
        }


def _input_value(at: str) -> str:
    """The text a ``datetime-local`` control shows again: minutes, or seconds when set."""
    text = at.strip()
    return text[:16] if text.endswith(":00") and len(text) == 19 else text


def why_values(
    reads: ScheduleService,
    actor: UUID | str,
    schedule: UUID | str,
    workspace: UUID,
    at: str | None,
) -> WhyValues:
    """The answer to ``?at=`` (a wall time in the schedule's zone): none when not asked;
    a refused wall time is said in the page with status 422."""
    if at is None:
        return WhyValues()
    if not at.strip():
        return WhyValues(error="at: enter a date and a time, such as 2027-03-14T02:30", status=422)
    if len(at) > MAX_AT:
        return WhyValues(
            error=f"at: a wall time is at most {MAX_AT} characters, such as 2027-03-14T02:30",
            status=422,
        )
    try:
        answer = reads.why(actor, schedule, at, workspace=workspace)
    except InvalidInput as exc:
        # (the field is labelled: its name before the message adds nothing)
        return WhyValues(at=at, error=exc.message.removeprefix("at: "), status=422)
    verdict = str(answer.get("verdict") or "")
    row = answer.get("row")
    return WhyValues(
        at=_input_value(str(answer.get("at") or at)),
        answer=answer,
        badge=VERDICT_BADGES.get(verdict, Badge(verdict or "Unknown", "•", "idle")),
        line=None if row is None else ledger_line(row),
    )


@dataclass(slots=True)
class LedgerFilter:
    """The full ledger page's window, from its GET form (days in the schedule's zone,
    ``to`` included), and the problems of each field."""

    from_text: str = ""
    to_text: str = ""
    start: datetime | None = None
    end: datetime | None = None
    errors: dict[str, str] = field(default_factory=dict)

    def query(self) -> dict[str, str]:
        """The filter as a query (for the pager's links)."""
        said = {"from": self.from_text, "to": self.to_text}
        return {k: v for k, v in said.items() if v}


def ledger_filter(from_text: str | None, to_text: str | None, zone: str) -> LedgerFilter:
    """The window of ``?from=DAY&to=DAY`` in ``zone``: from the start of the first day to
    the end of the last; either side open when empty; a malformed day or a last day
    before the first is an error of its field."""
    chosen = LedgerFilter(from_text=(from_text or "").strip(), to_text=(to_text or "").strip())
    days: dict[str, datetime] = {}
    for name, text in (("from", chosen.from_text), ("to", chosen.to_text)):
        if not text:
            continue
        if len(text) > MAX_AT:
            chosen.errors[name] = f"{name}: expected a date YYYY-MM-DD"
            continue
        try:
            day = parse_date(text, name)
        except InvalidInput as exc:
            chosen.errors[name] = exc.message
            continue
        days[name] = datetime(day.year, day.month, day.day)
    first, last = days.get("from"), days.get("to")
    if first is not None and last is not None and last < first:
        chosen.errors["to"] = f"to: the last day ({chosen.to_text}) is before the first"
        return chosen
    if first is not None:
        chosen.start = lenient_instant(first, zone)
    if last is not None and last.year < 9999:
        chosen.end = lenient_instant(last + timedelta(days=1), zone)
    return chosen


def ledger_values(
    who: Viewer,
    ws: Workspace,
    schedule: UUID,
    *,
    after: str | None,
    start: str | None,
    end: str | None,
) -> tuple[dict[str, Any], int]:
    """The full ledger page's values and status: the schedule's title and zone, the
    window of the filter (:func:`ledger_filter`), one page of rows at the cursor
    ``after`` with the window's counts; a refused day, window or cursor is said in the
    page (status 422) and no rows are read."""
    reads = who.context.services.schedules
    doc = reads.detail(who.actor, schedule, workspace=ws.id)
    zone = display_zone(doc) if doc.get("kind") != "tombstone" else "UTC"
    chosen = ledger_filter(start, end, zone)
    page: dict[str, Any] = {}
    problem: str | None = None
    if not chosen.errors:
        try:
            page = reads.ledger(
                who.actor,
                schedule,
                workspace=ws.id,
                start=chosen.start,
                end=chosen.end,
                after=after or None,
            )
        except InvalidInput as exc:
            if exc.field in ("from", "to"):
                chosen.errors[exc.field] = exc.message
            else:
                problem = exc.message
    counts = page.get("counts") or {}
    values = {
        "title": f"Slot ledger — {doc.get('title') or 'Schedule'}",
        "workspace": ws,
        "doc": doc,
        "zone": zone,
        "chosen": chosen,
        "problem": problem,
        "page": page or None,
        "lines": [ledger_line(row) for row in page.get("items", [])],
        "after": after,
        "next_url": _ledger_url(ws.id, schedule, chosen.query(), page.get("nextAfter")),
        "first_url": _ledger_url(ws.id, schedule, chosen.query(), None),
        "outcome_counts": outcome_counts(counts),
        "reason_counts": reason_counts(counts),
        "nominal_text": nominal_text,
    }
    refused = bool(chosen.errors) or problem is not None
    return values, 422 if refused else 200


def _ledger_url(workspace: UUID, schedule: UUID, query: dict[str, str], after: str | None) -> str:
    """The full ledger page's URL with the filter ``query``, at the cursor ``after``."""
    if after is not None:
        query = {**query, "after": after}
    tail = f"?{urlencode(query)}" if query else ""
    return f"/w/{workspace}/schedules/{schedule}/ledger{tail}"
