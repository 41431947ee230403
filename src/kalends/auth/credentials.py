"""Random secrets and their digests: what a client holds, and what the database keeps.

Secrets are 256 random bits, so a single SHA-256 is a sound way to store them:
no dictionary can reach them, and a lookup by digest compares nothing in Python
that an attacker could time. The CSRF token of a session is derived from its
secret, so it needs no storage of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["MAX_SECRET_LENGTH", "SECRET_BYTES", "csrf_token_for", "digest", "new_secret", "usable"]

# Random bytes in every session, token and login-link secret.
SECRET_BYTES = 32
# A presented secret longer than this (in characters) is refused without being hashed.
MAX_SECRET_LENGTH = 256

_CSRF_CONTEXT = b"csrf"


def new_secret(prefix: str = "") -> str:
    """A fresh URL-safe random secret, after ``prefix``."""
    return prefix + secrets.token_urlsafe(SECRET_BYTES)


def digest(secret: str) -> str:
    """The SHA-256 of ``secret`` in hex: the only form of a secret the database holds."""
    return hashlib.sha256(secret.encode()).hexdigest()


def csrf_token_for(secret: str) -> str:
    """The CSRF token of the session whose cookie secret is ``secret``."""
    return hmac.new(secret.encode(), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def usable(secret: object, prefix: str = "") -> bool:
    """Whether ``secret`` is worth looking up: text of a sane length starting with ``prefix``."""
    return (
        isinstance(secret, str)
        and len(prefix) < len(secret) <= MAX_SECRET_LENGTH
        and secret.startswith(prefix)
    )
