"""Fixtures of the HTTP API suite: the application on a fresh migrated database
(SQLite and, when reachable, PostgreSQL), driven in-process over HTTP.

People: alice (the server's owner account), bob, carol, dave, each with an account
and an API token (``api.headers("bob")``); erin has an account whose token expired and
frank one whose token was revoked.
Lists: ``home`` — alice owns it, bob edits, carol views; dave is no member.
Workspaces: ``home`` (a temporary directory) — alice owns it, bob edits, carol
views; ``away`` — dave owns it alone. Run privilege: alice as the owner account; bob
and dave by a grant; carol, erin and frank not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from kalends.api import ApiContext, ApiSettings, create_app
from kalends.auth import Accounts, LoginThrottle
from kalends.auth.grants import Privilege
from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.missions import Workspace
from kalends.storage.unit_of_work import Store
from kalends.tasks import Actor, Role, TaskList

PEOPLE = ("alice", "bob", "carol", "dave", "erin", "frank")
PASSWORD = "correct horse battery"
# argon2id at its cheapest: the suite hashes a password per person per test.
FAST_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


@dataclass(slots=True)
class ApiWorld:
    client: TestClient
    services: Services
    accounts: Accounts
    clock: FakeClock
    actors: dict[str, Actor]
    tokens: dict[str, str]
    home_list: TaskList
    home: Workspace
    away: Workspace
    root: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def store(self) -> Store:
        return self.services.store

    def headers(self, who: str) -> dict[str, str]:
        """The Authorization header of ``who``'s API token."""
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def login(self, who: str) -> dict[str, str]:
        """Log ``who`` in with a cookie session on the shared client; the CSRF header back."""
        reply = self.client.post("/api/auth/login", json={"handle": who, "password": PASSWORD})
        assert reply.status_code == 200, reply.text
        return {"X-CSRF-Token": reply.json()["csrfToken"]}


def make_api_world(services: Services, clock: FakeClock, root: Path) -> ApiWorld:
    accounts = Accounts(services.store, throttle=LoginThrottle(clock), hasher=FAST_HASHER)
    actors: dict[str, Actor] = {}
    tokens: dict[str, str] = {}
    for handle in PEOPLE:
        actor = services.directory.add_actor(handle, handle.title(), f"{handle}@example.com")
        actors[handle] = actor
        if handle == "alice":
            accounts.bootstrap_owner("alice", "Alice")  # the server's owner account
        else:
            accounts.ensure_account(actor.id)
        accounts.set_password(actor.id, PASSWORD, current_password=None)
        expires = timedelta(days=1) if handle == "erin" else None
        info, secret = accounts.create_token(actor.id, "tests", expires_in=expires)
        tokens[handle] = secret
        if handle == "frank":
            accounts.revoke_token(actor.id, info.id)
    home_list = services.directory.create_list(actors["alice"].id, "home")
    services.directory.share(actors["alice"].id, home_list.id, actors["bob"].id, Role.EDITOR)
    services.directory.share(actors["alice"].id, home_list.id, actors["carol"].id, Role.VIEWER)
    (root / "home").mkdir()
    (root / "away").mkdir()
    home = services.workspaces.add(actors["alice"].id, root / "home", "home")
    services.workspaces.set_member(actors["alice"].id, home.id, actors["bob"].id, Role.EDITOR)
    services.workspaces.set_member(actors["alice"].id, home.id, actors["carol"].id, Role.VIEWER)
    away = services.workspaces.add(actors["dave"].id, root / "away", "away")
    for runner in ("bob", "dave"):
        services.grants.grant(actors[runner].id, Privilege.RUN)
    clock.advance(timedelta(days=2))  # erin's token has expired
    ctx = ApiContext(
        services=services,
        accounts=accounts,
        settings=ApiSettings(runtime_dir=root / "runtime"),
    )
    client = TestClient(create_app(ctx, access_log_enabled=False), raise_server_exceptions=False)
    return ApiWorld(
        client=client,
        services=services,
        accounts=accounts,
        clock=clock,
        actors=actors,
        tokens=tokens,
        home_list=home_list,
        home=home,
        away=away,
        root=root,
    )


@pytest.fixture
def api(store: Store, fake_clock: FakeClock, tmp_path: Path) -> Iterator[ApiWorld]:
    world = make_api_world(build(store), fake_clock, tmp_path)
    with world.client:
        yield world
