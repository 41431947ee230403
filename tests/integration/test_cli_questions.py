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
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from cli_support import NIL, Local, Remote, local_home, serve_workspace

from api.questions_support import ANSWER, FIELDS
from kalends.auth import Accounts
from kalends.bootstrap import Services, open_services
from kalends.questions import (
    CAUSE_CLI,
    CAUSE_NOT_ANSWERED,
    HUMAN_DECISION_REQUIRED,
    Principal,
    PrincipalKind,
    Question,
    records,
)
from kalends.storage.testing import StorageTarget

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


@pytest.fixture
def local(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Local]:
    yield from local_home(storage_target, tmp_path)


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
            f"mark: attempt {given.attempt_id} pending, not read by the passage yet",
        ]
        # The passage reads it (its own token's read delivers it) and does not acknowledge.
        store = local.services.questions.store
        store.run(lambda conn: records.mark_delivered(conn, store.clock.now(), given.question))
        read = local.ok("question", "show", str(asked.id)).stdout.splitlines()
        said = f"mark: attempt {given.attempt_id} pending, read by the passage "
        assert read[-1].startswith(said), read
        assert read[-1].endswith(" and not acknowledged"), read
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


class QuestionRemote(Remote):
    """The served ``ask`` workspace, whose questions :meth:`ask` asks on its database."""

    def alike(self, error: dict[str, Any]) -> tuple[object, ...]:
        """What of a refusal must be the same in both modes: its code and its field."""
        return (error["code"], error["details"].get("field"))

    def ask(self) -> Question:
        services = open_services(self.database)
        try:
            return ask(services, self.workspace, passage="psg_remote")
        finally:
            services.store.close()


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuestionRemote]:
    yield from serve_workspace(tmp_path_factory, "ask", QuestionRemote)


class TestServerMode:
    def test_reads_print_what_local_mode_prints_and_answers_are_the_command_lines(
        self, remote: QuestionRemote
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

    def test_refusals_are_alike_and_write_nothing(self, remote: QuestionRemote) -> None:
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
