"""The options of ``kalends schedule``: the schedule and control options every control
shares, and the configuration flags of ``create`` and ``edit``, defined once.

``create`` and ``edit`` take the same field flags (``edit`` reads ``--env`` as a
replacement and adds ``--clear-env``). :func:`field_flags` puts them in a command's
signature in place of its ``flags`` parameter and hands the command the
:class:`~kalends.cli.schedule_fields.FieldFlags` they make.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kalends.cli.schedule_fields import FieldFlags

__all__ = [
    "CREATE_FLAGS",
    "EDIT_FLAGS",
    "NO_FLAGS",
    "ExpectedRevisionOption",
    "RequestIdOption",
    "ScheduleArgument",
    "field_flags",
]

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
AgentOption = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="NAME",
        help="An agent preset (claude, codex, opencode, gemini, aider, shell; see `kalends "
        "profile presets`): its command unless --command or --arg is given, and its final "
        "message as the summary; 'none' removes it (edit).",
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
WatchOption = Annotated[
    list[str] | None,
    typer.Option(
        "--watch",
        metavar="CONVERSATION",
        help="Hand each passage the new messages of this conversation; repeat, in order. "
        "Replaces the list; 'none' watches nothing.",
        show_default=False,
    ),
]

ReplaceEnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--env",
        metavar="NAME=VALUE",
        help="Replace the whole environment by these; repeat.",
        show_default=False,
    ),
]
ClearEnvOption = Annotated[
    bool, typer.Option("--clear-env", help="Remove every environment variable.")
]

# A flag: its parameter's name, its option and its default. The parameter names are
# FieldFlags' fields but for --arg, which fills ``args``.
Flag = tuple[str, Any, Any]

_BEFORE_ENV: tuple[Flag, ...] = (
    ("title", TitleOption, None),
    ("objective", ObjectiveOption, None),
    ("notes", NotesOption, None),
    ("command", CommandOption, None),
    ("arg", ArgOption, None),
    ("agent", AgentOption, None),
)
_AFTER_ENV: tuple[Flag, ...] = (
    ("cwd", CwdOption, None),
    ("policy", PolicyOption, None),
    ("daily", DailyOption, None),
    ("every", EveryOption, None),
    ("at", AtOption, None),
    ("after", AfterOption, None),
    ("cron", CronOption, None),
    ("immediate", ImmediateOption, False),
    ("zone", ZoneOption, None),
    ("until", UntilOption, None),
    ("within", WithinOption, None),
    ("max_passages", MaxPassagesOption, None),
    ("restart", RestartOption, None),
    ("watch", WatchOption, None),
)
CREATE_FLAGS: tuple[Flag, ...] = (*_BEFORE_ENV, ("env", EnvOption, None), *_AFTER_ENV)
"""``create``'s field flags, in the order ``--help`` lists them."""
EDIT_FLAGS: tuple[Flag, ...] = (
    *_BEFORE_ENV,
    ("env", ReplaceEnvOption, None),
    ("clear_env", ClearEnvOption, False),
    *_AFTER_ENV,
)
"""``edit``'s field flags: ``--env`` replaces the environment, ``--clear-env`` removes it."""

NO_FLAGS = FieldFlags()
"""The ``flags`` default of a command :func:`field_flags` completes (never used by Typer)."""

_FIELD = {"arg": "args"}


def field_flags(
    flags: tuple[Flag, ...],
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command whose ``flags: FieldFlags`` parameter is replaced, where it stands, by
    the options ``flags`` lists; the command is called with the
    :class:`~kalends.cli.schedule_fields.FieldFlags` they make."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        parameters: list[inspect.Parameter] = []
        for parameter in signature.parameters.values():
            if parameter.name != "flags":
                parameters.append(parameter)
                continue
            parameters.extend(
                inspect.Parameter(
                    name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=hint
                )
                for name, hint, default in flags
            )
        names = [name for name, _, _ in flags]

        def run(**given: Any) -> None:
            made = FieldFlags(**{_FIELD.get(name, name): given.pop(name) for name in names})
            command(**given, flags=made)

        run.__name__ = command.__name__
        run.__qualname__ = command.__qualname__
        run.__module__ = command.__module__
        run.__doc__ = command.__doc__
        run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return run

    return decorate
