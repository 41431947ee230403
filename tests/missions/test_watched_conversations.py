"""Watched conversations (seed 002 "Settlement, result and watched cursors"): a schedule's
``watch`` hands each passage, per source in order, at most 32 stable new messages after
the schedule's cursor, frozen with its reservation; only a ``completed`` settlement
advances the cursors; a message still being written ends a batch; one that does not fit
the 16,384-character start text is an unconsumed ``source-input-capacity`` reference; a
moved source fails closed; a removed watch keeps its cursor; the configuration refuses
what cannot be watched and more than 64 remembered conversations. Both databases, the
real scheduler on the in-memory runtime."""

from __future__ import annotations

import json
import uuid
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import insert

from kalends.conversations import Conversation, WatchCursor
from kalends.errors import InvalidInput, LimitReached
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.testing import nothing_written
from kalends.storage.watch_tables import watch_cursors
from missions.condition_support import settle
from missions.conftest import MissionWorld
from missions.scheduler_support import create, stored_body

DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}


class Watching:
    """A schedule of home (paused: passages by Run now) watching ``sources``."""

    def __init__(self, mw: MissionWorld, sources: list[Conversation], tag: str) -> None:
        self.mw = mw
        self.sid = create(mw, DAILY, f"create-watch-{tag}", watch=[str(c.id) for c in sources])
        self.runtime = MemoryRuntime(clock=mw.clock)
        self.scheduler = Scheduler(mw.store, self.runtime, owner="s1")
        self.runs = 0

    def passage(self) -> dict[str, Any]:
        """A Run now, started: the input it was given."""
        self.runs += 1
        rev = self.mw.schedules.detail(self.mw.bob.id, self.sid)["revision"]
        self.mw.schedules.run_now(
            self.mw.bob.id, self.sid, request_id=f"run-watch-{self.runs}", expected_revision=rev
        )
        self.scheduler.run_once()
        pending = stored_body(self.mw.store, self.sid).pending
        assert pending is not None
        given: dict[str, Any] = self.runtime.started(pending.session_id).input
        return given

    def settle(self, outcome: str) -> None:
        settle(self.mw, self.scheduler, self.runtime, self.sid, outcome)

    def configure(self, **changes: Any) -> None:
        rev = self.mw.schedules.detail(self.mw.bob.id, self.sid)["revision"]
        self.mw.schedules.configure(
            self.mw.bob.id,
            self.sid,
            changes,
            request_id=f"edit-watch-{uuid.uuid4().hex[:8]}",
            expected_revision=rev,
        )


def _thread(mw: MissionWorld, title: str, messages: int = 0) -> Conversation:
    made = mw.services.conversations.create(mw.bob.id, mw.home.id, title)
    for n in range(1, messages + 1):
        mw.services.conversations.post(mw.bob.id, made.id, f"{title} {n}")
    return mw.services.conversations.get(mw.bob.id, made.id)


def _seqs(given: dict[str, Any], source: int = 0) -> list[int]:
    texts = [m["text"] for m in given["watched"][source]["messages"]]
    return [int(t.rsplit(" ", 1)[1]) for t in texts]


def test_batches_of_32_advance_only_on_completed(mw: MissionWorld) -> None:
    thread = _thread(mw, "notes", 40)
    w = Watching(mw, [thread], "batches")

    first = w.passage()
    [source] = first["watched"]
    assert source["conversationId"] == str(thread.id)
    assert (source["stop"], source["failure"], source["needsDecision"]) == ("limit", None, None)
    assert _seqs(first) == list(range(1, 33))
    assert set(source["messages"][0]) == {"messageId", "type", "digest", "completedAt", "text"}
    assert source["messages"][0]["type"] == "user"
    # The passage's conversation starts with what it was handed.
    passage_id = first["passageId"]
    [conversation] = [
        c
        for c in mw.services.conversations.list(mw.bob.id, mw.home.id)
        if c.passage_id == passage_id
    ]
    opening = mw.services.conversations.messages(mw.bob.id, conversation.id, limit=1)[0].text
    assert f"Watched conversation {thread.id}: 32 new message(s)." in opening
    assert '"text":"notes 32"' in opening and "notes 33" not in opening

    w.settle("failed")  # failed: the cursor stays
    assert _seqs(w.passage()) == list(range(1, 33))
    w.settle("completed")
    second = w.passage()
    assert _seqs(second) == list(range(33, 41))
    assert second["watched"][0]["stop"] == "end"
    w.settle("completed")
    assert _seqs(w.passage()) == []


def test_a_message_still_being_written_ends_the_batch(mw: MissionWorld) -> None:
    thread = _thread(mw, "draft", 2)
    half = mw.services.conversations.post(mw.bob.id, thread.id, "draft 3", complete=False)
    mw.services.conversations.post(mw.bob.id, thread.id, "draft 4")
    w = Watching(mw, [thread], "writing")
    given = w.passage()
    assert _seqs(given) == [1, 2]
    assert given["watched"][0]["stop"] == "streaming"
    w.settle("completed")
    mw.services.conversations.finish(mw.bob.id, half.id, half.revision)
    assert _seqs(w.passage()) == [3, 4]


