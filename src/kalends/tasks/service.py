"""Task operations: each one transaction that checks the actor's role, writes the
rows, appends history, keeps reminder intents in step and calls the
``after_task_update`` hooks before it commits.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any, TypeVar
from uuid import UUID

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from kalends.errors import Conflict, InvalidInput, NotFound, ReparentCycle, TaskTrashed
from kalends.identity import ActorRef, Role, check_name, parse_uuid, resolve_actor
from kalends.storage.ids import ids_at
from kalends.storage.task_tables import (
    attachments,
    blobs,
    comments,
    sections,
    tags,
    task_tags,
    tasks,
)
from kalends.storage.upsert import insert_missing
from kalends.tasks import history
from kalends.tasks.access import require_list_role, task_with_role
from kalends.tasks.directory import find_list
from kalends.tasks.history import Event
from kalends.tasks.media import check_media_type
from kalends.tasks.models import (
    Attachment,
    Comment,
    HistoryEvent,
    Task,
    TaskDetail,
    TreeNode,
    TreePage,
)
from kalends.tasks.positions import end_position, position_near
from kalends.tasks.reads import (
    PageKey,
    load_tasks,
    read_detail,
    read_tree,
    read_tree_json,
    read_tree_page,
    read_tree_page_json,
    subtree_tree,
)
from kalends.tasks.refs import new_refs
from kalends.tasks.series_state import check_checklist_room
from kalends.tasks.steps import (
    AfterTaskUpdate,
    TaskChange,
    TaskRef,
    cancel_intents,
    cas,
    expect_revision,
    group_by_tags,
    lock_lists,
    require_live,
    section_id,
    set_tags,
    sibling_id,
    tag_names,
    tag_names_of,
)
from kalends.tasks.transitions import Transitions
from kalends.tasks.tree import ancestor_ids, hidden_by_trash, subtree_ids
from kalends.tasks.tree_text import read_tree_page_text, read_tree_text
from kalends.tasks.values import (
    MAX_ATTACHMENT_BYTES,
    MAX_COMMENT_BYTES,
    MAX_DESCRIPTION_BYTES,
    MAX_TREE_PAGE,
    SHOWN_STATUSES,
    TaskStatus,
    check_text,
    check_title,
)

# What a page reader makes of a page: the trees' JSON values, or their text.
P = TypeVar("P")


class TaskService(Transitions):
    """Tasks, checklists and schedules. Every method is one transaction."""

    # --- reads ---------------------------------------------------------------------------

    def get(self, actor: ActorRef, task: TaskRef) -> TaskDetail:
        """A task with its tags, reminders, comments and attachments. Viewers may read."""

        def run(conn: Connection) -> TaskDetail:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.VIEWER, write=False, detail=True)
            return read_detail(conn, row)

        return self.store.run(run, write=False)

    def tree(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        *,
        section: str | None = None,
        tag: str | None = None,
        status: TaskStatus | str | None = None,
        due_from: date | None = None,
        due_to: date | None = None,
        planned: date | None = None,
        include_trashed: bool = False,
    ) -> list[TreeNode]:
        """The list's tasks as ordered trees; filters keep matching tasks and their ancestors."""
        if status is not None and status not in SHOWN_STATUSES:
            raise InvalidInput(
                f"status: open, completed or skipped, got {status!r}", field="status"
            )
        wanted = str(status) if status is not None else None

        def run(conn: Connection) -> list[TreeNode]:
            return read_tree(
                conn,
                self._readable_list(conn, actor, list_ref),
                section=section,
                tag=tag,
                status=wanted,
                due_from=due_from,
                due_to=due_to,
                planned=planned,
                include_trashed=include_trashed,
            )

        return self.store.run(run, write=False)

    def tree_json(
        self, actor: ActorRef, list_ref: UUID | str, *, include_trashed: bool = False
    ) -> list[dict[str, Any]]:
        """:meth:`tree` unfiltered as JSON (each tree's ``to_json()``), made straight from
        the rows in three statements: what the HTTP API answers for a whole list."""

        def run(conn: Connection) -> list[dict[str, Any]]:
            list_id = self._readable_list(conn, actor, list_ref)
            return read_tree_json(conn, list_id, include_trashed=include_trashed)

        return self.store.run(run, write=False)

    def tree_page(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        *,
        limit: int,
        after: str | None = None,
        section: str | None = None,
        tag: str | None = None,
        status: TaskStatus | str | None = None,
        due_from: date | None = None,
        due_to: date | None = None,
        planned: date | None = None,
        include_trashed: bool = False,
    ) -> TreePage:
        """:meth:`tree` a page at a time: up to ``limit`` top-level tasks with their
        descendants, after the page whose ``next_after`` cursor is ``after``.

        A cursor names a place in the sibling order, not a task, so a page boundary
        survives its task being moved or trashed. Unfiltered, a page costs four
        statements whatever the list's size; filtered, the whole list is read.
        """
        key = _page_request(limit, after)
        filters = _TreeFilters(section, tag, status, due_from, due_to, planned, include_trashed)
        if filters.any:
            return self._filtered_page(actor, list_ref, limit, key, filters)

        def run(conn: Connection) -> TreePage:
            list_id = self._readable_list(conn, actor, list_ref)
            nodes, following = read_tree_page(
                conn, list_id, limit=limit, after=key, include_trashed=include_trashed
            )
            return TreePage(trees=tuple(nodes), next_after=_next_cursor(following))

        return self.store.run(run, write=False)

    def tree_page_json(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        *,
        limit: int,
        after: str | None = None,
        section: str | None = None,
        tag: str | None = None,
        status: TaskStatus | str | None = None,
        due_from: date | None = None,
        due_to: date | None = None,
        planned: date | None = None,
        include_trashed: bool = False,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """:meth:`tree_page` as JSON (each tree's ``to_json()``) and the next cursor, made
        straight from the rows: what the HTTP API answers, without value objects."""
        key = _page_request(limit, after)
        filters = _TreeFilters(section, tag, status, due_from, due_to, planned, include_trashed)
        if filters.any:
            page = self._filtered_page(actor, list_ref, limit, key, filters)
            return [n.to_json() for n in page.trees], page.next_after

        return self._page(actor, list_ref, limit, key, include_trashed, read_tree_page_json)

    def tree_page_text(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        *,
        limit: int,
        after: str | None = None,
        include_trashed: bool = False,
    ) -> tuple[str, str | None]:
        """:meth:`tree_page_json` unfiltered, as JSON text, and the next cursor: on SQLite
        the database writes the tasks' JSON (:mod:`kalends.tasks.tree_text`)."""
        key = _page_request(limit, after)
        return self._page(actor, list_ref, limit, key, include_trashed, read_tree_page_text)

    def _page(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        limit: int,
        key: PageKey | None,
        include_trashed: bool,
        read: Callable[..., tuple[P, PageKey | None]],
    ) -> tuple[P, str | None]:
        """An unfiltered page as ``read`` makes it from the list, and the next cursor."""

        def run(conn: Connection) -> tuple[P, str | None]:
            list_id = self._readable_list(conn, actor, list_ref)
            found, following = read(
                conn, list_id, limit=limit, after=key, include_trashed=include_trashed
            )
            return found, _next_cursor(following)

        return self.store.run(run, write=False)

    def tree_text(
        self, actor: ActorRef, list_ref: UUID | str, *, include_trashed: bool = False
    ) -> str:
        """:meth:`tree_json` as JSON text (:mod:`kalends.tasks.tree_text`)."""

        def run(conn: Connection) -> str:
            list_id = self._readable_list(conn, actor, list_ref)
            return read_tree_text(conn, list_id, include_trashed=include_trashed)

        return self.store.run(run, write=False)

    def _readable_list(self, conn: Connection, actor: ActorRef, list_ref: UUID | str) -> UUID:
        actor_id = resolve_actor(conn, actor)
        list_id = find_list(conn, actor_id, list_ref)
        require_list_role(conn, actor_id, list_id, Role.VIEWER, write=False)
        return list_id

    def _filtered_page(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        limit: int,
        key: PageKey | None,
        filters: _TreeFilters,
    ) -> TreePage:
        trees = self.tree(actor, list_ref, **asdict(filters))
        later = [n for n in trees if key is None or (n.task.position, n.task.ref) > key]
        page = later[:limit]
        last = page[-1].task if page and len(later) > limit else None
        return TreePage(
            trees=tuple(page),
            next_after=_next_cursor((last.position, last.ref) if last else None),
        )

    def checklist(self, actor: ActorRef, task: TaskRef) -> TreeNode:
        """The task and its live descendants as one ordered tree."""

        def run(conn: Connection) -> TreeNode:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.VIEWER, write=False)
            return subtree_tree(conn, row.id)

        return self.store.run(run, write=False)

    def history(self, actor: ActorRef, task: TaskRef) -> list[HistoryEvent]:
        def run(conn: Connection) -> list[HistoryEvent]:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.VIEWER, write=False)
            return history.read(conn, row.id)

        return self.store.run(run, write=False)

    def attachment(self, actor: ActorRef, attachment_id: UUID | str) -> tuple[Attachment, bytes]:
        """An attachment's metadata and bytes. Viewers may read; to anyone else it is
        :class:`NotFound`, as an unknown ID is."""
        as_id = parse_uuid(attachment_id, "attachment")

        def run(conn: Connection) -> tuple[Attachment, bytes]:
            actor_id = resolve_actor(conn, actor)
            unseen = NotFound(f"attachment: no attachment {attachment_id}", field="attachment")
            row = conn.execute(select(attachments).where(attachments.c.id == as_id)).first()
            if row is None:
                raise unseen
            try:
                task_with_role(conn, actor_id, row.task_id, Role.VIEWER, write=False)
            except NotFound:
                raise unseen from None
            # The bytes only once the actor may read them.
            data = conn.execute(select(blobs.c.data).where(blobs.c.sha256 == row.sha256)).one()
            meta = Attachment(
                id=row.id,
                task_id=row.task_id,
                author_id=row.author_id,
                name=row.name,
                media_type=row.media_type,
                size=row.size,
                sha256=row.sha256,
                created_at=row.created_at,
            )
            return meta, bytes(data.data)

        return self.store.run(run, write=False)

    # --- creation ------------------------------------------------------------------------

    def create(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        title: str,
        *,
        description: str = "",
        parent: TaskRef | None = None,
        section: str | None = None,
        tags: Sequence[str] = (),
        before: TaskRef | None = None,
        after: TaskRef | None = None,
    ) -> Task:
        """Creates an open task at the end of its siblings, or before/after a sibling."""
        checked_title = check_title(title)
        checked_description = check_text(description, "description", MAX_DESCRIPTION_BYTES)
        checked_tags = tag_names(tags)

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

    def move(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        *,
        before: TaskRef | None = None,
        after: TaskRef | None = None,
        section: str | None = None,
        clear_section: bool = False,
    ) -> Task:
        """Moves a task among its siblings and/or into a section of its list."""

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

    def trash(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task:
        """Puts the task in the trash, hiding its subtree and cancelling its reminder intents."""

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            ids = subtree_ids(conn, row.id, live_only=True)
            cas(conn, row, expected_revision, now, {"trashed": True, "trashed_at": now})
            cancel_intents(conn, ids, now, "task-trashed")
            history.record(conn, actor_id, now, [Event(row.id, "trashed", {})])
            self._notify(conn, ids, TaskChange("trashed", row.id, actor_id, now))
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)

    def restore(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task:
        """Takes the task out of the trash. Its cancelled reminders are not replayed."""

        def run(conn: Connection) -> Task:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.EDITOR, write=True)
            expect_revision(row, expected_revision)
            if not row.trashed:
                raise Conflict("task: the task is not in the trash", field="task")
            if row.parent_id is not None and hidden_by_trash(conn, row.parent_id):
                raise TaskTrashed("an ancestor of this task is in the trash: restore it first")
            now = self.store.clock.now()
            cas(conn, row, expected_revision, now, {"trashed": False, "trashed_at": None})
            if row.parent_id is not None:
                # Counted with the restored subtree live again (refused, it is rolled
                # back), once no other change to the tree's shape can run beside it.
                lock_lists(conn, row.list_id)
                check_checklist_room(conn, row.parent_id, 0, "task")
            history.record(conn, actor_id, now, [Event(row.id, "restored", {})])
            ids = subtree_ids(conn, row.id, live_only=True)
            self._notify(conn, ids, TaskChange("restored", row.id, actor_id, now))
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)

    def comment(self, actor: ActorRef, task: TaskRef, body: str) -> Comment:
        """Adds a comment (editors only). A comment does not change the task's revision."""
        text = check_text(body, "body", MAX_COMMENT_BYTES)
        if not text.strip():
            raise InvalidInput("body: a comment cannot be blank", field="body")

        def run(conn: Connection) -> Comment:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.EDITOR, write=True)
            require_live(conn, row, "task")
            now = self.store.clock.now()
            made = Comment(
                id=uuid.uuid4(), task_id=row.id, author_id=actor_id, body=text, created_at=now
            )
            conn.execute(
                insert(comments).values(
                    id=made.id, task_id=row.id, author_id=actor_id, body=text, created_at=now
                )
            )
            history.record(
                conn, actor_id, now, [Event(row.id, "commented", {"comment_id": str(made.id)})]
            )
            return made

        return self.store.run(run)

    def attach(
        self, actor: ActorRef, task: TaskRef, name: str, media_type: str, data: bytes
    ) -> Attachment:
        """Stores bytes (content-addressed, in the database) and attaches them to the task.

        ``media_type`` must be one as :mod:`kalends.tasks.media` defines it, exactly as
        given (a download sends it back as a header): :class:`InvalidInput` otherwise.
        """
        checked_name = check_name(name, "name", 255)
        checked_type = check_media_type(media_type)
        if not isinstance(data, bytes | bytearray):
            raise InvalidInput("data: attachment content is bytes", field="data")
        if len(data) > MAX_ATTACHMENT_BYTES:
            raise InvalidInput(
                f"data: at most {MAX_ATTACHMENT_BYTES} bytes, got {len(data)}", field="data"
            )
        digest = hashlib.sha256(data).hexdigest()

        def run(conn: Connection) -> Attachment:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.EDITOR, write=True)
            require_live(conn, row, "task")
            now = self.store.clock.now()
            known = conn.execute(select(blobs.c.sha256).where(blobs.c.sha256 == digest)).first()
            if known is None:
                row_data = {"sha256": digest, "size": len(data), "data": bytes(data)}
                insert_missing(conn, blobs, [row_data], ("sha256",))
            made = Attachment(
                id=uuid.uuid4(),
                task_id=row.id,
                author_id=actor_id,
                name=checked_name,
                media_type=checked_type,
                size=len(data),
                sha256=digest,
                created_at=now,
            )
            conn.execute(
                insert(attachments).values(
                    id=made.id,
                    task_id=row.id,
                    author_id=actor_id,
                    name=checked_name,
                    media_type=checked_type,
                    size=len(data),
                    sha256=digest,
                    created_at=now,
                )
            )
            history.record(
                conn,
                actor_id,
                now,
                [
                    Event(
                        row.id,
                        "attached",
                        {
                            "attachment_id": str(made.id),
                            "name": checked_name,
                            "size": len(data),
                            "sha256": digest,
                        },
                    )
                ],
            )
            return made

        return self.store.run(run)


