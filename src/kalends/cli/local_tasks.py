"""Local mode's :class:`~kalends.cli.task_client.TaskChanges`: the service calls of each
change in one transaction of the database, so that a refused step leaves nothing written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TypeVar
from uuid import UUID

from kalends.bootstrap import Services
from kalends.cli.task_client import Repeated, Scheduled, ScheduleEdit, Skipped, TaskRef
from kalends.errors import InvalidInput, NotFound
from kalends.identity import ActorRef
from kalends.reminders.scheduling import past_reminders
from kalends.tasks import Task, parse_schedule
from kalends.tasks.series_rules import SeriesRule

__all__ = ["LocalTaskChanges"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LocalTaskChanges:
    services: Services

    def _atomic(self, fn: Callable[[], T]) -> T:
        return self.services.store.run(lambda _conn: fn())

    def edit(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        *,
        title: str | None = None,
        description: str | None = None,
        add_tags: Sequence[str] = (),
        remove_tags: Sequence[str] = (),
    ) -> Task:
        tasks = self.services.tasks

        def edit() -> Task:
            changed: Task | None = None
            rev = expected_revision
            if title is not None:
                changed = tasks.rename(actor, task, rev, title)
                rev = changed.revision
            if description is not None:
                changed = tasks.describe(actor, task, rev, description)
                rev = changed.revision
            if add_tags:
                changed = tasks.tag(actor, task, rev, add_tags)
                rev = changed.revision
            if remove_tags:
                changed = tasks.untag(actor, task, rev, remove_tags)
            if changed is None:
                raise InvalidInput(
                    "edit: say what to change: title, description or tags", field="edit"
                )
            return changed

        return self._atomic(edit)

    def relocate(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        *,
        parent: TaskRef | None = None,
        root: bool = False,
        before: TaskRef | None = None,
        after: TaskRef | None = None,
        section: str | None = None,
        clear_section: bool = False,
    ) -> Task:
        tasks = self.services.tasks
        placed = before is not None or after is not None or section is not None or clear_section

        def move() -> Task:
            rev = expected_revision
            moved: Task | None = None
            if parent is not None or root:
                moved = tasks.reparent(actor, task, rev, parent)
                rev = moved.revision
            if placed:
                moved = tasks.move(
                    actor,
                    task,
                    rev,
                    before=before,
                    after=after,
                    section=section,
                    clear_section=clear_section,
                )
            if moved is None:
                raise InvalidInput(
                    "move: say where: before/after, section, parent or root", field="move"
                )
            return moved

        return self._atomic(move)

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

    def repeat(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        rule: SeriesRule,
        *,
        time_of_day: str | None = None,
        zone: str | None = None,
        end_date: date | None = None,
        count: int | None = None,
    ) -> Repeated:
        services = self.services

        def start() -> Repeated:
            view = services.series.start_series(
                actor,
                task,
                expected_revision,
                rule,
                time_of_day=time_of_day,
                zone=zone,
                end_date=end_date,
                count=count,
            )
            return Repeated(series=view, task=services.tasks.get(actor, task).task)

        return self._atomic(start)

    def skip(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Skipped:
        services = self.services

        def skip() -> Skipped:
            successors = services.series.skip(actor, task, expected_revision)
            skipped = services.tasks.get(actor, task).task
            following = successors[0] if successors else None
            successor = services.tasks.get(actor, following).task if following else None
            view = services.series.get(actor, skipped.id)
            return Skipped(skipped=skipped, successor=successor, series=view)

        return self._atomic(skip)
