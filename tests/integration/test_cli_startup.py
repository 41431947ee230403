"""A command loads only its own module: ``kalends preview`` starts without the database
layer, the HTTP client or any domain but civil time, and each command run alone reads and
behaves exactly as it does in the whole command line."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from kalends.cli.command_table import COMMANDS
from kalends.cli.main import command_line, whole

runner = CliRunner()
RULE = '{"kind":"daily","time":"02:30","zone":"America/New_York"}'


def imported_by(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Runs ``kalends ARGS`` as the executable does and returns what it printed and the
    top-level packages it imported."""
    script = (
        "import sys, atexit\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sys.modules)))\n"
        f"sys.argv = ['kalends', *{list(args)!r}]\n"
        "from kalends.cli.entry import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    modules = done.stderr.rsplit("MODULES ", 1)[-1].split()
    return done, {name.split(".")[0] for name in modules} | set(modules)


def test_preview_runs_without_the_database_layer_or_the_http_client() -> None:
    done, modules = imported_by(
        "preview", "--rule", RULE, "--after", "2026-03-07T00:00:00Z", "--count", "2", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert '"sentence"' in done.stdout
    assert "kalends.civil" in modules  # not vacuous: the list is the process's own
    assert {"sqlalchemy", "httpx", "kalends.storage", "kalends.tasks"} & modules == set()


def test_a_task_command_does_not_load_the_schedule_commands() -> None:
    done, modules = imported_by("task", "--help")
    assert done.returncode == 0, done.stderr
    assert "kalends.cli.tasks" in modules
    assert {"kalends.cli.schedules", "kalends.cli.serve", "kalends.cli.preview"} & modules == set()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_alone_reads_as_in_the_whole_command_line(name: str) -> None:
    alone = runner.invoke(command_line([name]), [name, "--help"], prog_name="kalends")
    everything = runner.invoke(whole(), [name, "--help"], prog_name="kalends")
    assert alone.exit_code == 0, alone.output
    assert alone.output == everything.output
    assert f"kalends {name}" in alone.output


def test_the_whole_command_line_has_every_command_of_the_table() -> None:
    group = typer.main.get_command(whole())
    assert isinstance(group, typer.core.TyperGroup)
    assert set(group.commands) == set(COMMANDS)


def test_an_unknown_command_or_an_option_first_gets_the_whole_command_line() -> None:
    done, _ = imported_by("tsk", "ls")
    assert done.returncode == 2
    assert "No such command 'tsk'" in done.stderr
    version, _ = imported_by("--version")
    assert version.returncode == 0 and version.stdout.strip()
