"""Paired devices over HTTP: a session or an API token makes a one-time pairing link under
the server's public URL, lists its actor's devices and unpairs them; bad input, strangers
and callers without credentials are refused and write nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from api.conftest import ApiWorld
from kalends.auth import DEVICE_PAIRING_TTL, MAX_TOKEN_LIFETIME, DeviceGrant
from kalends.errors import Unauthenticated
from kalends.storage.testing import nothing_written

DEVICES = "/api/auth/devices"
BASE_URL = "http://127.0.0.1:8000"  # ApiSettings' default public URL


def pair(api: ApiWorld, who: str, body: dict[str, Any]) -> DeviceGrant:
    """A device of ``who``'s paired through the API's link, as the device's browser would."""
    reply = api.client.post(DEVICES, json=body, headers=api.headers(who))
    assert reply.status_code == 201, reply.text
    secret = reply.json()["pairingUrl"].rsplit("/", 1)[1]
    return api.accounts.redeem_pairing(secret)


class TestPair:
    def test_a_token_makes_a_pairing_link_under_the_servers_address(self, api: ApiWorld) -> None:
        reply = api.client.post(
            DEVICES, json={"name": " phone ", "expiresIn": 86400}, headers=api.headers("bob")
        )
        assert reply.status_code == 201, reply.text
        body = reply.json()
        assert body["pairingUrl"].startswith(f"{BASE_URL}/pair/")
        expires = (api.clock.now() + DEVICE_PAIRING_TTL).isoformat().replace("+00:00", "Z")
        assert {k: body[k] for k in ("name", "expiresAt", "lifetimeSeconds")} == {
            "name": "phone",
            "expiresAt": expires,
            "lifetimeSeconds": 86400,
        }
        secret = body["pairingUrl"].removeprefix(f"{BASE_URL}/pair/")
        facts = api.accounts.pairing_facts(secret)
        assert (facts.name, facts.handle) == ("phone", "bob")
        grant = api.accounts.redeem_pairing(secret)
        assert grant.expires_at == api.clock.now() + timedelta(days=1)

    def test_a_session_with_its_csrf_header_makes_one_that_never_expires(
        self, api: ApiWorld
    ) -> None:
        csrf = api.login("carol")
        with nothing_written(api.store):
            refused = api.client.post(DEVICES, json={"name": "tablet"})
        assert refused.status_code == 403 and refused.json()["code"] == "csrf-failed"
        reply = api.client.post(DEVICES, json={"name": "tablet"}, headers=csrf)
        assert reply.status_code == 201, reply.text
        assert reply.json()["lifetimeSeconds"] is None
        secret = reply.json()["pairingUrl"].rsplit("/", 1)[1]
        assert api.accounts.redeem_pairing(secret).expires_at is None

    @pytest.mark.parametrize(
        "body",
        [
            {},  # no name
            {"name": ""},  # empty
            {"name": "   "},  # only spaces
            {"name": "n" * 121},  # too long
            {"name": 7},  # not text
            {"name": "phone", "expiresIn": 0},  # no time at all
            {"name": "phone", "expiresIn": -60},  # negative
            {"name": "phone", "expiresIn": 366 * 86400 + 1},  # longer than a token may live
            {"name": "phone", "expiresIn": "3600"},  # text, not a number
            {"name": "phone", "expiresIn": 1.5},  # not whole seconds
            {"name": "phone", "expiresIn": True},  # not a number
            {"name": "phone", "colour": "red"},  # an unknown field
        ],
    )
    def test_bad_input_is_422_and_writes_nothing(self, api: ApiWorld, body: Any) -> None:
        with nothing_written(api.store):
            reply = api.client.post(DEVICES, json=body, headers=api.headers("bob"))
        assert reply.status_code == 422, reply.text

    def test_malformed_json_is_422_and_writes_nothing(self, api: ApiWorld) -> None:
        with nothing_written(api.store):
            reply = api.client.post(
                DEVICES,
                content=b'{"name": "phone",',
                headers={**api.headers("bob"), "Content-Type": "application/json"},
            )
        assert reply.status_code == 422, reply.text

    def test_the_bounds_themselves_are_allowed(self, api: ApiWorld) -> None:
        longest = int(MAX_TOKEN_LIFETIME.total_seconds())
        grant = pair(api, "bob", {"name": "n" * 120, "expiresIn": longest})
        assert grant.name == "n" * 120
        assert grant.expires_at == api.clock.now() + MAX_TOKEN_LIFETIME


