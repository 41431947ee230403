"""What a passage's commands (``kalends report``, ``kalends say``, ``kalends ask``,
``kalends decide``) share to call the server that launched them: the token and the
server read from the passage's environment, a request carrying the token, an opener that
no proxy stands in front of, an error answer's code and message, the call itself (and a
call sent once), how an answer is printed, and how a refusal is said and exits.

Standard library only, and imported on use: these commands run from scripts, often
many times per passage, and must start fast.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, NoReturn

from kalends.errors import InvalidInput, KalendsError

if TYPE_CHECKING:
    from urllib.request import Request

__all__ = [
    "ENV_API_URL",
    "ENV_PASSAGE_TOKEN",
    "EXIT_FAILURE",
    "EXIT_INVALID",
    "INPUT_STATUSES",
    "MAX_ANSWER_BYTES",
    "SEND_TIMEOUT",
    "CallNotSent",
    "CallRefused",
    "answer_json",
    "answer_lines",
    "call",
    "direct_opener",
    "error_fields",
    "exit_code_of",
    "passage_environment",
    "passage_request",
    "refuse",
    "send_once",
    "server_base",
]


def passage_request(url: str, token: str, body: dict[str, Any]) -> Request:
    """A JSON POST to ``url`` with ``Authorization: Passage <token>``."""
    from urllib.request import Request  # noqa: PLC0415

    return Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Passage {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
    )


def direct_opener() -> Any:
    """An opener that goes straight to the server: its address is this machine's own, so
    no proxy from the environment may stand in between."""
    from urllib.request import ProxyHandler, build_opener  # noqa: PLC0415

    return build_opener(ProxyHandler({}))


def answer_json(body: bytes) -> Any:
    """The answer's JSON value, ``None`` when it is not JSON."""
    try:
        return json.loads(body)
    except ValueError:
        return None


def error_fields(body: bytes) -> tuple[str, str]:
    """An error answer's ``code`` and ``message`` (``http-error`` and the start of the
    body's text when it does not say them)."""
    found = answer_json(body)
    fields: dict[str, Any] = found if isinstance(found, dict) else {}
    code, message = fields.get("code"), fields.get("message")
    if not isinstance(code, str) or not code:
        code = "http-error"
    if not isinstance(message, str) or not message:
        text = body.decode("utf-8", errors="replace").strip()
        message = text[:200] if text else "no reason given"
    return code, message


# --- what the commands share ------------------------------------------------------------

# Exit codes of a passage's commands: 2 for refused input, 1 for any other refusal.
EXIT_INVALID = 2
EXIT_FAILURE = 1
# Statuses that mean the input was refused (exit 2): the token, or the body.
INPUT_STATUSES = frozenset({401, 422})
# The variable that names the server that launched the passage.
ENV_API_URL = "KALENDS_API_URL"
# The variable that holds the passage's token (kalends.missions.runtime.layout names it
# too; named here, not imported: importing kalends.missions costs most of a second).
ENV_PASSAGE_TOKEN = "KALENDS_PASSAGE_TOKEN"
# How long the server may take to answer one call.
SEND_TIMEOUT = 30.0
# The largest answer read back: a question with its answer (prompt, 16 fields, text
# values of at most 4,096 characters each), or a message as recorded (at most 65,536
# characters, kalends.conversations.MAX_MESSAGE_CHARS).
MAX_ANSWER_BYTES = 1024 * 1024


