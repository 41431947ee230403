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
from uuid import UUID

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli import remote_values as values
from kalends.cli.output import console, emit_json
from kalends.cli.remote import (
    SERVER_MODE_HELP,
    Remote,
    ServerOption,
    local_or_remote,
    path_part,
)
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    ActorOption,
    DatabaseOption,
    JsonOption,
    Session,
)
from kalends.errors import InvalidInput
from kalends.reminders.outbox import MAX_ATTEMPTS, STATUSES, Intent, Outbox

__all__ = ["reminders_app"]

reminders_app = typer.Typer(
    help=(
        "Reminder intents: list them, show one, retry a dead one. "
        f"{LOCAL_MODE_HELP} {SERVER_MODE_HELP} {EXIT_CODES_HELP}"
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


def _outbox(s: Session) -> Outbox:
    return Outbox(s.services.store)


def _reminder_route(reminder: str, *rest: str) -> str:
    return "/".join(("/api/reminders", path_part(reminder.strip()), *rest))


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


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else ""


def _status_text(intent: Intent) -> Text:
    return Text(intent.status, style=_STATUS_STYLES.get(intent.status, ""))


def _note(intent: Intent) -> str:
    """What a person most wants to know next about the reminder, in a few words."""
    match intent.status:
        case "pending":
            note = f"next attempt {_when(intent.next_attempt_at)}"
            return f"{note}; last error: {intent.last_error}" if intent.last_error else note
        case "leased":
            return f"sending ({intent.lease_owner or 'a worker'})"
        case "delivered":
            return f"delivered {_when(intent.delivered_at)}"
        case "dead":
            return intent.last_error or ""
        case _:
            return intent.closed_reason or ""


def reminders_table(intents: list[Intent]) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    table.add_column("task", no_wrap=True)
    table.add_column("title")
    table.add_column("channel", no_wrap=True)
    table.add_column("at", no_wrap=True)
    table.add_column("recipient", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("attempts", no_wrap=True, justify="right")
    table.add_column("note")
    for intent in intents:
        table.add_row(
            Text(str(intent.id), style="dim"),
            Text(intent.task_ref),
            Text(intent.task_title),
            Text(intent.channel),
            Text(_when(intent.at)),
            Text(intent.recipient),
            _status_text(intent),
            Text(f"{intent.attempts}/{MAX_ATTEMPTS}"),
            Text(_note(intent)),
        )
    return table


def reminder_grid(intent: Intent) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()

    def row(name: str, value: str | Text) -> None:
        grid.add_row(name, value if isinstance(value, Text) else Text(value))

    row("reminder", str(intent.id))
    row("task", Text(intent.task_ref, style="bold").append(f"  {intent.task_title}", style=""))
    row("channel", intent.channel)
    row("at", _when(intent.at))
    row("recipient", intent.recipient)
    row("status", _status_text(intent))
    row("attempts", f"{intent.attempts} of {MAX_ATTEMPTS}")
    if intent.status in ("pending", "leased"):
        row("next attempt", _when(intent.next_attempt_at))
    if intent.status == "leased":
        row("leased to", intent.lease_owner or "")
        row("lease ends", _when(intent.lease_expires_at))
    if intent.delivered_at is not None:
        row("delivered", _when(intent.delivered_at))
    if intent.last_error:
        row("last error", intent.last_error)
    if intent.closed_reason:
        row("closed", intent.closed_reason)
    row("schedule revision", str(intent.schedule_revision))
    row("created", _when(intent.created_at))
    row("updated", _when(intent.updated_at))
    return grid


@reminders_app.command("ls")
def ls_command(
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
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """List the reminders of tasks in the acting actor's lists, earliest first.

    With --json: a list of reminders.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        wanted = _status(status)
        most = _limit(limit)
        if isinstance(s, Remote):
            route = (
                "/api/reminders"
                if task is None
                else f"/api/tasks/{path_part(task.strip())}/reminders"
            )
            found = [values.intent(d) for d in s.get(route, status=wanted, limit=most)]
        else:
            local = s

            def read() -> list[Intent]:
                task_id: UUID | None = None
                if task is not None:
                    task_id = local.tasks.get(local.actor, task.strip()).task.id
                return _outbox(local).list(local.actor, status=wanted, task=task_id, limit=most)

            found = s.atomic(read, write=False)
    if json_output:
        emit_json([intent.to_json() for intent in found])
        return
    if not found:
        console.print(Text("no reminders", style="dim"))
        return
    console.print(reminders_table(found))


@reminders_app.command("show")
def show_command(
    reminder: ReminderArgument,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Show one reminder: its task, recipient, status, attempts and last error."""
    with local_or_remote(database, server, json_output, actor=actor) as s:
        if isinstance(s, Remote):
            found = values.intent(s.get(_reminder_route(reminder)))
        else:
            found = _outbox(s).get(s.actor, reminder.strip())
    if json_output:
        emit_json(found.to_json())
        return
    console.print(reminder_grid(found), soft_wrap=True)


@reminders_app.command("retry")
def retry_command(
    reminder: ReminderArgument,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Give a dead (or waiting) reminder a fresh round of attempts, due now.

    Only its recipient or an editor of the list may. A delivered, closed or
    cancelled reminder is refused. With --json: the reminder.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        if isinstance(s, Remote):
            found = values.intent(s.post(_reminder_route(reminder, "retry")))
        else:
            found = _outbox(s).requeue(s.actor, reminder.strip())
        if json_output:
            emit_json(found.to_json())
            return
        console.print(
            Text(f"reminder {found.id} is pending again: ").append(
                f"{found.attempts} of {MAX_ATTEMPTS} attempts used, next attempt now"
            ),
            soft_wrap=True,
        )
        s.local_note()
