"""Paired devices: a one-time pairing link, redeemed once within fifteen minutes, pairs a
device whose credential lives its own lifetime, is never a bearer token, never pairs
another device and unpairs only itself; sessions and devices are live only while
unrevoked and unexpired; bad input writes nothing; on both backends."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from auth.conftest import ALICE_PASSWORD, AuthWorld
from auth.test_tokens import BAD_LIFETIMES, BAD_NAMES, token_row
from kalends.auth import (
    DEVICE_PAIRING_TTL,
    MAX_ACTIVE_TOKENS,
    MAX_TOKEN_LIFETIME,
    DeviceGrant,
    Principal,
    principal_live,
)
from kalends.auth.credentials import csrf_token_for
from kalends.auth.devices import MAX_PENDING_PAIRINGS, PAIRING_REFUSED
from kalends.auth.sessions import SESSION_TTL, TOUCH_INTERVAL
from kalends.auth.tokens import find_token
from kalends.errors import Forbidden, InvalidInput, LimitReached, NotFound, Unauthenticated
from kalends.storage.auth_tables import device_pairings
from kalends.storage.testing import nothing_written


def session_of(aw: AuthWorld) -> Principal:
    """A login session of alice's, the usual pairer."""
    return aw.accounts.login("alice", ALICE_PASSWORD).principal


def paired(aw: AuthWorld, name: str = "phone", expires_in: Any = None) -> DeviceGrant:
    """A device of alice's, paired through a link her session made."""
    link = aw.accounts.pair_device(session_of(aw), name, expires_in)
    return aw.accounts.redeem_pairing(link.secret)


def pairing_count(aw: AuthWorld) -> int:
    with aw.store.transaction(write=False) as conn:
        return int(conn.execute(select(func.count()).select_from(device_pairings)).scalar_one())


