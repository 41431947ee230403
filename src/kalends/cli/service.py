"""``kalends service``: keep ``kalends serve`` running under a systemd user unit.

``install`` writes ``~/.config/systemd/user/kalends.service`` (``Restart=on-failure``,
the database URL, runtime directory, address and port given here), reloads systemd and
enables it; ``--now`` starts it too, unless a server already listens on its address.
``on`` and ``off`` set the service-wide preference explicitly (the first human Play of
a schedule follows it: unset means ON) and enable or disable the unit; ``uninstall``
removes the unit; ``status`` says whether it is installed, enabled and active, how it
last exited, the preference, and whether ``loginctl enable-linger`` is advised.

Where no systemd user manager answers, every command but ``status`` and ``off`` is
refused with a sentence saying what to run instead (exit 1, nothing written). Bad input
exits 2 before the database is opened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from kalends.bootstrap import Launch, open_services
from kalends.cli.output import console, emit_json
from kalends.cli.passage_isolation import RuntimeDirOption
from kalends.cli.serve_options import DEFAULT_HOST, DEFAULT_PORT, check_host, check_port
from kalends.cli.session import DatabaseOption, JsonOption, report_error
from kalends.config import resolve_database_url
from kalends.errors import InvalidInput, KalendsError
from kalends.supervision import (
    Outcome,
    Status,
    SupervisionUnavailable,
    Supervisor,
    Systemd,
    env_file_path,
    kalends_command,
    render_unit,
)

__all__ = ["service_app"]

service_app = typer.Typer(
    help=(
        "Keep `kalends serve` running under a systemd user unit.\n\n"
        "The unit is ~/.config/systemd/user/kalends.service. The first Play of a schedule "
        "installs and enables it unless `kalends service off` was run."
    ),
    no_args_is_help=True,
)

HostOption = Annotated[
    str,
    typer.Option(
        "--host", metavar="ADDRESS", envvar="KALENDS_HOST", help="The address the unit serves on."
    ),
]
PortOption = Annotated[
    str,
    typer.Option(
        "--port", metavar="PORT", envvar="KALENDS_PORT", help="The port the unit serves on."
    ),
]
NowOption = Annotated[
    bool,
    typer.Option(
        "--now",
        help="Start it now too (not when a server already listens on its address).",
    ),
]
StopOption = Annotated[bool, typer.Option("--now", help="Stop it now too.")]


def _launch(runtime_dir: str | None, host: str, port: str) -> Launch:
    """What the unit runs, checked before anything is opened: port 0 is refused (the
    unit's clients need to find it)."""
    number = check_port(port)
    if number == 0:
        raise InvalidInput("port: the unit needs a fixed port, not 0", field="port")
    if runtime_dir is not None and not runtime_dir.strip():
        raise InvalidInput("runtime directory must not be empty", field="runtime_dir")
    return Launch(
        command=kalends_command(),
        # (none given: the served process finds its default as `kalends serve` does)
        runtime_dir=None if runtime_dir is None else Path(runtime_dir).expanduser().resolve(),
        host=check_host(host),
        port=number,
    )


def _check_unit(database: str | None, launch: Launch) -> None:
    """Refuses, before the database is opened, a unit that could not be written (a
    database URL with a password that the environment file does not name)."""
    url = resolve_database_url(database)
    render_unit(replace(launch, database_url=url), env_file=env_file_path())


def _require_systemd() -> None:
    """Refuses before the database is opened when no systemd user manager answers."""
    reason = Systemd(time.monotonic).unavailable()
    if reason is not None:
        raise SupervisionUnavailable(reason)


def _supervisor(database: str | None, launch: Launch | None = None) -> Supervisor:
    services = open_services(database, launch=launch)
    assert services.supervisor is not None  # (open_services always wires one)
    return services.supervisor


def _say(outcome: Outcome, json_output: bool) -> None:
    if json_output:
        emit_json(outcome.to_json())
        return
    console.print(Text(outcome.message), soft_wrap=True)
    if outcome.unit is not None:
        console.print(Text(f"unit: {outcome.unit}", style="dim"), soft_wrap=True)


def _unit_command(
    name: str, help_text: str, change: Callable[[Supervisor, bool], Outcome]
) -> Callable[..., None]:
    """Registers ``kalends service NAME``, a command that writes the unit (``install``,
    ``on``): the launch and the unit checked and systemd required before the database is
    opened, then ``change`` made (with ``--now``) and its outcome said; a refusal is
    reported and exits."""

    def command(
        database: DatabaseOption = None,
        runtime_dir: RuntimeDirOption = None,
        host: HostOption = DEFAULT_HOST,
        port: PortOption = str(DEFAULT_PORT),
        now: NowOption = False,
        json_output: JsonOption = False,
    ) -> None:
        try:
            launch = _launch(runtime_dir, host, port)
            _check_unit(database, launch)
            _require_systemd()
            outcome = change(_supervisor(database, launch), now)
        except KalendsError as exc:
            report_error(exc, json_output)
        _say(outcome, json_output)

    command.__doc__ = help_text
    return service_app.command(name)(command)


install_command = _unit_command(
    "install",
    "Write the unit, reload systemd and enable it (the preference is left as it is).",
    lambda supervisor, now: supervisor.install(start=now),
)


@service_app.command("uninstall")
def uninstall_command(database: DatabaseOption = None, json_output: JsonOption = False) -> None:
    """Stop and disable the unit and remove it (the preference is left as it is)."""
    try:
        _require_systemd()
        outcome = _supervisor(database).uninstall()
    except KalendsError as exc:
        report_error(exc, json_output)
    _say(outcome, json_output)


on_command = _unit_command(
    "on",
    "Turn supervision on: the preference ON, the unit written and enabled.",
    lambda supervisor, now: supervisor.turn_on(start=now),
)


@service_app.command("off")
def off_command(
    database: DatabaseOption = None, now: StopOption = False, json_output: JsonOption = False
) -> None:
    """Turn supervision off: the preference OFF, the unit disabled.

    No Play turns it on again; the unit stays installed (--now also stops it)."""
    try:
        outcome = _supervisor(database).turn_off(stop=now)
    except KalendsError as exc:
        report_error(exc, json_output)
    _say(outcome, json_output)


@service_app.command("status")
def status_command(database: DatabaseOption = None, json_output: JsonOption = False) -> None:
    """Show the unit's state, the preference and advice on lingering.

    Whether the unit is installed, enabled and active, how it last exited, the
    supervision preference and whether lingering is advised; changes nothing."""
    try:
        status = _supervisor(database).status()
    except KalendsError as exc:
        report_error(exc, json_output)
    if json_output:
        emit_json(status.to_json())
        return
    for line in _status_lines(status):
        console.print(Text(line), soft_wrap=True)


def _status_lines(status: Status) -> list[str]:
    def word(value: Any) -> str:
        return "unknown" if value is None else str(value)

    lines = [f"unit: {status.unit}", f"installed: {'yes' if status.installed else 'no'}"]
    if status.available:
        lines += [
            f"enabled: {word(status.enabled) if status.installed else 'no (not installed)'}",
            f"active: {word(status.active)}",
            f"last exit: {status.last_exit or 'none'}",
        ]
    else:
        lines.append(f"systemd: unavailable — {status.unavailable}")
    lines.append(f"preference: {status.preference.describe()}")
    if status.linger is not None:
        lines.append(f"linger: {status.linger}")
    return lines
