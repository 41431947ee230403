"""The composition root: configuration → storage → services."""

from __future__ import annotations

from dataclasses import dataclass

from kalends.clock import Clock
from kalends.config import resolve_database_url
from kalends.storage.migrate import open_store
from kalends.storage.unit_of_work import Store
from kalends.tasks import Directory, TaskService


@dataclass(frozen=True, slots=True)
class Services:
    """Everything a caller (CLI, HTTP API, worker) needs, wired to one database."""

    store: Store
    directory: Directory
    tasks: TaskService


def build(store: Store) -> Services:
    return Services(store=store, directory=Directory(store), tasks=TaskService(store))


def open_services(database: str | None = None, clock: Clock | None = None) -> Services:
    """Opens (and migrates) the configured database and wires the services on it."""
    return build(open_store(resolve_database_url(database), clock=clock))
