"""Conversations over HTTP: threads in a workspace, pages of their messages, and posting,
appending, finishing, rewriting, deleting and moving, each answer checked exactly and
read back through the service; every refusal (malformed, out of range, unknown field,
stale revision, a viewer writing, a non-member) writes nothing.

home: alice owns it, bob edits, carol views; dave owns away and is no member of home.
"""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy.engine import Connection

from api.conftest import ApiWorld
from api.test_tasks_support import invalid, ok, refused
from kalends.conversations import (
    MAX_MESSAGE_CHARS,
    MAX_PAGE,
    MAX_TITLE,
    Conversation,
    message_digest,
    open_passage_conversation,
)
from missions.conftest import daily_config

NIL = "00000000-0000-0000-0000-000000000000"
NOW = "2025-03-03T12:00:00Z"  # the API world's clock


def thread(api: ApiWorld, who: str = "bob", title: str = "Plans") -> str:
    made = api.services.conversations.create(api.actors[who].id, api.home.id, title)
    return str(made.id)


def message(
    api: ApiWorld, conversation: str, who: str = "bob", text: str = "hello", complete: bool = True
) -> dict[str, Any]:
    made = api.services.conversations.post(
        api.actors[who].id, conversation, text, complete=complete
    )
    return made.to_json()


def placement(conversation: str, workspace: Any) -> str:
    return hashlib.sha256(f"{conversation}\x00{workspace}".encode()).hexdigest()


def conversation_json(api: ApiWorld, cid: str, **changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": cid,
        "workspaceId": str(api.home.id),
        "kind": "thread",
        "title": "Plans",
        "createdBy": str(api.actors["bob"].id),
        "passageId": None,
        "scheduleId": None,
        "state": "open",
        "revision": 1,
        "lastSeq": 0,
        "placementDigest": placement(cid, api.home.id),
        "createdAt": NOW,
        "updatedAt": NOW,
    }
    found.update(changes)
    return found


def message_json(
    api: ApiWorld, mid: str, cid: str, seq: int, text: str, who: str = "bob", **changes: Any
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": mid,
        "conversationId": cid,
        "seq": seq,
        "role": "user",
        "authorActorId": str(api.actors[who].id),
        "authorPassageId": None,
        "text": text,
        "digest": message_digest("user", text),
        "complete": True,
        "revision": 1,
        "createdAt": NOW,
        "updatedAt": NOW,
        "completedAt": NOW,
    }
    found.update(changes)
    return found


# --- happy paths ---------------------------------------------------------------------------


def test_a_thread_is_created_listed_and_read(api: ApiWorld) -> None:
    url = f"/api/workspaces/{api.home.id}/conversations"
    made = ok(api.client.post(url, json={"title": "  Plans "}, headers=api.headers("bob")), 201)
    cid = made["id"]
    assert made == conversation_json(api, cid)
    stored = api.services.conversations.get(api.actors["alice"].id, cid)
    assert stored.title == "Plans" and stored.created_by == api.actors["bob"].id
    other = thread(api, "alice", "Later")
    listed = ok(api.client.get(url, headers=api.headers("carol")))
    assert {c["id"] for c in listed} == {cid, other}
    assert [c for c in listed if c["id"] == cid] == [made]
    got = ok(api.client.get(f"/api/conversations/{cid}", headers=api.headers("carol")))
    assert got == made
    # away's list is dave's: home's conversations are not in it.
    assert (
        ok(
            api.client.get(
                f"/api/workspaces/{api.away.id}/conversations", headers=api.headers("dave")
            )
        )
        == []
    )


