"""How deeply a JSON body may nest: a bound checked before any route reads its body.

Python's JSON decoder recurses once per nested array or object, and so do the checks
that walk a decoded value (a free-form configuration is walked for lone surrogates): a
body nested about a thousand levels deep ended in ``RecursionError``, a 500, at a depth
that depended on how deep the stack already was. Every route of the API that takes a
JSON body refuses one nested deeper than :data:`MAX_JSON_DEPTH` with 422 first, at one
depth, whichever part of the body nests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from kalends.errors import InvalidInput

__all__ = ["MAX_JSON_DEPTH", "json_deeper_than", "with_depth_bound"]

Handler = Callable[[Request], Coroutine[Any, Any, Response]]

MAX_JSON_DEPTH = 64
"""kalends' decision: the deepest body a route takes (a schedule's configuration with a
checklist template nested 8 items deep) nests about 20 levels."""

# A JSON string, escapes included: brackets inside one do not nest.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPENING = frozenset(b"[{")
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def json_deeper_than(body: bytes, limit: int) -> bool:
    """Whether the JSON text ``body`` nests arrays and objects more than ``limit`` deep.

    Text that is no JSON may be counted either way; its decoding refuses it anyway.
    """
    # A body with few brackets cannot nest deeply: most are decided by two counts.
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for byte in _STRING.sub(b"", body).translate(None, _NOT_A_BRACKET):
        if byte in _OPENING:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def with_depth_bound(handler: Handler) -> Handler:
    """``handler`` behind the check that the request's body nests at most
    :data:`MAX_JSON_DEPTH` levels (:class:`InvalidInput` naming ``body`` otherwise)."""

    async def bounded(request: Request) -> Response:
        if json_deeper_than(await request.body(), MAX_JSON_DEPTH):
            raise InvalidInput(
                f"body: JSON nested more than {MAX_JSON_DEPTH} levels deep", field="body"
            )
        return await handler(request)

    return bounded
