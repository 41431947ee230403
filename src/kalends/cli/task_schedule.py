"""``kalends task schedule``: the schedule its options describe, as ``parse_schedule`` JSON.

Options change the task's current schedule; ``--clear`` starts from an empty one,
and ``--json-input`` gives the whole schedule at once.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from kalends.civil import format_local
from kalends.cli.output import emit_json, error_console
from kalends.cli.remote import Remote
from kalends.cli.session import (
    ExpectOption,
    Reporter,
    Session,
    TaskArgument,
    expected_revision,
)
from kalends.cli.task_client import Scheduled
from kalends.cli.task_views import report_task
from kalends.errors import InvalidInput
from kalends.tasks import Task
from kalends.tasks.values import due_to_json

REMIND_FORMAT = "CHANNEL@YYYY-MM-DDTHH:MM:SS[@ZONE][:RECIPIENT]"
# A zone never holds ':' and a handle never holds '@' or ':', so the parts split
# unambiguously; ZONE may still be written like an offset (+02:00), to be refused by name.
_REMIND = re.compile(
    r"^(?P<channel>[^@]*)@(?P<local>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})"
    r"(?:@(?P<zone>[^:@]+(?::\d{2})?))?(?::(?P<recipient>[^:@]+))?$"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleOptions:
    planned: str | None = None
    due: str | None = None
    due_local: str | None = None
    zone: str | None = None
    priority: str | None = None
    remind: tuple[str, ...] = ()
    clear: bool = False
    json_input: str | None = None

    @property
    def changes_anything(self) -> bool:
        given = (self.planned, self.due, self.due_local, self.zone, self.priority)
        return self.clear or bool(self.remind) or any(v is not None for v in given)


def needs_current(options: ScheduleOptions) -> bool:
    """Whether the task's current schedule is the starting point."""
    return options.json_input is None and not options.clear


def schedule_json(options: ScheduleOptions, current: Task | None) -> dict[str, Any]:
    """The schedule JSON: ``--json-input`` as given, else ``current`` with the options applied."""
    if options.json_input is not None:
        if options.changes_anything:
            raise InvalidInput(
                "json-input: the JSON is the whole schedule; give no other schedule option",
                field="json_input",
            )
        data = _read_json(options.json_input)
        if not isinstance(data, dict):
            raise InvalidInput("json-input: a JSON object is expected", field="json_input")
        return data
    if not options.changes_anything:
        raise InvalidInput(
            "schedule: say what to set: --planned, --due, --due-local with --zone, "
            "--priority, --remind, --clear or --json-input",
            field="schedule",
        )
    data = current_json(current) if current is not None and not options.clear else {}
    if options.planned is not None:
        data["planned"] = options.planned
    if options.due is not None and options.due_local is not None:
        raise InvalidInput(
            "due: give --due DATE or --due-local LOCAL --zone ZONE, not both", field="due"
        )
    if options.zone is not None and options.due_local is None:
        raise InvalidInput("zone: --zone goes with --due-local", field="zone")
    if options.due is not None:
        data["due"] = options.due
    if options.due_local is not None:
        data["due"] = {"local": options.due_local, "zone": options.zone}
    if options.priority is not None:
        data["priority"] = _whole_number(options.priority)
    if options.remind:
        due = data.get("due")
        zone = due.get("zone") if isinstance(due, dict) else None
        data["reminders"] = [parse_remind(spec, i, zone) for i, spec in enumerate(options.remind)]
    return data


def current_json(task: Task) -> dict[str, Any]:
    return {
        "planned": task.planned.isoformat() if task.planned else None,
        "due": due_to_json(task.due),
        "priority": task.priority,
        "reminders": [
            {
                "channel": r.channel.value,
                "local": format_local(r.time.local),
                "zone": r.time.zone,
                "recipient": str(r.recipient_id),
            }
            for r in task.reminders
        ],
    }