class TestPairing:
    def test_a_link_pairs_a_device_that_acts_as_its_actor(self, aw: AuthWorld) -> None:
        link = aw.accounts.pair_device(session_of(aw), "  kitchen tablet  ", timedelta(days=30))
        assert (link.name, link.lifetime) == ("kitchen tablet", timedelta(days=30))
        assert link.expires_at == aw.clock.now() + DEVICE_PAIRING_TTL
        aw.clock.advance(timedelta(minutes=5))
        grant = aw.accounts.redeem_pairing(link.secret)
        # The lifetime starts when the device is paired, not when the link was made.
        assert grant.expires_at == aw.clock.now() + timedelta(days=30)
        assert (grant.name, grant.principal.kind, grant.principal.handle) == (
            "kitchen tablet",
            "device",
            "alice",
        )
        assert grant.principal.actor_id == aw.alice.id
        assert grant.principal.credential_id == grant.token_id
        assert grant.principal.csrf_token == csrf_token_for(grant.secret)
        found, _ = aw.accounts.check_device(grant.secret)
        assert found == grant.principal

    def test_a_link_pairs_once(self, aw: AuthWorld) -> None:
        link = aw.accounts.pair_device(session_of(aw), "phone")
        aw.accounts.redeem_pairing(link.secret)
        with nothing_written(aw.store), pytest.raises(NotFound) as caught:
            aw.accounts.redeem_pairing(link.secret)
        assert str(caught.value) == PAIRING_REFUSED
        with pytest.raises(NotFound):
            aw.accounts.pairing_facts(link.secret)
        assert len(aw.accounts.devices(aw.alice.id)) == 1

    def test_a_link_stops_working_fifteen_minutes_after_it_was_made(self, aw: AuthWorld) -> None:
        link = aw.accounts.pair_device(session_of(aw), "phone")
        aw.clock.advance(DEVICE_PAIRING_TTL - timedelta(seconds=1))
        assert aw.accounts.pairing_facts(link.secret).name == "phone"
        aw.clock.advance(timedelta(seconds=1))
        with pytest.raises(NotFound, match="unknown, used or expired"):
            aw.accounts.pairing_facts(link.secret)
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.redeem_pairing(link.secret)

    def test_the_facts_of_a_link_do_not_use_it_up(self, aw: AuthWorld) -> None:
        link = aw.accounts.pair_device(session_of(aw), "phone")
        with nothing_written(aw.store):
            facts = aw.accounts.pairing_facts(link.secret)
        assert (facts.name, facts.handle, facts.expires_at) == ("phone", "alice", link.expires_at)
        assert aw.accounts.redeem_pairing(link.secret).name == "phone"

    @pytest.mark.parametrize(
        "secret",
        [
            "",  # empty
            "x" * 300,  # longer than any secret
            "unknown-secret",  # never issued
        ],
    )
    def test_an_unknown_or_malformed_link_is_refused(self, aw: AuthWorld, secret: str) -> None:
        aw.accounts.pair_device(session_of(aw), "phone")
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.redeem_pairing(secret)
        with pytest.raises(NotFound):
            aw.accounts.pairing_facts(secret)

    def test_two_racing_redemptions_of_one_link_pair_one_device(self, aw: AuthWorld) -> None:
        link = aw.accounts.pair_device(session_of(aw), "phone")
        barrier = threading.Barrier(4)
        outcomes: list[DeviceGrant | BaseException] = []

        def redeem() -> None:
            barrier.wait(5)
            try:
                outcomes.append(aw.accounts.redeem_pairing(link.secret))
            except BaseException as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=redeem) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        grants = [o for o in outcomes if isinstance(o, DeviceGrant)]
        refusals = [o for o in outcomes if isinstance(o, NotFound)]
        assert (len(grants), len(refusals)) == (1, 3), outcomes
        assert [d.id for d in aw.accounts.devices(aw.alice.id)] == [grants[0].token_id]

    def test_an_api_token_may_pair_a_device(self, aw: AuthWorld) -> None:
        _, secret = aw.accounts.create_token(aw.bob.id, "cli", expires_in=None)
        link = aw.accounts.pair_device(aw.accounts.authenticate_token(secret), "phone")
        assert aw.accounts.redeem_pairing(link.secret).principal.handle == "bob"

    def test_a_paired_device_cannot_pair_another(self, aw: AuthWorld) -> None:
        device = paired(aw)
        with nothing_written(aw.store), pytest.raises(Forbidden) as caught:
            aw.accounts.pair_device(device.principal, "another")
        assert str(caught.value) == (
            "a paired device cannot pair another device: sign in with a password or use an "
            "API token"
        )

    def test_pairing_removes_the_actors_used_and_expired_links(self, aw: AuthWorld) -> None:
        alice = session_of(aw)
        paired(aw)  # used
        aw.accounts.pair_device(alice, "expires unused")
        aw.accounts.pair_device_as(aw.bob.id, "bob's")  # another actor's: stays
        aw.clock.advance(DEVICE_PAIRING_TTL)
        aw.accounts.pair_device(alice, "fresh")
        with aw.store.transaction(write=False) as conn:
            left = conn.execute(select(device_pairings.c.name)).scalars().all()
        assert sorted(left) == ["bob's", "fresh"]


