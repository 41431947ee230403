"""``kalends doctor``: whether this kalends can do its work, one check a line, with a fix
for each that is not fine.

The checks: the database (reachable, migrated), the zone data and its version, the
runtime directory (writable), how passages are confined (proven by trying, as a passage
would, to read the server's files), supervision (``kalends service status``), the
scheduler's and the delivery loop's heartbeats (the leases they hold), the agent
programs running schedules name, and the reminder destinations (``--send-test`` sends
each a test message). It reads only: the runtime-directory check creates and removes
one temporary file, ``--send-test`` sends messages, and nothing is written anywhere.

Exit codes: 0 when no needed check failed (warnings do not count), 1 otherwise, 2 for
bad input.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from kalends.cli.doctor_checks import (
    Check,
    Status,
    confinement_checks,
    runtime_dir_check,
    skipped,
    zone_check,
)
from kalends.cli.output import EXIT_FAILURE, console, emit_json
from kalends.cli.passage_isolation import (
    PassageUserOption,
    RuntimeDirOption,
    SandboxOption,
    passage_isolation,
)
from kalends.cli.session import ActorOption, DatabaseOption, JsonOption, report_error
from kalends.config import resolve_database_url, resolve_runtime_dir
from kalends.errors import InvalidInput, KalendsError

__all__ = ["doctor_command"]

SendTestOption = Annotated[
    bool,
    typer.Option(
        "--send-test",
        help="Send a test message to each of the acting actor's reminder destinations "
        "(needs --as).",
    ),
]

_MARKS = {Status.OK: "ok", Status.WARN: "warn", Status.FAIL: "FAIL", Status.SKIPPED: "skip"}
_STYLES = {Status.FAIL: "bold red", Status.WARN: "yellow"}


def doctor_command(
    database: DatabaseOption = None,
    runtime_dir: RuntimeDirOption = None,
    passage_user: PassageUserOption = None,
    sandbox: SandboxOption = "auto",
    actor: ActorOption = None,
    send_test: SendTestOption = False,
    json_output: JsonOption = False,
) -> None:
    """Check that this kalends can do its work, with a fix for each failure.

    The database (reachable, migrated), the zone data, the runtime directory,
    how passages are confined (give it the options `kalends serve` gets),
    supervision, the worker nodes' heartbeats; with --as HANDLE also the
    scheduler and delivery loops (the leases they hold), the agent programs
    that actor's running schedules name and its reminder destinations
    (--send-test sends each a test message).

    Writes nothing. With --json: {"ok": bool, "checks": [...]}. Exit codes:
    0 no needed check failed (warnings do not count); 1 one did; 2 bad input.
    """
    try:
        if send_test and (actor is None or not actor.strip()):
            raise InvalidInput("send test: say whose destinations with --as HANDLE", field="actor")
        url = resolve_database_url(database)
        root = resolve_runtime_dir(runtime_dir)
        isolation, _ = passage_isolation(passage_user, sandbox, root, url, existing_only=True)
    except KalendsError as exc:
        report_error(exc, json_output)
    acting = actor.strip() if actor is not None and actor.strip() else None
    # The passage probes start processes (a sandbox, a Python): they run while this one
    # loads the database layer and reads, so the doctor stays quick.
    with ThreadPoolExecutor(max_workers=1) as pool:
        proofs = pool.submit(confinement_checks, isolation, url, root)
        from kalends.cli.doctor_state import database_check, database_checks  # noqa: PLC0415

        reached = database_check(url)
        checks = [reached, zone_check(), runtime_dir_check(root)]
        if reached.status is Status.OK:
            later = database_checks(url, acting, send_test=send_test, json_output=json_output)
        else:
            later = [skipped("supervision", "not checked: the database is not usable")]
        checks += [*proofs.result(), *later]
    healthy = not any(check.failed for check in checks)
    if json_output:
        emit_json({"ok": healthy, "checks": [check.to_json() for check in checks]})
    else:
        _print(checks)
    if not healthy:
        raise typer.Exit(EXIT_FAILURE)


def _print(checks: list[Check]) -> None:
    """An aligned table: status, name, then the fact with its fix below it, wrapped
    within the terminal's width."""
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for check in checks:
        style = _STYLES.get(check.status, "")
        fact = Text(check.fact)
        if check.fix is not None:
            fact.append(f"\nfix: {check.fix}", style="dim")
        table.add_row(Text(_MARKS[check.status], style=style), Text(check.name), fact)
    console.print(table)
