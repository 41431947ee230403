"""Fixtures of the task-store suite.

``services`` and ``world`` stand on the plugin's ``store`` fixture: a fresh migrated
database per test, on SQLite and (when reachable) PostgreSQL. Tests that must write
nothing share one world per module and backend instead (``shared_world``): each of
them proves by a snapshot of every table that it wrote nothing, so sharing is safe,
and it keeps the suite fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID

import pytest

from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.errors import NotFound
from kalends.storage.migrate import open_store
from kalends.storage.testing import (
    BACKENDS,
    FAKE_CLOCK_START,
    StorageTarget,
    discover_postgresql,
    provision,
)
from kalends.storage.unit_of_work import Store
from kalends.tasks import Actor, Role, TaskList, TaskService


@dataclass(frozen=True, slots=True)
class World:
    """Who is who.

    ``home``: alice owns it, bob edits it, carol views it; sections "Kitchen", "Garden".
    ``work``: alice owns it, bob views it; section "Kitchen".
    ``private``: alice alone. dave belongs to no list.
    """

    services: Services
    alice: Actor
    bob: Actor
    carol: Actor
    dave: Actor
    home: TaskList
    work: TaskList
    private: TaskList

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def tasks(self) -> TaskService:
        return self.services.tasks

    def recipient(self, value: object, field: str) -> UUID:
        """The ``recipient`` resolver ``parse_schedule`` needs: a handle, or alice by default."""
        if value is None:
            return self.alice.id
        if not isinstance(value, str):
            raise NotFound(f"{field}: no actor {value!r}", field=field)
        return self.services.directory.actor(value).id


def make_world(services: Services) -> World:
    directory = services.directory
    # One transaction (each call a savepoint in it): the same rows, fewer commits.
    with services.store.transaction():
        alice = directory.add_actor("alice", "Alice", "alice@example.com")
        bob = directory.add_actor("bob", "Bob", "bob@example.com")
        carol = directory.add_actor("carol", "Carol")
        dave = directory.add_actor("dave", "Dave")
        home = directory.create_list(alice.id, "Home")
        directory.share(alice.id, home.id, bob.id, Role.EDITOR)
        directory.share(alice.id, home.id, carol.id, Role.VIEWER)
        directory.add_section(alice.id, home.id, "Kitchen")
        directory.add_section(alice.id, home.id, "Garden")
        work = directory.create_list(alice.id, "Work")
        directory.share(alice.id, work.id, bob.id, Role.VIEWER)
        directory.add_section(alice.id, work.id, "Kitchen")
        private = directory.create_list(alice.id, "Private")
    return World(
        services=services,
        alice=alice,
        bob=bob,
        carol=carol,
        dave=dave,
        home=home,
        work=work,
        private=private,
    )


@pytest.fixture
def services(store: Store) -> Services:
    return build(store)


@pytest.fixture
def world(services: Services) -> World:
    return make_world(services)


# --- one world per module and backend, for tests that write nothing ---------------------


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses ``shared_backend`` once per available backend."""
    if "shared_backend" not in metafunc.fixturenames:
        return
    server = discover_postgresql()
    # As the storage plugin does: leave PostgreSQL out when no server answers,
    # unless one was required.
    backends = [b for b in BACKENDS if b != "postgresql" or server.url or server.required]
    metafunc.parametrize("shared_backend", backends, indirect=True, scope="module")


@pytest.fixture(scope="module")
def shared_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    server = discover_postgresql()
    if backend == "postgresql" and server.url is None:
        pytest.fail(f"PostgreSQL is required but {server.reason}", pytrace=False)
    return backend


@pytest.fixture(scope="module")
def shared_target(
    shared_backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StorageTarget]:
    with provision(shared_backend, tmp_path_factory.mktemp("tasks")) as target:
        yield target


@pytest.fixture(scope="module")
def shared_world(shared_target: StorageTarget) -> World:
    store = open_store(shared_target.engine(), FakeClock(FAKE_CLOCK_START))
    return make_world(build(store))
