"""``kalends schedule``: durable schedule documents in a workspace and their controls.

A schedule is created paused and never starts work until Play. Every control
(play, pause, stop, resume, run-now, check, edit, rm) carries a request ID and
the revision the caller saw: a repeated request ID returns the original outcome
and never acts twice; a stale revision is refused (``revision-conflict``) and
changes nothing. When ``--request-id`` is absent one is generated, and when
``--expected-revision`` is absent the current revision is read; either is then
printed on standard error before the control is sent, so a user whose reply was
lost can ask ``kalends schedule control-status`` (or ``receipt`` for a creation).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli import remote_values as values
from kalends.cli.output import console, emit_json, error_console
from kalends.cli.passages import RuntimeDirOption, runtime_root
from kalends.cli.remote import (
    SERVER_MODE_HELP,
    Remote,
    ServerOption,
    local_or_remote,
    path_part,
)
from kalends.cli.schedule_views import (
    detail_view,
    display_zone,
    list_view,
    local_text,
    policy_zone,
    state_text,
)
from kalends.cli.session import (
    EXIT_CODES_HELP,
    LOCAL_MODE_HELP,
    ActorOption,
    DatabaseOption,
    JsonOption,
    Reporter,
    Session,
    group_help,
)
from kalends.cli.tables import WideOption
from kalends.cli.workspaces import WorkspaceArgument
from kalends.errors import ControlConflict, InvalidInput
from kalends.missions import (
    Action,
    ControlOutcome,
    ControlStatus,
    Receipt,
    check_request_id,
    config_from_json,
)
from kalends.missions.limits import MAX_PAGE
from kalends.missions.runtime.passages import passage_log_tail

__all__ = ["detail_view", "schedule_app"]

schedule_app = typer.Typer(
    help=group_help(
        "Schedules: documents in a workspace that start passages on a policy.",
        "A policy is daily, every, at, after, cron and more. A schedule is created paused; "
        "controls take --request-id (generated when absent) and --expected-revision (read "
        "when absent); both are printed on stderr so a lost reply can be checked with "
        "control-status.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

ScheduleArgument = Annotated[
    str, typer.Argument(metavar="SCHEDULE", help="The schedule's ID (`kalends schedule ls`).")
]
RequestIdOption = Annotated[
    str | None,
    typer.Option(
        "--request-id",
        metavar="ID",
        help="8-64 letters, digits, '.', '_', ':' or '-'. Repeating a request ID never acts "
        "twice. Default: generated and printed on stderr.",
        show_default=False,
    ),
]
ExpectedRevisionOption = Annotated[
    str | None,
    typer.Option(
        "--expected-revision",
        metavar="N",
        help="The revision you saw; a schedule changed since is refused (revision-conflict). "
        "Default: read now and printed on stderr.",
        show_default=False,
    ),
]

# --- the configuration flags shared by create and edit ----------------------------------

TitleOption = Annotated[
    str | None, typer.Option("--title", help="1-60 characters.", show_default=False)
]
ObjectiveOption = Annotated[
    str | None, typer.Option("--objective", help="What a passage is for.", show_default=False)
]
NotesOption = Annotated[
    str | None, typer.Option("--notes", help="Free instructions.", show_default=False)
]
CommandOption = Annotated[
    str | None,
    typer.Option(
        "--command",
        metavar="CMDLINE",
        help="The program and its arguments, split like a shell would (no shell runs it).",
        show_default=False,
    ),
]
ArgOption = Annotated[
    list[str] | None,
    typer.Option(
        "--arg",
        metavar="ARG",
        help="One word of the command, in order; repeat (instead of --command).",
        show_default=False,
    ),
]
EnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--env",
        metavar="NAME=VALUE",
        help="An environment variable of each passage; repeat. Values are never shown back.",
        show_default=False,
    ),
]
CwdOption = Annotated[
    str | None,
    typer.Option(
        "--cwd",
        metavar="DIR",
        help="Directory inside the workspace (default '.').",
        show_default=False,
    ),
]
PolicyOption = Annotated[
    str | None,
    typer.Option(
        "--policy",
        metavar="JSON",
        help='The policy as JSON (or @FILE), e.g. {"kind": "weekdays", "days": [1, 5], '
        '"time": "09:00", "zone": "Europe/Berlin"}.',
        show_default=False,
    ),
]
DailyOption = Annotated[
    str | None,
    typer.Option(
        "--daily",
        metavar="HH:MM",
        help="Every day at this wall time (needs --zone).",
        show_default=False,
    ),
]
EveryOption = Annotated[
    str | None,
    typer.Option(
        "--every",
        metavar="DURATION",
        help="Every interval after Play: 90m, 2h, 1h30m, 1d (at least 15m).",
        show_default=False,
    ),
]
AtOption = Annotated[
    str | None,
    typer.Option(
        "--at",
        metavar="LOCAL",
        help="Once, at this wall time, e.g. 2026-12-01T09:00:00 (needs --zone).",
        show_default=False,
    ),
]
AfterOption = Annotated[
    str | None,
    typer.Option(
        "--after",
        metavar="DURATION",
        help="Once, this long after the first Play.",
        show_default=False,
    ),
]
CronOption = Annotated[
    str | None,
    typer.Option(
        "--cron",
        metavar="EXPR",
        help="A five-field cron expression (needs --zone).",
        show_default=False,
    ),
]
ImmediateOption = Annotated[
    bool, typer.Option("--immediate", help="Once, right at the first Play.")
]
ZoneOption = Annotated[
    str | None,
    typer.Option(
        "--zone",
        metavar="ZONE",
        help="IANA zone of --daily, --at, --cron and --until, e.g. Europe/Berlin.",
        show_default=False,
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until",
        metavar="LOCAL",
        help="No slot after this wall time (in --zone or the policy's zone); "
        "'none' removes the bound.",
        show_default=False,
    ),
]
WithinOption = Annotated[
    str | None,
    typer.Option(
        "--within",
        metavar="DURATION",
        help="No slot later than this after the first Play (e.g. 30d, 12h); "
        "'none' removes the bound.",
        show_default=False,
    ),
]
MaxPassagesOption = Annotated[
    str | None,
    typer.Option(
        "--max-passages",
        metavar="N",
        help="At most N passages in all; 'none' removes the bound.",
        show_default=False,
    ),
]
RestartOption = Annotated[
    str | None,
    typer.Option(
        "--restart",
        metavar="resume|interrupt",
        help="After a restart: resume (default) or show Interrupted until Resume.",
        show_default=False,
    ),
]

_DURATION = re.compile(r"(?:(?P<d>[0-9]+)d)?(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?")
_NONE = "none"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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
_DST_LEGEND = {
    "shifted": "shifted: the wall time does not exist that day (DST gap); moved past the gap",
    "earlier-of-two": "earlier-of-two: the wall time occurs twice that day; the earlier is taken",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldFlags:
    """The configuration flags a user gave; ``None`` (or empty) for those not given."""

    title: str | None = None
    objective: str | None = None
    notes: str | None = None
    command: str | None = None
    args: list[str] | None = None
    env: list[str] | None = None
    clear_env: bool = False
    cwd: str | None = None
    policy: str | None = None
    daily: str | None = None
    every: str | None = None
    at: str | None = None
    after: str | None = None
    cron: str | None = None
    immediate: bool = False
    zone: str | None = None
    until: str | None = None
    within: str | None = None
    max_passages: str | None = None
    restart: str | None = None

    @property
    def profile_given(self) -> bool:
        return bool(self.command is not None or self.args or self.env or self.clear_env or self.cwd)

    @property
    def env_given(self) -> bool:
        return bool(self.env) or self.clear_env

    def changes(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """The top-level configuration fields these flags set, nested objects merged
        with ``base`` (the configuration they change)."""
        out: dict[str, Any] = {}
        for name in ("title", "objective", "notes", "restart"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.profile_given:
            out["profile"] = self._profile(base.get("profile"))
        policy = self._policy()
        if policy is not None:
            out["policy"] = policy
        zoned = (self.daily, self.at, self.cron, self.until)
        if self.zone is not None and all(flag is None for flag in zoned):
            raise InvalidInput(
                "zone: --zone goes with --daily, --at, --cron or --until", field="zone"
            )
        if self.until is not None or self.within is not None or self.max_passages is not None:
            out["end"] = self._end(base.get("end"), policy or base.get("policy"))
        return out

    def _profile(self, base: object) -> dict[str, Any]:
        profile: dict[str, Any] = dict(base) if isinstance(base, Mapping) else {}
        if self.command is not None and self.args:
            raise InvalidInput("command: give --command or --arg, not both", field="command")
        if self.command is not None:
            try:
                profile["command"] = shlex.split(self.command)
            except ValueError as exc:
                raise InvalidInput(
                    f"command: cannot split {self.command!r}: {exc}", field="command"
                ) from None
        elif self.args:
            profile["command"] = list(self.args)
        if self.env and self.clear_env:
            raise InvalidInput("env: give --env or --clear-env, not both", field="env")
        if self.env_given:
            profile["env"] = _env(self.env or [])
        if self.cwd is not None:
            profile["cwd"] = self.cwd
        return profile

    def _policy(self) -> dict[str, Any] | None:
        given = {
            "--policy": self.policy is not None,
            "--daily": self.daily is not None,
            "--every": self.every is not None,
            "--at": self.at is not None,
            "--after": self.after is not None,
            "--cron": self.cron is not None,
            "--immediate": self.immediate,
        }
        chosen = [name for name, on in given.items() if on]
        if len(chosen) > 1:
            raise InvalidInput(
                f"policy: give one policy, got {' and '.join(chosen)}", field="policy"
            )
        if not chosen:
            return None
        if self.policy is not None:
            data = read_json(self.policy, "policy")
            if not isinstance(data, dict):
                raise InvalidInput("policy: must be a JSON object with a 'kind'", field="policy")
            return data
        if self.every is not None:
            return {"kind": "every", **_elapsed(self.every, "every")}
        if self.after is not None:
            return {"kind": "after", **_elapsed(self.after, "after")}
        if self.immediate:
            return {"kind": "immediate"}
        zone = self._zone(chosen[0])
        if self.daily is not None:
            return {"kind": "daily", "time": self.daily, "zone": zone}
        if self.at is not None:
            return {"kind": "at", "local": self.at, "zone": zone}
        assert self.cron is not None
        return {"kind": "cron", "expression": self.cron, "zone": zone}

    def _zone(self, option: str) -> str:
        if self.zone is None:
            raise InvalidInput(
                f"zone: {option} needs --zone ZONE (an IANA zone such as Europe/Berlin)",
                field="zone",
            )
        return self.zone

    def _end(self, base: object, policy: object) -> dict[str, Any]:
        end: dict[str, Any] = {"until": None, "within": None, "maxPassages": None}
        if isinstance(base, Mapping):
            end.update(base)
        if self.until is not None:
            if self.until.strip().lower() == _NONE:
                end["until"] = None
            else:
                zone = self.zone or policy_zone(policy)
                if zone is None and isinstance(end.get("until"), Mapping):
                    zone = end["until"].get("zone")
                if zone is None:
                    raise InvalidInput(
                        "until: give --zone ZONE; the policy names no zone", field="until"
                    )
                end["until"] = {"local": self.until, "zone": zone}
        if self.within is not None:
            end["within"] = None if self.within.strip().lower() == _NONE else _within(self.within)
        if self.max_passages is not None:
            text = self.max_passages.strip().lower()
            end["maxPassages"] = None if text == _NONE else _whole(text, "max-passages")
        return end


def _env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not _ENV_NAME.fullmatch(name):
            raise InvalidInput(f"env: expected NAME=VALUE, got {item!r}", field="env")
        if name in env:
            raise InvalidInput(f"env: {name} is given twice", field="env")
        env[name] = value
    return env


def _minutes(text: str, option: str) -> tuple[int, bool]:
    """A duration such as 90m, 2h, 1h30m or 3d in minutes, and whether it is whole hours."""
    found = _DURATION.fullmatch(text.strip().lower())
    if found is None or not any(found.groupdict().values()):
        raise InvalidInput(
            f"{option}: a duration such as 90m, 2h, 1h30m or 3d, got {text!r}", field=option
        )
    days, hours, minutes = (int(found[k] or 0) for k in ("d", "h", "m"))
    return (days * 24 + hours) * 60 + minutes, found["m"] is None


def _elapsed(text: str, option: str) -> dict[str, int]:
    total, whole_hours = _minutes(text, option)
    return {"hours": total // 60} if whole_hours and total else {"minutes": total}


def _within(text: str) -> dict[str, int]:
    total, whole_hours = _minutes(text, "within")
    if whole_hours and total and total % (24 * 60) == 0:
        return {"days": total // (24 * 60)}
    return {"hours": total // 60} if whole_hours and total else {"minutes": total}


def _whole(text: str, option: str) -> int:
    if re.fullmatch(r"[0-9]+", text.strip()) is None:
        raise InvalidInput(f"{option}: a whole number, got {text!r}", field=option)
    return int(text)


def read_json(text: str, option: str) -> Any:
    """JSON given inline, as ``@FILE``, or ``-`` for standard input."""
    raw = text
    if text == "-":
        raw = sys.stdin.read()
    elif text.startswith("@"):
        raw = _read_file(text[1:], option)
    return _parse_json(raw, option)


def _parse_json(raw: str, option: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{option}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            field=option,
        ) from None


def _read_file(path: str, option: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InvalidInput(f"{option}: cannot read {path!r}: {reason}", field=option) from None


# --- request IDs, revisions and the note a lost reply needs -----------------------------


def _request_id(text: str | None) -> tuple[str, bool]:
    """The request ID given, or a new one; and whether it was generated."""
    if text is None:
        return f"cli-{uuid.uuid4().hex}", True
    return check_request_id(text.strip(), "request-id"), False


def _revision(text: str | None) -> int | None:
    if text is None:
        return None
    if re.fullmatch(r"[0-9]+", text.strip()) is None or int(text) < 1:
        raise InvalidInput(
            f"expected-revision: a revision is a whole number ≥ 1, got {text!r}",
            field="expected-revision",
        )
    return int(text)


def _note(line: str) -> None:
    """One line on standard error (never on standard output, which --json owns)."""
    error_console.print(Text(line, style="dim"), soft_wrap=True, highlight=False)


def _control_note(
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
    _note(
        ", ".join(parts)
        + f"; if the reply is lost: kalends schedule control-status {schedule} {request_id} "
        f"--expected-revision {revision} --action {action.value}"
    )


class OneSchedule:
    """One schedule's reads and controls, on the database or on a server."""

    def detail(self) -> dict[str, Any]:
        raise NotImplementedError

    def status(
        self, rid: str, *, expected_revision: int | None = None, action: str | None = None
    ) -> ControlStatus:
        raise NotImplementedError

    def control(self, action: Action, rid: str, expected: int) -> ControlOutcome:
        raise NotImplementedError

    def configure(self, changes: dict[str, Any], rid: str, expected: int) -> ControlOutcome:
        raise NotImplementedError

    def preview(self, count: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The next ``count`` slots, and the detail read with them."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class _LocalSchedule(OneSchedule):
    s: Session
    schedule: str

    def detail(self) -> dict[str, Any]:
        return self.s.services.schedules.detail(self.s.actor, self.schedule)

    def status(
        self, rid: str, *, expected_revision: int | None = None, action: str | None = None
    ) -> ControlStatus:
        return self.s.services.schedules.control_status(
            self.s.actor, self.schedule, rid, expected_revision=expected_revision, action=action
        )

    def control(self, action: Action, rid: str, expected: int) -> ControlOutcome:
        return self.s.services.schedules.control(
            self.s.actor, self.schedule, action, request_id=rid, expected_revision=expected
        )

    def configure(self, changes: dict[str, Any], rid: str, expected: int) -> ControlOutcome:
        return self.s.services.schedules.configure(
            self.s.actor, self.schedule, changes, request_id=rid, expected_revision=expected
        )

    def preview(self, count: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        schedules, actor = self.s.services.schedules, self.s.actor

        def read() -> tuple[list[dict[str, Any]], dict[str, Any]]:
            slots = schedules.preview(actor, self.schedule, count)
            return slots, schedules.detail(actor, self.schedule)

        return self.s.atomic(read, write=False)


@dataclass(frozen=True, slots=True)
class _RemoteSchedule(OneSchedule):
    """A schedule on a server: its route is found (and its detail read) once."""

    r: Remote
    route: str
    doc: dict[str, Any]

    def detail(self) -> dict[str, Any]:
        return self.doc

    def status(
        self, rid: str, *, expected_revision: int | None = None, action: str | None = None
    ) -> ControlStatus:
        answer = self.r.get(
            f"{self.route}/requests/{path_part(rid)}",
            expectedRevision=expected_revision,
            action=action,
        )
        return values.control_status(answer)

    def control(self, action: Action, rid: str, expected: int) -> ControlOutcome:
        body: dict[str, Any] = {"requestID": rid, "expectedRevision": expected}
        if action is Action.RUN_NOW:
            return values.control_outcome(self.r.post(f"{self.route}/run-now", body))
        return values.control_outcome(self.r.post(self.route, {"action": action.value, **body}))

    def configure(self, changes: dict[str, Any], rid: str, expected: int) -> ControlOutcome:
        body = {
            "action": Action.CONFIGURE.value,
            "requestID": rid,
            "expectedRevision": expected,
            "changes": changes,
        }
        return values.control_outcome(self.r.post(self.route, body))

    def preview(self, count: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        slots: list[dict[str, Any]] = self.r.get(f"{self.route}/preview", count=count)
        return slots, self.doc


def one_schedule(s: Session | Remote, schedule: str) -> OneSchedule:
    """The schedule ``schedule`` names, where the command runs."""
    if isinstance(s, Remote):
        route, doc = s.schedule(schedule)
        return _RemoteSchedule(s, route, doc)
    return _LocalSchedule(s, schedule)


def _expected(
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


def _control(
    one: OneSchedule,
    schedule: str,
    action: Action,
    request_id: str | None,
    expected: str | None,
) -> ControlOutcome:
    """Send one control: the request ID and revision checked, generated or read first."""
    rid, generated = _request_id(request_id)
    revision, how = _expected(one, rid, generated, _revision(expected), None)
    _control_note(schedule, action, rid, generated, revision, how)
    return one.control(action, rid, revision)


# --- what a control answers -------------------------------------------------------------


def _report_outcome(
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
    s.local_note()


def _control_command(action: Action, help_text: str) -> Any:
    def command(
        schedule: ScheduleArgument,
        request_id: RequestIdOption = None,
        expected_revision: ExpectedRevisionOption = None,
        actor: ActorOption = None,
        database: DatabaseOption = None,
        server: ServerOption = None,
        json_output: JsonOption = False,
    ) -> None:
        with local_or_remote(database, server, json_output, actor=actor) as s:
            outcome = _control(
                one_schedule(s, schedule), schedule, action, request_id, expected_revision
            )
            _report_outcome(s, outcome, schedule)

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
_CONTROL_COMMANDS = {name: _control_command(act, text) for act, name, text in _CONTROLS}


# --- create, edit -----------------------------------------------------------------------


def create_command(
    workspace: WorkspaceArgument,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            metavar="FILE|-",
            help="The whole configuration as JSON (see `kalends.missions.config`); "
            "'-' reads standard input. Field flags override its fields.",
            show_default=False,
        ),
    ] = None,
    title: TitleOption = None,
    objective: ObjectiveOption = None,
    notes: NotesOption = None,
    command: CommandOption = None,
    arg: ArgOption = None,
    env: EnvOption = None,
    cwd: CwdOption = None,
    policy: PolicyOption = None,
    daily: DailyOption = None,
    every: EveryOption = None,
    at: AtOption = None,
    after: AfterOption = None,
    cron: CronOption = None,
    immediate: ImmediateOption = False,
    zone: ZoneOption = None,
    until: UntilOption = None,
    within: WithinOption = None,
    max_passages: MaxPassagesOption = None,
    restart: RestartOption = None,
    request_id: RequestIdOption = None,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Create a paused schedule in WORKSPACE (editors and owners); Play starts it.

    Needs a title, a command and one policy: --policy JSON, or --daily HH:MM, --every 90m,
    --at LOCAL, --after 2h, --cron EXPR (with --zone), or --immediate. With --json: the
    creation receipt. A repeated --request-id returns the first receipt.

    Defining what runs needs the run privilege too, in local mode as on a server: whoever
    holds it can run anything the passage user can. `kalends actor grant run ACTOR` gives
    it (locally anyone who may open the database; on a server its owner account). --env
    names starting with LD_ or PYTHON are refused.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        flags = FieldFlags(
            title=title,
            objective=objective,
            notes=notes,
            command=command,
            args=arg,
            env=env,
            cwd=cwd,
            policy=policy,
            daily=daily,
            every=every,
            at=at,
            after=after,
            cron=cron,
            immediate=immediate,
            zone=zone,
            until=until,
            within=within,
            max_passages=max_passages,
            restart=restart,
        )
        rid, generated = _request_id(request_id)
        base: dict[str, Any] = {}
        if config is not None:
            text = sys.stdin.read() if config == "-" else _read_file(config, "config")
            loaded = _parse_json(text, "config")
            if not isinstance(loaded, dict):
                raise InvalidInput("config: must be a JSON object", field="config")
            base = loaded
        merged = {**base, **flags.changes(base)}
        config_from_json(merged, new=True)  # bad input fails here, before the note
        if generated:
            _note(
                f"request ID {rid} (generated); if the reply is lost: "
                f"kalends schedule receipt {workspace} {rid}"
            )
        if isinstance(s, Remote):
            route = f"/api/workspaces/{s.workspace_id(workspace)}/missions/scheduled"
            receipt = values.receipt(s.post(route, {"requestID": rid, "config": merged}))
        else:
            receipt = s.services.schedules.create(s.actor, workspace, merged, request_id=rid)
        _report_receipt(s, receipt, "created")


def _report_receipt(s: Reporter, receipt: Receipt, verb: str) -> None:
    if s.json_output:
        emit_json(receipt.to_json())
        return
    doc = receipt.schedule
    if receipt.status == "unknown" or doc is None:
        console.print(
            Text(f"request {receipt.request_id}: unknown, no schedule was created with it"),
            soft_wrap=True,
        )
        return
    what = "created" if receipt.status == "created" else "created, since deleted:"
    heading = (
        f"{what} {doc['title']!r} ({state_text(doc)})"
        if verb == "receipt"
        else (
            f"{verb} {doc['title']!r}, paused: "
            f"`kalends schedule play {receipt.mission_id}` starts it"
        )
    )
    console.print(Text(heading), soft_wrap=True)
    console.print(Text(f"id {receipt.mission_id}, revision {doc['revision']}"), soft_wrap=True)
    console.print(Text(f"request {receipt.request_id}", style="dim"), soft_wrap=True)
    if receipt.repeated:
        console.print(Text("a repeated request: nothing was created again", style="yellow"))
    s.local_note()


def _current_config(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A schedule's configuration in the JSON form edits use (environment values unknown)."""
    profile = doc.get("profile") or {}
    return {
        "title": doc["title"],
        "objective": doc["objective"],
        "notes": doc["notes"],
        "profile": {"command": profile.get("command", []), "cwd": profile.get("cwd", ".")},
        "template": doc.get("template"),
        "policy": doc["policy"],
        "condition": doc.get("condition"),
        "end": doc.get("end"),
        "restart": doc.get("restart"),
    }


def _unchanged(name: str, value: Any, doc: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    if name == "profile":
        if (
            not isinstance(value, Mapping)
            or value.get("env")
            or (doc.get("profile") or {}).get("envNames")
        ):
            return False
        shown = {"command": value.get("command"), "cwd": value.get("cwd", ".")}
        return bool(shown == current["profile"])
    if name == "end" and isinstance(value, Mapping):
        blank = {"until": None, "within": None, "maxPassages": None}
        return {**blank, **value} == {**blank, **(current.get("end") or {})}
    return bool(name in current and current[name] == value)


def edit_command(
    schedule: ScheduleArgument,
    set_json: Annotated[
        str | None,
        typer.Option(
            "--set-json",
            metavar="JSON",
            help="Top-level fields to replace, as a JSON object (or @FILE), e.g. "
            '\'{"notes": "..."}\'; combines with the field flags.',
            show_default=False,
        ),
    ] = None,
    title: TitleOption = None,
    objective: ObjectiveOption = None,
    notes: NotesOption = None,
    command: CommandOption = None,
    arg: ArgOption = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="NAME=VALUE",
            help="Replace the whole environment by these; repeat.",
            show_default=False,
        ),
    ] = None,
    clear_env: Annotated[
        bool, typer.Option("--clear-env", help="Remove every environment variable.")
    ] = False,
    cwd: CwdOption = None,
    policy: PolicyOption = None,
    daily: DailyOption = None,
    every: EveryOption = None,
    at: AtOption = None,
    after: AfterOption = None,
    cron: CronOption = None,
    immediate: ImmediateOption = False,
    zone: ZoneOption = None,
    until: UntilOption = None,
    within: WithinOption = None,
    max_passages: MaxPassagesOption = None,
    restart: RestartOption = None,
    request_id: RequestIdOption = None,
    expected_revision: ExpectedRevisionOption = None,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Change a schedule's configuration; only the top-level fields that change are sent.

    With a passage pending only --objective and --notes may change. Changing --command,
    --arg or --cwd keeps the environment (its values are never shown); --env replaces it
    and --clear-env removes it. Changing any of them needs the run privilege (`kalends
    actor grant run ACTOR`); the other fields are the editor role's. With --json: the
    control outcome.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        flags = FieldFlags(
            title=title,
            objective=objective,
            notes=notes,
            command=command,
            args=arg,
            env=env,
            clear_env=clear_env,
            cwd=cwd,
            policy=policy,
            daily=daily,
            every=every,
            at=at,
            after=after,
            cron=cron,
            immediate=immediate,
            zone=zone,
            until=until,
            within=within,
            max_passages=max_passages,
            restart=restart,
        )
        rid, generated = _request_id(request_id)
        revision = _revision(expected_revision)
        given: dict[str, Any] = {}
        if set_json is not None:
            loaded = read_json(set_json, "set-json")
            if not isinstance(loaded, dict) or not loaded:
                raise InvalidInput(
                    "set-json: must be a JSON object naming at least one field", field="set-json"
                )
            given = loaded
        one = one_schedule(s, schedule)
        doc = one.detail()
        if doc.get("kind") == "tombstone":
            raise ControlConflict(
                f"schedule {schedule} is deleted", action="configure", reason="deleted"
            )
        current = _current_config(doc)
        changes = flags.changes({**current, **given})
        both = sorted(set(given) & set(changes))
        if both:
            raise InvalidInput(
                f"{both[0]}: give it by flag or in --set-json, not both", field=both[0]
            )
        if not given and not changes:
            raise InvalidInput(
                "edit: say what to change: a field flag (--title, --notes, --daily, …) "
                "or --set-json",
                field="edit",
            )
        wanted = {**given, **changes}
        sent = {k: v for k, v in wanted.items() if not _unchanged(k, v, doc, current)}
        if not sent:
            _report_unchanged(s, one, doc, rid, None if generated else rid)
            return
        expected, how = _expected(one, rid, generated, revision, int(doc["revision"]))
        _control_note(schedule, Action.CONFIGURE, rid, generated, expected, how)
        outcome = one.configure(sent, rid, expected)
        _report_outcome(s, outcome, schedule, f"changed: {', '.join(sorted(sent))}")


def _report_unchanged(
    s: Reporter, one: OneSchedule, doc: Mapping[str, Any], rid: str, given_rid: str | None
) -> None:
    """Every field already has the value asked for: nothing is sent. With the user's own
    request ID, a configure it already applied is reported as a repeat."""
    status = one.status(given_rid) if given_rid is not None else None
    applied = status is not None and status.status == "applied" and status.action == "configure"
    out = {
        "requestId": given_rid,
        "action": "configure",
        "status": "applied" if applied else "unchanged",
        "expectedRevision": status.expected_revision if applied and status else None,
        "revision": status.revision if applied and status else doc["revision"],
        "complete": status.complete if applied and status else True,
        "repeated": applied,
        "schedule": dict(doc),
    }
    if s.json_output:
        emit_json(out)
        return
    if applied:
        console.print(Text(f"request {rid} already applied this edit: nothing sent again"))
    else:
        console.print(Text("nothing to change: every field already has that value"))


# --- reads ------------------------------------------------------------------------------


def ls_command(
    workspace: WorkspaceArgument,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="ID",
            help="Start after this schedule ID (the cursor).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit", metavar="N", help=f"At most N per page (1-{MAX_PAGE}).", show_default=False
        ),
    ] = None,
    every_page: Annotated[
        bool, typer.Option("--all", help="Follow the cursor through every page.")
    ] = False,
    wide: WideOption = False,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Show a workspace's schedules in ID order, deleted ones as tombstones.

    State is what really holds: running, paused, stopped, interrupted (with why),
    finished (nothing left to launch: one-shot done, quota used up, until or within
    reached), deleting, deleted. A page holds at most eight; `--after ID` continues where
    one stopped. At 80 columns the title, state and next slot stack over the ID, state
    reason and zone; --wide shows every column. With --json: {"items": [...],
    "nextAfter": ID or null}.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        size = MAX_PAGE if limit is None else _whole(limit, "limit")
        if isinstance(s, Remote):
            route = f"/api/workspaces/{s.workspace_id(workspace)}/missions/scheduled"
            remote = s

            def page(cursor: str | None) -> dict[str, Any]:
                found: dict[str, Any] = remote.get(route, after=cursor, limit=size)
                return found

            items, next_after = _pages(page, after, every_page)
        else:
            schedules, actor_ = s.services.schedules, s.actor

            def page(cursor: str | None) -> dict[str, Any]:
                return schedules.page(actor_, workspace, after=cursor, limit=size).to_json()

            items, next_after = s.atomic(lambda: _pages(page, after, every_page), write=False)
    if json_output:
        emit_json({"items": items, "nextAfter": next_after})
        return
    if not items:
        console.print(Text("no schedules", style="dim"))
    else:
        console.print(list_view(items, wide=wide), soft_wrap=True)
    if next_after is not None:
        console.print(
            Text(f"more: kalends schedule ls {workspace} --after {next_after}", style="dim"),
            soft_wrap=True,
        )


def _pages(
    page: Callable[[str | None], dict[str, Any]], after: str | None, every_page: bool
) -> tuple[list[dict[str, Any]], str | None]:
    """The items of the page after ``after`` (of every page, with ``every_page``), and the
    cursor of the next page."""
    items: list[dict[str, Any]] = []
    cursor = after
    while True:
        found = page(cursor)
        items.extend(found["items"])
        cursor = found["nextAfter"]
        if not every_page or cursor is None:
            return items, cursor


def show_command(
    schedule: ScheduleArgument,
    runtime_dir: RuntimeDirOption = None,
    wide: WideOption = False,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Show a schedule: its state, next slot, pending passage, history and actions.

    The state is what really holds: finished, with the bound that ended it, when nothing
    is left to launch; Interrupted when no scheduler holds one with work left. Also the
    last error, the next slot in its policy's zone, counters, quota, the pending passage
    with the end of its output, the history, the available actions and why it is
    blocked. Never shows env values. At 80 columns the history stacks the slot over the
    settlement and the passage ID over its summary; --wide shows every column.

    The output is read from the runtime directory (--runtime-dir, KALENDS_RUNTIME_DIR or
    the default of `kalends worker`) when the passage ran on this machine; in server mode
    the server adds the output its own runtime holds. With --json: the detail projection,
    with "logTail" under "pending" when the output was read.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        # On a server, the server adds the output it holds (its runtime directory's).
        root = None if isinstance(s, Remote) else runtime_root(runtime_dir)
        doc = one_schedule(s, schedule).detail()
    pending = doc.get("pending")
    if root is not None and isinstance(pending, dict) and isinstance(pending.get("sessionId"), str):
        tail = passage_log_tail(root, pending["sessionId"])
        if tail is not None:
            pending["logTail"] = tail
    if json_output:
        emit_json(doc)
        return
    console.print(detail_view(doc, wide=wide), soft_wrap=True)


def preview_command(
    schedule: ScheduleArgument,
    count: Annotated[
        str | None,
        typer.Option(
            "--count",
            "-n",
            metavar="N",
            help="How many slots (1-100, default 5).",
            show_default=False,
        ),
    ] = None,
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """The next slots under the policy, end bounds and quota, DST-affected ones marked.

    Before the first Play: as if Play happened now.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        n = 5 if count is None else _whole(count, "count")
        slots, doc = one_schedule(s, schedule).preview(n)
    if json_output:
        emit_json(slots)
        return
    if not slots:
        console.print(Text("no slot is left", style="dim"))
        return
    before = "" if doc.get("firstPlayAt") else " (not played yet: as if Play happened now)"
    table = Table(
        title=f"next {len(slots)} slot(s) of {doc['title']!r}{before}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("#", "local time", "zone", "UTC", "DST"):
        table.add_column(column, no_wrap=True, justify="right" if column == "#" else "left")
    for i, slot in enumerate(slots, 1):
        local = datetime.fromisoformat(slot["local"]).strftime("%Y-%m-%d %H:%M:%S %a")
        mark = f"* {slot['dst']}" if slot.get("dst") else ""
        table.add_row(str(i), local, slot["zone"], slot["at"], mark)
    console.print(table)
    for note in sorted({slot["dst"] for slot in slots if slot.get("dst")}):
        console.print(Text(f"  * {_DST_LEGEND.get(note, note)}", style="dim"), soft_wrap=True)


def control_status_command(
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
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """The exact status of a control by its request ID: applied, rejected or unknown.

    Use it when a control's reply was lost. A read only: it never applies anything.
    """
    with local_or_remote(database, server, json_output, actor=actor) as s:
        rid = check_request_id(request_id.strip(), "request-id")
        revision, act = _revision(expected_revision), _action(action)
        status = one_schedule(s, schedule).status(rid, expected_revision=revision, action=act)
    if json_output:
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


def receipt_command(
    workspace: WorkspaceArgument,
    request_id: Annotated[
        str, typer.Argument(metavar="REQUEST_ID", help="The request ID `create` was sent with.")
    ],
    actor: ActorOption = None,
    database: DatabaseOption = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Which schedule a `create` request made, if any (for a lost creation reply). A read."""
    with local_or_remote(database, server, json_output, actor=actor) as s:
        rid = check_request_id(request_id.strip(), "request-id")
        if isinstance(s, Remote):
            route = f"/api/workspaces/{s.workspace_id(workspace)}/missions/scheduled"
            receipt = values.receipt(s.get(f"{route}/requests/{path_part(rid)}"))
        else:
            receipt = s.services.schedules.receipt(s.actor, workspace, rid)
        _report_receipt(s, receipt, "receipt")


_COMMANDS: dict[str, Any] = {
    "create": create_command,
    "edit": edit_command,
    "ls": ls_command,
    "show": show_command,
    "preview": preview_command,
    "control-status": control_status_command,
    "receipt": receipt_command,
}


# The commands in the order `--help` lists them.
for _name in (
    "create",
    "ls",
    "show",
    "play",
    "pause",
    "stop",
    "resume",
    "run-now",
    "check",
    "edit",
    "rm",
    "preview",
    "control-status",
    "receipt",
):
    schedule_app.command(_name)(_COMMANDS.get(_name) or _CONTROL_COMMANDS[_name])
