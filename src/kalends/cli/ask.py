"""``kalends ask``: a passage asks people a question, from inside it, and waits for the
answer.

The passage's environment says who it is (``KALENDS_PASSAGE_TOKEN``, signed by the
runtime) and where its server is (``KALENDS_API_URL``, set for a passage a server
launched). The question is sent to ``POST /api/passages/questions`` with
``Authorization: Passage <token>``; it is asked in the workspace of the passage's own
schedule, where people answer it on the web, with ``kalends question answer`` or over
HTTP. The command then reads it back every :data:`POLL_SECONDS` seconds until it is
answered, prints the answer, and, for an answer given in the kalends interface,
acknowledges that attempt (``POST …/received``): only then is the answer's hand-over
mark confirmed and the answer counted as the person's decision. When the session or
device that answered was signed out or revoked meanwhile, the server refuses the
acknowledgement (``principal-gone``): the answer is printed all the same and the
command exits 0, saying on stderr that the answer is not counted as a person's
decision, and why.

Questions live in the database, which a passage cannot read: without a server the
command says so and exits 2. A server that cannot be reached while waiting (a restart)
is asked again at the next poll.

This module imports nothing heavy at the top: it runs from scripts inside passages (the
HTTP calls use the standard library's ``urllib``).
"""

from __future__ import annotations

import time
from typing import Annotated, Any, NoReturn

import typer

from kalends.cli.passage_calls import (
    MAX_ANSWER_BYTES,
    SEND_TIMEOUT,
    CallNotSent,
    CallRefused,
    answer_lines,
    call,
    exit_code_of,
    passage_environment,
    refuse,
    server_base,
)
from kalends.errors import InvalidInput, KalendsError

__all__ = [
    "ASK_PATH",
    "EXIT_TIMEOUT",
    "POLL_SECONDS",
    "ask_command",
    "build_fields",
]

ASK_PATH = "/api/passages/questions"
# How often a waiting `kalends ask` reads its question back.
POLL_SECONDS = 2.0
# A text field's length when --text names none (kalends.questions.MAX_TEXT_LENGTH).
DEFAULT_TEXT_LENGTH = 4096

# The server's code for an acknowledgement refused because the session or device that
# answered is signed out or revoked (kalends.questions.PrincipalGone; named here, not
# imported, for a fast start).
PRINCIPAL_GONE = "principal-gone"
NOT_COUNTED = (
    "note: the answer is not counted as a person's decision: the session or device that "
    "answered it is signed out or revoked"
)

# No answer within --timeout: the question stays open for people to answer.
EXIT_TIMEOUT = 3


def _split(raw: str, sep: str, option: str, shape: str) -> tuple[str, str]:
    field, found, rest = raw.partition(sep)
    if not found or not field:
        raise InvalidInput(f"{option}: expected {shape}, got {raw!r}", field=option)
    return field, rest


def build_fields(
    choices: list[str], texts: list[str], confirms: list[str], labels: list[str]
) -> list[dict[str, Any]]:
    """The question's fields from the options: choices, then texts, then confirmations,
    each in the order given; a field's label is its ID unless ``--label`` names one.
    Field IDs, options and labels are checked by the server, which names the one it
    refuses."""
    fields: list[dict[str, Any]] = []
    for raw in choices:
        field, rest = _split(raw, "=", "--choice", "FIELD=a,b,c")
        options = [option.strip() for option in rest.split(",")]
        fields.append({"id": field, "kind": "choice", "label": field, "options": options})
    for raw in texts:
        field, found, most = raw.partition(":")
        if not field:
            raise InvalidInput(f"--text: expected FIELD[:MAXLEN], got {raw!r}", field="--text")
        length = DEFAULT_TEXT_LENGTH
        if found:
            if not most.isdigit():
                raise InvalidInput(
                    f"--text: MAXLEN must be a whole number, got {raw!r}", field="--text"
                )
            length = int(most)
        fields.append({"id": field, "kind": "text", "label": field, "maxLength": length})
    for raw in confirms:
        fields.append({"id": raw, "kind": "confirm", "label": raw})
    if not fields:
        raise InvalidInput(
            "no field: give at least one --choice, --text or --confirm", field="fields"
        )
    by_id = {str(field["id"]): field for field in fields}
    for raw in labels:
        field, label = _split(raw, "=", "--label", "FIELD=LABEL")
        if field not in by_id:
            raise InvalidInput(f"--label: no field {field!r} is asked", field="--label")
        by_id[field]["label"] = label
    return fields


# --------------------------------------------------------------------------- the calls


