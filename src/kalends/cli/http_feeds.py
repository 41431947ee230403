"""Server mode's :class:`~kalends.cli.feed_client.FeedsClient`: the feed routes of the
HTTP API (``/api/feeds``), the answers read back with
:meth:`~kalends.feeds.FeedInfo.from_json`. The server gives a new feed its address (its
own public URL); the owner, whom the JSON does not name, is the caller."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from kalends.cli.http import path_part
from kalends.feeds import FeedInfo, NewFeed

__all__ = ["FeedWire", "HttpFeeds"]


class FeedWire(Protocol):
    """The requests a server-mode session sends (:class:`~kalends.cli.remote.Remote`)."""

    def get(self, path: str, **params: Any) -> Any: ...

    def post(self, path: str, body: Any = None) -> Any: ...

    def delete(self, path: str, **params: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class HttpFeeds:
    wire: FeedWire

    def _owner(self, actor: UUID | str) -> UUID:
        """The caller's actor ID: ``actor`` when it is one, else the server's answer."""
        try:
            return UUID(str(actor))
        except ValueError:
            return UUID(str(self.wire.get("/api/auth/me")["actor"]["id"]))

    def create(self, actor: UUID | str, *, base_url: str | None) -> NewFeed:
        made = self.wire.post("/api/feeds")
        feed = FeedInfo.from_json(made["feed"], actor_id=self._owner(actor))
        return NewFeed(feed=feed, secret=str(made["secret"]), url=str(made["url"]))

    def list(self, actor: UUID | str) -> list[FeedInfo]:
        found = self.wire.get("/api/feeds")
        if not found:
            return []
        owner = self._owner(actor)
        return [FeedInfo.from_json(d, actor_id=owner) for d in found]

    def revoke(self, actor: UUID | str, feed: UUID | str) -> FeedInfo:
        revoked = self.wire.delete(f"/api/feeds/{path_part(str(feed))}")
        return FeedInfo.from_json(revoked, actor_id=self._owner(actor))
