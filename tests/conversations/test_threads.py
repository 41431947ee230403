"""Threads people create, read and post to: exact values, the role matrix, and bad
input that writes nothing."""

from __future__ import annotations

import hashlib
import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest

from kalends.conversations import (
    MAX_MESSAGE_CHARS,
    MAX_PAGE,
    MAX_TITLE,
    ConversationKind,
    ConversationState,
    MessageRole,
    placement_digest,
)
from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound
from kalends.storage.testing import nothing_written

from .conftest import World, digest_of


class TestCreate:
    def test_an_editor_creates_an_open_empty_thread_with_a_stripped_title(
        self, world: World
    ) -> None:
        now = world.clock.now()
        made = world.conversations.create(world.bob.id, world.home.id, "  Release plan \t")
        assert made.title == "Release plan"
        assert made.kind is ConversationKind.THREAD
        assert made.state is ConversationState.OPEN
        assert made.workspace_id == world.home.id
        assert made.created_by == world.bob.id
        assert (made.passage_id, made.schedule_id) == (None, None)
        assert (made.revision, made.last_seq) == (1, 0)
        assert made.created_at == made.updated_at == now
        assert world.conversations.get(world.carol.id, made.id) == made

    def test_its_json_is_camel_case_with_its_placement_digest(self, world: World) -> None:
        made = world.conversations.create("alice", str(world.home.id), "Plan")
        shown = made.to_json()
        assert shown["workspaceId"] == str(world.home.id)
        assert shown["lastSeq"] == 0
        assert shown["placementDigest"] == placement_digest(made)
        expected = hashlib.sha256(f"{made.id}\x00{world.home.id}".encode()).hexdigest()
        assert placement_digest(made) == expected
        assert shown["createdAt"].endswith("Z")
        assert shown["createdBy"] == str(world.alice.id)

    @pytest.mark.parametrize(
        "title",
        [
            "",  # empty
            "   ",  # only blanks
            "x" * (MAX_TITLE + 1),  # one over the bound
            "two\nlines",  # a control character
            "nul\x00",  # NUL
            None,  # not text
        ],
    )
    def test_a_bad_title_is_refused_and_writes_nothing(self, world: World, title: Any) -> None:
        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.conversations.create(world.alice.id, world.home.id, title)
        assert caught.value.field == "title"

    def test_a_title_of_exactly_the_bound_is_kept(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "t" * MAX_TITLE)
        assert len(made.title) == MAX_TITLE

    def test_a_viewer_is_forbidden_and_a_stranger_sees_no_workspace(self, world: World) -> None:
        with nothing_written(world.store):
            with pytest.raises(Forbidden):
                world.conversations.create(world.carol.id, world.home.id, "Plan")
            with pytest.raises(NotFound) as caught:
                world.conversations.create(world.dave.id, world.home.id, "Plan")
            assert caught.value.details["field"] == "workspace"

    def test_unknown_workspaces_and_actors_are_not_found_and_malformed_ids_invalid(
        self, world: World
    ) -> None:
        with nothing_written(world.store):
            with pytest.raises(NotFound):
                world.conversations.create(world.alice.id, uuid.uuid4(), "Plan")
            with pytest.raises(NotFound):
                world.conversations.create(uuid.uuid4(), world.home.id, "Plan")
            with pytest.raises(InvalidInput):
                world.conversations.create(world.alice.id, "not-an-id", "Plan")
            with pytest.raises(InvalidInput):
                world.conversations.create(world.alice.id, 42, "Plan")  # type: ignore[arg-type]


