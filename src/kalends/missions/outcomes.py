"""What the schedule service answers: a control's outcome, a control's exact status, a
creation receipt and a page of documents. Frozen values, each with its JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from kalends.missions.views import iso

__all__ = ["ControlOutcome", "ControlStatus", "Page", "Receipt"]


# Reading ``to_json()`` back (``from_json``): a server's answer becomes the value local
# mode has, so a command prints both alike.


def _maybe_instant(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _maybe_uuid(value: Any) -> UUID | None:
    return None if value is None else UUID(str(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlOutcome:
    """What a control did. ``repeated``: the request ID was seen before; nothing acted again.
    ``supervision``: what an applied human Play did of service supervision (``state``,
    ``message``, ``unit``), when it had something to say; in the JSON only when set."""

    request_id: str
    action: str
    status: str  # "applied"
    expected_revision: int
    revision: int  # the revision the control recorded
    complete: bool
    repeated: bool
    schedule: dict[str, Any]
    supervision: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        answer = {
            "requestId": self.request_id,
            "action": self.action,
            "status": self.status,
            "expectedRevision": self.expected_revision,
            "revision": self.revision,
            "complete": self.complete,
            "repeated": self.repeated,
            "schedule": self.schedule,
        }
        if self.supervision is not None:
            answer["supervision"] = self.supervision
        return answer

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ControlOutcome:
        return cls(
            request_id=d["requestId"],
            action=d["action"],
            status=d["status"],
            expected_revision=int(d["expectedRevision"]),
            revision=int(d["revision"]),
            complete=bool(d["complete"]),
            repeated=bool(d["repeated"]),
            schedule=d["schedule"],
            supervision=d.get("supervision"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlStatus:
    """The exact status of a control by request ID: applied, rejected or unknown."""

    request_id: str
    status: str  # applied | rejected | unknown
    code: str | None = None
    action: str | None = None
    expected_revision: int | None = None
    revision: int | None = None
    complete: bool | None = None
    at: datetime | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "status": self.status,
            "code": self.code,
            "action": self.action,
            "expectedRevision": self.expected_revision,
            "revision": self.revision,
            "complete": self.complete,
            "at": iso(self.at),
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ControlStatus:
        return cls(
            request_id=d["requestId"],
            status=d["status"],
            code=d["code"],
            action=d["action"],
            expected_revision=d["expectedRevision"],
            revision=d["revision"],
            complete=d["complete"],
            at=_maybe_instant(d["at"]),
            reason=d["reason"],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipt:
    """A creation receipt by request ID: which document it created, or unknown."""

    request_id: str
    status: str  # created | deleted | unknown
    mission_id: UUID | None = None
    workspace_id: UUID | None = None
    created_at: datetime | None = None
    repeated: bool = False
    schedule: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "status": self.status,
            "missionId": None if self.mission_id is None else str(self.mission_id),
            "workspaceId": None if self.workspace_id is None else str(self.workspace_id),
            "revision": None if self.mission_id is None else 1,
            "createdAt": iso(self.created_at),
            "repeated": self.repeated,
            "schedule": self.schedule,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Receipt:
        return cls(
            request_id=d["requestId"],
            status=d["status"],
            mission_id=_maybe_uuid(d["missionId"]),
            workspace_id=_maybe_uuid(d["workspaceId"]),
            created_at=_maybe_instant(d["createdAt"]),
            repeated=bool(d["repeated"]),
            schedule=d["schedule"],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One page of a workspace's documents in mission-ID order, tombstones included."""

    items: list[dict[str, Any]]
    next_after: str | None

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "nextAfter": self.next_after}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Page:
        return cls(items=list(d["items"]), next_after=d["nextAfter"])
