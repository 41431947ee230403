"""The reminder values a server's JSON stands for, so server mode prints as local mode
does.

The HTTP API answers each value's own ``to_json()``; these functions read such JSON
back into the value, so a command draws a server's answer with the renderers it uses
locally and its ``--json`` prints ``to_json()`` in both modes. The task and mission
domains' values read their own JSON back (``Task.from_json``, ``Workspace.from_json``
and the like, beside each ``to_json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from kalends.reminders.outbox import Intent

__all__ = ["intent"]

Json = Mapping[str, Any]


def _uuid(value: Any) -> UUID:
    return UUID(str(value))


def _instant(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _maybe_instant(value: Any) -> datetime | None:
    return None if value is None else _instant(value)


def intent(d: Json) -> Intent:
    created_at = _instant(d["created_at"])
    return Intent(
        id=_uuid(d["id"]),
        task_id=_uuid(d["task"]["id"]),
        task_ref=d["task"]["ref"],
        task_title=d["task"]["title"],
        schedule_revision=int(d["schedule_revision"]),
        channel=d["channel"],
        at=_instant(d["at"]),
        recipient_id=_uuid(d["recipient"]["id"]),
        recipient=d["recipient"]["handle"],
        status=d["status"],
        attempts=int(d["attempts"]),
        # The JSON leaves it out once the reminder is settled, and so does every view.
        next_attempt_at=_maybe_instant(d["next_attempt_at"]) or created_at,
        lease_owner=d["lease_owner"],
        lease_expires_at=_maybe_instant(d["lease_expires_at"]),
        last_error=d["last_error"],
        closed_reason=d["closed_reason"],
        delivered_at=_maybe_instant(d["delivered_at"]),
        created_at=created_at,
        updated_at=_instant(d["updated_at"]),
        zone=d.get("zone"),
    )
