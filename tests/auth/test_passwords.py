"""Setting and changing passwords: the length rules, the current password when there is one,
and a change ending every other way in; on both backends."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from auth.conftest import ALICE_PASSWORD, AuthWorld
from kalends.auth import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from kalends.errors import Conflict, InvalidInput, NotFound, RateLimited, Unauthenticated
from kalends.storage.auth_tables import accounts
from kalends.storage.testing import nothing_written

NEW_PASSWORD = "a much better passphrase"


def account_row(aw: AuthWorld, actor_id: object) -> Any:
    with aw.store.transaction(write=False) as conn:
        return conn.execute(select(accounts).where(accounts.c.actor_id == actor_id)).one()


class TestRules:
    @pytest.mark.parametrize(
        "password",
        [
            "x" * (MIN_PASSWORD_LENGTH - 1),  # one character short
            "",  # empty
            "x" * (MAX_PASSWORD_LENGTH + 1),  # one character over
            12345678901,  # not text
        ],
    )
    def test_a_password_of_the_wrong_length_or_type_is_refused(
        self, aw: AuthWorld, password: Any
    ) -> None:
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.set_password(aw.bob.id, password, current_password=None)
        assert caught.value.field == "password"

    @pytest.mark.parametrize(
        "password",
        [
            "y" * MIN_PASSWORD_LENGTH,  # the shortest allowed
            "y" * MAX_PASSWORD_LENGTH,  # the longest allowed
        ],
    )
    def test_the_bounds_themselves_are_allowed(self, aw: AuthWorld, password: str) -> None:
        aw.accounts.set_password(aw.bob.id, password, current_password=None)
        assert aw.accounts.login("bob", password).principal.actor_id == aw.bob.id

    def test_an_actor_without_an_account_or_unknown_cannot_set_one(self, aw: AuthWorld) -> None:
        for actor in (aw.carol.id, "nobody"):
            with nothing_written(aw.store), pytest.raises(NotFound):
                aw.accounts.set_password(actor, NEW_PASSWORD, current_password=None)

    def test_a_keep_session_that_is_not_an_id_is_refused(self, aw: AuthWorld) -> None:
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.set_password(
                aw.bob.id,
                NEW_PASSWORD,
                current_password=None,
                keep_session="not-a-uuid",  # type: ignore[arg-type]
            )
        assert caught.value.field == "keep_session"


class TestFirstPassword:
    def test_an_account_without_password_sets_one_without_the_current_one(
        self, aw: AuthWorld
    ) -> None:
        assert aw.accounts.account(aw.bob.id)["hasPassword"] is False
        aw.accounts.set_password("bob", NEW_PASSWORD, current_password=None)
        assert aw.accounts.account(aw.bob.id)["hasPassword"] is True
        row = account_row(aw, aw.bob.id)
        assert row.password_hash.startswith("$argon2id$")
        assert NEW_PASSWORD not in row.password_hash
        assert row.password_changed_at == aw.clock.now()
        assert aw.accounts.login("bob", NEW_PASSWORD).principal.handle == "bob"


class TestChange:
    @pytest.mark.parametrize(
        "current",
        [
            None,  # not given
            "not the password",  # wrong
            "",  # empty
        ],
    )
    def test_a_change_needs_the_current_password(self, aw: AuthWorld, current: str | None) -> None:
        with nothing_written(aw.store), pytest.raises(Unauthenticated, match="current password"):
            aw.accounts.set_password(aw.alice.id, NEW_PASSWORD, current_password=current)
        assert aw.accounts.login("alice", ALICE_PASSWORD).principal.handle == "alice"

    def test_wrong_current_passwords_are_throttled_like_logins(self, aw: AuthWorld) -> None:
        for _ in range(5):
            with pytest.raises(Unauthenticated):
                aw.accounts.set_password(
                    aw.alice.id, NEW_PASSWORD, current_password="guess", remote="10.0.0.9"
                )
        with nothing_written(aw.store), pytest.raises(RateLimited) as caught:
            aw.accounts.set_password(
                aw.alice.id, NEW_PASSWORD, current_password=ALICE_PASSWORD, remote="10.0.0.9"
            )
        assert caught.value.retry_after == pytest.approx(5.0)  # the first delay
        # The same key as a login from that address.
        with pytest.raises(RateLimited):
            aw.accounts.login("alice", ALICE_PASSWORD, remote="10.0.0.9")

    def test_a_change_revokes_every_other_session_and_unredeemed_link(self, aw: AuthWorld) -> None:
        kept = aw.accounts.login("alice", ALICE_PASSWORD)
        other = aw.accounts.login("alice", ALICE_PASSWORD)
        link = aw.accounts.issue_login_link(aw.alice.id)
        _, token = aw.accounts.create_token(aw.alice.id, "ci", expires_in=None)
        aw.clock.advance(5)
        aw.accounts.set_password(
            aw.alice.id,
            NEW_PASSWORD,
            current_password=ALICE_PASSWORD,
            keep_session=kept.principal.credential_id,
        )
        assert aw.accounts.authenticate_session(kept.secret).actor_id == aw.alice.id
        with pytest.raises(Unauthenticated):
            aw.accounts.authenticate_session(other.secret)
        with pytest.raises(Unauthenticated):
            aw.accounts.redeem_login_link(link)
        # API tokens are credentials of their own, revoked one by one.
        assert aw.accounts.authenticate_token(token).actor_id == aw.alice.id
        with pytest.raises(Unauthenticated, match="wrong handle or password"):
            aw.accounts.login("alice", ALICE_PASSWORD)
        assert aw.accounts.login("alice", NEW_PASSWORD).principal.handle == "alice"
        assert account_row(aw, aw.alice.id).password_changed_at == aw.clock.now()

    def test_a_change_without_a_session_to_keep_revokes_them_all(self, aw: AuthWorld) -> None:
        grants = [aw.accounts.login("alice", ALICE_PASSWORD) for _ in range(2)]
        bobs = aw.accounts.redeem_login_link(aw.accounts.issue_login_link(aw.bob.id))
        aw.accounts.set_password(aw.alice.id, NEW_PASSWORD, current_password=ALICE_PASSWORD)
        for grant in grants:
            with pytest.raises(Unauthenticated):
                aw.accounts.authenticate_session(grant.secret)
        # Another actor's session is untouched.
        assert aw.accounts.authenticate_session(bobs.secret).handle == "bob"

    def test_a_change_racing_another_is_refused_rather_than_lost(self, aw: AuthWorld) -> None:
        # The first change lands between the second one's check and its write.
        passwords = aw.accounts.passwords
        verify = passwords.verify

        def verify_then_race(stored: str | None, password: object) -> bool:
            result = verify(stored, password)
            passwords.verify = verify  # type: ignore[method-assign]
            aw.accounts.set_password(
                aw.alice.id, "changed meanwhile", current_password=ALICE_PASSWORD
            )
            return result

        passwords.verify = verify_then_race  # type: ignore[method-assign]
        with pytest.raises(Conflict, match="changed meanwhile"):
            aw.accounts.set_password(aw.alice.id, NEW_PASSWORD, current_password=ALICE_PASSWORD)
        assert aw.accounts.login("alice", "changed meanwhile").principal.handle == "alice"
