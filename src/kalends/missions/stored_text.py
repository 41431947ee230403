"""Text a schedule document keeps, measured as the document's ceiling counts it.

A document is stored as compact JSON in UTF-8 with non-ASCII characters as they are, so
a character takes 1 to 4 bytes, and ``"``, ``\\`` and control characters take their
escapes (a newline 2 bytes, U+0001 6). The bounds on what a result keeps
(:data:`~kalends.missions.limits.MAX_SUMMARY_BYTES`,
:data:`~kalends.missions.limits.MAX_REASON_BYTES`) are in those bytes, whatever the
alphabet, so that the largest document provably fits its ceiling.

A report over the bound is refused when it is made (:func:`check_summary`); settlement
still fits whatever the runtime hands it (:func:`fit_stored`), since a report may come
from a spooled file or from an older version of kalends.
"""

from __future__ import annotations

import json

from kalends.errors import InvalidInput
from kalends.missions.limits import MAX_SUMMARY_BYTES

__all__ = ["TRUNCATED", "check_summary", "fit_stored", "stored_size"]

TRUNCATED = "… [truncated]"
"""What ends a text that settlement cut to its bound."""


def stored_size(text: str) -> int:
    """The bytes ``text`` takes inside a stored document: its JSON string, quotes not
    counted. Raises :class:`UnicodeEncodeError` for a lone surrogate (never storable)."""
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


def check_summary(summary: str) -> None:
    """Refuse (:class:`InvalidInput` on ``summary``) a report's summary that is not valid
    Unicode or takes more than ``MAX_SUMMARY_BYTES`` stored bytes."""
    try:
        size = stored_size(summary)
    except UnicodeEncodeError:
        raise InvalidInput(
            "summary: text must be valid Unicode (no lone surrogates)", field="summary"
        ) from None
    if size > MAX_SUMMARY_BYTES:
        raise InvalidInput(
            f"summary: {size} bytes as stored (UTF-8, JSON escapes counted), over the "
            f"bound of {MAX_SUMMARY_BYTES} bytes; shorten it",
            field="summary",
            size=size,
            limit=MAX_SUMMARY_BYTES,
        )


def fit_stored(text: str, limit: int) -> str:
    """``text`` as it can be kept in at most ``limit`` stored bytes: unchanged when it
    fits; otherwise its longest prefix of whole characters followed by :data:`TRUNCATED`.
    A lone surrogate, which no document can store, becomes U+FFFD first."""
    try:
        size = stored_size(text)
    except UnicodeEncodeError:
        text = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
        size = stored_size(text)
    if size <= limit:
        return text
    room = limit - stored_size(TRUNCATED)
    used = 0
    for end, ch in enumerate(text):
        used += stored_size(ch)
        if used > room:
            return text[:end] + TRUNCATED
    raise AssertionError("unreachable: the text was over its limit")  # pragma: no cover
