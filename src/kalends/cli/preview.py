"""``kalends preview``: the next slots of any rule, with DST notes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.civil import DstNote, Slot, describe, format_local, parse_rule, preview
from kalends.cli.output import console, emit_json, fail
from kalends.errors import InvalidInput, KalendsError

# The largest preview one command prints.
MAX_PREVIEW_COUNT = 10_000

_LEGEND = {
    DstNote.SHIFTED: "shifted: the wall time does not exist that day; moved to the end of the gap",
    DstNote.EARLIER: "earlier-of-two: the wall time occurs twice that day; the earlier is taken",
}


def parse_instant(text: str, field: str) -> datetime:
    """An ISO 8601 instant with an offset or ``Z``."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        value = None
    if value is None or value.utcoffset() is None:
        raise InvalidInput(
            f"{field}: expected an ISO 8601 instant with an offset or Z, "
            f"such as 2026-03-08T00:00:00Z, got {text!r}",
            field=field,
        )
    return value


def load_rule_json(text: str) -> Any:
    """The rule's JSON, given inline or as ``@path``."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(
                f"rule: cannot read {text[1:]!r}: {exc.strerror}", field="rule"
            ) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"rule: not valid JSON ({exc.msg} at column {exc.colno})", field="rule"
        ) from exc


def slot_json(slot: Slot) -> dict[str, Any]:
    return {
        "at": slot.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "local": format_local(slot.local),
        "zone": slot.zone,
        "dst": slot.dst.value if slot.dst is not None else None,
    }


def preview_command(
    rule: Annotated[
        str, typer.Option("--rule", help="The rule as JSON, or @FILE to read it from a file.")
    ],
    after: Annotated[
        str,
        typer.Option(
            "--after",
            help="ISO 8601 instant with offset or Z; also the origin of rules that need one.",
        ),
    ],
    count: Annotated[
        int, typer.Option("--count", "-n", help=f"How many slots (1-{MAX_PREVIEW_COUNT}).")
    ] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print a rule in words and its next slots, marking those a DST transition changed.

    A rule without "gap" is previewed with "shift". With --json: {"sentence", "slots"}.
    """
    try:
        if not 1 <= count <= MAX_PREVIEW_COUNT:
            raise InvalidInput(
                f"count: must be between 1 and {MAX_PREVIEW_COUNT}, got {count}", field="count"
            )
        parsed = parse_rule(load_rule_json(rule))
        slots = preview(parsed, parse_instant(after, "after"), count)
    except KalendsError as exc:
        fail(exc)
    sentence = describe(parsed)
    if as_json:
        emit_json({"sentence": sentence, "slots": [slot_json(s) for s in slots]})
        return
    console.print(Text(sentence, style="bold"))
    if not slots:
        console.print("No slot within 100 years.")
        return
    zones = sorted({s.zone for s in slots})
    one_zone = len(zones) == 1
    title = f"Next {len(slots)} slot(s) of {parsed.kind}" + (f" in {zones[0]}" if one_zone else "")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("local time", no_wrap=True)
    if not one_zone:
        table.add_column("zone", no_wrap=True)
    table.add_column("UTC", no_wrap=True)
    table.add_column("DST", no_wrap=True)
    for i, slot in enumerate(slots, 1):
        local = slot.local.strftime("%Y-%m-%d %H:%M:%S %a")
        row = [str(i), local] + ([] if one_zone else [slot.zone])
        row += [slot_json(slot)["at"], slot.dst.value if slot.dst is not None else ""]
        table.add_row(*row)
    console.print(table)
    for note in sorted({s.dst for s in slots if s.dst is not None}):
        console.print(f"  [dim]{_LEGEND[note]}[/]")
