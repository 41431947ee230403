"""The owner's bootstrap and one-time login links: a link opens one session, once, within
fifteen minutes; a second bootstrap is refused; on both backends."""

from __future__ import annotations

import threading
from datetime import timedelta
from uuid import UUID

import pytest
from sqlalchemy import func, select

from auth.conftest import AuthWorld, fast_hasher
from kalends.auth import LOGIN_LINK_TTL, Accounts, SessionGrant
from kalends.clock import FakeClock
from kalends.errors import Conflict, InvalidInput, NotFound, Unauthenticated
from kalends.storage.auth_tables import login_links
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store


class TestBootstrap:
    def test_bootstrap_creates_an_owner_without_password_whose_link_signs_in_once(
        self, store: Store
    ) -> None:
        accounts = Accounts(store, hasher=fast_hasher())
        assert not accounts.has_owner()
        actor_id, secret = accounts.bootstrap_owner("olga", "Olga", "olga@example.com")
        assert accounts.has_owner()
        account = accounts.account("olga")
        assert account["actor"]["id"] == str(actor_id)
        assert account["actor"]["email"] == "olga@example.com"
        assert (account["isOwner"], account["hasPassword"]) == (True, False)
        assert account["createdAt"] == "2025-03-01T12:00:00Z"
        grant = accounts.redeem_login_link(secret)
        assert (grant.principal.actor_id, grant.principal.handle) == (actor_id, "olga")
        assert accounts.authenticate_session(grant.secret).actor_id == actor_id
        with nothing_written(store), pytest.raises(Unauthenticated):
            accounts.redeem_login_link(secret)

    def test_bootstrap_makes_an_existing_actor_with_that_handle_the_owner(
        self, aw: AuthWorld
    ) -> None:
        actor_id, secret = aw.accounts.bootstrap_owner("bob", "Ignored Name")
        assert actor_id == aw.bob.id
        account = aw.accounts.account(aw.bob.id)
        assert account["isOwner"] is True
        assert account["actor"]["display_name"] == "Bob"
        assert aw.accounts.redeem_login_link(secret).principal.actor_id == aw.bob.id

    def test_a_second_bootstrap_is_refused_and_writes_nothing(self, aw: AuthWorld) -> None:
        aw.accounts.bootstrap_owner("olga", "Olga")
        # A new handle, the owner's own handle, an actor that already has an account.
        for handle in ("zoe", "olga", "alice"):
            with nothing_written(aw.store), pytest.raises(Conflict, match="owner"):
                aw.accounts.bootstrap_owner(handle, "Someone")

    def test_a_bootstrap_with_a_bad_handle_writes_nothing(self, store: Store) -> None:
        accounts = Accounts(store, hasher=fast_hasher())
        with nothing_written(store), pytest.raises(InvalidInput) as caught:
            accounts.bootstrap_owner("Not A Handle", "Olga")
        assert caught.value.field == "handle"
        assert not accounts.has_owner()


class TestAccounts:
    def test_ensure_account_creates_one_without_password_and_is_idempotent(
        self, aw: AuthWorld
    ) -> None:
        with pytest.raises(NotFound):
            aw.accounts.account(aw.carol.id)
        aw.accounts.ensure_account("carol")
        account = aw.accounts.account(aw.carol.id)
        assert (account["isOwner"], account["hasPassword"]) == (False, False)
        with nothing_written(aw.store):
            aw.accounts.ensure_account(aw.carol.id)
            aw.accounts.ensure_account(aw.alice.id)
        assert aw.accounts.account(aw.alice.id)["hasPassword"] is True

    def test_the_account_was_created_when_the_account_was_made_not_the_actor(
        self, aw: AuthWorld
    ) -> None:
        aw.clock.advance(3600)
        aw.accounts.ensure_account(aw.carol.id)
        assert aw.accounts.account("carol")["createdAt"] == "2025-03-01T13:00:00Z"

    def test_ensure_account_of_an_unknown_actor_is_not_found(self, aw: AuthWorld) -> None:
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.ensure_account("nobody")


