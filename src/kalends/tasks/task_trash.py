"""Putting a task in the trash and taking it out again."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from kalends.errors import Conflict, TaskTrashed
from kalends.identity import ActorRef, Role, resolve_actor
from kalends.tasks import history
from kalends.tasks.access import task_with_role
from kalends.tasks.history import Event
from kalends.tasks.loading import load_tasks
from kalends.tasks.models import (
    Task,
)
from kalends.tasks.series_state import check_checklist_room
from kalends.tasks.steps import (
    ServiceBase,
    TaskChange,
    TaskRef,
    cancel_intents,
    cas,
    expect_revision,
    lock_lists,
)
from kalends.tasks.tree import hidden_by_trash, subtree_ids


class TaskTrash(ServiceBase):
    """Trash and restore of :class:`~kalends.tasks.service.TaskService`."""

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
