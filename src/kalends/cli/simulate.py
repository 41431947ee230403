"""``kalends simulate``: run a schedule's policy over a window on a fake clock (issue 24
§2) and print what its slot ledger would say.

The source is exactly one of: a schedule (SCHEDULE, read through the normal service in
local or server mode, viewer role; nothing is written to that database), a policy
(``--policy JSON``) or a whole configuration (``--config FILE``). Times are wall times in
the policy's zone unless ``--zone``; outages and pauses outside the window are clipped
to it (see :mod:`kalends.missions.simulation_options`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli.db import DatabaseOption, JsonOption
from kalends.cli.output import console, emit_json, error_console
from kalends.cli.remote import ServerOption, local_or_remote
from kalends.cli.session import ActorOption, report_error
from kalends.clock import SystemClock
from kalends.errors import InvalidInput, KalendsError

__all__ = ["simulate_command"]

# How many DST-affected slots the text output lists (--json lists every one).
SHOWN_DST_ROWS = 20
# A run longer than this (seconds of wall time) reports its progress on stderr, a line
# at most every PROGRESS_EVERY seconds.
PROGRESS_AFTER = 2.0
PROGRESS_EVERY = 5.0
DEFAULT_WINDOW = timedelta(days=365)

_WITHIN_UNITS = (("days", 86_400), ("hours", 3_600), ("minutes", 60))


def _read_json(text: str, field: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{field}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            field=field,
        ) from exc


def _config_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"config: cannot read {str(path)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"config: {str(path)!r} is not UTF-8 text") from exc
    return _read_json(text, "config")


def _from_schedule(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration of a schedule's detail projection (its profile is not needed)."""
    config: dict[str, Any] = {
        key: doc[key] for key in ("title", "objective", "notes", "policy", "end", "restart")
    }
    if doc.get("condition") is not None:
        config["condition"] = doc["condition"]
    return config


def _number(text: str | None, field: str, low: int) -> int | None:
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = low - 1
    if value < low:
        raise InvalidInput(f"{field}: expected a whole number of at least {low}, got {text!r}")
    return value


def _fail_rate(text: str | None) -> float:
    if text is None:
        return 0.0
    try:
        value = float(text.strip())
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:  # (NaN fails too)
        raise InvalidInput(
            f"fail-rate: expected a probability between 0 and 1 such as 0.1, got {text!r}",
            field="fail-rate",
        )
    return value


