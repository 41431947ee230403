"""The command line against a real ``kalends serve``: ``kalends login|logout|whoami`` and
``--server URL`` on the workspace, schedule, passage, list, task, reminder, actor (and
actor notify) and token commands.

One server runs for the module on a SQLite file; the CLI runs in-process (CliRunner)
with ``--server``, and the same reads run in local mode (``--database``) on the same
file, so each remote answer is compared with what local mode prints.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_support import LIVENESS
from sqlalchemy import create_engine, select
from typer.testing import CliRunner, Result

from e2e.conftest import Server, finish, start_server
from kalends.auth import Accounts
from kalends.bootstrap import open_services
from kalends.storage.schema import metadata

runner = CliRunner()
OWNER, PASSWORD = "olivia", "correct horse battery staple"
BOB_PASSWORD = "bob's own passphrase"
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_SERVER": None,
    "KALENDS_TOKEN": None,
    "KALENDS_RUNTIME_DIR": None,
    "COLUMNS": "200",
}
# Tables that only user operations write (never the server's scheduler or reminder loops).
USER_TABLES = (
    "lists",
    "list_members",
    "sections",
    "tasks",
    "task_tags",
    "task_reminders",
    "comments",
    "attachments",
    "task_series",
    "workspaces",
    "workspace_members",
    "api_tokens",
    "actors",
    "actor_destinations",
    "calendar_feeds",
)


@dataclass
class World:
    """A running server on ``database``; olivia (the owner) logged in with
    ``credentials``; bob has an account and a password but is not logged in."""

    server: Server
    url: str
    database: str
    root: Path
    credentials: Path

    def run(self, *args: str, input: str | None = None, **env: str | None) -> Result:
        full = {**CLEAN_ENV, "KALENDS_CREDENTIALS": str(self.credentials), **env}
        from kalends.cli.main import app  # noqa: PLC0415 (the app, once the env is set)

        return runner.invoke(app, list(args), input=input, env=full)

    def remote(self, *args: str, input: str | None = None, **env: str | None) -> Result:
        return self.run(*args, "--server", self.url, input=input, **env)

    def local(self, *args: str, actor: str = OWNER) -> Result:
        return self.run(*args, "--database", self.database, "--as", actor)

    def anonymous(self, *args: str) -> Result:
        """Local mode without an acting actor (``actor add|ls`` take no --as)."""
        return self.run(*args, "--database", self.database)

    def ok(self, result: Result) -> Result:
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result

    def rjson(self, *args: str, input: str | None = None, **env: str | None) -> Any:
        return json.loads(self.ok(self.remote(*args, "--json", input=input, **env)).stdout)

    def ljson(self, *args: str, actor: str = OWNER) -> Any:
        return json.loads(self.ok(self.local(*args, "--json", actor=actor)).stdout)

    def same(self, *args: str) -> Any:
        """The read's JSON, which must be the same from the server and from the database."""
        remote = self.rjson(*args)
        assert remote == self.ljson(*args)
        return remote

    def directory(self, name: str) -> str:
        path = self.root / name
        path.mkdir(exist_ok=True)
        return str(path)

    def snapshot(self) -> dict[str, list[tuple[str, ...]]]:
        """Every row of the user tables, but the columns a running server keeps current
        on its own (:data:`cli_support.LIVENESS`: a request records a credential's use
        once per touch interval, whatever it then answers, and a slow machine's test
        outlasts the interval)."""
        engine = create_engine(f"sqlite:///{self.database}")
        try:
            with engine.connect() as conn:
                return {
                    name: sorted(
                        tuple(str(v) for v in row)
                        for row in conn.execute(
                            select(
                                *(
                                    c
                                    for c in metadata.tables[name].columns
                                    if c.name not in LIVENESS
                                )
                            )
                        )
                    )
                    for name in USER_TABLES
                }
        finally:
            engine.dispose()


