"""``kalends feed create|ls|revoke``: secret calendar feed addresses (iCalendar).

A feed's address holds its secret: it is printed once, and only the secret's hash is
stored. Any calendar app that subscribes to it shows the acting actor's open tasks with
a due value and the coming passages of their workspaces' schedules, until it is revoked.
Local mode gives a new feed an address under ``--base-url``, else under the base URL the
last ``kalends serve`` on the database recorded; a server gives its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli.commands import session_command
from kalends.cli.feed_client import feeds_of
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import EXIT_CODES_HELP, LOCAL_MODE_HELP, Session, group_help
from kalends.feeds import check_feed_id
from kalends.missions.runtime.passages import parse_instant

__all__ = ["feed_app"]

feed_app = typer.Typer(
    help=group_help(
        "Calendar feeds: secret iCalendar addresses of your tasks and passages.",
        "A feed shows your open tasks that have a due date or time (with your reminders "
        "as alarms) and the passages of the next 30 days of the schedules in your "
        "workspaces. Its address holds its secret: it is shown once, and anyone who has "
        "it can read the feed until you revoke it.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

FeedIdArgument = Annotated[
    str, typer.Argument(metavar="ID", help="The feed's ID (`kalends feed ls`).")
]

# A feed as JSON (``FeedInfo.to_json()``, as a server answers it too).
FeedJson = Mapping[str, Any]


def _when(value: object, empty: str = "-") -> str:
    found = parse_instant(value)
    return empty if found is None else found.strftime("%Y-%m-%d %H:%M UTC")


def _day(value: object, empty: str = "-") -> str:
    found = parse_instant(value)
    return empty if found is None else found.strftime("%Y-%m-%d")


@session_command(feed_app, "create")
def create_command(
    s: Session | Remote,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            envvar="KALENDS_BASE_URL",
            help="Local mode: the server's public URL for the address (default: the one "
            "the last `kalends serve` on this database recorded). A server gives its own.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Create a calendar feed of the acting actor and print its address, this once.

    Subscribe to the address in a calendar app (Google Calendar: Other calendars, From
    URL; Apple Calendar: New Calendar Subscription). With --json: {"feed": {...},
    "url", "secret"}.
    """
    made = feeds_of(s).create(s.actor, base_url=base_url)
    if s.json_output:
        emit_json(made.to_json())
        return
    console.print(Text(f"created a calendar feed for {s.actor}"), soft_wrap=True)
    console.print(Text(f"id {made.feed.id}", style="dim"), soft_wrap=True)
    # Plain, never wrapped: people copy it.
    typer.echo(made.url)
    console.print(
        Text(
            "the address is shown this once; anyone who has it can read the feed until "
            "`kalends feed revoke` revokes it",
            style="dim",
        ),
        soft_wrap=True,
    )
    s.local_note()


@session_command(feed_app, "ls")
def ls_command(s: Session | Remote) -> None:
    """List the acting actor's calendar feeds, newest first, revoked ones included."""
    found: list[FeedJson] = [f.to_json() for f in feeds_of(s).list(s.actor)]
    if s.json_output:
        emit_json(found)
        return
    if not found:
        console.print(Text(f"{s.actor} has no calendar feed", style="dim"), soft_wrap=True)
        return
    # Narrow enough for 80 columns; the times of day are in --json.
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    for column in ("status", "created", "last used"):
        table.add_column(column, no_wrap=True)
    table.add_column("id", no_wrap=True, min_width=36)
    for f in found:
        cells = (
            "active" if f["active"] else "revoked",
            _day(f["createdAt"]),
            _day(f["lastUsedAt"]),
            str(f["id"]),
        )
        table.add_row(*(Text(c) for c in cells))
    console.print(table)


@session_command(feed_app, "revoke")
def revoke_command(s: Session | Remote, feed_id: FeedIdArgument) -> None:
    """Revoke one of the acting actor's calendar feeds: its address answers 404 from now.

    Revoking a revoked feed changes nothing.
    """
    parsed = check_feed_id(feed_id)
    revoked: FeedJson = feeds_of(s).revoke(s.actor, parsed).to_json()
    if s.json_output:
        emit_json(revoked)
        return
    console.print(
        Text(f"revoked calendar feed {revoked['id']} (revoked {_when(revoked['revokedAt'])})"),
        soft_wrap=True,
    )
    s.local_note()
