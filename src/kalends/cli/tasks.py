"""``kalends task``: tasks and checklists, their schedules, series, comments, attachments
and history.

Every write takes ``--expect REV``, the revision the user last saw, and is one
transaction: a task changed meanwhile is refused, never overwritten.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import Annotated
from uuid import UUID

import typer
from rich.text import Text

from kalends.civil import parse_date
from kalends.cli.commands import session_command
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.series import repeat_command, series_app, series_of, skip_command
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    ExpectOption,
    ListArgument,
    Session,
    TaskArgument,
    expected_revision,
    group_help,
)
from kalends.cli.task_schedule import schedule_command
from kalends.cli.task_views import (
    checklist_tree,
    history_lines,
    report_task,
    task_detail,
    task_series_json,
)
from kalends.errors import InvalidInput
from kalends.identity import ActorRef
from kalends.tasks import Task, TaskDetail, TaskList, TreeNode
from kalends.tasks.media import check_media_type
from kalends.tasks.series import SeriesView
from kalends.tasks.values import SHOWN_STATUSES

task_app = typer.Typer(
    help=group_help(
        "Tasks and their checklists.", LOCAL_MODE_HELP, SERVER_MODE_HELP, EXIT_CODES_HELP
    ),
    no_args_is_help=True,
)

BeforeOption = Annotated[
    str | None, typer.Option("--before", metavar="REF", help="Place before this sibling.")
]
AfterOption = Annotated[
    str | None, typer.Option("--after", metavar="REF", help="Place after this sibling.")
]
SectionOption = Annotated[
    str | None, typer.Option("--section", metavar="NAME", help="Section of the list.")
]


@session_command(task_app, "add")
def add_command(
    s: Session | Remote,
    list_ref: ListArgument,
    title: Annotated[str, typer.Argument(help="1-500 characters.")],
    parent: Annotated[
        str | None, typer.Option("--parent", metavar="REF", help="Add as a checklist item.")
    ] = None,
    section: SectionOption = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Tag; repeatable.")] = None,
    description: Annotated[str, typer.Option("--description", help="Free text.")] = "",
    before: BeforeOption = None,
    after: AfterOption = None,
) -> None:
    """Add an open task at the end of its siblings, or before/after one. Editors and owners."""
    task = s.tasks.create(
        s.actor,
        list_ref,
        title,
        description=description,
        parent=parent,
        section=section,
        tags=tag or [],
        before=before,
        after=after,
    )
    report_task(s, task, "added")


@session_command(task_app, "ls")
def ls_command(
    s: Session | Remote,
    list_ref: ListArgument,
    section: SectionOption = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only tasks with this tag.")] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="open|completed|skipped",
            help="Only these (a task settled by a skip is skipped, not completed).",
        ),
    ] = None,
    due_from: Annotated[
        str | None, typer.Option("--due-from", metavar="DATE", help="Due on or after.")
    ] = None,
    due_to: Annotated[
        str | None, typer.Option("--due-to", metavar="DATE", help="Due on or before.")
    ] = None,
    planned: Annotated[
        str | None, typer.Option("--planned", metavar="DATE", help="Planned for this day.")
    ] = None,
    trashed: Annotated[bool, typer.Option("--trashed", help="Show the trash too.")] = False,
) -> None:
    """Print a list's checklist as a tree; filters keep matching tasks and their ancestors.

    A timed due value counts on its local date. With --json: the nested trees.
    """
    if status is not None and status not in SHOWN_STATUSES:
        raise InvalidInput(f"status: open, completed or skipped, got {status!r}", field="status")
    day_from = parse_date(due_from, "due_from") if due_from is not None else None
    day_to = parse_date(due_to, "due_to") if due_to is not None else None
    day = parse_date(planned, "planned") if planned is not None else None

    def read() -> tuple[list[TreeNode], dict[UUID, str], TaskList | None]:
        nodes = s.tasks.tree(
            s.actor,
            list_ref,
            section=section,
            tag=tag,
            status=status,
            due_from=day_from,
            due_to=day_to,
            planned=day,
            include_trashed=trashed,
        )
        if s.json_output:
            return nodes, {}, None
        names = {x.id: x.name for x in s.directory.sections(s.actor, list_ref)}
        return nodes, names, s.directory.get_list(s.actor, list_ref)

    nodes, sections, task_list = s.read_together(read)
    if task_list is None:
        emit_json([n.to_json() for n in nodes])
        return
    console.print(checklist_tree(task_list, nodes, sections))


@session_command(task_app, "show")
def show_command(s: Session | Remote, ref: TaskArgument) -> None:
    """Show a task: its revision, schedule, comments, attachments and series.

    Pass the revision to --expect when you change the task. A task of a recurring series
    shows the series' rule, its status, this task's occurrence and the next date.
    """

    def read() -> tuple[TaskDetail, SeriesView | None]:
        detail = s.tasks.get(s.actor, ref)
        return detail, series_of(s, detail.task)

    detail, series = s.read_together(read)
    if s.json_output:
        occurrence = detail.task.occurrence
        emit_json(
            {
                **detail.to_json(),
                "series": task_series_json(series, occurrence) if series else None,
            }
        )
        return
    handles = {a.id: a.handle for a in s.directory.actors()}
    parent = detail.task.parent_id
    parent_ref = s.tasks.get(s.actor, parent).task.ref if parent else None
    console.print(task_detail(detail, handles, parent_ref, series))


@session_command(task_app, "edit")
def edit_command(
    s: Session | Remote,
    ref: TaskArgument,
    expect: ExpectOption = None,
    title: Annotated[str | None, typer.Option("--title", help="New title.")] = None,
    description: Annotated[
        str | None, typer.Option("--description", help="New description.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Add a tag; repeatable.")] = None,
    untag: Annotated[
        list[str] | None, typer.Option("--untag", help="Remove a tag; repeatable.")
    ] = None,
) -> None:
    """Change a task's title, description or tags, all in one transaction."""
    revision = expected_revision(expect)
    if title is None and description is None and not tag and not untag:
        raise InvalidInput(
            "edit: say what to change: --title, --description, --tag or --untag", field="edit"
        )
    task = s.changes.edit(
        s.actor,
        ref,
        revision,
        title=title,
        description=description,
        add_tags=tag or (),
        remove_tags=untag or (),
    )
    report_task(s, task, "edited")


