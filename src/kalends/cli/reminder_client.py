"""What the reminder and notification-settings commands ask for, the same whether they
run on a database or a server.

Each protocol mirrors a service method for method, the acting actor first:
:class:`~kalends.reminders.destinations.Destinations` satisfies
:class:`DestinationsClient` as it is, and :class:`~kalends.cli.local_reminders.LocalReminders`
(the outbox, with a task named by reference or ID) satisfies :class:`RemindersClient`.
:mod:`kalends.cli.http_reminders` implements both over the HTTP API, where the server
acts as the token's owner and ``actor`` is not sent. A listing's keywords are written
once, as :class:`~kalends.reminders.inspection.IntentQuery`.

A command gets both from its session (:class:`ReminderSession`), chosen once by
:func:`~kalends.cli.remote.local_or_remote`.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Protocol, Unpack
from uuid import UUID

from kalends.cli.session import Reporter
from kalends.reminders.destinations import Destination, SendTestResult
from kalends.reminders.inspection import Intent, IntentQuery

__all__ = [
    "DestinationSettingsClient",
    "DestinationsClient",
    "ReminderSession",
    "RemindersClient",
]


class RemindersClient(Protocol):
    """The reminder intents the acting actor may see (:class:`~kalends.reminders.outbox.Outbox`)."""

    def list(self, actor: Any, **kw: Unpack[IntentQuery[str]]) -> builtins.list[Intent]:
        """The intents of tasks in the actor's lists, earliest first; only those of
        ``task`` (a reference or ID) when given."""
        ...

    def get(self, actor: Any, intent: UUID | str) -> Intent:
        """One intent, if the actor belongs to its task's list."""
        ...

    def requeue(self, actor: Any, intent: UUID | str) -> Intent:
        """Gives a dead (or waiting) intent a fresh round of attempts now; only its
        recipient or an editor of the list may."""
        ...


class DestinationsClient(Protocol):
    """An actor's notification settings
    (:class:`~kalends.reminders.destinations.Destinations`); each actor sees and changes
    only their own."""

    def set(
        self, actor: Any, target: Any, channel: str, urls: Sequence[str]
    ) -> builtins.list[Destination]:
        """Replaces the target's destinations on ``channel`` by ``urls``, in that order."""
        ...

    def add(self, actor: Any, target: Any, channel: str, url: str) -> Destination:
        """Appends one destination to the channel."""
        ...

    def remove(self, actor: Any, target: Any, channel: str, url: str) -> None:
        """Removes the destination of that full URL from the channel."""
        ...

    def list(
        self, actor: Any, target: Any, channel: str | None = None
    ) -> builtins.list[Destination]:
        """The target's destinations, by channel then position; one channel if given."""
        ...


class DestinationSettingsClient(DestinationsClient, Protocol):
    """The settings page's further use of the notification settings, naming a destination
    by its channel and position instead of its URL (which a page never holds)."""

    def remove_at(self, actor: Any, target: Any, channel: str, position: int) -> Destination:
        """Removes the destination at that position of the channel; returns it."""
        ...

    def send_test(self, actor: Any, target: Any, channel: str, position: int) -> SendTestResult:
        """Sends one test message to that destination now; what became of it."""
        ...


class ReminderSession(Reporter, Protocol):
    """What a reminder or notification command asks of its session, local or on a server:
    what printing its result needs (:class:`~kalends.cli.session.Reporter`), and these."""

    @property
    def reminders(self) -> RemindersClient: ...

    @property
    def destinations(self) -> DestinationsClient: ...
