"""`kalends device pair|ls|revoke`: in-process (CliRunner) on SQLite and (when reachable)
PostgreSQL in local mode, and with ``--server`` against a real ``kalends serve``; the
links they print are redeemed and the devices checked against what the accounts then
accept."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select
from test_cli_remote_server import (
    BOB_PASSWORD,
    LOCAL_NOTE,
    OWNER,
    PASSWORD,
    error_of,
    refused_alike,
    set_password_by_link,
)
from test_cli_remote_server import World as ServerWorld
from test_cli_tokens import World, instant

from e2e.conftest import finish, start_server
from kalends.auth import DEVICE_PAIRING_TTL, MAX_ACTIVE_TOKENS, Accounts, DeviceGrant
from kalends.bootstrap import open_services
from kalends.cli.devices import DEFAULT_DEVICE_LIFETIME
from kalends.errors import Unauthenticated
from kalends.storage.auth_tables import device_pairings
from kalends.storage.meta import SERVER_BASE_URL, write_meta
from kalends.storage.testing import StorageTarget

# The base URL a `kalends serve` on a port of its own recorded in the database.
RECORDED = "http://127.0.0.1:8123"
# How far a real clock may move while a command runs.
SLACK = timedelta(minutes=1)


def secret_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def redeem(accounts: Accounts, made: dict[str, Any]) -> DeviceGrant:
    """Opens the printed link as the device's browser would."""
    return accounts.redeem_pairing(secret_of(made["pairingUrl"]))


def near(value: datetime, expected: datetime) -> bool:
    return abs(value - expected) <= SLACK


@pytest.fixture
def world(storage_target: StorageTarget) -> Iterator[World]:
    services = open_services(storage_target.url)
    for handle in ("alice", "bob"):
        services.directory.add_actor(handle, handle.title())
    write_meta(services.store, SERVER_BASE_URL, RECORDED)
    try:
        yield World(url=storage_target.url, services=services)
    finally:
        services.store.close()


