"""What the calendar feeds' service gives back: a feed as its owner sees it, a new feed
with its secret and address (shown once), and a rendered feed with its entity tag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from kalends.auth import instant_json

__all__ = ["FeedBody", "FeedInfo", "NewFeed", "feed_path"]


def feed_path(secret: str) -> str:
    """The path at which the feed with ``secret`` is served."""
    return f"/feeds/{secret}.ics"


@dataclass(frozen=True, slots=True, kw_only=True)
class FeedInfo:
    """A calendar feed as its owner sees it (never its secret, which is not stored)."""

    id: UUID
    actor_id: UUID
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @classmethod
    def from_row(cls, row: Any) -> FeedInfo:
        return cls(
            id=row.id,
            actor_id=row.actor_id,
            created_at=row.created_at,
            revoked_at=row.revoked_at,
            last_used_at=row.last_used_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "createdAt": instant_json(self.created_at),
            "revokedAt": instant_json(self.revoked_at),
            "lastUsedAt": instant_json(self.last_used_at),
            "active": self.active,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, actor_id: UUID) -> FeedInfo:
        """The feed :meth:`to_json` wrote; the JSON does not name its owner, ``actor_id``."""
        return cls(
            id=UUID(str(d["id"])),
            actor_id=actor_id,
            created_at=_instant(d["createdAt"]),
            revoked_at=None if d.get("revokedAt") is None else _instant(d["revokedAt"]),
            last_used_at=None if d.get("lastUsedAt") is None else _instant(d["lastUsedAt"]),
        )


def _instant(value: object) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True, kw_only=True)
class NewFeed:
    """A feed just created: its secret and its address, shown this once."""

    feed: FeedInfo
    secret: str
    url: str

    def to_json(self) -> dict[str, Any]:
        return {"feed": self.feed.to_json(), "url": self.url, "secret": self.secret}


@dataclass(frozen=True, slots=True, kw_only=True)
class FeedBody:
    """A rendered feed: the iCalendar text and its entity tag (quoted, as sent)."""

    body: bytes
    etag: str
