"""Calendar feed rows, statement by statement: create, list, revoke, find, touch.

A feed's secret is :data:`FEED_PREFIX` and 256 random bits; only its SHA-256 is stored
(as for API tokens, :mod:`kalends.auth.tokens`). A revoked feed stays listed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.engine import Connection

from kalends.auth import digest, new_secret, usable
from kalends.errors import InvalidInput, LimitReached, NotFound
from kalends.feeds.values import FeedInfo
from kalends.identity import parse_uuid
from kalends.storage.feed_tables import calendar_feeds
from kalends.storage.ids import ids_at
from kalends.storage.prepared import Prepared

__all__ = [
    "FEED_PREFIX",
    "MAX_ACTIVE_FEEDS",
    "TOUCH_EVERY",
    "LiveFeed",
    "check_feed_id",
    "create_feed",
    "find_feed",
    "list_feeds",
    "revoke_feed",
    "touch_feed",
]

# Every feed secret starts with this.
FEED_PREFIX = "kcal_"
# kalends: the most feeds an actor may hold that are not revoked (one per calendar app).
MAX_ACTIVE_FEEDS = 20
# kalends: a feed's last use is written at most this often; calendar apps poll every few
# minutes, and a write per poll would cost more than the read it records.
TOUCH_EVERY = timedelta(hours=1)

_C = calendar_feeds.c


def check_feed_id(feed_id: object) -> UUID:
    parsed = parse_uuid(feed_id, "feed")
    if parsed is None:
        raise InvalidInput(f"feed: not a feed ID: {feed_id!r}", field="feed")
    return parsed


def create_feed(conn: Connection, actor_id: UUID, now: datetime) -> tuple[FeedInfo, str]:
    """A new feed of ``actor_id`` and its secret, shown this once."""
    active = conn.execute(
        select(func.count()).where(_C.actor_id == actor_id, _C.revoked_at.is_(None))
    ).scalar_one()
    if active >= MAX_ACTIVE_FEEDS:
        raise LimitReached(
            f"feeds: at most {MAX_ACTIVE_FEEDS} active calendar feeds; revoke one first",
            field="feed",
        )
    secret = new_secret(FEED_PREFIX)
    (feed_id,) = ids_at(now, 1)
    info = FeedInfo(
        id=feed_id, actor_id=actor_id, created_at=now, revoked_at=None, last_used_at=None
    )
    conn.execute(
        insert(calendar_feeds).values(
            id=feed_id, actor_id=actor_id, secret_hash=digest(secret), created_at=now
        )
    )
    return info, secret


def list_feeds(conn: Connection, actor_id: UUID) -> list[FeedInfo]:
    """The actor's feeds, newest first, revoked ones included."""
    rows = conn.execute(
        select(calendar_feeds)
        .where(_C.actor_id == actor_id)
        .order_by(_C.created_at.desc(), _C.id.desc())
    ).all()
    return [FeedInfo.from_row(r) for r in rows]


def revoke_feed(conn: Connection, actor_id: UUID, feed_id: UUID, now: datetime) -> FeedInfo:
    """Revoke the actor's own feed ``feed_id``; a revoked one stays as it was."""
    conn.execute(
        update(calendar_feeds)
        .where(_C.id == feed_id, _C.actor_id == actor_id, _C.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    row = conn.execute(
        select(calendar_feeds).where(_C.id == feed_id, _C.actor_id == actor_id)
    ).first()
    if row is None:
        # Someone else's feed is as unknown as a missing one.
        raise NotFound(f"feed: no calendar feed {feed_id}", field="feed")
    return FeedInfo.from_row(row)


# A live feed found by its secret: (id, actor_id, last_used_at).
LiveFeed = tuple[UUID, UUID, datetime | None]

_FIND = Prepared(
    select(_C.id, _C.actor_id, _C.last_used_at).where(
        _C.secret_hash == bindparam("hash"), _C.revoked_at.is_(None)
    )
)


def find_feed(conn: Connection, secret: str) -> LiveFeed | None:
    """The live feed whose secret is ``secret``; ``None`` for any other text."""
    if not usable(secret, FEED_PREFIX):
        return None
    row = _FIND.first(conn, {"hash": digest(secret)})
    return None if row is None else (row.id, row.actor_id, row.last_used_at)


def touch_feed(conn: Connection, feed_id: UUID, now: datetime) -> None:
    """Record a use of the feed, unless one was recorded within :data:`TOUCH_EVERY` or it
    was revoked meanwhile."""
    conn.execute(
        update(calendar_feeds)
        .where(
            _C.id == feed_id,
            _C.revoked_at.is_(None),
            (_C.last_used_at.is_(None)) | (_C.last_used_at <= now - TOUCH_EVERY),
        )
        .values(last_used_at=now)
    )
