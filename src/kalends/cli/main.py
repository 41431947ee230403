"""The ``kalends`` command."""

from __future__ import annotations

import typer

from kalends import __version__
from kalends.cli.db import db_app
from kalends.cli.preview import preview_command

app = typer.Typer(
    name="kalends",
    help="Recurring work that happens on time, exactly as promised.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("preview")(preview_command)
app.add_typer(db_app, name="db")


@app.callback(invoke_without_command=True)
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit()


def main() -> None:
    app()