def call_server(
    base: str, path: str, token: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A GET (``body`` ``None``) or a JSON POST to the server with the passage token; the
    answer's JSON object. :class:`CallRefused` for an error answer, :class:`CallNotSent`
    when the server cannot be reached or answers no object."""
    found = call(base, path, token, body, timeout=SEND_TIMEOUT, max_bytes=MAX_ANSWER_BYTES)
    if not isinstance(found, dict):
        raise CallNotSent(f"the kalends server at {base} answered something that is no object")
    return found


# --------------------------------------------------------------------------- the command


def ask_command(
    prompt: Annotated[str, typer.Argument(help="What to ask.", show_default=False)],
    choice: Annotated[
        list[str] | None,
        typer.Option(
            "--choice",
            metavar="FIELD=a,b,c",
            help="A choice among options (repeatable).",
            show_default=False,
        ),
    ] = None,
    text: Annotated[
        list[str] | None,
        typer.Option(
            "--text",
            metavar="FIELD[:MAXLEN]",
            help=f"A text of at most MAXLEN characters (default {DEFAULT_TEXT_LENGTH}; "
            "repeatable).",
            show_default=False,
        ),
    ] = None,
    confirm: Annotated[
        list[str] | None,
        typer.Option(
            "--confirm", metavar="FIELD", help="A yes/no box (repeatable).", show_default=False
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            metavar="FIELD=LABEL",
            help="A field's label (else its ID; repeatable).",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option(
            "--tag",
            metavar="TAG",
            help="The decision it settles (a-z, 0-9 and -).",
            show_default=False,
        ),
    ] = None,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Print the question's ID and return at once.")
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            min=0.1,
            help="Wait at most this many seconds (else until answered).",
            show_default=False,
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Ask people a question and wait for the answer.

    Run it from inside a passage launched by `kalends serve`: the question is
    asked in the workspace of the passage's schedule. Fields come in this
    order: choices, texts, confirmations. The answer is printed as
    FIELD=VALUE lines (--json: exactly).

    Exit codes: 0 answered (or asked, with --no-wait); 3 no answer within
    --timeout (the question's ID is printed: it stays open); 2 refused input
    (no token or server, a forged token, a bad field); 1 refused otherwise
    (the passage has settled, the question was withdrawn, the server cannot
    be reached).
    """
    try:
        token, api_url = passage_environment("ask", "cannot ask")
        base = server_base(api_url)
        fields = build_fields(choice or [], text or [], confirm or [], label or [])
        body: dict[str, Any] = {"prompt": prompt, "fields": fields}
        if tag is not None:
            body["tag"] = tag
        asked = call_server(base, ASK_PATH, token, body)
    except KalendsError as exc:
        refuse(exc, json_output, code=exit_code_of(exc))
    question = str(asked.get("id", ""))
    if no_wait:
        if json_output:
            from kalends.cli.output import emit_json  # noqa: PLC0415

            emit_json(asked)
        else:
            typer.echo(question)
        return
    _wait(base, token, question, timeout, json_output)


def _wait(base: str, token: str, question: str, timeout: float | None, json_output: bool) -> None:
    """Reads the question back until it is answered (then prints the answer and
    acknowledges an interface answer), withdrawn, or ``timeout`` seconds have passed."""
    path = f"{ASK_PATH}/{question}"
    deadline = None if timeout is None else time.monotonic() + timeout
    unreachable_said = False
    while True:
        try:
            found = call_server(base, path, token)
        except CallRefused as exc:
            refuse(exc, json_output)
        except CallNotSent as exc:
            if not unreachable_said:
                typer.echo(f"note: {exc.message}; asking again every {POLL_SECONDS:g} s", err=True)
                unreachable_said = True
        else:
            state = found.get("state")
            if state == "answered":
                _answered(base, token, question, found, json_output)
                return
            if state == "withdrawn":
                refuse(KalendsError(f"question {question} was withdrawn"), json_output)
        if deadline is not None and time.monotonic() + POLL_SECONDS > deadline:
            _timed_out(question, timeout, json_output)
        time.sleep(POLL_SECONDS)


def _timed_out(question: str, timeout: float | None, json_output: bool) -> NoReturn:
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json({"questionId": question, "state": "open", "timedOut": True})
    else:
        typer.echo(question)
    typer.echo(f"note: no answer within {timeout:g} s; question {question} stays open", err=True)
    raise typer.Exit(EXIT_TIMEOUT)


def _answered(
    base: str, token: str, question: str, found: dict[str, Any], json_output: bool
) -> None:
    """Prints the answer, then acknowledges an interface answer's attempt."""
    answer = found.get("answer")
    values: dict[str, Any] = answer if isinstance(answer, dict) else {}
    attempt = found.get("attemptId")
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json(
            {
                "questionId": question,
                "answer": values,
                "answeredVia": found.get("answeredVia"),
                "attemptId": attempt,
            }
        )
    else:
        for line in answer_lines(found):
            typer.echo(line)
    if not isinstance(attempt, str) or not attempt:
        return
    try:
        call_server(base, f"{ASK_PATH}/{question}/received", token, {"attemptId": attempt})
    except KalendsError as exc:
        # The answer was received all the same; its hand-over stays unconfirmed.
        gone = isinstance(exc, CallRefused) and exc.code == PRINCIPAL_GONE
        said = f"note: the answer's receipt was not acknowledged: {exc.message}"
        typer.echo(NOT_COUNTED if gone else said, err=True)
