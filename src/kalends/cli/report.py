"""``kalends report``: a passage records its final report, from inside the passage.

The passage's environment says who it is: ``KALENDS_PASSAGE_TOKEN`` (signed by the
runtime) and ``KALENDS_RUNTIME_ROOT`` or ``KALENDS_PASSAGE_DIR``.

A passage launched by a server (``kalends serve``) also has ``KALENDS_API_URL``, the
server's own address: the report is then sent to ``POST /api/passages/report`` with
``Authorization: Passage <token>``, and the server records it. Every passage the runtime
launches also has ``KALENDS_REPORT_SPOOL``, its exchange directory: the report is first
written there, durably, with the token. Sent and recorded, the spooled copy is removed;
refused by the server, it is removed and the command exits non-zero; when the server
cannot be reached (a restart, an upgrade) the copy stays, the command says delivery is
deferred and exits 0, and the scheduler checks the token and takes the report when it
next observes the passage.

Without a server, a passage that can read the runtime's records (``KALENDS_RUNTIME_ROOT``
or ``KALENDS_PASSAGE_DIR``) records its report there itself; a confined one (run as
another user or in a sandbox) spools it for the scheduler.

This module imports nothing heavy at the top: it runs once per passage, often from a
script (the HTTP call uses the standard library's ``urllib``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NamedTuple

import typer

from kalends.cli.passage_calls import (
    ENV_API_URL,
    ENV_PASSAGE_TOKEN,
    EXIT_INVALID,
    INPUT_STATUSES,
    SEND_TIMEOUT,
    answer_json,
    direct_opener,
    error_fields,
    passage_request,
    refuse,
    server_base,
)
from kalends.errors import InvalidInput, KalendsError

# Named here, not imported: importing kalends.missions costs most of a second.
ENV_RUNTIME_ROOT = "KALENDS_RUNTIME_ROOT"
ENV_PASSAGE_DIR = "KALENDS_PASSAGE_DIR"
ENV_REPORT_SPOOL = "KALENDS_REPORT_SPOOL"

__all__ = [
    "ENV_API_URL",
    "Outcome",
    "ReportNotSent",
    "ReportRefused",
    "SentReport",
    "report_command",
    "send_report",
]

NO_TOKEN = f"no passage token: run `kalends report` from inside a passage ({ENV_PASSAGE_TOKEN})"
REPORT_PATH = "/api/passages/report"
# The kept report's name in the exchange directory (the runtime's ``records.REPORT``).
SPOOL_FILE = "report.json"
# The largest answer read back (a report answer is a few hundred bytes).
MAX_ANSWER_BYTES = 64 * 1024


class ReportRefused(KalendsError):
    """The server answered the report with an error; it recorded nothing."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message, status=status)
        self.status = status
        self.code = code


class ReportNotSent(KalendsError):
    """The server could not be reached, or its answer could not be read."""

    code = "server-unreachable"


class SentReport(NamedTuple):
    """The report the server recorded, as its answer says (``at`` in ISO 8601)."""

    outcome: str
    summary: str
    at: str


class Outcome(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"


def _locate(environ: Mapping[str, str]) -> tuple[str, Path, Path | None]:
    """The token, the runtime root and the passage directory named by the environment."""
    token = environ.get(ENV_PASSAGE_TOKEN, "")
    if not token:
        raise InvalidInput(NO_TOKEN)
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
        typer.Option(
            "--summary",
            # The number is kalends.missions.limits.MAX_SUMMARY_BYTES (not imported: heavy).
            help="What the passage did: at most 3,584 bytes as stored (UTF-8, JSON escapes "
            "counted), 896 four-byte characters.",
        ),
    ],
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the recorded report as JSON.")
    ] = False,
) -> None:
    """Record this passage's final report; the last report wins until the passage settles.

    Run it from inside a passage: the token in its environment names the passage. A
    passage started by `kalends serve` keeps its report in its own directory first, then
    sends it to that server; when the server is down, delivery is deferred and the
    scheduler takes the report later.

    Exit codes: 0 recorded, or kept for deferred delivery; 2 refused input (no or forged
    token, token of another passage, summary too long); 1 refused otherwise (the passage
    has settled, the disk failed). Nothing is kept when refused.
    """
    api_url = os.environ.get(ENV_API_URL, "")
    spool = os.environ.get(ENV_REPORT_SPOOL, "")
    if api_url:
        _report_over_http(
            api_url, outcome.value, summary, json_output, spool=Path(spool) if spool else None
        )
        return

    from kalends.clock import SystemClock  # noqa: PLC0415 (imported on use, as below)
    from kalends.missions.runtime.process import record_report, spool_report  # noqa: PLC0415

    local = os.environ.get(ENV_RUNTIME_ROOT) or os.environ.get(ENV_PASSAGE_DIR)
    try:
        if spool and not local:
            token = os.environ.get(ENV_PASSAGE_TOKEN, "")
            if not token:
                raise InvalidInput(NO_TOKEN)
            report = spool_report(
                Path(spool), token, outcome.value, summary, at=SystemClock().now()
            )
        else:
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
        refuse(exc, json_output)
    except OSError as exc:
        refuse(KalendsError(f"cannot record the report: {exc}"), json_output)
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json(
            {"outcome": report.outcome, "summary": report.summary, "at": report.at.isoformat()}
        )
    else:
        typer.echo(f"Recorded report: {report.outcome}.")


# --------------------------------------------------------------------------- over HTTP


