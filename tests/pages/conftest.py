"""Fixtures of the pages' browserless suite: the API's world (people, workspaces, roles;
see ``tests/api/conftest.py``) with a helper that signs a person in through the sign-in
form and keeps the page's CSRF token, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.conftest import PASSWORD, ApiWorld, make_api_world
from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.storage.unit_of_work import Store

__all__ = ["Pages", "csrf_of", "request_ids"]

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_REQUEST_ID = re.compile(r'name="request_id" value="([^"]+)"')


def csrf_of(html: str) -> str:
    """The CSRF token a rendered page put in its forms."""
    found = _CSRF.search(html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


def request_ids(html: str) -> list[str]:
    """The request IDs a rendered page minted for its controls."""
    return _REQUEST_ID.findall(html)


@dataclass(slots=True)
class Pages:
    """The world and one browser-like client per person (cookies kept apart)."""

    world: ApiWorld
    clients: dict[str, TestClient]
    made: list[str] = field(default_factory=list)

    def client(self, who: str) -> TestClient:
        return self.clients[who]

    def sign_in(self, who: str) -> TestClient:
        """Signs ``who`` in through the sign-in form; their client keeps the cookies."""
        client = self.clients[who]
        page = client.get("/login")
        assert page.status_code == 200, page.text
        reply = client.post(
            "/login",
            data={"handle": who, "password": PASSWORD, "csrf": csrf_of(page.text), "next": "/"},
            follow_redirects=False,
        )
        assert reply.status_code == 303, reply.text
        return client

    def schedule(self, who: str, title: str = "Nightly", **config: Any) -> str:
        """Creates a schedule in ``home`` as ``who`` through the service; its ID."""
        body = {
            "title": title,
            "policy": {"kind": "daily", "time": "02:30", "zone": "America/New_York"},
            "profile": {"command": ["true"]},
            **config,
        }
        request_id = f"req-create-{len(self.made) + 1}"
        receipt = self.world.services.schedules.create(
            self.world.actors[who].id, self.world.home.id, body, request_id=request_id
        )
        assert receipt.mission_id is not None
        self.made.append(str(receipt.mission_id))
        return str(receipt.mission_id)


@pytest.fixture
def pages(store: Store, fake_clock: FakeClock, tmp_path: Path) -> Iterator[Pages]:
    world = make_api_world(build(store), fake_clock, tmp_path)
    app = world.client.app
    clients = {
        who: TestClient(app, raise_server_exceptions=False, base_url="http://testserver")
        for who in ("alice", "bob", "carol", "dave")
    }
    with world.client:
        yield Pages(world=world, clients=clients)
