"""Logging in with a handle and a password: one answer for every failure after the same
argon2 work, rehashing of old hashes, and throttling; on both backends."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select, update

from auth.conftest import ALICE_PASSWORD, AuthWorld, fast_hasher
from kalends.auth import MAX_PASSWORD_LENGTH, SESSION_TTL, Accounts, LoginThrottle
from kalends.auth.throttle import MAX_DELAY, Backoff
from kalends.errors import RateLimited, Unauthenticated
from kalends.storage.auth_tables import accounts, auth_sessions
from kalends.storage.testing import nothing_written


class CountingHasher(PasswordHasher):
    """A fast hasher that counts its verifications."""

    def __init__(self) -> None:
        fast = fast_hasher()
        super().__init__(
            time_cost=fast.time_cost,
            memory_cost=fast.memory_cost,
            parallelism=fast.parallelism,
        )
        self.verified = 0

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        self.verified += 1
        return super().verify(hash, password)


def stored_hash(aw: AuthWorld, actor_id: object) -> str:
    with aw.store.transaction(write=False) as conn:
        value: str = conn.execute(
            select(accounts.c.password_hash).where(accounts.c.actor_id == actor_id)
        ).scalar_one()
    return value


class TestSuccess:
    def test_login_opens_a_session_for_fourteen_days(self, aw: AuthWorld) -> None:
        grant = aw.accounts.login("alice", ALICE_PASSWORD, remote="10.0.0.1")
        principal = grant.principal
        assert (principal.actor_id, principal.handle, principal.kind) == (
            aw.alice.id,
            "alice",
            "session",
        )
        assert principal.csrf_token == grant.csrf_token
        assert grant.csrf_token != grant.secret
        assert grant.expires_at == aw.clock.now() + SESSION_TTL
        with aw.store.transaction(write=False) as conn:
            row = conn.execute(select(auth_sessions)).one()
        assert (row.id, row.actor_id) == (principal.credential_id, aw.alice.id)
        assert (row.created_at, row.last_seen_at, row.revoked_at) == (
            aw.clock.now(),
            aw.clock.now(),
            None,
        )

    def test_the_handle_is_matched_without_case_or_surrounding_spaces(self, aw: AuthWorld) -> None:
        assert aw.accounts.login(" Alice ", ALICE_PASSWORD).principal.handle == "alice"


FAILURES: list[tuple[str, Any]] = [
    ("alice", "not the password"),  # wrong password
    ("alice", ""),  # empty password
    ("alice", ALICE_PASSWORD + "!"),  # one character more
    ("alice", "x" * (MAX_PASSWORD_LENGTH + 1)),  # over the longest password
    ("alice", None),  # no password at all
    ("nobody", ALICE_PASSWORD),  # unknown handle
    ("bob", ALICE_PASSWORD),  # an account without a password yet
    ("carol", ALICE_PASSWORD),  # an actor without an account
    ("", ALICE_PASSWORD),  # empty handle
    ("a" * 65, ALICE_PASSWORD),  # longer than any handle
]


class TestFailure:
    @pytest.mark.parametrize(("handle", "password"), FAILURES)
    def test_every_failure_says_the_same_after_one_argon2_verification(
        self, aw: AuthWorld, handle: str, password: Any
    ) -> None:
        hasher = CountingHasher()
        accounts_ = Accounts(aw.store, hasher=hasher)
        with nothing_written(aw.store), pytest.raises(Unauthenticated) as caught:
            accounts_.login(handle, password)
        assert caught.value.message == "wrong handle or password"
        assert hasher.verified == 1

    def test_a_success_also_takes_one_verification(self, aw: AuthWorld) -> None:
        hasher = CountingHasher()
        Accounts(aw.store, hasher=hasher).login("alice", ALICE_PASSWORD)
        assert hasher.verified == 1


class TestRace:
    def test_a_password_changed_during_the_check_refuses_the_old_one(self, aw: AuthWorld) -> None:
        # The change lands between the login's verification and its write.
        passwords = aw.accounts.passwords
        verify = passwords.verify

        def verify_then_change(stored: str | None, password: object) -> bool:
            result = verify(stored, password)
            passwords.verify = verify  # type: ignore[method-assign]
            aw.accounts.set_password(
                aw.alice.id, "changed meanwhile", current_password=ALICE_PASSWORD
            )
            return result

        passwords.verify = verify_then_change  # type: ignore[method-assign]
        with pytest.raises(Unauthenticated, match="wrong handle or password"):
            aw.accounts.login("alice", ALICE_PASSWORD)
        with aw.store.transaction(write=False) as conn:
            assert conn.execute(select(auth_sessions)).all() == []


class TestRehash:
    def test_a_hash_made_with_other_parameters_is_renewed_at_login(self, aw: AuthWorld) -> None:
        old = PasswordHasher(time_cost=2, memory_cost=2048, parallelism=1).hash(ALICE_PASSWORD)
        with aw.store.transaction() as conn:
            conn.execute(
                update(accounts).where(accounts.c.actor_id == aw.alice.id).values(password_hash=old)
            )
        aw.accounts.login("alice", ALICE_PASSWORD)
        renewed = stored_hash(aw, aw.alice.id)
        assert renewed != old
        assert not fast_hasher().check_needs_rehash(renewed)
        assert aw.accounts.login("alice", ALICE_PASSWORD).principal.handle == "alice"

    def test_a_current_hash_is_left_as_it_is(self, aw: AuthWorld) -> None:
        before = stored_hash(aw, aw.alice.id)
        aw.accounts.login("alice", ALICE_PASSWORD)
        assert stored_hash(aw, aw.alice.id) == before


class TestThrottle:
    def test_the_real_user_logs_in_from_their_own_address_after_an_attacker_failed_from_30_others(
        self, aw: AuthWorld
    ) -> None:
        for n in range(30):
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "guess", remote=f"10.0.1.{n}")
        assert aw.accounts.login("alice", ALICE_PASSWORD, remote="192.0.2.1").principal
        # The attacker's addresses, having failed on alice, wait for the account's failures.
        with nothing_written(aw.store), pytest.raises(RateLimited) as caught:
            aw.accounts.login("alice", ALICE_PASSWORD, remote="10.0.1.0")
        assert caught.value.retry_after == pytest.approx(MAX_DELAY)

    def test_after_five_failures_from_their_own_address_the_password_gets_in_after_seconds(
        self, aw: AuthWorld
    ) -> None:
        for _ in range(5):
            aw.clock.advance(10)
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "guess", remote="10.0.0.9")
        # Even the right password waits now, before it is checked: five seconds, not minutes.
        with nothing_written(aw.store), pytest.raises(RateLimited) as caught:
            aw.accounts.login("alice", ALICE_PASSWORD, remote="10.0.0.9")
        assert caught.value.retry_after == pytest.approx(5.0)
        # Another address, another handle: their own counts.
        with pytest.raises(Unauthenticated):
            aw.accounts.login("bob", "guess", remote="10.0.0.9")
        aw.clock.advance(caught.value.retry_after)
        assert aw.accounts.login("alice", ALICE_PASSWORD, remote="10.0.0.9").principal

    def test_an_attacker_who_keeps_failing_elsewhere_never_holds_the_user_out_past_the_cap(
        self, aw: AuthWorld
    ) -> None:
        home = "192.0.2.1"
        for _ in range(5):
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "typo", remote=home)
        attackers = (f"10.{n // 200}.{n % 200}.1" for n in range(10_000))
        for _ in range(100):
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "guess", remote=next(attackers))
            aw.clock.advance(1)
        with pytest.raises(RateLimited) as caught:
            aw.accounts.login("alice", ALICE_PASSWORD, remote=home)
        # Counted from the user's own last failure, 100 s ago.
        assert caught.value.retry_after == pytest.approx(MAX_DELAY - 100)
        # The attacker goes on failing, once a second, until the very end of that wait.
        for _ in range(round(caught.value.retry_after)):
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "guess", remote=next(attackers))
            aw.clock.advance(1)
        assert aw.accounts.login("alice", ALICE_PASSWORD, remote=home).principal

    def test_every_spelling_of_a_handle_counts_against_one_account_that_still_admits_its_user(
        self, aw: AuthWorld
    ) -> None:
        for n, spelling in enumerate(("alice", " ALICE ", "Alice", " alice", "aLiCe") * 5):
            with pytest.raises(Unauthenticated):
                aw.accounts.login(spelling, "guess", remote=f"10.0.2.{n}")
        with pytest.raises(Unauthenticated):
            aw.accounts.login(" ALICE ", "guess", remote="10.0.3.1")
        # 26 failures in five spellings are one account's: an address that failed on it waits.
        with pytest.raises(RateLimited) as caught:
            aw.accounts.login("alice", "guess", remote="10.0.3.1")
        assert caught.value.retry_after == pytest.approx(MAX_DELAY)
        assert aw.accounts.login(" ALICE ", ALICE_PASSWORD, remote="192.0.2.1").principal

    def test_the_login_link_works_while_throttled_and_clears_its_address(
        self, aw: AuthWorld
    ) -> None:
        for n in range(30):
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "guess", remote=f"10.0.1.{n}")
        # One typo under attack, and the user's address waits for the account's failures.
        with pytest.raises(Unauthenticated):
            aw.accounts.login("alice", "typo", remote="192.0.2.1")
        with pytest.raises(RateLimited):
            aw.accounts.login("alice", ALICE_PASSWORD, remote="192.0.2.1")
        link = aw.accounts.issue_login_link(aw.alice.id)
        grant = aw.accounts.redeem_login_link(link, remote="192.0.2.1")
        assert grant.principal.handle == "alice"
        # Having signed in there, the user's password works there again at once.
        assert aw.accounts.login("alice", ALICE_PASSWORD, remote="192.0.2.1").principal

    def test_unknown_handles_are_throttled_exactly_like_known_ones(self, aw: AuthWorld) -> None:
        refusals = []
        for handle in ("nobody", "alice"):
            for _ in range(5):
                with pytest.raises(Unauthenticated):
                    aw.accounts.login(handle, "guess")
            with pytest.raises(RateLimited) as caught:
                aw.accounts.login(handle, "guess")
            refusals.append((caught.value.message, caught.value.retry_after))
        assert refusals[0] == refusals[1]

    def test_a_success_clears_the_failures_of_its_key(self, aw: AuthWorld) -> None:
        for _ in range(4):
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "guess")
        aw.accounts.login("alice", ALICE_PASSWORD)
        for _ in range(4):
            with pytest.raises(Unauthenticated):
                aw.accounts.login("alice", "guess")
        assert aw.accounts.login("alice", ALICE_PASSWORD).principal.handle == "alice"

    def test_a_shared_throttle_counts_across_accounts_services(self, aw: AuthWorld) -> None:
        throttle = LoginThrottle(aw.clock, pair=Backoff(free=2, first=60, cap=60))
        first = Accounts(aw.store, throttle=throttle, hasher=fast_hasher())
        second = Accounts(aw.store, throttle=throttle, hasher=fast_hasher())
        for service in (first, second):
            with pytest.raises(Unauthenticated):
                service.login("alice", "guess")
        with pytest.raises(RateLimited) as caught:
            first.login("alice", ALICE_PASSWORD)
        assert caught.value.retry_after == pytest.approx(60.0)
