"""``kalends workspace``: registered directories where schedules run, and who may use them.

The actor who registers a directory owns it. Owners manage members and remove
the workspace; editors create and control schedules; viewers read them.
"""

from __future__ import annotations

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
from kalends.missions import Member, Workspace

__all__ = ["WorkspaceArgument", "workspace_app"]

workspace_app = typer.Typer(
    help=group_help(
        "Workspaces: the directories where schedules run, and their members.",
        "A member is an owner (manages the workspace and its members), an editor (creates "
        "and controls schedules) or a viewer (reads); roles are checked in each workspace.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)
member_app = typer.Typer(
    help="Who may use a workspace: owners manage, editors control schedules, viewers read.",
    no_args_is_help=True,
)
workspace_app.add_typer(member_app, name="member")

WorkspaceArgument = Annotated[
    str, typer.Argument(metavar="WORKSPACE", help="Workspace name or ID.")
]
MemberArgument = Annotated[str, typer.Argument(metavar="ACTOR", help="Actor handle or ID.")]


@session_command(workspace_app, "add")
def add_command(
    s: Session | Remote,
    path: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="An existing directory (in server mode: of the server's machine; a relative "
            "path is taken from the current directory).",
        ),
    ],
    name: Annotated[
        str | None,
        typer.Option(
            "--name", help="Display name (default: the directory's name).", show_default=False
        ),
    ] = None,
) -> None:
    """Register a directory as a workspace; the acting actor becomes its owner.

    The path is stored resolved (absolute, symbolic links followed) and registered once.
    On a server only its owner account may register directories.
    """
    added = s.workspaces.add(s.actor, path, name)
    if s.json_output:
        emit_json(added.to_json())
        return
    console.print(
        Text(f"added workspace {added.name} at {added.path}, you are owner"), soft_wrap=True
    )
    console.print(Text(f"id {added.id}", style="dim"), soft_wrap=True)
    s.local_note()


@session_command(workspace_app, "ls")
def ls_command(s: Session | Remote) -> None:
    """List the workspaces the acting actor is a member of, with their role."""
    found = s.workspaces.list(s.actor)
    if s.json_output:
        emit_json([w.to_json() for w in found])
        return
    if not found:
        console.print(Text(f"{s.actor} is a member of no workspace yet", style="dim"))
        return
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("name", "role", "schedules", "path", "id"):
        table.add_column(column, no_wrap=column not in {"name", "path"}, overflow="fold")
    for w in found:
        cells = (w.name, w.role.value, str(w.schedules), w.path, str(w.id))
        table.add_row(*(Text(c) for c in cells))
    console.print(table)


@session_command(workspace_app, "show")
def show_command(s: Session | Remote, workspace: WorkspaceArgument) -> None:
    """Show a workspace: its path, your role, its live schedules and its members.

    With --json: the workspace and "members".
    """
    workspaces, acting = s.workspaces, s.actor

    def read() -> tuple[Workspace, list[Member]]:
        return workspaces.get(acting, workspace), workspaces.members(acting, workspace)

    found, members = s.read_together(read)
    if s.json_output:
        emit_json({**found.to_json(), "members": [m.to_json() for m in members]})
        return
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    rows = (
        ("workspace", found.name),
        ("id", str(found.id)),
        ("path", found.path),
        ("your role", found.role.value),
        ("schedules", f"{found.schedules} (deleted ones not counted)"),
        ("created", found.created_at.isoformat()),
    )
    for label, value in rows:
        grid.add_row(label, Text(value))
    console.print(grid)
    console.print(_members_table(members))


@session_command(workspace_app, "rm")
def rm_command(s: Session | Remote, workspace: WorkspaceArgument) -> None:
    """Unregister a workspace (owners only); refused while it holds schedules.

    The directory itself is left alone.
    """
    removed = s.workspaces.get(s.actor, workspace)
    s.workspaces.remove(s.actor, removed.id)
    if s.json_output:
        emit_json({"removed": removed.to_json()})
        return
    console.print(
        Text(f"removed workspace {removed.name} ({removed.path} is left as it was)"),
        soft_wrap=True,
    )
    s.local_note()


@session_command(member_app, "set")
def member_set_command(
    s: Session | Remote,
    workspace: WorkspaceArgument,
    member: MemberArgument,
    role: Annotated[
        str,
        typer.Option("--role", metavar="ROLE", help="owner, editor or viewer.", show_default=False),
    ],
) -> None:
    """Give ACTOR a role on the workspace (owners only); a workspace keeps an owner.

    In server mode a handle is found among the members of your workspaces and lists;
    someone new is named by actor ID.
    """
    made = s.workspaces.set_member(s.actor, workspace, member, role.strip().lower())
    if s.json_output:
        emit_json(made.to_json())
        return
    console.print(Text(f"{made.handle} is {made.role.value} on {workspace}"), soft_wrap=True)
    s.local_note()


@session_command(member_app, "rm")
def member_rm_command(
    s: Session | Remote, workspace: WorkspaceArgument, member: MemberArgument
) -> None:
    """Take ACTOR off the workspace (owners only); the last owner stays."""
    s.workspaces.remove_member(s.actor, workspace, member)
    if s.json_output:
        emit_json({"removed": {"workspace": workspace, "member": member}})
        return
    console.print(Text(f"removed {member} from {workspace}"), soft_wrap=True)
    s.local_note()


@session_command(member_app, "ls")
def member_ls_command(s: Session | Remote, workspace: WorkspaceArgument) -> None:
    """List a workspace's members and their roles."""
    members = s.workspaces.members(s.actor, workspace)
    if s.json_output:
        emit_json([m.to_json() for m in members])
        return
    console.print(_members_table(members))


def _members_table(members: list[Member]) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("member", "role", "actor id"):
        table.add_column(column, no_wrap=True)
    for m in members:
        table.add_row(Text(m.handle), Text(m.role.value), Text(str(m.actor_id)))
    return table
