"""The strict parsing every part of a schedule's configuration shares: JSON objects with
known fields only, bounded text and numbers, paths inside the workspace; each error
names its field (``profile.env.CI``, ``end.within.days``)."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any

from kalends.errors import InvalidInput

__all__ = [
    "fail",
    "json_object",
    "relative_path",
    "require_unicode",
    "text_field",
    "whole_number",
]


def fail(name: str, reason: str) -> InvalidInput:
    """The error of field ``name``: ``name: reason``."""
    return InvalidInput(f"{name}: {reason}", field=name)


def json_object(data: object, name: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    """``data`` as a JSON object holding no field outside ``allowed``."""
    if not isinstance(data, Mapping):
        raise fail(name, "must be a JSON object")
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise fail(f"{name}.{extra[0]}" if name else extra[0], "is not a known field")
    return data


def text_field(value: object, name: str, high: int, *, low: int = 0) -> str:
    """``value`` as a string of ``low``-``high`` characters without NUL."""
    if not isinstance(value, str):
        raise fail(name, f"must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise fail(name, "must not contain NUL characters")
    if len(value) < low or len(value) > high:
        if low:
            raise fail(name, f"must be {low}-{high} characters, got {len(value)}")
        raise fail(name, f"must be at most {high} characters, got {len(value)}")
    return value


def whole_number(value: object, name: str, low: int, high: int) -> int:
    """``value`` as a whole number from ``low`` to ``high``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise fail(name, f"must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise fail(name, f"must be between {low} and {high}, got {value}")
    return value


def relative_path(value: object, name: str) -> str:
    """``value`` as a normal relative path that stays inside the workspace."""
    text = text_field(value, name, 1024, low=1)
    normal = posixpath.normpath(text)
    if text.startswith("/") or normal == ".." or normal.startswith("../"):
        raise fail(name, f"{text!r} must be a path inside the workspace")
    return normal


def require_unicode(data: object, field: str) -> None:
    """Refuses text that cannot be stored: a lone surrogate (``"\\ud800"``) is valid in a
    JSON string but has no UTF-8 form."""
    try:
        json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{field}: text must be valid Unicode (no lone surrogates)", field=field
        ) from exc
    except (TypeError, ValueError):
        return  # not JSON at all: the parser names the field
