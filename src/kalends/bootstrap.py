"""The composition root: configuration → storage → services."""

from __future__ import annotations

from dataclasses import dataclass

from kalends.auth.grants import Grants
from kalends.clock import Clock
from kalends.config import resolve_database_url
from kalends.missions import ScheduleService, Workspaces
from kalends.reminders.destinations import Destinations
from kalends.storage.migrate import open_store
from kalends.storage.unit_of_work import Store
from kalends.tasks import Directory, TaskService
from kalends.tasks.series import SeriesService


@dataclass(frozen=True, slots=True)
class Services:
    """Everything a caller (CLI, HTTP API, worker) needs, wired to one database."""

    store: Store
    directory: Directory
    tasks: TaskService
    series: SeriesService
    destinations: Destinations
    workspaces: Workspaces
    schedules: ScheduleService
    grants: Grants


def build(store: Store) -> Services:
    """Wires the services on one store; recurrence listens to every task transition."""
    series = SeriesService(store)
    tasks = TaskService(store, hooks=[series.after_task_update])
    return Services(
        store=store,
        directory=Directory(store),
        tasks=tasks,
        series=series,
        destinations=Destinations(store),
        workspaces=Workspaces(store),
        schedules=ScheduleService(store),
        grants=Grants(store),
    )


def open_services(database: str | None = None, clock: Clock | None = None) -> Services:
    """Opens (and migrates) the configured database and wires the services on it."""
    return build(open_store(resolve_database_url(database), clock=clock))
