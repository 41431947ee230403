"""The slots new zone data moved, as a schedule's detail shows them (issue 24 §3): the
``moved`` rows :mod:`kalends.missions.zone_changes` writes in the slot ledger. A read only.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.missions.ledger import Outcome, Reason, iso
from kalends.storage.ledger_tables import slot_ledger

__all__ = ["SHOWN_CHANGES", "SHOWN_FOR", "read_zone_changes"]

SHOWN_CHANGES = 3
"""How many moved slots a schedule's detail shows (kalends decision)."""
SHOWN_FOR = timedelta(days=7)
"""How long after its new instant a moved slot is still shown (kalends decision)."""

_L = slot_ledger


def read_zone_changes(conn: Connection, schedule_id: UUID, now: datetime) -> list[dict[str, Any]]:
    """The schedule's latest slots moved by new zone data whose new instant is at most
    :data:`SHOWN_FOR` old, newest decision first (at most :data:`SHOWN_CHANGES`):
    ``{"slot", "local", "zone", "otherAt", "detail"}``. A read only."""
    rows = conn.execute(
        select(_L.c.slot_at, _L.c.local, _L.c.zone, _L.c.other_at, _L.c.detail)
        .where(
            _L.c.schedule_id == schedule_id,
            _L.c.outcome == Outcome.MOVED.value,
            _L.c.reason == Reason.ZONE_RULES_CHANGED.value,
            _L.c.slot_at >= now - SHOWN_FOR,
        )
        .order_by(_L.c.decided_at.desc(), _L.c.slot_at.desc())
        .limit(SHOWN_CHANGES)
    ).all()
    return [
        {
            "slot": iso(r.slot_at),
            "local": r.local,
            "zone": r.zone,
            "otherAt": None if r.other_at is None else iso(r.other_at),
            "detail": r.detail,
        }
        for r in rows
    ]