def _within(text: str | None) -> dict[str, int] | None:
    from kalends.missions.simulation_options import parse_span  # noqa: PLC0415

    if text is None:
        return None
    seconds = int(parse_span(text, "within").total_seconds())
    for unit, size in _WITHIN_UNITS:
        if seconds and seconds % size == 0:
            return {unit: seconds // size}
    raise InvalidInput(
        f"within: expected whole minutes, hours or days such as 30d, got {text!r}",
        field="within",
    )


def _local_text(value: str) -> str:
    return value.replace("T", " ")[:16]


def _config(
    mission: str | None,
    policy: str | None,
    config_path: Path | None,
    session: tuple[str | None, str | None, str | None],
) -> dict[str, Any]:
    given = [name for name, v in (("SCHEDULE", mission), ("--policy", policy),
                                  ("--config", config_path)) if v is not None]  # fmt: skip
    if len(given) != 1:
        said = " and ".join(given) if given else "none"
        raise InvalidInput(
            f"give exactly one source: SCHEDULE, --policy JSON or --config FILE (got {said})",
            field="source",
        )
    if policy is not None:
        return {"title": "Simulated policy", "policy": _read_json(policy, "policy")}
    if config_path is not None:
        config = _config_file(config_path)
        if not isinstance(config, dict):
            raise InvalidInput("config: the file must hold a JSON object", field="config")
        return config
    assert mission is not None
    actor, database, server = session
    with local_or_remote(database, server, False, actor=actor) as s:
        return _from_schedule(s.schedules.detail(s.actor, mission))


def simulate_command(
    mission: Annotated[
        str | None,
        typer.Argument(
            metavar="SCHEDULE",
            help="A schedule's ID: simulate its configuration (nothing is written to it).",
            show_default=False,
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option("--policy", metavar="JSON", help="A policy as JSON.", show_default=False),
    ] = None,
    config_path: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="A whole configuration (JSON, as `kalends schedule create --config`).",
            show_default=False,
        ),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="LOCAL|DATE",
            help="Window start, YYYY-MM-DDTHH:MM or YYYY-MM-DD (default: now).",
            show_default=False,
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="LOCAL|DATE",
            help="Window end (default: 365 days after --from; at most 10 years).",
            show_default=False,
        ),
    ] = None,
    zone: Annotated[
        str | None,
        typer.Option(
            "--zone",
            metavar="ZONE",
            help="The zone of every time given (default: the policy's; UTC for elapsed).",
            show_default=False,
        ),
    ] = None,
    outages: Annotated[
        list[str] | None,
        typer.Option(
            "--outage",
            metavar="FROM/TO",
            help="No scheduler runs FROM to TO (repeatable), e.g. "
            "2027-01-10T00:00/2027-01-12T08:00.",
            show_default=False,
        ),
    ] = None,
    pauses: Annotated[
        list[str] | None,
        typer.Option(
            "--pause",
            metavar="FROM/TO",
            help="Pause at FROM and Play at TO (repeatable).",
            show_default=False,
        ),
    ] = None,
    duration: Annotated[
        str,
        typer.Option(
            "--duration",
            metavar="SPAN",
            help="How long passages run: 40m, 30m-2h (uniform) or exp:40m (mean).",
        ),
    ] = "0",
    fail_rate: Annotated[
        str | None,
        typer.Option(
            "--fail-rate",
            metavar="P",
            help="The probability a passage fails, 0 to 1 (default 0).",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        str | None,
        typer.Option(
            "--seed",
            metavar="N",
            help="Seed of the durations and failures drawn (default: a fixed one).",
            show_default=False,
        ),
    ] = None,
    max_passages: Annotated[
        str | None,
        typer.Option(
            "--max-passages",
            metavar="N",
            help="End after N passages (replaces the configuration's quota).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="LOCAL",
            help="End bound: no slot after this wall time (YYYY-MM-DDTHH:MM).",
            show_default=False,
        ),
    ] = None,
    within: Annotated[
        str | None,
        typer.Option(
            "--within",
            metavar="SPAN",
            help="End bound: no slot later than this after the first Play (30d, 12h).",
            show_default=False,
        ),
    ] = None,
    exact: Annotated[
        bool,
        typer.Option("--exact", help="Also run the scheduler's hourly rounds (slower)."),
    ] = False,
    svg: Annotated[
        Path | None,
        typer.Option("--svg", metavar="FILE", help="Draw the timeline as SVG into FILE."),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", metavar="FILE", help="Draw the timeline as an HTML page."),
    ] = None,
    json_output: JsonOption = False,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
) -> None:
    """Simulate a schedule over a window: the real scheduler on a fake clock.

    Prints the ledger's counts by outcome and reason, the DST-affected
    slots, the first and last slots and the passages. With --json: the
    whole ledger, {"counts", "passages", "dst", "first", "last", "items"}.
    Outages and pauses outside the window are clipped to it. SCHEDULE is
    read as a viewer in local or server mode; nothing is written to it.
    """
    from kalends.civil import get_zone  # noqa: PLC0415
    from kalends.missions.simulation import policy_zone, simulate  # noqa: PLC0415
    from kalends.missions.simulation_options import (  # noqa: PLC0415
        DEFAULT_SEED,
        SimulationOptions,
        parse_durations,
        parse_interval,
        parse_local_or_date,
    )
    from kalends.missions.timeline import timeline_html, timeline_svg  # noqa: PLC0415

    wall = SystemClock()
    try:
        config = _config(mission, policy, config_path, (actor, database, server))
        in_zone = zone if zone is not None else policy_zone(config)
        get_zone(in_zone)  # (an unknown zone refused in its own words)
        first = (
            wall.now().replace(second=0, microsecond=0)
            if start is None
            else parse_local_or_date(start, in_zone, "from")
        )
        last = first + DEFAULT_WINDOW if end is None else parse_local_or_date(end, in_zone, "to")
        options = SimulationOptions(
            start=first,
            end=last,
            zone=in_zone,
            outages=tuple(parse_interval(o, in_zone, "outage") for o in outages or ()),
            pauses=tuple(parse_interval(p, in_zone, "pause") for p in pauses or ()),
            durations=parse_durations(duration),
            fail_rate=_fail_rate(fail_rate),
            seed=DEFAULT_SEED if seed is None else _seed(seed),
            max_passages=_number(max_passages, "max-passages", 1),
            until_local=None if until is None else _until(until, in_zone),
            within=_within(within),
            exact=exact,
        )
        began = wall.monotonic()
        printed = [began]

        def progress(p: Any) -> None:
            at = wall.monotonic()
            if at - began >= PROGRESS_AFTER and at - printed[0] >= PROGRESS_EVERY:
                printed[0] = at
                error_console.print(
                    f"simulating: {p.fraction:4.0%} to {p.at:%Y-%m-%d %H:%M}Z, "
                    f"{p.launched:,} passage(s)",
                    highlight=False,
                    soft_wrap=True,
                )

        result = simulate(config, options, progress=progress, wall=wall)
        title = str(config.get("title") or "Simulation")
        for path, draw in ((svg, timeline_svg), (html, timeline_html)):
            if path is not None:
                drawn = draw(
                    result.rows,
                    start=result.start,
                    end=result.end,
                    zone=result.zone,
                    title=f"{title} (simulated)",
                )
                _write(path, drawn)
    except KalendsError as exc:
        report_error(exc, json_output)
    if json_output:
        emit_json(result.to_json())
        return
    _print(result, title, in_zone)


