"""schemathesis against /openapi.json: generated requests on every route, authenticated
as the owner of the seeded list and workspace. No answer may be a 5xx and every answer
must match the documented status codes, content types and schemas.

Bounded for CI (``FUZZ_EXAMPLES`` per operation, SQLite only: the database layer is
covered on both backends by the other API tests). ``KALENDS_FUZZ_EXAMPLES`` raises it
for a deeper local run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import APIOperation, Case
from schemathesis.core.result import Err
from schemathesis.specs.openapi.checks import positive_data_acceptance

from api.conftest import ApiWorld, make_api_world
from kalends.api import ApiContext, ApiSettings, create_app
from kalends.api.context import SQLITE_REQUEST_THREADS
from kalends.auth import Accounts
from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.storage.migrate import open_store
from kalends.storage.testing import FAKE_CLOCK_START

FUZZ_EXAMPLES = int(os.environ.get("KALENDS_FUZZ_EXAMPLES", "8"))


# The schema is read once, at collection, from an application whose context each test
# replaces with its own freshly seeded world (the routes read it on every request).
APP = create_app(
    ApiContext(
        services=cast(Services, None),
        accounts=cast(Accounts, None),
        # Named, so that building and starting this placeholder reads no database.
        settings=ApiSettings(request_threads=SQLITE_REQUEST_THREADS, inline_routes=False),
    ),
    access_log_enabled=False,
)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture
def fuzz_world(tmp_path: Path) -> Iterator[ApiWorld]:
    clock = FakeClock(FAKE_CLOCK_START)
    store = open_store(f"sqlite:///{tmp_path / 'fuzz.sqlite3'}", clock)
    world = make_api_world(build(store), clock, tmp_path)
    APP.state.kalends = world.client.app.state.kalends  # type: ignore[attr-defined]
    yield world
    store.close()


# One pytest item per operation, parametrized here rather than by schemathesis' own
# pytest integration, which folds every operation into one item under pytest-xdist.
def _operations() -> list[APIOperation[Any, Any, Any, Any]]:
    found = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()  # the schema itself is wrong: fail at collection
        found.append(result.ok())
    return found


OPERATIONS = _operations()


@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_every_route_answers_within_its_contract(
    operation: APIOperation[Any, Any, Any, Any], fuzz_world: ApiWorld
) -> None:
    headers = fuzz_world.headers("alice")

    @given(case=operation.as_strategy())
    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        derandomize=True,
        database=None,
    )
    def answers(case: Case[Any]) -> None:
        case.call_and_validate(
            headers=headers,
            # The services validate past what a schema can say (a path must be a
            # directory, a configuration must hold together): such a 422 is the contract.
            excluded_checks=[positive_data_acceptance],
        )

    answers()


def test_every_operation_is_fuzzed() -> None:
    assert len(OPERATIONS) == sum(len(v) for v in APP.openapi()["paths"].values())
    assert {op.label for op in OPERATIONS} >= {
        "POST /api/workspaces/{id}/missions/{missionID}/schedule",
        "GET /api/lists/{list_id}/tasks",
        "POST /api/passages/report",
    }
