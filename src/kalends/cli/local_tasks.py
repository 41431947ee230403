"""Local mode's :class:`~kalends.cli.task_client.TaskChanges`: the task store's own
:class:`~kalends.tasks.changes.TaskChanges`, and a schedule made of the task as it is, in
the same transaction as its write.
"""

from __future__ import annotations

from uuid import UUID

from kalends.bootstrap import Services
from kalends.cli.task_client import Scheduled, ScheduleEdit, TaskRef
from kalends.errors import InvalidInput, NotFound
from kalends.identity import ActorRef
from kalends.reminders.scheduling import past_reminders
from kalends.tasks import Task, parse_schedule
from kalends.tasks.changes import TaskChanges

__all__ = ["LocalTaskChanges"]


class LocalTaskChanges(TaskChanges):
    def __init__(self, services: Services) -> None:
        super().__init__(services.store, services.tasks, services.series)
        self.services = services

    def schedule(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        edit: ScheduleEdit,
        *,
        from_current: bool = True,
    ) -> Scheduled:
        services = self.services

        def recipient(value: object, field: str) -> UUID:
            # Nobody named: the acting actor is reminded.
            who = actor if value is None else value
            if not isinstance(who, str | UUID):
                raise InvalidInput(f"{field}: an actor handle or ID is expected", field=field)
            try:
                return services.directory.actor(who).id
            except NotFound:
                raise NotFound(f"{field}: no actor {who!r}", field=field) from None

        def write() -> Task:
            current = services.tasks.get(actor, task).task if from_current else None
            schedule = parse_schedule(edit(current), recipient)
            return services.tasks.set_schedule(actor, task, expected_revision, schedule)

        scheduled = self._atomic(write)
        warned = past_reminders(scheduled, services.store.clock.now())
        return Scheduled(task=scheduled, warnings=tuple(w.to_json() for w in warned))
