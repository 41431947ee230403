"""A feed's contents as iCalendar text (RFC 5545), and its entity tag.

A task due on a date is an all-day event (``DTSTART;VALUE=DATE`` and the next day as its
end); a task due at a time, and a passage, is an event at that instant written in its
own zone (``TZID``, with the zone's ``VTIMEZONE``). The actor's reminders of a task are
its alarms (``ACTION:DISPLAY``), relative to the event's start: on an all-day event,
the reminder's wall time counted from the due date's midnight. UIDs are derived from
what never changes (a task's ID; a schedule's ID and the slot's instant), and
``DTSTAMP`` is when the thing last changed, so the same data renders the same bytes and
the same entity tag.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, time, timedelta
from functools import cache, lru_cache
from zoneinfo import ZoneInfo

from icalendar import Alarm, Calendar, Event, Timezone, vDuration

from kalends.feeds.contents import Contents
from kalends.feeds.values import FeedBody
from kalends.missions import ComingPassage
from kalends.tasks import DueTask

__all__ = ["PRODID", "passage_uid", "render", "task_uid"]

PRODID = "-//kalends//calendar feed//EN"
# What a calendar app is told about how often to look again (it may poll more often).
REFRESH = timedelta(minutes=15)
# kalends: the most events whose text is kept between renders (some 400 bytes each).
MAX_CACHED_EVENTS = 20_000


def task_uid(task_id: object) -> str:
    return f"task-{task_id}@kalends"


def passage_uid(schedule_id: object, at: datetime) -> str:
    return f"passage-{schedule_id}-{at.astimezone(UTC):%Y%m%dT%H%M%SZ}@kalends"


# The calendar's last line: the events go before it.
_END = b"END:VCALENDAR\r\n"


@cache
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def _local(at: datetime, zone: str) -> datetime:
    """``at`` as written in ``zone``: its wall time there (``TZID``), or UTC's ``Z``."""
    return at.astimezone(UTC) if zone == "UTC" else at.astimezone(_zone(zone))


def _task_event(task: DueTask) -> Event:
    event = Event()
    event.add("uid", task_uid(task.id))
    event.add("dtstamp", task.updated_at)
    event.add("summary", task.title)
    text = f"{task.list_name} · {task.ref}"
    if task.description:
        text = f"{text}\n\n{task.description}"
    event.add("description", text)
    event.add("categories", [task.list_name])
    event.add("transp", "TRANSPARENT")
    start: datetime | None = None
    if task.due_at is not None and task.zone is not None:
        start = _local(task.due_at, task.zone)
        event.add("dtstart", start)
    elif task.due_date is not None:
        event.add("dtstart", task.due_date)
        event.add("dtend", task.due_date + timedelta(days=1))
    for reminder in task.reminders:
        alarm = Alarm()
        alarm.add("action", "DISPLAY")
        alarm.add("description", task.title)
        if start is not None:
            alarm.add("trigger", reminder.at - start)
        elif task.due_date is not None:
            # An all-day event starts at midnight wherever it is seen: the reminder keeps
            # its wall time, counted from the due date's midnight.
            alarm.add("trigger", reminder.local - datetime.combine(task.due_date, time()))
        event.add_component(alarm)
    return event


def _passage_event(passage: ComingPassage) -> Event:
    event = Event()
    event.add("uid", passage_uid(passage.schedule_id, passage.at))
    event.add("dtstamp", passage.updated_at)
    event.add("summary", passage.title)
    event.add(
        "description", f"A passage of the schedule {passage.title} ({passage.workspace_name})"
    )
    event.add("categories", [passage.workspace_name])
    event.add("transp", "TRANSPARENT")
    event.add("dtstart", _local(passage.at, passage.zone))
    return event


@lru_cache(maxsize=MAX_CACHED_EVENTS)
def _task_text(task: DueTask) -> bytes:
    text: bytes = _task_event(task).to_ical()
    return text


@lru_cache(maxsize=MAX_CACHED_EVENTS)
def _passage_text(passage: ComingPassage) -> bytes:
    text: bytes = _passage_event(passage).to_ical()
    return text


@lru_cache(maxsize=256)
def _timezone_text(zone: str, first_year: int, last_year: int) -> bytes:
    """The zone's ``VTIMEZONE``, its transitions from ``first_year`` to ``last_year``."""
    found = Timezone.from_tzid(
        zone, first_date=date(first_year, 1, 1), last_date=date(last_year + 1, 1, 1)
    )
    text: bytes = found.to_ical()
    return text


@lru_cache(maxsize=256)
def _head(handle: str) -> bytes:
    """The calendar's own lines, from ``BEGIN:VCALENDAR`` to its first component."""
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("method", "PUBLISH")
    calendar.add("x-wr-calname", f"kalends: {handle}")
    calendar.add("refresh-interval", vDuration(REFRESH), parameters={"VALUE": "DURATION"})
    calendar.add("x-published-ttl", vDuration(REFRESH))
    whole: bytes = calendar.to_ical()
    return whole.removesuffix(_END)


def _zones(contents: Contents) -> list[bytes]:
    """The ``VTIMEZONE`` of each zone an event is written in, over the years it spans."""
    seen = {(t.zone, t.due_at.year) for t in contents.tasks if t.due_at is not None}
    seen.update((p.zone, p.at.year) for p in contents.passages)
    years: dict[str, tuple[int, int]] = {}
    for zone, year in seen:
        # UTC is written as such (a trailing Z), with no VTIMEZONE.
        if zone is None or zone == "UTC":
            continue
        low, high = years.get(zone, (year, year))
        years[zone] = (min(low, year), max(high, year))
    return [_timezone_text(z, low, high) for z, (low, high) in sorted(years.items())]


def render(contents: Contents) -> FeedBody:
    """The feed's iCalendar text and its entity tag (a digest of the text).

    Each event's text is kept by its value (every input it is written from), so a feed
    polled again writes only what changed since; the text is the same either way."""
    parts = [_head(contents.handle), *_zones(contents)]
    parts.extend(_task_text(t) for t in contents.tasks)
    parts.extend(_passage_text(p) for p in contents.passages)
    parts.append(_END)
    body = b"".join(parts)
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    return FeedBody(body=body, etag=etag)
