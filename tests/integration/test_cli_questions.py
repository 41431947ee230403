"""`kalends question ls|show|answer`: in local mode, in-process (CliRunner) on SQLite and
(when reachable) PostgreSQL, each answer read back through the service; then against a
real ``kalends serve`` with ``--server``, where every read prints what local mode prints
on the same database and every refusal is refused alike. An answer given here is
recorded as the command line's (``cli``), never with a mark; a refusal writes nothing.

home: alice owns it, bob edits, carol views; dave is no member.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import create_engine, select
from typer.testing import CliRunner, Result

from e2e.conftest import Server, finish, start_server
from kalends.auth import Accounts
from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.identity import Role
from kalends.questions import (
    CAUSE_CLI,
    CAUSE_NOT_ANSWERED,
    HUMAN_DECISION_REQUIRED,
    Principal,
    PrincipalKind,
    Question,
)
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


def snapshot_of(engine_url: str) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table, but when a credential was last used (a server records
    that on a token's first request, whatever the request then answers)."""
    engine = create_engine(engine_url)
    try:
        with engine.connect() as conn:
            return {
                table.name: sorted(
                    tuple(str(v) for v in row)
                    for row in conn.execute(
                        select(*(c for c in table.columns if c.name != "last_used_at"))
                    )
                )
                for table in metadata.sorted_tables
                if table.name != "meta"
            }
    finally:
        engine.dispose()


