"""JSON answers, encoded by orjson: a tree page of a hundred tasks encodes several times
faster than with the standard library, byte for byte the same compact JSON."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse

__all__ = ["JsonAnswer", "JsonText"]


class JsonAnswer(JSONResponse):
    """A JSON response whose body orjson encodes (UTF-8, no spaces, keys in order)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


class JsonText(JSONResponse):
    """A JSON response whose body is JSON text already (written by the database)."""

    def render(self, content: Any) -> bytes:
        if not isinstance(content, str):
            raise TypeError(f"JsonText wants JSON text, got {type(content).__name__}")
        return content.encode()
