"""The ``kalends`` command: every top-level command of :mod:`kalends.cli.command_table`,
or only the one being run (:func:`command_line`)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import typer

from kalends import __version__
from kalends.cli.command_table import COMMANDS

__all__ = ["command_line", "main", "whole"]


def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit()


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