class TestPair:
    def test_json_prints_a_link_under_the_recorded_address_that_pairs_once(
        self, world: World
    ) -> None:
        made = world.json("device", "pair", "  phone  ")

        assert set(made) == {"pairingUrl", "name", "expiresAt", "lifetimeSeconds"}
        assert made["pairingUrl"].startswith(f"{RECORDED}/pair/")
        now = datetime.now(UTC)
        assert near(instant(made["expiresAt"]), now + DEVICE_PAIRING_TTL)
        assert (made["name"], made["lifetimeSeconds"]) == (
            "phone",
            DEFAULT_DEVICE_LIFETIME.total_seconds(),
        )
        grant = redeem(world.accounts, made)
        assert (grant.principal.handle, grant.principal.kind, grant.name) == (
            "alice",
            "device",
            "phone",
        )
        assert grant.expires_at is not None
        assert near(grant.expires_at, now + DEFAULT_DEVICE_LIFETIME)
        assert world.accounts.tokens("alice") == []  # a device, not an API token

    # Minutes, hours, days (with spaces and capitals), and never.
    @pytest.mark.parametrize(
        ("given", "seconds"),
        [("45m", 2700), ("12h", 43200), (" 30D ", 2592000), ("366d", 31622400), ("never", None)],
    )
    def test_expires_in(self, world: World, given: str, seconds: int | None) -> None:
        made = world.json("device", "pair", "tablet", "--expires-in", given)
        assert made["lifetimeSeconds"] == seconds
        grant = redeem(world.accounts, made)
        if seconds is None:
            assert grant.expires_at is None
        else:
            assert grant.expires_at is not None
            assert near(grant.expires_at, datetime.now(UTC) + timedelta(seconds=seconds))

    def test_text_prints_the_link_alone_on_its_line_and_when_it_stops_working(
        self, world: World
    ) -> None:
        out = world.ok("device", "pair", "phone", "--expires-in", "30d").stdout

        lines = out.splitlines()
        assert lines[0] == "pairing link for device phone of alice, paired for 30 days once opened"
        assert lines[1].startswith(f"{RECORDED}/pair/")
        assert lines[2].startswith("open it once in the device's browser; it stops working at ")
        assert lines[2].endswith(" UTC")
        assert lines[3] == "local mode: acting as alice"
        assert world.accounts.pairing_facts(secret_of(lines[1])).handle == "alice"
        never = world.ok("device", "pair", "tablet", "--expires-in", "never").stdout
        assert never.splitlines()[0].endswith("paired until revoked once opened")

    def test_base_url_comes_before_the_recorded_address(self, world: World) -> None:
        made = world.json("device", "pair", "phone", "--base-url", "https://kal.example.org/")
        assert made["pairingUrl"].startswith("https://kal.example.org/pair/")
        assert redeem(world.accounts, made).principal.handle == "alice"

    def test_without_a_recorded_address_or_base_url_it_exits_2_and_writes_nothing(
        self, storage_target: StorageTarget
    ) -> None:
        services = open_services(storage_target.url)
        try:
            services.directory.add_actor("alice", "Alice")
            bare = World(url=storage_target.url, services=services)
            error = bare.refused(2, "device", "pair", "phone")
        finally:
            services.store.close()
        assert (error["code"], error["details"]["field"]) == ("invalid-input", "base_url")

    @pytest.mark.parametrize(
        ("args", "field"),
        [
            (("phone", "--expires-in", "0d"), "expires_in"),  # no time at all
            (("phone", "--expires-in", "367d"), "expires_in"),  # past the longest
            (("phone", "--expires-in", "-3d"), "expires_in"),  # negative
            (("phone", "--expires-in", "1.5d"), "expires_in"),  # not whole
            (("phone", "--expires-in", "30"), "expires_in"),  # no unit
            (("phone", "--expires-in", "10s"), "expires_in"),  # seconds are no unit of it
            (("phone", "--expires-in", "soon"), "expires_in"),  # not a duration
            (("phone", "--expires-in", ""), "expires_in"),  # empty
            (("   ",), "name"),  # blank
            (("x" * 121,), "name"),  # one past the longest name
        ],
    )
    def test_bad_input_exits_2_and_writes_nothing(
        self, world: World, args: tuple[str, ...], field: str
    ) -> None:
        error = world.refused(2, "device", "pair", *args)
        assert (error["code"], error["details"]["field"]) == ("invalid-input", field)

    def test_an_unknown_actor_exits_1_and_writes_nothing(self, world: World) -> None:
        error = world.refused(1, "device", "pair", "phone", actor="mallory")
        assert (error["code"], error["details"]["field"]) == ("not-found", "actor")

    def test_past_the_limit_of_active_tokens_and_devices_exits_1(self, world: World) -> None:
        for n in range(MAX_ACTIVE_TOKENS):
            world.accounts.create_token("alice", f"t{n}", expires_in=None)
        error = world.refused(1, "device", "pair", "one more")
        assert error["code"] == "limit-reached"


