"""The controls of ``kalends schedule`` (play, pause, stop, resume, run-now, check, rm),
what every control needs (a request ID, the revision the caller saw and the note a lost
reply needs), what a control answers, and ``control-status``, which tells a lost reply's
fate.

Each control is one command made by :func:`control_command`, alike in local and server
mode: :class:`OneSchedule` calls the session's
:class:`~kalends.cli.mission_client.SchedulesClient`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Annotated, Any
from uuid import UUID

import typer
from rich.text import Text

from kalends.cli.mission_client import SchedulesClient
from kalends.cli.output import console, emit_json, error_console
from kalends.cli.remote import Remote
from kalends.cli.schedule_options import ExpectedRevisionOption, RequestIdOption, ScheduleArgument
from kalends.cli.schedule_views import display_zone, local_text, state_text
from kalends.cli.session import Reporter, Session
from kalends.errors import InvalidInput
from kalends.missions import Action, ControlOutcome, ControlStatus, check_request_id

__all__ = [
    "CONTROL_COMMANDS",
    "OneSchedule",
    "control_note",
    "control_status_command",
    "expected",
    "note",
    "report_outcome",
    "request_id_of",
    "revision_of",
]

_PAST = {
    Action.PLAY: "played",
    Action.PAUSE: "paused",
    Action.STOP: "stopped",
    Action.RESUME: "resumed",
    Action.RUN_NOW: "reserved a run-now passage of",
    Action.CHECK: "asked for a check of",
    Action.CONFIGURE: "edited",
    Action.DELETE: "deleted",
}


# --- request IDs, revisions and the note a lost reply needs -----------------------------


def request_id_of(text: str | None) -> tuple[str, bool]:
    """The request ID given, or a new one; and whether it was generated."""
    if text is None:
        return f"cli-{uuid.uuid4().hex}", True
    return check_request_id(text.strip(), "request-id"), False


def revision_of(text: str | None) -> int | None:
    if text is None:
        return None
    if re.fullmatch(r"[0-9]+", text.strip()) is None or int(text) < 1:
        raise InvalidInput(
            f"expected-revision: a revision is a whole number ≥ 1, got {text!r}",
            field="expected-revision",
        )
    return int(text)


def note(line: str) -> None:
    """One line on standard error (never on standard output, which --json owns)."""
    error_console.print(Text(line, style="dim"), soft_wrap=True, highlight=False)


def control_note(
    schedule: str, action: Action, request_id: str, generated: bool, revision: int, how: str | None
) -> None:
    """Names what was generated or read, and how to ask about the control if its reply is lost."""
    if not generated and how is None:
        return
    parts = []
    if generated:
        parts.append(f"request ID {request_id} (generated)")
    if how is not None:
        parts.append(f"expected revision {revision} ({how})")
    note(
        ", ".join(parts)
        + f"; if the reply is lost: kalends schedule control-status {schedule} {request_id} "
        f"--expected-revision {revision} --action {action.value}"
    )


@dataclass(slots=True)
class OneSchedule:
    """One schedule a command reads and controls. Its workspace, once a detail names it,
    goes with every later call (on a server it names the schedule's route)."""

    client: SchedulesClient
    actor: str
    schedule: str
    workspace: UUID | None = None

    def detail(self) -> dict[str, Any]:
        doc = self.client.detail(self.actor, self.schedule, workspace=self.workspace)
        self.workspace = UUID(str(doc["workspaceId"]))
        return doc

    def status(self, rid: str) -> ControlStatus:
        return self.client.control_status(self.actor, self.schedule, rid, workspace=self.workspace)

    def control(
        self, action: Action, rid: str, expected: int, changes: dict[str, Any] | None = None
    ) -> ControlOutcome:
        return self.client.control(
            self.actor,
            self.schedule,
            action,
            request_id=rid,
            expected_revision=expected,
            changes=changes,
            workspace=self.workspace,
        )


def expected(
    one: OneSchedule, rid: str, generated: bool, given: int | None, current: int | None
) -> tuple[int, str | None]:
    """The revision to send, and how it was found when not given.

    A request is its action, payload and expected revision: a user repeating their own
    request ID without --expected-revision gets the revision it was first sent with (its
    record says), so the repeat returns the original outcome instead of a reuse error.
    """
    if given is not None:
        return given, None
    if not generated:
        status = one.status(rid)
        if status.status == "applied" and status.expected_revision is not None:
            return status.expected_revision, "as this request was first sent"
    if current is None:
        current = int(one.detail()["revision"])
    return current, "read now"


# --- what a control answers -------------------------------------------------------------


def report_outcome(
    s: Reporter, outcome: ControlOutcome, schedule: str, extra: str | None = None
) -> None:
    if s.json_output:
        emit_json(outcome.to_json())
        return
    doc = outcome.schedule
    verb = _PAST.get(Action(outcome.action), outcome.action)
    console.print(
        Text(
            f"{verb} {doc.get('title')!r}: revision {outcome.expected_revision} → "
            f"{outcome.revision}, {state_text(doc)}"
        ),
        soft_wrap=True,
    )
    if doc.get("kind") != "tombstone" and doc.get("nextDueAt"):
        console.print(
            Text(f"next slot: {local_text(doc['nextDueAt'], display_zone(doc))}"), soft_wrap=True
        )
    console.print(Text(f"request {outcome.request_id}", style="dim"), soft_wrap=True)
    if outcome.repeated:
        console.print(Text("a repeated request: nothing acted again", style="yellow"))
    if not outcome.complete:
        console.print(
            Text(
                "not complete yet: it waits on the runtime "
                f"(`kalends schedule control-status {schedule} {outcome.request_id}`)",
                style="yellow",
            ),
            soft_wrap=True,
        )
    if extra is not None:
        console.print(Text(extra, style="dim"), soft_wrap=True)
    if outcome.supervision is not None:
        supervised = outcome.supervision
        calm = supervised.get("state") in ("enabled", "already", "off")
        console.print(
            Text(
                f"supervision: {supervised.get('state')} — {supervised.get('message')}",
                style="dim" if calm else "yellow",
            ),
            soft_wrap=True,
        )
    s.local_note()


def control_command(action: Action, help_text: str) -> Any:
    """The command of one control: the request ID and revision checked, generated or read
    first, then the control sent."""

    def command(
        s: Session | Remote,
        schedule: ScheduleArgument,
        request_id: RequestIdOption = None,
        expected_revision: ExpectedRevisionOption = None,
    ) -> None:
        one = OneSchedule(s.schedules, s.actor, schedule)
        rid, generated = request_id_of(request_id)
        revision, how = expected(one, rid, generated, revision_of(expected_revision), None)
        control_note(schedule, action, rid, generated, revision, how)
        report_outcome(s, one.control(action, rid, revision), schedule)

    command.__doc__ = help_text
    command.__name__ = f"{action.value.replace('-', '_')}_command"
    return command


_CONTROLS = (
    (Action.PLAY, "play", "Start a paused schedule (the first Play freezes its relative origins)."),
    (Action.PAUSE, "pause", "Pause a running schedule; a pending passage is interrupted."),
    (Action.STOP, "stop", "Stop a schedule for good (Stop is final)."),
    (Action.RESUME, "resume", "Resume an Interrupted schedule after reconciling its passage."),
    (Action.RUN_NOW, "run-now", "Start one passage now, outside the policy (never overlapping)."),
    (Action.CHECK, "check", "Ask for a check of a paused or stopped schedule's pending passage."),
    (Action.DELETE, "rm", "Delete a schedule; once reconciled it leaves a tombstone in `ls`."),
)
CONTROL_COMMANDS = {name: control_command(act, text) for act, name, text in _CONTROLS}


def control_status_command(
    s: Session | Remote,
    schedule: ScheduleArgument,
    request_id: Annotated[str, typer.Argument(metavar="REQUEST_ID", help="The control's ID.")],
    expected_revision: Annotated[
        str | None,
        typer.Option(
            "--expected-revision",
            metavar="N",
            help="The revision the control was sent with: lets a never-applied "
            "control be proven rejected.",
            show_default=False,
        ),
    ] = None,
    action: Annotated[
        str | None,
        typer.Option(
            "--action",
            metavar="ACTION",
            help="The control sent: play, pause, stop, resume, run-now, check, "
            "configure or delete.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The exact status of a control by its request ID: applied, rejected or unknown.

    Use it when a control's reply was lost. A read only: it never applies anything.
    """
    rid = check_request_id(request_id.strip(), "request-id")
    revision, act = revision_of(expected_revision), _action(action)
    status = s.schedules.control_status(
        s.actor, schedule, rid, expected_revision=revision, action=act
    )
    if s.json_output:
        emit_json(status.to_json())
        return
    if status.status == "applied":
        done = "complete" if status.complete else "not complete yet (waits on the runtime)"
        line = (
            f"applied: {status.action} at revision {status.expected_revision} → "
            f"{status.revision}, {done}"
        )
    elif status.status == "rejected":
        line = f"rejected ({status.code}): {status.reason}; it never applied and never will"
    else:
        line = "unknown: no record of it; it has not applied (or its record was evicted)" + (
            ""
            if status.expected_revision is not None and status.action
            else "; --expected-revision and --action can make the answer exact"
        )
    console.print(Text(f"request {rid}: {line}"), soft_wrap=True)


def _action(text: str | None) -> str | None:
    if text is None:
        return None
    value = text.strip().lower()
    aliases = {"rm": "delete", "edit": "configure"}
    value = aliases.get(value, value)
    if value not in {a.value for a in Action}:
        raise InvalidInput(
            f"action: unknown control {text!r}; expected one of "
            f"{', '.join(a.value for a in Action)}",
            field="action",
        )
    return value
