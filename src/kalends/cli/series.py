"""``kalends task repeat|skip|series``: a task and its checklist as a recurring series.

``repeat`` and ``skip`` change a task and take the task's revision; ``series
pause|resume|stop`` change the series and take the series' own revision, which
``series show`` prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from kalends.civil import parse_date
from kalends.cli.commands import session_command
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    ExpectOption,
    Reporter,
    Session,
    TaskArgument,
    expected_revision,
    group_help,
)
from kalends.cli.task_client import TaskSession
from kalends.cli.task_views import WEEKDAY_NAMES, next_date_text, rule_text, task_line
from kalends.errors import InvalidInput
from kalends.identity import ActorRef
from kalends.tasks import Task
from kalends.tasks.series import SeriesStatus, SeriesView
from kalends.tasks.series_rules import SeriesRule

series_app = typer.Typer(
    help=group_help(
        "A recurring series: show, pause, resume, stop.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

SeriesArgument = Annotated[
    str,
    typer.Argument(
        metavar="REF|SERIES_ID", help="A task of the series (reference or ID), or the series ID."
    ),
]
SeriesExpectOption = Annotated[
    str | None,
    typer.Option(
        "--expect",
        metavar="REV",
        help="The series revision you saw (`kalends task series show`); a changed series is "
        "refused.",
        show_default=False,
    ),
]
_FULL_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# ISO weekdays (Monday = 1) by number, short name and full name.
_WEEKDAYS = {
    key: i
    for i, (short, full) in enumerate(zip(WEEKDAY_NAMES, _FULL_NAMES, strict=True), start=1)
    for key in (str(i), short, full)
}


def _whole(text: str, option: str) -> int:
    if re.fullmatch(r"-?[0-9]+", text.strip()) is None:
        raise InvalidInput(f"{option}: a whole number, got {text!r}", field=option)
    return int(text)


def _weekdays(text: str) -> list[int]:
    days: list[int] = []
    for part in text.split(","):
        token = part.strip().lower()
        day = _WEEKDAYS.get(token)
        if day is None:
            raise InvalidInput(
                f"weekdays: ISO weekdays 1-7 (Monday = 1) or mon…sun, got {part.strip()!r}",
                field="weekdays",
            )
        if day in days:
            raise InvalidInput(f"weekdays: {part.strip()!r} is listed twice", field="weekdays")
        days.append(day)
    return days


def series_rule(
    daily: bool, every: str | None, weekdays: str | None, after_completion: str | None
) -> SeriesRule:
    """The rule the options describe; exactly one of the three kinds."""
    if daily + (weekdays is not None) + (after_completion is not None) != 1:
        raise InvalidInput(
            "rule: give exactly one of --daily [--every N], --weekdays DAYS "
            "or --after-completion DAYS",
            field="rule",
        )
    if every is not None and not daily:
        raise InvalidInput("every: --every goes with --daily", field="every")
    data: dict[str, Any]
    if daily:
        data = {"kind": "daily", "interval_days": 1 if every is None else _whole(every, "every")}
    elif weekdays is not None:
        data = {"kind": "weekdays", "days": _weekdays(weekdays)}
    else:
        assert after_completion is not None
        data = {"kind": "completion_relative", "days": _whole(after_completion, "after-completion")}
    return SeriesRule.parse(data)


def series_revision(text: str | None) -> int:
    """The ``--expect`` of a series command: the series' revision, not a task's."""
    if text is None:
        raise InvalidInput(
            "expect: pass the series' current revision with --expect REV "
            "(`kalends task series show REF` shows it)",
            field="expect",
        )
    return expected_revision(text)


def series_of(s: TaskSession, task: Task) -> SeriesView | None:
    """The series a task belongs to, if any."""
    if task.series_id is None:
        return None
    return s.series.get(s.actor, task.id)


def _outstanding(s: TaskSession, view: SeriesView) -> Task | None:
    """The series' outstanding task, for a person to read (``--json`` prints none)."""
    if view.outstanding_task_id is None or s.json_output:
        return None
    return s.tasks.get(s.actor, view.outstanding_task_id).task


def series_grid(view: SeriesView, outstanding: Task | None) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()

    def row(name: str, value: str | Text) -> None:
        grid.add_row(name, value if isinstance(value, Text) else Text(value))

    row("series", str(view.id))
    row("revision", Text(str(view.revision), style="bold"))
    row("rule", rule_text(view))
    row("status", view.status)
    row("started", view.anchor_date.isoformat())
    if view.end_date is not None:
        row("until", view.end_date.isoformat())
    limit = f" of at most {view.count}" if view.count is not None else ""
    row("occurrences", f"{view.emitted}{limit} so far")
    if outstanding is not None:
        ordinal = Text(f"#{view.outstanding_ordinal} ")
        row("outstanding", ordinal.append_text(task_line(outstanding)))
    elif view.outstanding_ordinal is None:
        row("outstanding", "none")
    row("next date", next_date_text(view))
    return grid


