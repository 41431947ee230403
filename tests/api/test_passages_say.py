"""``POST /api/passages/say``: a passage's message in its own conversation, with the
passage's own HMAC-signed token (the HTTP form of ``kalends say``), and nowhere else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.conftest import ApiWorld
from kalends.conversations import (
    MAX_MESSAGE_CHARS,
    Conversation,
    open_passage_conversation,
    settle_passage_conversation,
)
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.storage.testing import nothing_written
from runtime.support import kill_families

SAY = "/api/passages/say"


@pytest.fixture
def runtime(api: ApiWorld) -> Iterator[ProcessRuntime]:
    """The server's runtime directory with three passages admitted (never launched):
    ``psg_a`` and ``psg_b`` with conversations, ``psg_c`` without one."""
    root = api.root / "runtime"
    found = ProcessRuntime(root, clock=api.clock)
    for name in ("a", "b", "c"):
        found.admit(
            PassageStart(
                passage_id=f"psg_{name}",
                session_id=f"ses_{name}",
                message_id=f"msg_{name}",
                schedule_id="sch_1",
                workspace=api.home.path,
                command=("true",),
            )
        )
    try:
        yield found
    finally:
        kill_families(root)


@pytest.fixture
def conversations(api: ApiWorld) -> dict[str, Conversation]:
    receipt = api.services.schedules.create(
        api.actors["alice"].id,
        api.home.id,
        {
            "title": "Nightly",
            "policy": {"kind": "daily", "time": "02:30", "zone": "America/New_York"},
            "profile": {"command": ["true"]},
        },
        request_id="req-say-schedule",
    )
    assert receipt.mission_id is not None
    made = {}
    with api.store.transaction() as conn:
        for name in ("a", "b"):
            made[name] = open_passage_conversation(
                conn,
                api.clock.now(),
                workspace_id=api.home.id,
                schedule_id=receipt.mission_id,
                passage_id=f"psg_{name}",
                title=f"Passage {name}",
                input_text=f"Do {name}",
            )
    return made


def send(client: TestClient, token: str | None, body: dict[str, Any]) -> httpx2.Response:
    headers = {} if token is None else {"Authorization": f"Passage {token}"}
    return client.post(SAY, json=body, headers=headers)


def texts(api: ApiWorld, conversation: UUID) -> list[tuple[int, str, str, str | None]]:
    found = api.services.conversations.messages(api.actors["alice"].id, conversation)
    return [(m.seq, m.role.value, m.text, m.author_passage_id) for m in found]


def test_a_passage_says_things_in_its_own_conversation(
    api: ApiWorld, runtime: ProcessRuntime, conversations: dict[str, Conversation]
) -> None:
    token = runtime.token("psg_a", "ses_a")
    reply = send(api.client, token, {"text": "Looking at 12 commits."})
    assert reply.status_code == 201, reply.text
    said = reply.json()
    assert (said["seq"], said["role"], said["complete"]) == (2, "assistant", True)
    assert said["authorPassageId"] == "psg_a" and said["authorActorId"] is None
    note = send(api.client, token, {"text": "half", "role": "system", "complete": False})
    assert note.status_code == 201 and note.json()["complete"] is False
    assert texts(api, conversations["a"].id) == [
        (1, "user", "Do a", "psg_a"),
        (2, "assistant", "Looking at 12 commits.", "psg_a"),
        (3, "system", "half", "psg_a"),
    ]
    # The other passage's conversation is untouched.
    assert [t[0] for t in texts(api, conversations["b"].id)] == [1]


def test_each_refusal_writes_nothing(
    api: ApiWorld, runtime: ProcessRuntime, conversations: dict[str, Conversation]
) -> None:
    token = runtime.token("psg_a", "ses_a")
    cases: list[tuple[str | None, dict[str, Any], int, str]] = [
        (None, {"text": "hi"}, 401, "invalid-passage-token"),
        ("forged.token", {"text": "hi"}, 401, "invalid-passage-token"),
        (token, {"text": ""}, 422, "invalid-input"),
        (token, {"text": "a" * (MAX_MESSAGE_CHARS + 1)}, 422, "invalid-input"),
        (token, {"text": "a\x00b"}, 422, "invalid-input"),
        (token, {"text": "hi", "role": "user"}, 422, "invalid-input"),
        (token, {"text": "hi", "conversation": str(conversations["b"].id)}, 422, "invalid-input"),
        # A passage reserved before passages had conversations has none.
        (runtime.token("psg_c", "ses_c"), {"text": "hi"}, 404, "not-found"),
    ]
    seen = []
    for given, body, status, code in cases:
        with nothing_written(api.store):
            reply = send(api.client, given, body)
        if reply.status_code != status or reply.json().get("code") != code:
            seen.append(f"{body!r}: {reply.status_code} {reply.text[:200]}")
    assert seen == []
    # A login session or an API token is no passage.
    with nothing_written(api.store):
        bearer = api.client.post(SAY, json={"text": "hi"}, headers=api.headers("alice"))
    assert bearer.status_code == 401


def test_a_settled_conversation_takes_nothing_more(
    api: ApiWorld, runtime: ProcessRuntime, conversations: dict[str, Conversation]
) -> None:
    with api.store.transaction() as conn:
        settle_passage_conversation(conn, api.clock.now(), "psg_a")
    with nothing_written(api.store):
        reply = send(api.client, runtime.token("psg_a", "ses_a"), {"text": "late"})
    assert reply.status_code == 409, reply.text
    assert "settled" in reply.json()["message"]
