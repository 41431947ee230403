"""``kalends reminders``: the reminder intents of the acting actor's lists, one by one.

A reminder intent is one reminder for one recipient on one channel at one instant,
as the delivery worker (``kalends worker``) sees it: pending, leased to a worker,
delivered, dead after its last failed attempt, closed or cancelled. ``retry`` gives
a dead (or waiting) reminder a fresh round of attempts now.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

import typer
from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

from kalends.cli.commands import session_command
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    Session,
    group_help,
)
from kalends.errors import InvalidInput
from kalends.reminders.local_times import when_text
from kalends.reminders.outbox import MAX_ATTEMPTS, STATUSES, Intent

__all__ = ["reminders_app"]

reminders_app = typer.Typer(
    help=group_help(
        "Reminder intents: list them, show one, retry a dead one.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

ReminderArgument = Annotated[
    str,
    typer.Argument(metavar="ID", help="The reminder's ID (`kalends reminders ls` shows it)."),
]

DEFAULT_LIMIT = 100
MAX_LIMIT = 10_000
_STATUS_STYLES = {
    "pending": "yellow",
    "leased": "cyan",
    "delivered": "green",
    "dead": "bold red",
    "closed": "dim",
    "cancelled": "dim",
}


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    if re.fullmatch(r"[0-9]+", text.strip()) is None or not 1 <= int(text) <= MAX_LIMIT:
        raise InvalidInput(
            f"limit: a whole number from 1 to {MAX_LIMIT}, got {text!r}", field="limit"
        )
    return int(text)


def _status(text: str | None) -> str | None:
    if text is None:
        return None
    status = text.strip().lower()
    if status not in STATUSES:
        raise InvalidInput(f"status: one of {', '.join(STATUSES)}, got {text!r}", field="status")
    return status


def _when(value: datetime | None, intent: Intent) -> str:
    """A time of the reminder as its recipient reads it: in the reminder's zone."""
    return when_text(value, intent.zone)


def _status_text(intent: Intent) -> Text:
    return Text(intent.status, style=_STATUS_STYLES.get(intent.status, ""))


def _note(intent: Intent) -> str:
    """What a person most wants to know next about the reminder, in a few words."""
    match intent.status:
        case "pending":
            note = f"next attempt {_when(intent.next_attempt_at, intent)}"
            return f"{note}; last error: {intent.last_error}" if intent.last_error else note
        case "leased":
            return f"sending ({intent.lease_owner or 'a worker'})"
        case "delivered":
            return f"delivered {_when(intent.delivered_at, intent)}"
        case "dead":
            return intent.last_error or ""
        case _:
            return intent.closed_reason or ""


# The full table: (header, free text that may wrap) of each column.
_FULL_COLUMNS = (
    ("id", False),
    ("task", False),
    ("title", True),
    ("channel", False),
    ("at", False),
    ("recipient", False),
    ("status", False),
    ("attempts", False),
    ("note", True),
)
# A free-text column counts this wide when deciding whether the full table fits.
_WRAP_FLOOR = 16


def _full_cells(intent: Intent) -> list[Text]:
    return [
        Text(str(intent.id)),
        Text(intent.task_ref),
        Text(intent.task_title),
        Text(intent.channel),
        Text(_when(intent.at, intent)),
        Text(intent.recipient),
        _status_text(intent),
        Text(f"{intent.attempts}/{MAX_ATTEMPTS}"),
        Text(_note(intent)),
    ]


def reminders_table(intents: list[Intent]) -> Table:
    """Every column, one reminder a line: for a wide terminal, or ``--wide``."""
    table = Table(box=box.SIMPLE_HEAD)
    for name, wrap in _FULL_COLUMNS:
        justify: JustifyMethod = "right" if name == "attempts" else "left"
        table.add_column(name, no_wrap=not wrap, overflow="fold", justify=justify)
    for intent in intents:
        table.add_row(*_full_cells(intent))
    return table


def _full_width(intents: list[Intent]) -> int:
    """How wide :func:`reminders_table` is with every one-line column whole."""
    widths = [cell_len(name) for name, _ in _FULL_COLUMNS]
    for intent in intents:
        for i, cell in enumerate(_full_cells(intent)):
            widths[i] = max(widths[i], cell_len(cell.plain))
    for i, (name, wrap) in enumerate(_FULL_COLUMNS):
        if wrap:
            widths[i] = min(widths[i], max(_WRAP_FLOOR, cell_len(name)))
    # SIMPLE_HEAD: a space either side of each cell, and the edges.
    return sum(widths) + 3 * len(widths) + 1


# In the compact table, the least a column beside the reminder's ID is given.
_COMPACT_FLOOR = 14