class TestListAndRevoke:
    def test_ls_lists_ones_own_devices_newest_first_revoked_included(self, world: World) -> None:
        first = redeem(world.accounts, world.json("device", "pair", "first"))
        second = redeem(world.accounts, world.json("device", "pair", "second"))
        redeem(world.accounts, world.json("device", "pair", "bobs", actor="bob"))
        world.json("token", "create", "a program's")
        world.json("device", "revoke", str(first.token_id))

        listed = world.json("device", "ls")

        assert [d["id"] for d in listed] == [str(second.token_id), str(first.token_id)]
        by_name = {d["name"]: d for d in listed}
        assert (by_name["first"]["active"], by_name["second"]["active"]) == (False, True)
        assert all(d["device"] is True for d in listed)
        assert [d["name"] for d in world.json("device", "ls", actor="bob")] == ["bobs"]
        # Tokens and devices are listed apart.
        assert [t["name"] for t in world.json("token", "ls")] == ["a program's"]

    def test_ls_as_text_shows_name_status_and_id(self, world: World) -> None:
        assert "alice has no paired device" in world.ok("device", "ls").stdout
        kept = redeem(world.accounts, world.json("device", "pair", "kept", "--expires-in", "never"))
        gone = redeem(world.accounts, world.json("device", "pair", "gone"))
        world.ok("device", "revoke", str(gone.token_id))

        out = world.ok("device", "ls").stdout

        rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
        assert "active" in rows["kept"] and str(kept.token_id) in rows["kept"]
        assert "never" in rows["kept"]
        assert "revoked" in rows["gone"] and str(gone.token_id) in rows["gone"]
        assert max(len(line) for line in out.splitlines()) <= 80

    def test_revoke_unpairs_the_device_and_is_idempotent(self, world: World) -> None:
        grant = redeem(world.accounts, world.json("device", "pair", "phone"))

        revoked = world.json("device", "revoke", str(grant.token_id))

        assert (revoked["id"], revoked["active"], revoked["device"]) == (
            str(grant.token_id),
            False,
            True,
        )
        with pytest.raises(Unauthenticated):
            world.accounts.check_device(grant.secret)
        assert world.json("device", "revoke", str(grant.token_id)) == revoked

    def test_revoke_as_text(self, world: World) -> None:
        grant = redeem(world.accounts, world.json("device", "pair", "phone"))
        out = world.ok("device", "revoke", str(grant.token_id)).stdout
        assert out.startswith("unpaired device phone (revoked ")
        assert f"id {grant.token_id}" in out

    def test_another_actors_device_is_not_found_and_stays_paired(self, world: World) -> None:
        grant = redeem(world.accounts, world.json("device", "pair", "alices"))

        error = world.refused(1, "device", "revoke", str(grant.token_id), actor="bob")

        assert (error["code"], error["details"]["field"]) == ("not-found", "device")
        assert world.accounts.check_device(grant.secret)[0].handle == "alice"

    def test_a_program_tokens_id_is_no_device(self, world: World) -> None:
        token = world.json("token", "create", "ci")["token"]
        error = world.refused(1, "device", "revoke", token["id"])
        assert error["code"] == "not-found"

    # A word, a number, a task reference, nothing: none of them is a device ID.
    @pytest.mark.parametrize("device_id", ["nope", "12345", "K7Q2XW", ""])
    def test_a_malformed_id_exits_2(self, world: World, device_id: str) -> None:
        error = world.refused(2, "device", "revoke", device_id)
        assert (error["code"], error["details"]["field"]) == ("invalid-input", "device")

    def test_an_unknown_id_exits_1(self, world: World) -> None:
        error = world.refused(1, "device", "revoke", "00000000-0000-4000-8000-000000000000")
        assert error["code"] == "not-found"

    def test_ls_for_an_unknown_actor_exits_1(self, world: World) -> None:
        error = world.refused(1, "device", "ls", actor="mallory")
        assert error["code"] == "not-found"


# --- server mode ---------------------------------------------------------------------------


def pairings(database: str) -> int:
    engine = create_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(device_pairings)).scalar_one())
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerWorld]:
    """A running server on a SQLite file; olivia (its owner) logged in; bob has an account
    and a password."""
    directory = tmp_path_factory.mktemp("devices")
    database = str(directory / "kalends.sqlite3")
    services = open_services(database)
    try:
        services.directory.add_actor("bob", "Bob")
        accounts = Accounts(services.store)
        accounts.ensure_account("bob")
        accounts.set_password("bob", BOB_PASSWORD, current_password=None)
    finally:
        services.store.close()
    server = start_server(database, directory)
    try:
        set_password_by_link(server, PASSWORD)
        (directory / "dirs").mkdir()
        found = ServerWorld(
            server=server,
            url=server.base,
            database=database,
            root=directory / "dirs",
            credentials=directory / "config" / "credentials.json",
        )
        login = ("login", "--server", found.url, "--handle", OWNER, "--password-stdin")
        found.ok(found.run(*login, input=PASSWORD + "\n"))
        # The token's first use is recorded here, not by a refusal that must write nothing.
        found.ok(found.remote("whoami"))
        yield found
    finally:
        finish(server)


