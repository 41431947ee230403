"""Server mode's reminder and notification-settings clients: each call of
:mod:`kalends.cli.reminder_client` as a request to the HTTP API, its answer read back
with the values' ``from_json``.

The server acts as the token's owner, so the ``actor`` every call takes is not sent. A
channel is checked before any request, as local mode checks it; a destination's URL
goes in a body, never in a path or query, since it holds secrets.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Unpack
from uuid import UUID

from kalends.cli.http import path_part
from kalends.cli.http_tasks import Wire
from kalends.reminders.destinations import Destination, parse_channel
from kalends.reminders.inspection import Intent, IntentQuery
from kalends.reminders.limits import LIST_LIMIT

__all__ = ["HttpDestinations", "HttpReminders"]


def _reminder(intent: UUID | str, *rest: str) -> str:
    """``/api/reminders/ID[/…]``."""
    return "/".join(("/api/reminders", path_part(str(intent).strip()), *rest))


@dataclass(frozen=True, slots=True)
class HttpReminders:
    wire: Wire

    def list(self, actor: Any, **kw: Unpack[IntentQuery[str]]) -> builtins.list[Intent]:
        task = kw.get("task")
        route = (
            "/api/reminders" if task is None else f"/api/tasks/{path_part(task.strip())}/reminders"
        )
        found = self.wire.get(route, status=kw.get("status"), limit=kw.get("limit", LIST_LIMIT))
        return [Intent.from_json(d) for d in found]

    def get(self, actor: Any, intent: UUID | str) -> Intent:
        return Intent.from_json(self.wire.get(_reminder(intent)))

    def requeue(self, actor: Any, intent: UUID | str) -> Intent:
        return Intent.from_json(self.wire.post(_reminder(intent, "retry")))


def _destinations(target: Any, channel: str | None = None, *rest: str) -> str:
    """``/api/actors/{target}/destinations[/{channel}[/…]]``, the channel checked first."""
    parts = ["/api/actors", path_part(str(target).strip()), "destinations"]
    if channel is not None:
        parts.append(path_part(parse_channel(channel).value))
    return "/".join((*parts, *rest))


@dataclass(frozen=True, slots=True)
class HttpDestinations:
    wire: Wire

    def set(
        self, actor: Any, target: Any, channel: str, urls: Sequence[str]
    ) -> builtins.list[Destination]:
        answer = self.wire.put(_destinations(target, channel), {"urls": list(urls)})
        return [Destination.from_json(d) for d in answer]

    def add(self, actor: Any, target: Any, channel: str, url: str) -> Destination:
        return Destination.from_json(self.wire.post(_destinations(target, channel), {"url": url}))

    def remove(self, actor: Any, target: Any, channel: str, url: str) -> None:
        self.wire.post(_destinations(target, channel, "remove"), {"url": url})

    def list(
        self, actor: Any, target: Any, channel: str | None = None
    ) -> builtins.list[Destination]:
        wanted = None if channel is None else parse_channel(channel).value
        return [
            Destination.from_json(d) for d in self.wire.get(_destinations(target), channel=wanted)
        ]
