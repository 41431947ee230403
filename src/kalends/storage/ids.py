"""Row IDs that sort by creation time (UUID version 7, RFC 9562).

Random version-4 UUIDs put every new row in a random leaf of each index keyed by them,
so a transaction that inserts hundreds of rows dirties hundreds of pages. Version-7
UUIDs begin with the creation instant in milliseconds, so rows created together land
side by side at the right edge of the index. The instant comes from the caller (the
injected clock); within one call a 12-bit counter keeps the IDs in order, and 62 random
bits keep them unique across processes.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from uuid import UUID

__all__ = ["ids_at"]

_VERSION = 0x7 << 76
_VARIANT = 0b10 << 62
_COUNTER_BITS = 12


def ids_at(now: datetime, count: int) -> list[UUID]:
    """``count`` new IDs for rows created at ``now``, in ascending order."""
    ms = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    base = secrets.randbits(_COUNTER_BITS - 1)  # room to count up without wrapping early
    out = []
    for i in range(count):
        step = base + i
        # Past the counter's room, move on to the next millisecond (still ascending).
        millis = (ms + (step >> _COUNTER_BITS)) & ((1 << 48) - 1)
        counter = step & ((1 << _COUNTER_BITS) - 1)
        value = (millis << 80) | _VERSION | (counter << 64) | _VARIANT | secrets.randbits(62)
        out.append(UUID(int=value))
    return out
