"""``kalends actor``: who exists, and who holds the run privilege. Local mode: anyone
running the CLI may add actors and grant or revoke the privilege (they own the database
file); in server mode only the server's owner account may (``POST /api/actors``, ``POST``
and ``DELETE /api/actors/{actor}/grants/run``), and anyone logged in may list them."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.auth.grants import Privilege
from kalends.cli.commands import session_command
from kalends.cli.notify import notify_app
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    Session,
    group_help,
)
from kalends.tasks import Actor

actor_app = typer.Typer(
    help=group_help(
        "Actors: the people lists and workspaces are shared with.",
        "On a server only its owner account adds actors. Creating a schedule or changing "
        "what it runs (command, env, cwd) needs the run privilege: `actor grant run ACTOR` "
        "gives it (on a server, its owner account holds it and alone grants it; locally "
        "whoever runs kalends may grant it, themselves included). Whoever holds it can run "
        "anything the passage user can.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)
actor_app.add_typer(notify_app, name="notify")


@session_command(actor_app, "add", anonymous=True)
def add_command(
    s: Session | Remote,
    handle: Annotated[
        str, typer.Argument(help="Unique handle: lowercase letters, digits, '.', '_' or '-'.")
    ],
    name: Annotated[str, typer.Option("--name", help="Display name.")],
    email: Annotated[str | None, typer.Option("--email", help="E-mail address.")] = None,
) -> None:
    """Create an actor. Local mode: this needs no --as, since nobody logs in yet.

    Server mode: the server's owner account only; the new actor gets an account with
    `kalends login-link --as HANDLE` on the server's machine.
    """
    actor = s.directory.add_actor(handle, name, email)
    on_server = s.server is not None
    if s.json_output:
        emit_json(actor.to_json())
        return
    console.print(Text(f"added actor {actor.handle} ({actor.display_name})"), soft_wrap=True)
    note = (
        f"server mode: `kalends login-link --as {actor.handle}` on the server's machine "
        "gives them an account"
        if on_server
        else f"local mode: act as them with --as {actor.handle} or KALENDS_ACTOR"
    )
    console.print(Text(note, style="dim"), soft_wrap=True)


@session_command(actor_app, "ls", anonymous=True)
def ls_command(s: Session | Remote) -> None:
    """List every actor, and whether they hold the run privilege ("may run")."""
    listed = s.grants.actors()
    if s.json_output:
        emit_json([a.to_json() for a in listed])
        return
    may_run = ["yes" if a.may_run else "" for a in listed]
    console.print(actors_table([a.actor for a in listed], may_run=may_run))


PrivilegeArgument = Annotated[
    Privilege, typer.Argument(help="The server privilege: run (defining what passages run).")
]
GranteeArgument = Annotated[str, typer.Argument(help="The actor's handle or ID.")]


@session_command(actor_app, "grant", anonymous=True)
def grant_command(
    s: Session | Remote, privilege: PrivilegeArgument, actor: GranteeArgument
) -> None:
    """Grant a server privilege to an actor.

    `actor grant run ACTOR` lets them create schedules and change what they run
    (command, env, cwd).
    Whoever holds run can run anything the passage user can. Local mode: whoever runs
    kalends may grant it (they own the database file), to themselves too. Server mode:
    the server's owner account only; it holds the privilege itself without a grant.
    """
    done = s.grants.grant(actor.strip(), privilege)
    if s.json_output:
        emit_json(done.to_json())
        return
    console.print(
        Text(
            f"granted {privilege.value} to {done.actor.handle}: they may create schedules "
            "and change what they run",
        ),
        soft_wrap=True,
    )


@session_command(actor_app, "revoke", anonymous=True)
def revoke_command(
    s: Session | Remote, privilege: PrivilegeArgument, actor: GranteeArgument
) -> None:
    """Revoke a server privilege granted before; revoking one not held changes nothing.

    Their schedules keep running as defined; they may still edit objective, notes,
    timing, bounds and conditions. The server's owner account keeps run whatever is
    revoked. Who may revoke: as for `actor grant`.
    """
    done = s.grants.revoke(actor.strip(), privilege)
    if s.json_output:
        emit_json(done.to_json())
        return
    line = f"revoked {privilege.value} from {done.actor.handle}"
    if done.may_run:
        line += "; they still hold it as the server's owner account"
    console.print(Text(line), soft_wrap=True)


def actors_table(
    actors: list[Actor], roles: list[str] | None = None, *, may_run: list[str] | None = None
) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("handle", no_wrap=True)
    table.add_column("name")
    table.add_column("e-mail")
    if roles is not None:
        table.add_column("role", no_wrap=True)
    if may_run is not None:
        table.add_column("may run", no_wrap=True)
    for i, actor in enumerate(actors):
        row = [actor.handle, actor.display_name, actor.email or ""]
        row += [roles[i]] if roles is not None else []
        row += [may_run[i]] if may_run is not None else []
        table.add_row(*(Text(cell) for cell in row))
    return table
