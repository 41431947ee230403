"""What the CLI tests of conversations and questions share: a local-mode harness over a
home workspace (alice owns it, bob edits, carol views; dave is no member), and a real
``kalends serve`` whose owner and bob are logged in with credentials of their own, where
a read must print what local mode prints and a refusal must be refused alike. Either
harness checks that a refusal wrote nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import create_engine, select
from typer.testing import CliRunner, Result

from e2e.conftest import Server, finish, start_server
from kalends.auth import Accounts
from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.identity import Role
from kalends.storage.prepared import Prepared
from kalends.storage.schema import metadata
from kalends.storage.testing import StorageTarget

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_SERVER": None,
    "KALENDS_TOKEN": None,
    "KALENDS_RUNTIME_DIR": None,
    "COLUMNS": "80",
}
NIL = "00000000-0000-0000-0000-000000000000"
OWNER, PASSWORD = "olivia", "correct horse battery staple"
BOB_PASSWORD = "bob's own passphrase"


# What a running server writes whatever a request answers: when a credential was last
# used (on a token's first request), and its worker node's heartbeat (every NODE_BEAT; a
# beat landing between a refusal's two snapshots failed a loaded CI run).
LIVENESS = {"last_used_at", "beat_at"}


def snapshot_of(engine_url: str) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table, but the columns a running server keeps current on its
    own (:data:`LIVENESS`)."""
    engine = create_engine(engine_url)
    try:
        with engine.connect() as conn:
            return {
                name: sorted(tuple(str(v) for v in row) for row in read.rows(conn))
                for name, read in _READS
            }
    finally:
        engine.dispose()


# Each table's read, run on the driver (thousands of snapshots: see storage.testing).
_READS = tuple(
    (table.name, Prepared(select(*(c for c in table.columns if c.name not in LIVENESS))))
    for table in metadata.sorted_tables
    if table.name != "meta"
)


def changed_tables(
    before: dict[str, list[tuple[str, ...]]], after: dict[str, list[tuple[str, ...]]]
) -> dict[str, tuple[list[tuple[str, ...]], list[tuple[str, ...]]]]:
    """Each table whose rows differ: the rows only before, and the rows only after."""
    return {
        name: (
            [r for r in before.get(name, []) if r not in after.get(name, [])],
            [r for r in after.get(name, []) if r not in before.get(name, [])],
        )
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    }


def error_of(result: Result, code: int) -> dict[str, Any]:
    """The refusal's JSON error, after checking its exit code and its one stderr line."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    error: dict[str, Any] = json.loads(result.stdout)["error"]
    assert set(error) == {"code", "message", "details"}
    assert result.stderr.strip() == f"error: {error['message']}"
    return error


# --- local mode ----------------------------------------------------------------------------


@dataclass
class Local:
    """The CLI in local mode on ``url``, acting as the actor each call names."""

    url: str
    services: Services
    workspace: str

    def invoke(self, *args: str, actor: str = "alice", input: str | None = None) -> Result:
        full = [*args, "--as", actor, "--database", self.url]
        return runner.invoke(app, full, env=CLEAN_ENV, input=input)

    def ok(self, *args: str, actor: str = "alice", input: str | None = None) -> Result:
        result = self.invoke(*args, actor=actor, input=input)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result

    def json(self, *args: str, actor: str = "alice", input: str | None = None) -> Any:
        return json.loads(self.ok(*args, "--json", actor=actor, input=input).stdout)

    def refused(
        self, code: int, *args: str, actor: str = "alice", input: str | None = None
    ) -> dict[str, Any]:
        """The refusal's JSON error, after checking that the database did not change."""
        before = snapshot_of(self.url)
        error = error_of(self.invoke(*args, "--json", actor=actor, input=input), code)
        assert changed_tables(before, snapshot_of(self.url)) == {}
        return error

    def actor_id(self, handle: str) -> str:
        return str(self.services.directory.actor(handle).id)


def local_home(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Local]:
    """A ``local`` fixture's body: alice, bob, carol and dave, and alice's home workspace
    where bob edits and carol views; the services are closed afterwards."""
    services = open_services(storage_target.url)
    try:
        for handle in ("alice", "bob", "carol", "dave"):
            services.directory.add_actor(handle, handle.title())
        (tmp_path / "home").mkdir()
        home = services.workspaces.add("alice", tmp_path / "home", "home")
        services.workspaces.set_member("alice", home.id, "bob", Role.EDITOR)
        services.workspaces.set_member("alice", home.id, "carol", Role.VIEWER)
        yield Local(url=storage_target.url, services=services, workspace=str(home.id))
    finally:
        services.store.close()


