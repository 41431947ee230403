"""What the feed commands ask for, the same whether they run on a database or a server.

:class:`FeedsClient` mirrors :class:`~kalends.feeds.Feeds`, the acting actor first;
:class:`LocalFeeds` is the service itself with the address a new feed is given, and
:class:`~kalends.cli.http_feeds.HttpFeeds` the HTTP API's ``/api/feeds``, where the
server gives the address. :func:`feeds_of` picks one for a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

if TYPE_CHECKING:
    from kalends.bootstrap import Services
    from kalends.cli.remote import Remote
    from kalends.cli.session import Session
    from kalends.feeds import FeedInfo, NewFeed

__all__ = ["FeedsClient", "LocalFeeds", "feeds_of"]


class FeedsClient(Protocol):
    """The acting actor's calendar feeds (:class:`~kalends.feeds.Feeds`)."""

    def create(self, actor: UUID | str, *, base_url: str | None) -> NewFeed:
        """A new feed of the actor, its secret and address shown this once. ``base_url``:
        the server's public URL for the address (``None``: the one recorded; a server
        gives its own)."""
        ...

    def list(self, actor: UUID | str) -> list[FeedInfo]:
        """The actor's own feeds, newest first, revoked ones included."""
        ...

    def revoke(self, actor: UUID | str, feed: UUID | str) -> FeedInfo:
        """Revokes one of the actor's own feeds; revoking a revoked one changes nothing."""
        ...


@dataclass(frozen=True, slots=True)
class LocalFeeds:
    """The service on the database; a new feed's address is under ``--base-url``, else
    under the base URL the last ``kalends serve`` on this database recorded."""

    services: Services

    def create(self, actor: UUID | str, *, base_url: str | None) -> NewFeed:
        # The base URL is settled first: without one, nothing is written.
        from kalends.cli.serve import login_link_base  # noqa: PLC0415

        base, _recorded = login_link_base(base_url, self.services.store)
        return self.services.feeds.create(actor, base_url=base)

    def list(self, actor: UUID | str) -> list[FeedInfo]:
        return self.services.feeds.list(actor)

    def revoke(self, actor: UUID | str, feed: UUID | str) -> FeedInfo:
        return self.services.feeds.revoke(actor, feed)


def feeds_of(s: Session | Remote) -> FeedsClient:
    """The feeds of a session: the service in local mode, the HTTP API on a server."""
    from kalends.cli.http_feeds import HttpFeeds  # noqa: PLC0415
    from kalends.cli.remote import Remote  # noqa: PLC0415

    if isinstance(s, Remote):
        return HttpFeeds(s)
    return LocalFeeds(s.services)