__all__ = ["AfterTaskUpdate", "TaskChange", "TaskService"]


@dataclass(frozen=True, slots=True)
class _TreeFilters:
    """The filters of :meth:`TaskService.tree`, by its keyword names."""

    section: str | None
    tag: str | None
    status: TaskStatus | str | None
    due_from: date | None
    due_to: date | None
    planned: date | None
    include_trashed: bool

    @property
    def any(self) -> bool:
        values = (self.section, self.tag, self.status, self.due_from, self.due_to, self.planned)
        return any(v is not None for v in values)


# A page cursor: the sibling position and reference of a page's last top-level task.
_CURSOR = re.compile(r"(-?[0-9]{1,19}):([0-9A-Z]{1,12})")
PAGE_CURSOR_LENGTH = 33


def _page_request(limit: int, after: str | None) -> PageKey | None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput("limit: a whole number is expected", field="limit")
    if not 1 <= limit <= MAX_TREE_PAGE:
        raise InvalidInput(f"limit: 1 to {MAX_TREE_PAGE}, got {limit}", field="limit")
    return parse_page_cursor(after) if after is not None else None


def _next_cursor(key: PageKey | None) -> str | None:
    return f"{key[0]}:{key[1]}" if key is not None else None


def parse_page_cursor(value: str) -> PageKey:
    """The place a page cursor (``TreePage.next_after``) names; else :class:`InvalidInput`."""
    found = _CURSOR.fullmatch(value) if isinstance(value, str) else None
    if found is None or not -(2**63) <= int(found.group(1)) < 2**63:
        raise InvalidInput(
            f"after: a page cursor from a previous page is expected, got {value!r}",
            field="after",
        )
    return int(found.group(1)), found.group(2)
