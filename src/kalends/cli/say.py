"""``kalends say``: a passage says something in its own conversation, from inside it.

The passage's environment says who it is (``KALENDS_PASSAGE_TOKEN``, signed by the
runtime) and where its server is (``KALENDS_API_URL``, set for a passage a server
launched): the message is sent to ``POST /api/passages/say`` with ``Authorization:
Passage <token>`` and becomes the last message of the passage's conversation, which
people read on the web, with ``kalends conversation show`` and over HTTP, and which a
schedule watching it hands to its next passage.

A conversation lives in the database, which a passage cannot read: without a server
the command says so and exits 2. The message is sent once; a lost answer is said as
such (it may or may not have been recorded), never sent again on its own.

This module imports nothing heavy at the top: it runs from scripts, often many times
per passage (the HTTP call uses the standard library's ``urllib``).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from kalends.cli.passage_calls import (
    SEND_TIMEOUT,
    CallNotSent,
    exit_code_of,
    passage_environment,
    refuse,
    send_once,
    server_base,
)
from kalends.errors import KalendsError

__all__ = ["SAY_PATH", "say_command", "send_message"]

SAY_PATH = "/api/passages/say"
# The most read from standard input for ``-``: a little over the longest message, so a
# longer one is refused by the server's own words rather than cut here.
MAX_STDIN_CHARS = 65_536 + 1


def say_command(
    text: Annotated[
        str,
        typer.Argument(help="What to say; - reads it from standard input.", show_default=False),
    ],
    note: Annotated[
        bool,
        typer.Option("--note", help="Say it as a note of the passage's own (role system)."),
    ] = False,
    unfinished: Annotated[
        bool,
        typer.Option(
            "--unfinished",
            help="The message is still being written: a watcher waits for it.",
        ),
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the recorded message as JSON.")
    ] = False,
) -> None:
    """Say something in this passage's own conversation.

    Run it from inside a passage launched by `kalends serve`: the token in its
    environment names the passage, and the message goes to that passage's conversation
    only. People read it on the web and with `kalends conversation show`.

    Exit codes: 0 recorded; 2 refused input (no token or server, a forged token, an
    empty or too long message); 1 refused otherwise (the passage has settled, the
    server cannot be reached: the message may or may not have been recorded).
    """
    try:
        token, api_url = passage_environment("say", "has no conversation to write to")
        said = sys.stdin.read(MAX_STDIN_CHARS) if text == "-" else text
        sent = send_message(
            api_url,
            token,
            said,
            role="system" if note else "assistant",
            complete=not unfinished,
        )
    except KalendsError as exc:
        refuse(exc, json_output, code=exit_code_of(exc))
    if json_output:
        from kalends.cli.output import emit_json  # noqa: PLC0415

        emit_json(sent)
    else:
        typer.echo(f"Said (message #{sent['seq']}).")


def send_message(
    api_url: str,
    token: str,
    text: str,
    *,
    role: str = "assistant",
    complete: bool = True,
    timeout: float = SEND_TIMEOUT,
) -> dict[str, Any]:
    """POSTs the message to ``api_url`` + ``/api/passages/say`` with the passage token;
    the message as the server recorded it. :class:`CallRefused` when the server answers
    an error, :class:`CallNotSent` when it cannot be reached or answers no message."""
    base = server_base(api_url)
    body = {"text": text, "role": role, "complete": complete}
    found = send_once(
        base,
        SAY_PATH,
        token,
        body,
        timeout=timeout,
        what="the message",
        before_again="read the conversation before saying it again",
    )
    if not isinstance(found, dict) or not isinstance(found.get("seq"), int):
        raise CallNotSent(f"the kalends server at {base} answered something that is no message")
    return found
