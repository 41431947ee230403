"""Changes of a task that take several steps, each in one transaction: all, or none.

An edit of title, description and tags, a move that reparents and places, a schedule
made of the task as it is (its recipients found and its past reminders warned of), the
start of a series with its first occurrence read back, a skip with the next occurrence:
each is several calls of :class:`~kalends.tasks.service.TaskService` and
:class:`~kalends.tasks.series.SeriesService` that one request or one command makes
together. Run here in one transaction, a refused step leaves nothing of the earlier ones
written, for every caller alike (the HTTP API, the command line, the web panel).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, Unpack
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, NotFound
from kalends.identity import ActorRef, resolve_actor
from kalends.keywords import takes
from kalends.reminders import past_reminders
from kalends.storage.unit_of_work import Store
from kalends.tasks.keywords import EditKeywords, RelocateKeywords, RepeatKeywords
from kalends.tasks.models import Task
from kalends.tasks.series import SeriesService, SeriesView
from kalends.tasks.series_rules import SeriesRule
from kalends.tasks.service import TaskService
from kalends.tasks.values import parse_schedule

__all__ = ["Repeated", "ScheduleEdit", "Scheduled", "Skipped", "TaskChanges"]

T = TypeVar("T")
TaskRef = UUID | str
# The schedule JSON (as :func:`~kalends.tasks.values.parse_schedule` reads it) made of a
# task's current schedule, or of none.
ScheduleEdit = Callable[[Task | None], Mapping[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Repeated:
    """A series just started, and its first occurrence (the task it started from)."""

    series: SeriesView
    task: Task

    def to_json(self) -> dict[str, Any]:
        return {"series": self.series.to_json(), "task": self.task.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Repeated:
        return cls(series=SeriesView.from_json(d["series"]), task=Task.from_json(d["task"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """An occurrence skipped whole, the next one (if any) and the series after it."""

    skipped: Task
    successor: Task | None
    series: SeriesView

    def to_json(self) -> dict[str, Any]:
        return {
            "skipped": self.skipped.to_json(),
            "successor": self.successor.to_json() if self.successor else None,
            "series": self.series.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Skipped:
        successor = d["successor"]
        return cls(
            skipped=Task.from_json(d["skipped"]),
            successor=Task.from_json(successor) if successor else None,
            series=SeriesView.from_json(d["series"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Scheduled:
    """A task as just scheduled, and a warning for each of its reminders already past."""

    task: Task
    warnings: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**self.task.to_json(), "warnings": [dict(w) for w in self.warnings]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Scheduled:
        return cls(task=Task.from_json(d), warnings=tuple(d.get("warnings") or ()))


class TaskChanges:
    """The changes of several steps; each method is one transaction."""

    def __init__(self, store: Store, tasks: TaskService, series: SeriesService) -> None:
        self.store = store
        self.tasks = tasks
        self.series = series

    def _atomic(self, fn: Callable[[], T]) -> T:
        return self.store.run(lambda _conn: fn())

    @takes(EditKeywords, add_tags=(), remove_tags=())
    def edit(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, **edits: Unpack[EditKeywords]
    ) -> Task:
        """Renames, describes, tags and untags, in that order, each at the revision the
        step before left; nothing to change is :class:`InvalidInput`."""
        title, description = edits.get("title"), edits.get("description")
        add_tags, remove_tags = edits.get("add_tags", ()), edits.get("remove_tags", ())
        tasks = self.tasks

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

    @takes(RelocateKeywords, root=False, clear_section=False)
    def relocate(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, **to: Unpack[RelocateKeywords]
    ) -> Task:
        """Reparents (under ``parent``, or to the top with ``root``), then places among the
        siblings or in a section; nowhere to go is :class:`InvalidInput`."""
        tasks = self.tasks
        parent, root = to.get("parent"), to.get("root", False)
        before, after = to.get("before"), to.get("after")
        section, clear_section = to.get("section"), to.get("clear_section", False)
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

    @takes(RepeatKeywords)
    def repeat(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        rule: SeriesRule | dict[str, Any],
        **timing: Unpack[RepeatKeywords],
    ) -> Repeated:
        """Starts a series from an open root task, and reads the task back."""

        def start() -> Repeated:
            view = self.series.start_series(actor, task, expected_revision, rule, **timing)
            return Repeated(series=view, task=self.tasks.get(actor, task).task)

        return self._atomic(start)

    def schedule(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        edit: ScheduleEdit,
        *,
        from_current: bool = True,
    ) -> Scheduled:
        """Sets the whole schedule (as :func:`~kalends.tasks.values.parse_schedule` reads
        it) that ``edit`` makes of the task as it is now, in one transaction, and warns of
        each of its reminders whose time has already passed. Without ``from_current`` the
        task is not read first and ``edit`` is given ``None``.

        A reminder's recipient is an actor's handle or ID; none named is the acting actor;
        an unknown one is :class:`InvalidInput` (a mistake in the schedule, not a missing
        task).
        """
        tasks = self.tasks

        def write(conn: Connection) -> Task:
            def recipient(value: object, field: str) -> UUID:
                if value is None:
                    return resolve_actor(conn, actor)
                if not isinstance(value, str | UUID):
                    raise InvalidInput(f"{field}: an actor handle or ID is expected", field=field)
                try:
                    return resolve_actor(conn, value, field)
                except NotFound:
                    raise InvalidInput(f"{field}: no actor {value!r}", field=field) from None

            current = tasks.get(actor, task).task if from_current else None
            schedule = parse_schedule(edit(current), recipient)
            return tasks.set_schedule(actor, task, expected_revision, schedule)

        scheduled = self.store.run(write)
        warned = past_reminders(scheduled, self.store.clock.now())
        return Scheduled(task=scheduled, warnings=tuple(w.to_json() for w in warned))

    def skip(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Skipped:
        """Skips an occurrence whole; the next one, if the series makes one, comes with it."""

        def skip() -> Skipped:
            successors = self.series.skip(actor, task, expected_revision)
            skipped = self.tasks.get(actor, task).task
            following = successors[0] if successors else None
            successor = self.tasks.get(actor, following).task if following else None
            view = self.series.get(actor, skipped.id)
            return Skipped(skipped=skipped, successor=successor, series=view)

        return self._atomic(skip)