def error_of(result: Result, code: int) -> dict[str, Any]:
    """The refusal's JSON error, after checking its exit code and its one stderr line."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    error: dict[str, Any] = json.loads(result.stdout)["error"]
    assert set(error) == {"code", "message", "details"}
    assert result.stderr.strip() == f"error: {error['message']}"
    return error


def login(server: Server, handle: str, password: str, credentials: Path) -> None:
    env = {**CLEAN_ENV, "KALENDS_CREDENTIALS": str(credentials)}
    args = ["login", "--server", server.base, "--handle", handle, "--password-stdin"]
    result = runner.invoke(app, args, env=env, input=password + "\n")
    assert result.exit_code == 0, (result.stdout, result.stderr)


FIELDS: list[dict[str, Any]] = [
    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]},
    {"id": "why", "kind": "text", "label": "Why?", "maxLength": 20},
    {"id": "ok", "kind": "confirm", "label": "Checked the logs"},
]
ANSWER: dict[str, Any] = {"go": "yes", "why": "tests pass", "ok": True}
SETS = ("--set", "go=yes", "--set", "why=tests pass", "--set", "ok=yes")


def ask(services: Services, workspace: str, passage: str = "psg_cli") -> Question:
    return services.questions.ask(
        workspace_id=UUID(workspace),
        schedule_id=None,
        passage_id=passage,
        prompt="Ship the release?",
        fields=FIELDS,
    )


def unmet(question: object, cause: str) -> dict[str, Any]:
    return {
        "questionId": str(question),
        "decidedBy": None,
        "humanGate": "unmet",
        "refusal": HUMAN_DECISION_REQUIRED,
        "cause": cause,
    }


@dataclass
class Local:
    url: str
    services: Services
    workspace: str

    def invoke(self, *args: str, actor: str = "alice") -> Result:
        return runner.invoke(app, [*args, "--as", actor, "--database", self.url], env=CLEAN_ENV)

    def ok(self, *args: str, actor: str = "alice") -> Result:
        result = self.invoke(*args, actor=actor)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result

    def json(self, *args: str, actor: str = "alice") -> Any:
        return json.loads(self.ok(*args, "--json", actor=actor).stdout)

    def refused(self, code: int, *args: str, actor: str = "alice") -> dict[str, Any]:
        before = snapshot_of(self.url)
        error = error_of(self.invoke(*args, "--json", actor=actor), code)
        assert snapshot_of(self.url) == before
        return error


@pytest.fixture
def local(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Local]:
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


class TestLocal:
    def test_ls_and_show_print_the_services_json(self, local: Local) -> None:
        asked = ask(local.services, local.workspace)
        assert local.json("question", "ls", "home", actor="carol") == [asked.to_json()]
        assert local.json("question", "ls", local.workspace) == [asked.to_json()]
        assert local.json("question", "show", str(asked.id), actor="carol") == {
            **asked.to_json(),
            "decision": unmet(asked.id, CAUSE_NOT_ANSWERED),
            "marks": [],
        }
        empty = local.ok("question", "ls", "home")
        assert "Ship the release?" in empty.stdout and str(asked.id) in empty.stdout

    def test_answer_records_the_command_lines_answer_never_a_mark(self, local: Local) -> None:
        asked = ask(local.services, local.workspace)

        done = local.json("question", "answer", str(asked.id), "--expect", "1", *SETS, actor="bob")

        stored = local.services.questions.get("bob", asked.id)
        assert done == {**stored.to_json(), "decision": unmet(asked.id, CAUSE_CLI), "marks": []}
        assert (stored.answered_via, stored.answer, stored.revision) == ("cli", ANSWER, 2)
        assert stored.answered_by == local.services.directory.actor("bob").id
        assert local.services.questions.marks("bob", asked.id) == []
        assert local.json("question", "ls", "home") == []

        other = ask(local.services, local.workspace)
        text = local.ok(
            "question",
            "answer",
            str(other.id),
            "--expect",
            "1",
            "--json-answer",
            json.dumps({**ANSWER, "ok": False}),
            actor="alice",
        )
        assert text.stdout == (
            f"answered question {other.id} (revision 2)\n"
            "not a human decision: answered through the command line, not the kalends "
            "interface\n"
            "local mode: acting as alice\n"
        )
        assert local.services.questions.get("bob", other.id).answer == {**ANSWER, "ok": False}

    def test_show_says_who_decided_in_words(self, local: Local) -> None:
        asked = ask(local.services, local.workspace)
        shown = local.ok("question", "show", str(asked.id), actor="carol").stdout
        assert shown.splitlines()[0] == "Ship the release?"
        assert shown.splitlines()[2:] == [
            "fields:",
            "  go (choice: yes, later): Ship it?",
            "  why (text, at most 20 characters): Why?",
            "  ok (confirm: true or false): Checked the logs",
            "not a human decision: not answered yet",
        ]
        bob = local.services.directory.actor("bob").id
        accounts = Accounts(local.services.store)
        accounts.ensure_account(bob)
        session = accounts.redeem_login_link(accounts.issue_login_link(bob))
        # A live session of bob's: only then may the hand-over be confirmed.
        who = Principal(
            kind=PrincipalKind.SESSION, id=str(session.principal.credential_id), actor_id=bob
        )
        token = local.services.questions.mint_token("bob", who, asked.id, ANSWER)
        given = local.services.questions.answer_from_ui("bob", who, asked.id, ANSWER, token, 1)
        pending = local.ok("question", "show", str(asked.id)).stdout.splitlines()
        assert pending[-6].startswith("answer (via ui, "), pending
        assert pending[-5:] == [
            "  go=yes",
            "  why=tests pass",
            "  ok=true",
            "not a human decision: the interface answer's hand-over is not confirmed (pending)",
            f"mark: attempt {given.attempt_id} pending",
        ]
        local.services.questions.confirm_handover(asked.id, given.attempt_id)
        confirmed = local.ok("question", "show", str(asked.id)).stdout.splitlines()
        assert "decided by: human (confirmed mark)" in confirmed
        assert [line for line in confirmed if line.startswith("  ") and "=" in line] == [
            "  go=yes",
            "  why=tests pass",
            "  ok=true",
        ]

        decided = ask(local.services, local.workspace)
        local.services.questions.coordinator_decision("psg_cli", decided.id, ANSWER)
        lines = local.ok("question", "show", str(decided.id)).stdout.splitlines()
        assert "decided by: coordinator (the passage itself)" in lines

    def test_refusals_name_the_field_and_write_nothing(self, local: Local) -> None:
        asked = ask(local.services, local.workspace)
        q = str(asked.id)
        cases: list[tuple[int, tuple[str, ...], str, str, str | None]] = [
            (2, ("show", "not-an-id"), "alice", "invalid-input", "question"),
            (1, ("show", NIL), "alice", "not-found", "question"),
            (1, ("show", q), "dave", "not-found", "question"),
            (1, ("ls", "home"), "dave", "not-found", "workspace"),
            (2, ("answer", q, *SETS), "bob", "invalid-input", "expect"),
            (2, ("answer", q, "--expect", "x", *SETS), "bob", "invalid-input", "expect"),
            (2, ("answer", q, "--expect", "0", *SETS), "bob", "invalid-input", "expect"),
            (2, ("answer", q, "--expect", "1"), "bob", "invalid-input", "answer"),
            (
                2,
                ("answer", q, "--expect", "1", "--json-answer", "{}", *SETS),
                "bob",
                "invalid-input",
                "answer",
            ),
            (
                2,
                ("answer", q, "--expect", "1", "--json-answer", "{"),
                "bob",
                "invalid-input",
                "answer",
            ),
            (
                2,
                ("answer", q, "--expect", "1", "--json-answer", "[]"),
                "bob",
                "invalid-input",
                "answer",
            ),
            (2, ("answer", q, "--expect", "1", "--set", "go"), "bob", "invalid-input", "answer"),
            (
                2,
                ("answer", q, "--expect", "1", "--set", "go=no", "--set", "why=x", "--set", "ok=1"),
                "bob",
                "invalid-input",
                "answer.go",
            ),
            (
                2,
                (
                    "answer",
                    q,
                    "--expect",
                    "1",
                    "--set",
                    "go=yes",
                    "--set",
                    "why=" + "x" * 21,
                    "--set",
                    "ok=1",
                ),
                "bob",
                "invalid-input",
                "answer.why",
            ),
            (
                2,
                (
                    "answer",
                    q,
                    "--expect",
                    "1",
                    "--set",
                    "go=yes",
                    "--set",
                    "why=x",
                    "--set",
                    "ok=maybe",
                ),
                "bob",
                "invalid-input",
                "answer.ok",
            ),
            (
                2,
                ("answer", q, "--expect", "1", "--set", "go=yes", "--set", "go=later"),
                "bob",
                "invalid-input",
                "answer.go",
            ),
            (
                2,
                ("answer", q, "--expect", "1", "--set", "go=yes", "--set", "ok=1"),
                "bob",
                "invalid-input",
                "answer.why",
            ),
            (1, ("answer", q, "--expect", "1", *SETS), "carol", "forbidden", None),
            (1, ("answer", q, "--expect", "1", *SETS), "dave", "not-found", "question"),
            (1, ("answer", q, "--expect", "2", *SETS), "bob", "revision-conflict", None),
        ]
        for code, args, actor, error_code, field in cases:
            error = local.refused(code, "question", *args, actor=actor)
            assert error["code"] == error_code, (args, error)
            if field is not None:
                assert error["details"].get("field") == field, (args, error)
        local.json("question", "answer", q, "--expect", "1", *SETS, actor="bob")
        answered = local.refused(1, "question", "answer", q, "--expect", "2", *SETS, actor="bob")
        assert (answered["code"], answered["details"]["field"]) == ("conflict", "question")


# --- server mode ---------------------------------------------------------------------------


@dataclass
class Remote:
    server: Server
    database: str
    credentials: Path
    bob_credentials: Path
    workspace: str

    def run(self, *args: str, credentials: Path | None = None) -> Result:
        env = {**CLEAN_ENV, "KALENDS_CREDENTIALS": str(credentials or self.credentials)}
        return runner.invoke(app, list(args), env=env)

    def remote(self, *args: str, who: str = OWNER) -> Result:
        own = self.bob_credentials if who == "bob" else self.credentials
        return self.run(*args, "--server", self.server.base, credentials=own)

    def local(self, *args: str, who: str = OWNER) -> Result:
        return self.run(*args, "--database", self.database, "--as", who)

    def rjson(self, *args: str, who: str = OWNER) -> Any:
        result = self.remote(*args, "--json", who=who)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    def same(self, *args: str, who: str = OWNER) -> Any:
        remote = self.rjson(*args, who=who)
        local = self.local(*args, "--json", who=who)
        assert local.exit_code == 0, (local.stdout, local.stderr)
        assert remote == json.loads(local.stdout)
        return remote

    def refused_alike(self, code: int, *args: str, who: str = OWNER) -> dict[str, Any]:
        url = f"sqlite:///{self.database}"
        before = snapshot_of(url)
        remote = error_of(self.remote(*args, "--json", who=who), code)
        assert snapshot_of(url) == before
        local = error_of(self.local(*args, "--json", who=who), code)
        assert snapshot_of(url) == before
        assert (remote["code"], remote["details"].get("field")) == (
            local["code"],
            local["details"].get("field"),
        )
        return remote

    def ask(self) -> Question:
        services = open_services(self.database)
        try:
            return ask(services, self.workspace, passage="psg_remote")
        finally:
            services.store.close()


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    directory = tmp_path_factory.mktemp("questions")
    database = str(directory / "kalends.sqlite3")
    services = open_services(database)
    try:
        services.directory.add_actor("bob", "Bob")
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
            (directory / "ask").mkdir()
            found = services.workspaces.add(OWNER, directory / "ask", "ask")
            services.workspaces.set_member(OWNER, found.id, "bob", Role.EDITOR)
        finally:
            services.store.close()
        credentials = directory / "config" / "credentials.json"
        bob_credentials = directory / "config" / "bob.json"
        login(server, OWNER, PASSWORD, credentials)
        login(server, "bob", BOB_PASSWORD, bob_credentials)
        yield Remote(server, database, credentials, bob_credentials, str(found.id))
    finally:
        finish(server)


class TestServerMode:
    def test_reads_print_what_local_mode_prints_and_answers_are_the_command_lines(
        self, remote: Remote
    ) -> None:
        asked = remote.ask()
        assert asked.to_json() in remote.same("question", "ls", "ask")
        shown = remote.same("question", "show", str(asked.id))
        assert shown["decision"] == unmet(asked.id, CAUSE_NOT_ANSWERED)
        text = remote.remote("question", "show", str(asked.id))
        assert text.exit_code == 0
        assert text.stdout == remote.local("question", "show", str(asked.id)).stdout

        done = remote.rjson("question", "answer", str(asked.id), "--expect", "1", *SETS, who="bob")

        assert (done["answeredVia"], done["answer"], done["marks"]) == ("cli", ANSWER, [])
        assert done["decision"] == unmet(asked.id, CAUSE_CLI)
        assert remote.same("question", "show", str(asked.id)) == done

    def test_refusals_are_alike_and_write_nothing(self, remote: Remote) -> None:
        q = str(remote.ask().id)
        assert remote.refused_alike(1, "question", "show", NIL)["code"] == "not-found"
        bad = remote.refused_alike(
            2,
            "question",
            "answer",
            q,
            "--expect",
            "1",
            "--set",
            "go=no",
            "--set",
            "why=x",
            "--set",
            "ok=no",
            who="bob",
        )
        assert bad["details"]["field"] == "answer.go"
        stale = remote.refused_alike(1, "question", "answer", q, "--expect", "3", *SETS, who="bob")
        assert stale["code"] == "revision-conflict"
