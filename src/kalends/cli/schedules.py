"""``kalends schedule``: durable schedule documents in a workspace and their controls.

A schedule is created paused and never starts work until Play. Every control
(play, pause, stop, resume, run-now, check, edit, rm) carries a request ID and
the revision the caller saw: a repeated request ID returns the original outcome
and never acts twice; a stale revision is refused (``revision-conflict``) and
changes nothing. When ``--request-id`` is absent one is generated, and when
``--expected-revision`` is absent the current revision is read; either is then
printed on standard error before the control is sent, so a user whose reply was
lost can ask ``kalends schedule control-status`` (or ``receipt`` for a creation).

The commands live in modules of one concept each: the options (:mod:`.schedule_options`)
and what the configuration flags change (:mod:`.schedule_fields`), creation and edits
(:mod:`.schedule_edits`), the controls (:mod:`.schedule_controls`) and the reads
(:mod:`.schedule_reads`); each calls the session's
:class:`~kalends.cli.mission_client.SchedulesClient` alike in local and server mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from kalends.cli.commands import session_command
from kalends.cli.remote import SERVER_MODE_HELP
from kalends.cli.schedule_controls import CONTROL_COMMANDS, control_status_command
from kalends.cli.schedule_edits import create_command, edit_command, receipt_command
from kalends.cli.schedule_ledger import ledger_command, why_command
from kalends.cli.schedule_reads import ls_command, preview_command, show_command
from kalends.cli.schedule_views import detail_view
from kalends.cli.session import EXIT_CODES_HELP, LOCAL_MODE_HELP, group_help

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

_COMMANDS: dict[str, Callable[..., Any]] = {
    "create": create_command,
    "edit": edit_command,
    "ls": ls_command,
    "show": show_command,
    "preview": preview_command,
    "ledger": ledger_command,
    "why": why_command,
    "control-status": control_status_command,
    "receipt": receipt_command,
    **CONTROL_COMMANDS,
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
    "ledger",
    "why",
    "control-status",
    "receipt",
):
    session_command(schedule_app, _name)(_COMMANDS[_name])
