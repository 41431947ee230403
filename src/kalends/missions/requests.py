"""What a schedule request carries besides its input: the request ID that makes it
idempotent, the revision it expects, and the digest that tells a repeat of the request
from another request under the same ID (seed 002 "Daily document controls")."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from kalends.errors import InvalidInput
from kalends.missions.controls import Action
from kalends.missions.limits import MAX_REQUEST_ID, MIN_REQUEST_ID

__all__ = ["ControlRequest", "check_request_id", "check_revision", "request_digest"]

_REQUEST_ID = re.compile(rf"[A-Za-z0-9._:-]{{{MIN_REQUEST_ID},{MAX_REQUEST_ID}}}")


def check_request_id(value: object, field: str = "request_id") -> str:
    """A request ID: 8-64 characters of letters, digits and ``. _ : -``."""
    if not isinstance(value, str) or not _REQUEST_ID.fullmatch(value):
        raise InvalidInput(
            f"{field}: a request ID is {MIN_REQUEST_ID}-{MAX_REQUEST_ID} characters of letters, "
            f"digits and . _ : -, got {value!r}",
            field=field,
        )
    return value


def check_revision(value: object) -> int:
    """A revision a request expects: a whole number ≥ 1."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInput(
            f"expected_revision: must be a whole number ≥ 1, got {value!r}",
            field="expected_revision",
        )
    return value


def request_digest(action: str, payload: object) -> str:
    """The digest of a request's action and input, kept with its request ID."""
    text = json.dumps({"action": action, "payload": payload}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRequest:
    """A control as it was asked: what its record keeps under its request ID."""

    request_id: str
    action: Action
    expected: int  # the revision the caller saw
    digest: str  # of the action and its input (:func:`request_digest`)
