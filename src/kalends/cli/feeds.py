"""``kalends feed create|ls|revoke``: secret calendar feed addresses (iCalendar).

A feed's address holds its secret: it is printed once, and only the secret's hash is
stored. Any calendar app that subscribes to it shows the acting actor's open tasks with
a due value and the coming passages of their workspaces' schedules, until it is revoked.
Local mode gives a new feed an address under ``--base-url``, else under the base URL the
last ``kalends serve`` on the database recorded; a server gives its own.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kalends.cli.commands import session_command
from kalends.cli.credential_commands import (
    Column,
    CredentialJson,
    day,
    print_created,
    print_credentials,
    print_revoked,
)
from kalends.cli.feed_client import feeds_of
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import EXIT_CODES_HELP, LOCAL_MODE_HELP, Session, group_help
from kalends.feeds import check_feed_id

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

# A feed's columns besides its ID: it has no name and never expires.
_COLUMNS: tuple[Column, ...] = (
    ("status", lambda f: "active" if f["active"] else "revoked"),
    ("created", lambda f: day(f["createdAt"])),
    ("last used", lambda f: day(f["lastUsedAt"])),
)


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
    print_created(
        s,
        made.to_json(),
        headline=f"created a calendar feed for {s.actor}",
        credential_id=made.feed.id,
        secret=made.url,
        note="the address is shown this once; anyone who has it can read the feed until "
        "`kalends feed revoke` revokes it",
    )


@session_command(feed_app, "ls")
def ls_command(s: Session | Remote) -> None:
    """List the acting actor's calendar feeds, newest first, revoked ones included."""
    found: list[CredentialJson] = [f.to_json() for f in feeds_of(s).list(s.actor)]
    print_credentials(
        s, found, nothing=f"{s.actor} has no calendar feed", columns=_COLUMNS, named=False
    )


@session_command(feed_app, "revoke")
def revoke_command(s: Session | Remote, feed_id: FeedIdArgument) -> None:
    """Revoke one of the acting actor's calendar feeds: its address answers 404 from now.

    Revoking a revoked feed changes nothing.
    """
    parsed = check_feed_id(feed_id)
    revoked: CredentialJson = feeds_of(s).revoke(s.actor, parsed).to_json()
    print_revoked(s, revoked, f"revoked calendar feed {revoked['id']}", with_id=False)