class TestLifetime:
    def test_a_device_expires_at_the_end_of_its_lifetime(self, aw: AuthWorld) -> None:
        grant = paired(aw, expires_in=timedelta(hours=2))
        aw.clock.advance(timedelta(hours=2) - timedelta(seconds=1))
        aw.accounts.check_device(grant.secret)
        aw.clock.advance(timedelta(seconds=1))
        with pytest.raises(Unauthenticated):
            aw.accounts.check_device(grant.secret)
        [listed] = aw.accounts.devices(aw.alice.id)
        assert (listed.active, listed.device) == (False, True)

    def test_a_device_without_a_lifetime_stays_paired_until_revoked(self, aw: AuthWorld) -> None:
        grant = paired(aw)
        assert grant.expires_at is None
        aw.clock.advance(MAX_TOKEN_LIFETIME * 3)
        assert aw.accounts.check_device(grant.secret)[0].credential_id == grant.token_id

    def test_a_use_is_recorded_at_most_once_a_minute(self, aw: AuthWorld) -> None:
        grant = paired(aw)
        _, touch = aw.accounts.check_device(grant.secret)
        assert touch is not None and aw.accounts.check_device(grant.secret)[1] is None
        assert token_row(aw, grant.token_id).last_used_at is None  # a check alone writes nothing
        touch()
        assert token_row(aw, grant.token_id).last_used_at == aw.clock.now()
        aw.clock.advance(TOUCH_INTERVAL - timedelta(seconds=1))
        assert aw.accounts.check_device(grant.secret)[1] is None
        aw.clock.advance(timedelta(seconds=1))
        later = aw.accounts.check_device(grant.secret)[1]
        assert later is not None
        later()
        assert token_row(aw, grant.token_id).last_used_at == aw.clock.now()

    def test_a_password_change_leaves_devices_paired(self, aw: AuthWorld) -> None:
        grant = paired(aw)
        aw.accounts.set_password(
            aw.alice.id, "another long password", current_password=None, reset=True
        )
        assert aw.accounts.check_device(grant.secret)[0].handle == "alice"


class TestNotABearerToken:
    def test_a_device_secret_is_refused_as_a_bearer_token(self, aw: AuthWorld) -> None:
        grant = paired(aw)
        with pytest.raises(Unauthenticated):
            aw.accounts.check_token(grant.secret)
        # Refused by the lookup itself, whatever the secret looks like.
        with aw.store.transaction(write=False) as conn:
            assert find_token(conn, grant.secret, aw.clock.now()) is None

    def test_a_program_token_is_no_device(self, aw: AuthWorld) -> None:
        _, secret = aw.accounts.create_token(aw.alice.id, "cli", expires_in=None)
        with pytest.raises(Unauthenticated):
            aw.accounts.check_device(secret)

    def test_a_session_secret_is_no_device(self, aw: AuthWorld) -> None:
        grant = aw.accounts.login("alice", ALICE_PASSWORD)
        with pytest.raises(Unauthenticated):
            aw.accounts.check_device(grant.secret)

    def test_tokens_and_devices_are_listed_and_revoked_apart(self, aw: AuthWorld) -> None:
        token, _ = aw.accounts.create_token(aw.alice.id, "cli", expires_in=None)
        device = paired(aw)
        alice = session_of(aw)
        assert [t.id for t in aw.accounts.tokens(aw.alice.id)] == [token.id]
        assert [d.id for d in aw.accounts.devices(aw.alice.id)] == [device.token_id]
        assert aw.accounts.devices(aw.alice.id)[0].to_json()["device"] is True
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.revoke_token(aw.alice.id, device.token_id)
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.revoke_device(alice, token.id)


