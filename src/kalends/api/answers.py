"""JSON answers, encoded by orjson: a tree page of a hundred tasks encodes several times
faster than with the standard library, byte for byte the same compact JSON."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse

__all__ = ["JsonAnswer"]


class JsonAnswer(JSONResponse):
    """A JSON response whose body orjson encodes (UTF-8, no spaces, keys in order)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)
