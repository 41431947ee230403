"""Reading the slot ledger (issue 24 §1 "Reads"): a schedule's rows over a window, page by
page, and the answer to "why did (or didn't) it run at this wall time?".

:func:`ledger_page` lists the rows that overlap a window (a summary row counts when any
part of its span does) ascending by slot, with an opaque cursor, and counts the whole
window's slots by outcome and reason. :func:`explain` answers one wall time:

=================  ==========================================================================
verdict            when
=================  ==========================================================================
the row's outcome  a row holds the slot (its instant, its wall time when the slot does not
                   exist, a summary row spanning it, or a DST shift that moved it)
nonexistent        the wall time does not exist in the zone (a DST gap) and no row names it
not-a-slot         the policy has no slot at that instant (the nearest ones are named)
not-yet            a slot still to come (and what happens to it if nothing changes)
before-first-play  a slot before the schedule was first played
forgotten          no row is kept: older than the oldest kept row and than the retention
                   age, or passed over before the ledger kept rows for it (kalends decision)
undecided          due and not decided yet (a pending passage, a pause, a stop, an
                   interruption, or no scheduler looking)
=================  ==========================================================================

Reads only; the clock is the caller's ``now``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import and_, func, or_, select
from sqlalchemy.engine import Connection, RowMapping

from kalends.civil import Slot, get_zone, latest_due, next_slots
from kalends.civil.values import format_local, resolve_user_local
from kalends.civil.zones import local_seconds, to_utc_datetime, wall_of
from kalends.errors import AmbiguousLocalTime, InvalidInput, NonexistentLocalTime
from kalends.missions.config import Config
from kalends.missions.controls import DocState
from kalends.missions.document import (
    EndReason,
    State,
    end_at,
    next_due_or_end,
    one_shot_slot,
)
from kalends.missions.ledger import RETAIN_AGE, RETAIN_ROWS, Entry, Outcome, Reason, entry_json, iso
from kalends.storage.ledger_tables import slot_ledger

__all__ = [
    "LEDGER_PAGE",
    "MAX_LEDGER_PAGE",
    "MAX_LEDGER_WINDOW",
    "VERDICTS",
    "WallTime",
    "check_limit",
    "check_window",
    "decode_cursor",
    "empty_counts",
    "encode_cursor",
    "explain",
    "ledger_page",
    "parse_wall_time",
    "row_json",
]

# The page sizes of the ledger read (shared design of issue 24 §1).
LEDGER_PAGE = 200
MAX_LEDGER_PAGE = 1_000
# Issue 24 "Proof": windows over 10 years get clear errors (ten years and their leap days).
MAX_LEDGER_WINDOW = timedelta(days=3_653)

VERDICTS = (
    *(o.value for o in Outcome),
    "not-a-slot",
    "not-yet",
    "undecided",
    "before-first-play",
    "forgotten",
    "nonexistent",
)

_WALL = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SECOND = timedelta(seconds=1)
# The civil engine's range (kalends.civil.search), with a day's margin for any zone.
_FIRST_DAY, _LAST_DAY = "0001-01-03", "9999-12-29"

_REASONS: dict[str, str] = {
    Reason.PAUSED: "the schedule was paused",
    Reason.STOPPED: "the schedule was stopped",
    Reason.END_BOUND: "it fell after the schedule's end bound",
    Reason.QUOTA: "the schedule's passage quota was used up",
    Reason.CONDITION_FALSE: "the schedule's condition did not let it run",
    Reason.PENDING_PASSAGE: "another passage was still pending",
    Reason.NO_SCHEDULER: "no scheduler was running at its time",
    Reason.DST_GAP: "its wall time falls in a DST gap and the policy skips such times",
    Reason.DST_SHIFTED: "its wall time falls in a DST gap, so it was moved past the gap",
    Reason.DAY_MISSING: "its day does not exist in the zone",
    Reason.ZONE_RULES_CHANGED: "new time zone rules moved it",
}


# --- input ---------------------------------------------------------------------------------


def check_limit(limit: object) -> int:
    """A page size of 1 to :data:`MAX_LEDGER_PAGE`, else :class:`InvalidInput`."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LEDGER_PAGE:
        raise InvalidInput(f"limit: must be 1-{MAX_LEDGER_PAGE}, got {limit!r}", field="limit")
    return limit


