"""Server mode's task clients: each call of :mod:`kalends.cli.task_client` as a request to
the HTTP API, its answer read back with the values' ``from_json``.

The server acts as the token's owner, so the ``actor`` every call takes is not sent.
Lists are named by ID on the API and by name or ID on the command line: a name is
looked up among the caller's lists (:meth:`Wire.list_id`), as local mode finds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Unpack
from uuid import UUID

from kalends.auth.grants import ActorPrivileges, Privilege
from kalends.cli.http import ServerError, path_part
from kalends.cli.task_client import Repeated, Scheduled, ScheduleEdit, Skipped, TaskRef
from kalends.errors import OpenDescendants
from kalends.identity import Actor, ActorRef, Role
from kalends.tasks import (
    Attachment,
    Comment,
    HistoryEvent,
    Section,
    Task,
    TaskDetail,
    TaskList,
    TreeNode,
)
from kalends.tasks.keywords import (
    CreateKeywords,
    EditKeywords,
    RelocateKeywords,
    RepeatKeywords,
    TreeFilters,
)
from kalends.tasks.series import SeriesView
from kalends.tasks.series_rules import SeriesRule

__all__ = ["HttpDirectory", "HttpGrants", "HttpSeries", "HttpTaskChanges", "HttpTasks", "Wire"]


class Wire(Protocol):
    """The requests a server-mode session sends (:class:`~kalends.cli.remote.Remote`)."""

    def get(self, path: str, **params: Any) -> Any: ...

    def post(self, path: str, body: Any = None) -> Any: ...

    def put(self, path: str, body: Any = None) -> Any: ...

    def patch(self, path: str, body: Any = None) -> Any: ...

    def delete(self, path: str, **params: Any) -> Any: ...

    def upload(self, path: str, *, files: Mapping[str, Any], data: Mapping[str, Any]) -> Any: ...

    def list_id(self, ref: str) -> str:
        """A list by ID, or by exact name among the caller's lists."""
        ...


def _task(ref: TaskRef, *rest: str) -> str:
    """``/api/tasks/REF[/…]``."""
    return "/".join(("/api/tasks", path_part(str(ref).strip()), *rest))


def _series(ref: UUID | str, *rest: str) -> str:
    """``/api/series/SERIES[/…]`` (a series by its ID or one of its tasks)."""
    return "/".join(("/api/series", path_part(str(ref).strip()), *rest))


def _optional(ref: TaskRef | None) -> str | None:
    return None if ref is None else str(ref)


@dataclass(frozen=True, slots=True)
class HttpDirectory:
    wire: Wire

    def _list(self, list_ref: UUID | str, *rest: str) -> str:
        return "/".join(("/api/lists", self.wire.list_id(str(list_ref)), *rest))

    def add_actor(self, handle: str, display_name: str, email: str | None = None) -> Actor:
        body = {"handle": handle, "display_name": display_name, "email": email}
        return Actor.from_json(self.wire.post("/api/actors", body))

    def actors(self) -> list[Actor]:
        return [Actor.from_json(d) for d in self.wire.get("/api/actors")]

    def create_list(self, actor: UUID | str, name: str) -> TaskList:
        return TaskList.from_json(self.wire.post("/api/lists", {"name": name}))

    def lists(self, actor: UUID | str, *, include_archived: bool = True) -> list[TaskList]:
        found = self.wire.get("/api/lists", active=not include_archived)
        return [TaskList.from_json(d) for d in found]

    def get_list(self, actor: UUID | str, list_ref: UUID | str) -> TaskList:
        return TaskList.from_json(self.wire.get(self._list(list_ref)))

    def share(
        self,
        actor: UUID | str,
        list_ref: UUID | str,
        member: UUID | str,
        role: Role | str | None,
        expected_revision: int | None = None,
    ) -> TaskList:
        route = self._list(list_ref, "members", path_part(str(member).strip()))
        if role is None:
            return TaskList.from_json(self.wire.delete(route, expectedRevision=expected_revision))
        body = {"role": str(role), "expectedRevision": expected_revision}
        return TaskList.from_json(self.wire.put(route, body))

    def archive(
        self,
        actor: UUID | str,
        list_ref: UUID | str,
        *,
        archived: bool = True,
        expected_revision: int | None = None,
    ) -> TaskList:
        route = self._list(list_ref, "archive" if archived else "unarchive")
        return TaskList.from_json(self.wire.post(route, {"expectedRevision": expected_revision}))

    def members(self, actor: UUID | str, list_ref: UUID | str) -> list[tuple[Actor, Role]]:
        found = self.wire.get(self._list(list_ref, "members"))
        return [(Actor.from_json(d), Role(d["role"])) for d in found]

    def add_section(self, actor: UUID | str, list_ref: UUID | str, name: str) -> Section:
        list_id = self.wire.list_id(str(list_ref))
        made = self.wire.post(f"/api/lists/{list_id}/sections", {"name": name})
        return Section.from_json(made, list_id=list_id)

    def sections(self, actor: UUID | str, list_ref: UUID | str) -> list[Section]:
        list_id = self.wire.list_id(str(list_ref))
        found = self.wire.get(f"/api/lists/{list_id}/sections")
        return [Section.from_json(d, list_id=list_id) for d in found]


