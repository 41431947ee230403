"""``kalends actor``: who exists. Local mode: anyone running the CLI may add actors; in
server mode only the server's owner account may (``POST /api/actors``), and anyone
logged in may list them."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli import remote_values as values
from kalends.cli.notify import notify_app
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote, ServerOption, local_or_remote
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    DatabaseOption,
    JsonOption,
)
from kalends.tasks import Actor

actor_app = typer.Typer(
    help=(
        f"Actors: the people lists are shared with. {LOCAL_MODE_HELP} {SERVER_MODE_HELP} "
        "On a server only its owner account adds actors. "
        f"{EXIT_CODES_HELP}"
    ),
    no_args_is_help=True,
)
actor_app.add_typer(notify_app, name="notify")


@actor_app.command("add")
def add_command(
    handle: Annotated[
        str, typer.Argument(help="Unique handle: lowercase letters, digits, '.', '_' or '-'.")
    ],
    name: Annotated[str, typer.Option("--name", help="Display name.")],
    email: Annotated[str | None, typer.Option("--email", help="E-mail address.")] = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Create an actor. Local mode: this needs no --as, since nobody logs in yet.

    Server mode: the server's owner account only; the new actor gets an account with
    `kalends login-link --as HANDLE` on the server's machine.
    """
    with local_or_remote(database, server, json_output, anonymous=True) as s:
        if isinstance(s, Remote):
            body = {"handle": handle, "display_name": name, "email": email}
            actor = values.actor(s.post("/api/actors", body))
        else:
            actor = s.directory.add_actor(handle, name, email)
    if json_output:
        emit_json(actor.to_json())
        return
    console.print(Text(f"added actor {actor.handle} ({actor.display_name})"), soft_wrap=True)
    note = (
        f"server mode: `kalends login-link --as {actor.handle}` on the server's machine "
        "gives them an account"
        if isinstance(s, Remote)
        else f"local mode: act as them with --as {actor.handle} or KALENDS_ACTOR"
    )
    console.print(Text(note, style="dim"), soft_wrap=True)


@actor_app.command("ls")
def ls_command(
    database: DatabaseOption = None, server: ServerOption = None, json_output: JsonOption = False
) -> None:
    """List every actor."""
    with local_or_remote(database, server, json_output, anonymous=True) as s:
        if isinstance(s, Remote):
            actors = [values.actor(d) for d in s.get("/api/actors")]
        else:
            actors = s.directory.actors()
    if json_output:
        emit_json([a.to_json() for a in actors])
        return
    console.print(actors_table(actors))


def actors_table(actors: list[Actor], roles: list[str] | None = None) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("handle", no_wrap=True)
    table.add_column("name")
    table.add_column("e-mail")
    if roles is not None:
        table.add_column("role", no_wrap=True)
    for i, actor in enumerate(actors):
        row = [actor.handle, actor.display_name, actor.email or ""]
        row += [roles[i]] if roles is not None else []
        table.add_row(*(Text(cell) for cell in row))
    return table