class TestLoginLinks:
    def test_a_link_works_until_fifteen_minutes_have_passed(
        self, aw: AuthWorld, fake_clock: FakeClock
    ) -> None:
        early = aw.accounts.issue_login_link(aw.bob.id)
        late = aw.accounts.issue_login_link("bob")
        fake_clock.advance(LOGIN_LINK_TTL - timedelta(seconds=1))
        assert aw.accounts.redeem_login_link(early).principal.handle == "bob"
        fake_clock.advance(timedelta(seconds=1))
        with nothing_written(aw.store), pytest.raises(Unauthenticated, match="expired"):
            aw.accounts.redeem_login_link(late)

    def test_a_link_issued_with_its_expiry_expires_fifteen_minutes_from_now(
        self, aw: AuthWorld, fake_clock: FakeClock
    ) -> None:
        link = aw.accounts.login_link("bob")
        assert link.expires_at == fake_clock.now() + LOGIN_LINK_TTL
        with nothing_written(aw.store), pytest.raises(NotFound, match="no account"):
            aw.accounts.login_link(aw.carol.id)
        assert aw.accounts.redeem_login_link(link.secret).principal.handle == "bob"

    def test_issuing_a_link_needs_an_account(self, aw: AuthWorld) -> None:
        with nothing_written(aw.store), pytest.raises(NotFound, match="no account"):
            aw.accounts.issue_login_link(aw.carol.id)
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.issue_login_link("nobody")
        aw.accounts.ensure_account(aw.carol.id)
        secret = aw.accounts.issue_login_link(aw.carol.id)
        assert aw.accounts.redeem_login_link(secret).principal.actor_id == aw.carol.id

    @pytest.mark.parametrize(
        "secret",
        [
            "",  # empty
            "x" * 10_000,  # far too long to be a secret: refused before hashing
            "A3vZ2_not-a-link-anyone-issued-yet-0123456789",  # well-formed but unknown
        ],
    )
    def test_an_unknown_or_malformed_link_is_refused(self, aw: AuthWorld, secret: str) -> None:
        aw.accounts.issue_login_link(aw.bob.id)
        with nothing_written(aw.store), pytest.raises(Unauthenticated):
            aw.accounts.redeem_login_link(secret)

    def test_issuing_a_link_removes_the_actors_used_and_expired_links(
        self, aw: AuthWorld, fake_clock: FakeClock
    ) -> None:
        used = aw.accounts.issue_login_link(aw.bob.id)
        aw.accounts.redeem_login_link(used)
        aw.accounts.issue_login_link(aw.bob.id)  # expires unused
        aw.accounts.issue_login_link(aw.alice.id)  # another actor's: stays
        fake_clock.advance(LOGIN_LINK_TTL)
        aw.accounts.issue_login_link(aw.bob.id)
        with aw.store.transaction(write=False) as conn:
            counts: dict[UUID, int] = dict(
                conn.execute(
                    select(login_links.c.actor_id, func.count()).group_by(login_links.c.actor_id)
                ).all()
            )
        assert counts == {aw.alice.id: 1, aw.bob.id: 1}

    def test_two_racing_redemptions_of_one_link_open_one_session(self, aw: AuthWorld) -> None:
        secret = aw.accounts.issue_login_link(aw.bob.id)
        barrier = threading.Barrier(4)
        outcomes: list[SessionGrant | BaseException] = []

        def redeem() -> None:
            barrier.wait(5)
            try:
                outcomes.append(aw.accounts.redeem_login_link(secret))
            except BaseException as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=redeem) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        grants = [o for o in outcomes if isinstance(o, SessionGrant)]
        refusals = [o for o in outcomes if isinstance(o, Unauthenticated)]
        assert (len(grants), len(refusals)) == (1, 3), outcomes
