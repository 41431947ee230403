"""``kalends schedule ledger`` and ``why``: a schedule's slots as they were decided, and
why one wall time did or did not run (issue 24 §1 "Reads").

Both call the session's :class:`~kalends.cli.mission_client.SchedulesClient` alike in
local and server mode (:meth:`~kalends.missions.ScheduleService.ledger`,
:meth:`~kalends.missions.ScheduleService.why`). ``--from`` and ``--to`` are wall times
or dates in the schedule's zone (or ``--zone``), turned into the service's instants
here: a date is its whole day, ``--to`` is included, and a bound inside a DST gap
or a repeated hour is read as its first existing instant.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from kalends.civil import check_zone_name, get_zone
from kalends.civil.zones import local_seconds, to_utc_datetime
from kalends.cli.output import console, emit_json
from kalends.cli.remote import Remote
from kalends.cli.schedule_fields import whole
from kalends.cli.schedule_options import ScheduleArgument
from kalends.cli.session import Session
from kalends.cli.tables import Column, Fitted, WideOption, table
from kalends.errors import InvalidInput
from kalends.missions.ledger_reads import LEDGER_PAGE, MAX_LEDGER_PAGE

__all__ = ["ledger_command", "why_command"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_LOCAL = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$")
# The civil engine's range (kalends.civil.search), with a day's margin for any zone.
_FIRST, _LAST = date(1, 1, 3), date(9999, 12, 29)

ZoneOption = Annotated[
    str | None,
    typer.Option(
        "--zone",
        metavar="ZONE",
        help="Read wall times in this IANA zone (default: the schedule's own).",
        show_default=False,
    ),
]


# --- the window --------------------------------------------------------------------------


def _bound(text: str, zone: str, option: str, *, end: bool) -> datetime:
    """``--from``/``--to`` as an instant: a date is its day's first instant (``--to``:
    the next day's, so the day is included); a wall time is itself (``--to``: its
    second included). A wall time the zone skips or repeats is its first instant."""
    given = text.strip()
    if _DATE.match(given):
        parse, step = "%Y-%m-%d", timedelta(days=1) if end else timedelta(0)
    elif _LOCAL.match(given):
        parse = "%Y-%m-%dT%H:%M:%S" if given.count(":") == 2 else "%Y-%m-%dT%H:%M"
        step = timedelta(seconds=1) if end else timedelta(0)
    else:
        raise InvalidInput(
            f"{option}: expected a date YYYY-MM-DD or a wall time YYYY-MM-DDTHH:MM[:SS] "
            f"in {zone}, got {text!r}",
            field=option,
        )
    try:
        wall = datetime.strptime(given, parse)
    except ValueError:
        what = "a calendar date" if parse == "%Y-%m-%d" else "a valid date and time"
        raise InvalidInput(f"{option}: {text!r} is not {what}", field=option) from None
    if not _FIRST <= wall.date() <= _LAST:
        raise InvalidInput(
            f"{option}: {text!r} is outside the dates slots are computed for ({_FIRST} to {_LAST})",
            field=option,
        )
    tz = get_zone(zone, "zone")
    seconds = local_seconds(wall)
    tz.cover(seconds)
    _, instant, _ = tz.resolve(seconds)
    # A date's end is the next day's first instant, found in the zone the same way.
    if step == timedelta(days=1):
        following = local_seconds(wall + step)
        tz.cover(following)
        _, instant, _ = tz.resolve(following)
        return to_utc_datetime(instant)
    return to_utc_datetime(instant) + step


# --- ledger ----------------------------------------------------------------------------------

_FULL = (
    Column("local time"),
    Column("outcome"),
    Column("reason"),
    Column("passage"),
    Column("detail", wrap=True),
)
_COMPACT = (Column("local time"), Column("outcome\nreason"), Column("passage / detail", wrap=True))


def _when(item: dict[str, Any], zone: str) -> str:
    local = str(item["local"]).replace("T", " ")
    shown = local[:16] if local.endswith(":00") else local
    return shown if item["zone"] == zone else f"{shown}\n{item['zone']}"


def _outcome(item: dict[str, Any]) -> str:
    slots = int(item["slots"])
    return str(item["outcome"]) + (f" ({slots})" if slots > 1 else "")


def ledger_view(page: dict[str, Any], *, wide: bool = False) -> Fitted:
    """The rows as a table: every column when they fit, else the outcome over its reason
    and the passage over its detail (80 columns)."""
    zone = page["zone"]
    full, compact = [], []
    for item in page["items"]:
        when, outcome = _when(item, zone), _outcome(item)
        reason, passage, detail = item["reason"] or "", item["passageId"] or "", item["detail"]
        full.append([when, outcome, reason, passage, detail or ""])
        below = "\n".join(part for part in (passage, detail) if part)
        compact.append([when, f"{outcome}\n{reason}" if reason else outcome, below])
    title = f"slot ledger, wall times in {zone}"
    small = table(_COMPACT, compact, compact=True, title=title)
    return Fitted.of(_FULL, full, small, wide=wide, title=title)


def counts_line(counts: dict[str, Any]) -> str:
    """``launched 5, coalesced 2, skipped 1, moved 0; reasons: dst-gap 1, …``."""
    said = ", ".join(
        f"{o} {counts.get(o, 0)}" for o in ("launched", "coalesced", "skipped", "moved")
    )
    reasons = counts.get("reasons") or {}
    if reasons:
        said += "; reasons: " + ", ".join(f"{r} {n}" for r, n in sorted(reasons.items()))
    return said


def ledger_command(
    s: Session | Remote,
    schedule: ScheduleArgument,
    start: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="WHEN",
            help="From this date (YYYY-MM-DD) or wall time (YYYY-MM-DDTHH:MM).",
            show_default=False,
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="WHEN",
            help="Up to this date or wall time, included.",
            show_default=False,
        ),
    ] = None,
    zone: ZoneOption = None,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="CURSOR",
            help="Continue after this cursor (what a page said).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit",
            metavar="N",
            help=f"At most N rows per page (1-{MAX_LEDGER_PAGE}, default {LEDGER_PAGE}).",
            show_default=False,
        ),
    ] = None,
    every_page: Annotated[
        bool, typer.Option("--all", help="Follow the cursor through every page.")
    ] = False,
    wide: WideOption = False,
) -> None:
    """Show a schedule's slots as decided: launched, coalesced, skipped, moved.

    One row per slot: launched (its passage), coalesced (missed, then folded
    into a later catch-up passage), skipped with its reason (paused, stopped,
    end-bound, quota, condition-false, pending-passage, no-scheduler, dst-gap,
    day-missing), or moved by new zone rules. A long outage's oldest slots
    share one summary row. The counts of the whole window end the output.

    --from and --to take a date or a wall time in the schedule's zone (or
    --zone); --to is included; a window spans at most 10 years. The ledger
    keeps each schedule's last 1,000 rows or 90 days, whichever is more.

    With --json: {"missionId", "zone", "from", "to", "items", "nextAfter",
    "counts"}; with --all, every page's items together.
    """
    size = LEDGER_PAGE if limit is None else whole(limit, "limit")
    named = None if zone is None else check_zone_name(zone)
    schedules, acting = s.schedules, s.actor

    def read() -> dict[str, Any]:
        first = last = None
        if start is not None or end is not None:
            shown = named or schedules.ledger(acting, schedule, limit=1)["zone"]
            first = None if start is None else _bound(start, shown, "from", end=False)
            last = None if end is None else _bound(end, shown, "to", end=True)
        page = schedules.ledger(acting, schedule, start=first, end=last, after=after, limit=size)
        while every_page and page["nextAfter"] is not None:
            more = schedules.ledger(
                acting, schedule, start=first, end=last, after=page["nextAfter"], limit=size
            )
            page = {**more, "items": [*page["items"], *more["items"]]}
        return page

    page = s.read_together(read)
    if s.json_output:
        emit_json(page)
        return
    if page["items"]:
        console.print(ledger_view(page, wide=wide), soft_wrap=True)
    else:
        console.print(Text("no ledger rows in this window", style="dim"))
    console.print(Text(counts_line(page["counts"])), soft_wrap=True)
    if page["nextAfter"] is not None:
        console.print(
            Text(
                f"more: kalends schedule ledger {schedule} --after {page['nextAfter']} (or --all)",
                style="dim",
            ),
            soft_wrap=True,
        )


# --- why ------------------------------------------------------------------------------------


def why_view(answer: dict[str, Any]) -> Group:
    """The sentence, then the row that records the slot as a short table."""
    parts: list[Any] = [Text(answer["sentence"])]
    row = answer.get("row")
    if row is not None:
        facts = [
            ("slot", f"{row['local'].replace('T', ' ')} {row['zone']} ({row['slot']})"),
            ("outcome", _outcome(row) + (f", {row['reason']}" if row["reason"] else "")),
            ("passage", row["passageId"] or ""),
            ("decided", row["decidedAt"] or ""),
        ]
        if row["note"]:
            facts.append(("DST", row["note"]))
        if row["through"]:
            facts.append(("through", row["through"]))
        settled = answer.get("passage")
        if settled is not None:
            facts.append(("settled", f"{settled['outcome']} at {settled['settledAt']}"))
        grid = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column(overflow="fold")
        for name, value in facts:
            if value:
                grid.add_row(name, Text(value))
        parts += [Text(""), grid]
    return Group(*parts)


def why_command(
    s: Session | Remote,
    schedule: ScheduleArgument,
    at: Annotated[
        str,
        typer.Option(
            "--at",
            metavar="LOCAL",
            help="The wall time to explain: YYYY-MM-DDTHH:MM (or with :SS).",
            show_default=False,
        ),
    ],
    zone: ZoneOption = None,
) -> None:
    """Say why the slot at a wall time did or did not run.

    One sentence: the slot's recorded outcome and reason (launched, coalesced
    into a catch-up passage, skipped: paused, dst-gap, no-scheduler, ...) with
    its passage and how it settled; or, with no row, whether the time is a
    slot at all (and the nearest ones), still to come, before the first Play,
    no longer kept, or due and not decided yet (and why). A wall time in a DST
    gap or a repeated hour is said so. --at is read in the schedule's zone
    unless --zone.

    With --json: {"at", "zone", "instant", "verdict", "sentence", "row",
    "passage", "nearest"}.
    """
    answer = s.schedules.why(s.actor, schedule, at, zone=zone)
    if s.json_output:
        emit_json(answer)
        return
    console.print(why_view(answer), soft_wrap=False)
