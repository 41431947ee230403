"""``kalends actor``: who exists. Local mode: anyone running the CLI may add actors."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli.notify import notify_app
from kalends.cli.output import console, emit_json
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    DatabaseOption,
    JsonOption,
    session,
)
from kalends.tasks import Actor

actor_app = typer.Typer(
    help=f"Actors: the people lists are shared with. {LOCAL_MODE_HELP} {EXIT_CODES_HELP}",
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
    json_output: JsonOption = False,
) -> None:
    """Create an actor. Local mode: this needs no --as, since nobody logs in yet."""
    with session(database, json_output, anonymous=True) as s:
        actor = s.directory.add_actor(handle, name, email)
    if json_output:
        emit_json(actor.to_json())
        return
    console.print(Text(f"added actor {actor.handle} ({actor.display_name})"), soft_wrap=True)
    console.print(
        Text(f"local mode: act as them with --as {actor.handle} or KALENDS_ACTOR", style="dim"),
        soft_wrap=True,
    )


@actor_app.command("ls")
def ls_command(database: DatabaseOption = None, json_output: JsonOption = False) -> None:
    """List every actor."""
    with session(database, json_output, anonymous=True) as s:
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
