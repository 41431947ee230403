"""An actor's notification settings: where each channel's reminders go.

Each actor keeps, per channel, an ordered list of Apprise URLs. The ``email``
channel takes Apprise e-mail URLs (``mailto://``, ``mailtos://``); the ``push``
channel takes any other Apprise service (ntfy, Gotify, Pushover, Matrix, web
hooks, …). Every operation is one transaction and writes nothing when refused.

The URLs hold passwords and tokens, so they are never shown back: a
:class:`Destination` displays Apprise's privacy-redacted form, and error
messages name the scheme only. The delivery worker reads the full URLs with
:func:`urls_for`, inside its own transaction. A destination is also named by its
channel and position (kept when others are removed), which a page may show: so one
can be removed, or sent a test message, without its URL.

An actor may read and change only their own settings, in local mode as on a server.
"""

from __future__ import annotations

import builtins
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, delete, func, insert, select, type_coerce
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound
from kalends.identity import ActorRef, resolve_actor
from kalends.reminders.channels import Channel
from kalends.reminders.raw_forms import RAW
from kalends.reminders.transports import (
    EMAIL_SCHEMES,
    AppriseTransport,
    Delivery,
    DeliveryFailed,
    Transport,
    apprise_service,
    redacted_url,
    url_scheme,
)
from kalends.storage.identity_tables import actors
from kalends.storage.task_tables import actor_destinations
from kalends.storage.unit_of_work import Store

__all__ = [
    "MAX_DESTINATIONS",
    "MAX_URL_LENGTH",
    "Destination",
    "Destinations",
    "SendTestResult",
    "parse_channel",
    "destinations_of",
    "recipients_of",
    "urls_for",
]

MAX_DESTINATIONS = 8
"""kalends decision: at most this many destinations per actor and channel.

A reminder goes to every destination of its channel, each its own network call
within one delivery attempt; eight covers a phone, a desktop and a few shared
rooms while bounding how long one attempt may take and how far one actor's
settings can fan a reminder out.
"""

MAX_URL_LENGTH = 2000
"""The longest destination URL kalends keeps, in characters."""


