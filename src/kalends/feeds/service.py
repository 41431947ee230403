"""The calendar feeds of actors: create (the secret and address shown once), list,
revoke, and the feed a secret opens, rendered at the store's clock."""

from __future__ import annotations

from contextlib import suppress
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, NotFound, StorageError
from kalends.feeds import records
from kalends.feeds.contents import Contents, read_contents
from kalends.feeds.values import FeedBody, FeedInfo, NewFeed, feed_path
from kalends.identity import resolve_actor
from kalends.storage.meta import SERVER_BASE_URL, read_meta
from kalends.storage.unit_of_work import Store

__all__ = ["Feeds"]


class Feeds:
    """Each actor's secret calendar feeds (iCalendar) of their tasks and passages."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, actor: UUID | str, *, base_url: str | None = None) -> NewFeed:
        """A new feed of the actor: its secret and its address under ``base_url`` (the
        server's public URL; ``None``: the one the last ``kalends serve`` on this database
        recorded), shown this once; only a digest of the secret is kept.
        :class:`~kalends.errors.InvalidInput` when no base URL is known,
        :class:`~kalends.errors.LimitReached` past
        :data:`~kalends.feeds.records.MAX_ACTIVE_FEEDS` active feeds; nothing is written
        either way."""
        base = base_url if base_url is not None else read_meta(self.store, SERVER_BASE_URL)
        if base is None:
            raise InvalidInput(
                "base-url: no `kalends serve` has started on this database yet, so the "
                "feed's address is unknown",
                field="base_url",
            )

        def run(conn: Connection) -> tuple[FeedInfo, str]:
            actor_id = resolve_actor(conn, actor)
            return records.create_feed(conn, actor_id, self.store.clock.now())

        info, secret = self.store.run(run)
        return NewFeed(feed=info, secret=secret, url=base.rstrip("/") + feed_path(secret))

    def list(self, actor: UUID | str) -> list[FeedInfo]:
        """The actor's own feeds, newest first, revoked ones included (never a secret)."""

        def run(conn: Connection) -> list[FeedInfo]:
            return records.list_feeds(conn, resolve_actor(conn, actor))

        return self.store.run(run, write=False)

    def revoke(self, actor: UUID | str, feed: UUID | str) -> FeedInfo:
        """Revokes one of the actor's own feeds: its address answers nothing from now on.
        Another's feed is :class:`~kalends.errors.NotFound`; revoking twice changes
        nothing."""
        feed_id = records.check_feed_id(feed)

        def run(conn: Connection) -> FeedInfo:
            actor_id = resolve_actor(conn, actor)
            return records.revoke_feed(conn, actor_id, feed_id, self.store.clock.now())

        return self.store.run(run)

    def render(self, secret: str) -> FeedBody:
        """The feed whose secret is ``secret``, as of now: the owner's open tasks with a due
        value and the coming passages of their workspaces' schedules
        (:mod:`kalends.feeds.contents`), as iCalendar text with its entity tag. An unknown
        or revoked secret is :class:`~kalends.errors.NotFound`, saying nothing more."""
        now = self.store.clock.now()

        def run(conn: Connection) -> tuple[records.LiveFeed, Contents] | None:
            found = records.find_feed(conn, secret)
            if found is None:
                return None
            return found, read_contents(conn, found[1], now)

        read = self.store.run(run, write=False)
        if read is None:
            raise NotFound("no such calendar feed")
        (feed_id, _actor_id, last_used_at), contents = read
        if last_used_at is None or now - last_used_at >= records.TOUCH_EVERY:
            # Bookkeeping only: a database that takes no write now (read-only, busy) still
            # serves the feed, and a later poll records its use.
            with suppress(StorageError):
                self.store.run(lambda conn: records.touch_feed(conn, feed_id, now))
        # Loaded when a feed is first asked for: the iCalendar library takes a while to
        # import, and most processes (the CLI, the workers) never render a feed.
        from kalends.feeds.ical import render  # noqa: PLC0415

        # Written outside the transaction: the text of events not seen before takes time.
        return render(contents)