def _seed(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidInput(f"seed: expected a whole number, got {text!r}", field="seed") from None


def _until(text: str, zone: str) -> str:
    from kalends.missions.simulation_options import parse_local_or_date  # noqa: PLC0415

    parse_local_or_date(text, zone, "until")  # (refused here, in the option's name)
    value = text.strip()
    if len(value) == 10:
        value += "T00:00"
    return value + (":00" if len(value) == 16 else "")


def _write(path: Path, content: str) -> None:
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write {str(path)!r}: {exc.strerror}") from exc


def _print(result: Any, title: str, zone: str) -> None:
    """The summary; the window in ``zone`` (the times given), the slots in the policy's."""
    days = (result.end - result.start).total_seconds() / 86_400
    console.print(Text(f"{title}: simulated, slots in {result.zone}", style="bold"))
    console.print(
        f"window  {_wall(result.start, zone)} to {_wall(result.end, zone)} {zone} "
        f"({_days(days)} days)",
        highlight=False,
    )
    counts = result.counts
    table = Table(box=box.SIMPLE_HEAD, title="slots", title_justify="left")
    table.add_column("outcome", no_wrap=True)
    table.add_column("reason", no_wrap=True)
    table.add_column("slots", justify="right", no_wrap=True)
    by_outcome = _reasons_by_outcome(result.rows)
    for outcome in ("launched", "coalesced", "skipped", "moved"):
        if not counts[outcome] and outcome != "launched":
            continue
        table.add_row(outcome, "", f"{counts[outcome]:,}")
        for reason, n in sorted(by_outcome.get(outcome, {}).items()):
            table.add_row("", reason, f"{n:,}")
    console.print(table)
    p = result.passages
    ended = [f"{p['completed']:,} completed", f"{p['failed']:,} failed"]
    if p["interrupted"]:
        ended.append(f"{p['interrupted']:,} interrupted")
    if p["running"]:
        ended.append(f"{p['running']:,} running at the end")
    console.print(f"passages  {p['launched']:,} launched: " + ", ".join(ended), highlight=False)
    dst = result.dst
    if dst:
        shown = Table(
            box=box.SIMPLE_HEAD, title=f"DST-affected slots ({len(dst)})", title_justify="left"
        )
        for column in ("local time", "outcome", "reason"):
            shown.add_column(column, no_wrap=True)
        for row in dst[:SHOWN_DST_ROWS]:
            reason = row["reason"] or ""
            if row["note"]:
                reason = f"{reason} ({row['note']})" if reason else row["note"]
            shown.add_row(_local_text(row["local"]), row["outcome"], reason)
        console.print(shown)
        if len(dst) > SHOWN_DST_ROWS:
            console.print(
                Text(f"  and {len(dst) - SHOWN_DST_ROWS} more (--json lists every one)"),
                style="dim",
            )
    else:
        console.print("DST-affected slots: none", highlight=False)
    for label, row in (("first slot", result.first), ("last slot ", result.last)):
        if row is None:
            console.print(f"{label}  none in the window", highlight=False)
            continue
        said = row["outcome"] + (f" ({row['reason']})" if row["reason"] else "")
        console.print(f"{label}  {_local_text(row['local'])}  {said}", highlight=False)
    for note in result.notes:
        console.print(Text(f"note: {note}", style="dim"))
    console.print(
        Text(f"took {result.seconds:.1f} s ({result.rounds:,} scheduler rounds)", style="dim")
    )


def _days(days: float) -> str:
    return f"{days:.1f}".removesuffix(".0")


def _reasons_by_outcome(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        if row["reason"] is not None:
            per = found.setdefault(row["outcome"], {})
            per[row["reason"]] = per.get(row["reason"], 0) + row["slots"]
    return found


def _wall(instant: datetime, zone: str) -> str:
    from zoneinfo import ZoneInfo  # noqa: PLC0415

    return f"{instant.astimezone(ZoneInfo(zone)):%Y-%m-%d %H:%M}"