class TestRevoke:
    def test_a_revoked_device_is_refused_and_revoking_again_changes_nothing(
        self, aw: AuthWorld
    ) -> None:
        grant = paired(aw)
        alice = session_of(aw)
        revoked = aw.accounts.revoke_device(alice, grant.token_id)
        assert (revoked.revoked_at, revoked.active, revoked.device) == (aw.clock.now(), False, True)
        with pytest.raises(Unauthenticated):
            aw.accounts.check_device(grant.secret)
        aw.clock.advance(timedelta(minutes=1))
        with nothing_written(aw.store):
            again = aw.accounts.revoke_device(alice, grant.token_id)
        assert again == revoked

    def test_a_device_may_unpair_itself(self, aw: AuthWorld) -> None:
        grant = paired(aw)
        aw.accounts.revoke_device(grant.principal, str(grant.token_id))
        with pytest.raises(Unauthenticated):
            aw.accounts.check_device(grant.secret)

    def test_a_device_may_not_unpair_another(self, aw: AuthWorld) -> None:
        first = paired(aw, "phone")
        second = paired(aw, "tablet")
        with nothing_written(aw.store), pytest.raises(Forbidden, match="only itself"):
            aw.accounts.revoke_device(first.principal, second.token_id)
        aw.accounts.check_device(second.secret)

    def test_an_api_token_may_revoke_any_of_its_actors_devices(self, aw: AuthWorld) -> None:
        grant = paired(aw)
        _, secret = aw.accounts.create_token(aw.alice.id, "cli", expires_in=None)
        aw.accounts.revoke_device(aw.accounts.authenticate_token(secret), grant.token_id)
        with pytest.raises(Unauthenticated):
            aw.accounts.check_device(grant.secret)

    def test_another_actors_device_is_not_found_and_stays_paired(self, aw: AuthWorld) -> None:
        grant = paired(aw)
        _, secret = aw.accounts.create_token(aw.bob.id, "cli", expires_in=None)
        bob = aw.accounts.authenticate_token(secret)
        with nothing_written(aw.store), pytest.raises(NotFound) as caught:
            aw.accounts.revoke_device(bob, grant.token_id)
        assert caught.value.details["field"] == "device"
        aw.accounts.check_device(grant.secret)

    def test_an_unknown_device_is_not_found(self, aw: AuthWorld) -> None:
        alice = session_of(aw)
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.revoke_device(alice, uuid.uuid4())


class TestLiveness:
    def test_a_session_is_live_until_revoked(self, aw: AuthWorld) -> None:
        grant = aw.accounts.login("alice", ALICE_PASSWORD)
        ident = grant.principal.credential_id
        with aw.store.transaction(write=False) as conn:
            assert principal_live(conn, "session", ident, aw.clock.now())
            assert principal_live(conn, "session", str(ident), aw.clock.now())
            # A session's ID never poses as a device's.
            assert not principal_live(conn, "device", ident, aw.clock.now())
        aw.accounts.logout(grant.secret)
        with aw.store.transaction(write=False) as conn:
            assert not principal_live(conn, "session", ident, aw.clock.now())

    def test_a_session_is_not_live_once_expired(self, aw: AuthWorld) -> None:
        grant = aw.accounts.login("alice", ALICE_PASSWORD)
        later = aw.clock.now() + SESSION_TTL
        with aw.store.transaction(write=False) as conn:
            assert principal_live(conn, "session", grant.principal.credential_id, aw.clock.now())
            assert not principal_live(conn, "session", grant.principal.credential_id, later)

    def test_a_device_is_live_until_revoked_or_expired(self, aw: AuthWorld) -> None:
        lasting = paired(aw, "phone")
        brief = paired(aw, "tablet", timedelta(hours=1))
        now = aw.clock.now()
        with aw.store.transaction(write=False) as conn:
            assert principal_live(conn, "device", lasting.token_id, now)
            assert principal_live(conn, "device", brief.token_id, now)
            assert not principal_live(conn, "device", brief.token_id, now + timedelta(hours=1))
            # A device's ID never poses as a cookie session's.
            assert not principal_live(conn, "session", lasting.token_id, now)
        aw.accounts.revoke_device(lasting.principal, lasting.token_id)
        with aw.store.transaction(write=False) as conn:
            assert not principal_live(conn, "device", lasting.token_id, now)

    def test_a_program_tokens_id_is_not_a_live_device(self, aw: AuthWorld) -> None:
        token, _ = aw.accounts.create_token(aw.alice.id, "cli", expires_in=None)
        with aw.store.transaction(write=False) as conn:
            assert not principal_live(conn, "device", token.id, aw.clock.now())
            assert not principal_live(conn, "token", token.id, aw.clock.now())

    @pytest.mark.parametrize(
        "credential_id",
        [
            "not-a-uuid",  # text that is no ID
            "",  # empty
            "0195a3c2-0000-7000-8000-000000000000",  # an ID nobody holds
        ],
    )
    def test_a_malformed_or_unknown_id_is_not_live(self, aw: AuthWorld, credential_id: str) -> None:
        with aw.store.transaction(write=False) as conn:
            for kind in ("session", "device"):
                assert not principal_live(conn, kind, credential_id, aw.clock.now())