class CallRefused(KalendsError):
    """The server answered with an error; it recorded nothing."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message, status=status)
        self.status = status
        self.code = code


class CallNotSent(KalendsError):
    """The server could not be reached, or its answer could not be read."""

    code = "server-unreachable"

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def refuse(error: KalendsError, json_output: bool, *, code: int | None = None) -> NoReturn:
    """One line on stderr (and the error object with --json); exits ``code``, by default
    2 for bad input, else 1."""
    import typer  # noqa: PLC0415

    from kalends.cli.output import emit_json, error_console  # noqa: PLC0415 (rich: on use)

    if json_output:
        emit_json({"error": {"code": error.code, "message": error.message}})
    error_console.print(
        "error: " + error.message.replace("\n", " "), markup=False, highlight=False, soft_wrap=True
    )
    if code is None:
        code = EXIT_INVALID if isinstance(error, InvalidInput) else EXIT_FAILURE
    raise typer.Exit(code)


def exit_code_of(error: KalendsError) -> int | None:
    """The exit code a refusal by the server calls for (``None``: the default)."""
    if isinstance(error, CallRefused) and error.status in INPUT_STATUSES:
        return EXIT_INVALID
    return None


def passage_environment(command: str, without_server: str) -> tuple[str, str]:
    """The passage's token and its server's URL, from the environment; :class:`InvalidInput`
    naming ``kalends <command>`` when either is missing (``without_server`` says what a
    passage of ``kalends worker`` without a server lacks). Nothing is sent without both."""
    token = os.environ.get(ENV_PASSAGE_TOKEN, "")
    if not token:
        raise InvalidInput(
            f"no passage token: run `kalends {command}` from inside a passage ({ENV_PASSAGE_TOKEN})"
        )
    api_url = os.environ.get(ENV_API_URL, "")
    if not api_url:
        raise InvalidInput(
            f"no server: `kalends {command}` needs the kalends server that launched the "
            f"passage ({ENV_API_URL}); a passage of `kalends worker` without a server "
            f"{without_server}"
        )
    return token, api_url


def server_base(api_url: str) -> str:
    """The server's base URL, refused unless ``http(s)://``."""
    base = api_url.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise InvalidInput(
            f"{ENV_API_URL}: an http:// or https:// URL of the kalends server, got {api_url!r}",
            field=ENV_API_URL,
        )
    return base


def call(
    base: str,
    path: str,
    token: str,
    body: dict[str, Any] | None = None,
    *,
    timeout: float,
    max_bytes: int,
    what: str = "the request",
) -> Any:
    """A GET (``body`` ``None``) or a JSON POST to ``base`` + ``path`` with the passage's
    token; the answer's JSON value (``None`` when it is not JSON). :class:`CallRefused`
    for an error answer (naming ``what``), :class:`CallNotSent` when the server cannot be
    reached or does not answer within ``timeout`` seconds."""
    from urllib.error import HTTPError, URLError  # noqa: PLC0415 (on use: a fast start)
    from urllib.request import Request  # noqa: PLC0415

    if body is None:
        request = Request(
            base + path,
            method="GET",
            headers={"Authorization": f"Passage {token}", "Accept": "application/json"},
        )
    else:
        request = passage_request(base + path, token, body)
    try:
        with direct_opener().open(request, timeout=timeout) as answer:
            data = answer.read(max_bytes)
    except HTTPError as exc:
        try:
            error = exc.read(max_bytes)
        except OSError:
            error = b""
        finally:
            exc.close()
        code, message = error_fields(error)
        raise CallRefused(
            f"the kalends server refused {what} ({exc.code} {code}): {message}",
            status=exc.code,
            code=code,
        ) from None
    except (URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, URLError) else exc
        if isinstance(reason, TimeoutError):
            raise CallNotSent(
                f"the kalends server at {base} did not answer within {timeout:g} s",
                timed_out=True,
            ) from None
        raise CallNotSent(f"cannot reach the kalends server at {base}: {reason}") from None
    return answer_json(data)


def send_once(
    base: str,
    path: str,
    token: str,
    body: dict[str, Any],
    *,
    timeout: float,
    what: str,
    before_again: str,
) -> Any:
    """POSTs ``body`` as :func:`call` does, once: never sent again on its own. A lost
    answer is said as such (:class:`CallNotSent`: ``what`` may or may not be recorded,
    and ``before_again`` says what to read before sending it again)."""
    try:
        return call(base, path, token, body, timeout=timeout, max_bytes=MAX_ANSWER_BYTES, what=what)
    except CallNotSent as exc:
        if exc.timed_out:
            raise CallNotSent(
                f"{exc.message}: {what} may or may not be recorded; {before_again}"
            ) from None
        raise


def answer_lines(question: dict[str, Any]) -> list[str]:
    """A question's answer as ``FIELD=VALUE`` lines, in the order of its fields (the
    stored answer's keys are sorted), any other value after them; none without an
    answer."""
    answer = question.get("answer")
    values: dict[str, Any] = answer if isinstance(answer, dict) else {}
    fields = question.get("fields")
    order = [f.get("id") for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []
    lines = []
    for field in [*[f for f in order if f in values], *[f for f in values if f not in order]]:
        value = values[field]
        shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{field}={shown}")
    return lines