def error_of(result: Result, code: int) -> dict[str, Any]:
    """The refusal's JSON error, after checking its exit code and its one stderr line."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    error: dict[str, Any] = json.loads(result.stdout)["error"]
    assert set(error) == {"code", "message", "details"}
    assert lines[0] == f"error: {error['message']}"
    return error


def refused_alike(world: World, code: int, *args: str, actor: str = OWNER) -> dict[str, Any]:
    """The command is refused the same way from the server and from the database, and
    writes nothing either way."""
    before = world.snapshot()
    remote = error_of(world.remote(*args, "--json"), code)
    assert world.snapshot() == before
    local = error_of(world.local(*args, "--json", actor=actor), code)
    assert world.snapshot() == before
    assert (remote["code"], remote["message"]) == (local["code"], local["message"])
    return remote


def bob_logged_in(world: World, tmp_path: Path) -> dict[str, str]:
    """The environment of commands run as bob, whose token `kalends login` stores apart."""
    own = {"KALENDS_CREDENTIALS": str(tmp_path / "bob.json")}
    world.ok(
        world.remote("login", "--handle", "bob", "--password-stdin", input=BOB_PASSWORD, **own)
    )
    return own


def set_password_by_link(server: Server, password: str) -> None:
    """What the owner does first: redeem the printed login link and choose a password."""
    with server.client() as client:
        assert client.get(server.link, follow_redirects=False).status_code == 303
        csrf = client.cookies["kalends_csrf"]
        answer = client.post(
            "/api/auth/password",
            json={"newPassword": password},
            headers={"X-CSRF-Token": csrf},
        )
        assert answer.status_code == 204, answer.text


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("remote")
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
        found = World(
            server=server,
            url=server.base,
            database=database,
            root=directory / "dirs",
            credentials=directory / "config" / "credentials.json",
        )
        found.ok(
            found.run(
                "login",
                "--server",
                found.url,
                "--handle",
                OWNER,
                "--password-stdin",
                input=PASSWORD + "\n",
            )
        )
        yield found
    finally:
        finish(server)


@pytest.fixture(scope="module")
def scratch(world: World) -> str:
    """The ID of a list to try bad input on."""
    made: dict[str, Any] = world.rjson("list", "add", "Scratch")
    return str(made["id"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --- login, logout, whoami ---------------------------------------------------------------


class TestLogin:
    def test_login_stores_the_token_readable_by_its_owner_only(self, world: World) -> None:
        mode = stat.S_IMODE(os.stat(world.credentials).st_mode)
        assert mode == 0o600
        stored = json.loads(world.credentials.read_text())
        entry = stored["servers"][world.url]
        assert set(entry) == {"token", "tokenId", "handle"}
        assert entry["handle"] == OWNER and entry["token"].startswith("kal_")
        with httpx.Client(base_url=world.url) as client:
            headers = {"Authorization": f"Bearer {entry['token']}"}
            [token] = [t for t in client.get("/api/tokens", headers=headers).json() if t["active"]]
        assert token["id"] == entry["tokenId"]
        assert token["name"] == f"cli@{socket.gethostname()}"

    def test_whoami_names_the_tokens_owner(self, world: World) -> None:
        me = world.rjson("whoami")
        assert me["server"] == world.url
        assert (me["actor"]["handle"], me["kind"]) == (OWNER, "token")
        assert me["account"]["isOwner"] is True
        text = world.ok(world.remote("whoami")).stdout
        assert OWNER in text and "API token" in text

    def test_login_logout_and_relogin_of_another_actor(self, world: World, tmp_path: Path) -> None:
        own = {"KALENDS_CREDENTIALS": str(tmp_path / "bob.json")}
        made = world.rjson(
            "login",
            "--handle",
            "bob",
            "--password-stdin",
            "--name",
            "laptop",
            input=BOB_PASSWORD + "\n",
            **own,
        )
        assert (made["handle"], made["token"]["name"], made["server"]) == (
            "bob",
            "laptop",
            world.url,
        )
        assert "secret" not in made and "kal_" not in json.dumps(made)
        first = json.loads((tmp_path / "bob.json").read_text())["servers"][world.url]
        # A second login replaces the stored token and revokes the one it replaces.
        world.ok(
            world.remote("login", "--handle", "bob", "--password-stdin", input=BOB_PASSWORD, **own)
        )
        second = json.loads((tmp_path / "bob.json").read_text())["servers"][world.url]
        assert second["tokenId"] != first["tokenId"]
        assert world.rjson("whoami", **own)["actor"]["handle"] == "bob"
        revoked = error_of(world.remote("whoami", "--json", KALENDS_TOKEN=first["token"]), 1)
        assert revoked["code"] == "unauthenticated"

        out = world.rjson("logout", **own)
        assert out["handle"] == "bob" and out["revoked"]["active"] is False
        assert json.loads((tmp_path / "bob.json").read_text())["servers"] == {}
        gone = error_of(world.remote("whoami", "--json", KALENDS_TOKEN=second["token"]), 1)
        assert gone["code"] == "unauthenticated"
        again = error_of(world.remote("logout", "--json", **own), 1)
        assert again["code"] == "not-found"

    def test_a_wrong_password_exits_1_and_stores_nothing(
        self, world: World, tmp_path: Path
    ) -> None:
        own = {"KALENDS_CREDENTIALS": str(tmp_path / "c.json")}
        result = world.remote(
            "login", "--handle", "bob", "--password-stdin", "--json", input="nope\n", **own
        )
        assert error_of(result, 1)["code"] == "unauthenticated"
        assert not (tmp_path / "c.json").exists()

    @pytest.mark.parametrize(
        "args",
        [
            ("--password-stdin",),  # no --handle to go with it
            ("--handle", "bob", "--password-stdin", "--name", ""),  # the server refuses
        ],
    )
    def test_bad_login_input_exits_2(
        self, world: World, tmp_path: Path, args: tuple[str, ...]
    ) -> None:
        own = {"KALENDS_CREDENTIALS": str(tmp_path / "c.json")}
        result = world.remote("login", *args, "--json", input=BOB_PASSWORD + "\n", **own)
        assert error_of(result, 2)["code"] == "invalid-input"
        assert not (tmp_path / "c.json").exists()


class TestServerMode:
    def test_without_a_stored_token_a_command_exits_1_naming_kalends_login(
        self, world: World, tmp_path: Path
    ) -> None:
        result = world.remote(
            "list", "ls", "--json", KALENDS_CREDENTIALS=str(tmp_path / "none.json")
        )
        error = error_of(result, 1)
        assert error["code"] == "unauthenticated"
        assert f"kalends login --server {world.url}" in error["message"]

    def test_a_corrupt_credentials_file_exits_1_and_is_left_alone(
        self, world: World, tmp_path: Path
    ) -> None:
        broken = tmp_path / "credentials.json"
        broken.write_text("{not json")
        result = world.remote("task", "ls", "Chores", "--json", KALENDS_CREDENTIALS=str(broken))
        assert "is not JSON" in error_of(result, 1)["message"]
        assert broken.read_text() == "{not json"

    def test_a_server_that_is_down_exits_1_saying_it_cannot_be_reached(self, world: World) -> None:
        down = f"http://127.0.0.1:{free_port()}"
        result = world.run("workspace", "ls", "--server", down, "--json", KALENDS_TOKEN="kal_x")
        error = error_of(result, 1)
        assert error["code"] == "server-unreachable"
        assert error["message"].startswith(f"cannot reach the server at {down}: ")

    def test_server_and_database_together_exit_2(self, world: World) -> None:
        result = world.remote("list", "ls", "--database", world.database, "--json")
        assert error_of(result, 2)["details"] == {"field": "server"}

    @pytest.mark.parametrize("url", ["localhost:8000", "ftp://example.org", "http://"])
    def test_a_malformed_server_url_exits_2(self, world: World, url: str) -> None:
        assert error_of(world.run("list", "ls", "--server", url, "--json"), 2)["code"] == (
            "invalid-input"
        )

    def test_the_environment_names_the_server_unless_database_is_given(self, world: World) -> None:
        world.ok(world.run("list", "ls", "--json", KALENDS_SERVER=world.url))
        # --database wins over KALENDS_SERVER: local mode, which needs --as.
        local = world.run(
            "list", "ls", "--database", world.database, "--json", KALENDS_SERVER=world.url
        )
        assert error_of(local, 2)["details"] == {"field": "actor"}

    def test_as_naming_someone_else_is_ignored_with_a_note(self, world: World) -> None:
        result = world.ok(world.remote("workspace", "ls", "--as", "bob", "--json"))
        assert "server mode: acting as olivia; --as bob is ignored" in result.stderr
        assert json.loads(result.stdout) == world.ljson("workspace", "ls")
        quiet = world.ok(world.remote("workspace", "ls", "--as", OWNER, "--json"))
        assert quiet.stderr == ""

    def test_a_token_from_the_environment_acts_as_its_owner(
        self, world: World, tmp_path: Path
    ) -> None:
        made = world.ljson("token", "create", "ci", actor="bob")
        env = {"KALENDS_TOKEN": made["secret"], "KALENDS_CREDENTIALS": str(tmp_path / "x.json")}
        result = world.ok(world.remote("list", "ls", "--as", OWNER, "--json", **env))
        assert json.loads(result.stdout) == world.ljson("list", "ls", actor="bob")
        assert "server mode: acting as bob; --as olivia is ignored" in result.stderr
        assert not (tmp_path / "x.json").exists()

    def test_local_only_commands_take_no_server(self, world: World) -> None:
        for args in (("db", "upgrade"), ("login-link",), ("password", "--password-stdin")):
            result = world.remote(*args)
            assert result.exit_code == 2
            assert "--server" in result.stderr


# --- the mission side --------------------------------------------------------------------


def _wait_for_result(world: World, schedule: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        doc: dict[str, Any] = world.rjson("schedule", "show", schedule)
        if doc.get("results"):
            return doc
        time.sleep(0.2)
    pytest.fail("the passage did not settle within 20 s")


class TestMissions:
    def test_workspaces_and_their_members(self, world: World) -> None:
        path = world.directory("site")
        added = world.rjson("workspace", "add", path, "--name", "Site")
        assert (added["name"], added["path"], added["role"]) == ("Site", path, "owner")
        assert world.same("workspace", "ls") == [added]
        # A new member by handle, found in the server's directory of actors, though bob
        # shares no workspace or list with olivia; an unknown handle as local mode says.
        unknown = refused_alike(
            world, 1, "workspace", "member", "set", "Site", "nobody", "--role", "viewer"
        )
        assert unknown["code"] == "not-found"
        bob = world.rjson("workspace", "member", "set", "Site", "bob", "--role", "viewer")
        assert (bob["handle"], bob["role"]) == ("bob", "viewer")
        shown = world.same("workspace", "show", "Site")
        assert sorted((m["handle"], m["role"]) for m in shown["members"]) == [
            ("bob", "viewer"),
            (OWNER, "owner"),
        ]
        assert world.same("workspace", "member", "ls", added["id"]) == shown["members"]
        text = world.ok(world.remote("workspace", "show", "Site")).stdout
        assert text == world.ok(world.local("workspace", "show", "Site")).stdout

        # Refusals: the last owner stays (409), an unknown workspace (404).
        refused_alike(world, 1, "workspace", "member", "rm", "Site", OWNER)
        refused_alike(world, 1, "workspace", "show", "Nowhere")

        assert world.rjson("workspace", "member", "rm", "Site", "bob") == {
            "removed": {"workspace": "Site", "member": "bob"}
        }
        other = world.rjson("workspace", "add", world.directory("other"))
        assert world.rjson("workspace", "rm", other["name"]) == {"removed": other}
        assert [w["name"] for w in world.same("workspace", "ls")] == ["Site"]

    def test_schedules_create_control_edit_and_read_back(self, world: World) -> None:
        ws = world.rjson("workspace", "add", world.directory("jobs"), "--name", "Jobs")
        made = world.rjson(
            "schedule",
            "create",
            "Jobs",
            "--title",
            "Nightly",
            "--command",
            "echo hello",
            "--at",
            "2099-01-01T09:00:00",
            "--zone",
            "Europe/Berlin",
            "--request-id",
            "create-0001",
        )
        mission = made["missionId"]
        assert (made["status"], made["repeated"], made["workspaceId"]) == (
            "created",
            False,
            ws["id"],
        )
        assert world.same("schedule", "receipt", "Jobs", "create-0001") == {
            **made,
            "repeated": False,
        }
        listed = world.same("schedule", "ls", "Jobs")
        assert [d["id"] for d in listed["items"]] == [mission]
        [slot] = world.same("schedule", "preview", mission, "-n", "1")
        assert slot["at"] == "2099-01-01T08:00:00Z"  # 09:00 in Berlin, in winter

        played = world.rjson("schedule", "play", mission, "--request-id", "play-0001")
        assert (played["action"], played["expectedRevision"], played["revision"]) == ("play", 1, 2)
        # A repeat of the same request acts once and answers the same.
        again = world.rjson("schedule", "play", mission, "--request-id", "play-0001")
        assert again["repeated"] is True and again["revision"] == 2
        status = world.same("schedule", "control-status", mission, "play-0001")
        assert (status["status"], status["action"], status["revision"]) == ("applied", "play", 2)

        edited = world.rjson("schedule", "edit", mission, "--notes", "be quick")
        assert edited["action"] == "configure" and edited["schedule"]["notes"] == "be quick"
        detail = world.same("schedule", "show", mission)
        assert (detail["revision"], detail["notes"]) == (edited["revision"], "be quick")
        human = world.ok(world.remote("schedule", "show", mission)).stdout
        assert "Nightly" in human and "be quick" in human

        # A stale revision: the same code and message as local mode, nothing changes.
        stale = refused_alike(world, 1, "schedule", "pause", mission, "--expected-revision", "1")
        assert stale["code"] == "revision-conflict"
        assert world.rjson("schedule", "show", mission)["revision"] == detail["revision"]
        # A control the state refuses.
        conflict = refused_alike(
            world, 1, "schedule", "resume", mission, "--expected-revision", str(detail["revision"])
        )
        assert conflict["code"] == "control-conflict"

    def test_run_now_then_the_passage_log(self, world: World) -> None:
        world.rjson("workspace", "add", world.directory("runs"), "--name", "Runs")
        made = world.rjson(
            "schedule",
            "create",
            "Runs",
            "--title",
            "Once",
            "--arg",
            "echo",
            "--arg",
            "ran here",
            "--at",
            "2099-01-01T09:00:00",
            "--zone",
            "UTC",
        )
        mission = made["missionId"]
        ran = world.rjson("schedule", "run-now", mission)
        assert ran["action"] == "run-now"
        doc = _wait_for_result(world, mission)
        passage = doc["results"][0]["passageId"]
        log = world.rjson("passage", "log", passage, "--schedule", mission)
        runtime = str(world.server.directory / "runtime")
        here = json.loads(
            world.ok(
                world.run("passage", "log", passage, "--runtime-dir", runtime, "--json")
            ).stdout
        )
        # The server answers the records it keeps: each as the runtime directory holds it.
        assert {k: here[k] for k in log} == log
        assert log["log"] == "ran here\n" and log["exitStatus"] == 0
        # --follow waits for the end, which came already.
        assert world.rjson("passage", "log", passage, "--schedule", mission, "--follow") == log
        text = world.ok(world.remote("passage", "log", passage, "--schedule", mission)).stdout
        assert "exited 0" in text and "ran here" in text
        # In server mode the schedule is needed to find the passage.
        assert error_of(world.remote("passage", "log", passage, "--json"), 2)["details"] == {
            "field": "schedule"
        }
        removed = world.rjson("schedule", "rm", mission)
        assert removed["action"] == "delete"
        assert world.same("schedule", "ls", "Runs")["items"][0]["id"] == mission

    def test_a_viewer_is_refused_a_control(self, world: World, tmp_path: Path) -> None:
        world.rjson("workspace", "add", world.directory("shared"), "--name", "Shared")
        world.rjson("workspace", "member", "set", "Shared", "bob", "--role", "viewer")
        made = world.rjson(
            "schedule", "create", "Shared", "--title", "T", "--command", "true", "--immediate"
        )
        own = {"KALENDS_CREDENTIALS": str(tmp_path / "bob.json")}
        world.ok(
            world.remote("login", "--handle", "bob", "--password-stdin", input=BOB_PASSWORD, **own)
        )
        result = world.remote("schedule", "play", made["missionId"], "--json", **own)
        remote = error_of(result, 1)
        local = error_of(
            world.local("schedule", "play", made["missionId"], "--json", actor="bob"), 1
        )
        assert (remote["code"], remote["message"]) == (local["code"], local["message"])
        assert remote["code"] == "forbidden"
        assert world.rjson("schedule", "show", made["missionId"])["revision"] == 1


# --- the task side -----------------------------------------------------------------------


class TestTasks:
    def test_lists_sections_and_members(self, world: World) -> None:
        made = world.rjson("list", "add", "Groceries")
        assert (made["name"], made["role"], made["revision"]) == ("Groceries", "owner", 1)
        assert made in world.same("list", "ls")
        shared = world.rjson(
            "list", "share", "Groceries", "bob", "--role", "editor", "--expect", "1"
        )
        assert shared["revision"] == 2
        assert sorted(m["handle"] for m in world.same("list", "members", "Groceries")) == [
            "bob",
            OWNER,
        ]
        section = world.rjson("list", "section", "add", "Groceries", "Dairy")
        assert world.same("list", "section", "ls", "Groceries") == [section]
        refused_alike(
            world, 1, "list", "share", "Groceries", "bob", "--role", "viewer", "--expect", "1"
        )
        refused_alike(world, 1, "list", "members", "Nothing")
        archived = world.rjson("list", "archive", "Groceries", "--expect", "2")
        assert archived["status"] == "archived"
        refused_alike(world, 1, "list", "section", "add", "Groceries", "Bakery")
        assert world.rjson("list", "archive", "Groceries", "--undo")["status"] == "active"
        text = world.ok(world.remote("list", "ls")).stdout
        assert text == world.ok(world.local("list", "ls")).stdout

    def test_a_task_from_creation_to_completion(self, world: World, tmp_path: Path) -> None:
        world.rjson("list", "add", "Chores")
        world.rjson("list", "section", "add", "Chores", "Home")
        task = world.rjson("task", "add", "Chores", "Water the plants", "--tag", "green")
        ref = task["ref"]
        item = world.rjson("task", "add", "Chores", "Fern", "--parent", ref)
        assert item["parent_id"] == task["id"]
        assert world.same("task", "ls", "Chores")[0]["children"][0]["ref"] == item["ref"]
        assert (
            world.ok(world.remote("task", "ls", "Chores")).stdout
            == world.ok(world.local("task", "ls", "Chores")).stdout
        )

        edited = world.rjson(
            "task",
            "edit",
            ref,
            "--expect",
            "1",
            "--title",
            "Water plants",
            "--tag",
            "weekly",
            "--description",
            "all of them",
        )
        assert (edited["title"], edited["tags"]) == ("Water plants", ["green", "weekly"])
        moved = world.rjson(
            "task", "move", ref, "--expect", str(edited["revision"]), "--section", "Home"
        )
        assert moved["section_id"] is not None
        scheduled = world.rjson(
            "task",
            "schedule",
            ref,
            "--expect",
            str(moved["revision"]),
            "--due-local",
            "2030-03-30T09:00:00",
            "--zone",
            "Europe/Paris",
            "--priority",
            "2",
            "--remind",
            "email@2030-03-30T08:00:00",
        )
        assert scheduled["due"] == {"local": "2030-03-30T09:00:00", "zone": "Europe/Paris"}
        assert len(scheduled["reminders"]) == 1 and scheduled["priority"] == 2
        # The options change the current schedule: the reminders stay.
        again = world.rjson(
            "task",
            "schedule",
            ref,
            "--expect",
            str(scheduled["revision"]),
            "--planned",
            "2030-03-29",
        )
        assert again["reminders"] == scheduled["reminders"] and again["planned"] == "2030-03-29"

        comment = world.rjson("task", "comment", ref, "Done by Friday?")
        assert comment["body"] == "Done by Friday?"
        file = tmp_path / "notes.txt"
        file.write_text("water: 1 l\n")
        attached = world.rjson("task", "attach", ref, str(file))
        assert (attached["name"], attached["media_type"], attached["size"]) == (
            "notes.txt",
            "text/plain",
            11,
        )
        shown = world.same("task", "show", ref)
        assert [c["body"] for c in shown["comments"]] == ["Done by Friday?"]
        assert (
            world.ok(world.remote("task", "show", ref)).stdout
            == world.ok(world.local("task", "show", ref)).stdout
        )

        [reminder] = world.same("reminders", "ls", "--task", ref, "--status", "pending")
        assert world.same("reminders", "show", reminder["id"]) == reminder

        # An open checklist item: refused with the option's name, as local mode words it.
        refusal = refused_alike(world, 1, "task", "done", ref, "--expect", str(again["revision"]))
        assert refusal["code"] == "open-descendants" and "--subtree" in refusal["message"]
        done = world.rjson("task", "done", ref, "--expect", str(again["revision"]), "--subtree")
        assert done["status"] == "completed"
        reopened = world.rjson("task", "reopen", ref, "--expect", str(done["revision"]))
        trashed = world.rjson("task", "trash", ref, "--expect", str(reopened["revision"]))
        assert trashed["trashed"] is True
        restored = world.rjson("task", "restore", ref, "--expect", str(trashed["revision"]))
        assert restored["trashed"] is False
        history = world.same("task", "history", ref)
        kinds = [e["kind"] for e in history]
        assert kinds[0] == "created" and len(kinds) >= 8
        assert (
            world.ok(world.remote("task", "history", ref)).stdout
            == world.ok(world.local("task", "history", ref)).stdout
        )

        stale = refused_alike(world, 1, "task", "edit", ref, "--expect", "1", "--title", "x")
        assert stale["code"] == "revision-conflict"

    def test_a_recurring_series(self, world: World) -> None:
        world.rjson("list", "add", "Routine")
        task = world.rjson("task", "add", "Routine", "Stretch")
        ref = task["ref"]
        series = world.rjson(
            "task",
            "repeat",
            ref,
            "--expect",
            "1",
            "--daily",
            "--time",
            "07:30",
            "--zone",
            "Europe/Paris",
            "--count",
            "3",
        )
        assert series["rule"] == {"kind": "daily", "interval_days": 1}
        assert world.same("task", "series", "show", ref) == series
        shown = world.same("task", "show", ref)
        skipped = world.rjson("task", "skip", ref, "--expect", str(shown["revision"]))
        assert skipped["skipped"]["ref"] == ref and skipped["successor"] is not None
        view = skipped["series"]
        paused = world.rjson(
            "task", "series", "pause", view["id"], "--expect", str(view["revision"])
        )
        assert paused["status"] == "paused"
        refused_alike(
            world, 1, "task", "series", "resume", view["id"], "--expect", str(view["revision"])
        )
        resumed = world.rjson(
            "task", "series", "resume", view["id"], "--expect", str(paused["revision"])
        )
        assert resumed["status"] == "active"
        text = world.ok(world.remote("task", "series", "show", view["id"])).stdout
        assert text == world.ok(world.local("task", "series", "show", view["id"])).stdout
        stopped = world.rjson(
            "task", "series", "stop", view["id"], "--expect", str(resumed["revision"])
        )
        assert stopped["status"] == "stopped"

    @pytest.mark.parametrize(
        "args",
        [
            ("task", "show", "bad.ref"),  # a malformed reference
            ("reminders", "show", "not-an-id"),  # a malformed reminder ID
            ("task", "add", "{list}", ""),  # an empty title
            ("task", "add", "{list}", "x", "--tag", ""),  # an empty tag
            ("task", "schedule", "AAAAAA", "--expect", "1", "--clear", "--priority", "9"),
            ("list", "share", "{list}", "bob", "--role", "boss"),  # no such role
        ],
    )
    def test_malformed_input_exits_2_and_writes_nothing(
        self, world: World, scratch: str, args: tuple[str, ...]
    ) -> None:
        before = world.snapshot()
        given = [a.replace("{list}", scratch) for a in args]
        assert error_of(world.remote(*given, "--json"), 2)["code"] == "invalid-input"
        assert world.snapshot() == before

    def test_a_media_type_with_a_line_break_exits_2_in_both_modes_and_sends_nothing(
        self, world: World, scratch: str, tmp_path: Path
    ) -> None:
        task = world.rjson("task", "add", scratch, "with a file")
        file = tmp_path / "notes.txt"
        file.write_text("water: 1 l\n")
        args = ("task", "attach", task["ref"], str(file), "--type", "text/plain\r\n")
        refusal = refused_alike(world, 2, *args)
        assert refusal["code"] == "invalid-input"
        assert refusal["details"]["field"] == "media_type"

    def test_an_unknown_task_is_not_found_as_in_local_mode(self, world: World) -> None:
        assert refused_alike(world, 1, "task", "show", "ZZZZZZ")["code"] == "not-found"

    def test_an_unknown_recipient_is_invalid_input_in_both_modes(
        self, world: World, scratch: str
    ) -> None:
        task = world.rjson("task", "add", scratch, "remind a stranger")
        remind = ("--remind", "email@2030-03-30T08:00:00@UTC:ghost")
        args = ("task", "schedule", task["ref"], "--expect", str(task["revision"]), *remind)
        refusal = refused_alike(world, 2, *args)
        assert refusal["code"] == "invalid-input"
        assert refusal["message"] == "reminders[0].recipient: no actor 'ghost'"
        assert refusal["details"]["field"] == "reminders[0].recipient"


# --- actors, their reminder destinations, tokens, passages ---------------------------------

# Apprise URLs with secrets in them, which no output may show.
NTFY = "ntfys://reader:pa55word@ntfy.example.com/olivia-phone"
HOOK = "json://hooks.example.com/kalends?+Authorization=Bearer%20k3y-abcdef"
MAIL = "mailto://olivia:hunter2@example.com"
SECRETS = ("pa55word", "k3y-abcdef", "hunter2")
LOCAL_NOTE = f"local mode: acting as {OWNER}\n"


def no_secret(result: Result) -> Result:
    for secret in SECRETS:
        assert secret not in result.stdout + result.stderr
    return result


class TestActors:
    def test_the_servers_owner_adds_an_actor_and_everyone_lists_them(
        self, world: World, tmp_path: Path
    ) -> None:
        made = world.rjson("actor", "add", "carol", "--name", "Carol", "--email", "c@example.org")
        assert (made["handle"], made["display_name"], made["email"]) == (
            "carol",
            "Carol",
            "c@example.org",
        )
        listed = world.rjson("actor", "ls")
        assert listed == json.loads(world.ok(world.anonymous("actor", "ls", "--json")).stdout)
        assert {**made, "mayRun": False} in listed
        assert {a["handle"] for a in listed} >= {OWNER, "bob", "carol"}
        # People read the same table in both modes.
        text = world.ok(world.remote("actor", "ls")).stdout
        assert text == world.ok(world.anonymous("actor", "ls")).stdout
        # bob may list them, not add one.
        own = bob_logged_in(world, tmp_path)
        assert world.rjson("actor", "ls", **own) == listed
        before = world.snapshot()
        refusal = error_of(
            world.remote("actor", "add", "mallory", "--name", "M", "--json", **own), 1
        )
        assert refusal["code"] == "forbidden" and "owner account" in refusal["message"]
        assert world.snapshot() == before

    def test_only_the_servers_owner_grants_the_run_privilege_an_editor_needs_to_create(
        self, world: World, tmp_path: Path
    ) -> None:
        own = bob_logged_in(world, tmp_path)
        world.rjson("workspace", "add", world.directory("granted"), "--name", "Granted")
        world.rjson("workspace", "member", "set", "Granted", "bob", "--role", "editor")
        create = ("schedule", "create", "Granted", "--title", "T", "--command", "true",
                  "--immediate", "--json")  # fmt: skip
        assert world.rjson("actor", "ls", **own)  # bob's token used: its first use is recorded
        before = world.snapshot()
        refusal = error_of(world.remote(*create, **own), 1)
        assert refusal["code"] == "run-privilege-required"
        # An editor may not grant it to himself; the server's owner account does.
        refusal = error_of(world.remote("actor", "grant", "run", "bob", "--json", **own), 1)
        assert refusal["code"] == "forbidden" and "owner account" in refusal["message"]
        assert world.snapshot() == before
        granted = world.rjson("actor", "grant", "run", "bob")
        assert (granted["handle"], granted["mayRun"]) == ("bob", True)
        assert {a["handle"]: a["mayRun"] for a in world.rjson("actor", "ls")}["bob"] is True
        made = json.loads(world.ok(world.remote(*create, **own)).stdout)
        assert made["status"] == "created"
        text = world.ok(world.remote("actor", "revoke", "run", "bob")).stdout
        assert "revoked run from bob" in text
        assert error_of(world.remote(*create, **own), 1)["code"] == "run-privilege-required"
        # The owner account keeps it whatever is revoked.
        kept = world.rjson("actor", "revoke", "run", OWNER)
        assert kept["mayRun"] is True
        missing = error_of(world.remote("actor", "grant", "run", "nobody", "--json"), 1)
        assert missing["code"] == "not-found"

    def test_an_added_actor_is_told_how_to_get_an_account(self, world: World) -> None:
        text = world.ok(world.remote("actor", "add", "dora", "--name", "Dora")).stdout
        assert "added actor dora (Dora)" in text
        assert "kalends login-link --as dora" in text

    @pytest.mark.parametrize(
        ("code", "args"),
        [
            (1, ("bob", "--name", "Another Bob")),  # the handle is taken
            (2, ("Not A Handle", "--name", "X")),  # the handle's rule
            (2, ("erin", "--name", " ")),  # a blank name
            (2, ("erin", "--name", "Erin", "--email", "nowhere")),  # not an address
        ],
    )
    def test_a_refused_addition_says_what_local_mode_says_and_writes_nothing(
        self, world: World, code: int, args: tuple[str, ...]
    ) -> None:
        before = world.snapshot()
        remote = error_of(world.remote("actor", "add", *args, "--json"), code)
        assert world.snapshot() == before
        local = error_of(world.anonymous("actor", "add", *args, "--json"), code)
        assert world.snapshot() == before
        assert (remote["code"], remote["message"]) == (local["code"], local["message"])


class TestNotify:
    def test_set_add_ls_rm_as_in_local_mode_and_never_a_secret(self, world: World) -> None:
        notify = ("actor", "notify")
        written = world.rjson(
            *notify, "set", OWNER, "--channel", "push", "--url", NTFY, "--url", HOOK
        )
        assert [(d["channel"], d["position"]) for d in written] == [("push", 1), ("push", 2)]
        assert written[0]["display"] == "ntfys://reader:****@ntfy.example.com/****"
        # A URL from standard input keeps it out of the shell history.
        added = world.rjson(*notify, "add", OWNER, "--channel", "email", "--url", "-", input=MAIL)
        assert added["display"] == "mailto://olivia:****@example.com/"
        assert world.same(*notify, "ls", OWNER) == [added, *written]
        assert world.same(*notify, "ls", OWNER, "--channel", "email") == [added]
        for command in (("ls", OWNER), ("ls", OWNER, "--channel", "push")):
            remote = no_secret(world.ok(world.remote(*notify, *command)))
            local = world.ok(world.local(*notify, *command)).stdout
            # The same table; local mode adds its note on who is acting.
            assert remote.stdout + LOCAL_NOTE == local
        removed = world.rjson(*notify, "rm", OWNER, "--channel", "push", "--url", NTFY)
        assert removed == {"removed": {"channel": "push", "display": written[0]["display"]}}
        text = no_secret(
            world.ok(world.remote(*notify, "rm", OWNER, "--channel", "email", "--url", MAIL))
        )
        assert "removed email destination mailto://olivia:****@example.com/" in text.stdout
        cleared = no_secret(
            world.ok(world.remote(*notify, "set", OWNER, "--channel", "push", "--clear"))
        )
        assert f"{OWNER} now has no push destination" in cleared.stdout
        assert world.same(*notify, "ls", OWNER) == []

    @pytest.mark.parametrize(
        ("code", "args"),
        [
            (1, ("ls", "bob")),  # another person's settings
            (1, ("add", "bob", "--channel", "push", "--url", NTFY)),
            (1, ("rm", "{me}", "--channel", "push", "--url", NTFY)),  # not one of mine
            (1, ("add", "{me}", "--channel", "push", "--url", "{taken}")),  # set already
            (2, ("ls", "{me}", "--channel", "pager")),  # no such channel
            (2, ("set", "{me}", "--channel", "push")),  # neither --url nor --clear
            (2, ("add", "{me}", "--channel", "push", "--url", "not a url")),
            (2, ("add", "{me}", "--channel", "email", "--url", HOOK)),  # not an e-mail URL
            (2, ("set", "{me}", "--channel", "push", "--url", HOOK, "--url", HOOK)),  # twice
        ],
    )
    def test_a_refusal_says_what_local_mode_says_and_writes_nothing(
        self, world: World, code: int, args: tuple[str, ...]
    ) -> None:
        taken = "ntfy://ntfy.example.com/taken"
        world.rjson("actor", "notify", "set", OWNER, "--channel", "push", "--url", taken)
        given = [a.replace("{me}", OWNER).replace("{taken}", taken) for a in args]
        refusal = refused_alike(world, code, "actor", "notify", *given)
        for secret in SECRETS:
            assert secret not in json.dumps(refusal)


class TestTokens:
    def test_ls_answers_as_local_mode(self, world: World) -> None:
        listed = world.same("token", "ls")
        stored = json.loads(world.credentials.read_text())["servers"][world.url]
        assert stored["tokenId"] in [t["id"] for t in listed]
        text = world.ok(world.remote("token", "ls")).stdout
        assert text == world.ok(world.local("token", "ls")).stdout

    def test_create_asks_the_password_and_leaves_the_stored_token(self, world: World) -> None:
        stored = world.credentials.read_text()
        made = world.rjson(
            "token",
            "create",
            "laptop",
            "--expires-in-days",
            "7",
            "--password-stdin",
            input=PASSWORD + "\n",
        )
        assert set(made) == {"token", "secret"} and made["secret"].startswith("kal_")
        token = made["token"]
        assert (token["name"], token["active"], token["revokedAt"]) == ("laptop", True, None)
        created = datetime.fromisoformat(token["createdAt"].replace("Z", "+00:00"))
        expires = datetime.fromisoformat(token["expiresAt"].replace("Z", "+00:00"))
        assert expires - created == timedelta(days=7)
        assert token in world.ljson("token", "ls")
        assert world.credentials.read_text() == stored
        # The new secret works: it speaks for olivia.
        me = world.rjson("whoami", KALENDS_TOKEN=made["secret"])
        assert me["actor"]["handle"] == OWNER

        # Without --password-stdin the password is asked; never printed.
        text = world.ok(
            world.remote(
                "token", "create", "tablet", "--expires-in-days", "never", input=PASSWORD + "\n"
            )
        )
        assert "created token tablet for olivia, expires never" in text.stdout
        assert PASSWORD not in text.stdout + text.stderr
        [secret] = [line for line in text.stdout.splitlines() if line.startswith("kal_")]
        assert world.rjson("whoami", KALENDS_TOKEN=secret)["actor"]["handle"] == OWNER

    def test_a_wrong_password_creates_nothing(self, world: World) -> None:
        before = world.snapshot()
        result = world.remote("token", "create", "x", "--password-stdin", "--json", input="nope\n")
        refusal = error_of(result, 1)
        assert refusal["code"] == "unauthenticated"
        # The password was refused, not the stored token: no advice to log in again.
        assert "kalends login" not in refusal["message"]
        assert world.snapshot() == before

    @pytest.mark.parametrize(
        "args",
        [
            ("",),  # an empty name
            ("x" * 121,),  # a name too long
            ("x", "--expires-in-days", "0"),  # no lifetime
            ("x", "--expires-in-days", "367"),  # past the longest
        ],
    )
    def test_bad_input_exits_2_as_local_mode_before_any_password(
        self, world: World, args: tuple[str, ...]
    ) -> None:
        refusal = refused_alike(world, 2, "token", "create", *args)
        assert refusal["code"] == "invalid-input"

    def test_revoke_as_local_mode_and_refusals(self, world: World, tmp_path: Path) -> None:
        made = world.ljson("token", "create", "spare")
        revoked = world.rjson("token", "revoke", made["token"]["id"])
        assert (revoked["id"], revoked["active"]) == (made["token"]["id"], False)
        assert revoked in world.ljson("token", "ls")
        # Revoking a revoked token changes nothing.
        assert world.rjson("token", "revoke", made["token"]["id"]) == revoked
        text = world.ok(world.remote("token", "revoke", made["token"]["id"])).stdout
        assert text.startswith("revoked token spare (revoked ")
        local = world.ok(world.local("token", "revoke", made["token"]["id"])).stdout
        assert text + LOCAL_NOTE == local

        # Another person's token is not found; a malformed ID is bad input.
        bobs = world.ljson("token", "create", "bobs", actor="bob")
        refusal = refused_alike(world, 1, "token", "revoke", bobs["token"]["id"])
        assert refusal["code"] == "not-found"
        refused_alike(world, 2, "token", "revoke", "not-an-id")
        assert bobs["token"]["active"] is True
        assert [
            t["active"] for t in world.ljson("token", "ls", actor="bob") if t["name"] == "bobs"
        ] == [True]


class TestPassagesLs:
    def test_the_passages_of_my_workspaces_as_local_mode_lists_them(
        self, world: World, tmp_path: Path
    ) -> None:
        world.rjson("workspace", "add", world.directory("listed"), "--name", "Listed")
        made = world.rjson(
            "schedule",
            "create",
            "Listed",
            "--title",
            "Listed once",
            "--arg",
            "echo",
            "--arg",
            "listed",
            "--at",
            "2099-01-01T09:00:00",
            "--zone",
            "UTC",
        )
        mission = made["missionId"]
        world.rjson("schedule", "run-now", mission)
        passage = _wait_for_result(world, mission)["results"][0]["passageId"]

        runtime = str(world.server.directory / "runtime")
        local = ("passage", "ls", "--runtime-dir", runtime, "--limit", "0")
        remote = world.rjson("passage", "ls", "--limit", "0")
        # olivia owns every workspace of this server: she sees every passage.
        assert remote == json.loads(world.ok(world.run(*local, "--json")).stdout)
        assert passage in [p["passageId"] for p in remote["items"]]
        assert remote["runtimeDir"] == runtime
        text = world.ok(world.remote("passage", "ls", "--limit", "0")).stdout
        assert text == world.ok(world.run(*local)).stdout
        [newest] = world.rjson("passage", "ls", "--limit", "1")["items"]
        assert newest == remote["items"][0]

        # bob sees the passages of his own workspaces only: none of Listed's until he
        # is given a role there.
        own = bob_logged_in(world, tmp_path)
        mine = [
            p["passageId"] for p in world.rjson("passage", "ls", "--limit", "0", **own)["items"]
        ]
        assert passage not in mine
        world.rjson("workspace", "member", "set", "Listed", "bob", "--role", "viewer")
        mine = [
            p["passageId"] for p in world.rjson("passage", "ls", "--limit", "0", **own)["items"]
        ]
        assert passage in mine

    def test_a_malformed_limit_exits_2_as_local_mode(self, world: World) -> None:
        remote = error_of(world.remote("passage", "ls", "--limit", "ten", "--json"), 2)
        runtime = str(world.server.directory / "runtime")
        local = error_of(
            world.run("passage", "ls", "--runtime-dir", runtime, "--limit", "ten", "--json"), 2
        )
        assert remote == local and remote["details"] == {"field": "limit"}


class TestFeeds:
    def test_create_ls_revoke_as_local_mode_and_the_address_answers_calendar_apps(
        self, world: World
    ) -> None:
        made = world.rjson("feed", "create")
        assert made["url"] == f"{world.url}/feeds/{made['secret']}.ics"
        assert made["feed"] in world.same("feed", "ls")
        with httpx.Client() as client:
            first = client.get(made["url"], headers={"User-Agent": "Google-Calendar-Importer"})
            assert first.status_code == 200
            assert first.headers["content-type"] == "text/calendar; charset=utf-8"
            assert first.text.startswith("BEGIN:VCALENDAR")
            again = client.get(
                made["url"],
                headers={
                    "User-Agent": "iOS/17.0 (21A329) dataaccessd/1.0",
                    "If-None-Match": first.headers["etag"],
                },
            )
            assert (again.status_code, again.content) == (304, b"")
            revoked = world.rjson("feed", "revoke", made["feed"]["id"])
            assert revoked["active"] is False
            assert client.get(made["url"]).status_code == 404
        assert revoked in world.same("feed", "ls")
        text = world.ok(world.remote("feed", "revoke", made["feed"]["id"])).stdout
        assert text.startswith(f"revoked calendar feed {made['feed']['id']} (revoked ")

        # Another person's feed is not found; a malformed ID is bad input.
        bobs = world.ljson("feed", "create", "--base-url", world.url, actor="bob")
        refusal = refused_alike(world, 1, "feed", "revoke", bobs["feed"]["id"])
        assert refusal["code"] == "not-found"
        refused_alike(world, 2, "feed", "revoke", "not-an-id")
        assert [f["active"] for f in world.ljson("feed", "ls", actor="bob")] == [True]
