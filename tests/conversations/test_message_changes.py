"""Changing messages and conversations: streaming a message (append, finish), editing,
deleting and moving, each by whom it allows, and every refusal writing nothing."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from kalends.conversations import MAX_MESSAGE_CHARS, Conversation, Message, placement_digest
from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound, RevisionConflict
from kalends.storage.testing import nothing_written

from .conftest import World, digest_of


def thread(world: World) -> Conversation:
    return world.conversations.create(world.alice.id, world.home.id, "Plan")


def draft(world: World, text: str = "Hel") -> Message:
    """An incomplete message of bob's in a new thread."""
    return world.conversations.post(world.bob.id, thread(world).id, text, complete=False)


class TestAppendAndFinish:
    def test_the_author_streams_a_message_then_finishes_it(self, world: World) -> None:
        started = draft(world)
        world.clock.advance(timedelta(seconds=5))
        grown = world.conversations.append(world.bob.id, started.id, "lo, ", 1)
        grown = world.conversations.append(world.bob.id, started.id, "world", grown.revision)
        assert (grown.text, grown.revision, grown.complete) == ("Hello, world", 3, False)
        assert grown.digest == digest_of("user", "Hello, world")
        assert (grown.seq, grown.completed_at) == (started.seq, None)
        world.clock.advance(timedelta(seconds=5))
        done = world.conversations.finish(world.bob.id, started.id, grown.revision)
        assert (done.complete, done.completed_at, done.revision) == (True, world.clock.now(), 4)
        assert done.digest == grown.digest
        assert world.conversations.messages(world.carol.id, done.conversation_id) == [done]
        # every change is activity of the conversation
        after = world.conversations.get(world.bob.id, done.conversation_id)
        assert (after.revision, after.updated_at, after.last_seq) == (5, world.clock.now(), 1)

    def test_a_complete_message_takes_no_more_text_and_is_not_finished_again(
        self, world: World
    ) -> None:
        posted = world.conversations.post(world.bob.id, thread(world).id, "done")
        with nothing_written(world.store):
            with pytest.raises(Conflict):
                world.conversations.append(world.bob.id, posted.id, "more", 1)
            with pytest.raises(Conflict):
                world.conversations.finish(world.bob.id, posted.id, 1)

    def test_only_the_author_appends_or_finishes_even_an_owner_is_forbidden(
        self, world: World
    ) -> None:
        started = draft(world)
        with nothing_written(world.store):
            for other in (world.alice, world.carol):
                with pytest.raises(Forbidden):
                    world.conversations.append(other.id, started.id, "x", 1)
                with pytest.raises(Forbidden):
                    world.conversations.finish(other.id, started.id, 1)
            with pytest.raises(NotFound):
                world.conversations.append(world.dave.id, started.id, "x", 1)
            with pytest.raises(NotFound):
                world.conversations.finish(world.dave.id, started.id, 1)

    def test_an_author_demoted_to_viewer_writes_no_more(self, world: World) -> None:
        started = draft(world)
        world.services.workspaces.set_member(world.alice.id, world.home.id, world.bob.id, "viewer")
        with nothing_written(world.store), pytest.raises(Forbidden):
            world.conversations.append(world.bob.id, started.id, "x", 1)

    @pytest.mark.parametrize(
        ("text", "revision", "error"),
        [
            ("", 1, InvalidInput),  # empty piece
            ("a\x00", 1, InvalidInput),  # NUL
            ("x" * (MAX_MESSAGE_CHARS - 2), 1, InvalidInput),  # the whole would pass the bound
            ("x", "1", InvalidInput),  # a revision is a number
            ("x", True, InvalidInput),  # a boolean is no revision
            ("x", 2, RevisionConflict),  # stale
            ("x", 0, RevisionConflict),  # stale
        ],
    )
    def test_bad_appends_write_nothing(
        self, world: World, text: str, revision: Any, error: type[Exception]
    ) -> None:
        started = draft(world)
        with nothing_written(world.store), pytest.raises(error):
            world.conversations.append(world.bob.id, started.id, text, revision)

    def test_an_append_that_fills_the_message_exactly_is_kept(self, world: World) -> None:
        started = draft(world)
        filled = world.conversations.append(
            world.bob.id, started.id, "x" * (MAX_MESSAGE_CHARS - 3), 1
        )
        assert len(filled.text) == MAX_MESSAGE_CHARS

    def test_unknown_and_malformed_messages_and_stale_finishes_are_refused(
        self, world: World
    ) -> None:
        started = draft(world)
        with nothing_written(world.store):
            with pytest.raises(NotFound):
                world.conversations.append(world.bob.id, uuid.uuid4(), "x", 1)
            with pytest.raises(InvalidInput):
                world.conversations.finish(world.bob.id, "nope", 1)
            with pytest.raises(RevisionConflict) as caught:
                world.conversations.finish(world.bob.id, started.id, 7)
        assert (caught.value.expected, caught.value.actual) == (7, 1)


