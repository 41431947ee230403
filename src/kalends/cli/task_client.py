"""What the task commands ask for, the same whether they run on a database or a server.

Each protocol mirrors a service, method for method with its signature (the acting
actor first), so the service itself is the local implementation: :class:`Directory`,
:class:`TaskService`, :class:`SeriesService` and :class:`Grants` satisfy them as they
are. :mod:`kalends.cli.http_tasks` implements them over the HTTP API, where the
server acts as the token's owner and ``actor`` is not sent. A wide group of keywords is
written once, in :mod:`kalends.tasks.keywords`, and taken as ``**kw: Unpack[Group]`` by
the service, the protocol and the HTTP client alike.

:class:`TaskChanges` holds the changes that take several service calls: locally the
domain's :class:`~kalends.tasks.changes.TaskChanges`, one transaction each
(:mod:`kalends.cli.local_tasks`), on a server one request to the route that makes them
with the same class in one transaction there.

A command gets all of these from its session (:class:`TaskSession`): the local
:class:`~kalends.cli.session.Session` or the server's
:class:`~kalends.cli.remote.Remote`, chosen once by
:func:`~kalends.cli.remote.local_or_remote`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar, Unpack
from uuid import UUID

from kalends.auth.grants import ActorPrivileges, Privilege
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
from kalends.tasks.changes import Repeated, Scheduled, ScheduleEdit, Skipped
from kalends.tasks.keywords import (
    CreateKeywords,
    EditKeywords,
    RelocateKeywords,
    RepeatKeywords,
    TreeFilters,
)
from kalends.tasks.series import SeriesView
from kalends.tasks.series_rules import SeriesRule

__all__ = [
    "DirectoryClient",
    "GrantsClient",
    "Repeated",
    "ScheduleEdit",
    "Scheduled",
    "SeriesClient",
    "Skipped",
    "TaskChanges",
    "TaskClient",
    "TaskSession",
]

T = TypeVar("T")
TaskRef = UUID | str


class DirectoryClient(Protocol):
    """Actors, lists, their members and sections (:class:`~kalends.tasks.Directory`)."""

    def add_actor(self, handle: str, display_name: str, email: str | None = None) -> Actor: ...

    def actors(self) -> list[Actor]:
        """Every actor, by handle."""
        ...

    def create_list(self, actor: UUID | str, name: str) -> TaskList: ...

    def lists(self, actor: UUID | str, *, include_archived: bool = True) -> list[TaskList]: ...

    def get_list(self, actor: UUID | str, list_ref: UUID | str) -> TaskList: ...

    def share(
        self,
        actor: UUID | str,
        list_ref: UUID | str,
        member: UUID | str,
        role: Role | str | None,
        expected_revision: int | None = None,
    ) -> TaskList: ...

    def archive(
        self,
        actor: UUID | str,
        list_ref: UUID | str,
        *,
        archived: bool = True,
        expected_revision: int | None = None,
    ) -> TaskList: ...

    def members(self, actor: UUID | str, list_ref: UUID | str) -> list[tuple[Actor, Role]]: ...

    def add_section(self, actor: UUID | str, list_ref: UUID | str, name: str) -> Section: ...

    def sections(self, actor: UUID | str, list_ref: UUID | str) -> list[Section]: ...


class GrantsClient(Protocol):
    """Server privileges (:class:`~kalends.auth.grants.Grants`)."""

    def actors(self) -> list[ActorPrivileges]: ...

    def grant(self, actor: UUID | str, privilege: Privilege | str) -> ActorPrivileges: ...

    def revoke(self, actor: UUID | str, privilege: Privilege | str) -> ActorPrivileges: ...


class TaskClient(Protocol):
    """Tasks and their checklists, one call each (:class:`~kalends.tasks.TaskService`)."""

    def get(self, actor: ActorRef, task: TaskRef) -> TaskDetail: ...

    def tree(
        self, actor: ActorRef, list_ref: UUID | str, **filters: Unpack[TreeFilters]
    ) -> list[TreeNode]: ...

    def history(self, actor: ActorRef, task: TaskRef) -> list[HistoryEvent]: ...

    def create(
        self, actor: ActorRef, list_ref: UUID | str, title: str, **new: Unpack[CreateKeywords]
    ) -> Task: ...

    def move_to_list(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        target_list: UUID | str,
        *,
        section: str | None = None,
    ) -> Task: ...

    def complete(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        *,
        complete_subtree: bool = False,
    ) -> Task: ...

    def reopen(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task: ...

    def trash(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task: ...

    def restore(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task: ...

    def comment(self, actor: ActorRef, task: TaskRef, body: str) -> Comment: ...

    def attach(
        self, actor: ActorRef, task: TaskRef, name: str, media_type: str, data: bytes
    ) -> Attachment: ...


class SeriesClient(Protocol):
    """A recurring series, by its ID or one of its tasks
    (:class:`~kalends.tasks.series.SeriesService`)."""

    def get(self, actor: ActorRef, series_or_task: UUID | str) -> SeriesView: ...

    def pause(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView: ...

    def resume(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView: ...

    def stop(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView: ...


# --- changes of several service calls ----------------------------------------------------


class TaskChanges(Protocol):
    """Changes of a task that take several service calls; each is all or nothing."""

    def edit(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, **edits: Unpack[EditKeywords]
    ) -> Task:
        """Renames, describes, tags and untags (what is given, in that order) at once."""
        ...

    def relocate(
        self, actor: ActorRef, task: TaskRef, expected_revision: int, **to: Unpack[RelocateKeywords]
    ) -> Task:
        """Puts the task under ``parent`` (or at the top with ``root``), then places it
        among its siblings and sections; what is not given stays."""
        ...

    def schedule(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        edit: ScheduleEdit,
        *,
        from_current: bool = True,
    ) -> Scheduled:
        """Sets the whole schedule (as :func:`~kalends.tasks.parse_schedule` reads it)
        that ``edit`` makes of the task as it is now; without ``from_current`` the task
        is not read first and ``edit`` is given ``None``. An unknown recipient is
        :class:`~kalends.errors.InvalidInput` in either mode."""
        ...

    def repeat(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        rule: SeriesRule,
        **timing: Unpack[RepeatKeywords],
    ) -> Repeated:
        """Makes an open root task and its checklist the first occurrence of a series."""
        ...

    def skip(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Skipped:
        """Skips a series' outstanding occurrence whole and creates the next one."""
        ...


class TaskSession(Protocol):
    """What a task command asks of its session, local or on a server (a
    :class:`~kalends.cli.session.Reporter` too)."""

    @property
    def json_output(self) -> bool: ...

    @property
    def actor(self) -> str:
        """The acting actor's handle (on a server, the token's owner's, when known)."""
        ...

    def local_note(self) -> None:
        """Reminds a person in local mode who is acting; nothing on a server."""
        ...

    @property
    def directory(self) -> DirectoryClient: ...

    @property
    def grants(self) -> GrantsClient: ...

    @property
    def tasks(self) -> TaskClient: ...

    @property
    def series(self) -> SeriesClient: ...

    @property
    def changes(self) -> TaskChanges: ...

    @property
    def server(self) -> str | None:
        """The server the command runs against; ``None`` in local mode."""
        ...

    def read_together(self, fn: Callable[[], T]) -> T:
        """Runs ``fn``'s reads: locally in one read transaction, so that they agree with
        each other; on a server each is its own request."""
        ...