def _report_over_http(
    api_url: str, outcome: str, summary: str, json_output: bool, *, spool: Path | None
) -> None:
    """Keeps the report in ``spool`` (when the passage has one), then sends it to the
    server at ``api_url``. Refusals exit as the local path does (2 for a refused token or
    body, 1 otherwise), with the kept copy removed; a server that cannot be reached leaves
    the copy for the scheduler and exits 0 (without a spool, 1)."""
    token = os.environ.get(ENV_PASSAGE_TOKEN, "")
    kept: SpooledReport | None = None
    unkept = ""
    try:
        if not token:
            raise InvalidInput(NO_TOKEN)
        if spool is not None:
            try:
                kept = write_spool(spool, token, outcome, summary)
            except OSError as exc:  # a full disk, say: sending may still succeed
                unkept = f" (nor could it be kept in {spool}: {exc})"
        sent = send_report(api_url, token, outcome, summary)
    except ReportNotSent as exc:
        if kept is None:
            refuse(ReportNotSent(exc.message + unkept), json_output)
        _deferred(kept, exc, json_output)
        return
    except ReportRefused as exc:
        if kept is not None:
            kept.remove()
        refuse(exc, json_output, code=EXIT_INVALID if exc.status in INPUT_STATUSES else None)
    except KalendsError as exc:
        refuse(exc, json_output)
    if kept is not None:
        kept.remove()
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json(
            {"outcome": sent.outcome, "summary": sent.summary, "at": sent.at, "delivery": "sent"}
        )
    else:
        typer.echo(f"Recorded report: {sent.outcome}.")


def _deferred(kept: SpooledReport, reason: ReportNotSent, json_output: bool) -> None:
    """The server could not take the report: the kept copy stays for the scheduler, once
    it passes the checks the server would have made (else it is removed and refused)."""
    from kalends.missions.runtime.process import check_report  # noqa: PLC0415 (rare path)

    try:
        check_report(kept.outcome, kept.summary)
    except KalendsError as exc:
        kept.remove()
        refuse(exc, json_output)
    note = (
        f"{reason.message}; delivery is deferred: the report is kept in {kept.path} and "
        "the scheduler takes it when it next looks at this passage"
    )
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json(
            {
                "outcome": kept.outcome,
                "summary": kept.summary,
                "at": kept.at,
                "delivery": "deferred",
                "reason": reason.message,
            }
        )
    else:
        typer.echo(f"Kept report: {kept.outcome} (delivery deferred).")
    typer.echo("note: " + note, err=True)


class SpooledReport(NamedTuple):
    """A report kept in the passage's exchange directory, as :func:`write_spool` wrote it."""

    path: Path
    outcome: str
    summary: str
    at: str

    def remove(self) -> None:
        """Remove the kept copy if it is still this one (a later report may replace it)."""
        try:
            found = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return
        if isinstance(found, dict) and found.get("at") == self.at:
            self.path.unlink(missing_ok=True)


def write_spool(spool: Path, token: str, outcome: str, summary: str) -> SpooledReport:
    """Write the report with the passage's token into the exchange directory ``spool``,
    whole and durably (aside, fsynced, renamed, the directory fsynced): what the scheduler
    takes (``ProcessRuntime`` observes it) when it was not delivered. Standard library
    only, as the rest of the HTTP path."""
    from datetime import UTC, datetime  # noqa: PLC0415

    at = datetime.now(UTC).isoformat()
    target = spool / SPOOL_FILE
    aside = spool / f".{SPOOL_FILE}.{os.getpid()}.tmp"
    data = json.dumps(
        {"version": 1, "token": token, "outcome": outcome, "summary": summary, "at": at}
    ).encode()
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(aside, target)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    directory = os.open(spool, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return SpooledReport(target, outcome, summary, at)


def send_report(
    api_url: str, token: str, outcome: str, summary: str, *, timeout: float = SEND_TIMEOUT
) -> SentReport:
    """POSTs the report to ``api_url`` + ``/api/passages/report`` with the passage token.

    :class:`ReportRefused` when the server answers an error (its code and message),
    :class:`ReportNotSent` when it cannot be reached or its answer is not a report, and
    :class:`InvalidInput` for a URL that is not ``http(s)://``.
    """
    from urllib.error import HTTPError, URLError  # noqa: PLC0415 (on use: a fast start)

    base = server_base(api_url)
    request = passage_request(base + REPORT_PATH, token, {"outcome": outcome, "summary": summary})
    try:
        with direct_opener().open(request, timeout=timeout) as answer:
            body = answer.read(MAX_ANSWER_BYTES)
    except HTTPError as exc:
        try:
            data = exc.read(MAX_ANSWER_BYTES)
        except OSError:
            data = b""
        finally:
            exc.close()
        raise _refused(exc.code, data) from None
    except (URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, URLError) else exc
        if isinstance(reason, TimeoutError):
            raise ReportNotSent(
                f"the kalends server at {base} did not answer within {timeout:g} s: the report "
                "may or may not be recorded; running the same report again is safe (the last "
                "report wins)"
            ) from None
        raise ReportNotSent(
            f"cannot send the report to the kalends server at {base}: {reason}"
        ) from None
    found = answer_json(body)
    if (
        not isinstance(found, dict)
        or not isinstance(found.get("outcome"), str)
        or not isinstance(found.get("summary"), str)
    ):
        raise ReportNotSent(f"the kalends server at {base} answered something that is no report")
    return SentReport(found["outcome"], found["summary"], str(found.get("at", "")))


def _refused(status: int, body: bytes) -> ReportRefused:
    """The server's error answer as a :class:`ReportRefused` naming its status and code."""
    code, message = error_fields(body)
    return ReportRefused(
        f"the kalends server refused the report ({status} {code}): {message}",
        status=status,
        code=code,
    )