def test_a_message_that_does_not_fit_is_an_unconsumed_reference(mw: MissionWorld) -> None:
    thread = _thread(mw, "big", 1)
    mw.services.conversations.post(mw.bob.id, thread.id, "x" * 16_000)
    w = Watching(mw, [thread], "capacity")
    given = w.passage()
    source = given["watched"][0]
    assert _seqs(given) == [1]
    assert source["stop"] == "capacity"
    ref = source["needsDecision"]
    assert (ref["needsDecision"], ref["text"]) == ("source-input-capacity", "")
    w.settle("completed")
    # Not consumed: the next passage meets it again.
    again = w.passage()["watched"][0]
    assert again["messages"] == [] and again["needsDecision"]["messageId"] == ref["messageId"]


def test_a_moved_source_fails_closed_and_a_removed_watch_keeps_its_cursor(
    mw: MissionWorld,
) -> None:
    kept, moved = _thread(mw, "kept", 3), _thread(mw, "moved", 2)
    w = Watching(mw, [kept, moved], "moved")
    w.passage()
    w.settle("completed")
    mw.services.conversations.post(mw.bob.id, kept.id, "kept 4")
    # alice owns both workspaces; the source moves away.
    away_owner = mw.services.workspaces.set_member(mw.dave.id, mw.away.id, mw.alice.id, "owner")
    assert away_owner.role.value == "owner"
    current = mw.services.conversations.get(mw.alice.id, moved.id)
    mw.services.conversations.move(mw.alice.id, moved.id, mw.away.id, current.revision)
    given = w.passage()
    assert _seqs(given, 0) == [4]
    failed = given["watched"][1]
    assert (failed["failure"], failed["messages"]) == ("source-moved", [])
    w.settle("completed")

    # Removed and added again: the watch goes on from its cursor.
    w.configure(watch=[])
    mw.services.conversations.post(mw.bob.id, kept.id, "kept 5")
    assert w.passage()["watched"] is None
    w.settle("completed")
    w.configure(watch=[str(kept.id)])
    assert _seqs(w.passage()) == [5]


def test_what_cannot_be_watched_is_refused_and_nothing_is_written(mw: MissionWorld) -> None:
    home = _thread(mw, "home thread")
    away = mw.services.conversations.create(mw.dave.id, mw.away.id, "away thread")
    cases: list[tuple[Any, str]] = [
        ("not-a-list", "watch"),
        (["nope"], "watch[0]"),
        ([str(home.id), str(home.id)], "watch[1]"),
        ([str(uuid.uuid4()) for _ in range(65)], "watch"),
        ([str(uuid.uuid4())], "watch[0]"),
        ([str(home.id), str(away.id)], "watch[1]"),
    ]
    for watch, field in cases:
        with nothing_written(mw.store), pytest.raises(InvalidInput) as refused:
            create(mw, DAILY, f"create-bad-{uuid.uuid4().hex[:8]}", watch=watch)
        assert refused.value.field == field, (watch, refused.value.message)

    # A schedule never watches its own passages' conversations.
    w = Watching(mw, [home], "own")
    given = w.passage()
    w.settle("completed")
    [own] = [
        c
        for c in mw.services.conversations.list(mw.bob.id, mw.home.id)
        if c.passage_id == given["passageId"]
    ]
    with nothing_written(mw.store), pytest.raises(InvalidInput, match="own passages"):
        w.configure(watch=[str(home.id), str(own.id)])
    # Another schedule may watch it.
    Watching(mw, [own], "other")


def test_more_than_64_remembered_conversations_are_refused(mw: MissionWorld) -> None:
    threads = [_thread(mw, f"t{i}") for i in range(2)]
    w = Watching(mw, [threads[0]], "remembered")
    # 63 cursors kept from watches removed long ago (written as a settlement writes them).
    with mw.store.transaction() as conn:
        conn.execute(
            insert(watch_cursors),
            [
                {
                    "schedule_id": w.sid,
                    "conversation_id": gone,
                    "cursor": json.dumps(
                        WatchCursor(
                            conversation_id=gone,
                            message_id=None,
                            seq=0,
                            digest=None,
                            placement="0" * 64,
                        ).to_json()
                    ),
                    "updated_at": mw.clock.now(),
                }
                for gone in (uuid.uuid4() for _ in range(63))
            ],
        )
    with nothing_written(mw.store), pytest.raises(LimitReached, match="remember 65"):
        w.configure(watch=[str(t.id) for t in threads])
    w.configure(watch=[str(threads[0].id)])  # 64: within the ceiling


def test_the_watch_is_shown_in_the_configuration(mw: MissionWorld) -> None:
    thread = _thread(mw, "shown")
    w = Watching(mw, [thread], "shown")
    detail = mw.services.schedules.detail(mw.bob.id, w.sid)
    assert detail["watch"] == [str(thread.id)]
    assert UUID(detail["watch"][0]) == thread.id
