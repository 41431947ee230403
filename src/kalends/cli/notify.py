"""``kalends actor notify``: an actor's notification settings, where each channel's reminders go.

Destinations are Apprise URLs: ``mailto://``/``mailtos://`` on the email channel,
any other Apprise service (``ntfy://``, ``gotify://``, ``pover://``, ``json://``, …)
on the push channel. The URLs hold passwords and tokens, so no command prints
them back: listings show Apprise's redacted form. ``--url -`` reads the URLs from
standard input, one a line, which keeps them out of the shell history.

In server mode (``--server URL``) the same commands go to ``/api/actors/{actor}/
destinations``: the token's owner reads and changes their own settings only, as in
local mode, and the server answers the same redacted JSON.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich import box
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
from kalends.reminders.destinations import MAX_DESTINATIONS, Destination
from kalends.reminders.transports import redacted_url

notify_app = typer.Typer(
    help=group_help(
        "Where an actor's reminders go: Apprise URLs per channel.",
        "Email: mailto:// or mailtos://; push: ntfy://, gotify://, pover://, json:// and "
        f"more; at most {MAX_DESTINATIONS} per channel. URLs are never printed back, only "
        "their redacted form. Actors see and change only their own settings.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

TargetArgument = Annotated[
    str, typer.Argument(metavar="ACTOR", help="Whose settings: an actor handle or ID.")
]
ChannelOption = Annotated[
    str,
    typer.Option("--channel", metavar="CHANNEL", help="email or push.", show_default=False),
]
UrlOption = Annotated[
    str,
    typer.Option(
        "--url",
        metavar="URL",
        help="An Apprise URL; '-' reads it from standard input.",
        show_default=False,
    ),
]
STDIN = "-"


@session_command(notify_app, "set")
def set_command(
    s: Session | Remote,
    target: TargetArgument,
    channel: ChannelOption,
    url: Annotated[
        list[str] | None,
        typer.Option(
            "--url",
            metavar="URL",
            help="An Apprise URL, in delivery order; repeat for several. '-' reads them "
            "from standard input, one a line.",
            show_default=False,
        ),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove every destination of the channel.")
    ] = False,
) -> None:
    """Replace the channel's destinations by the --url list (or remove them all with --clear)."""
    given = url or []
    if clear == bool(given):
        raise InvalidInput(
            "url: give --url URL (repeat for several), or --clear; not both", field="url"
        )
    urls = _read_urls(given)
    written = s.destinations.set(s.actor, target, channel, urls)
    if s.json_output:
        emit_json([d.to_json() for d in written])
        return
    if written:
        console.print(_table(written))
    what = f"{len(written)} {channel} destination(s)" if written else f"no {channel} destination"
    console.print(Text(f"{target} now has {what}"), soft_wrap=True)
    s.local_note()


@session_command(notify_app, "add")
def add_command(
    s: Session | Remote, target: TargetArgument, channel: ChannelOption, url: UrlOption
) -> None:
    """Append one destination to the channel."""
    text = _read_one(url)
    added = s.destinations.add(s.actor, target, channel, text)
    if s.json_output:
        emit_json(added.to_json())
        return
    console.print(
        Text(f"added {channel} destination {added.position}: {added.display}"),
        soft_wrap=True,
    )
    s.local_note()


@session_command(notify_app, "rm")
def rm_command(
    s: Session | Remote, target: TargetArgument, channel: ChannelOption, url: UrlOption
) -> None:
    """Remove one destination from the channel, given by its full URL."""
    text = _read_one(url)
    s.destinations.remove(s.actor, target, channel, text)
    display = redacted_url(text)
    if s.json_output:
        emit_json({"removed": {"channel": channel, "display": display}})
        return
    console.print(Text(f"removed {channel} destination {display}"), soft_wrap=True)
    s.local_note()


@session_command(notify_app, "ls")
def ls_command(
    s: Session | Remote,
    target: TargetArgument,
    channel: Annotated[
        str | None,
        typer.Option(
            "--channel",
            metavar="CHANNEL",
            help="Only this channel: email or push.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List the destinations, by channel and delivery order, in redacted form."""
    found = s.destinations.list(s.actor, target, channel)
    if s.json_output:
        emit_json([d.to_json() for d in found])
        return
    if found:
        console.print(_table(found))
    else:
        where = f"{channel} " if channel else ""
        console.print(Text(f"{target} has no {where}destination yet", style="dim"))
    s.local_note()


def _table(found: list[Destination]) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("channel", "#", "destination (redacted)", "added"):
        table.add_column(column, no_wrap=column != "destination (redacted)", overflow="fold")
    for d in found:
        shown = d.to_json()
        cells = (shown["channel"], shown["position"], shown["display"], shown["created_at"])
        table.add_row(*(Text(str(c)) for c in cells))
    return table


def _read_urls(given: list[str]) -> list[str]:
    """The URLs, with each '-' replaced by the non-blank lines of standard input."""
    urls: list[str] = []
    for item in given:
        urls.extend(_stdin_lines() if item == STDIN else [item])
    return urls


def _read_one(url: str) -> str:
    if url != STDIN:
        return url
    lines = _stdin_lines()
    if len(lines) != 1:
        raise InvalidInput(
            f"url: expected one URL on standard input, got {len(lines)}", field="url"
        )
    return lines[0]


def _stdin_lines() -> list[str]:
    return [line.strip() for line in sys.stdin.read().splitlines() if line.strip()]