class TestListAndGet:
    def test_the_list_is_newest_activity_first(self, world: World) -> None:
        first = world.conversations.create(world.alice.id, world.home.id, "First")
        world.clock.advance(timedelta(seconds=1))
        second = world.conversations.create(world.alice.id, world.home.id, "Second")
        world.conversations.create(world.alice.id, world.away.id, "Elsewhere")
        assert [c.id for c in world.conversations.list(world.carol.id, world.home.id)] == [
            second.id,
            first.id,
        ]
        world.clock.advance(timedelta(seconds=1))
        world.conversations.post(world.bob.id, first.id, "bump")
        assert [c.id for c in world.conversations.list(world.carol.id, world.home.id)] == [
            first.id,
            second.id,
        ]

    def test_members_read_and_a_stranger_is_told_not_found(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        for reader in (world.alice, world.bob, world.carol):
            assert world.conversations.get(reader.id, made.id).id == made.id
            assert len(world.conversations.list(reader.id, world.home.id)) == 1
        with pytest.raises(NotFound) as caught:
            world.conversations.get(world.dave.id, made.id)
        assert caught.value.details["field"] == "conversation"
        with pytest.raises(NotFound):
            world.conversations.list(world.dave.id, world.home.id)
        # bob is no member of away: its conversations are as unknown as missing ones.
        elsewhere = world.conversations.create(world.alice.id, world.away.id, "Elsewhere")
        with pytest.raises(NotFound):
            world.conversations.get(world.bob.id, elsewhere.id)

    def test_the_list_gives_at_most_limit_of_the_newest(self, world: World) -> None:
        world.conversations.create(world.alice.id, world.home.id, "Older")
        world.clock.advance(timedelta(seconds=1))
        newer = world.conversations.create(world.alice.id, world.home.id, "Newer")
        assert world.conversations.list(world.alice.id, world.home.id, limit=1) == [newer]
        for limit in (0, MAX_PAGE + 1, True):  # under, over, not a count
            with pytest.raises(InvalidInput):
                world.conversations.list(world.alice.id, world.home.id, limit=limit)

    def test_an_unknown_or_malformed_conversation_is_refused(self, world: World) -> None:
        with pytest.raises(NotFound):
            world.conversations.get(world.alice.id, uuid.uuid4())
        with pytest.raises(InvalidInput):
            world.conversations.get(world.alice.id, "nope")
        with pytest.raises(InvalidInput):
            world.conversations.list(world.alice.id, "nope")


class TestPostAndRead:
    def test_posts_are_numbered_one_two_three_with_their_digests(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        world.clock.advance(timedelta(minutes=1))
        now = world.clock.now()
        texts = ["hello", "wörld ✓", "third"]
        posted = [world.conversations.post(world.bob.id, made.id, t) for t in texts]
        assert [m.seq for m in posted] == [1, 2, 3]
        assert [m.digest for m in posted] == [digest_of("user", t) for t in texts]
        first = posted[0]
        assert first.role is MessageRole.USER
        assert first.author_actor_id == world.bob.id
        assert first.author_passage_id is None
        assert first.complete is True
        assert first.revision == 1
        assert first.created_at == first.updated_at == first.completed_at == now
        assert world.conversations.messages(world.carol.id, made.id) == posted
        after = world.conversations.get(world.carol.id, made.id)
        assert (after.last_seq, after.revision, after.updated_at) == (3, 4, now)

    def test_an_incomplete_post_has_no_completion_time(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        draft = world.conversations.post(world.bob.id, made.id, "typing", complete=False)
        assert (draft.complete, draft.completed_at) == (False, None)
        assert draft.to_json()["completedAt"] is None

    def test_pages_after_a_cursor_ascend_by_seq(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        for n in range(5):
            world.conversations.post(world.alice.id, made.id, f"m{n}")
        page = world.conversations.messages(world.alice.id, made.id, after_seq=1, limit=2)
        assert [(m.seq, m.text) for m in page] == [(2, "m1"), (3, "m2")]
        rest = world.conversations.messages(world.alice.id, made.id, after_seq=3)
        assert [m.seq for m in rest] == [4, 5]
        assert world.conversations.messages(world.alice.id, made.id, after_seq=5) == []

    def test_the_longest_message_is_kept_whole(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        text = "é" * MAX_MESSAGE_CHARS
        posted = world.conversations.post(world.alice.id, made.id, text)
        assert world.conversations.messages(world.alice.id, made.id)[0].text == text
        assert posted.digest == digest_of("user", text)

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"text": ""}, "text"),  # empty
            ({"text": "x" * (MAX_MESSAGE_CHARS + 1)}, "text"),  # one over the bound
            ({"text": "a\x00b"}, "text"),  # NUL
            ({"text": None}, "text"),  # not text
            ({"text": "\ud800"}, "text"),  # a lone surrogate is not text
            ({"text": "hi", "role": "robot"}, "role"),  # no such role
            ({"text": "hi", "role": "assistant"}, "role"),  # a person posts as user only
            ({"text": "hi", "role": "system"}, "role"),  # likewise
            ({"text": "hi", "complete": "yes"}, "complete"),  # not a boolean
        ],
    )
    def test_bad_posts_are_refused_and_write_nothing(
        self, world: World, kwargs: dict[str, Any], field: str
    ) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.conversations.post(world.bob.id, made.id, **kwargs)
        assert caught.value.field == field

    def test_the_role_matrix_of_posting(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        assert world.conversations.post(world.alice.id, made.id, "owner").seq == 1
        assert world.conversations.post(world.bob.id, made.id, "editor").seq == 2
        with nothing_written(world.store):
            with pytest.raises(Forbidden):
                world.conversations.post(world.carol.id, made.id, "viewer")
            with pytest.raises(NotFound):
                world.conversations.post(world.dave.id, made.id, "stranger")
            with pytest.raises(NotFound):
                world.conversations.post(world.alice.id, uuid.uuid4(), "nowhere")
            with pytest.raises(InvalidInput):
                world.conversations.post(world.alice.id, "nope", "malformed")

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"limit": 0},  # under the bound
            {"limit": MAX_PAGE + 1},  # over the bound
            {"limit": True},  # a boolean is no count
            {"after_seq": -1},  # before the first
            {"after_seq": "3"},  # not a number
        ],
    )
    def test_bad_pages_are_refused(self, world: World, kwargs: dict[str, Any]) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        with pytest.raises(InvalidInput):
            world.conversations.messages(world.alice.id, made.id, **kwargs)

    def test_reading_messages_follows_the_role_matrix(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Plan")
        world.conversations.post(world.alice.id, made.id, "hello")
        for reader in (world.alice, world.bob, world.carol):
            assert len(world.conversations.messages(reader.id, made.id, limit=MAX_PAGE)) == 1
        with pytest.raises(NotFound):
            world.conversations.messages(world.dave.id, made.id)

    def test_a_person_cannot_post_to_a_passage_conversation(self, world: World) -> None:
        from kalends.conversations import open_passage_conversation  # noqa: PLC0415

        schedule_id = world.schedule()
        with world.store.transaction() as conn:
            opened = open_passage_conversation(
                conn,
                world.clock.now(),
                workspace_id=world.home.id,
                schedule_id=schedule_id,
                passage_id="psg_0001",
                title="Morning report",
                input_text="Summarise.",
            )
        with nothing_written(world.store), pytest.raises(Conflict) as caught:
            world.conversations.post(world.alice.id, opened.id, "may I?")
        assert "passage" in str(caught.value)


class TestConcurrentPosts:
    def test_writers_at_once_get_distinct_consecutive_seqs(self, world: World) -> None:
        made = world.conversations.create(world.alice.id, world.home.id, "Busy")
        errors: list[BaseException] = []
        barrier = threading.Barrier(2)

        def writer(who: str) -> None:
            try:
                barrier.wait(5)
                for n in range(8):
                    world.conversations.post(who, made.id, f"{who} {n}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(who,)) for who in ("alice", "bob")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        listed = world.conversations.messages(world.carol.id, made.id)
        assert [m.seq for m in listed] == list(range(1, 17))
        assert world.conversations.get(world.carol.id, made.id).last_seq == 16