@session_command(task_app, "move")
def move_command(
    s: Session | Remote,
    ref: TaskArgument,
    expect: ExpectOption = None,
    before: BeforeOption = None,
    after: AfterOption = None,
    section: SectionOption = None,
    no_section: Annotated[bool, typer.Option("--no-section", help="Out of its section.")] = False,
    parent: Annotated[
        str | None, typer.Option("--parent", metavar="REF", help="Under this task.")
    ] = None,
    root: Annotated[bool, typer.Option("--root", help="To the top level of its list.")] = False,
    to_list: Annotated[
        str | None,
        typer.Option("--list", metavar="LIST", help="To another list, with its subtree."),
    ] = None,
) -> None:
    """Move a task among its siblings, into a section, under another parent, or to another list.

    --list moves a root task and its subtree (editor of both lists; only --section
    combines with it). --parent/--root may combine with --before/--after and --section.
    """
    revision = expected_revision(expect)
    if section is not None and no_section:
        raise InvalidInput("section: give --section or --no-section, not both", field="section")
    if parent is not None and root:
        raise InvalidInput("parent: give --parent or --root, not both", field="parent")
    placed = before is not None or after is not None or section is not None or no_section
    reparented = parent is not None or root
    if to_list is not None:
        if reparented or before is not None or after is not None or no_section:
            raise InvalidInput(
                "list: --list moves the task to the end of the other list; "
                "only --section combines with it",
                field="list",
            )
        task = s.tasks.move_to_list(s.actor, ref, revision, to_list, section=section)
        report_task(s, task, "moved")
        return
    if not placed and not reparented:
        raise InvalidInput(
            "move: say where: --before/--after, --section/--no-section, --parent/--root or --list",
            field="move",
        )
    task = s.changes.relocate(
        s.actor,
        ref,
        revision,
        parent=parent,
        root=root,
        before=before,
        after=after,
        section=section,
        clear_section=no_section,
    )
    report_task(s, task, "moved")


