"""Creating a task and editing its own fields: title, description and tags."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack
from uuid import UUID

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from kalends.errors import Conflict, InvalidInput
from kalends.identity import ActorRef, Role, resolve_actor
from kalends.keywords import takes
from kalends.storage.ids import ids_at
from kalends.storage.task_tables import (
    tags,
    task_tags,
    tasks,
)
from kalends.tasks import history
from kalends.tasks.access import require_list_role, task_with_role
from kalends.tasks.directory import find_list
from kalends.tasks.history import Event
from kalends.tasks.keywords import CreateKeywords
from kalends.tasks.loading import load_tasks
from kalends.tasks.models import (
    Task,
)
from kalends.tasks.positions import position_near
from kalends.tasks.refs import new_refs
from kalends.tasks.series_state import check_checklist_room
from kalends.tasks.steps import (
    ServiceBase,
    TaskRef,
    cas,
    lock_lists,
    require_live,
    section_id,
    set_tags,
    sibling_id,
    tag_names,
)
from kalends.tasks.values import (
    MAX_DESCRIPTION_BYTES,
    TaskStatus,
    check_text,
    check_title,
)


class TaskEdits(ServiceBase):
    """Creation and edits of :class:`~kalends.tasks.service.TaskService`."""

    @takes(CreateKeywords, description="", tags=())
    def create(
        self, actor: ActorRef, list_ref: UUID | str, title: str, **new: Unpack[CreateKeywords]
    ) -> Task:
        """Creates an open task at the end of its siblings, or before/after a sibling."""
        checked_title = check_title(title)
        description = new.get("description", "")
        checked_description = check_text(description, "description", MAX_DESCRIPTION_BYTES)
        checked_tags = tag_names(new.get("tags", ()))
        parent, section = new.get("parent"), new.get("section")
        before, after = new.get("before"), new.get("after")

        def run(conn: Connection) -> Task:
            actor_id = resolve_actor(conn, actor)
            now = self.store.clock.now()
            if parent is not None:
                parent_row = task_with_role(conn, actor_id, parent, Role.EDITOR, write=True)
                lock_lists(conn, parent_row.list_id)
                fresh = task_with_role(conn, actor_id, parent_row.id, Role.EDITOR, write=True)
                if fresh.list_id != parent_row.list_id:
                    raise Conflict(
                        "parent: the parent moved to another list meanwhile", field="parent"
                    )
                parent_row = fresh
                require_live(conn, parent_row, "parent")
                list_id, parent_id = parent_row.list_id, parent_row.id
                if list_ref is not None and find_list(conn, actor_id, list_ref) != list_id:
                    raise InvalidInput("parent: the parent task is in another list", field="parent")
                check_checklist_room(conn, parent_id, 1, "parent")
            else:
                list_id, parent_id = find_list(conn, actor_id, list_ref), None
                require_list_role(conn, actor_id, list_id, Role.EDITOR, write=True)
            position = position_near(
                conn,
                list_id,
                parent_id,
                before=sibling_id(conn, before, "before"),
                after=sibling_id(conn, after, "after"),
            )
            (task_id,) = ids_at(now, 1)
            conn.execute(
                insert(tasks).values(
                    id=task_id,
                    ref=new_refs(conn, 1)[0],
                    list_id=list_id,
                    section_id=section_id(conn, list_id, section),
                    parent_id=parent_id,
                    position=position,
                    title=checked_title,
                    description=checked_description,
                    status=TaskStatus.OPEN.value,
                    trashed=False,
                    revision=1,
                    schedule_revision=0,
                    created_by=actor_id,
                    created_at=now,
                    updated_at=now,
                )
            )
            set_tags(conn, list_id, [task_id], checked_tags, replace=False)
            payload = {"title": checked_title, "list_id": str(list_id), "tags": checked_tags}
            if parent_id is not None:
                payload["parent_id"] = str(parent_id)
            history.record(conn, actor_id, now, [Event(task_id, "created", payload)])
            return load_tasks(conn, [task_id])[0]

        return self.store.run(run)

    # --- edits -----------------------------------------------------------------------------

    def rename(self, actor: ActorRef, task: TaskRef, expected_revision: int, title: str) -> Task:
        checked = check_title(title)
        return self._edit(
            actor, task, expected_revision, "renamed", {"title": checked}, {"title": checked}
        )

    def describe(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, description: str
    ) -> Task:
        checked = check_text(description, "description", MAX_DESCRIPTION_BYTES)
        return self._edit(
            actor,
            task,
            expected_revision,
            "described",
            {"description": checked},
            {"bytes": len(checked.encode("utf-8"))},
        )

    def _edit(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        kind: str,
        values: dict[str, Any],
        payload: dict[str, Any],
    ) -> Task:
        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            cas(conn, row, expected_revision, now, values)
            history.record(conn, actor_id, now, [Event(row.id, kind, payload)])
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)

    def tag(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, names: Sequence[str]
    ) -> Task:
        """Adds tags (created in the task's list when new)."""
        return self._retag(actor, task, expected_revision, names, add=True)

    def untag(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, names: Sequence[str]
    ) -> Task:
        return self._retag(actor, task, expected_revision, names, add=False)

    def _retag(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        names: Sequence[str],
        *,
        add: bool,
    ) -> Task:
        checked = tag_names(names)
        if not checked:
            raise InvalidInput("tags: name at least one tag", field="tags")

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            cas(conn, row, expected_revision, now, {})
            if add:
                set_tags(conn, row.list_id, [row.id], checked, replace=False)
            else:
                ids = select(tags.c.id).where(
                    tags.c.list_id == row.list_id, tags.c.name.in_(checked)
                )
                conn.execute(
                    delete(task_tags).where(
                        task_tags.c.task_id == row.id, task_tags.c.tag_id.in_(ids)
                    )
                )
            kind = "tagged" if add else "untagged"
            history.record(conn, actor_id, now, [Event(row.id, kind, {"tags": checked})])
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)
