"""What a passage's commands (``kalends report``, ``kalends say``) share to call the
server that launched them: a request carrying the passage's token, an opener that no
proxy stands in front of, and an error answer's code and message.

Standard library only, and imported on use: these commands run from scripts, often
many times per passage, and must start fast.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urllib.request import Request

__all__ = ["answer_json", "direct_opener", "error_fields", "passage_request"]


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
