"""What a task's viewers may read: a task's detail, a list's trees whole or a page at a
time (as values, as JSON or as JSON text), a checklist and a task's history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any, TypeVar
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput
from kalends.identity import ActorRef, Role, resolve_actor
from kalends.tasks import history
from kalends.tasks.access import require_list_role, task_with_role
from kalends.tasks.detail import read_detail
from kalends.tasks.directory import find_list
from kalends.tasks.models import (
    HistoryEvent,
    TaskDetail,
    TreeNode,
    TreePage,
)
from kalends.tasks.page_cursors import (
    next_cursor,
    page_request,
)
from kalends.tasks.steps import (
    ServiceBase,
    TaskRef,
)
from kalends.tasks.tree_json import PageKey
from kalends.tasks.tree_pages import read_tree_json, read_tree_page, read_tree_page_json
from kalends.tasks.tree_reads import read_tree, subtree_tree
from kalends.tasks.tree_text import read_tree_page_text, read_tree_text
from kalends.tasks.values import (
    SHOWN_STATUSES,
    TaskStatus,
)

# What a page reader makes of a page: the trees' JSON values, or their text.
P = TypeVar("P")


class TaskReads(ServiceBase):
    """The reads of :class:`~kalends.tasks.service.TaskService`; each one transaction."""

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
        key = page_request(limit, after)
        filters = _TreeFilters(section, tag, status, due_from, due_to, planned, include_trashed)
        if filters.any:
            return self._filtered_page(actor, list_ref, limit, key, filters)

        def run(conn: Connection) -> TreePage:
            list_id = self._readable_list(conn, actor, list_ref)
            nodes, following = read_tree_page(
                conn, list_id, limit=limit, after=key, include_trashed=include_trashed
            )
            return TreePage(trees=tuple(nodes), next_after=next_cursor(following))

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
        key = page_request(limit, after)
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
        key = page_request(limit, after)
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
            return found, next_cursor(following)

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
            next_after=next_cursor((last.position, last.ref) if last else None),
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
