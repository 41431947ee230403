"""``kalends db``: migrate the database and show its schema revision."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kalends.bootstrap import database_revision, head_revision, upgrade_database
from kalends.cli.output import EXIT_FAILURE, console, emit_json, fail
from kalends.config import ENV_DATABASE_URL, mask_password, resolve_database_url
from kalends.errors import InvalidInput, StorageError

db_app = typer.Typer(
    help="Manage the kalends database: apply migrations, show the schema revision.",
    no_args_is_help=True,
)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        help=(
            f"Database URL (sqlite:///PATH, postgresql://USER@HOST/DB) or a SQLite file path; "
            f"default: ${ENV_DATABASE_URL}, else kalends.sqlite3 in the user data directory."
        ),
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


@db_app.command("upgrade")
def upgrade_command(database: DatabaseOption = None, json_output: JsonOption = False) -> None:
    """Migrate the database to the newest schema; safe to run again."""
    url = _resolve(database)
    try:
        revision = upgrade_database(url)
    except StorageError as exc:
        fail(exc, code=EXIT_FAILURE)
    _report({"database": mask_password(url), "revision": revision}, json_output)


@db_app.command("current")
def current_command(database: DatabaseOption = None, json_output: JsonOption = False) -> None:
    """Show the database's schema revision and whether it is up to date; changes nothing."""
    url = _resolve(database)
    head = head_revision()
    try:
        revision = database_revision(url)
    except StorageError as exc:
        fail(exc, code=EXIT_FAILURE)
    result = {
        "database": mask_password(url),
        "revision": revision,
        "head": head,
        "up_to_date": revision == head,
    }
    _report(result, json_output)


def _resolve(database: str | None) -> str:
    try:
        return resolve_database_url(database)
    except InvalidInput as exc:
        fail(exc)


def _report(result: dict[str, Any], json_output: bool) -> None:
    if json_output:
        emit_json(result)
        return
    revision = result["revision"] or "none (not migrated)"
    console.print(f"database: {result['database']}", highlight=False, soft_wrap=True)
    console.print(f"revision: {revision}", highlight=False, soft_wrap=True)
    if "up_to_date" in result and not result["up_to_date"]:
        console.print(
            f"head: {result['head']} (run `kalends db upgrade`)", highlight=False, soft_wrap=True
        )