def _report(s: Reporter, view: SeriesView, outstanding: Task | None, heading: str) -> None:
    if s.json_output:
        emit_json(view.to_json())
        return
    console.print(Group(Text(heading), series_grid(view, outstanding)), soft_wrap=True)
    s.local_note()


def repeat_command(
    s: Session | Remote,
    ref: TaskArgument,
    expect: ExpectOption = None,
    daily: Annotated[
        bool, typer.Option("--daily", help="Every day, or every N days with --every.")
    ] = False,
    every: Annotated[
        str | None, typer.Option("--every", metavar="N", help="With --daily: every N days.")
    ] = None,
    weekdays: Annotated[
        str | None,
        typer.Option("--weekdays", metavar="DAYS", help="On these weekdays: 1,2,5 or mon,tue,fri."),
    ] = None,
    after_completion: Annotated[
        str | None,
        typer.Option(
            "--after-completion",
            metavar="DAYS",
            help="The next occurrence DAYS calendar days after each completion.",
        ),
    ] = None,
    time: Annotated[
        str | None,
        typer.Option("--time", metavar="HH:MM", help="Each occurrence is due at this wall time."),
    ] = None,
    zone: Annotated[
        str | None,
        typer.Option("--zone", metavar="ZONE", help="IANA zone of the time and of the days."),
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", metavar="DATE", help="No occurrence after this day.")
    ] = None,
    count: Annotated[
        str | None, typer.Option("--count", metavar="N", help="At most N occurrences in all.")
    ] = None,
) -> None:
    """Make an open root task and its checklist the first occurrence of a recurring series.

    Settling an occurrence (done --subtree, or skip) creates the next one. With
    --json: the series.
    """
    revision = expected_revision(expect)
    rule = series_rule(daily, every, weekdays, after_completion)
    end_date = parse_date(until, "until") if until is not None else None
    limit = _whole(count, "count") if count is not None else None
    made = s.changes.repeat(
        s.actor,
        ref,
        revision,
        rule,
        time_of_day=time,
        zone=zone,
        end_date=end_date,
        count=limit,
    )
    view, task = made.series, made.task
    _report(s, view, task, f"{task.ref} now repeats: {rule_text(view)}")
    if not s.json_output:
        console.print(Text(f"task revision {task.revision}", style="dim"))


def skip_command(
    s: Session | Remote,
    ref: TaskArgument,
    expect: ExpectOption = None,
) -> None:
    """Skip the outstanding occurrence whole (its checklist too) and create the next one.

    With --json: {"skipped": task, "successor": task or null, "series": series}.
    """
    revision = expected_revision(expect)
    made = s.changes.skip(s.actor, ref, revision)
    if s.json_output:
        emit_json(made.to_json())
        return
    skipped, successor, view = made.skipped, made.successor, made.series
    console.print(Text(f"skipped occurrence #{skipped.occurrence}: {skipped.ref}"))
    if successor is not None:
        console.print(
            Text(f"next, occurrence #{successor.occurrence}: ").append_text(task_line(successor)),
            soft_wrap=True,
        )
        console.print(Text(f"revision {successor.revision}", style="dim"))
    elif view.status == SeriesStatus.PAUSED:
        console.print(Text("the series is paused: the next occurrence comes when it resumes"))
    else:
        console.print(Text(f"the series is {view.status}: no next occurrence"))
    s.local_note()


@session_command(series_app, "show")
def show_command(s: Session | Remote, series: SeriesArgument) -> None:
    """Show a series: rule, status, its revision (pass it to --expect), outstanding occurrence."""

    def read() -> tuple[SeriesView, Task | None]:
        view = s.series.get(s.actor, series)
        return view, _outstanding(s, view)

    view, outstanding = s.read_together(read)
    if s.json_output:
        emit_json(view.to_json())
        return
    console.print(series_grid(view, outstanding), soft_wrap=True)


def _status_change(name: str, done: str, doc: str) -> None:
    """Registers ``kalends task series NAME``: the series service's change of that name, at
    the series revision the person saw, reported as ``done``."""

    def command(
        s: Session | Remote, series: SeriesArgument, expect: SeriesExpectOption = None
    ) -> None:
        revision = series_revision(expect)
        change: Callable[[ActorRef, str, int], SeriesView] = getattr(s.series, name)
        view = change(s.actor, series, revision)
        _report(s, view, _outstanding(s, view), f"{done} series {view.id}")

    command.__doc__ = doc
    session_command(series_app, name)(command)


_status_change(
    "pause",
    "paused",
    "Pause a series: completing its outstanding occurrence then creates no next one.",
)
_status_change(
    "resume",
    "resumed",
    "Resume a paused series; with no occurrence outstanding, the next one is created.",
)
_status_change(
    "stop",
    "stopped",
    "Stop a series for good; its outstanding task stays, an ordinary task to finish.",
)
