"""Recurrence benchmark: kalends against croniter, cronsim, APScheduler 3 and dateutil.

For each rule below, every library computes the next ``--count`` (default 10,000)
successive aware datetimes after 2026-01-01T00:00:00Z, in the same process, the way
that library is meant to be iterated:

- kalends: one ``next_instants(rule, start, count, origin=start)`` call (UTC instants);
  ``next_slots`` (full slots: local time, zone and DST note) is timed as well.
- croniter: ``croniter(expr, start_in_zone).get_next(datetime)`` repeatedly.
- cronsim: ``next()`` on ``CronSim(expr, start_in_zone)``.
- APScheduler 3: ``trigger.get_next_fire_time(previous, now)`` with ``now = previous``.
- dateutil: ``rrule(...).xafter(naive_local_start, count, inc=False)``; dateutil does
  naive wall-clock arithmetic, so every naive result is localized with
  ``replace(tzinfo=ZoneInfo(zone))`` (fold=0), inside the timed region.

Timing: each timed call goes from the rule's definition (parsing/construction
included) to a list of ``count`` aware datetimes. One untimed warm-up run (whose output
is also the one compared), then ``--repeat`` timed runs with the garbage collector
paused (as ``timeit`` does); the best run is reported.

Correctness: each peer's instants (converted to UTC) are compared with kalends'
``next_slots`` (gap policy ``shift``). A peer is "DST-correct" on a rule when its first
``count`` instants equal kalends'; the "fastest DST-correct peer" of a rule is chosen
among peers whose method was right on every rule of the run (a peer that returns
nonexistent or duplicate times on one rule avoids them on another only by luck).
Every difference is listed with a reason (capped in the table output; complete in
``--json``).

One slot per call: a scheduler computes one slot per wake, from an instant it stored
(the last slot), so a second table times ``count`` successive calls, each starting from
the previous call's result, the rule parsed once per run as a scheduler keeps it:

- kalends: ``next_slot(rule, previous, origin=start)`` (a full slot per call).
- cronsim, fresh (the scheduler's way, and the per-call target of issue 25):
  ``next(CronSim(expr, previous))``, a new iterator from the stored instant per call.
- cronsim, kept: ``next(it)`` on one iterator kept between calls (it carries its
  position, so no scheduler restarting from a stored instant can use it that way).
- croniter, fresh: ``croniter(expr, previous).get_next(datetime)`` per call.
- APScheduler 3: ``get_next_fire_time(previous, previous)`` on one trigger (its triggers
  keep no state between calls, so this is also its batch method).
- dateutil is left out: its ``rrule.after`` walks from ``dtstart`` on every call.

Each side's instants are compared with kalends' batch ``next_slots``; kalends' per-call
instants must equal them exactly.

Run from the repository root: ``python bench/recurrence.py [--json] [--count N]
[--repeat R] [--no-per-call]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from itertools import islice
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar
from zoneinfo import ZoneInfo

from apscheduler.triggers.calendarinterval import CalendarIntervalTrigger
from apscheduler.triggers.cron import CronTrigger
from croniter import croniter
from cronsim import CronSim
from dateutil import rrule as rr

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))

from bench.common import grid, positive  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT_COUNT = 10_000
DEFAULT_REPEAT = 5
DIFF_LINES_SHOWN = 10
ONE_MICROSECOND = timedelta(microseconds=1)

Produce = Callable[[int], Sequence[datetime]]


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class BenchRule:
    """One benchmarked rule and how each library spells it."""

    key: str
    label: str
    zone: str
    kalends: Mapping[str, object]
    wall_times: tuple[dtime, ...]
    """Nominal local times of day (to explain shifted slots)."""
    cron: str | None = None
    """Cron expression for croniter / cronsim (None: they cannot express the rule)."""
    aps_cron: Mapping[str, str] | None = None
    """APScheduler 3 CronTrigger fields (its day_of_week numbers are 0=Monday)."""
    aps_calendar_days: int | None = None
    """APScheduler 3 CalendarIntervalTrigger(days=...) instead of a CronTrigger."""
    rrule: Mapping[str, Any] = field(default_factory=dict)
    """dateutil rrule keyword arguments (``freq`` included)."""


def _rules() -> list[BenchRule]:
    return [
        BenchRule(
            key="1",
            label='cron "0 9 * * 1-5" Europe/Berlin',
            zone="Europe/Berlin",
            kalends={"kind": "cron", "expression": "0 9 * * 1-5", "zone": "Europe/Berlin"},
            wall_times=(dtime(9, 0),),
            cron="0 9 * * 1-5",
            # from_crontab would pass "1-5" through as Tuesday-Saturday (APScheduler 3
            # numbers weekdays from Monday=0), so the fields are spelled by name.
            aps_cron={
                "minute": "0",
                "hour": "9",
                "day": "*",
                "month": "*",
                "day_of_week": "mon-fri",
            },
            rrule={
                "freq": rr.DAILY,
                "byweekday": (rr.MO, rr.TU, rr.WE, rr.TH, rr.FR),
                "byhour": 9,
                "byminute": 0,
                "bysecond": 0,
            },
        ),
        BenchRule(
            key="2",
            label='cron "*/15 * * * *" America/New_York',
            zone="America/New_York",
            kalends={"kind": "cron", "expression": "*/15 * * * *", "zone": "America/New_York"},
            wall_times=(),
            cron="*/15 * * * *",
            aps_cron={"minute": "*/15", "hour": "*", "day": "*", "month": "*", "day_of_week": "*"},
            rrule={"freq": rr.HOURLY, "byminute": (0, 15, 30, 45), "bysecond": 0},
        ),
        BenchRule(
            key="3",
            label="daily 02:30 America/New_York",
            zone="America/New_York",
            kalends={"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "shift"},
            wall_times=(dtime(2, 30),),
            cron="30 2 * * *",
            aps_cron={"minute": "30", "hour": "2", "day": "*", "month": "*", "day_of_week": "*"},
            rrule={"freq": rr.DAILY, "byhour": 2, "byminute": 30, "bysecond": 0},
        ),
        BenchRule(
            key="4",
            label="monthly day 31 10:00 Australia/Sydney",
            zone="Australia/Sydney",
            kalends={
                "kind": "monthly",
                "day": 31,
                "time": "10:00",
                "zone": "Australia/Sydney",
                "gap": "shift",
            },
            wall_times=(dtime(10, 0),),
            cron="0 10 31 * *",
            aps_cron={"minute": "0", "hour": "10", "day": "31", "month": "*", "day_of_week": "*"},
            rrule={
                "freq": rr.MONTHLY,
                "bymonthday": 31,
                "byhour": 10,
                "byminute": 0,
                "bysecond": 0,
            },
        ),
        BenchRule(
            key="5",
            label="every 3 days 07:00 Europe/London",
            zone="Europe/London",
            kalends={"kind": "daily", "time": "07:00", "zone": "Europe/London", "interval_days": 3},
            wall_times=(dtime(7, 0),),
            aps_calendar_days=3,
            rrule={"freq": rr.DAILY, "interval": 3, "byhour": 7, "byminute": 0, "bysecond": 0},
        ),
    ]


# --------------------------------------------------------------------------- peers


class Runner(NamedTuple):
    library: str
    produce: Produce
    note: str


def _croniter_runner(expr: str, zone: ZoneInfo) -> Produce:
    def produce(count: int) -> list[datetime]:
        it = croniter(expr, START.astimezone(zone))
        get_next = it.get_next
        return [get_next(datetime) for _ in range(count)]

    return produce


def _cronsim_runner(expr: str, zone: ZoneInfo) -> Produce:
    def produce(count: int) -> list[datetime]:
        return list(islice(CronSim(expr, START.astimezone(zone)), count))

    return produce


def _aps_iterate(trigger: Any, first_now: datetime, count: int) -> list[datetime]:
    get_next = trigger.get_next_fire_time
    out: list[datetime] = []
    append = out.append
    prev: datetime | None = get_next(None, first_now)
    while prev is not None and len(out) < count:
        append(prev)
        prev = get_next(prev, prev)
    return out


def _aps_cron_runner(fields: Mapping[str, str], zone: ZoneInfo) -> Produce:
    def produce(count: int) -> list[datetime]:
        trigger = CronTrigger(**fields, timezone=zone)
        # get_next_fire_time(None, now) may return `now` itself; ask for strictly after
        # the start, like every other library here.
        return _aps_iterate(trigger, START + ONE_MICROSECOND, count)

    return produce


def _aps_calendar_runner(days: int, at: dtime, zone: ZoneInfo) -> Produce:
    start_date: date = START.astimezone(zone).date()

    def produce(count: int) -> list[datetime]:
        trigger = CalendarIntervalTrigger(
            days=days,
            hour=at.hour,
            minute=at.minute,
            second=at.second,
            start_date=start_date,
            timezone=zone,
        )
        return _aps_iterate(trigger, START + ONE_MICROSECOND, count)

    return produce


def _dateutil_runner(kwargs: Mapping[str, Any], zone: ZoneInfo) -> Produce:
    local_start = START.astimezone(zone).replace(tzinfo=None)

    def produce(count: int) -> list[datetime]:
        rule = rr.rrule(dtstart=local_start, cache=False, **kwargs)
        return [d.replace(tzinfo=zone) for d in rule.xafter(local_start, count=count)]

    return produce


def _peers(rule: BenchRule) -> list[Runner]:
    zone = ZoneInfo(rule.zone)
    out: list[Runner] = []
    if rule.cron is not None:
        out.append(Runner("croniter", _croniter_runner(rule.cron, zone), ""))
        out.append(Runner("cronsim", _cronsim_runner(rule.cron, zone), ""))
    if rule.aps_cron is not None:
        out.append(Runner("apscheduler", _aps_cron_runner(rule.aps_cron, zone), "CronTrigger"))
    if rule.aps_calendar_days is not None:
        out.append(
            Runner(
                "apscheduler",
                _aps_calendar_runner(rule.aps_calendar_days, rule.wall_times[0], zone),
                "CalendarIntervalTrigger",
            )
        )
    if rule.rrule:
        out.append(Runner("dateutil", _dateutil_runner(rule.rrule, zone), "rrule + zoneinfo"))
    return out


# --------------------------------------------------------------------------- kalends


class RefSlot(NamedTuple):
    """What the comparison needs from a kalends ``Slot``."""

    at: datetime
    local: datetime
    dst: str | None


@dataclass
class KalendsRunners:
    instants: Produce
    slots: Callable[[int], list[RefSlot]]
    slots_timed: Callable[[int], Sequence[object]]
    single_call: Callable[[int], int]
    """How many slots one ``next_instants`` call returns (bounded to 100 years)."""


def _kalends(rule: BenchRule) -> KalendsRunners:
    # Imported lazily: the benchmark still runs (peers only) without the engine.
    from kalends.civil import Slot, next_instants, next_slots, parse_rule  # noqa: PLC0415

    data = rule.kalends

    # A kalends query covers at most 100 years after `after` (docs/civil-engine.md §7);
    # rules sparser than count/100 slots a year (rule 4) are continued from the last
    # slot found, with the same origin, until `count` slots are in hand.
    def instants(count: int) -> list[datetime]:
        parsed = parse_rule(data)
        out = next_instants(parsed, START, count, origin=START)
        while 0 < len(out) < count:
            more = next_instants(parsed, out[-1], count - len(out), origin=START)
            if not more:
                break
            out += more
        return out

    def slots_timed(count: int) -> list[Slot]:
        parsed = parse_rule(data)
        out = next_slots(parsed, START, count, origin=START)
        while 0 < len(out) < count:
            more = next_slots(parsed, out[-1].at, count - len(out), origin=START)
            if not more:
                break
            out += more
        return out

    def slots(count: int) -> list[RefSlot]:
        return [
            RefSlot(s.at, s.local, None if s.dst is None else str(s.dst))
            for s in slots_timed(count)
        ]

    def single_call(count: int) -> int:
        return len(next_instants(parse_rule(data), START, count, origin=START))

    return KalendsRunners(instants, slots, slots_timed, single_call)


def _kalends_version() -> str:
    try:
        import kalends  # noqa: PLC0415

        return str(kalends.__version__)
    except Exception:  # pragma: no cover
        return "?"


# --------------------------------------------------------------------------- one slot per call


def _kalends_per_call(rule: BenchRule) -> Produce:
    from kalends.civil import next_slot, parse_rule  # noqa: PLC0415

    data = rule.kalends

    def produce(count: int) -> list[datetime]:
        parsed = parse_rule(data)
        out: list[datetime] = []
        append = out.append
        after = START
        for _ in range(count):
            slot = next_slot(parsed, after, origin=START)
            if slot is None:
                break
            after = slot.at
            append(after)
        return out

    return produce


def _cronsim_fresh(expr: str, zone: ZoneInfo) -> Produce:
    def produce(count: int) -> list[datetime]:
        out: list[datetime] = []
        append = out.append
        previous = START.astimezone(zone)
        for _ in range(count):
            previous = next(CronSim(expr, previous))
            append(previous)
        return out

    return produce


def _cronsim_kept(expr: str, zone: ZoneInfo) -> Produce:
    def produce(count: int) -> list[datetime]:
        it = CronSim(expr, START.astimezone(zone))
        return [next(it) for _ in range(count)]

    return produce


def _croniter_fresh(expr: str, zone: ZoneInfo) -> Produce:
    def produce(count: int) -> list[datetime]:
        out: list[datetime] = []
        append = out.append
        previous = START.astimezone(zone)
        for _ in range(count):
            previous = croniter(expr, previous).get_next(datetime)
            append(previous)
        return out

    return produce


def _per_call_peers(rule: BenchRule) -> list[Runner]:
    zone = ZoneInfo(rule.zone)
    out: list[Runner] = []
    if rule.cron is not None:
        out.append(
            Runner("cronsim", _cronsim_fresh(rule.cron, zone), "next(CronSim(expr, previous))")
        )
        out.append(Runner("cronsim", _cronsim_kept(rule.cron, zone), "next(it), it kept"))
        out.append(
            Runner(
                "croniter",
                _croniter_fresh(rule.cron, zone),
                "croniter(expr, previous).get_next()",
            )
        )
    # APScheduler's triggers keep no state: its batch loop already asks once per slot.
    for runner in _peers(rule):
        if runner.library == "apscheduler":
            out.append(Runner("apscheduler", runner.produce, "get_next_fire_time(prev, prev)"))
    return out


def run_per_call(
    rule: BenchRule, count: int, repeat: int, reference: Sequence[RefSlot] | None
) -> list[Row]:
    """Times one slot per call, each call from the previous slot, for kalends and peers."""
    zone = ZoneInfo(rule.zone)
    rows: list[Row] = []
    try:
        t = _time(_kalends_per_call(rule), count, repeat)
    except Exception as exc:
        rows.append(Row("kalends", "next_slot(rule, previous)", error=_err(exc)))
    else:
        row = _row("kalends", "next_slot(rule, previous)", t)
        if reference is not None:
            row.dst_correct = [s.at for s in reference] == list(t.result)
            if not row.dst_correct:
                row.note = "DIFFERS from next_slots (batch)!"
        rows.append(row)
    for runner in _per_call_peers(rule):
        try:
            tp = _time(runner.produce, count, repeat)
        except Exception as exc:
            rows.append(Row(runner.library, runner.note, error=_err(exc)))
            continue
        row = _row(runner.library, runner.note, tp)
        if reference is not None:
            cmp = compare(reference, tp.result, zone, rule.wall_times, runner.library)
            row.dst_correct = cmp.dst_correct
            row.differences = cmp.differences
            row.note = cmp.note
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- timing


T = TypeVar("T")


@dataclass
class Timing(Generic[T]):
    best: float
    runs: list[float]
    result: Sequence[T]
    warmup: float
    cpu_best: float = math.nan
    """The least process CPU time of a timed run (other processes do not count)."""


def _time(produce: Callable[[int], Sequence[T]], count: int, repeat: int) -> Timing[T]:
    t0 = time.perf_counter()
    result = produce(count)  # warm-up (imports, caches); its output is what gets compared
    warmup = time.perf_counter() - t0
    runs: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            c0 = time.process_time()
            t0 = time.perf_counter()
            produce(count)
            runs.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        finally:
            gc.enable()
    best = min(runs) if runs else math.nan
    return Timing(best, runs, result, warmup, min(cpu) if cpu else math.nan)


# --------------------------------------------------------------------------- diffs


def _wall(d: datetime) -> datetime:
    return d.replace(tzinfo=None, fold=0)


def _is_nonexistent(wall: datetime, zone: ZoneInfo) -> bool:
    aware = wall.replace(tzinfo=zone, fold=0)
    return _wall(aware.astimezone(UTC).astimezone(zone)) != _wall(aware)


def _is_ambiguous(wall: datetime, zone: ZoneInfo) -> bool:
    a = wall.replace(tzinfo=zone, fold=0)
    b = wall.replace(tzinfo=zone, fold=1)
    return a.utcoffset() != b.utcoffset() and not _is_nonexistent(wall, zone)


def _utc(d: datetime) -> str:
    return d.astimezone(UTC).strftime("%H:%MZ")


def _local(d: datetime, zone: ZoneInfo) -> str:
    # Through UTC: astimezone() to the same tzinfo would return a nonexistent time as is.
    return d.astimezone(UTC).astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _describe_ref(slot: RefSlot, zone: ZoneInfo, wall_times: Sequence[dtime]) -> str:
    text = f"{_local(slot.at, zone)} ({_utc(slot.at)})"
    if slot.dst == "shifted":
        nominal = [
            t.strftime("%H:%M")
            for t in wall_times
            if _is_nonexistent(datetime.combine(slot.local.date(), t), zone)
        ]
        text += f" (shifted from {', '.join(nominal)})" if nominal else " (shifted)"
    elif slot.dst is not None:
        text += f" ({slot.dst})"
    elif _is_ambiguous(slot.local, zone):
        first = slot.local.replace(tzinfo=zone, fold=0).astimezone(UTC)
        text += (
            " (first pass of the repeated hour)"
            if first == slot.at
            else (" (second pass of the repeated hour)")
        )
    return text


def _describe_peer(native: datetime, zone: ZoneInfo) -> str:
    wall = _wall(native)
    if _is_nonexistent(wall, zone):
        return (
            f"nonexistent local time {wall:%Y-%m-%dT%H:%M} {zone.key} "
            f"(fold={native.fold} -> {_utc(native)} = {_local(native, zone)})"
        )
    if _is_ambiguous(wall, zone):
        which = "later" if native.fold else "earlier"
        return (
            f"{wall:%Y-%m-%d %H:%M} {zone.key} fold={native.fold} ({which} of two) = {_utc(native)}"
        )
    return f"{_local(native, zone)} ({_utc(native)})"


@dataclass
class Comparison:
    dst_correct: bool
    differences: list[str]
    note: str = ""


def compare(
    reference: Sequence[RefSlot],
    peer: Sequence[datetime],
    zone: ZoneInfo,
    wall_times: Sequence[dtime],
    name: str,
) -> Comparison:
    """Compare a peer's native datetimes with kalends' slots, as UTC instants."""
    ref_at = [s.at for s in reference]
    peer_utc = [d.astimezone(UTC) for d in peer]
    if ref_at == peer_utc:
        return Comparison(True, [])
    if not ref_at or not peer_utc:
        return Comparison(False, [f"{name}: {len(peer_utc)} slots vs kalends {len(ref_at)}"])

    horizon = min(ref_at[-1], max(peer_utc))
    ref_set = set(ref_at)
    peer_set = set(peer_utc)
    found: list[tuple[datetime, str]] = []

    first_seen: dict[datetime, datetime] = {}
    extra: list[tuple[datetime, datetime]] = []
    for i, (u, native) in enumerate(zip(peer_utc, peer, strict=True)):
        if i and u < peer_utc[i - 1]:
            found.append(
                (
                    u,
                    f"{name}: out of order: {_describe_peer(native, zone)} "
                    f"after {_describe_peer(peer[i - 1], zone)}",
                )
            )
        if u in first_seen:
            found.append(
                (
                    u,
                    f"{name}: duplicate instant {u:%Y-%m-%dT%H:%MZ}: "
                    f"{_describe_peer(first_seen[u], zone)} and "
                    f"{_describe_peer(native, zone)}",
                )
            )
            continue
        first_seen[u] = native
        if u not in ref_set and u <= horizon:
            extra.append((u, native))

    missing = [s for s in reference if s.at <= horizon and s.at not in peer_set]
    unpaired = list(extra)
    for slot in missing:
        day = slot.local.date()
        match = next((e for e in unpaired if _wall(e[1]).date() == day), None)
        ref_text = _describe_ref(slot, zone, wall_times)
        if match is None:
            found.append((slot.at, f"{name}: missing slot {ref_text}"))
        else:
            unpaired.remove(match)
            found.append(
                (slot.at, f"{name}: {_describe_peer(match[1], zone)}; kalends: {ref_text}")
            )
    for u, native in unpaired:
        found.append((u, f"{name}: extra slot {_describe_peer(native, zone)}"))

    found.sort(key=lambda item: item[0])
    note = ""
    if len(peer) != len(reference):
        note = f"{len(peer)} slots vs kalends {len(reference)}"
    if not found:
        note = (note + "; " if note else "") + (
            f"same instants up to {horizon:%Y-%m-%dT%H:%MZ}, different coverage"
        )
    return Comparison(False, [text for _, text in found], note)


# --------------------------------------------------------------------------- run


@dataclass
class Row:
    library: str
    variant: str
    slots_per_s: float | None = None
    best_s: float | None = None
    warmup_s: float | None = None
    produced: int = 0
    dst_correct: bool | None = None
    differences: list[str] = field(default_factory=list)
    note: str = ""
    error: str = ""
    cpu_slots_per_s: float | None = None
    """Slots per second of process CPU time (best run)."""

    @property
    def name(self) -> str:
        return f"{self.library} {self.variant}" if self.variant else self.library


def _row(library: str, variant: str, t: Timing[Any], note: str = "") -> Row:
    rate = len(t.result) / t.best if t.best and not math.isnan(t.best) else None
    cpu = len(t.result) / t.cpu_best if t.cpu_best and not math.isnan(t.cpu_best) else None
    return Row(
        library, variant, rate, t.best, t.warmup, len(t.result), note=note, cpu_slots_per_s=cpu
    )


@dataclass
class RuleResult:
    rule: BenchRule
    rows: list[Row]
    fastest: Row | None = None
    fastest_dst_correct: Row | None = None
    per_call: list[Row] = field(default_factory=list)
    """One slot per call (empty when not measured)."""

    def kalends(self, variant: str) -> Row | None:
        found = [r for r in self.rows if r.library == "kalends" and r.variant == variant]
        return found[0] if found and found[0].slots_per_s else None

    def ratio(self, variant: str, peer: Row | None) -> float | None:
        k = self.kalends(variant)
        if k is None or peer is None or not k.slots_per_s or not peer.slots_per_s:
            return None
        return k.slots_per_s / peer.slots_per_s

    def per_call_row(self, library: str, variant_prefix: str = "") -> Row | None:
        found = [
            r
            for r in self.per_call
            if r.library == library and r.variant.startswith(variant_prefix) and r.slots_per_s
        ]
        return found[0] if found else None

    def per_call_ratio(self, peer: Row | None, cpu: bool = False) -> float | None:
        k = self.per_call_row("kalends")
        if k is None or peer is None:
            return None
        mine, theirs = (
            (k.cpu_slots_per_s, peer.cpu_slots_per_s) if cpu else (k.slots_per_s, peer.slots_per_s)
        )
        return mine / theirs if mine and theirs else None


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def run_rule(rule: BenchRule, count: int, repeat: int, per_call: bool = True) -> RuleResult:
    zone = ZoneInfo(rule.zone)
    rows: list[Row] = []
    reference: list[RefSlot] | None = None
    try:
        k = _kalends(rule)
    except ImportError as exc:
        rows.append(Row("kalends", "next_instants", error=f"not importable ({exc})"))
    else:
        try:
            reference = k.slots(count)
            t = _time(k.instants, count, repeat)
            inst = _row("kalends", "next_instants", t, "reference (UTC instants)")
            if [s.at for s in reference] != list(t.result):
                inst.note += "; DIFFERS from next_slots' instants!"
            if len(reference) < count:
                inst.note += f"; only {len(reference)} slots"
            single = k.single_call(count)
            if single < count:
                inst.note += (
                    f"; one call stops at the 100-year search bound ({single} slots), "
                    "so the query is continued from the last slot"
                )
            rows.append(inst)
            ts = _time(k.slots_timed, count, repeat)
            rows.append(_row("kalends", "next_slots", ts, "full slots (local time, DST note)"))
        except Exception as exc:
            reference = None
            rows.append(Row("kalends", "next_instants", error=_err(exc)))

    for runner in _peers(rule):
        try:
            tp = _time(runner.produce, count, repeat)
        except Exception as exc:
            rows.append(Row(runner.library, runner.note, error=_err(exc)))
            continue
        row = _row(runner.library, runner.note, tp)
        if len(tp.result) < count:
            row.note = f"only {len(tp.result)} slots"
        if reference is not None:
            cmp = compare(reference, tp.result, zone, rule.wall_times, runner.library)
            row.dst_correct = cmp.dst_correct
            row.differences = cmp.differences
            if cmp.note:
                row.note = "; ".join(x for x in (row.note, cmp.note) if x)
        rows.append(row)

    result = RuleResult(rule, rows)
    if per_call:
        result.per_call = run_per_call(rule, count, repeat, reference)
    peers = [r for r in rows if r.library != "kalends" and r.slots_per_s]
    if peers:
        result.fastest = max(peers, key=lambda r: r.slots_per_s or 0.0)
    return result


def judge_methods(results: Sequence[RuleResult]) -> set[str]:
    """Picks each rule's fastest DST-correct peer, judging a peer's method over the whole run.

    A peer that returned a nonexistent, duplicate or missing instant on any rule of the
    run does not handle DST correctly, even on a rule whose times happen to avoid every
    transition; it is left out of the "fastest DST-correct peer" of every rule.
    Returns the names of the peers so left out.
    """
    wrong = {r.name for res in results for r in res.rows if r.dst_correct is False}
    for res in results:
        ok = [
            r
            for r in res.rows
            if r.library != "kalends" and r.slots_per_s and r.dst_correct and r.name not in wrong
        ]
        res.fastest_dst_correct = max(ok, key=lambda r: r.slots_per_s or 0.0) if ok else None
    return wrong


# --------------------------------------------------------------------------- output


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "kalends": _kalends_version()}
    for dist in ("croniter", "cronsim", "APScheduler", "python-dateutil", "tzdata"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _fmt_rate(rate: float | None) -> str:
    return f"{rate:,.0f}" if rate else "-"


def _fmt_ratio(ratio: float | None) -> str:
    return f"{ratio:.2f}x" if ratio is not None else "n/a"


def _fmt_flag(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "NO")


def print_table(results: Sequence[RuleResult], count: int, repeat: int, elapsed: float) -> None:
    v = _versions()
    print(
        f"Next {count:,} slots after {START:%Y-%m-%dT%H:%M:%SZ}, best of {repeat} runs "
        "after 1 warm-up; " + ", ".join(f"{k} {val}" for k, val in v.items())
    )
    header = ("rule", "library", "variant", "slots/s", "DST-correct", "diffs", "kalends/this")
    body: list[tuple[str, ...]] = []
    for res in results:
        k = res.kalends("next_instants")
        for i, row in enumerate(res.rows):
            ratio = ""
            if row.library != "kalends":
                ratio = _fmt_ratio(res.ratio("next_instants", row)) if k else "n/a"
            body.append(
                (
                    f"{res.rule.key} {res.rule.label}" if i == 0 else "",
                    row.library,
                    row.variant,
                    "error" if row.error else _fmt_rate(row.slots_per_s),
                    _fmt_flag(row.dst_correct),
                    str(len(row.differences)) if row.dst_correct is not None else "",
                    ratio,
                )
            )
    print()
    print("\n".join(grid(header, body, {3, 5, 6})))

    print()
    print("kalends / fastest peer, and / fastest peer whose DST results are right on every rule:")
    header2 = (
        "rule",
        "fastest peer",
        "next_instants",
        "next_slots",
        "fastest DST-correct peer",
        "next_instants",
        "next_slots",
    )
    body2: list[tuple[str, ...]] = []
    for res in results:
        f, ok = res.fastest, res.fastest_dst_correct
        body2.append(
            (
                res.rule.key,
                f"{f.name} ({_fmt_rate(f.slots_per_s)}/s)" if f else "-",
                _fmt_ratio(res.ratio("next_instants", f)),
                _fmt_ratio(res.ratio("next_slots", f)),
                f"{ok.name} ({_fmt_rate(ok.slots_per_s)}/s)" if ok else "none",
                _fmt_ratio(res.ratio("next_instants", ok)),
                _fmt_ratio(res.ratio("next_slots", ok)),
            )
        )
    print("\n".join(grid(header2, body2, {2, 3, 5, 6})))

    print()
    print("Differences from kalends (as UTC instants; kalends gap policy: shift):")
    shown = False
    for res in results:
        for row in res.rows:
            head = f"  rule {res.rule.key} {res.rule.label} - {row.name}"
            if row.error:
                print(f"{head}: {row.error}")
                shown = True
                continue
            if row.library == "kalends":
                if row.note and row.variant == "next_instants" and ";" in row.note:
                    print(f"{head}: note: {row.note.split('; ', 1)[1]}")
                    shown = True
                continue
            if not row.differences and not row.note:
                continue
            shown = True
            extra = f" [{row.note}]" if row.note else ""
            print(f"{head}: {len(row.differences)} difference(s){extra}")
            for text in row.differences[:DIFF_LINES_SHOWN]:
                print(f"    {text}")
            if len(row.differences) > DIFF_LINES_SHOWN:
                more = len(row.differences) - DIFF_LINES_SHOWN
                print(f"    ... and {more} more (--json lists all)")
    if not shown:
        print("  none")
    if any(res.per_call for res in results):
        print_per_call(results, count)
    print()
    print(f"total wall time {elapsed:.1f}s")


def print_per_call(results: Sequence[RuleResult], count: int) -> None:
    """The one-slot-per-call table, its ratios and its differences."""
    print()
    print(
        f"One slot per call: {count:,} calls, each from the previous call's slot (a scheduler's "
        "wake), rule parsed once per run; instants compared with kalends' batch next_slots:"
    )
    header = ("rule", "library", "each call", "slots/s", "same instants", "diffs", "kalends/this")
    body: list[tuple[str, ...]] = []
    for res in results:
        for i, row in enumerate(res.per_call):
            body.append(
                (
                    f"{res.rule.key} {res.rule.label}" if i == 0 else "",
                    row.library,
                    row.variant,
                    "error" if row.error else _fmt_rate(row.slots_per_s),
                    _fmt_flag(row.dst_correct),
                    str(len(row.differences)) if row.dst_correct is not None else "",
                    "" if row.library == "kalends" else _fmt_ratio(res.per_call_ratio(row)),
                )
            )
    print("\n".join(grid(header, body, {3, 5, 6})))

    print()
    print(
        "kalends next_slot per call / cronsim per call. Issue 25's target (>= 10x) is the "
        "first ratio: a fresh CronSim from the stored instant per call, as a scheduler would:"
    )
    header2 = (
        "rule",
        "kalends next_slot/s",
        "cronsim fresh/s",
        "ratio (target)",
        "cronsim kept/s",
        "ratio (kept)",
        "CPU: kalends/s",
        "cronsim fresh/s",
        "ratio (target)",
    )
    body2: list[tuple[str, ...]] = []
    for res in results:
        k = res.per_call_row("kalends")
        fresh = res.per_call_row("cronsim", "next(CronSim")
        kept = res.per_call_row("cronsim", "next(it)")
        body2.append(
            (
                res.rule.key,
                _fmt_rate(k.slots_per_s if k else None),
                _fmt_rate(fresh.slots_per_s if fresh else None),
                _fmt_ratio(res.per_call_ratio(fresh)),
                _fmt_rate(kept.slots_per_s if kept else None),
                _fmt_ratio(res.per_call_ratio(kept)),
                _fmt_rate(k.cpu_slots_per_s if k else None),
                _fmt_rate(fresh.cpu_slots_per_s if fresh else None),
                _fmt_ratio(res.per_call_ratio(fresh, cpu=True)),
            )
        )
    print("\n".join(grid(header2, body2, {1, 2, 3, 4, 5, 6, 7, 8})))
    print(
        "(slots per second of wall-clock time, best run; the last three per second of this "
        "process's CPU time, best run, which other processes on the machine do not change)"
    )

    shown = False
    for res in results:
        for row in res.per_call:
            if not (row.error or row.differences or row.note):
                continue
            if not shown:
                print()
                print("Differences per call (as UTC instants, against kalends' batch next_slots):")
                shown = True
            head = f"  rule {res.rule.key} {res.rule.label} - {row.library} {row.variant}"
            if row.error:
                print(f"{head}: {row.error}")
                continue
            extra = f" [{row.note}]" if row.note else ""
            print(f"{head}: {len(row.differences)} difference(s){extra}")
            for text in row.differences[:DIFF_LINES_SHOWN]:
                print(f"    {text}")
            if len(row.differences) > DIFF_LINES_SHOWN:
                more = len(row.differences) - DIFF_LINES_SHOWN
                print(f"    ... and {more} more (--json lists all)")


def _row_json(row: Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"library": row.library, "variant": row.variant, "slots_per_s": row.slots_per_s}


def _result_json(row: Row) -> dict[str, Any]:
    return {
        "library": row.library,
        "variant": row.variant,
        "slots_per_s": row.slots_per_s,
        "best_s": row.best_s,
        "warmup_s": row.warmup_s,
        "produced": row.produced,
        "dst_correct": row.dst_correct,
        "differences": row.differences,
        "note": row.note,
        "error": row.error or None,
        "cpu_slots_per_s": row.cpu_slots_per_s,
    }


def to_json(results: Sequence[RuleResult], count: int, repeat: int, elapsed: float) -> str:
    doc: dict[str, Any] = {
        "start": START.isoformat(),
        "count": count,
        "repeat": repeat,
        "versions": _versions(),
        "elapsed_s": round(elapsed, 3),
        "rules": [
            {
                "key": res.rule.key,
                "label": res.rule.label,
                "zone": res.rule.zone,
                "kalends_rule": dict(res.rule.kalends),
                "cron": res.rule.cron,
                "fastest_peer": _row_json(res.fastest),
                "fastest_dst_correct_peer": _row_json(res.fastest_dst_correct),
                "ratios": {
                    variant: {
                        "over_fastest_peer": res.ratio(variant, res.fastest),
                        "over_fastest_dst_correct_peer": res.ratio(
                            variant, res.fastest_dst_correct
                        ),
                    }
                    for variant in ("next_instants", "next_slots")
                },
                "results": [_result_json(row) for row in res.rows],
                "per_call": {
                    "ratio_over_cronsim_fresh": res.per_call_ratio(
                        res.per_call_row("cronsim", "next(CronSim")
                    ),
                    "ratio_over_cronsim_kept": res.per_call_ratio(
                        res.per_call_row("cronsim", "next(it)")
                    ),
                    "cpu_ratio_over_cronsim_fresh": res.per_call_ratio(
                        res.per_call_row("cronsim", "next(CronSim"), cpu=True
                    ),
                    "results": [_result_json(row) for row in res.per_call],
                },
            }
            for res in results
        ],
    }
    return json.dumps(doc, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--count",
        type=positive,
        default=DEFAULT_COUNT,
        help=f"slots per run (default {DEFAULT_COUNT})",
    )
    parser.add_argument(
        "--repeat",
        type=positive,
        default=DEFAULT_REPEAT,
        help=f"timed runs per library, best kept (default {DEFAULT_REPEAT})",
    )
    parser.add_argument(
        "--no-per-call",
        dest="per_call",
        action="store_false",
        help="skip the one-slot-per-call table",
    )
    parser.add_argument(
        "--rule", action="append", metavar="KEY", help="only this rule (1-5); may be repeated"
    )
    args = parser.parse_args(argv)

    rules = [r for r in _rules() if not args.rule or r.key in args.rule]
    t0 = time.perf_counter()
    results = [run_rule(rule, args.count, args.repeat, args.per_call) for rule in rules]
    wrong = judge_methods(results)
    elapsed = time.perf_counter() - t0
    if args.json:
        print(to_json(results, args.count, args.repeat, elapsed))
    else:
        print_table(results, args.count, args.repeat, elapsed)
        if wrong:
            print(
                "Not counted as DST-correct on any rule (wrong instants on some rule of this run): "
                + ", ".join(sorted(wrong))
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