class TestLimits:
    def test_devices_count_toward_the_active_tokens(self, aw: AuthWorld) -> None:
        alice = session_of(aw)
        for n in range(MAX_ACTIVE_TOKENS - 1):
            aw.accounts.create_token(aw.alice.id, f"t{n}", expires_in=None)
        link = aw.accounts.pair_device(alice, "last one")
        waiting = aw.accounts.pair_device(alice, "one too many")
        aw.accounts.redeem_pairing(link.secret)
        with nothing_written(aw.store), pytest.raises(LimitReached):
            aw.accounts.pair_device(alice, "refused")
        # A link made while there was room is refused when it is opened without room,
        # and stays unused.
        with nothing_written(aw.store), pytest.raises(LimitReached, match="devices"):
            aw.accounts.redeem_pairing(waiting.secret)
        with nothing_written(aw.store), pytest.raises(LimitReached):
            aw.accounts.create_token(aw.alice.id, "refused", expires_in=None)

    def test_the_pairing_links_waiting_are_bounded(self, aw: AuthWorld) -> None:
        alice = session_of(aw)
        for n in range(MAX_PENDING_PAIRINGS):
            aw.accounts.pair_device(alice, f"d{n}")
        with nothing_written(aw.store), pytest.raises(LimitReached, match="pairing links"):
            aw.accounts.pair_device(alice, "one more")
        aw.clock.advance(DEVICE_PAIRING_TTL)
        aw.accounts.pair_device(alice, "one more")
        assert pairing_count(aw) == 1


class TestBadInput:
    @pytest.mark.parametrize("name", BAD_NAMES)
    def test_a_bad_name_writes_nothing(self, aw: AuthWorld, name: Any) -> None:
        alice = session_of(aw)
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.pair_device(alice, name)
        assert caught.value.field == "name"

    @pytest.mark.parametrize(
        "expires_in",
        [
            *BAD_LIFETIMES,
            timedelta(seconds=1.5),  # not whole seconds, as stored
        ],
    )
    def test_a_bad_lifetime_writes_nothing(self, aw: AuthWorld, expires_in: Any) -> None:
        alice = session_of(aw)
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.pair_device(alice, "phone", expires_in)
        assert caught.value.field == "expires_in"

    def test_the_bounds_themselves_are_allowed(self, aw: AuthWorld) -> None:
        grant = paired(aw, "n" * 120, MAX_TOKEN_LIFETIME)
        assert grant.expires_at == aw.clock.now() + MAX_TOKEN_LIFETIME
        assert aw.accounts.devices(aw.alice.id)[0].name == "n" * 120

    @pytest.mark.parametrize(
        "device_id",
        [
            "not-a-uuid",  # text that is no ID
            "",  # empty
            "1234",  # too short
        ],
    )
    def test_a_device_id_that_is_not_a_uuid_writes_nothing(
        self, aw: AuthWorld, device_id: str
    ) -> None:
        grant = paired(aw)
        with nothing_written(aw.store), pytest.raises(InvalidInput) as caught:
            aw.accounts.revoke_device(grant.principal, device_id)
        assert caught.value.field == "device"

    def test_an_unknown_actor_writes_nothing(self, aw: AuthWorld) -> None:
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.pair_device_as("nobody", "phone")
        with pytest.raises(NotFound):
            aw.accounts.devices(uuid.uuid4())
        with nothing_written(aw.store), pytest.raises(NotFound):
            aw.accounts.revoke_device_as("nobody", uuid.uuid4())
