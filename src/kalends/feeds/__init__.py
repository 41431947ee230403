"""Calendar feeds (iCalendar, RFC 5545): each actor's secret, revocable address of
their open tasks with a due value, their reminders as alarms, and the coming passages
of the schedules in their workspaces.

:class:`Feeds` is the service; :mod:`~kalends.feeds.contents` says what a feed shows,
:mod:`~kalends.feeds.ical` how it is written.
"""

from __future__ import annotations

from kalends.feeds.records import FEED_PREFIX, MAX_ACTIVE_FEEDS, check_feed_id
from kalends.feeds.service import Feeds
from kalends.feeds.values import FeedBody, FeedInfo, NewFeed, feed_path

__all__ = [
    "FEED_PREFIX",
    "MAX_ACTIVE_FEEDS",
    "FeedBody",
    "FeedInfo",
    "Feeds",
    "NewFeed",
    "check_feed_id",
    "feed_path",
]