def parse_remind(spec: str, index: int, default_zone: str | None) -> dict[str, Any]:
    """One ``--remind`` value; the zone defaults to the due value's zone."""
    match = _REMIND.match(spec.strip())
    field = f"reminders[{index}]"
    if match is None:
        raise InvalidInput(f"{field}: expected {REMIND_FORMAT}, got {spec!r}", field=field)
    found: dict[str, Any] = {
        "channel": match["channel"],
        "local": match["local"],
        "zone": match["zone"] or default_zone,
    }
    if found["zone"] is None:
        raise InvalidInput(
            f"{field}: a reminder needs an IANA zone: add @ZONE, or give the due time a zone",
            field=field,
        )
    if match["recipient"]:
        found["recipient"] = match["recipient"]
    return found


def _whole_number(text: str) -> int | str:
    # parse_schedule refuses what is not a whole number 1-3, naming the field.
    try:
        return int(text.strip())
    except ValueError:
        return text


def _read_json(source: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(
            f"json-input: cannot read {source!r}: {exc.strerror}", field="json_input"
        ) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"json-input: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            field="json_input",
        ) from exc


def schedule_command(
    s: Session | Remote,
    ref: TaskArgument,
    expect: ExpectOption = None,
    planned: Annotated[
        str | None, typer.Option("--planned", metavar="DATE", help="Planned day, YYYY-MM-DD.")
    ] = None,
    due: Annotated[
        str | None, typer.Option("--due", metavar="DATE", help="Due day, YYYY-MM-DD.")
    ] = None,
    due_local: Annotated[
        str | None,
        typer.Option(
            "--due-local", metavar="YYYY-MM-DDTHH:MM:SS", help="Due wall time; needs --zone."
        ),
    ] = None,
    zone: Annotated[
        str | None,
        typer.Option("--zone", metavar="ZONE", help="IANA zone of --due-local, e.g. Europe/Paris."),
    ] = None,
    priority: Annotated[
        str | None, typer.Option("--priority", metavar="1-3", help="1 is the highest.")
    ] = None,
    remind: Annotated[
        list[str] | None,
        typer.Option(
            "--remind",
            metavar="SPEC",
            # Square brackets are escaped: rich would read them as markup.
            help=(
                "SPEC is CHANNEL@WHEN\\[@ZONE]\\[:RECIPIENT], WHEN as "
                "YYYY-MM-DDTHH:MM:SS; repeatable, replaces the reminders. CHANNEL is email "
                "or push; ZONE defaults to the due zone; RECIPIENT (handle) defaults to the "
                "acting actor."
            ),
        ),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Start from an empty schedule, not the current one.")
    ] = False,
    json_input: Annotated[
        str | None,
        typer.Option(
            "--json-input",
            metavar="FILE|-",
            help='The whole schedule as JSON: {"planned", "due", "priority", "reminders"}.',
        ),
    ] = None,
) -> None:
    """Set a task's planned day, due value, priority and reminders, in one transaction.

    Options change the current schedule; --clear empties it first. A due or reminder
    time that the zone skips or repeats (DST) is refused, never shifted. A reminder
    whose time has passed is kept, with a warning (in --json: "warnings").
    """
    options = ScheduleOptions(
        planned=planned,
        due=due,
        due_local=due_local,
        zone=zone,
        priority=priority,
        remind=tuple(remind or ()),
        clear=clear,
        json_input=json_input,
    )
    revision = expected_revision(expect)
    scheduled = s.changes.schedule(
        s.actor,
        ref,
        revision,
        lambda current: schedule_json(options, current),
        from_current=needs_current(options),
    )
    _report(s, scheduled)


def _report(s: Reporter, scheduled: Scheduled) -> None:
    """The scheduled task, and a warning for each reminder whose time has passed: in
    the JSON (``warnings``, as the HTTP API answers), else one ``warning:`` line each on
    standard error."""
    if s.json_output:
        emit_json(scheduled.to_json())
        return
    report_task(s, scheduled.task, "scheduled")
    for warning in scheduled.warnings:
        error_console.print(
            "warning: " + str(warning["message"]), markup=False, highlight=False, soft_wrap=True
        )
