"""The ``kalends`` command: every top-level command of :mod:`kalends.cli.command_table`,
or only the one being run (:func:`command_line`)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from functools import cache

import typer

from kalends import __version__
from kalends.cli.command_table import COMMANDS

__all__ = ["command_line", "main", "whole"]

# A line that starts a list item or an indented block keeps its line break.
_KEPT_BREAK = re.compile(r"\s|[-*•]\s|\d+[.)]\s|\$ ")


def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit()


def _reflowed(text: str) -> str:
    """A command's help with each paragraph's line breaks made spaces, so that the
    terminal wraps it at its own width (a docstring's lines are up to 96 characters, and
    at 80 columns each kept break left a stub line); a paragraph with a list or an
    indented line keeps its breaks."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if any(_KEPT_BREAK.match(line) for line in p.split("\n")[1:]) else p.replace("\n", " ")
        for p in paragraphs
    )


def _reflow(line: typer.Typer) -> None:
    """Every command's help under ``line`` :func:`_reflowed` (Typer keeps the breaks of
    all but the first paragraph)."""
    for info in line.registered_commands:
        text = info.help if info.help is not None else inspect.getdoc(info.callback)
        if text:
            info.help = _reflowed(text)
    for group in line.registered_groups:
        if group.typer_instance is not None:
            _reflow(group.typer_instance)


def command_line(names: Iterable[str]) -> typer.Typer:
    """The command line with the named top-level commands (each module imported here)."""
    line = typer.Typer(
        name="kalends",
        help="Recurring work that happens on time, exactly as promised.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    line.callback(invoke_without_command=True)(_root)
    for name in names:
        command = COMMANDS[name]
        if command.group:
            line.add_typer(command.load(), name=name)
        else:
            line.command(name)(command.load())
    _reflow(line)
    return line


@cache
def whole() -> typer.Typer:
    """The command line with every command (built once, on first use)."""
    return command_line(COMMANDS)


def __getattr__(name: str) -> typer.Typer:
    # ``app``, the whole command line, is built when it is first asked for: importing
    # this module for :func:`command_line` loads no command's module.
    if name == "app":
        return whole()
    raise AttributeError(name)


def main() -> None:
    whole()()