class TestListAndRevoke:
    def test_the_list_holds_the_callers_devices_only(self, api: ApiWorld) -> None:
        phone = pair(api, "bob", {"name": "phone"})
        api.clock.advance(timedelta(seconds=1))
        tablet = pair(api, "bob", {"name": "tablet", "expiresIn": 3600})
        pair(api, "carol", {"name": "carol's"})
        reply = api.client.get(DEVICES, headers=api.headers("bob"))
        assert reply.status_code == 200
        listed = reply.json()
        assert [d["id"] for d in listed] == [str(tablet.token_id), str(phone.token_id)]
        assert listed[0]["name"] == "tablet" and listed[0]["active"] is True
        assert "secret" not in listed[0]
        # A program token is no device, and a device is no program token.
        tokens = api.client.get("/api/tokens", headers=api.headers("bob")).json()
        assert str(phone.token_id) not in {t["id"] for t in tokens}

    def test_revoking_unpairs_the_device(self, api: ApiWorld) -> None:
        grant = pair(api, "bob", {"name": "phone"})
        reply = api.client.delete(f"{DEVICES}/{grant.token_id}", headers=api.headers("bob"))
        assert reply.status_code == 200, reply.text
        assert reply.json()["active"] is False and reply.json()["revokedAt"] is not None
        with pytest.raises(Unauthenticated):
            api.accounts.check_device(grant.secret)
        [listed] = api.client.get(DEVICES, headers=api.headers("bob")).json()
        assert listed["active"] is False

    def test_another_actors_device_is_404_and_stays_paired(self, api: ApiWorld) -> None:
        grant = pair(api, "carol", {"name": "phone"})
        with nothing_written(api.store):
            reply = api.client.delete(f"{DEVICES}/{grant.token_id}", headers=api.headers("bob"))
        assert reply.status_code == 404 and reply.json()["code"] == "not-found"
        api.accounts.check_device(grant.secret)

    def test_a_program_tokens_id_is_404_here(self, api: ApiWorld) -> None:
        [token] = api.accounts.tokens(api.actors["bob"].id)
        with nothing_written(api.store):
            reply = api.client.delete(f"{DEVICES}/{token.id}", headers=api.headers("bob"))
        assert reply.status_code == 404

    def test_an_unknown_id_is_404_and_a_malformed_one_422(self, api: ApiWorld) -> None:
        pair(api, "bob", {"name": "phone"})
        unknown = UUID("0195a3c2-0000-7000-8000-000000000000")
        with nothing_written(api.store):
            missing = api.client.delete(f"{DEVICES}/{unknown}", headers=api.headers("bob"))
            malformed = api.client.delete(f"{DEVICES}/not-an-id", headers=api.headers("bob"))
        assert missing.status_code == 404
        assert malformed.status_code == 422


class TestUnauthenticated:
    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("POST", DEVICES),  # pair
            ("GET", DEVICES),  # list
            ("DELETE", f"{DEVICES}/0195a3c2-0000-7000-8000-000000000000"),  # revoke
        ],
    )
    @pytest.mark.parametrize(
        "who",
        [
            None,  # no credentials at all
            "erin",  # an expired token
            "frank",  # a revoked token
        ],
    )
    def test_without_a_live_credential_it_is_401(
        self, api: ApiWorld, method: str, path: str, who: str | None
    ) -> None:
        headers = {} if who is None else api.headers(who)
        body = {"name": "phone"} if method == "POST" else None
        with nothing_written(api.store):
            reply = api.client.request(method, path, json=body, headers=headers)
        assert reply.status_code == 401, reply.text

    def test_a_device_secret_is_no_bearer_token(self, api: ApiWorld) -> None:
        grant = pair(api, "bob", {"name": "phone"})
        with nothing_written(api.store):
            reply = api.client.get(DEVICES, headers={"Authorization": f"Bearer {grant.secret}"})
            me = api.client.get("/api/auth/me", headers={"Authorization": f"Bearer {grant.secret}"})
        assert reply.status_code == me.status_code == 401

    def test_a_device_cookie_is_no_credential_of_the_api(self, api: ApiWorld) -> None:
        grant = pair(api, "bob", {"name": "phone"})
        api.client.cookies.set("kalends_device", grant.secret)
        with nothing_written(api.store):
            reply = api.client.get(DEVICES)
        assert reply.status_code == 401
