"""Fixtures of the authentication suite: a fresh migrated database per test on SQLite and
(when reachable) PostgreSQL, with actors and a fast argon2id hasher.

alice has an account with the password :data:`ALICE_PASSWORD`; bob has an account
without a password; carol is an actor without an account.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from argon2 import PasswordHasher

from kalends.auth import Accounts, LoginThrottle
from kalends.clock import FakeClock
from kalends.storage.testing import snapshot
from kalends.storage.unit_of_work import Store
from kalends.tasks import Actor, Directory

ALICE_PASSWORD = "correct horse battery staple"


def fast_hasher() -> PasswordHasher:
    """argon2id with tiny costs, so the suite spends its time on behaviour, not on hashing."""
    return PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


@dataclass(frozen=True, slots=True)
class AuthWorld:
    store: Store
    clock: FakeClock
    accounts: Accounts
    throttle: LoginThrottle
    alice: Actor
    bob: Actor
    carol: Actor


@pytest.fixture
def aw(store: Store, fake_clock: FakeClock) -> AuthWorld:
    throttle = LoginThrottle(fake_clock)
    accounts = Accounts(store, throttle=throttle, hasher=fast_hasher())
    directory = Directory(store)
    alice = directory.add_actor("alice", "Alice", "alice@example.com")
    bob = directory.add_actor("bob", "Bob")
    carol = directory.add_actor("carol", "Carol")
    accounts.ensure_account(alice.id)
    accounts.set_password(alice.id, ALICE_PASSWORD, current_password=None)
    accounts.ensure_account(bob.id)
    return AuthWorld(
        store=store,
        clock=fake_clock,
        accounts=accounts,
        throttle=throttle,
        alice=alice,
        bob=bob,
        carol=carol,
    )


def stored_text(store: Store) -> str:
    """Every value of every row of every table, as one text to search for secrets."""
    rows: dict[str, Any] = snapshot(store)
    return repr(rows)
