"""Every command's help, as a person reads it in an 80-column terminal.

Each `--help` renders (exit 0) within 80 columns, truncates nothing (no `…` where a
metavar or a help text was cut), wraps its prose at the terminal's width (no line broken
short where the source's docstring broke it), says nothing stale (the CLI has had `kalends login`
since server mode came: "no login yet" is gone), speaks of workspaces where workspaces
are meant, and gives each command a one-line summary, so that a group's list of
commands never breaks a sentence across lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from rich.cells import cell_len
from typer.testing import CliRunner

from kalends.cli.main import app

WIDTH = 80
# A summary reads at a glance: at most two lines of a group's list of commands.
MAX_SUMMARY = 110
# A line of prose that Rich wrapped at 80 columns is this wide at least, unless the next
# word is this long (none in these helps is).
FULL_LINE = 52
CUT = re.compile(r"[\w/:.=\]-]…(\s*│|\s*$)")
runner = CliRunner()


def _commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``command`` (a group lists its own; typer's groups are click's)."""
    yield path, command
    if hasattr(command, "list_commands"):
        context = command.make_context(command.name, [], resilient_parsing=True)
        for name in command.list_commands(context):
            yield from _commands(command.get_command(context, name), (*path, name))


ROOT = typer.main.get_command(app)
COMMANDS = dict(_commands(ROOT, ()))
MISSION_GROUPS = ("workspace", "schedule", "passage")
LIST_ROLES = re.compile(r"\b(on|in) (each|the|a) list\b|\blist roles?\b", re.IGNORECASE)


def _help(path: tuple[str, ...]) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "kalends")
class TestEveryHelp:
    def test_it_fits_80_columns_and_cuts_nothing(self, path: tuple[str, ...]) -> None:
        text = _help(path)
        wide = [line for line in text.splitlines() if cell_len(line) > WIDTH]
        assert wide == []
        # Rich cuts a word too long for its cell with "…" right after its last letter, at
        # the cell's end; a "…" of the help's own prose has a space, a quote or a bracket
        # next to it.
        cut = [line for line in text.splitlines() if CUT.search(line)]
        assert cut == [], "a metavar or help text was cut"

    def test_its_prose_wraps_at_the_terminal_width(self, path: tuple[str, ...]) -> None:
        # The paragraphs before the first panel: each line but a paragraph's last is full
        # (a line break kept from the docstring left "runs" alone at 80 columns).
        prose = _help(path).split("╭", 1)[0].splitlines()
        paragraphs: list[list[str]] = [[]]
        for line in prose:
            if line.strip():
                paragraphs[-1].append(line.rstrip())
            elif paragraphs[-1]:
                paragraphs.append([])
        short = [
            line
            for paragraph in paragraphs
            if paragraph and not paragraph[0].lstrip().startswith("Usage:")
            for line in paragraph[:-1]
            if cell_len(line) < FULL_LINE
        ]
        assert short == [], "a line of the help's prose ends early"

    def test_it_says_nothing_stale(self, path: tuple[str, ...]) -> None:
        text = " ".join(_help(path).split())
        assert "no login yet" not in text
        if path[:1] and path[0] in MISSION_GROUPS:
            assert not LIST_ROLES.search(text), "roles in workspaces are not roles on a list"

    def test_its_summary_is_one_line(self, path: tuple[str, ...]) -> None:
        help_text = COMMANDS[path].help or ""
        summary = help_text.strip().split("\n\n")[0]
        assert "\n" not in summary, (
            f"the first paragraph of `{' '.join(path)}`'s help wraps: the list of "
            "commands shows its line breaks"
        )
        assert len(summary) <= MAX_SUMMARY, f"`{' '.join(path)}`'s summary: {summary!r}"