def test_a_posted_message_is_read_back_a_page_at_a_time(api: ApiWorld) -> None:
    cid = thread(api)
    url = f"/api/conversations/{cid}/messages"
    first = ok(api.client.post(url, json={"text": "one"}, headers=api.headers("bob")), 201)
    assert first == message_json(api, first["id"], cid, 1, "one")
    for text in ("two", "three", "four", "five"):
        ok(api.client.post(url, json={"text": text}, headers=api.headers("alice")), 201)
    page = ok(api.client.get(url, params={"limit": 2}, headers=api.headers("carol")))
    assert [m["text"] for m in page["messages"]] == ["one", "two"]
    assert page["messages"][0] == first
    assert page["nextAfterSeq"] == 2
    page = ok(api.client.get(url, params={"afterSeq": 2, "limit": 2}, headers=api.headers("carol")))
    assert [(m["seq"], m["text"]) for m in page["messages"]] == [(3, "three"), (4, "four")]
    assert page["nextAfterSeq"] == 4
    last = ok(api.client.get(url, params={"afterSeq": 4, "limit": 2}, headers=api.headers("bob")))
    assert [m["seq"] for m in last["messages"]] == [5] and last["nextAfterSeq"] is None
    # A full page with nothing after it says so.
    whole = ok(api.client.get(url, params={"afterSeq": 3, "limit": 2}, headers=api.headers("bob")))
    assert [m["seq"] for m in whole["messages"]] == [4, 5] and whole["nextAfterSeq"] is None
    everything = ok(api.client.get(url, headers=api.headers("bob")))
    assert [m["seq"] for m in everything["messages"]] == [1, 2, 3, 4, 5]
    assert everything["nextAfterSeq"] is None
    assert (
        ok(api.client.get(f"/api/conversations/{cid}", headers=api.headers("bob")))["lastSeq"] == 5
    )


def test_an_open_message_takes_text_until_it_is_finished(api: ApiWorld) -> None:
    cid = thread(api)
    made = ok(
        api.client.post(
            f"/api/conversations/{cid}/messages",
            json={"text": "Hel", "complete": False},
            headers=api.headers("bob"),
        ),
        201,
    )
    mid = made["id"]
    assert made == message_json(api, mid, cid, 1, "Hel", complete=False, completedAt=None)
    grown = ok(
        api.client.post(
            f"/api/messages/{mid}/append",
            json={"text": "lo", "expectedRevision": 1},
            headers=api.headers("bob"),
        )
    )
    assert grown == message_json(
        api, mid, cid, 1, "Hello", complete=False, completedAt=None, revision=2
    )
    done = ok(
        api.client.post(
            f"/api/messages/{mid}/finish", json={"expectedRevision": 2}, headers=api.headers("bob")
        )
    )
    assert done == message_json(api, mid, cid, 1, "Hello", revision=3)
    [stored] = api.services.conversations.messages(api.actors["bob"].id, cid)
    assert stored.to_json() == done


def test_a_message_is_rewritten_and_deleted_and_its_seq_not_reused(api: ApiWorld) -> None:
    cid = thread(api)
    mid = message(api, cid, "bob", "first")["id"]
    # An owner may rewrite another's message.
    edited = ok(
        api.client.patch(
            f"/api/messages/{mid}",
            json={"text": "better", "expectedRevision": 1},
            headers=api.headers("alice"),
        )
    )
    assert edited == message_json(api, mid, cid, 1, "better", revision=2)
    reply = api.client.delete(
        f"/api/messages/{mid}", params={"expectedRevision": 2}, headers=api.headers("bob")
    )
    assert (reply.status_code, reply.content) == (204, b"")
    assert api.services.conversations.messages(api.actors["bob"].id, cid) == []
    again = message(api, cid, "bob", "after")
    assert again["seq"] == 2