@pytest.fixture
def on_file(served: ServerWorld) -> Iterator[Accounts]:
    """The accounts on the server's database, as the device's browser reaches them."""
    services = open_services(served.database)
    try:
        yield Accounts(services.store)
    finally:
        services.store.close()


class TestServerMode:
    def test_pair_ls_and_revoke_as_local_mode_does(
        self, served: ServerWorld, on_file: Accounts
    ) -> None:
        made = served.rjson("device", "pair", "phone", "--expires-in", "12h")
        assert made["pairingUrl"].startswith(f"{served.url}/pair/")
        assert (made["name"], made["lifetimeSeconds"]) == ("phone", 43200)
        grant = redeem(on_file, made)
        assert (grant.principal.handle, grant.name) == (OWNER, "phone")

        listed = served.same("device", "ls")
        assert str(grant.token_id) in [d["id"] for d in listed]
        assert all(d["device"] is True for d in listed)
        text = served.ok(served.remote("device", "ls")).stdout
        assert text == served.ok(served.local("device", "ls")).stdout

        revoked = served.rjson("device", "revoke", str(grant.token_id))
        assert (revoked["id"], revoked["active"]) == (str(grant.token_id), False)
        assert revoked in served.ljson("device", "ls")
        with pytest.raises(Unauthenticated):
            on_file.check_device(grant.secret)
        again = served.ok(served.remote("device", "revoke", str(grant.token_id))).stdout
        local = served.ok(served.local("device", "revoke", str(grant.token_id))).stdout
        assert again.startswith("unpaired device phone (revoked ")
        assert again + LOCAL_NOTE == local

    def test_text_of_pair_names_the_servers_link(self, served: ServerWorld) -> None:
        out = served.ok(served.remote("device", "pair", "tablet", "--expires-in", "never")).stdout
        lines = out.splitlines()
        assert (
            lines[0]
            == f"pairing link for device tablet of {OWNER}, paired until revoked once opened"
        )
        assert lines[1].startswith(f"{served.url}/pair/")
        assert lines[2].startswith("open it once in the device's browser; it stops working at ")

    def test_another_persons_device_is_not_found_alike(
        self, served: ServerWorld, on_file: Accounts
    ) -> None:
        bobs = redeem(on_file, served.ljson("device", "pair", "bobs", actor="bob"))
        refusal = refused_alike(served, 1, "device", "revoke", str(bobs.token_id))
        assert (refusal["code"], refusal["details"]["field"]) == ("not-found", "device")
        assert on_file.check_device(bobs.secret)[0].handle == "bob"

    @pytest.mark.parametrize(
        "args",
        [
            ("pair", ""),  # an empty name
            ("pair", "x" * 121),  # a name too long
            ("pair", "x", "--expires-in", "0d"),  # no lifetime
            ("pair", "x", "--expires-in", "367d"),  # past the longest
            ("revoke", "not-an-id"),  # a malformed ID
        ],
    )
    def test_bad_input_exits_2_as_local_mode(
        self, served: ServerWorld, args: tuple[str, ...]
    ) -> None:
        before = pairings(served.database)
        refusal = refused_alike(served, 2, "device", *args)
        assert refusal["code"] == "invalid-input"
        assert pairings(served.database) == before

    def test_without_a_live_token_it_exits_1(self, served: ServerWorld) -> None:
        before = pairings(served.database)
        result = served.remote("device", "pair", "phone", "--json", KALENDS_TOKEN="kal_not-a-token")
        assert error_of(result, 1)["code"] == "unauthenticated"
        assert pairings(served.database) == before