@dataclass(frozen=True, slots=True)
class HttpGrants:
    wire: Wire

    def actors(self) -> list[ActorPrivileges]:
        return [_privileges(d) for d in self.wire.get("/api/actors")]

    def grant(self, actor: UUID | str, privilege: Privilege | str) -> ActorPrivileges:
        return _privileges(self.wire.post(_grant(actor, privilege)))

    def revoke(self, actor: UUID | str, privilege: Privilege | str) -> ActorPrivileges:
        return _privileges(self.wire.delete(_grant(actor, privilege)))


def _grant(actor: UUID | str, privilege: Privilege | str) -> str:
    return f"/api/actors/{path_part(str(actor).strip())}/grants/{path_part(str(privilege))}"


def _privileges(d: Mapping[str, Any]) -> ActorPrivileges:
    return ActorPrivileges(actor=Actor.from_json(d), may_run=bool(d.get("mayRun")))


@dataclass(frozen=True, slots=True)
class HttpTasks:
    wire: Wire

    def get(self, actor: ActorRef, task: TaskRef) -> TaskDetail:
        return TaskDetail.from_json(self.wire.get(_task(task)))

    def tree(
        self, actor: ActorRef, list_ref: UUID | str, **filters: Unpack[TreeFilters]
    ) -> list[TreeNode]:
        status = filters.get("status")
        found = self.wire.get(
            f"/api/lists/{self.wire.list_id(str(list_ref))}/tasks",
            section=filters.get("section"),
            tag=filters.get("tag"),
            status=None if status is None else str(status),
            dueFrom=filters.get("due_from"),
            dueTo=filters.get("due_to"),
            planned=filters.get("planned"),
            trashed=filters.get("include_trashed", False),
        )
        return [TreeNode.from_json(d) for d in found]

    def history(self, actor: ActorRef, task: TaskRef) -> list[HistoryEvent]:
        return [HistoryEvent.from_json(d) for d in self.wire.get(_task(task, "history"))]

    def create(
        self, actor: ActorRef, list_ref: UUID | str, title: str, **new: Unpack[CreateKeywords]
    ) -> Task:
        body = {
            "title": title,
            "description": new.get("description", ""),
            "parent": _optional(new.get("parent")),
            "section": new.get("section"),
            "tags": list(new.get("tags", ())),
            "before": _optional(new.get("before")),
            "after": _optional(new.get("after")),
        }
        route = f"/api/lists/{self.wire.list_id(str(list_ref))}/tasks"
        return Task.from_json(self.wire.post(route, body))

    def move_to_list(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        target_list: UUID | str,
        *,
        section: str | None = None,
    ) -> Task:
        body = {
            "expectedRevision": expected_revision,
            "list": self.wire.list_id(str(target_list)),
            "section": section,
        }
        return Task.from_json(self.wire.post(_task(task, "move"), body))

    def complete(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        *,
        complete_subtree: bool = False,
    ) -> Task:
        body = {"expectedRevision": expected_revision, "completeSubtree": complete_subtree}
        try:
            return Task.from_json(self.wire.post(_task(task, "complete"), body))
        except ServerError as exc:
            if exc.code != OpenDescendants.code:
                raise
            # The server says it in its body's words; rebuilt, it speaks the options'.
            details = exc.details
            raise OpenDescendants.of(
                int(details.get("open", 0)), recurring=bool(details.get("recurring"))
            ) from exc

    def reopen(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task:
        return self._revised(task, "reopen", expected_revision)

    def trash(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task:
        return self._revised(task, "trash", expected_revision)

    def restore(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task:
        return self._revised(task, "restore", expected_revision)

    def _revised(self, task: TaskRef, action: str, expected_revision: int) -> Task:
        body = {"expectedRevision": expected_revision}
        return Task.from_json(self.wire.post(_task(task, action), body))

    def comment(self, actor: ActorRef, task: TaskRef, body: str) -> Comment:
        return Comment.from_json(self.wire.post(_task(task, "comments"), {"body": body}))

    def attach(
        self, actor: ActorRef, task: TaskRef, name: str, media_type: str, data: bytes
    ) -> Attachment:
        answer = self.wire.upload(
            _task(task, "attachments"),
            files={"file": (name, data, media_type)},
            data={"name": name, "mediaType": media_type},
        )
        return Attachment.from_json(answer)


@dataclass(frozen=True, slots=True)
class HttpSeries:
    wire: Wire

    def get(self, actor: ActorRef, series_or_task: UUID | str) -> SeriesView:
        return SeriesView.from_json(self.wire.get(_series(series_or_task)))

    def pause(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView:
        return self._control(series, "pause", expected_revision)

    def resume(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView:
        return self._control(series, "resume", expected_revision)

    def stop(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView:
        return self._control(series, "stop", expected_revision)

    def _control(self, series: UUID | str, action: str, expected_revision: int) -> SeriesView:
        body = {"expectedRevision": expected_revision}
        return SeriesView.from_json(self.wire.post(_series(series, action), body))


@dataclass(frozen=True, slots=True)
class HttpTaskChanges:
    """Each change is one request: the route makes it in one transaction."""

    wire: Wire

    def edit(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, **edits: Unpack[EditKeywords]
    ) -> Task:
        body: dict[str, Any] = {
            "expectedRevision": expected_revision,
            "title": edits.get("title"),
            "description": edits.get("description"),
        }
        add_tags, remove_tags = edits.get("add_tags", ()), edits.get("remove_tags", ())
        if add_tags:
            body["addTags"] = list(add_tags)
        if remove_tags:
            body["removeTags"] = list(remove_tags)
        return Task.from_json(self.wire.patch(_task(task), body))

    def relocate(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, **to: Unpack[RelocateKeywords]
    ) -> Task:
        body = {
            "expectedRevision": expected_revision,
            "before": _optional(to.get("before")),
            "after": _optional(to.get("after")),
            "section": to.get("section"),
            "noSection": to.get("clear_section", False),
            "parent": _optional(to.get("parent")),
            "root": to.get("root", False),
        }
        return Task.from_json(self.wire.post(_task(task, "move"), body))

    def schedule(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        edit: ScheduleEdit,
        *,
        from_current: bool = True,
    ) -> Scheduled:
        # The server checks the schedule (and finds its recipients) itself.
        current = Task.from_json(self.wire.get(_task(task))) if from_current else None
        body = {**edit(current), "expectedRevision": expected_revision}
        return Scheduled.from_json(self.wire.put(_task(task, "schedule"), body))

    def repeat(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        rule: SeriesRule,
        **timing: Unpack[RepeatKeywords],
    ) -> Repeated:
        end_date = timing.get("end_date")
        body = {
            "expectedRevision": expected_revision,
            "rule": rule.to_json(),
            "time": timing.get("time_of_day"),
            "zone": timing.get("zone"),
            "until": None if end_date is None else end_date.isoformat(),
            "count": timing.get("count"),
        }
        return Repeated.from_json(self.wire.post(_task(task, "series"), body))

    def skip(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Skipped:
        body = {"expectedRevision": expected_revision}
        return Skipped.from_json(self.wire.post(_task(task, "skip"), body))
