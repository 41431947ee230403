"""Passwords: the rules for a new one, and argon2id hashing that does not leak by its timing."""

from __future__ import annotations

import contextlib
import threading

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from kalends.errors import InvalidInput

__all__ = ["MAX_PASSWORD_LENGTH", "MIN_PASSWORD_LENGTH", "Passwords", "check_new_password"]

# The shortest password accepted, in characters.
MIN_PASSWORD_LENGTH = 10
# The longest password accepted, in characters (argon2 takes any length; this bounds the work).
MAX_PASSWORD_LENGTH = 1024

# Verified when there is no hash to verify against, so that a missing account costs the same.
_DUMMY_PASSWORD = "kalends: no account has this password"


def check_new_password(password: object) -> str:
    """``password`` once it follows the rules for a new password; else :class:`InvalidInput`."""
    if not isinstance(password, str):
        raise InvalidInput("password: must be text", field="password")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInput(
            f"password: at least {MIN_PASSWORD_LENGTH} characters, got {len(password)}",
            field="password",
        )
    if len(password) > MAX_PASSWORD_LENGTH:
        raise InvalidInput(
            f"password: at most {MAX_PASSWORD_LENGTH} characters, got {len(password)}",
            field="password",
        )
    return password


class Passwords:
    """Hash and verify passwords with one argon2id hasher (RFC 9106 low-memory by default)."""

    def __init__(self, hasher: PasswordHasher | None = None) -> None:
        self.hasher = hasher if hasher is not None else PasswordHasher()
        self._dummy: str | None = None
        self._lock = threading.Lock()

    def hash(self, password: str) -> str:
        return self.hasher.hash(password)

    def verify(self, stored: str | None, password: object) -> bool:
        """Whether ``password`` matches the ``stored`` hash. Always runs one argon2 verify.

        With no stored hash, or no usable password, a fixed dummy hash is verified
        instead and the answer is no, so the time taken does not tell the cases apart.
        """
        candidate = (
            password if isinstance(password, str) and len(password) <= MAX_PASSWORD_LENGTH else None
        )
        if stored is None or candidate is None:
            self._verify(self._dummy_hash(), candidate or "")
            return False
        try:
            return self.hasher.verify(stored, candidate)
        except InvalidHashError:
            # A stored hash that does not parse matches nothing; still spend the time.
            self._verify(self._dummy_hash(), candidate)
            return False
        except VerificationError:
            return False

    def needs_rehash(self, stored: str) -> bool:
        """Whether ``stored`` was made with other parameters than the hasher's current ones."""
        try:
            return self.hasher.check_needs_rehash(stored)
        except InvalidHashError:
            return True

    def _verify(self, stored: str, password: str) -> None:
        with contextlib.suppress(InvalidHashError, VerificationError):
            self.hasher.verify(stored, password)

    def _dummy_hash(self) -> str:
        with self._lock:
            if self._dummy is None:
                self._dummy = self.hasher.hash(_DUMMY_PASSWORD)
            return self._dummy