def compact_table(intents: list[Intent], width: int) -> Table:
    """Three wider columns that stack related facts, for 80 columns: the reminder's ID on
    a line of its own above its task, when (in the recipient's zone) and to whom, and
    where it stands. Cells wrap, never end in ``…``; the ID keeps its whole width while
    the others wrap, and folds onto the next line only when ``width`` is too narrow
    for that."""
    id_width = max([len("reminder"), *(len(str(i.id)) for i in intents)])
    # SIMPLE_HEAD: a space either side of each cell, and the edges.
    whole = width >= id_width + 2 * _COMPACT_FLOOR + 3 * 3 + 1
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("reminder", overflow="fold", width=id_width if whole else None)
    table.add_column("when, to whom", overflow="fold", min_width=_COMPACT_FLOOR)
    table.add_column("status", overflow="fold", min_width=_COMPACT_FLOOR)
    for n, intent in enumerate(intents):
        reminder = Text(str(intent.id)).append("\n").append(intent.task_ref, style="bold")
        reminder.append(f" {intent.task_title}")
        when = Text(_when(intent.at, intent)).append(f"\n{intent.channel} to {intent.recipient}")
        status = _status_text(intent).append(f" {intent.attempts}/{MAX_ATTEMPTS}", style="")
        note = _note(intent)
        if note:
            status.append(f"\n{note}", style="dim")
        # SIMPLE_HEAD draws a section's end as a blank line: one between reminders.
        table.add_row(reminder, when, status, end_section=n < len(intents) - 1)
    return table


class RemindersView:
    """The full table where it fits the width it is drawn in, else the compact one; with
    ``wide``, the full table however wide (printed with soft wrap, uncropped)."""

    def __init__(self, intents: list[Intent], *, wide: bool = False) -> None:
        self.intents = intents
        self.wide = wide
        self.need = _full_width(intents)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width >= self.need:
            yield reminders_table(self.intents)
        elif self.wide:
            table = reminders_table(self.intents)
            yield Segments(console.render(table, options.update_width(self.need)))
        else:
            yield compact_table(self.intents, options.max_width)


def reminder_grid(intent: Intent) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()

    def row(name: str, value: str | Text) -> None:
        grid.add_row(name, value if isinstance(value, Text) else Text(value))

    row("reminder", str(intent.id))
    row("task", Text(intent.task_ref, style="bold").append(f"  {intent.task_title}", style=""))
    row("channel", intent.channel)
    row("at", _when(intent.at, intent))
    row("recipient", intent.recipient)
    row("status", _status_text(intent))
    row("attempts", f"{intent.attempts} of {MAX_ATTEMPTS}")
    if intent.status in ("pending", "leased"):
        row("next attempt", _when(intent.next_attempt_at, intent))
    if intent.status == "leased":
        row("leased to", intent.lease_owner or "")
        row("lease ends", _when(intent.lease_expires_at, intent))
    if intent.delivered_at is not None:
        row("delivered", _when(intent.delivered_at, intent))
    if intent.last_error:
        row("last error", intent.last_error)
    if intent.closed_reason:
        row("closed", intent.closed_reason)
    row("schedule revision", str(intent.schedule_revision))
    row("created", _when(intent.created_at, intent))
    row("updated", _when(intent.updated_at, intent))
    return grid


@session_command(reminders_app, "ls")
def ls_command(
    s: Session | Remote,
    status: Annotated[
        str | None,
        typer.Option("--status", metavar="STATUS", help=f"Only these: {', '.join(STATUSES)}."),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", metavar="REF", help="Only the reminders of this task (ref or ID)."),
    ] = None,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit", metavar="N", help=f"At most N (1-{MAX_LIMIT}; default {DEFAULT_LIMIT})."
        ),
    ] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="Every column, one reminder a line, even wider than the terminal "
            "(default: so where they fit, else three wider columns).",
        ),
    ] = False,
) -> None:
    """List the reminders of tasks in the acting actor's lists, earliest first.

    Times are shown in each reminder's own zone, its recipient's wall time. With --json:
    a list of reminders, "at" in UTC with "local" and "zone" beside it.
    """
    wanted = _status(status)
    most = _limit(limit)
    found = s.reminders.list(s.actor, status=wanted, task=task, limit=most)
    if s.json_output:
        emit_json([intent.to_json() for intent in found])
        return
    if not found:
        console.print(Text("no reminders", style="dim"))
        return
    console.print(RemindersView(found, wide=wide), soft_wrap=wide)


@session_command(reminders_app, "show")
def show_command(s: Session | Remote, reminder: ReminderArgument) -> None:
    """Show one reminder: its task, recipient, status, attempts and last error."""
    found = s.reminders.get(s.actor, reminder.strip())
    if s.json_output:
        emit_json(found.to_json())
        return
    console.print(reminder_grid(found), soft_wrap=True)


@session_command(reminders_app, "retry")
def retry_command(s: Session | Remote, reminder: ReminderArgument) -> None:
    """Give a dead (or waiting) reminder a fresh round of attempts, due now.

    Only its recipient or an editor of the list may. A delivered, closed or
    cancelled reminder is refused. With --json: the reminder.
    """
    found = s.reminders.requeue(s.actor, reminder.strip())
    if s.json_output:
        emit_json(found.to_json())
        return
    console.print(
        Text(f"reminder {found.id} is pending again: ").append(
            f"{found.attempts} of {MAX_ATTEMPTS} attempts used, next attempt now"
        ),
        soft_wrap=True,
    )
    s.local_note()