@dataclass(frozen=True, slots=True)
class Destination:
    """One place a channel's reminders go. ``url`` holds secrets: show ``display``."""

    channel: Channel
    position: int
    url: str = field(repr=False)
    display: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        """The destination as JSON, with the URL in its redacted form only."""
        return {
            "channel": self.channel.value,
            "position": self.position,
            "display": self.display,
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Destination:
        """The destination :meth:`to_json` wrote. The JSON never holds the URL, so its
        redacted form stands in for it."""
        display = str(d["display"])
        return cls(
            channel=Channel(d["channel"]),
            position=int(d["position"]),
            url=display,
            display=display,
            created_at=datetime.fromisoformat(str(d["created_at"]).replace("Z", "+00:00")),
        )


@dataclass(frozen=True, slots=True)
class SendTestResult:
    """What became of one test message: sent, or the transport's reason (redacted)."""

    destination: Destination
    at: datetime
    error: str | None

    @property
    def sent(self) -> bool:
        return self.error is None


TEST_TITLE = "kalends test message"


class Destinations:
    """Each actor's notification settings; one transaction per operation.

    ``transport`` sends test messages (:meth:`send_test`); Apprise's when not given,
    made at the first test message.
    """

    def __init__(self, store: Store, transport: Transport | None = None) -> None:
        self.store = store
        self._transport = transport

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = AppriseTransport()
        return self._transport

    def set(
        self, actor: ActorRef, target: ActorRef, channel: str, urls: Sequence[str]
    ) -> builtins.list[Destination]:
        """Replaces the target's destinations on ``channel`` by ``urls``, in that order.

        An empty sequence clears the channel. A URL kept from before keeps its
        ``created_at``.
        """
        checked_channel = parse_channel(channel)
        if isinstance(urls, str) or not isinstance(urls, Sequence):
            raise InvalidInput("urls: a list of Apprise URLs is expected", field="urls")
        if len(urls) > MAX_DESTINATIONS:
            raise InvalidInput(
                f"urls: at most {MAX_DESTINATIONS} {checked_channel.value} destinations, "
                f"got {len(urls)}",
                field="urls",
            )
        checked = [check_url(checked_channel, url, f"urls[{i}]") for i, url in enumerate(urls)]
        seen: dict[str, int] = {}
        for i, url in enumerate(checked):
            if url in seen:
                raise InvalidInput(
                    f"urls[{i}]: the same URL as urls[{seen[url]}]", field=f"urls[{i}]"
                )
            seen[url] = i

        def run(conn: Connection) -> builtins.list[Destination]:
            target_id = _own_settings(conn, actor, target, "change")
            _lock_actor(conn, target_id)
            where = (
                actor_destinations.c.actor_id == target_id,
                actor_destinations.c.channel == checked_channel.value,
            )
            kept: dict[str, datetime] = dict(
                conn.execute(
                    select(actor_destinations.c.url, actor_destinations.c.created_at).where(*where)
                ).all()
            )
            conn.execute(delete(actor_destinations).where(*where))
            now = self.store.clock.now()
            written = [
                _destination(checked_channel, position, url, kept.get(url, now))
                for position, url in enumerate(checked, start=1)
            ]
            if written:
                conn.execute(
                    insert(actor_destinations),
                    [
                        {
                            "id": uuid.uuid4(),
                            "actor_id": target_id,
                            "channel": checked_channel.value,
                            "position": d.position,
                            "url": d.url,
                            "created_at": d.created_at,
                        }
                        for d in written
                    ],
                )
            return written

        return self.store.run(run)

    def add(self, actor: ActorRef, target: ActorRef, channel: str, url: str) -> Destination:
        """Appends one destination to the target's ``channel``."""
        checked_channel = parse_channel(channel)
        checked = check_url(checked_channel, url, "url")

        def run(conn: Connection) -> Destination:
            target_id = _own_settings(conn, actor, target, "change")
            _lock_actor(conn, target_id)
            where = (
                actor_destinations.c.actor_id == target_id,
                actor_destinations.c.channel == checked_channel.value,
            )
            count, last, present = conn.execute(
                select(
                    func.count(),
                    func.max(actor_destinations.c.position),
                    func.count().filter(actor_destinations.c.url == checked),
                ).where(*where)
            ).one()
            if present:
                raise Conflict(
                    f"url: this {checked_channel.value} destination is already set", field="url"
                )
            if count >= MAX_DESTINATIONS:
                raise InvalidInput(
                    f"url: {checked_channel.value} already has {count} destinations, "
                    f"the most kalends keeps per channel ({MAX_DESTINATIONS})",
                    field="url",
                )
            position = (last or 0) + 1
            created_at = self.store.clock.now()
            try:
                with conn.begin_nested():
                    conn.execute(
                        insert(actor_destinations).values(
                            id=uuid.uuid4(),
                            actor_id=target_id,
                            channel=checked_channel.value,
                            position=position,
                            url=checked,
                            created_at=created_at,
                        )
                    )
            except IntegrityError as exc:
                raise Conflict(
                    f"url: this {checked_channel.value} destination is already set", field="url"
                ) from exc
            return _destination(checked_channel, position, checked, created_at)

        return self.store.run(run)

    def remove(self, actor: ActorRef, target: ActorRef, channel: str, url: str) -> None:
        """Removes one destination; :class:`NotFound` when the channel has no such URL."""
        checked_channel = parse_channel(channel)
        if not isinstance(url, str):
            raise InvalidInput("url: an Apprise URL is expected", field="url")
        text = url.strip()

        def run(conn: Connection) -> None:
            target_id = _own_settings(conn, actor, target, "change")
            removed = conn.execute(
                delete(actor_destinations).where(
                    actor_destinations.c.actor_id == target_id,
                    actor_destinations.c.channel == checked_channel.value,
                    actor_destinations.c.url == text,
                )
            ).rowcount
            if not removed:
                raise NotFound(f"url: no such {checked_channel.value} destination", field="url")

        self.store.run(run)

    def remove_at(
        self, actor: ActorRef, target: ActorRef, channel: str, position: int
    ) -> Destination:
        """Removes the destination at ``position`` of the channel and returns it (its
        display); :class:`NotFound` when the channel has none there. The others keep
        their positions."""
        checked_channel = parse_channel(channel)
        checked_position = _position(position)

        def run(conn: Connection) -> Destination:
            target_id = _own_settings(conn, actor, target, "change")
            found = _at(conn, target_id, checked_channel, checked_position)
            conn.execute(
                delete(actor_destinations).where(
                    actor_destinations.c.actor_id == target_id,
                    actor_destinations.c.channel == checked_channel.value,
                    actor_destinations.c.position == checked_position,
                )
            )
            return found

        return self.store.run(run)

    def send_test(
        self, actor: ActorRef, target: ActorRef, channel: str, position: int
    ) -> SendTestResult:
        """Sends one test message now to the destination at ``position`` of the channel,
        through the transport reminders take; what became of it. A transport's failure
        is the result's ``error`` (secrets of the URL masked), not an exception;
        :class:`NotFound` when the channel has no destination there.

        Only the target's own destination is read, in a transaction of its own; the
        message is sent after it ends. Nothing is written.
        """
        checked_channel = parse_channel(channel)
        checked_position = _position(position)

        def run(conn: Connection) -> tuple[Destination, Any]:
            target_id = _own_settings(conn, actor, target, "use")
            found = _at(conn, target_id, checked_channel, checked_position)
            person = conn.execute(
                select(actors.c.handle, actors.c.display_name, actors.c.email).where(
                    actors.c.id == target_id
                )
            ).one()
            return found, person

        found, person = self.store.run(run, write=False)
        at = self.store.clock.now()
        job_id = f"test-{uuid.uuid4()}"
        body = (
            f"This is a test message from kalends to your {checked_channel.value} "
            f"destination {checked_position}. Reminders of your tasks arrive here like "
            f"this one.\n\nReminder ID: {job_id}"
        )
        delivery = Delivery(
            job_id=job_id,
            channel=checked_channel.value,
            destinations=(found.url,),
            recipient=person.handle,
            recipient_name=person.display_name,
            recipient_email=person.email,
            title=TEST_TITLE,
            body=body,
            task_id=uuid.UUID(int=0),
            task_ref="",
            at=at,
        )
        try:
            self.transport.send(delivery)
        except DeliveryFailed as exc:
            # One destination: its number in the delivery says nothing here.
            said = re.sub(
                rf"^{checked_channel.value}: destination 1 \(([^)]*)\): ", r"\1: ", exc.message
            )
            return SendTestResult(destination=found, at=at, error=said)
        return SendTestResult(destination=found, at=at, error=None)

    def list(
        self, actor: ActorRef, target: ActorRef, channel: str | None = None
    ) -> builtins.list[Destination]:
        """The target's destinations, by channel then position; one channel if given."""
        checked_channel = None if channel is None else parse_channel(channel)

        def run(conn: Connection) -> builtins.list[Destination]:
            target_id = _own_settings(conn, actor, target, "see")
            query = (
                select(
                    actor_destinations.c.channel,
                    actor_destinations.c.position,
                    actor_destinations.c.url,
                    actor_destinations.c.created_at,
                )
                .where(actor_destinations.c.actor_id == target_id)
                .order_by(actor_destinations.c.channel, actor_destinations.c.position)
            )
            if checked_channel is not None:
                query = query.where(actor_destinations.c.channel == checked_channel.value)
            return [
                _destination(Channel(r.channel), r.position, r.url, r.created_at)
                for r in conn.execute(query)
            ]

        return self.store.run(run, write=False)


def urls_for(
    conn: Connection, recipients: Sequence[UUID], channel: Channel | str
) -> dict[UUID, tuple[str, ...]]:
    """Each recipient's destination URLs on ``channel``, in order; one query for all of them.

    Runs inside the caller's transaction. Every recipient asked for is a key;
    one without destinations maps to an empty tuple.
    """
    checked_channel = parse_channel(channel)
    wanted = builtins.list(dict.fromkeys(recipients))
    found: dict[UUID, builtins.list[str]] = {r: [] for r in wanted}
    if not wanted:
        return {}
    rows = conn.execute(
        select(actor_destinations.c.actor_id, actor_destinations.c.url)
        .where(
            actor_destinations.c.channel == checked_channel.value,
            actor_destinations.c.actor_id.in_(wanted),
        )
        .order_by(actor_destinations.c.actor_id, actor_destinations.c.position)
    )
    for actor_id, url in rows:
        found[actor_id].append(url)
    return {r: tuple(urls) for r, urls in found.items()}


_DESTINATIONS_OF = (
    select(actor_destinations.c.actor_id, actor_destinations.c.channel, actor_destinations.c.url)
    .where(actor_destinations.c.actor_id.in_(bindparam("recipients", expanding=True)))
    .order_by(
        actor_destinations.c.actor_id,
        actor_destinations.c.channel,
        actor_destinations.c.position,
    )
)


def destinations_of(
    conn: Connection, recipients: Sequence[UUID]
) -> dict[tuple[UUID, str], tuple[str, ...]]:
    """Every channel's destination URLs of these recipients, keyed by (recipient, channel);
    one prebuilt statement for all of them. Absent keys have no destination."""
    if not recipients:
        return {}
    found: dict[tuple[UUID, str], builtins.list[str]] = {}
    for actor_id, channel, url in conn.execute(_DESTINATIONS_OF, {"recipients": recipients}):
        found.setdefault((actor_id, channel), []).append(url)
    return {key: tuple(urls) for key, urls in found.items()}


# Who a recipient is, for a message: handle, display name, e-mail address.
Person = tuple[str, str, str | None]

_RECIPIENTS_OF = (
    select(
        # The actor's ID in the database's own form (kalends.reminders.outbox.RAW).
        type_coerce(actors.c.id, RAW),
        actors.c.handle,
        actors.c.display_name,
        actors.c.email,
        actor_destinations.c.channel,
        actor_destinations.c.url,
    )
    .select_from(actors.outerjoin(actor_destinations, actor_destinations.c.actor_id == actors.c.id))
    .where(type_coerce(actors.c.id, RAW).in_(bindparam("recipients", expanding=True)))
    .order_by(actors.c.id, actor_destinations.c.channel, actor_destinations.c.position)
)


def recipients_of(
    conn: Connection, recipients: Sequence[Any]
) -> tuple[dict[Any, Person], dict[tuple[Any, str], tuple[str, ...]]]:
    """Who these recipients are and every channel's destination URLs of theirs, read
    together in one prebuilt statement, inside the caller's transaction: the delivery
    worker's view of its recipients, once per batch rather than once per reminder.

    Recipients are given and keyed by their IDs in the database's own form (see
    :data:`kalends.reminders.outbox.RAW`); the URLs by (recipient, channel), in order,
    an absent key having none. A recipient that does not exist is left out.
    """
    if not recipients:
        return {}, {}
    people: dict[Any, Person] = {}
    found: dict[tuple[Any, str], builtins.list[str]] = {}
    for actor_id, handle, name, email, channel, url in conn.execute(
        _RECIPIENTS_OF, {"recipients": recipients}
    ):
        people[actor_id] = (handle, name, email)
        if channel is not None:
            found.setdefault((actor_id, channel), []).append(url)
    return people, {key: tuple(urls) for key, urls in found.items()}


def parse_channel(value: object, field: str = "channel") -> Channel:
    """The channel named by ``value``: ``email`` or ``push``."""
    if isinstance(value, Channel):
        return value
    if isinstance(value, str) and value in {c.value for c in Channel}:
        return Channel(value)
    raise InvalidInput(f"{field}: unknown channel {value!r}; use email or push", field=field)


def check_url(channel: Channel, url: object, field: str) -> str:
    """The URL, stripped, once Apprise can use it on ``channel``; never echoes the URL."""
    if not isinstance(url, str):
        raise InvalidInput(f"{field}: an Apprise URL is expected", field=field)
    text = url.strip()
    if not text:
        raise InvalidInput(f"{field}: an Apprise URL cannot be blank", field=field)
    if len(text) > MAX_URL_LENGTH:
        raise InvalidInput(
            f"{field}: at most {MAX_URL_LENGTH} characters, got {len(text)}", field=field
        )
    scheme = url_scheme(text)
    found = apprise_service(text)
    if found is None:
        if scheme is None:
            raise InvalidInput(
                f"{field}: not an Apprise URL (scheme://…, e.g. mailto:// or ntfy://)",
                field=field,
            )
        raise InvalidInput(
            f"{field}: Apprise cannot use this {scheme}:// URL; check it against the "
            "service's Apprise documentation",
            field=field,
        )
    service_scheme = found[0]
    if channel is Channel.EMAIL and service_scheme not in EMAIL_SCHEMES:
        raise InvalidInput(
            f"{field}: an email destination is a mailto:// or mailtos:// URL, "
            f"got {service_scheme}://",
            field=field,
        )
    if channel is Channel.PUSH and service_scheme in EMAIL_SCHEMES:
        raise InvalidInput(
            f"{field}: a push destination cannot be an e-mail ({service_scheme}://) URL; "
            "add it to the email channel",
            field=field,
        )
    return text


def _own_settings(conn: Connection, actor: ActorRef, target: ActorRef, verb: str) -> UUID:
    """The target's ID once the acting actor is the target (only their own settings)."""
    actor_id = resolve_actor(conn, actor)
    target_id = resolve_actor(conn, target, "target")
    if actor_id != target_id:
        raise Forbidden(f"you may only {verb} your own notification settings")
    return target_id


def _position(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"position: a whole number from 1, got {value!r}", field="position")
    return value


def _at(conn: Connection, actor_id: UUID, channel: Channel, position: int) -> Destination:
    """The actor's destination at ``position`` of ``channel``; :class:`NotFound` if none."""
    row = conn.execute(
        select(actor_destinations.c.url, actor_destinations.c.created_at).where(
            actor_destinations.c.actor_id == actor_id,
            actor_destinations.c.channel == channel.value,
            actor_destinations.c.position == position,
        )
    ).one_or_none()
    if row is None:
        raise NotFound(f"position: no {channel.value} destination {position}", field="position")
    return _destination(channel, position, row.url, row.created_at)


def _lock_actor(conn: Connection, actor_id: UUID) -> None:
    """Serializes changes to one actor's settings (count and position checks).

    PostgreSQL: ``FOR NO KEY UPDATE`` on the actor's row, which leaves the key-share
    locks of foreign keys (other tables' rows naming the actor) free to proceed.
    SQLite: nothing, its write transaction already holds the database's write lock.
    """
    query = select(actors.c.id).where(actors.c.id == actor_id).with_for_update(key_share=True)
    conn.execute(query).one()


def _destination(channel: Channel, position: int, url: str, created_at: datetime) -> Destination:
    return Destination(
        channel=channel,
        position=position,
        url=url,
        display=redacted_url(url),
        created_at=created_at,
    )