# --- server mode ---------------------------------------------------------------------------


@dataclass
class Remote:
    """A running server on ``database``; olivia (its owner) logged in; bob, an editor of
    ``workspace``, logged in with credentials of his own."""

    server: Server
    database: str
    credentials: Path
    bob_credentials: Path
    workspace: str

    def run(self, *args: str, credentials: Path | None = None, input: str | None = None) -> Result:
        env = {**CLEAN_ENV, "KALENDS_CREDENTIALS": str(credentials or self.credentials)}
        return runner.invoke(app, list(args), env=env, input=input)

    def remote(self, *args: str, who: str = OWNER, input: str | None = None) -> Result:
        own = self.bob_credentials if who == "bob" else self.credentials
        return self.run(*args, "--server", self.server.base, credentials=own, input=input)

    def local(self, *args: str, who: str = OWNER) -> Result:
        return self.run(*args, "--database", self.database, "--as", who)

    def rjson(self, *args: str, who: str = OWNER, input: str | None = None) -> Any:
        result = self.remote(*args, "--json", who=who, input=input)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    def same(self, *args: str, who: str = OWNER) -> Any:
        """The read's JSON, which must be the same from the server and from the database."""
        remote = self.rjson(*args, who=who)
        local = self.local(*args, "--json", who=who)
        assert local.exit_code == 0, (local.stdout, local.stderr)
        assert remote == json.loads(local.stdout)
        return remote

    def alike(self, error: dict[str, Any]) -> tuple[object, ...]:
        """What of a refusal must be the same from the server and from the database."""
        return (error["code"], error["message"])

    def refused_alike(self, code: int, *args: str, who: str = OWNER) -> dict[str, Any]:
        """The server's refusal, refused alike from the database; neither wrote anything."""
        url = f"sqlite:///{self.database}"
        before = snapshot_of(url)
        remote = error_of(self.remote(*args, "--json", who=who), code)
        assert changed_tables(before, snapshot_of(url)) == {}
        local = error_of(self.local(*args, "--json", who=who), code)
        assert changed_tables(before, snapshot_of(url)) == {}
        assert self.alike(remote) == self.alike(local)
        return remote


RemoteT = TypeVar("RemoteT", bound=Remote)


def login(server: Server, handle: str, password: str, credentials: Path) -> None:
    env = {**CLEAN_ENV, "KALENDS_CREDENTIALS": str(credentials)}
    args = ["login", "--server", server.base, "--handle", handle, "--password-stdin"]
    result = runner.invoke(app, args, env=env, input=password + "\n")
    assert result.exit_code == 0, (result.stdout, result.stderr)


def serve_workspace(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    kind: type[RemoteT],
    *,
    actors: tuple[str, ...] = ("bob",),
) -> Iterator[RemoteT]:
    """A ``remote`` fixture's body: ``actors`` added, a server started whose owner sets
    their password, bob given an account and made an editor of the owner's workspace
    ``name``, both logged in; the server is stopped afterwards."""
    directory = tmp_path_factory.mktemp(name)
    database = str(directory / "kalends.sqlite3")
    services = open_services(database)
    try:
        for handle in actors:
            services.directory.add_actor(handle, handle.title())
    finally:
        services.store.close()
    server = start_server(database, directory)
    try:
        with server.client() as client:
            assert client.get(server.link, follow_redirects=False).status_code == 303
            reply = client.post(
                "/api/auth/password",
                json={"newPassword": PASSWORD},
                headers={"X-CSRF-Token": client.cookies["kalends_csrf"]},
            )
            assert reply.status_code == 204, reply.text
        services = open_services(database)
        try:
            accounts = Accounts(services.store)
            accounts.ensure_account("bob")
            accounts.set_password("bob", BOB_PASSWORD, current_password=None)
            (directory / name).mkdir()
            found = services.workspaces.add(OWNER, directory / name, name)
            services.workspaces.set_member(OWNER, found.id, "bob", Role.EDITOR)
        finally:
            services.store.close()
        credentials = directory / "config" / "credentials.json"
        bob_credentials = directory / "config" / "bob.json"
        login(server, OWNER, PASSWORD, credentials)
        login(server, "bob", BOB_PASSWORD, bob_credentials)
        yield kind(
            server=server,
            database=database,
            credentials=credentials,
            bob_credentials=bob_credentials,
            workspace=str(found.id),
        )
    finally:
        finish(server)
