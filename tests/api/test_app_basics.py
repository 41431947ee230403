"""Health, readiness, error shapes, body limits and the OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from anyio import to_thread

from api.conftest import ApiWorld, make_api_world
from kalends.api.context import (
    MAX_BODY_BYTES,
    MAX_REQUEST_THREADS,
    SQLITE_REQUEST_THREADS,
    default_request_threads,
)
from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store


def test_healthz_and_readyz(api: ApiWorld) -> None:
    assert api.client.get("/healthz").json() == {"status": "ok"}
    ready = api.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"database": True}}


def test_readyz_is_503_until_every_background_loop_runs(api: ApiWorld) -> None:
    ctx = api.client.app.state.kalends  # type: ignore[attr-defined]
    ctx.settings = type(ctx.settings)(workers=("scheduler", "reminders"))
    ctx.ready["scheduler"] = True
    reply = api.client.get("/readyz")
    assert reply.status_code == 503
    assert reply.json()["checks"] == {"database": True, "scheduler": True, "reminders": False}
    ctx.ready["reminders"] = True
    assert api.client.get("/readyz").status_code == 200


def test_unknown_routes_and_methods_answer_json_errors(api: ApiWorld) -> None:
    missing = api.client.get("/api/nothing-here", headers=api.headers("bob"))
    assert missing.status_code == 404
    assert missing.json()["code"] == "not-found"
    assert set(missing.json()) == {"code", "message", "details"}
    wrong = api.client.put("/healthz")
    assert wrong.status_code == 405 and wrong.json()["code"] == "method-not-allowed"


def test_malformed_json_is_422_naming_the_body(api: ApiWorld) -> None:
    with nothing_written(api.store):
        reply = api.client.post(
            "/api/auth/login", content=b"{not json", headers={"Content-Type": "application/json"}
        )
    assert reply.status_code == 422
    assert reply.json()["code"] == "invalid-input"
    assert reply.json()["details"]["field"]


def test_an_oversized_body_is_413_before_the_route_runs(api: ApiWorld) -> None:
    big = b'{"handle": "bob", "password": "' + b"x" * MAX_BODY_BYTES + b'"}'
    with nothing_written(api.store):
        declared = api.client.post(
            "/api/auth/login", content=big, headers={"Content-Type": "application/json"}
        )

        def chunks() -> Iterator[bytes]:
            for start in range(0, len(big), 65536):
                yield big[start : start + 65536]

        streamed = api.client.post(
            "/api/auth/login", content=chunks(), headers={"Content-Type": "application/json"}
        )
    for reply in (declared, streamed):
        assert reply.status_code == 413, reply.text
        assert reply.json()["code"] == "too-large"


def test_openapi_describes_the_security_schemes_and_error_bodies(api: ApiWorld) -> None:
    doc = api.client.get("/openapi.json").json()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["token"]["scheme"] == "bearer"
    assert schemes["session"]["in"] == "cookie"
    assert "ErrorBody" in doc["components"]["schemas"]
    login = doc["paths"]["/api/auth/login"]["post"]
    assert {"401", "422", "429"} <= set(login["responses"])
    assert login["responses"]["401"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ErrorBody"
    )


def test_the_request_thread_pool_is_sized_from_the_settings(
    store: Store, fake_clock: FakeClock, tmp_path: Path
) -> None:
    world = make_api_world(build(store), fake_clock, tmp_path)
    ctx = world.client.app.state.kalends  # type: ignore[attr-defined]
    ctx.settings = replace(ctx.settings, request_threads=3)

    async def tokens() -> float:
        return to_thread.current_default_thread_limiter().total_tokens

    # The limiter belongs to the client's event loop, which the lifespan sized.
    with world.client:
        seen = world.client.portal.call(tokens)  # type: ignore[union-attr]
        assert world.client.get("/healthz").status_code == 200
    assert seen == 3


def test_default_request_threads_follow_the_database() -> None:
    assert default_request_threads("sqlite") == SQLITE_REQUEST_THREADS
    assert 4 <= default_request_threads("postgresql") <= MAX_REQUEST_THREADS


def test_without_a_setting_the_pool_is_sized_for_the_database(api: ApiWorld) -> None:
    async def tokens() -> float:
        return to_thread.current_default_thread_limiter().total_tokens

    seen = api.client.portal.call(tokens)  # type: ignore[union-attr]
    assert seen == default_request_threads(api.store.dialect)