@session_command(task_app, "done", passage=True)
def done_command(
    s: Session | Remote,
    ref: TaskArgument,
    expect: ExpectOption = None,
    subtree: Annotated[
        bool, typer.Option("--subtree", help="Also complete its open checklist items.")
    ] = False,
) -> None:
    """Complete a task (with --subtree, its open checklist items too).

    A task with open checklist items needs --subtree, which completes them too; so does
    the open occurrence of a recurring series, whose completion creates the next one.

    Inside a passage (KALENDS_PASSAGE_TOKEN and KALENDS_API_URL set, no --server or
    --database) it speaks for the passage, which may complete its own checklist's items
    only.
    """
    revision = expected_revision(expect)
    task = s.tasks.complete(s.actor, ref, revision, complete_subtree=subtree)
    report_task(s, task, "completed")


def _transition(name: str, done: str, doc: str) -> None:
    """Registers ``kalends task NAME``: the task service's transition of that name, at the
    revision the person saw, reported as ``done``."""

    def command(s: Session | Remote, ref: TaskArgument, expect: ExpectOption = None) -> None:
        revision = expected_revision(expect)
        change: Callable[[ActorRef, str, int], Task] = getattr(s.tasks, name)
        report_task(s, change(s.actor, ref, revision), done)

    command.__doc__ = doc
    session_command(task_app, name)(command)


_transition(
    "reopen",
    "reopened",
    "Reopen a completed task (and its completed ancestors). Reminders are not replayed.",
)
_transition(
    "trash",
    "trashed",
    "Put a task (and so its checklist) in the trash; its reminders are cancelled.",
)
_transition(
    "restore", "restored", "Take a task out of the trash. Cancelled reminders are not replayed."
)


@session_command(task_app, "comment", passage=True)
def comment_command(
    s: Session | Remote,
    ref: TaskArgument,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The comment.")],
) -> None:
    """Comment on a task. Comments do not change the task's revision.

    Inside a passage (KALENDS_PASSAGE_TOKEN and KALENDS_API_URL set, no --server or
    --database) it speaks for the passage, which may comment its own checklist's items
    only.
    """
    made = s.tasks.comment(s.actor, ref, text)
    if s.json_output:
        emit_json(made.to_json())
        return
    console.print(Text(f"commented on {ref.upper()}"), soft_wrap=True)
    s.local_note()


@session_command(task_app, "attach")
def attach_command(
    s: Session | Remote,
    ref: TaskArgument,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The file to attach.")],
    name: Annotated[
        str | None, typer.Option("--name", help="Attachment name; default: the file's.")
    ] = None,
    media_type: Annotated[
        str | None,
        typer.Option("--type", metavar="MEDIA/TYPE", help="Default: guessed from the name."),
    ] = None,
) -> None:
    """Attach a file's bytes to a task (stored in the database, up to 25 MiB)."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidInput(
            f"file: cannot read {str(file)!r}: {exc.strerror}", field="file"
        ) from exc
    label = name if name is not None else file.name
    guessed = mimetypes.guess_type(label)[0] or "application/octet-stream"
    # Checked before either mode sends it: a line break is no media type, and the
    # client's multipart encoder would fail on it rather than refuse it.
    media = check_media_type(media_type if media_type is not None else guessed)
    made = s.tasks.attach(s.actor, ref, label, media, data)
    if s.json_output:
        emit_json(made.to_json())
        return
    console.print(
        Text(f"attached {made.name} ({made.media_type}, {made.size} bytes) to {ref.upper()}"),
        soft_wrap=True,
    )
    s.local_note()


session_command(task_app, "schedule")(schedule_command)
session_command(task_app, "repeat")(repeat_command)
session_command(task_app, "skip")(skip_command)
task_app.add_typer(
    series_app, name="series", short_help="Show, pause, resume or stop a recurring series."
)


@session_command(task_app, "history")
def history_command(s: Session | Remote, ref: TaskArgument) -> None:
    """Print a task's append-only history, oldest first.

    An event a line (its instant in UTC, who, what), its details indented beneath. With
    --json: the events as stored.
    """
    events = s.tasks.history(s.actor, ref)
    if s.json_output:
        emit_json([e.to_json() for e in events])
        return
    handles = {a.id: a.handle for a in s.directory.actors()}
    console.print(history_lines(events, handles), soft_wrap=True)
