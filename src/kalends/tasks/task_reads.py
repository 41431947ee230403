"""What a task's viewers may read: a task's detail, a list's trees whole or a page at a
time (as values, as JSON or as JSON text), a checklist and a task's history.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any, TypeVar, Unpack
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput
from kalends.identity import ActorRef, Role, resolve_actor
from kalends.keywords import takes
from kalends.tasks import history
from kalends.tasks.access import require_list_role, task_with_role
from kalends.tasks.detail import read_detail
from kalends.tasks.directory import find_list
from kalends.tasks.due import DueTask, due_tasks
from kalends.tasks.keywords import TreeFilters, TreePageKeywords
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
from kalends.tasks.values import SHOWN_STATUSES

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

    def due(self, actor: ActorRef, *, through: date, before: datetime) -> list[DueTask]:
        """The actor's open tasks, over the active lists they are a member of, due on a
        date up to ``through`` or at an instant before ``before``, by task ID: one read,
        whatever the number of lists (the Now page's tasks due today or overdue)."""

        def run(conn: Connection) -> list[DueTask]:
            return due_tasks(conn, resolve_actor(conn, actor), through=through, before=before)

        return self.store.run(run, write=False)

    @takes(TreeFilters, include_trashed=False)
    def tree(
        self, actor: ActorRef, list_ref: UUID | str, **filters: Unpack[TreeFilters]
    ) -> list[TreeNode]:
        """The list's tasks as ordered trees; filters keep matching tasks and their ancestors."""
        return self._tree(actor, list_ref, filters)

    def _tree(self, actor: ActorRef, list_ref: UUID | str, filters: TreeFilters) -> list[TreeNode]:
        """:meth:`tree` with its filters as one value (a page's keywords will do)."""
        status = filters.get("status")
        if status is not None and status not in SHOWN_STATUSES:
            raise InvalidInput(
                f"status: open, completed or skipped, got {status!r}", field="status"
            )
        wanted = str(status) if status is not None else None

        def run(conn: Connection) -> list[TreeNode]:
            return read_tree(
                conn,
                self._readable_list(conn, actor, list_ref),
                section=filters.get("section"),
                tag=filters.get("tag"),
                status=wanted,
                due_from=filters.get("due_from"),
                due_to=filters.get("due_to"),
                planned=filters.get("planned"),
                include_trashed=filters.get("include_trashed", False),
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

    @takes(TreePageKeywords, include_trashed=False)
    def tree_page(
        self, actor: ActorRef, list_ref: UUID | str, **page: Unpack[TreePageKeywords]
    ) -> TreePage:
        """:meth:`tree` a page at a time: up to ``limit`` top-level tasks with their
        descendants, after the page whose ``next_after`` cursor is ``after``.

        A cursor names a place in the sibling order, not a task, so a page boundary
        survives its task being moved or trashed. Unfiltered, a page costs four
        statements whatever the list's size; filtered, the whole list is read.
        """
        trees, next_after = self._tree_page(actor, list_ref, page, read_tree_page, _trees)
        return TreePage(trees=tuple(trees), next_after=next_after)

    @takes(TreePageKeywords, include_trashed=False)
    def tree_page_json(
        self, actor: ActorRef, list_ref: UUID | str, **page: Unpack[TreePageKeywords]
    ) -> tuple[list[dict[str, Any]], str | None]:
        """:meth:`tree_page` as JSON (each tree's ``to_json()``) and the next cursor, made
        straight from the rows: what the HTTP API answers, without value objects."""
        return self._tree_page(actor, list_ref, page, read_tree_page_json, _trees_json)

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

    def _tree_page(
        self,
        actor: ActorRef,
        list_ref: UUID | str,
        page: TreePageKeywords,
        read: Callable[..., tuple[P, PageKey | None]],
        shown: Callable[[list[TreeNode]], P],
    ) -> tuple[P, str | None]:
        """A page of :meth:`tree_page` or :meth:`tree_page_json`, and the next cursor:
        unfiltered as ``read`` makes it from the rows; filtered, the page's trees of the
        whole filtered tree as ``shown`` makes them."""
        limit = page["limit"]
        key = page_request(limit, page.get("after"))
        if not _narrows(page):
            return self._page(actor, list_ref, limit, key, page.get("include_trashed", False), read)
        later = [
            n
            for n in self._tree(actor, list_ref, page)
            if key is None or (n.task.position, n.task.ref) > key
        ]
        trees = later[:limit]
        last = trees[-1].task if trees and len(later) > limit else None
        return shown(trees), next_cursor((last.position, last.ref) if last else None)

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


def _narrows(filters: TreeFilters) -> bool:
    """Whether any filter but ``include_trashed`` is given: then a page is cut from the
    whole filtered tree."""
    given = (
        filters.get("section"),
        filters.get("tag"),
        filters.get("status"),
        filters.get("due_from"),
        filters.get("due_to"),
        filters.get("planned"),
    )
    return any(v is not None for v in given)


def _trees(trees: list[TreeNode]) -> list[TreeNode]:
    """A filtered page's trees as :meth:`TaskReads.tree_page` gives them: as they are."""
    return trees


def _trees_json(trees: list[TreeNode]) -> list[dict[str, Any]]:
    """A filtered page's trees as :meth:`TaskReads.tree_page_json` gives them."""
    return [n.to_json() for n in trees]
