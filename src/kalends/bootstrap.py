"""The composition root: configuration → storage → services.

Edges (the HTTP API, the CLI) reach storage only through this module: the store the
services share, its wake-ups, its write-ahead log checkpointer, its schema revision and
the facts a server keeps about itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from kalends.auth.grants import Grants
from kalends.clock import Clock
from kalends.config import resolve_database_url
from kalends.conversations import Conversations
from kalends.feeds import Feeds
from kalends.missions import ScheduleService, Workspaces
from kalends.missions.supervision_hook import SupervisionHook
from kalends.questions import Questions
from kalends.reminders.destinations import Destinations
from kalends.storage.checkpoints import Checkpointer
from kalends.storage.migrate import head_revision, open_store
from kalends.storage.unit_of_work import Store
from kalends.storage.wake import Waker, open_waker
from kalends.supervision import Launch, Supervisor, kalends_command
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


@dataclass(frozen=True, slots=True)
class Services:
    """Everything a caller (CLI, HTTP API, worker) needs, wired to one database."""

    store: Store
    directory: Directory
    tasks: TaskService
    series: SeriesService
    changes: TaskChanges
    destinations: Destinations
    workspaces: Workspaces
    schedules: ScheduleService
    grants: Grants
    feeds: Feeds
    conversations: Conversations
    questions: Questions
    supervisor: Supervisor | None = None


def build(store: Store, *, supervisor: Supervisor | None = None) -> Services:
    """Wires the services on one store; recurrence listens to every task transition, and
    a human Play asks ``supervisor`` (none: the Python API supervises nothing)."""
    series = SeriesService(store)
    tasks = TaskService(store, hooks=[series.after_task_update])
    hook: SupervisionHook | None = supervisor
    return Services(
        store=store,
        directory=Directory(store),
        tasks=tasks,
        series=series,
        changes=TaskChanges(store, tasks, series),
        destinations=Destinations(store),
        workspaces=Workspaces(store),
        schedules=ScheduleService(store, supervision=hook),
        grants=Grants(store),
        feeds=Feeds(store),
        conversations=Conversations(store),
        questions=Questions(store),
        supervisor=supervisor,
    )


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
