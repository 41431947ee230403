"""Page cursors of a list's trees: the text a page hands out as ``next_after`` and the
place it names.
"""

from __future__ import annotations

import re

from kalends.errors import InvalidInput
from kalends.tasks.tree_json import PageKey
from kalends.tasks.values import MAX_TREE_PAGE

# A page cursor: the sibling position and reference of a page's last top-level task.
_CURSOR = re.compile(r"(-?[0-9]{1,19}):([0-9A-Z]{1,12})")
PAGE_CURSOR_LENGTH = 33


def page_request(limit: int, after: str | None) -> PageKey | None:
    """The place a page request starts after, once ``limit`` is checked; else
    :class:`InvalidInput`."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput("limit: a whole number is expected", field="limit")
    if not 1 <= limit <= MAX_TREE_PAGE:
        raise InvalidInput(f"limit: 1 to {MAX_TREE_PAGE}, got {limit}", field="limit")
    return parse_page_cursor(after) if after is not None else None


def next_cursor(key: PageKey | None) -> str | None:
    return f"{key[0]}:{key[1]}" if key is not None else None


def parse_page_cursor(value: str) -> PageKey:
    """The place a page cursor (``TreePage.next_after``) names; else :class:`InvalidInput`."""
    found = _CURSOR.fullmatch(value) if isinstance(value, str) else None
    if found is None or not -(2**63) <= int(found.group(1)) < 2**63:
        raise InvalidInput(
            f"after: a page cursor from a previous page is expected, got {value!r}",
            field="after",
        )
    return int(found.group(1)), found.group(2)
