"""What every task-store command shares: the database, the acting actor, and exit codes.

Without ``--server`` a command works on the database itself (local mode): whoever runs
it names the acting actor with ``--as`` or ``KALENDS_ACTOR``, and the services check that
actor's roles as they check a logged-in account's. With ``--server`` it acts as the
account ``kalends login`` logged in (:mod:`kalends.cli.remote`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, NoReturn, Protocol, TypeVar

import typer
from rich.text import Text

from kalends.bootstrap import Services, open_services
from kalends.cli.db import DatabaseOption, JsonOption
from kalends.cli.output import EXIT_FAILURE, EXIT_INVALID, console, emit_json, error_console
from kalends.errors import InvalidInput, KalendsError, Vocabulary

if TYPE_CHECKING:
    # (the services, and the domains behind them, load when a command asks for them)
    from kalends.auth import Accounts
    from kalends.auth.grants import Grants
    from kalends.cli.local_reminders import LocalReminders
    from kalends.cli.local_tasks import LocalTaskChanges
    from kalends.missions import ScheduleService, Workspaces
    from kalends.reminders.destinations import Destinations
    from kalends.tasks import Directory, TaskService
    from kalends.tasks.series import SeriesService

__all__ = [
    "ENV_ACTOR",
    "EXIT_CODES_HELP",
    "LOCAL_MODE_HELP",
    "ActorOption",
    "DatabaseOption",
    "ExpectOption",
    "JsonOption",
    "ListArgument",
    "Reporter",
    "Session",
    "TaskArgument",
    "expected_revision",
    "group_help",
    "optional_revision",
    "report_error",
    "session",
]

T = TypeVar("T")

ENV_ACTOR = "KALENDS_ACTOR"
LOCAL_MODE_HELP = (
    "Local mode (no --server): the command works on the database itself, acting as the "
    "actor --as HANDLE (or KALENDS_ACTOR) names, whose roles are checked as a server "
    "would check them."
)
EXIT_CODES_HELP = (
    "Exit codes: 0 done; 1 refused (not found, not allowed, conflict); 2 bad input. "
    "On 1 and 2 nothing is written; one line `error: …` goes to stderr and, with --json, "
    'an object {"error": {"code", "message", "details"}} to stdout.'
)


def group_help(summary: str, *paragraphs: str) -> str:
    """A command group's help: a one-line summary (what the list of commands shows), then
    each paragraph apart (the modes, the exit codes)."""
    return "\n\n".join((summary, *paragraphs))


ActorOption = Annotated[
    str | None,
    typer.Option(
        "--as",
        envvar=ENV_ACTOR,
        metavar="HANDLE",
        help="The acting actor (handle or ID) in local mode; ignored with --server.",
        show_default=False,
    ),
]
TaskArgument = Annotated[
    str, typer.Argument(metavar="REF", help="Task reference (e.g. K7Q2XW) or ID.")
]
ListArgument = Annotated[str, typer.Argument(metavar="LIST", help="List name or ID.")]
ExpectOption = Annotated[
    str | None,
    typer.Option(
        "--expect",
        metavar="REV",
        help="The task's revision you saw (`kalends task show REF`); a changed task is refused.",
        show_default=False,
    ),
]


class Reporter(Protocol):
    """What printing a command's result needs of its session, local or on a server."""

    @property
    def json_output(self) -> bool: ...

    @property
    def actor(self) -> str: ...

    def local_note(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Session:
    """One command's services, acting actor and output mode."""

    services: Services
    actor: str
    json_output: bool

    # What a command asks for in either mode (kalends.cli.task_client.TaskSession): here
    # the services themselves.

    @property
    def tasks(self) -> TaskService:
        return self.services.tasks

    @property
    def directory(self) -> Directory:
        return self.services.directory

    @property
    def series(self) -> SeriesService:
        return self.services.series

    @property
    def grants(self) -> Grants:
        return self.services.grants

    @property
    def changes(self) -> LocalTaskChanges:
        from kalends.cli.local_tasks import LocalTaskChanges  # noqa: PLC0415

        return LocalTaskChanges(self.services)

    # (kalends.cli.mission_client.MissionSession)

    @property
    def workspaces(self) -> Workspaces:
        return self.services.workspaces

    @property
    def schedules(self) -> ScheduleService:
        return self.services.schedules

    # (kalends.cli.reminder_client.ReminderSession)

    @property
    def reminders(self) -> LocalReminders:
        from kalends.cli.local_reminders import LocalReminders  # noqa: PLC0415

        return LocalReminders(self.services)

    @property
    def destinations(self) -> Destinations:
        return self.services.destinations

    # (kalends.cli.account_client.AccountSession)

    def accounts(self, *, password_stdin: bool = False) -> Accounts:
        """The token methods of the accounts; local mode asks no password."""
        # Imported when asked for: most commands never need the accounts.
        from kalends.auth import Accounts  # noqa: PLC0415

        return Accounts(self.services.store)

    @property
    def server(self) -> None:
        """No server: local mode."""
        return None

    def read_together(self, fn: Callable[[], T]) -> T:
        """Runs ``fn``'s reads in one read transaction, so that they agree with each other."""
        return self.atomic(fn, write=False)

    def atomic(self, fn: Callable[[], T], *, write: bool = True) -> T:
        """Runs several service calls as one transaction: all of them happen, or none."""
        return self.services.store.run(lambda _conn: fn(), write=write)

    def local_note(self) -> None:
        """Reminds a person (never a JSON reader) that nobody logged in."""
        if not self.json_output and self.actor:
            console.print(
                Text(f"local mode: acting as {self.actor}", style="dim"),
                soft_wrap=True,
            )


@contextmanager
def session(
    database: str | None, json_output: bool, *, actor: str | None = None, anonymous: bool = False
) -> Iterator[Session]:
    """Opens the services for one command and turns a kalends error into its exit code.

    The acting actor is checked before the database is opened, so a command
    refused for that reason creates nothing, not even the database file.
    """
    try:
        acting = "" if anonymous else _require_actor(actor)
        services = open_services(database)
        try:
            yield Session(services=services, actor=acting, json_output=json_output)
        finally:
            services.store.close()
    except KalendsError as exc:
        report_error(exc, json_output)


CLI_NAMES: Vocabulary = {
    "complete_subtree": "--subtree",
    "end_date": "until",
    "rule.interval_days": "every",
    "rule.days": "after-completion",
}
"""The services' fields and terms as the command line names its options."""


def report_error(error: KalendsError, json_output: bool) -> NoReturn:
    """Prints the error, in the options' words, and exits: 2 for bad input, 1 for every
    other refusal."""
    error = error.named(CLI_NAMES)
    code = EXIT_INVALID if isinstance(error, InvalidInput) else EXIT_FAILURE
    if json_output:
        details = json.loads(json.dumps(error.details, default=str))
        emit_json({"error": {"code": error.code, "message": error.message, "details": details}})
    # Built as Text, not markup: a message quoting user input may hold brackets.
    line = Text.assemble(("error:", "bold red"), " ", error.message.replace("\n", " "))
    error_console.print(line, soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def expected_revision(text: str | None) -> int:
    """The ``--expect`` revision; every task write needs one."""
    if text is None:
        raise InvalidInput(
            "expect: pass the task's current revision with --expect REV "
            "(`kalends task show REF` shows it)",
            field="expect",
        )
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidInput(
            f"expect: a revision is a whole number, got {text!r}", field="expect"
        ) from None


def optional_revision(text: str | None) -> int | None:
    return None if text is None else expected_revision(text)


def _require_actor(actor: str | None) -> str:
    if actor is None or not actor.strip():
        raise InvalidInput(
            "say who is acting: --as HANDLE or KALENDS_ACTOR=HANDLE in local mode, or "
            "`kalends login` and --server URL",
            field="actor",
        )
    return actor.strip()
