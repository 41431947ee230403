"""``kalends report``: a passage records its final report, from inside the passage.

The passage's environment says who it is: ``KALENDS_PASSAGE_TOKEN`` (signed by the
runtime) and ``KALENDS_RUNTIME_ROOT`` or ``KALENDS_PASSAGE_DIR``. This module imports
nothing heavy at the top: it runs once per passage, often from a script.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from kalends.errors import InvalidInput, KalendsError

# Named here, not imported: importing kalends.missions costs most of a second.
ENV_PASSAGE_TOKEN = "KALENDS_PASSAGE_TOKEN"
ENV_RUNTIME_ROOT = "KALENDS_RUNTIME_ROOT"
ENV_PASSAGE_DIR = "KALENDS_PASSAGE_DIR"

__all__ = ["Outcome", "report_command"]

EXIT_INVALID = 2
EXIT_FAILURE = 1


class Outcome(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"


def _refuse(error: KalendsError, json_output: bool) -> NoReturn:
    """One line on stderr (and the error object with --json); 2 for bad input, else 1."""
    from kalends.cli.output import emit_json, error_console  # noqa: PLC0415 (rich: on use)

    if json_output:
        emit_json({"error": {"code": error.code, "message": error.message}})
    error_console.print(
        "error: " + error.message.replace("\n", " "), markup=False, highlight=False, soft_wrap=True
    )
    raise typer.Exit(EXIT_INVALID if isinstance(error, InvalidInput) else EXIT_FAILURE)


def _locate(environ: Mapping[str, str]) -> tuple[str, Path, Path | None]:
    """The token, the runtime root and the passage directory named by the environment."""
    token = environ.get(ENV_PASSAGE_TOKEN, "")
    if not token:
        raise InvalidInput(
            f"no passage token: run `kalends report` from inside a passage ({ENV_PASSAGE_TOKEN})"
        )
    root_text, dir_text = environ.get(ENV_RUNTIME_ROOT, ""), environ.get(ENV_PASSAGE_DIR, "")
    passage_dir = Path(dir_text) if dir_text else None
    if root_text:
        root = Path(root_text)
    elif passage_dir is not None:
        root = passage_dir.parent.parent
    else:
        raise InvalidInput(
            f"no runtime: {ENV_RUNTIME_ROOT} or {ENV_PASSAGE_DIR} must name the passage's runtime"
        )
    return token, root, passage_dir


def report_command(
    outcome: Annotated[Outcome, typer.Argument(help="completed or failed.", case_sensitive=False)],
    summary: Annotated[
        str,
        typer.Option("--summary", help="What the passage did (at most 4,096 characters)."),
    ],
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the recorded report as JSON.")
    ] = False,
) -> None:
    """Record this passage's final report; the last report wins until the passage settles.

    Run it from inside a passage: the token in its environment names the passage.
    Exit codes: 0 recorded; 2 refused input (no or forged token, token of another passage,
    summary too long); 1 refused otherwise (the passage has settled, the disk failed).
    Nothing is written when refused.
    """
    from kalends.clock import SystemClock  # noqa: PLC0415 (imported on use, as below)
    from kalends.missions.runtime.process import record_report  # noqa: PLC0415

    try:
        token, root, passage_dir = _locate(os.environ)
        report = record_report(
            root,
            token,
            outcome.value,
            summary,
            at=SystemClock().now(),
            passage_dir=passage_dir,
        )
    except KalendsError as exc:
        _refuse(exc, json_output)
    except OSError as exc:
        _refuse(KalendsError(f"cannot record the report: {exc}"), json_output)
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json(
            {"outcome": report.outcome, "summary": report.summary, "at": report.at.isoformat()}
        )
    else:
        typer.echo(f"Recorded report: {report.outcome}.")
