"""Fixtures of the recurring-series suite (seed 000, "Recurrence").

Every test that uses ``world`` runs once per available backend: SQLite always,
PostgreSQL when the storage plugin finds a server (and must, when
``KALENDS_TEST_DATABASE_URL`` names one). Each module gets one migrated database
per backend; each test gets its own actors and lists in it, and the module's
fake clock set back to :data:`FAKE_CLOCK_START`. Series, tasks and occurrences
never cross lists, so tests cannot see each other's rows except in whole-table
snapshots, which compare a table before and after one step of one test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.storage.migrate import open_store
from kalends.storage.testing import (
    BACKENDS,
    FAKE_CLOCK_START,
    StorageTarget,
    discover_postgresql,
    provision,
)

from .support import World, make_world


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses ``series_backend`` once per available backend."""
    if "series_backend" not in metafunc.fixturenames:
        return
    server = discover_postgresql()
    # As the storage plugin does: leave PostgreSQL out when no server answers,
    # unless one was required.
    backends = [b for b in BACKENDS if b != "postgresql" or server.url or server.required]
    metafunc.parametrize("series_backend", backends, indirect=True, scope="module")


@pytest.fixture(scope="module")
def series_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    server = discover_postgresql()
    if backend == "postgresql" and server.url is None:
        pytest.fail(f"PostgreSQL is required but {server.reason}", pytrace=False)
    return backend


@pytest.fixture(scope="module")
def series_target(
    series_backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StorageTarget]:
    """The module's database on the backend under test (its URL serves a second engine)."""
    with provision(series_backend, tmp_path_factory.mktemp("series")) as target:
        yield target


@pytest.fixture(scope="module")
def series_clock() -> FakeClock:
    return FakeClock(FAKE_CLOCK_START)


@pytest.fixture(scope="module")
def series_services(series_target: StorageTarget, series_clock: FakeClock) -> Services:
    return build(open_store(series_target.engine(), series_clock))


@pytest.fixture
def world(series_services: Services, series_clock: FakeClock) -> World:
    series_clock.set(FAKE_CLOCK_START)
    return make_world(series_services, series_clock, uuid.uuid4().hex[:10])
