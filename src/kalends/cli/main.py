"""The ``kalends`` command."""

from __future__ import annotations

import typer

from kalends import __version__
from kalends.cli.actors import actor_app
from kalends.cli.db import db_app
from kalends.cli.feeds import feed_app
from kalends.cli.lists import list_app
from kalends.cli.login import login_command, logout_command, whoami_command
from kalends.cli.passage_isolation import doctor_command
from kalends.cli.passages import passage_app
from kalends.cli.preview import preview_command
from kalends.cli.reminders import reminders_app
from kalends.cli.report import report_command
from kalends.cli.schedules import schedule_app
from kalends.cli.serve import serve_command
from kalends.cli.tasks import task_app
from kalends.cli.tokens import login_link_command, password_command, token_app
from kalends.cli.worker import worker_command
from kalends.cli.workspaces import workspace_app

app = typer.Typer(
    name="kalends",
    help="Recurring work that happens on time, exactly as promised.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("preview")(preview_command)
app.add_typer(db_app, name="db")
app.add_typer(actor_app, name="actor")
app.add_typer(list_app, name="list")
app.add_typer(task_app, name="task")
app.add_typer(reminders_app, name="reminders")
app.add_typer(workspace_app, name="workspace")
app.add_typer(schedule_app, name="schedule")
app.add_typer(passage_app, name="passage")
app.command("worker")(worker_command)
app.command("report")(report_command)
app.command("doctor")(doctor_command)
app.command("serve")(serve_command)
app.add_typer(token_app, name="token")
app.add_typer(feed_app, name="feed")
app.command("login-link")(login_link_command)
app.command("password")(password_command)
app.command("login")(login_command)
app.command("logout")(logout_command)
app.command("whoami")(whoami_command)


@app.callback(invoke_without_command=True)
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit()


def main() -> None:
    app()
