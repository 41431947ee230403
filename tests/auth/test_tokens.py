"""API tokens: created with a secret shown once, listed newest first, revoked by their owner
only, refused once expired or revoked; bad input writes nothing; on both backends."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from auth.conftest import AuthWorld
from kalends.auth import TOKEN_PREFIX
from kalends.auth.tokens import MAX_ACTIVE_TOKENS, RETIRED_TOKEN_RETENTION
from kalends.errors import InvalidInput, LimitReached, NotFound, Unauthenticated
from kalends.storage.auth_tables import api_tokens
from kalends.storage.testing import nothing_written


def token_row(aw: AuthWorld, token_id: uuid.UUID) -> Any:
    with aw.store.transaction(write=False) as conn:
        return conn.execute(select(api_tokens).where(api_tokens.c.id == token_id)).one()


class TestCreate:
    def test_a_new_token_authenticates_as_its_actor(self, aw: AuthWorld) -> None:
        info, secret = aw.accounts.create_token(aw.alice.id, "  laptop  ", expires_in=None)
        assert secret.startswith(TOKEN_PREFIX)
        assert len(secret) > len(TOKEN_PREFIX) + 40
        assert (info.actor_id, info.name, info.created_at) == (
            aw.alice.id,
            "laptop",
            aw.clock.now(),
        )
        assert (info.expires_at, info.revoked_at, info.last_used_at, info.active) == (
            None,
            None,
            None,
            True,
        )
        principal = aw.accounts.authenticate_token(secret)
        assert (principal.actor_id, principal.handle, principal.kind) == (
            aw.alice.id,
            "alice",
            "token",
        )
        assert (principal.credential_id, principal.csrf_token) == (info.id, None)

    def test_a_token_serialises_with_camel_case_keys(self, aw: AuthWorld) -> None:
        info, _ = aw.accounts.create_token("alice", "ci", expires_in=timedelta(days=30))
        assert info.to_json() == {
            "id": str(info.id),
            "name": "ci",
            "createdAt": "2025-03-01T12:00:00Z",
            "expiresAt": "2025-03-31T12:00:00Z",
            "revokedAt": None,
            "lastUsedAt": None,
            "active": True,
            "device": False,
        }

    def test_an_actor_without_an_account_may_hold_tokens(self, aw: AuthWorld) -> None:
        _, secret = aw.accounts.create_token(aw.carol.id, "bot", expires_in=None)
        assert aw.accounts.authenticate_token(secret).handle == "carol"

    def test_the_number_of_active_tokens_is_bounded(self, aw: AuthWorld) -> None:
        infos = [
            aw.accounts.create_token(aw.alice.id, f"t{n}", expires_in=None)[0]
            for n in range(MAX_ACTIVE_TOKENS)
        ]
        with nothing_written(aw.store), pytest.raises(LimitReached):
            aw.accounts.create_token(aw.alice.id, "one more", expires_in=None)
        aw.accounts.create_token(aw.bob.id, "bob's own", expires_in=None)
        aw.accounts.revoke_token(aw.alice.id, infos[0].id)
        aw.accounts.create_token(aw.alice.id, "one more", expires_in=None)


class TestList:
    def test_the_list_holds_the_actors_own_tokens_newest_first(self, aw: AuthWorld) -> None:
        first, _ = aw.accounts.create_token(aw.alice.id, "first", expires_in=None)
        aw.clock.advance(1)
        second, _ = aw.accounts.create_token(aw.alice.id, "second", expires_in=timedelta(hours=1))
        aw.clock.advance(1)
        third, _ = aw.accounts.create_token(aw.alice.id, "third", expires_in=None)
        aw.accounts.create_token(aw.bob.id, "bob's", expires_in=None)
        listed = aw.accounts.tokens("alice")
        assert [t.id for t in listed] == [third.id, second.id, first.id]
        assert listed == [third, second, first]

    def test_the_list_tells_expired_and_revoked_tokens_apart(self, aw: AuthWorld) -> None:
        aw.accounts.create_token(aw.alice.id, "short", expires_in=timedelta(hours=1))
        gone, _ = aw.accounts.create_token(aw.alice.id, "gone", expires_in=None)
        aw.accounts.create_token(aw.alice.id, "live", expires_in=None)
        aw.accounts.revoke_token(aw.alice.id, str(gone.id))
        aw.clock.advance(timedelta(hours=1))
        states = {t.name: (t.active, t.revoked_at is not None) for t in aw.accounts.tokens("alice")}
        assert states == {"short": (False, False), "gone": (False, True), "live": (True, False)}

    def test_retired_tokens_are_removed_after_ninety_days_when_another_is_made(
        self, aw: AuthWorld
    ) -> None:
        gone, _ = aw.accounts.create_token(aw.alice.id, "gone", expires_in=None)
        aw.accounts.create_token(aw.alice.id, "short", expires_in=timedelta(days=1))
        aw.accounts.revoke_token(aw.alice.id, gone.id)
        aw.accounts.create_token(aw.alice.id, "soon", expires_in=None)
        assert {t.name for t in aw.accounts.tokens("alice")} == {"gone", "short", "soon"}
        aw.clock.advance(RETIRED_TOKEN_RETENTION)
        assert {t.name for t in aw.accounts.tokens("alice")} == {"gone", "short", "soon"}
        aw.accounts.create_token(aw.alice.id, "new", expires_in=None)
        # "short" expired a day after "gone" was revoked: one more day to stay listed.
        assert {t.name for t in aw.accounts.tokens("alice")} == {"short", "soon", "new"}


class TestUse:
    def test_an_expired_token_is_refused(self, aw: AuthWorld) -> None:
        _, secret = aw.accounts.create_token(aw.alice.id, "short", expires_in=timedelta(hours=1))
        aw.clock.advance(timedelta(hours=1) - timedelta(seconds=1))
        aw.accounts.authenticate_token(secret)
        aw.clock.advance(timedelta(seconds=1))
        with nothing_written(aw.store), pytest.raises(Unauthenticated):
            aw.accounts.authenticate_token(secret)

    def test_the_last_use_is_written_at_most_once_a_minute(self, aw: AuthWorld) -> None:
        info, secret = aw.accounts.create_token(aw.alice.id, "ci", expires_in=None)
        aw.accounts.authenticate_token(secret)
        assert token_row(aw, info.id).last_used_at == aw.clock.now()
        first_use = aw.clock.now()
        aw.clock.advance(59)
        aw.accounts.authenticate_token(secret)
        # Checked on the row itself: nothing_written leaves this bookkeeping column out.
        assert token_row(aw, info.id).last_used_at == first_use
        aw.clock.advance(1)
        aw.accounts.authenticate_token(secret)
        assert token_row(aw, info.id).last_used_at == first_use + timedelta(minutes=1)
        assert aw.accounts.tokens(aw.alice.id)[0].last_used_at == aw.clock.now()

    @pytest.mark.parametrize(
        "secret",
        [
            "",  # empty
            TOKEN_PREFIX,  # the prefix alone
            "x" * 47,  # no prefix
            TOKEN_PREFIX + "x" * 300,  # longer than any token
            TOKEN_PREFIX + "A3vZ2_not-a-token-anyone-made-0123456789abc",  # unknown
        ],
    )
    def test_an_unknown_or_malformed_token_is_refused(self, aw: AuthWorld, secret: str) -> None:
        aw.accounts.create_token(aw.alice.id, "ci", expires_in=None)
        with nothing_written(aw.store), pytest.raises(Unauthenticated):
            aw.accounts.authenticate_token(secret)

    def test_a_session_secret_is_not_a_token(self, aw: AuthWorld) -> None:
        secret = aw.accounts.redeem_login_link(aw.accounts.issue_login_link(aw.bob.id)).secret
        with pytest.raises(Unauthenticated):
            aw.accounts.authenticate_token(secret)
        with pytest.raises(Unauthenticated):
            aw.accounts.authenticate_token(TOKEN_PREFIX + secret)


class TestRevoke:
    def test_a_revoked_token_is_refused_and_revoking_again_changes_nothing(
        self, aw: AuthWorld
    ) -> None:
        info, secret = aw.accounts.create_token(aw.alice.id, "ci", expires_in=None)
        aw.clock.advance(10)
        revoked = aw.accounts.revoke_token("alice", info.id)
        assert (revoked.revoked_at, revoked.active) == (aw.clock.now(), False)
        with nothing_written(aw.store), pytest.raises(Unauthenticated):
            aw.accounts.authenticate_token(secret)
        aw.clock.advance(10)
        with nothing_written(aw.store):
            again = aw.accounts.revoke_token(aw.alice.id, str(info.id))
        assert again == revoked

    def test_another_actors_token_is_not_found_and_stays_valid(self, aw: AuthWorld) -> None:
        info, secret = aw.accounts.create_token(aw.bob.id, "bob's", expires_in=None)
        with nothing_written(aw.store), pytest.raises(NotFound) as caught:
            aw.accounts.revoke_token(aw.alice.id, info.id)
        assert caught.value.details["field"] == "token"
        assert aw.accounts.authenticate_token(secret).handle == "bob"

    def test_an_unknown_token_is_not_found(self, aw: AuthWorld) -> None:
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.revoke_token(aw.alice.id, uuid.uuid4())


BAD_NAMES: list[Any] = [
    "",  # empty
    "   ",  # blank
    "n" * 121,  # one over the longest name
    None,  # not text
    42,  # not text
]
BAD_LIFETIMES: list[Any] = [
    timedelta(0),  # no time at all
    timedelta(seconds=-1),  # negative
    timedelta(days=-30),  # negative
    timedelta(days=366, seconds=1),  # just over a year and a day
    3600,  # a number, not a duration
    "1h",  # text, not a duration
]


class TestBadInput:
    @pytest.mark.parametrize("name", BAD_NAMES)
    def test_a_bad_name_writes_nothing(self, aw: AuthWorld, name: Any) -> None:
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.create_token(aw.alice.id, name, expires_in=None)
        assert caught.value.field == "name"

    @pytest.mark.parametrize("expires_in", BAD_LIFETIMES)
    def test_a_bad_lifetime_writes_nothing(self, aw: AuthWorld, expires_in: Any) -> None:
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.create_token(aw.alice.id, "ci", expires_in=expires_in)
        assert caught.value.field == "expires_in"

    def test_the_bounds_themselves_are_allowed(self, aw: AuthWorld) -> None:
        info, _ = aw.accounts.create_token(aw.alice.id, "n" * 120, expires_in=timedelta(days=366))
        assert info.expires_at == aw.clock.now() + timedelta(days=366)
        assert aw.accounts.tokens(aw.alice.id) == [info]

    @pytest.mark.parametrize(
        "token_id",
        [
            "not-a-uuid",  # text that is no ID
            "",  # empty
            "1234",  # too short
        ],
    )
    def test_a_token_id_that_is_not_a_uuid_writes_nothing(
        self, aw: AuthWorld, token_id: str
    ) -> None:
        aw.accounts.create_token(aw.alice.id, "ci", expires_in=None)
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.revoke_token(aw.alice.id, token_id)
        assert caught.value.field == "token"

    def test_an_unknown_actor_writes_nothing(self, aw: AuthWorld) -> None:
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.create_token("nobody", "ci", expires_in=None)
        with pytest.raises(NotFound):
            aw.accounts.tokens(uuid.uuid4())
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.revoke_token("nobody", uuid.uuid4())
