"""Passage tokens: what lets a passage's own ``kalends report`` speak for that passage.

A token is ``base64url(payload) + "." + base64url(HMAC-SHA256(secret, base64url(payload)))``
where the payload is compact JSON naming the passage and its session. The runtime keeps
one secret per root, in ``<root>/secret`` (32 random bytes, mode 0600), created on first
use. The token scopes a report to one passage; it is no barrier against a process of the
same user, who can read the secret file anyway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from kalends.errors import InvalidInput

__all__ = ["SECRET_FILE", "InvalidToken", "ensure_secret", "read_secret", "sign", "verify"]

SECRET_FILE = "secret"
SECRET_BYTES = 32
# Far above any real token (two IDs); refuses junk before any decoding.
MAX_TOKEN_CHARS = 2048


class InvalidToken(InvalidInput):
    """The passage token is missing, malformed or not signed by this runtime."""

    code = "invalid-token"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, payload.encode("ascii"), hashlib.sha256).digest())


def sign(secret: bytes, passage_id: str, session_id: str) -> str:
    """The token of one passage (deterministic: the same inputs give the same token)."""
    if not secret:
        raise InvalidInput("the token secret is empty", field="secret")
    body = json.dumps({"p": passage_id, "s": session_id, "v": 1}, separators=(",", ":"))
    payload = _b64(body.encode("utf-8"))
    return f"{payload}.{_mac(secret, payload)}"


def verify(secret: bytes, token: str) -> tuple[str, str]:
    """The ``(passage_id, session_id)`` a token names; :class:`InvalidToken` unless this
    secret signed it, unchanged. The signature is compared in constant time."""
    if not secret:
        raise InvalidInput("the token secret is empty", field="secret")
    if not token or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        raise InvalidToken(field="token")
    payload, dot, mac = token.partition(".")
    if not dot or not payload or not mac:
        raise InvalidToken(field="token")
    if not hmac.compare_digest(_mac(secret, payload).encode(), mac.encode()):
        raise InvalidToken("the passage token's signature does not match", field="token")
    try:
        body = json.loads(_unb64(payload).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidToken(field="token") from exc
    if (
        not isinstance(body, dict)
        or body.get("v") != 1
        or not isinstance(body.get("p"), str)
        or not isinstance(body.get("s"), str)
    ):
        raise InvalidToken(field="token")
    return body["p"], body["s"]


def read_secret(root: Path) -> bytes:
    """The secret kept in ``root``; :class:`FileNotFoundError` if none was created yet."""
    data = (root / SECRET_FILE).read_bytes()
    if len(data) < SECRET_BYTES // 2:
        raise InvalidInput(f"the runtime secret {root / SECRET_FILE} is too short", field="secret")
    return data


def ensure_secret(root: Path) -> bytes:
    """The secret kept in ``root``, created (0600, 32 random bytes) if missing.

    Creation writes a private temporary file and links it into place, so concurrent
    first uses agree on one secret and a crash never leaves a partial one.
    """
    path = root / SECRET_FILE
    try:
        return read_secret(root)
    except FileNotFoundError:
        pass
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, secrets.token_bytes(SECRET_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process created it first: theirs wins
    finally:
        tmp.unlink()
    return read_secret(root)
