"""Moving a task: among its siblings or into a section, to another list, under another
parent.
"""

from __future__ import annotations

from typing import Any, Unpack
from uuid import UUID

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, ReparentCycle
from kalends.identity import ActorRef, Role
from kalends.keywords import takes
from kalends.storage.task_tables import (
    sections,
    task_tags,
    tasks,
)
from kalends.tasks import history
from kalends.tasks.access import require_list_role, task_with_role
from kalends.tasks.directory import find_list
from kalends.tasks.history import Event
from kalends.tasks.keywords import PlaceKeywords
from kalends.tasks.loading import load_tasks
from kalends.tasks.models import (
    Task,
)
from kalends.tasks.positions import end_position, position_near
from kalends.tasks.series_state import check_checklist_room
from kalends.tasks.steps import (
    ServiceBase,
    TaskChange,
    TaskRef,
    cas,
    group_by_tags,
    lock_lists,
    require_live,
    section_id,
    set_tags,
    sibling_id,
    tag_names_of,
)
from kalends.tasks.tree import ancestor_ids, subtree_ids


class TaskMoves(ServiceBase):
    """The moves of :class:`~kalends.tasks.service.TaskService`."""

    @takes(PlaceKeywords, clear_section=False)
    def move(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, **place: Unpack[PlaceKeywords]
    ) -> Task:
        """Moves a task among its siblings and/or into a section of its list."""
        before, after = place.get("before"), place.get("after")
        section, clear_section = place.get("section"), place.get("clear_section", False)

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            values: dict[str, Any] = {}
            payload: dict[str, Any] = {}
            if before is not None or after is not None:
                values["position"] = position_near(
                    conn,
                    row.list_id,
                    row.parent_id,
                    before=sibling_id(conn, before, "before"),
                    after=sibling_id(conn, after, "after"),
                    moving=row.id,
                )
                payload["position"] = values["position"]
            if section is not None or clear_section:
                values["section_id"] = (
                    None if clear_section else section_id(conn, row.list_id, section)
                )
                payload["section"] = None if clear_section else section
            if not values:
                raise InvalidInput("move: say where: before, after or section", field="move")
            cas(conn, row, expected_revision, now, values)
            history.record(conn, actor_id, now, [Event(row.id, "moved", payload)])
            self._notify(conn, [row.id], TaskChange("moved", row.id, actor_id, now))
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)

    def move_to_list(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        target_list: UUID | str,
        *,
        section: str | None = None,
    ) -> Task:
        """Moves a root task and its whole subtree to another list.

        The actor must be an editor of both lists. The moved tasks take the target
        list's tags and sections by name (tags are created there when missing; a
        section name the target lacks is dropped); ``section`` places the root.
        """

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            target_id = find_list(conn, actor_id, target_list)
            require_list_role(conn, actor_id, target_id, Role.EDITOR, write=True)
            lock_lists(conn, row.list_id, target_id)
            row = self._reread(conn, actor_id, row, expected_revision)
            if target_id == row.list_id:
                raise InvalidInput("list: the task is already in that list", field="list")
            if row.parent_id is not None:
                raise InvalidInput(
                    "task: only a root task moves to another list; reparent it first", field="task"
                )
            ids = subtree_ids(conn, row.id)

            names = tag_names_of(conn, ids)
            section_names = dict(
                conn.execute(
                    select(tasks.c.id, sections.c.name)
                    .join(sections, sections.c.id == tasks.c.section_id)
                    .where(tasks.c.id.in_(ids))
                ).all()
            )
            target_sections = dict(
                conn.execute(
                    select(sections.c.name, sections.c.id).where(sections.c.list_id == target_id)
                ).all()
            )
            # Without an explicit section the root keeps its section by name, like its items.
            root_section = (
                section_id(conn, target_id, section)
                if section is not None
                else target_sections.get(section_names.get(row.id, ""))
            )
            cas(
                conn,
                row,
                expected_revision,
                now,
                {
                    "list_id": target_id,
                    "position": end_position(conn, target_id, None),
                    "section_id": root_section,
                },
            )
            others = [i for i in ids if i != row.id]
            if others:
                conn.execute(
                    update(tasks)
                    .where(tasks.c.id.in_(others))
                    .values(list_id=target_id, revision=tasks.c.revision + 1, updated_at=now)
                )
                remapped = [
                    {"i": i, "s": target_sections.get(section_names[i])}
                    for i in others
                    if i in section_names
                ]
                for item in remapped:
                    conn.execute(
                        update(tasks).where(tasks.c.id == item["i"]).values(section_id=item["s"])
                    )
            conn.execute(delete(task_tags).where(task_tags.c.task_id.in_(ids)))
            for name_set, task_ids in group_by_tags(names).items():
                set_tags(conn, target_id, task_ids, list(name_set), replace=False)
            payload = {"from_list": str(row.list_id), "to_list": str(target_id)}
            history.record(
                conn,
                actor_id,
                now,
                [Event(i, "moved-list", payload | {"root_id": str(row.id)}) for i in ids],
            )
            self._notify(conn, ids, TaskChange("moved-list", row.id, actor_id, now))
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)

    def reparent(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        parent: TaskRef | None,
    ) -> Task:
        """Puts the task (with its subtree) under another task of the same list, or at the root."""

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            lock_lists(conn, row.list_id)
            row = self._reread(conn, actor_id, row, expected_revision)
            parent_id = None
            if parent is not None:
                parent_row = task_with_role(conn, actor_id, parent, Role.EDITOR, write=True)
                if parent_row.list_id != row.list_id:
                    raise InvalidInput(
                        "parent: the new parent is in another list; move the task there first",
                        field="parent",
                    )
                require_live(conn, parent_row, "parent")
                if parent_row.id == row.id or row.id in ancestor_ids(conn, parent_row.id):
                    raise ReparentCycle(
                        "parent: a task cannot move under itself or its own descendant",
                        field="parent",
                    )
                parent_id = parent_row.id
            if parent_id == row.parent_id:
                raise InvalidInput("parent: the task is already there", field="parent")
            cas(
                conn,
                row,
                expected_revision,
                now,
                {"parent_id": parent_id, "position": end_position(conn, row.list_id, parent_id)},
            )
            if parent_id is not None:
                # Counted with the moved subtree in place: refused, it is all rolled back.
                check_checklist_room(conn, parent_id, 0, "parent")
            payload = {
                "from": str(row.parent_id) if row.parent_id else None,
                "to": str(parent_id) if parent_id else None,
            }
            history.record(conn, actor_id, now, [Event(row.id, "reparented", payload)])
            self._notify(conn, [row.id], TaskChange("reparented", row.id, actor_id, now))
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)
