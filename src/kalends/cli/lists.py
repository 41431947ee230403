"""``kalends list``: lists, their members and roles, and their sections."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli.actors import actors_table
from kalends.cli.commands import session_command
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    ListArgument,
    Reporter,
    Session,
    group_help,
    optional_revision,
)
from kalends.errors import InvalidInput
from kalends.tasks import Role, TaskList

list_app = typer.Typer(
    help=group_help(
        "Lists, who may use them, and their sections.",
        "Each list has its members: an owner, editors and viewers; roles are checked on each list.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)
section_app = typer.Typer(help="Sections of a list.", no_args_is_help=True)
list_app.add_typer(section_app, name="section")

ListExpectOption = Annotated[
    str | None,
    typer.Option(
        "--expect",
        metavar="REV",
        help="Refuse unless the list is still at this revision (`kalends list ls` shows it).",
        show_default=False,
    ),
]


@session_command(list_app, "add")
def add_command(
    s: Session | Remote, name: Annotated[str, typer.Argument(help="The new list's name.")]
) -> None:
    """Create a list owned by the acting actor."""
    created = s.directory.create_list(s.actor, name)
    _report_list(s, created, "added list")


@session_command(list_app, "ls")
def ls_command(
    s: Session | Remote,
    active: Annotated[bool, typer.Option("--active", help="Leave out archived lists.")] = False,
) -> None:
    """List the lists the acting actor is a member of, with their role."""
    found = s.directory.lists(s.actor, include_archived=not active)
    if s.json_output:
        emit_json([item.to_json() for item in found])
        return
    if not found:
        console.print(Text(f"{s.actor} is a member of no list yet", style="dim"))
        return
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("name", "role", "status", "revision", "id"):
        table.add_column(column, no_wrap=column != "name")
    for item in found:
        role = item.role.value if item.role else ""
        cells = (item.name, role, item.status.value, str(item.revision), str(item.id))
        table.add_row(*(Text(c) for c in cells))
    console.print(table)


@session_command(list_app, "share")
def share_command(
    s: Session | Remote,
    list_ref: ListArgument,
    member: Annotated[str, typer.Argument(metavar="MEMBER", help="Actor handle or ID.")],
    role: Annotated[
        str | None,
        typer.Option("--role", help="owner, editor or viewer.", show_default=False),
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Take the member off the list.")] = False,
    expect: ListExpectOption = None,
) -> None:
    """Give MEMBER a role on the list, or remove them. Owners only; a list keeps an owner."""
    if remove == (role is not None):
        raise InvalidInput("role: give --role owner|editor|viewer, or --remove", field="role")
    revision = optional_revision(expect)
    updated = s.directory.share(s.actor, list_ref, member, None if remove else role, revision)
    what = f"removed {member} from" if remove else f"{member} is {role} on"
    _report_list(s, updated, what)


@session_command(list_app, "archive")
def archive_command(
    s: Session | Remote,
    list_ref: ListArgument,
    undo: Annotated[bool, typer.Option("--undo", help="Make the list active again.")] = False,
    expect: ListExpectOption = None,
) -> None:
    """Archive a list: it can still be read, not changed. Owners only."""
    revision = optional_revision(expect)
    updated = s.directory.archive(s.actor, list_ref, archived=not undo, expected_revision=revision)
    _report_list(s, updated, "reactivated" if undo else "archived")


@session_command(list_app, "members")
def members_command(s: Session | Remote, list_ref: ListArgument) -> None:
    """List the members of a list and their roles."""
    members = s.directory.members(s.actor, list_ref)
    if s.json_output:
        emit_json([{**a.to_json(), "role": r.value} for a, r in members])
        return
    console.print(actors_table([a for a, _ in members], [r.value for _, r in members]))


@session_command(section_app, "add")
def section_add_command(
    s: Session | Remote,
    list_ref: ListArgument,
    name: Annotated[str, typer.Argument(help="The section's name, unique in the list.")],
) -> None:
    """Append a section to a list. Editors and owners."""
    section = s.directory.add_section(s.actor, list_ref, name)
    if s.json_output:
        emit_json(section.to_json())
        return
    console.print(Text(f"added section {section.name!r}"), soft_wrap=True)
    s.local_note()


@session_command(section_app, "ls")
def section_ls_command(s: Session | Remote, list_ref: ListArgument) -> None:
    """List the sections of a list, in order."""
    found = s.directory.sections(s.actor, list_ref)
    if s.json_output:
        emit_json([item.to_json() for item in found])
        return
    for item in found:
        console.print(Text(item.name), soft_wrap=True)
    if not found:
        console.print(Text("no sections", style="dim"))


def _report_list(s: Reporter, item: TaskList, what: str) -> None:
    if s.json_output:
        emit_json(item.to_json())
        return
    role = f", you are {item.role.value}" if isinstance(item.role, Role) else ""
    console.print(
        Text(f"{what} {item.name} (revision {item.revision}, {item.status.value}{role})"),
        soft_wrap=True,
    )
    s.local_note()
