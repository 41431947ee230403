"""Where a passage's shim sends its heartbeats, and the token that lets it.

Issue 23 §3: the shim reports its passage's start, a heartbeat every
:data:`PASSAGE_BEAT` seconds and its end to the service over HTTP, so that a scheduler
on any machine can observe the passage through the database even when the node that
started it is gone. Each node has a random beat key (kept in the database with the
node); a shim's token is the HMAC-SHA256 of its session ID under its node's key, so a
token speaks for one session of one node. The token reaches the shim in ``beat.json``
inside the passage directory (the server's user only), never in the command's
environment.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

__all__ = [
    "BEAT_FILE",
    "BEATS_PATH",
    "BEAT_KEY_BYTES",
    "PASSAGE_BEAT",
    "BeatTarget",
    "beat_token",
    "check_beat_token",
    "new_beat_key",
]

PASSAGE_BEAT = 15.0
"""Seconds between a running passage's heartbeats (issue 23 §3: "a heartbeat every 15 s").
The shim, which imports nothing of kalends, keeps its own copy of this figure."""
BEAT_FILE = "beat.json"
BEAT_KEY_BYTES = 32
BEATS_PATH = "/api/passages/beats"
_CONTEXT = b"kalends-beat\0"


def new_beat_key() -> str:
    """A fresh node beat key, as hex text."""
    return secrets.token_hex(BEAT_KEY_BYTES)


def beat_token(key_hex: str, session_id: str) -> str:
    """The token of ``session_id``'s shim under its node's key ``key_hex``."""
    key = bytes.fromhex(key_hex)
    return hmac.new(key, _CONTEXT + session_id.encode("utf-8"), hashlib.sha256).hexdigest()


def check_beat_token(key_hex: str, session_id: str, token: object) -> bool:
    """Whether ``token`` is the shim token of ``session_id`` under ``key_hex``."""
    if not isinstance(token, str) or len(token) != 64:
        return False
    return hmac.compare_digest(beat_token(key_hex, session_id), token)


@dataclass(frozen=True, slots=True, kw_only=True)
class BeatTarget:
    """Where a node's shims report: the service's base URL (``http://host:port``), the
    node's identity and beat key, and the heartbeat period in seconds."""

    url: str
    node_id: str
    key: str
    every: float = PASSAGE_BEAT

    @property
    def endpoint(self) -> str:
        return self.url.rstrip("/") + BEATS_PATH