def test_an_owner_of_both_workspaces_moves_a_conversation(api: ApiWorld) -> None:
    alice, dave = api.actors["alice"].id, api.actors["dave"].id
    api.services.workspaces.set_member(dave, api.away.id, alice, "owner")
    cid = thread(api)
    moved = ok(
        api.client.post(
            f"/api/conversations/{cid}/move",
            json={"workspace": str(api.away.id), "expectedRevision": 1},
            headers=api.headers("alice"),
        )
    )
    assert moved == conversation_json(
        api,
        cid,
        workspaceId=str(api.away.id),
        revision=2,
        placementDigest=placement(cid, api.away.id),
    )
    assert str(api.services.conversations.get(dave, cid).workspace_id) == str(api.away.id)
    # bob edited it in home: in away, he is no member, and it is not there for him.
    refused(api, "GET", f"/api/conversations/{cid}", api.headers("bob"), 404, "not-found")


# --- who may ---------------------------------------------------------------------------------


def requests(cid: str, mid: str, workspace: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route once, about ``cid`` (and its message ``mid``) or in ``workspace``."""
    return [
        ("GET", f"/api/workspaces/{workspace}/conversations", {}),
        ("POST", f"/api/workspaces/{workspace}/conversations", {"json": {"title": "x"}}),
        ("GET", f"/api/conversations/{cid}", {}),
        ("GET", f"/api/conversations/{cid}/messages", {}),
        ("POST", f"/api/conversations/{cid}/messages", {"json": {"text": "x"}}),
        ("POST", f"/api/messages/{mid}/append", {"json": {"text": "x", "expectedRevision": 1}}),
        ("POST", f"/api/messages/{mid}/finish", {"json": {"expectedRevision": 1}}),
        ("PATCH", f"/api/messages/{mid}", {"json": {"text": "x", "expectedRevision": 1}}),
        ("DELETE", f"/api/messages/{mid}", {"params": {"expectedRevision": 1}}),
        (
            "POST",
            f"/api/conversations/{cid}/move",
            {"json": {"workspace": NIL, "expectedRevision": 1}},
        ),
    ]


def test_a_non_member_is_told_nothing_exists_exactly_as_for_unknown_ids(api: ApiWorld) -> None:
    cid = thread(api)
    mid = message(api, cid, complete=False)["id"]
    real = requests(cid, mid, str(api.home.id))
    unknown = requests(NIL, NIL, NIL)
    for (method, url, kw), (_m, nil_url, _kw) in zip(real, unknown, strict=True):
        seen = refused(api, method, url, api.headers("dave"), 404, "not-found", **kw).json()
        nobody = refused(api, method, nil_url, api.headers("dave"), 404, "not-found", **kw).json()
        assert seen["details"] == nobody["details"], (method, url)
        said = seen["message"]
        for real_id in (cid, mid, str(api.home.id)):
            said = said.replace(real_id, NIL)
        assert said == nobody["message"], (method, url)


def test_a_viewer_reads_but_every_write_is_forbidden(api: ApiWorld) -> None:
    cid = thread(api)
    mid = message(api, cid, "bob", complete=False)["id"]
    for method, url, kw in requests(cid, mid, str(api.home.id)):
        if method == "GET":
            assert api.client.request(method, url, headers=api.headers("carol")).status_code == 200
        else:
            refused(api, method, url, api.headers("carol"), 403, "forbidden", **kw)


def test_an_editor_may_not_change_another_persons_message_nor_move(api: ApiWorld) -> None:
    cid = thread(api)
    mid = message(api, cid, "alice", complete=False)["id"]
    for method, url, kw in requests(cid, mid, str(api.home.id))[5:]:
        refused(api, method, url, api.headers("bob"), 403, "forbidden", **kw)


def test_without_credentials_every_route_is_401(api: ApiWorld) -> None:
    cid = thread(api)
    mid = message(api, cid)["id"]
    for method, url, kw in requests(cid, mid, str(api.home.id)):
        refused(api, method, url, {}, 401, "unauthenticated", **kw)


# --- bad input ------------------------------------------------------------------------------

LONG_TITLE = "t" * (MAX_TITLE + 1)
LONG_TEXT = "x" * (MAX_MESSAGE_CHARS + 1)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "title"),
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": LONG_TITLE}, "title"),
        ({"title": "a\nb"}, "title"),
        ({"title": "a\x00b"}, "title"),
        ({"title": 7}, "title"),
        ({"title": "ok", "kind": "passage"}, "kind"),
    ],
)
def test_a_bad_title_is_refused(api: ApiWorld, body: dict[str, Any], field: str) -> None:
    url = f"/api/workspaces/{api.home.id}/conversations"
    invalid(api, "POST", url, field, who="bob", json=body)


def test_a_title_of_the_longest_length_is_taken(api: ApiWorld) -> None:
    url = f"/api/workspaces/{api.home.id}/conversations"
    title = "t" * MAX_TITLE
    made = ok(api.client.post(url, json={"title": title}, headers=api.headers("bob")), 201)
    assert made["title"] == title


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": LONG_TEXT}, "text"),
        ({"text": "a\x00"}, "text"),
        ({"text": ["a"]}, "text"),
        ({"text": "a", "complete": "yes"}, "complete"),
        ({"text": "a", "complete": 1}, "complete"),
        ({"text": "a", "role": "assistant"}, "role"),
    ],
)
def test_a_bad_post_is_refused(api: ApiWorld, body: dict[str, Any], field: str) -> None:
    invalid(api, "POST", f"/api/conversations/{thread(api)}/messages", field, "bob", json=body)


@pytest.mark.parametrize(
    "params",
    [
        {"afterSeq": -1},
        {"afterSeq": 2**31},
        {"afterSeq": "one"},
        {"limit": 0},
        {"limit": MAX_PAGE + 1},
        {"limit": "ten"},
    ],
)
def test_a_bad_page_is_refused(api: ApiWorld, params: dict[str, Any]) -> None:
    [name] = params
    url = f"/api/conversations/{thread(api)}/messages"
    invalid(api, "GET", url, name, "carol", params=params)


@pytest.mark.parametrize(
    "url",
    [
        "/api/workspaces/not-a-uuid/conversations",
        "/api/conversations/not-a-uuid",
        "/api/conversations/not-a-uuid/messages",
    ],
)
def test_a_malformed_id_is_refused(api: ApiWorld, url: str) -> None:
    field = "id" if "workspaces" in url else "conversation"
    invalid(api, "GET", url, field, "alice")


@pytest.mark.parametrize(
    ("method", "tail", "kw", "field"),
    [
        ("POST", "/append", {"json": {"text": "x"}}, "expectedRevision"),
        ("POST", "/append", {"json": {"text": "", "expectedRevision": 1}}, "text"),
        ("POST", "/append", {"json": {"text": LONG_TEXT, "expectedRevision": 1}}, "text"),
        ("POST", "/append", {"json": {"text": "x", "expectedRevision": "1"}}, "expectedRevision"),
        ("POST", "/finish", {"json": {"expectedRevision": -1}}, "expectedRevision"),
        ("POST", "/finish", {"json": {"expectedRevision": 2**31}}, "expectedRevision"),
        ("POST", "/finish", {"json": {"expectedRevision": 1, "x": 1}}, "x"),
        ("PATCH", "", {"json": {"expectedRevision": 1}}, "text"),
        ("PATCH", "", {"json": {"text": "a\x00", "expectedRevision": 1}}, "text"),
        ("DELETE", "", {}, "expectedRevision"),
        ("DELETE", "", {"params": {"expectedRevision": "one"}}, "expectedRevision"),
        ("POST", "/../not-a-uuid/finish", {"json": {"expectedRevision": 1}}, "message"),
    ],
)
def test_a_bad_message_change_is_refused(
    api: ApiWorld, method: str, tail: str, kw: dict[str, Any], field: str
) -> None:
    mid = message(api, thread(api), complete=False)["id"]
    url = f"/api/messages/{mid}{tail}".replace(f"{mid}/../", "")
    invalid(api, method, url, field, "bob", **kw)


def test_a_stale_revision_is_a_conflict_for_every_change(api: ApiWorld) -> None:
    cid = thread(api)
    mid = message(api, cid, complete=False)["id"]
    for method, url, kw in requests(cid, mid, str(api.home.id))[5:9]:
        stale = {key: {**value, "expectedRevision": 7} for key, value in kw.items()}
        reply = refused(api, method, url, api.headers("bob"), 409, "revision-conflict", **stale)
        assert reply.json()["details"] == {"expected": 7, "actual": 1}
    moved = f"/api/conversations/{cid}/move"
    body = {"workspace": str(api.home.id), "expectedRevision": 7}
    refused(api, "POST", moved, api.headers("alice"), 409, "revision-conflict", json=body)


def test_a_complete_message_takes_no_more_text(api: ApiWorld) -> None:
    mid = message(api, thread(api))["id"]
    for tail, body in (("/append", {"text": "x"}), ("/finish", {})):
        reply = refused(
            api,
            "POST",
            f"/api/messages/{mid}{tail}",
            api.headers("bob"),
            409,
            "conflict",
            json={**body, "expectedRevision": 1},
        )
        assert reply.json()["details"] == {"field": "message"}


def test_an_append_past_the_longest_message_is_refused(api: ApiWorld) -> None:
    mid = message(api, thread(api), text="x" * (MAX_MESSAGE_CHARS - 1), complete=False)["id"]
    body = {"text": "yz", "expectedRevision": 1}
    invalid(api, "POST", f"/api/messages/{mid}/append", "text", "bob", json=body)


def test_a_move_to_its_own_or_a_foreign_workspace_is_refused(api: ApiWorld) -> None:
    cid = thread(api)
    url = f"/api/conversations/{cid}/move"
    same = {"workspace": str(api.home.id), "expectedRevision": 1}
    invalid(api, "POST", url, "workspace", "alice", json=same)
    # alice is no member of away: it does not exist, for her.
    away = {"workspace": str(api.away.id), "expectedRevision": 1}
    reply = refused(api, "POST", url, api.headers("alice"), 404, "not-found", json=away)
    assert reply.json()["details"] == {"field": "workspace"}
    invalid(api, "POST", url, "workspace", "alice", json={"workspace": "x", "expectedRevision": 1})
    assert api.services.conversations.get(api.actors["alice"].id, cid).revision == 1


def test_a_passages_conversation_takes_no_post(api: ApiWorld) -> None:
    bob = api.actors["bob"].id
    receipt = api.services.schedules.create(
        bob, api.home.id, daily_config(title="Nightly"), request_id="create-000001"
    )

    def run(conn: Connection) -> Conversation:
        return open_passage_conversation(
            conn,
            api.clock.now(),
            workspace_id=api.home.id,
            schedule_id=UUID(str(receipt.mission_id)),
            passage_id="psg_conversation",
            title="Nightly",
            input_text="Do the nightly things.",
        )

    cid = str(api.store.run(run).id)
    url = f"/api/conversations/{cid}/messages"
    reply = refused(api, "POST", url, api.headers("bob"), 409, "conflict", json={"text": "hi"})
    assert reply.json()["details"] == {"field": "conversation"}
    page = ok(api.client.get(url, headers=api.headers("carol")))
    assert [(m["role"], m["text"]) for m in page["messages"]] == [
        ("user", "Do the nightly things.")
    ]


def test_an_unknown_message_or_conversation_is_not_found(api: ApiWorld) -> None:
    body = {"expectedRevision": 1}
    reply = refused(
        api, "POST", f"/api/messages/{NIL}/finish", api.headers("alice"), 404, json=body
    )
    assert reply.json()["details"] == {"field": "message"}
    reply = refused(api, "GET", f"/api/conversations/{NIL}", api.headers("alice"), 404)
    assert reply.json()["details"] == {"field": "conversation"}
