"""Local mode's :class:`~kalends.cli.reminder_client.RemindersClient`: the outbox, with a
task named by reference or ID found in the same read transaction."""

from __future__ import annotations

import builtins
from typing import Any, Unpack
from uuid import UUID

from kalends.bootstrap import Services
from kalends.reminders.outbox import LIST_LIMIT, Intent, IntentQuery, Outbox

__all__ = ["LocalReminders"]


class LocalReminders:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.outbox = Outbox(services.store)

    def list(self, actor: Any, **kw: Unpack[IntentQuery[str]]) -> builtins.list[Intent]:
        services = self.services
        task = kw.get("task")

        def read() -> builtins.list[Intent]:
            task_id: UUID | None = None
            if task is not None:
                task_id = services.tasks.get(actor, task.strip()).task.id
            status, limit = kw.get("status"), kw.get("limit", LIST_LIMIT)
            return self.outbox.list(actor, status=status, task=task_id, limit=limit)

        return services.store.run(lambda _conn: read(), write=False)

    def get(self, actor: Any, intent: UUID | str) -> Intent:
        return self.outbox.get(actor, intent)

    def requeue(self, actor: Any, intent: UUID | str) -> Intent:
        return self.outbox.requeue(actor, intent)
