"""Helpers of the task-side API tests (this module holds no test)."""

from __future__ import annotations

from typing import Any, Protocol

from api.conftest import ApiWorld
from kalends.storage.testing import nothing_written

# Sunday 2 March 2025 in Paris; the fake clock stands at Monday 3 March, 12:00 UTC.
DUE_LOCAL = "2025-03-02T09:00:00"
ZONE = "Europe/Paris"


class Reply(Protocol):
    """What the tests read of an answer (the test client's response)."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def headers(self) -> Any: ...

    @property
    def content(self) -> bytes: ...

    def json(self) -> Any: ...


def warm(api: ApiWorld, headers: dict[str, str]) -> None:
    """One authenticated read first, so that recording a credential's use is not what a
    refused request's ``nothing_written`` sees."""
    api.client.get("/api/auth/me", headers=headers)


def refused(
    api: ApiWorld,
    method: str,
    url: str,
    headers: dict[str, str],
    status: int,
    code: str | None = None,
    **kwargs: Any,
) -> Reply:
    """Sends the request, asserts its refusal and that it wrote nothing."""
    warm(api, headers)
    with nothing_written(api.store):
        reply = api.client.request(method, url, headers=headers, **kwargs)
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"code", "message", "details"}, body
    if code is not None:
        assert body["code"] == code, body
    return reply


def invalid(
    api: ApiWorld, method: str, url: str, field: str, who: str = "alice", **kwargs: Any
) -> Reply:
    """A 422 naming ``field``, with nothing written."""
    reply = refused(api, method, url, api.headers(who), 422, **kwargs)
    assert reply.json()["details"]["field"] == field, reply.json()
    return reply


def ok(reply: Reply, status: int = 200) -> Any:
    assert reply.status_code == status, reply.text
    return reply.json()


def new_task(api: ApiWorld, who: str = "alice", **body: Any) -> dict[str, Any]:
    """A task created over the API in the home list."""
    body.setdefault("title", "water the plants")
    reply = api.client.post(
        f"/api/lists/{api.home_list.id}/tasks", json=body, headers=api.headers(who)
    )
    return ok(reply, 201)  # type: ignore[no-any-return]


def schedule(
    api: ApiWorld, task: dict[str, Any], who: str = "alice", **body: Any
) -> dict[str, Any]:
    body.setdefault("expectedRevision", task["revision"])
    reply = api.client.put(
        f"/api/tasks/{task['ref']}/schedule", json=body, headers=api.headers(who)
    )
    return ok(reply)  # type: ignore[no-any-return]


def repeat_daily(api: ApiWorld, task: dict[str, Any], who: str = "alice") -> dict[str, Any]:
    """Starts a daily series on ``task``; the answer's ``series`` and ``task``."""
    reply = api.client.post(
        f"/api/tasks/{task['ref']}/series",
        json={
            "expectedRevision": task["revision"],
            "rule": {"kind": "daily"},
            "time": "09:00",
            "zone": ZONE,
        },
        headers=api.headers(who),
    )
    return ok(reply, 201)  # type: ignore[no-any-return]