class TestEdit:
    def test_an_edit_changes_the_digest_and_revision_not_the_seq(self, world: World) -> None:
        made = thread(world)
        world.conversations.post(world.bob.id, made.id, "first")
        second = world.conversations.post(world.bob.id, made.id, "secnod")
        world.clock.advance(timedelta(minutes=1))
        edited = world.conversations.edit(world.bob.id, second.id, "second", 1)
        assert (edited.seq, edited.id, edited.revision) == (2, second.id, 2)
        assert edited.digest == digest_of("user", "second") != second.digest
        assert (edited.completed_at, edited.updated_at) == (second.completed_at, world.clock.now())

    def test_the_same_text_gives_the_same_digest(self, world: World) -> None:
        posted = world.conversations.post(world.bob.id, thread(world).id, "same")
        edited = world.conversations.edit(world.bob.id, posted.id, "same", 1)
        assert edited.digest == posted.digest
        assert edited.revision == 2

    def test_an_owner_edits_anyones_message_others_only_their_own(self, world: World) -> None:
        made = thread(world)
        mine = world.conversations.post(world.alice.id, made.id, "alice's")
        theirs = world.conversations.post(world.bob.id, made.id, "bob's")
        assert world.conversations.edit(world.alice.id, theirs.id, "moderated", 1).text == (
            "moderated"
        )
        with nothing_written(world.store):
            with pytest.raises(Forbidden):
                world.conversations.edit(world.bob.id, mine.id, "hijacked", 1)
            with pytest.raises(Forbidden):
                world.conversations.edit(world.carol.id, mine.id, "viewer", 1)
            with pytest.raises(NotFound):
                world.conversations.edit(world.dave.id, mine.id, "stranger", 1)

    @pytest.mark.parametrize(
        ("text", "revision", "error"),
        [
            ("", 1, InvalidInput),  # empty
            ("x" * (MAX_MESSAGE_CHARS + 1), 1, InvalidInput),  # over the bound
            ("a\x00", 1, InvalidInput),  # NUL
            ("fine", 2, RevisionConflict),  # stale
        ],
    )
    def test_bad_edits_write_nothing(
        self, world: World, text: str, revision: int, error: type[Exception]
    ) -> None:
        posted = world.conversations.post(world.bob.id, thread(world).id, "text")
        with nothing_written(world.store), pytest.raises(error):
            world.conversations.edit(world.bob.id, posted.id, text, revision)


