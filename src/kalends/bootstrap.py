"""The composition root: configuration → storage → services.

Edges (the HTTP API, the CLI) reach storage only through this module: the store the
services share, its wake-ups, its write-ahead log checkpointer, its schema revision and
the facts a server keeps about itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kalends.clock import Clock
from kalends.config import resolve_database_url
from kalends.storage.checkpoints import Checkpointer
from kalends.storage.migrate import head_revision, open_store
from kalends.storage.unit_of_work import Store
from kalends.storage.wake import Waker, open_waker
from kalends.supervision import Launch, Supervisor, kalends_command

if TYPE_CHECKING:
    from kalends.auth.grants import Grants
    from kalends.conversations import Conversations
    from kalends.feeds import Feeds
    from kalends.missions import ScheduleService, Workspaces
    from kalends.questions import Questions
    from kalends.reminders.destinations import Destinations
    from kalends.tasks import Directory, TaskService
    from kalends.tasks.changes import TaskChanges
    from kalends.tasks.series import SeriesService

__all__ = [
    "Checkpointer",
    "Launch",
    "Services",
    "Store",
    "Waker",
    "build",
    "database_revision",
    "head_revision",
    "open_services",
    "open_store",
    "open_waker",
    "record_server_base_url",
    "recorded_server_base_url",
    "start_checkpointer",
    "upgrade_database",
]


T = TypeVar("T")


class Services:
    """Everything a caller (CLI, HTTP API, worker) needs, wired to one database.

    Each service is made (and its domain imported) when it is first asked for: a command
    uses one or two of them, and importing every domain cost each command about 150 ms.
    Made once per instance, whichever thread asks first; recurrence listens to every task
    transition, and a human Play asks ``supervisor`` (none: the Python API supervises
    nothing)."""

    __slots__ = ("_made", "_making", "store", "supervisor")

    def __init__(self, store: Store, *, supervisor: Supervisor | None = None) -> None:
        self.store = store
        self.supervisor = supervisor
        self._made: dict[str, Any] = {}
        # (reentrant: making the task service asks for the series service)
        self._making = threading.RLock()

    def _once(self, name: str, make: Callable[[], T]) -> T:
        found = self._made.get(name)
        if found is None:
            with self._making:
                found = self._made.get(name)
                if found is None:
                    found = self._made[name] = make()
        return cast(T, found)

    @property
    def directory(self) -> Directory:
        from kalends.tasks import Directory  # noqa: PLC0415

        return self._once("directory", lambda: Directory(self.store))

    @property
    def tasks(self) -> TaskService:
        from kalends.tasks import TaskService  # noqa: PLC0415

        return self._once(
            "tasks", lambda: TaskService(self.store, hooks=[self.series.after_task_update])
        )

    @property
    def series(self) -> SeriesService:
        from kalends.tasks.series import SeriesService  # noqa: PLC0415

        return self._once("series", lambda: SeriesService(self.store))

    @property
    def changes(self) -> TaskChanges:
        from kalends.tasks.changes import TaskChanges  # noqa: PLC0415

        return self._once("changes", lambda: TaskChanges(self.store, self.tasks, self.series))

    @property
    def destinations(self) -> Destinations:
        from kalends.reminders.destinations import Destinations  # noqa: PLC0415

        return self._once("destinations", lambda: Destinations(self.store))

    @property
    def workspaces(self) -> Workspaces:
        from kalends.missions import Workspaces  # noqa: PLC0415

        return self._once("workspaces", lambda: Workspaces(self.store))

    @property
    def schedules(self) -> ScheduleService:
        from kalends.missions import ScheduleService  # noqa: PLC0415

        return self._once(
            "schedules", lambda: ScheduleService(self.store, supervision=self.supervisor)
        )

    @property
    def grants(self) -> Grants:
        from kalends.auth.grants import Grants  # noqa: PLC0415

        return self._once("grants", lambda: Grants(self.store))

    @property
    def feeds(self) -> Feeds:
        from kalends.feeds import Feeds  # noqa: PLC0415

        return self._once("feeds", lambda: Feeds(self.store))

    @property
    def conversations(self) -> Conversations:
        from kalends.conversations import Conversations  # noqa: PLC0415

        return self._once("conversations", lambda: Conversations(self.store))

    @property
    def questions(self) -> Questions:
        from kalends.questions import Questions  # noqa: PLC0415

        return self._once("questions", lambda: Questions(self.store))


def build(store: Store, *, supervisor: Supervisor | None = None) -> Services:
    """The services on one store (each made on first use: :class:`Services`)."""
    return Services(store, supervisor=supervisor)


def open_services(
    database: str | None = None,
    clock: Clock | None = None,
    *,
    launch: Launch | None = None,
    serving: bool = False,
) -> Services:
    """Opens (and migrates) the configured database and wires the services on it, with
    service supervision of the server ``launch`` describes (by default ``kalends serve``
    on this database with its own defaults); ``serving``: this process is that server."""
    url = resolve_database_url(database)
    store = open_store(url, clock=clock)
    wanted = launch if launch is not None else Launch(command=kalends_command())
    supervisor = Supervisor(store, replace(wanted, database_url=url), serving=serving)
    return build(store, supervisor=supervisor)


def upgrade_database(url: str) -> str:
    """Migrates the database at ``url`` to the newest schema and returns its revision;
    safe to run again."""
    from kalends.storage.engine import create_engine_for  # noqa: PLC0415
    from kalends.storage.migrate import upgrade  # noqa: PLC0415

    engine = create_engine_for(url)
    try:
        return upgrade(engine)
    finally:
        engine.dispose()


def database_revision(url: str) -> str | None:
    """The schema revision of the database at ``url`` (``None`` before any migration,
    and for a SQLite file that does not exist); changes nothing, creates no file."""
    from sqlalchemy.engine import make_url  # noqa: PLC0415

    from kalends.storage.engine import create_engine_for  # noqa: PLC0415
    from kalends.storage.migrate import current_revision  # noqa: PLC0415

    # Connecting would create the file: a database that does not exist has no revision.
    parsed = make_url(url)
    if (
        parsed.get_backend_name() == "sqlite"
        and parsed.database
        and parsed.database != ":memory:"
        and not Path(parsed.database).exists()
    ):
        return None
    engine = create_engine_for(url)
    try:
        return current_revision(engine)
    finally:
        engine.dispose()


def start_checkpointer(store: Store) -> Checkpointer:
    """Starts the thread that copies SQLite's write-ahead log back into ``store``'s
    database; the caller stops it before closing the store."""
    return Checkpointer(store.engine).start()


def recorded_server_base_url(store: Store) -> str | None:
    """The base URL the last ``kalends serve`` on this database recorded, or ``None``."""
    from kalends.storage.meta import SERVER_BASE_URL, read_meta  # noqa: PLC0415

    return read_meta(store, SERVER_BASE_URL)


def record_server_base_url(store: Store, base: str) -> None:
    """Keeps ``base`` as the server's base URL, replacing the one recorded before."""
    from kalends.storage.meta import SERVER_BASE_URL, write_meta  # noqa: PLC0415

    write_meta(store, SERVER_BASE_URL, base)
