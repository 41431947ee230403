"""The ``kalends`` executable: ``kalends report`` starts without loading the rest.

A passage reports from inside its own process, often at the end of a short script, so
that one command loads only what it needs; every other command goes to the full
command line of :mod:`kalends.cli.main`.
"""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "report":
        import typer  # noqa: PLC0415

        from kalends.cli.report import report_command  # noqa: PLC0415

        app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        app.command()(report_command)
        app(args=sys.argv[2:], prog_name="kalends report")
        return
    from kalends.cli.main import main as full  # noqa: PLC0415

    full()