class TestDelete:
    def test_a_deleted_seq_is_never_handed_out_again(self, world: World) -> None:
        made = thread(world)
        world.conversations.post(world.bob.id, made.id, "one")
        two = world.conversations.post(world.bob.id, made.id, "two")
        three = world.conversations.post(world.bob.id, made.id, "three")
        world.conversations.delete(world.bob.id, three.id, 1)
        world.conversations.delete(world.alice.id, two.id, 1)  # an owner deletes anyone's
        four = world.conversations.post(world.bob.id, made.id, "four")
        assert four.seq == 4
        listed = world.conversations.messages(world.carol.id, made.id)
        assert [(m.seq, m.text) for m in listed] == [(1, "one"), (4, "four")]
        assert world.conversations.get(world.carol.id, made.id).last_seq == 4

    def test_refused_deletes_write_nothing(self, world: World) -> None:
        made = thread(world)
        mine = world.conversations.post(world.alice.id, made.id, "alice's")
        with nothing_written(world.store):
            with pytest.raises(Forbidden):
                world.conversations.delete(world.bob.id, mine.id, 1)
            with pytest.raises(Forbidden):
                world.conversations.delete(world.carol.id, mine.id, 1)
            with pytest.raises(NotFound):
                world.conversations.delete(world.dave.id, mine.id, 1)
            with pytest.raises(NotFound):
                world.conversations.delete(world.alice.id, uuid.uuid4(), 1)
            with pytest.raises(InvalidInput):
                world.conversations.delete(world.alice.id, "nope", 1)
            with pytest.raises(InvalidInput):
                world.conversations.delete(world.alice.id, mine.id, None)  # type: ignore[arg-type]
            with pytest.raises(RevisionConflict):
                world.conversations.delete(world.alice.id, mine.id, 2)

    def test_a_deleted_message_is_not_found_afterwards(self, world: World) -> None:
        posted = world.conversations.post(world.bob.id, thread(world).id, "gone")
        world.conversations.delete(world.bob.id, posted.id, 1)
        with pytest.raises(NotFound):
            world.conversations.edit(world.bob.id, posted.id, "back", 1)


class TestMove:
    def test_an_owner_of_both_moves_it_and_its_placement_digest_changes(self, world: World) -> None:
        made = thread(world)
        posted = world.conversations.post(world.bob.id, made.id, "hello")
        before = world.conversations.get(world.alice.id, made.id)
        world.clock.advance(timedelta(minutes=1))
        moved = world.conversations.move(world.alice.id, made.id, world.away.id, before.revision)
        assert moved.workspace_id == world.away.id
        assert (moved.revision, moved.updated_at) == (before.revision + 1, world.clock.now())
        assert placement_digest(moved) != placement_digest(before)
        assert placement_digest(moved) == placement_digest(
            world.conversations.get(world.alice.id, made.id)
        )
        assert [c.id for c in world.conversations.list(world.alice.id, world.away.id)] == [made.id]
        assert world.conversations.list(world.alice.id, world.home.id) == []
        # the messages go with it, unchanged; bob is no member of away
        assert world.conversations.messages(world.alice.id, made.id) == [posted]
        with pytest.raises(NotFound):
            world.conversations.get(world.bob.id, made.id)

    def test_a_move_needs_the_owner_role_on_both_workspaces(self, world: World) -> None:
        made = thread(world)
        (world.root / "bobs").mkdir()
        bobs = world.services.workspaces.add(world.bob.id, world.root / "bobs", "bobs")
        with nothing_written(world.store):
            with pytest.raises(Forbidden):  # bob edits home, owns bobs
                world.conversations.move(world.bob.id, made.id, bobs.id, 1)
            with pytest.raises(Forbidden):
                world.conversations.move(world.carol.id, made.id, world.away.id, 1)
            with pytest.raises(NotFound):
                world.conversations.move(world.dave.id, made.id, world.away.id, 1)
            with pytest.raises(NotFound) as caught:  # alice is no member of bobs
                world.conversations.move(world.alice.id, made.id, bobs.id, 1)
            assert caught.value.details["field"] == "workspace"

    def test_bad_moves_write_nothing(self, world: World) -> None:
        made = thread(world)
        with nothing_written(world.store):
            with pytest.raises(RevisionConflict):
                world.conversations.move(world.alice.id, made.id, world.away.id, 2)
            with pytest.raises(InvalidInput):  # already there
                world.conversations.move(world.alice.id, made.id, world.home.id, 1)
            with pytest.raises(NotFound):
                world.conversations.move(world.alice.id, made.id, uuid.uuid4(), 1)
            with pytest.raises(NotFound):
                world.conversations.move(world.alice.id, uuid.uuid4(), world.away.id, 1)
            with pytest.raises(InvalidInput):
                world.conversations.move(world.alice.id, made.id, "nope", 1)
            with pytest.raises(InvalidInput):
                world.conversations.move(world.alice.id, made.id, world.away.id, 1.0)  # type: ignore[arg-type]