def _aware(value: object, field: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise InvalidInput(
            f"{field}: an aware instant (with an offset or zone) is required, got {value!r}",
            field=field,
        )
    return value.astimezone(UTC)


def check_window(start: object, end: object) -> tuple[datetime | None, datetime | None]:
    """The window ``[start, end)`` in UTC (either end open when ``None``); a start after
    its end, or a window longer than :data:`MAX_LEDGER_WINDOW`, is :class:`InvalidInput`."""
    first, last = _aware(start, "from"), _aware(end, "to")
    if first is not None and last is not None:
        if first > last:
            raise InvalidInput(
                f"from: the window starts ({iso(first)}) after it ends ({iso(last)})",
                field="from",
            )
        if last - first > MAX_LEDGER_WINDOW:
            raise InvalidInput(
                f"to: a ledger window spans at most 10 years; {iso(first)} to {iso(last)} "
                "is longer: narrow it",
                field="to",
            )
    return first, last


def encode_cursor(slot_at: datetime, key: str) -> str:
    """The opaque cursor of the row after which the next page starts."""
    raw = json.dumps({"at": iso(slot_at), "key": key}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: object) -> tuple[datetime, str]:
    """The row a cursor of :func:`encode_cursor` names; anything else is
    :class:`InvalidInput` on ``after``."""
    bad = InvalidInput(
        f"after: not a ledger cursor (pass nextAfter as given): {cursor!r}", field="after"
    )
    if not isinstance(cursor, str) or not 0 < len(cursor) <= 400:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw.decode())
        at = datetime.fromisoformat(data["at"])
        key = data["key"]
    except (binascii.Error, UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise bad from None
    if not isinstance(key, str) or not key or at.utcoffset() is None:
        raise bad
    return at.astimezone(UTC), key


@dataclass(frozen=True, slots=True)
class WallTime:
    """A wall time as a person gave it: its text normalised to seconds, and its value
    (``None`` for a date the calendar does not have, such as 2027-02-31)."""

    text: str
    value: datetime | None


def parse_wall_time(text: object, field: str = "at") -> WallTime:
    """``YYYY-MM-DDTHH:MM`` or ``YYYY-MM-DDTHH:MM:SS`` with no offset; a date alone, or
    anything else, is :class:`InvalidInput` with a hint."""
    given = text.strip() if isinstance(text, str) else text
    if isinstance(given, str) and _DATE.match(given):
        raise InvalidInput(
            f"{field}: a date alone names no slot; give a wall time such as {given}T09:00",
            field=field,
        )
    match = _WALL.match(given) if isinstance(given, str) else None
    if match is None:
        raise InvalidInput(
            f"{field}: expected a local wall time YYYY-MM-DDTHH:MM (or with :SS) without "
            f"offset, such as 2027-03-14T02:30; got {text!r}",
            field=field,
        )
    year, month, day, hour, minute = (int(g) for g in match.groups()[:5])
    second = int(match[6] or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise InvalidInput(
            f"{field}: {text!r} is not a time of day (00:00 to 23:59:59)", field=field
        )
    normal = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    try:
        value: datetime | None = datetime(year, month, day, hour, minute, second)
    except ValueError:
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            raise InvalidInput(f"{field}: {text!r} is not a calendar date", field=field) from None
        value = None  # 2027-02-31: a monthly slot on a day the month lacks may name it
    if not _FIRST_DAY <= normal[:10] <= _LAST_DAY:
        raise InvalidInput(
            f"{field}: {text!r} is outside the dates slots are computed for "
            f"({_FIRST_DAY} to {_LAST_DAY})",
            field=field,
        )
    return WallTime(normal, value)


# --- rows ----------------------------------------------------------------------------------


def _entry(row: RowMapping) -> Entry:
    return Entry(
        key=row["slot_key"],
        at=row["slot_at"],
        local=row["local"],
        zone=row["zone"],
        outcome=Outcome(row["outcome"]),
        reason=None if row["reason"] is None else Reason(row["reason"]),
        note=row["note"],
        passage_id=row["passage_id"],
        detail=row["detail"],
        slots=row["slots"],
        through=row["through_at"],
        other_at=row["other_at"],
    )


def row_json(row: RowMapping) -> dict[str, Any]:
    """One stored row as the reads show it."""
    return entry_json(_entry(row), row["decided_at"])


def _overlapping(schedule_id: UUID, start: datetime | None, end: datetime | None) -> list[Any]:
    c = slot_ledger.c
    where: list[Any] = [c.schedule_id == schedule_id]
    if end is not None:
        where.append(c.slot_at < end)
    if start is not None:
        where.append(
            or_(c.slot_at >= start, and_(c.through_at.is_not(None), c.through_at >= start))
        )
    return where


def empty_counts() -> dict[str, Any]:
    return {o.value: 0 for o in Outcome} | {"reasons": {}}


def ledger_page(
    conn: Connection,
    schedule_id: UUID,
    *,
    start: datetime | None,
    end: datetime | None,
    after: tuple[datetime, str] | None,
    limit: int,
) -> tuple[list[dict[str, Any]], str | None, dict[str, Any]]:
    """The rows overlapping ``[start, end)`` after the cursor ``after``, at most
    ``limit`` ascending by ``(slot_at, slot_key)``; the next cursor (``None`` on the last
    page); the window's counts of slots by outcome and by reason (a summary row counts
    its ``slots``)."""
    c = slot_ledger.c
    where = _overlapping(schedule_id, start, end)
    if after is not None:
        at, key = after
        where.append(or_(c.slot_at > at, and_(c.slot_at == at, c.slot_key > key)))
    rows = (
        conn.execute(
            select(slot_ledger).where(*where).order_by(c.slot_at, c.slot_key).limit(limit + 1)
        )
        .mappings()
        .all()
    )
    more = len(rows) > limit
    rows = rows[:limit]
    cursor = encode_cursor(rows[-1]["slot_at"], rows[-1]["slot_key"]) if more else None
    counts = empty_counts()
    window = _overlapping(schedule_id, start, end)
    for outcome, reason, slots in conn.execute(
        select(c.outcome, c.reason, func.sum(c.slots)).where(*window).group_by(c.outcome, c.reason)
    ).all():
        counts[outcome] = counts.get(outcome, 0) + int(slots)
        if reason is not None:
            counts["reasons"][reason] = counts["reasons"].get(reason, 0) + int(slots)
    counts["reasons"] = dict(sorted(counts["reasons"].items()))
    return [row_json(r) for r in rows], cursor, counts


def _row_by_key(conn: Connection, schedule_id: UUID, key: str) -> RowMapping | None:
    c = slot_ledger.c
    return (
        conn.execute(select(slot_ledger).where(c.schedule_id == schedule_id, c.slot_key == key))
        .mappings()
        .first()
    )


def _row_at(conn: Connection, schedule_id: UUID, instant: datetime) -> RowMapping | None:
    """The row of the slot at ``instant``: its own, else one moved from it by new zone
    rules, else a summary row whose span holds it."""
    own = _row_by_key(conn, schedule_id, iso(instant))
    if own is not None:
        return own
    c = slot_ledger.c
    return (
        conn.execute(
            select(slot_ledger)
            .where(
                c.schedule_id == schedule_id,
                or_(
                    c.other_at == instant,
                    and_(c.slots > 1, c.slot_at <= instant, c.through_at >= instant),
                ),
            )
            .order_by(c.slots, c.slot_at)
            .limit(1)
        )
        .mappings()
        .first()
    )


def _oldest(conn: Connection, schedule_id: UUID) -> datetime | None:
    found: datetime | None = conn.execute(
        select(func.min(slot_ledger.c.slot_at)).where(slot_ledger.c.schedule_id == schedule_id)
    ).scalar_one()
    return None if found is None else found.astimezone(UTC)


# --- why ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ask:
    """One ``why``: the schedule, its document, what the person gave and the clock."""

    conn: Connection
    schedule_id: UUID
    doc: DocState
    wall: WallTime
    zone: str
    now: datetime
    scheduler_live: bool

    @property
    def config(self) -> Config:
        return self.doc.config

    def shown(self, instant: datetime) -> str:
        """An instant as the person reads it: its wall time in the asked zone."""
        return f"{format_local(wall_of(instant, self.zone)).replace('T', ' ')} {self.zone}"

    @property
    def said(self) -> str:
        return f"{self.wall.text.replace('T', ' ')} {self.zone}"


def _origin(ask: _Ask) -> datetime:
    return ask.doc.body.first_play_at or ask.now


def _is_slot(ask: _Ask, instant: datetime) -> bool:
    if ask.config.one_shot:
        return one_shot_slot(ask.config, _origin(ask)) == instant
    found = next_slots(ask.config.policy, instant - _SECOND, 1, origin=_origin(ask))
    return bool(found) and found[0].at == instant


def _slot_json(slot: Slot | None, zone: str) -> dict[str, Any] | None:
    if slot is None:
        return None
    return {"slot": iso(slot.at), "local": format_local(wall_of(slot.at, zone))}


def _nearest(ask: _Ask, instant: datetime) -> tuple[Slot | None, Slot | None]:
    """The policy's slots just before and just after ``instant`` (the document's first
    Play as the origin of elapsed policies; now before it)."""
    if ask.config.one_shot:
        at = one_shot_slot(ask.config, _origin(ask))
        slot = Slot(at, at.replace(tzinfo=None), "UTC", None)
        return (slot, None) if at < instant else (None, slot) if at > instant else (None, None)
    before = latest_due(ask.config.policy, instant - _SECOND, origin=_origin(ask))
    after = next_slots(ask.config.policy, instant, 1, origin=_origin(ask))
    return before, (after[0] if after else None)


def _settled(ask: _Ask, passage_id: str | None) -> dict[str, Any] | None:
    if passage_id is None:
        return None
    for result in ask.doc.body.results:
        if result.passage_id == passage_id:
            return result.to_json()
    return None


def _passage_said(ask: _Ask, passage_id: str, settled: dict[str, Any] | None) -> str:
    if settled is not None:
        summary = settled.get("summary") or ""
        outcome = settled["outcome"] + (f" ({settled['reason']})" if settled.get("reason") else "")
        return f"; it settled {outcome}" + (f": {summary}" if summary else "")
    pending = ask.doc.body.pending
    if pending is not None and pending.passage_id == passage_id:
        return f"; it is still pending ({pending.status.value})"
    return ""


def _row_sentence(ask: _Ask, row: dict[str, Any], settled: dict[str, Any] | None) -> str:
    """The sentence of a recorded slot: its outcome, reason, detail and passage."""
    outcome, reason, detail = row["outcome"], row["reason"], row["detail"]
    passage = row["passageId"]
    slot = f"The slot at {ask.said}"
    if row["slots"] > 1:
        slot += f" is one of {row['slots']} slots summarised in one row, and"
    why = _REASONS.get(reason, reason) if reason else None
    # (an outage's detail says what its reason's words say)
    said = f"; {detail}" if detail and reason != Reason.NO_SCHEDULER else ""
    if outcome == Outcome.LAUNCHED:
        text = f"{slot} launched passage {passage}"
        if why is not None:
            text += f": {why}"
        text += said + _passage_said(ask, passage, settled)
    elif outcome == Outcome.COALESCED:
        text = (
            f"{slot} was not launched on its own: {why or 'it was missed'}{said}; it was "
            f"coalesced into the catch-up passage {passage}"
        )
        text += _passage_said(ask, passage, settled)
    elif outcome == Outcome.SKIPPED:
        text = f"{slot} was skipped: {why or 'nothing was launched for it'}{said}"
    else:
        other = row["otherAt"]
        moved = "" if other is None else f" from {ask.shown(datetime.fromisoformat(other))}"
        text = f"{slot} was moved{moved} to {ask.shown(datetime.fromisoformat(row['slot']))}"
        text += f": {why or 'new time zone rules moved it'}"
    return text + "."


def _answer(
    ask: _Ask,
    verdict: str,
    sentence: str,
    *,
    instant: datetime | None,
    row: RowMapping | None = None,
    nearest: tuple[Slot | None, Slot | None] = (None, None),
) -> dict[str, Any]:
    shown = None if row is None else row_json(row)
    settled = None if shown is None else _settled(ask, shown["passageId"])
    if shown is not None:
        verdict = shown["outcome"]
        sentence = sentence or _row_sentence(ask, shown, settled)
    return {
        "at": ask.wall.text,
        "zone": ask.zone,
        "instant": None if instant is None else iso(instant),
        "verdict": verdict,
        "sentence": sentence,
        "row": shown,
        "passage": settled,
        "nearest": {
            "before": _slot_json(nearest[0], ask.zone),
            "after": _slot_json(nearest[1], ask.zone),
        },
    }


def explain(
    conn: Connection,
    schedule_id: UUID,
    doc: DocState,
    wall: WallTime,
    zone: str,
    now: datetime,
    *,
    scheduler_live: bool,
) -> dict[str, Any]:
    """Why the slot at the wall time ``wall`` in ``zone`` did (or did not) run: the row
    that records it, else what the policy and the document say (the module docstring's
    table). ``scheduler_live``: whether a scheduler holds the schedule's wake now."""
    ask = _Ask(conn, schedule_id, doc, wall, zone, now, scheduler_live)
    missing = _row_by_key(conn, schedule_id, f"missing:{wall.text}@{zone}")
    if missing is not None:
        around = _nearest(ask, missing["slot_at"].astimezone(UTC) - _SECOND)
        return _answer(ask, "", "", instant=None, row=missing, nearest=around)
    if wall.value is None:
        raise InvalidInput(
            f"at: {wall.text[:10]} is not a calendar date, and no slot of the schedule "
            "was named by it",
            field="at",
        )
    try:
        return _at(ask, resolve_user_local(wall.value, zone, "at"))
    except NonexistentLocalTime as exc:
        return _gap(ask, exc.message.removeprefix("at: "))
    except AmbiguousLocalTime:
        tz = get_zone(zone)
        local = local_seconds(wall.value)
        _, earlier, period = tz.resolve(local)
        later = local - tz.offsets[period + 1]
        return _fold(ask, to_utc_datetime(earlier), to_utc_datetime(later))


def _gap(ask: _Ask, jump: str) -> dict[str, Any]:
    """A wall time inside a DST gap (``jump``: the engine's sentence): a slot moved out
    of it by the shift policy, else nonexistent."""
    assert ask.wall.value is not None
    _, gap_end_s, _ = get_zone(ask.zone).resolve(local_seconds(ask.wall.value))
    gap_end = to_utc_datetime(gap_end_s)
    nearest = _nearest(ask, gap_end - _SECOND)
    row = _row_by_key(ask.conn, ask.schedule_id, iso(gap_end))
    if row is not None and row["note"] == "shifted":
        shown = row_json(row)
        said = _row_sentence(ask, shown, _settled(ask, shown["passageId"]))
        sentence = f"{jump}; so the slot moved past the gap: {said[0].lower()}{said[1:]}"
        return _answer(ask, "", sentence, instant=gap_end, row=row, nearest=nearest)
    return _answer(
        ask,
        "nonexistent",
        f"{jump}, so no slot can be at that wall time.",
        instant=None,
        nearest=nearest,
    )


def _fold(ask: _Ask, earlier: datetime, later: datetime) -> dict[str, Any]:
    """A wall time that occurs twice: the pass a row records (the earlier first), else
    the pass that is a slot."""
    for which, instant in (("earlier", earlier), ("later", later)):
        row = _row_at(ask.conn, ask.schedule_id, instant)
        if row is not None and (row["slots"] == 1 or _is_slot(ask, instant)):
            answer = _answer(ask, "", "", instant=instant, row=row, nearest=_nearest(ask, instant))
            answer["sentence"] = _twice(answer["sentence"], ask, which, instant)
            return answer
    chosen, which = earlier, "earlier"
    if not _is_slot(ask, earlier) and _is_slot(ask, later):
        chosen, which = later, "later"
    answer = _at(ask, chosen)
    answer["sentence"] = _twice(answer["sentence"], ask, which, chosen)
    return answer


def _twice(sentence: str, ask: _Ask, which: str, instant: datetime) -> str:
    return (
        f"{sentence.removesuffix('.')} ({ask.wall.text[11:16]} occurs twice that day in "
        f"{ask.zone}; this is the {which} of the two, {iso(instant)})."
    )


def _at(ask: _Ask, instant: datetime) -> dict[str, Any]:
    """A wall time that names one instant."""
    row = _row_at(ask.conn, ask.schedule_id, instant)
    nearest = _nearest(ask, instant)
    if row is not None and (row["slots"] == 1 or _is_slot(ask, instant)):
        return _answer(ask, "", "", instant=instant, row=row, nearest=nearest)
    if not _is_slot(ask, instant):
        before, after = nearest
        around = [
            f"the one before is {ask.shown(before.at)}" if before else "there is none before",
            f"the one after is {ask.shown(after.at)}" if after else "there is none after",
        ]
        sentence = f"{ask.said} is not a slot of this schedule's policy; {' and '.join(around)}."
        return _answer(ask, "not-a-slot", sentence, instant=instant, nearest=nearest)
    verdict, sentence = _unrecorded(ask, instant, nearest[1])
    return _answer(ask, verdict, sentence, instant=instant, nearest=nearest)


def _unrecorded(ask: _Ask, instant: datetime, following: Slot | None) -> tuple[str, str]:
    """The verdict and sentence of a slot of the policy that no row records."""
    body, slot = ask.doc.body, f"The slot at {ask.said}"
    if instant > ask.now:
        return "not-yet", f"{slot} is still to come: {_future(ask, instant)}."
    if body.first_play_at is None or instant < body.first_play_at:
        played = (
            "the schedule has never been played"
            if body.first_play_at is None
            else f"the schedule was first played at {ask.shown(body.first_play_at)}"
        )
        return "before-first-play", f"{slot} came before the schedule ran: {played}."
    oldest = _oldest(ask.conn, ask.schedule_id)
    old = instant < ask.now - RETAIN_AGE and (oldest is None or instant < oldest)
    if old or (body.high_water is not None and instant <= body.high_water):
        return "forgotten", (
            f"{slot} was decided, but no row of it is kept: the ledger keeps each "
            f"schedule's last {RETAIN_ROWS:,} rows or {RETAIN_AGE.days} days, whichever is "
            "more, and has no rows from before it existed."
        )
    return "undecided", f"{slot} is due and not decided yet: {_waiting(ask)}."


def _future(ask: _Ask, instant: datetime) -> str:
    """What happens to the future slot at ``instant`` if the schedule's state stays."""
    doc, body = ask.doc, ask.doc.body
    if doc.state is State.STOPPED:
        return "the schedule is stopped, so it will not launch"
    if body.first_play_at is None:
        return "the schedule has never been played; it launches only after Play"
    if doc.state is State.PAUSED:
        return "the schedule is paused, so it will not launch unless Play comes first"
    end = end_at(doc.config, body)
    if end is not None and instant > end:
        return f"it falls after the schedule's end bound ({ask.shown(end)}), so it will not launch"
    due = next_due_or_end(doc.config, body)
    if isinstance(due, EndReason):
        return f"the schedule has finished ({due.value}), so it will not launch"
    if body.interruption is not None:
        return f"the schedule is interrupted ({body.interruption}); it launches once resumed"
    if due is not None and due == instant:
        return "it is the next slot; if nothing changes it launches then"
    shown = "" if due is None else f" (the next slot is {ask.shown(due)})"
    return f"if nothing changes it launches then{shown}"


def _waiting(ask: _Ask) -> str:
    """Why a due slot is not decided yet, from the document."""
    doc, body = ask.doc, ask.doc.body
    if doc.state is State.PAUSED:
        since = "" if body.last_pause_at is None else f" since {ask.shown(body.last_pause_at)}"
        return f"the schedule is paused{since}; the next Play passes over it as paused"
    if doc.state is State.STOPPED:
        return "the schedule is stopped"
    if body.interruption is not None:
        return f"the schedule is interrupted ({body.interruption})"
    if body.pending is not None:
        return (
            f"passage {body.pending.passage_id} is still pending ({body.pending.status.value}); "
            "at most one passage is pending at a time"
        )
    if not ask.scheduler_live:
        return "no live scheduler holds the schedule's wake; it is decided when one runs"
    return "it waits for the scheduler's next look"
