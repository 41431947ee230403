"""`kalends conversation new|ls|show|post|edit|rm`: in local mode, in-process (CliRunner)
on SQLite and (when reachable) PostgreSQL, each answer read back through the service;
then against a real ``kalends serve`` with ``--server``, where every read must print what
local mode prints on the same database, and every refusal must be refused alike. A
refusal writes nothing, in either mode.

home: alice owns it, bob edits, carol views; dave is no member.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import NIL, Local, Remote, local_home, serve_workspace

from kalends.conversations import MAX_MESSAGE_CHARS, MAX_PAGE, MAX_TITLE, message_digest
from kalends.storage.testing import StorageTarget

UUID_TEXT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
CONVERSATION_KEYS = {
    "id",
    "workspaceId",
    "kind",
    "title",
    "createdBy",
    "passageId",
    "scheduleId",
    "state",
    "revision",
    "lastSeq",
    "placementDigest",
    "createdAt",
    "updatedAt",
}
MESSAGE_KEYS = {
    "id",
    "conversationId",
    "seq",
    "role",
    "authorActorId",
    "authorPassageId",
    "text",
    "digest",
    "complete",
    "revision",
    "createdAt",
    "updatedAt",
    "completedAt",
}


# --- local mode ----------------------------------------------------------------------------


@pytest.fixture
def local(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Local]:
    yield from local_home(storage_target, tmp_path)


class TestLocal:
    def test_new_ls_post_and_show_print_the_services_json(self, local: Local) -> None:
        made = local.json("conversation", "new", "home", "  Plans ", actor="bob")
        assert set(made) == CONVERSATION_KEYS
        assert UUID_TEXT.match(made["id"]) and INSTANT.match(made["createdAt"])
        assert (made["title"], made["kind"], made["state"]) == ("Plans", "thread", "open")
        assert (made["workspaceId"], made["createdBy"]) == (local.workspace, local.actor_id("bob"))
        assert (made["revision"], made["lastSeq"]) == (1, 0)
        stored = local.services.conversations.get("alice", made["id"])
        assert stored.to_json() == made
        # By name or by ID, to any member.
        assert local.json("conversation", "ls", "home", actor="carol") == [made]
        assert local.json("conversation", "ls", local.workspace) == [made]

        cid = made["id"]
        first = local.json("conversation", "post", cid, "one", actor="bob")
        assert set(first) == MESSAGE_KEYS
        assert (first["seq"], first["role"], first["text"], first["complete"]) == (
            1,
            "user",
            "one",
            True,
        )
        assert first["digest"] == message_digest("user", "one")
        assert first["authorActorId"] == local.actor_id("bob")
        second = local.json("conversation", "post", cid, "-", input="two\nlines\n")
        assert second["text"] == "two\nlines" and second["seq"] == 2
        stored_messages = local.services.conversations.messages("alice", cid)
        assert [m.to_json() for m in stored_messages] == [first, second]

        shown = local.json("conversation", "show", cid, actor="carol")
        assert shown == {
            "conversation": local.services.conversations.get("alice", cid).to_json(),
            "messages": [first, second],
            "nextAfterSeq": None,
        }
        page = local.json("conversation", "show", cid, "--limit", "1")
        assert [m["seq"] for m in page["messages"]] == [1] and page["nextAfterSeq"] == 1
        page = local.json("conversation", "show", cid, "--after", "1", "--limit", "1")
        assert page["messages"] == [second] and page["nextAfterSeq"] is None

    def test_edit_and_rm_change_ones_own_message(self, local: Local) -> None:
        cid = local.json("conversation", "new", "home", "Plans")["id"]
        mid = local.json("conversation", "post", cid, "draft", actor="bob")["id"]
        edited = local.json("conversation", "edit", mid, "final", "--expect", "1", actor="bob")
        assert (edited["id"], edited["text"], edited["revision"], edited["seq"]) == (
            mid,
            "final",
            2,
            1,
        )
        [stored] = local.services.conversations.messages("alice", cid)
        assert stored.to_json() == edited
        gone = local.json("conversation", "rm", mid, "--expect", "2", actor="bob")
        assert gone == {"deleted": mid}
        assert local.services.conversations.messages("alice", cid) == []
        # An owner removes another's message; its seq is not handed out again.
        other = local.json("conversation", "post", cid, "again", actor="bob")
        assert other["seq"] == 2
        text = local.ok("conversation", "rm", other["id"], "--expect", "1").stdout
        assert text.splitlines() == [
            f"deleted message {other['id']}",
            "local mode: acting as alice",
        ]

    def test_the_human_output_fits_80_columns(self, local: Local) -> None:
        cid = local.json("conversation", "new", "home", "A title " * 12, actor="bob")["id"]
        for text in ("word " * 60, "short"):
            local.ok("conversation", "post", cid, text, actor="bob")
        listing = local.ok("conversation", "ls", "home").stdout
        shown = local.ok("conversation", "show", cid, "--limit", "1").stdout
        for out in (listing, shown):
            assert max(len(line) for line in out.splitlines()) <= 80, out
        assert cid in listing
        # The long title wraps onto a second line.
        title, lines = shown.splitlines()[:2], shown.splitlines()[2:]
        assert " ".join(part.strip() for part in title) == ("A title " * 12).strip()
        assert lines[0] == f"thread, open, revision 3, last seq 2; id {cid}"
        assert re.match(r"^#1 bob \(user\) complete \d{4}-\d\d-\d\d \d\d:\d\d UTC$", lines[2])
        assert lines[3].startswith("revision 1, id ")
        assert lines[4].startswith("  word word") and lines[7].startswith("  word word")
        assert lines[-1] == f"more: kalends conversation show {cid} --after 1"
        empty = local.json("conversation", "new", "home", "Empty")["id"]
        assert "no message here" in local.ok("conversation", "show", empty).stdout

    def test_who_may_not_is_refused_and_nothing_is_written(self, local: Local) -> None:
        cid = local.json("conversation", "new", "home", "Plans")["id"]
        mid = local.json("conversation", "post", cid, "mine")["id"]
        # A viewer reads but does not write.
        assert local.refused(1, "conversation", "new", "home", "x", actor="carol")["code"] == (
            "forbidden"
        )
        assert local.refused(1, "conversation", "post", cid, "x", actor="carol")["code"] == (
            "forbidden"
        )
        # An editor may not rewrite or delete another's message.
        changes: list[tuple[str, ...]] = [
            ("edit", mid, "x", "--expect", "1"),
            ("rm", mid, "--expect", "1"),
        ]
        for change in changes:
            error = local.refused(1, "conversation", *change, actor="bob")
            assert error["code"] == "forbidden", error
        # A non-member is told nothing exists, as for an unknown ID.
        for args in (
            ("show", cid),
            ("post", cid, "x"),
            ("edit", mid, "x", "--expect", "1"),
            ("rm", mid, "--expect", "1"),
            ("ls", "home"),
            ("new", "home", "x"),
        ):
            error = local.refused(1, "conversation", *args, actor="dave")
            assert error["code"] == "not-found", (args, error)
        unknown = local.refused(1, "conversation", "show", NIL, actor="dave")
        seen = local.refused(1, "conversation", "show", cid, actor="dave")
        assert unknown["message"].replace(NIL, cid) == seen["message"]
        assert local.refused(1, "conversation", "ls", "nowhere")["code"] == "not-found"

    @pytest.mark.parametrize(
        ("args", "field"),
        [
            (("new", "home", "   "), "title"),
            (("new", "home", "t" * (MAX_TITLE + 1)), "title"),
            (("new", "home", "a\tb"), "title"),
            (("show", "not-an-id"), "conversation"),
            (("show", "{cid}", "--limit", "0"), "limit"),
            (("show", "{cid}", "--limit", str(MAX_PAGE + 1)), "limit"),
            (("show", "{cid}", "--after", "-1"), "after"),
            (("post", "{cid}", ""), "text"),
            (("post", "{cid}", "x" * (MAX_MESSAGE_CHARS + 1)), "text"),
            (("post", "{cid}", "a\x00b"), "text"),
            (("post", "{cid}", "-"), "text"),
            (("post", "12345", "x"), "conversation"),
            (("edit", "{mid}", "x"), "expect"),
            (("edit", "{mid}", "x", "--expect", "one"), "expect"),
            (("edit", "{mid}", "x", "--expect", "-1"), "expect"),
            (("edit", "{mid}", "", "--expect", "1"), "text"),
            (("rm", "{mid}"), "expect"),
            (("rm", "nope", "--expect", "1"), "message"),
        ],
    )
    def test_bad_input_exits_2_and_writes_nothing(
        self, local: Local, args: tuple[str, ...], field: str
    ) -> None:
        cid = local.json("conversation", "new", "home", "Plans")["id"]
        mid = local.json("conversation", "post", cid, "mine")["id"]
        filled = [a.replace("{cid}", cid).replace("{mid}", mid) for a in args]
        error = local.refused(2, "conversation", *filled, input="")
        assert error["code"] == "invalid-input"
        assert error["details"]["field"] == field, error

    def test_a_stale_revision_exits_1_and_writes_nothing(self, local: Local) -> None:
        cid = local.json("conversation", "new", "home", "Plans")["id"]
        mid = local.json("conversation", "post", cid, "mine")["id"]
        for args in (("edit", mid, "x", "--expect", "2"), ("rm", mid, "--expect", "0")):
            error = local.refused(1, "conversation", *args)
            assert error["code"] == "revision-conflict", error
            assert error["details"]["actual"] == 1


# --- server mode ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    yield from serve_workspace(tmp_path_factory, "talk", Remote, actors=("bob", "dave"))


class TestServerMode:
    def test_each_command_on_a_server_prints_what_local_mode_prints(self, remote: Remote) -> None:
        made = remote.rjson("conversation", "new", "talk", "Over the wire", who="bob")
        assert (made["title"], made["workspaceId"]) == ("Over the wire", remote.workspace)
        assert made in remote.same("conversation", "ls", "talk")
        cid = made["id"]
        first = remote.rjson("conversation", "post", cid, "hello", who="bob")
        second = remote.rjson("conversation", "post", cid, "-", input="from a pipe\n")
        assert (first["seq"], second["seq"], second["text"]) == (1, 2, "from a pipe")
        shown = remote.same("conversation", "show", cid)
        assert shown["messages"] == [first, second] and shown["nextAfterSeq"] is None
        page = remote.same("conversation", "show", cid, "--limit", "1")
        assert page["messages"] == [first] and page["nextAfterSeq"] == 1
        text = remote.remote("conversation", "show", cid, "--limit", "1")
        assert (
            text.exit_code == 0
            and text.stdout == remote.local("conversation", "show", cid, "--limit", "1").stdout
        )
        edited = remote.rjson("conversation", "edit", first["id"], "hi", "--expect", "1", who="bob")
        assert (edited["text"], edited["revision"]) == ("hi", 2)
        assert edited in remote.same("conversation", "show", cid)["messages"]
        gone = remote.rjson("conversation", "rm", first["id"], "--expect", "2")
        assert gone == {"deleted": first["id"]}
        assert remote.same("conversation", "show", cid)["messages"] == [second]

    def test_refusals_are_alike_and_write_nothing(self, remote: Remote) -> None:
        cid = remote.rjson("conversation", "new", "talk", "Refusals")["id"]
        mid = remote.rjson("conversation", "post", cid, "mine")["id"]
        assert remote.refused_alike(2, "conversation", "show", "not-an-id")["details"] == {
            "field": "conversation"
        }
        assert remote.refused_alike(1, "conversation", "show", NIL)["code"] == "not-found"
        assert remote.refused_alike(2, "conversation", "show", cid, "--limit", "0")["details"] == {
            "field": "limit"
        }
        assert remote.refused_alike(2, "conversation", "post", cid, "")["details"] == {
            "field": "text"
        }
        stale = remote.refused_alike(1, "conversation", "edit", mid, "x", "--expect", "5")
        assert (stale["code"], stale["details"]) == (
            "revision-conflict",
            {"expected": 5, "actual": 1},
        )
        missing = remote.refused_alike(2, "conversation", "rm", mid)
        assert missing["details"] == {"field": "expect"}
        # bob edits in talk, but not olivia's message.
        mine = remote.refused_alike(1, "conversation", "rm", mid, "--expect", "1", who="bob")
        assert mine["code"] == "forbidden"
