"""Each passage's own conversation, as the mission runtime writes it: opened streaming
with the passage's input, what the passage says, settled at the end; people read it but
never write to it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from kalends.conversations import (
    Conversation,
    ConversationKind,
    ConversationState,
    MessageRole,
    conversation_of_passage,
    open_passage_conversation,
    passage_say,
    settle_passage_conversation,
)
from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound
from kalends.storage.mission_tables import PASSAGE_ID_LENGTH
from kalends.storage.testing import nothing_written

from .conftest import World, digest_of

PASSAGE = "psg_0123456789abcdef0123456789"


def opened(world: World, schedule_id: UUID, passage: str = PASSAGE, **overrides: Any) -> Any:
    arguments: dict[str, Any] = {
        "workspace_id": world.home.id,
        "schedule_id": schedule_id,
        "passage_id": passage,
        "title": "Morning report",
        "input_text": "Summarise yesterday's commits.",
    }
    arguments.update(overrides)
    with world.store.transaction() as conn:
        return open_passage_conversation(conn, world.clock.now(), **arguments)


def say(world: World, text: str, passage: str = PASSAGE, **kwargs: Any) -> Any:
    with world.store.transaction() as conn:
        return passage_say(conn, world.clock.now(), passage, text, **kwargs)


def settle(world: World, passage: str = PASSAGE) -> Conversation:
    with world.store.transaction() as conn:
        return settle_passage_conversation(conn, world.clock.now(), passage)


class TestOpen:
    def test_it_opens_streaming_with_the_input_as_its_first_message(self, world: World) -> None:
        schedule_id = world.schedule()
        now = world.clock.now()
        made = opened(world, schedule_id)
        assert made.kind is ConversationKind.PASSAGE
        assert made.state is ConversationState.STREAMING
        assert (made.workspace_id, made.schedule_id) == (world.home.id, schedule_id)
        assert (made.passage_id, made.created_by, made.title) == (PASSAGE, None, "Morning report")
        assert (made.last_seq, made.revision) == (1, 2)
        (first,) = world.conversations.messages(world.carol.id, made.id)
        assert (first.seq, first.role, first.complete) == (1, MessageRole.USER, True)
        assert (first.author_passage_id, first.author_actor_id) == (PASSAGE, None)
        assert first.text == "Summarise yesterday's commits."
        assert first.digest == digest_of("user", "Summarise yesterday's commits.")
        assert first.completed_at == now
        with world.store.transaction(write=False) as conn:
            assert conversation_of_passage(conn, PASSAGE) == made
            assert conversation_of_passage(conn, "psg_unknown") is None

    def test_opening_again_gives_the_same_conversation_and_writes_nothing(
        self, world: World
    ) -> None:
        schedule_id = world.schedule()
        first = opened(world, schedule_id)
        world.clock.advance(timedelta(minutes=1))
        with nothing_written(world.store):
            again = opened(world, schedule_id, input_text="another input")
        assert again == first

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"passage_id": ""}, "passage"),  # empty
            ({"passage_id": "p" * (PASSAGE_ID_LENGTH + 1)}, "passage"),  # too long
            ({"passage_id": 7}, "passage"),  # not text
            ({"title": ""}, "title"),  # empty title
            ({"title": "a\tb"}, "title"),  # a control character
            ({"input_text": ""}, "input_text"),  # empty input
            ({"input_text": "a\x00"}, "input_text"),  # NUL
        ],
    )
    def test_bad_input_is_refused_and_writes_nothing(
        self, world: World, overrides: dict[str, Any], field: str
    ) -> None:
        schedule_id = world.schedule()
        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            opened(world, schedule_id, **overrides)
        assert caught.value.field == field

    def test_a_passage_id_of_the_longest_length_is_kept(self, world: World) -> None:
        longest = "p" * PASSAGE_ID_LENGTH
        made = opened(world, world.schedule(), passage=longest)
        with world.store.transaction(write=False) as conn:
            assert conversation_of_passage(conn, longest) == made


class TestSay:
    def test_what_the_passage_says_follows_in_order(self, world: World) -> None:
        made = opened(world, world.schedule())
        world.clock.advance(timedelta(seconds=3))
        said = say(world, "Working on it.")
        note = say(world, "Checkpoint.", role="system")
        assert (said.seq, said.role, said.author_passage_id) == (2, MessageRole.ASSISTANT, PASSAGE)
        assert said.digest == digest_of("assistant", "Working on it.")
        assert (note.seq, note.role) == (3, MessageRole.SYSTEM)
        assert note.digest == digest_of("system", "Checkpoint.")
        assert said.completed_at == world.clock.now()
        after = world.conversations.get(world.alice.id, made.id)
        assert (after.last_seq, after.state) == (3, ConversationState.STREAMING)

    @pytest.mark.parametrize(
        ("text", "kwargs"),
        [
            ("", {}),  # empty
            ("a\x00", {}),  # NUL
            ("fine", {"role": "robot"}),  # no such role
            ("fine", {"complete": 1}),  # not a boolean
        ],
    )
    def test_bad_input_writes_nothing(
        self, world: World, text: str, kwargs: dict[str, Any]
    ) -> None:
        opened(world, world.schedule())
        with nothing_written(world.store), pytest.raises(InvalidInput):
            say(world, text, **kwargs)

    def test_a_passage_with_no_conversation_is_not_found(self, world: World) -> None:
        with nothing_written(world.store), pytest.raises(NotFound):
            say(world, "hello", passage="psg_nobody")


class TestSettle:
    def test_settling_completes_what_was_left_open_and_is_idempotent(self, world: World) -> None:
        made = opened(world, world.schedule())
        streaming = say(world, "Half a thou", complete=False)
        assert (streaming.complete, streaming.completed_at) == (False, None)
        world.clock.advance(timedelta(minutes=2))
        settled = settle(world)
        assert settled.state is ConversationState.SETTLED
        assert settled.updated_at == world.clock.now()
        last = world.conversations.messages(world.alice.id, made.id)[-1]
        assert (last.seq, last.complete, last.completed_at) == (2, True, world.clock.now())
        assert last.digest == streaming.digest
        world.clock.advance(timedelta(minutes=2))
        with nothing_written(world.store):
            assert settle(world) == settled

    def test_a_settled_conversation_takes_nothing_more(self, world: World) -> None:
        opened(world, world.schedule())
        settle(world)
        with nothing_written(world.store), pytest.raises(Conflict):
            say(world, "too late")

    def test_settling_a_passage_with_no_conversation_is_not_found(self, world: World) -> None:
        with nothing_written(world.store), pytest.raises(NotFound):
            settle(world, "psg_nobody")


class TestPeople:
    def test_members_read_it_and_nobody_writes_to_it(self, world: World) -> None:
        made = opened(world, world.schedule())
        streaming = say(world, "partial", complete=False)
        assert [c.id for c in world.conversations.list(world.carol.id, world.home.id)] == [made.id]
        with nothing_written(world.store):
            with pytest.raises(Conflict):
                world.conversations.post(world.alice.id, made.id, "hi")
            with pytest.raises(Forbidden):  # not its author
                world.conversations.append(world.alice.id, streaming.id, "more", 1)
            with pytest.raises(Forbidden):
                world.conversations.finish(world.bob.id, streaming.id, 1)
            with pytest.raises(NotFound):
                world.conversations.get(world.dave.id, made.id)
