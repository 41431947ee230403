"""``kalends decide``: a passage settles one of its own open questions itself, as the
coordinator, from inside it.

The passage's environment says who it is (``KALENDS_PASSAGE_TOKEN``, signed by the
runtime) and where its server is (``KALENDS_API_URL``, set for a passage a server
launched). The answer is sent to ``POST /api/passages/questions/{question}/decide``
with ``Authorization: Passage <token>`` and recorded as the passage's own decision
(``answeredVia: "coordinator"``): it needs no hand-over mark and is never shown or
counted as a person's decision (seed 002, "Wayfinder human decision mark": the
coordinator's own decision, ``decidedBy: "coordinator"``). Only the passage's own open
question can be decided; another passage's question is, to it, one that does not exist.

Questions live in the database, which a passage cannot read: without a server the
command says so and exits 2. The decision is sent once; a lost answer is said as such
(it may or may not have been recorded), never sent again on its own.

This module imports nothing heavy at the top: it runs from scripts inside passages (the
HTTP call uses the standard library's ``urllib``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from uuid import UUID

import typer

from kalends.cli.passage_calls import (
    SEND_TIMEOUT,
    CallNotSent,
    answer_lines,
    exit_code_of,
    passage_environment,
    refuse,
    send_once,
    server_base,
)
from kalends.errors import InvalidInput, KalendsError

__all__ = ["DECIDED_WORDS", "QUESTIONS_PATH", "decide_command", "send_decision"]

QUESTIONS_PATH = "/api/passages/questions"

DECIDED_WORDS = "decided by the coordinator (this passage), never counted as a person's decision"


def question_id(raw: str) -> str:
    """The question's ID in its canonical form; :class:`InvalidInput` for anything that
    is not one (checked here, so that nothing is sent)."""
    try:
        return str(UUID(raw.strip()))
    except ValueError:
        raise InvalidInput(f"question: not a question ID: {raw!r}", field="question") from None


def answer_object(raw: str) -> dict[str, Any]:
    """The ``--answer`` JSON object; :class:`InvalidInput` when it is no JSON or no
    object. Whether its values fit the question's fields is the server's to say (it
    names the field it refuses)."""
    try:
        parsed: object = json.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f"--answer: not JSON: {exc}", field="answer") from None
    if not isinstance(parsed, dict):
        raise InvalidInput(
            f'--answer: expected a JSON object such as {{"go": "yes"}}, got {raw!r}',
            field="answer",
        )
    return parsed


def send_decision(
    api_url: str,
    token: str,
    question: str,
    answer: dict[str, Any],
    *,
    timeout: float = SEND_TIMEOUT,
) -> dict[str, Any]:
    """POSTs the passage's decision of ``question`` with its token; the question as the
    server recorded it. :class:`~kalends.cli.passage_calls.CallRefused` when the server
    answers an error (nothing was recorded), :class:`CallNotSent` when it cannot be
    reached or answers no question."""
    base = server_base(api_url)
    found = send_once(
        base,
        f"{QUESTIONS_PATH}/{question}/decide",
        token,
        {"answer": answer},
        timeout=timeout,
        what="the decision",
        before_again="read the question before deciding again",
    )
    if not isinstance(found, dict) or not isinstance(found.get("answer"), dict):
        raise CallNotSent(f"the kalends server at {base} answered something that is no question")
    return found


def decide_command(
    question: Annotated[
        str,
        typer.Argument(
            metavar="QUESTION",
            help="The ID of the passage's own open question (what `kalends ask` printed).",
            show_default=False,
        ),
    ],
    answer: Annotated[
        str,
        typer.Option(
            "--answer",
            metavar="JSON",
            help='One value per field, as a JSON object, e.g. {"go": "yes", "ok": true}.',
            show_default=False,
        ),
    ],
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the decided question as JSON.")
    ] = False,
) -> None:
    """Decide one of this passage's own open questions itself.

    Run it from inside a passage launched by `kalends serve`, with a question
    the passage asked (`kalends ask --no-wait` prints its ID). The answer is
    recorded as the coordinator's (the passage's) own decision: it is never
    shown or counted as a person's decision, which only an answer given in the
    kalends interface can be. Prints who decided and the answer as FIELD=VALUE
    lines (--json: the question).

    Exit codes: 0 decided; 2 refused input (no token or server, a forged token,
    a malformed question ID or answer, a value a field refuses); 1 refused
    otherwise (another passage's question or none, a question no longer open,
    the passage has settled, the server cannot be reached).
    """
    try:
        token, api_url = passage_environment("decide", "has no questions")
        server_base(api_url)
        decided = send_decision(api_url, token, question_id(question), answer_object(answer))
    except KalendsError as exc:
        refuse(exc, json_output, code=exit_code_of(exc))
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json(decided)
        return
    typer.echo(f"question {decided.get('id')}: {DECIDED_WORDS}")
    for line in answer_lines(decided):
        typer.echo(line)
