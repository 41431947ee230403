"""``kalends profile``: the agent presets a schedule's profile can name.

``kalends profile presets`` lists each preset (``--agent NAME`` of ``kalends schedule
create`` and ``edit``, or ``profile.agent`` in a configuration): its argument list with
its placeholders, the program it runs, whether that program is on this machine's
passage ``PATH``, and how kalends reads what it reports. It reads no database.
"""

from __future__ import annotations

import shutil
from typing import Any

import typer

from kalends.cli.db import JsonOption
from kalends.cli.output import console, emit_json
from kalends.missions.agents import PLACEHOLDERS, PRESETS, passage_path

__all__ = ["presets_command", "profile_app"]

profile_app = typer.Typer(
    help="Runner profiles: the agent presets a schedule's command can come from.",
    no_args_is_help=True,
)


@profile_app.command("presets")
def presets_command(json_output: JsonOption = False) -> None:
    """List the agent presets, their commands, and whether each program is on PATH here.

    Each preset shows its argument list, the program it runs, whether that program is on
    the passages' PATH on this machine, and how kalends reads its final message. A
    preset's arguments hold placeholders, each replaced inside its own argument (no
    shell): {objective}, {notes}, {prompt} (the passage's whole start text), {input_file},
    {passage_id}, {workspace}; {{name}} is the literal text {name}. Use one with `kalends
    schedule create --agent NAME`.
    """
    path = passage_path({})
    found = [
        p.to_json(on_path=shutil.which(p.executable, path=path) is not None)
        for p in PRESETS.values()
    ]
    if json_output:
        emit_json({"path": path, "placeholders": list(PLACEHOLDERS), "presets": found})
        return
    for preset in found:
        _print(preset)
    console.print(
        f"placeholders: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; PATH {path}",
        markup=False,
        highlight=False,
    )


def _print(preset: dict[str, Any]) -> None:
    where = "on PATH" if preset["onPath"] else "NOT on PATH"
    lines = [
        f"{preset['name']}",
        f"  command   {' '.join(preset['command'])}",
        f"  program   {preset['executable']} ({where})",
        f"  final     {preset['finalMessage']}",
        f"  reports   {preset['reports']}",
    ]
    console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
