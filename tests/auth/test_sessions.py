"""Cookie sessions: fourteen days from the last use, renewed at most once a minute, ended by
logout; on both backends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from auth.conftest import ALICE_PASSWORD, AuthWorld
from kalends.auth import SESSION_TTL, TOKEN_PREFIX, SessionGrant
from kalends.errors import Unauthenticated
from kalends.storage.auth_tables import auth_sessions
from kalends.storage.testing import nothing_written


def session_row(aw: AuthWorld, grant: SessionGrant) -> Any:
    with aw.store.transaction(write=False) as conn:
        return conn.execute(
            select(auth_sessions).where(auth_sessions.c.id == grant.principal.credential_id)
        ).one()


@pytest.fixture
def grant(aw: AuthWorld) -> SessionGrant:
    return aw.accounts.login("alice", ALICE_PASSWORD)


class TestAuthenticate:
    def test_the_cookie_secret_gives_the_principal_and_its_csrf_token(
        self, aw: AuthWorld, grant: SessionGrant
    ) -> None:
        principal = aw.accounts.authenticate_session(grant.secret)
        assert principal == grant.principal
        assert principal.csrf_token == grant.csrf_token
        other = aw.accounts.login("alice", ALICE_PASSWORD)
        assert other.csrf_token != grant.csrf_token
        assert other.principal.credential_id != grant.principal.credential_id

    @pytest.mark.parametrize(
        "secret",
        [
            "",  # empty
            "s" * 300,  # longer than any secret
            TOKEN_PREFIX + "x" * 43,  # shaped like a token
            "A3vZ2_not-a-session-anyone-opened-0123456789",  # well-formed but unknown
        ],
    )
    def test_an_unknown_or_malformed_secret_is_refused(
        self, aw: AuthWorld, grant: SessionGrant, secret: str
    ) -> None:
        with nothing_written(aw.store), pytest.raises(Unauthenticated):
            aw.accounts.authenticate_session(secret)

    def test_the_csrf_token_is_not_the_cookie_secret(
        self, aw: AuthWorld, grant: SessionGrant
    ) -> None:
        with pytest.raises(Unauthenticated):
            aw.accounts.authenticate_session(grant.csrf_token)


class TestExpiry:
    def test_an_unused_session_ends_fourteen_days_after_login(
        self, aw: AuthWorld, grant: SessionGrant
    ) -> None:
        twin = aw.accounts.login("alice", ALICE_PASSWORD)
        assert session_row(aw, grant).expires_at == aw.clock.now() + SESSION_TTL
        aw.clock.advance(SESSION_TTL - timedelta(seconds=1))
        assert aw.accounts.authenticate_session(twin.secret).handle == "alice"
        aw.clock.advance(timedelta(seconds=1))
        with nothing_written(aw.store), pytest.raises(Unauthenticated):
            aw.accounts.authenticate_session(grant.secret)

    def test_each_use_moves_the_end_fourteen_days_on(
        self, aw: AuthWorld, grant: SessionGrant
    ) -> None:
        for _ in range(3):
            aw.clock.advance(SESSION_TTL - timedelta(hours=1))
            assert aw.accounts.authenticate_session(grant.secret).handle == "alice"
            row = session_row(aw, grant)
            assert (row.last_seen_at, row.expires_at) == (
                aw.clock.now(),
                aw.clock.now() + SESSION_TTL,
            )
        # Six weeks after the login, still alive; then fourteen idle days end it.
        aw.clock.advance(SESSION_TTL)
        with pytest.raises(Unauthenticated):
            aw.accounts.authenticate_session(grant.secret)

    def test_the_last_use_is_written_at_most_once_a_minute(
        self, aw: AuthWorld, grant: SessionGrant
    ) -> None:
        # Checked on the row itself: nothing_written leaves these bookkeeping columns out.
        login_at = aw.clock.now()
        aw.clock.advance(59)
        aw.accounts.authenticate_session(grant.secret)
        row = session_row(aw, grant)
        assert (row.last_seen_at, row.expires_at) == (login_at, login_at + SESSION_TTL)
        aw.clock.advance(1)
        aw.accounts.authenticate_session(grant.secret)
        touched_at = aw.clock.now()
        assert session_row(aw, grant).last_seen_at == touched_at
        aw.clock.advance(30)
        aw.accounts.authenticate_session(grant.secret)
        row = session_row(aw, grant)
        assert (row.last_seen_at, row.expires_at) == (touched_at, touched_at + SESSION_TTL)


class TestLogout:
    def test_logout_ends_that_session_only(self, aw: AuthWorld, grant: SessionGrant) -> None:
        other = aw.accounts.login("alice", ALICE_PASSWORD)
        aw.clock.advance(5)
        aw.accounts.logout(grant.secret)
        assert session_row(aw, grant).revoked_at == aw.clock.now()
        with nothing_written(aw.store), pytest.raises(Unauthenticated):
            aw.accounts.authenticate_session(grant.secret)
        assert aw.accounts.authenticate_session(other.secret).handle == "alice"

    @pytest.mark.parametrize(
        "secret",
        [
            "",  # empty
            "s" * 300,  # longer than any secret
            "A3vZ2_not-a-session-anyone-opened-0123456789",  # unknown
        ],
    )
    def test_logging_out_an_unknown_secret_is_no_error_and_writes_nothing(
        self, aw: AuthWorld, grant: SessionGrant, secret: str
    ) -> None:
        with nothing_written(aw.store):
            aw.accounts.logout(secret)
        assert aw.accounts.authenticate_session(grant.secret).handle == "alice"

    def test_logging_out_twice_keeps_the_first_revocation(
        self, aw: AuthWorld, grant: SessionGrant
    ) -> None:
        aw.accounts.logout(grant.secret)
        aw.clock.advance(60)
        with nothing_written(aw.store):
            aw.accounts.logout(grant.secret)

    def test_a_new_session_removes_the_actors_ended_ones(
        self, aw: AuthWorld, grant: SessionGrant
    ) -> None:
        aw.accounts.logout(grant.secret)
        expiring = aw.accounts.login("alice", ALICE_PASSWORD)
        bobs = aw.accounts.redeem_login_link(aw.accounts.issue_login_link(aw.bob.id))
        aw.accounts.logout(bobs.secret)
        # The revoked session went as soon as Alice opened another.
        assert session_ids(aw) == {expiring.principal.credential_id, bobs.principal.credential_id}
        aw.clock.advance(SESSION_TTL)
        latest = aw.accounts.login("alice", ALICE_PASSWORD)
        # The expired one went too; Bob's revoked one waits for Bob.
        assert session_ids(aw) == {latest.principal.credential_id, bobs.principal.credential_id}


def session_ids(aw: AuthWorld) -> set[Any]:
    with aw.store.transaction(write=False) as conn:
        return set(conn.execute(select(auth_sessions.c.id)).scalars())
