"""Reading a watched conversation after its cursor: the stable complete-message prefix,
the anchor and placement checks, the projection, the start input's budget and the
cursors after a completed passage."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import delete, update
from sqlalchemy.engine import Connection

from kalends.conversations import (
    Conversation,
    Message,
    open_passage_conversation,
    passage_say,
)
from kalends.conversations import watch as watch_module
from kalends.conversations.records import read_message, read_messages
from kalends.conversations.watch import (
    MAX_MESSAGES_PER_SOURCE,
    MAX_START_CHARS,
    RESERVE_PER_WATCH,
    SourceRead,
    WatchCursor,
    advance,
    read_source,
    read_sources,
)
from kalends.errors import InvalidInput
from kalends.storage.conversation_tables import conversation_messages, conversations

from .conftest import World, digest_of

START = "2025-03-01T12:00:00Z"


def thread(world: World, title: str = "Plan") -> Conversation:
    return world.conversations.create(world.alice.id, world.home.id, title)


def post(world: World, conversation: Conversation, text: str, *, complete: bool = True) -> Message:
    return world.conversations.post(world.bob.id, conversation.id, text, complete=complete)


def read(
    world: World, conversation_id: UUID, cursor: WatchCursor | None, room: int = MAX_START_CHARS
) -> SourceRead:
    return world.store.run(
        lambda conn: read_source(conn, conversation_id, cursor, room), write=False
    )


def write(world: World, fn: Callable[[Connection], Any]) -> None:
    world.store.run(fn)


def shown(message_id: UUID, text: str, *, kind: str = "user", role: str = "user") -> dict[str, Any]:
    """The projection of a message written at the fake clock's start, built here."""
    return {
        "messageId": str(message_id),
        "type": kind,
        "digest": digest_of(role, text),
        "completedAt": START,
        "text": text,
    }


def size(projected: dict[str, Any]) -> int:
    """The documented measure: the length of the compact JSON, characters not escaped."""
    return len(json.dumps(projected, separators=(",", ":"), ensure_ascii=False))


def placement_of(world: World, conversation: Conversation) -> str:
    return str(
        world.conversations.get(world.alice.id, conversation.id).to_json()["placementDigest"]
    )


def texts(result: SourceRead) -> list[str]:
    return [m["text"] for m in result.messages]


class TestPrefix:
    def test_forty_messages_are_read_thirty_two_then_the_next_eight(self, world: World) -> None:
        plan = thread(world)
        posted = [post(world, plan, f"note {n:02d}") for n in range(1, 41)]
        first = read(world, plan.id, None)
        assert texts(first) == [f"note {n:02d}" for n in range(1, MAX_MESSAGES_PER_SOURCE + 1)]
        assert (first.stop, first.failure, first.needs_decision) == ("limit", None, None)
        assert first.next_cursor == WatchCursor(
            conversation_id=plan.id,
            message_id=posted[31].id,
            seq=32,
            digest=digest_of("user", "note 32"),
            placement=placement_of(world, plan),
        )
        assert first.used == sum(size(m) for m in first.messages)
        cursors = advance({plan.id: None}, [first])
        second = read(world, plan.id, cursors[plan.id])
        assert texts(second) == [f"note {n:02d}" for n in range(33, 41)]
        assert second.stop == "end"
        assert second.next_cursor is not None
        assert (second.next_cursor.message_id, second.next_cursor.seq) == (posted[39].id, 40)
        # nothing new: the cursor stays where it is
        third = read(world, plan.id, second.next_cursor)
        assert (third.messages, third.stop, third.used) == ((), "end", 0)
        assert third.next_cursor == second.next_cursor

    def test_a_first_read_of_an_empty_conversation_pins_its_placement(self, world: World) -> None:
        plan = thread(world)
        result = read(world, plan.id, None)
        assert (result.messages, result.stop, result.failure) == ((), "end", None)
        assert result.next_cursor == WatchCursor(
            conversation_id=plan.id,
            message_id=None,
            seq=0,
            digest=None,
            placement=placement_of(world, plan),
        )

    def test_a_message_being_written_ends_the_batch_until_it_is_finished(
        self, world: World
    ) -> None:
        plan = thread(world)
        one = post(world, plan, "one")
        draft = post(world, plan, "tw", complete=False)
        post(world, plan, "three")
        first = read(world, plan.id, None)
        assert (texts(first), first.stop) == (["one"], "streaming")
        assert first.next_cursor is not None and first.next_cursor.message_id == one.id
        grown = world.conversations.append(world.bob.id, draft.id, "o", 1)
        still = read(world, plan.id, first.next_cursor)
        assert (still.messages, still.stop, still.next_cursor) == (
            (),
            "streaming",
            first.next_cursor,
        )
        world.conversations.finish(world.bob.id, draft.id, grown.revision)
        second = read(world, plan.id, first.next_cursor)
        assert (texts(second), second.stop) == (["two", "three"], "end")

    def test_a_message_edited_after_the_cursor_is_read_with_its_new_text(
        self, world: World
    ) -> None:
        plan = thread(world)
        post(world, plan, "one")
        cursor = read(world, plan.id, None).next_cursor
        two = post(world, plan, "two")
        world.conversations.edit(world.bob.id, two.id, "two, corrected", 1)
        result = read(world, plan.id, cursor)
        assert result.messages == (shown(two.id, "two, corrected"),)
        assert result.failure is None

    def test_a_torn_message_defers_itself_and_every_later_one(self, world: World) -> None:
        plan = thread(world)
        one = post(world, plan, "one")
        two = post(world, plan, "two")
        post(world, plan, "three")
        M = conversation_messages.c
        # the text changed but its digest did not: a torn write
        write(
            world,
            lambda conn: conn.execute(
                update(conversation_messages).where(M.id == two.id).values(text="tw0")
            ),
        )
        result = read(world, plan.id, None)
        assert (texts(result), result.stop, result.failure) == (["one"], "changed", None)
        assert result.next_cursor is not None and result.next_cursor.message_id == one.id
        # once mended, it and those after it are read
        write(
            world,
            lambda conn: conn.execute(
                update(conversation_messages).where(M.id == two.id).values(text="two")
            ),
        )
        again = read(world, plan.id, result.next_cursor)
        assert (texts(again), again.stop) == (["two", "three"], "end")

    def test_a_message_changed_between_the_query_and_its_point_read_is_deferred(
        self, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        plan = thread(world)
        post(world, plan, "one")
        two = post(world, plan, "two")
        post(world, plan, "three")

        def rewritten(conn: Connection, message_id: UUID, *, lock: bool = False) -> Message | None:
            found = read_message(conn, message_id, lock=lock)
            if found is not None and found.id == two.id:
                found = Message.from_row(_row(found, text="deux", digest=digest_of("user", "deux")))
            return found

        monkeypatch.setattr(watch_module, "read_message", rewritten)
        result = read(world, plan.id, None)
        assert (texts(result), result.stop, result.failure) == (["one"], "changed", None)

    def test_a_message_found_in_another_conversation_on_its_point_read_fails_the_read(
        self, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        plan = thread(world)
        post(world, plan, "one")
        two = post(world, plan, "two")
        elsewhere = uuid.uuid4()

        def moved(conn: Connection, message_id: UUID, *, lock: bool = False) -> Message | None:
            found = read_message(conn, message_id, lock=lock)
            if found is not None and found.id == two.id:
                found = Message.from_row(_row(found, conversation_id=elsewhere))
            return found

        monkeypatch.setattr(watch_module, "read_message", moved)
        result = read(world, plan.id, None)
        assert (result.messages, result.next_cursor, result.stop) == ((), None, "failed")
        assert (result.failure, result.used, result.needs_decision) == ("message-moved", 0, None)


def _row(message: Message, **changes: Any) -> Any:
    """A stand-in row of the message with ``changes``, as :meth:`Message.from_row` reads."""
    fields = {
        "id": message.id,
        "conversation_id": message.conversation_id,
        "seq": message.seq,
        "role": message.role.value,
        "author_actor_id": message.author_actor_id,
        "author_passage_id": message.author_passage_id,
        "text": message.text,
        "digest": message.digest,
        "complete": message.complete,
        "revision": message.revision,
        "created_at": message.created_at,
        "updated_at": message.updated_at,
        "completed_at": message.completed_at,
    }
    fields.update(changes)
    return type("Row", (), fields)()


class TestAnchorAndPlacement:
    def cursor_after_one(self, world: World) -> tuple[Conversation, Message, WatchCursor]:
        plan = thread(world)
        one = post(world, plan, "one")
        cursor = read(world, plan.id, None).next_cursor
        assert cursor is not None and cursor.message_id == one.id
        post(world, plan, "two")
        return plan, one, cursor

    def assert_failed(self, result: SourceRead, failure: str) -> None:
        assert (result.failure, result.stop) == (failure, "failed")
        assert (result.messages, result.next_cursor, result.needs_decision, result.used) == (
            (),
            None,
            None,
            0,
        )

    def test_a_rewritten_anchor_fails_the_read(self, world: World) -> None:
        plan, one, cursor = self.cursor_after_one(world)
        world.conversations.edit(world.bob.id, one.id, "one, corrected", 1)
        self.assert_failed(read(world, plan.id, cursor), "anchor-rewritten")

    def test_an_anchor_torn_in_place_is_rewritten(self, world: World) -> None:
        plan, one, cursor = self.cursor_after_one(world)
        M = conversation_messages.c
        write(
            world,
            lambda conn: conn.execute(
                update(conversation_messages).where(M.id == one.id).values(text="0ne")
            ),
        )
        self.assert_failed(read(world, plan.id, cursor), "anchor-rewritten")

    def test_a_deleted_anchor_fails_the_read(self, world: World) -> None:
        plan, one, cursor = self.cursor_after_one(world)
        world.conversations.delete(world.bob.id, one.id, 1)
        self.assert_failed(read(world, plan.id, cursor), "anchor-deleted")

    def test_an_anchor_now_in_another_conversation_fails_the_read(self, world: World) -> None:
        plan, one, cursor = self.cursor_after_one(world)
        other = thread(world, "Other")
        M = conversation_messages.c
        write(
            world,
            lambda conn: conn.execute(
                update(conversation_messages).where(M.id == one.id).values(conversation_id=other.id)
            ),
        )
        self.assert_failed(read(world, plan.id, cursor), "anchor-moved")

    def test_a_deleted_conversation_fails_the_read(self, world: World) -> None:
        plan, _, cursor = self.cursor_after_one(world)

        def remove(conn: Connection) -> None:
            conn.execute(
                delete(conversation_messages).where(
                    conversation_messages.c.conversation_id == plan.id
                )
            )
            conn.execute(delete(conversations).where(conversations.c.id == plan.id))

        write(world, remove)
        self.assert_failed(read(world, plan.id, cursor), "source-deleted")
        self.assert_failed(read(world, plan.id, None), "source-deleted")

    def test_a_moved_conversation_fails_closed_and_keeps_its_cursor(self, world: World) -> None:
        plan, _, cursor = self.cursor_after_one(world)
        revision = world.conversations.get(world.alice.id, plan.id).revision
        world.conversations.move(world.alice.id, plan.id, world.away.id, revision)
        moved = read(world, plan.id, cursor)
        self.assert_failed(moved, "source-moved")
        kept = advance({plan.id: cursor}, [moved])
        assert kept == {plan.id: cursor}
        # read again with the kept cursor: still failed, never reset to the start
        self.assert_failed(read(world, plan.id, kept[plan.id]), "source-moved")
        # a start cursor taken before the move fails the same way
        start = WatchCursor(
            conversation_id=plan.id,
            message_id=None,
            seq=0,
            digest=None,
            placement=cursor.placement,
        )
        self.assert_failed(read(world, plan.id, start), "source-moved")

    @pytest.mark.parametrize(
        ("change", "failure"),
        [
            ("rewrite", "anchor-rewritten"),  # the anchor's text changed during the query
            ("move", "source-moved"),  # the conversation left its workspace during the query
        ],
    )
    def test_a_change_while_the_query_runs_is_caught_by_the_check_after_it(
        self, world: World, monkeypatch: pytest.MonkeyPatch, change: str, failure: str
    ) -> None:
        plan, one, cursor = self.cursor_after_one(world)
        M, C = conversation_messages.c, conversations.c

        def listed_then_changed(
            conn: Connection, conversation_id: UUID, after_seq: int, limit: int
        ) -> list[Message]:
            found = read_messages(conn, conversation_id, after_seq, limit)
            if change == "rewrite":
                conn.execute(update(conversation_messages).where(M.id == one.id).values(text="1"))
            else:
                conn.execute(
                    update(conversations).where(C.id == plan.id).values(workspace_id=world.away.id)
                )
            return found

        monkeypatch.setattr(watch_module, "read_messages", listed_then_changed)
        # a write transaction, only so that the stand-in can change rows mid-read
        result = world.store.run(lambda conn: read_source(conn, plan.id, cursor, MAX_START_CHARS))
        self.assert_failed(result, failure)

    def test_a_cursor_of_another_conversation_is_refused(self, world: World) -> None:
        _, _, cursor = self.cursor_after_one(world)
        other = thread(world, "Other")
        with pytest.raises(InvalidInput):
            read(world, other.id, cursor)


class TestProjection:
    def test_each_message_has_exactly_its_id_type_digest_completion_and_text(
        self, world: World
    ) -> None:
        schedule_id = world.schedule()
        passage = "passage-0001"

        def start(conn: Connection) -> Conversation:
            opened = open_passage_conversation(
                conn,
                world.clock.now(),
                workspace_id=world.home.id,
                schedule_id=schedule_id,
                passage_id=passage,
                title="Morning report",
                input_text="Summarise.",
            )
            passage_say(conn, world.clock.now(), passage, "Context.", role="system")
            passage_say(conn, world.clock.now(), passage, "Grüße — done.")
            return opened

        opened = world.store.run(start)
        result = read(world, opened.id, None)
        ids = [m.id for m in world.conversations.messages(world.alice.id, opened.id)]
        assert result.messages == (
            shown(ids[0], "Summarise."),
            shown(ids[1], "Context.", kind="synthetic", role="system"),
            shown(ids[2], "Grüße — done.", kind="assistant", role="assistant"),
        )
        assert all(
            list(m) == ["messageId", "type", "digest", "completedAt", "text"]
            for m in result.messages
        )
        assert result.used == sum(size(m) for m in result.messages)

    def test_the_completion_time_is_when_the_message_was_finished(self, world: World) -> None:
        plan = thread(world)
        draft = post(world, plan, "late", complete=False)
        world.clock.advance(timedelta(minutes=90))
        world.conversations.finish(world.bob.id, draft.id, 1)
        (only,) = read(world, plan.id, None).messages
        assert only["completedAt"] == "2025-03-01T13:30:00Z"


class TestBudget:
    def test_a_message_that_does_not_fit_is_an_unconsumed_reference_with_empty_text(
        self, world: World
    ) -> None:
        plan = thread(world)
        one = post(world, plan, "é" * 40)
        two = post(world, plan, "x" * 400)
        post(world, plan, "three")
        first, second = shown(one.id, "é" * 40), shown(two.id, "x" * 400)
        reference = {**second, "text": "", "needsDecision": "source-input-capacity"}
        room = size(first) + size(second) - 1
        result = read(world, plan.id, None, room)
        assert result.messages == (first,)
        assert (result.stop, result.needs_decision) == ("capacity", reference)
        assert (result.room, result.used) == (room, size(first) + size(reference))
        assert result.next_cursor is not None
        assert (result.next_cursor.message_id, result.next_cursor.seq) == (one.id, 1)
        # exactly enough room keeps it whole
        fits = read(world, plan.id, result.next_cursor, size(second))
        assert fits.messages == (second,)
        assert fits.stop == "capacity"
        assert fits.needs_decision is not None and fits.needs_decision["text"] == ""

    def test_with_no_room_the_first_new_message_is_the_reference(self, world: World) -> None:
        plan = thread(world)
        one = post(world, plan, "one")
        for room in (0, -50):  # none, and less than none
            result = read(world, plan.id, None, room)
            assert (result.messages, result.stop, result.room) == ((), "capacity", 0)
            assert result.needs_decision == {
                **shown(one.id, "one"),
                "text": "",
                "needsDecision": "source-input-capacity",
            }
            assert result.next_cursor is not None
            assert (result.next_cursor.message_id, result.next_cursor.seq) == (None, 0)

    def test_each_source_gets_the_room_left_after_the_earlier_ones_and_the_reserves(
        self, world: World
    ) -> None:
        first, second, third = thread(world, "A"), thread(world, "B"), thread(world, "C")
        for n in range(3):
            post(world, first, f"a{n}" * 100)
            post(world, second, f"b{n}" * 50)
            post(world, third, "c")
        sources: list[tuple[UUID, WatchCursor | None]] = [
            (first.id, None),
            (second.id, None),
            (third.id, None),
        ]
        reads = world.store.run(
            lambda conn: read_sources(conn, sources, instructions_chars=1000, envelope_chars=2000),
            write=False,
        )
        left = MAX_START_CHARS - 1000 - 2000
        assert [r.room for r in reads] == [
            left - 2 * RESERVE_PER_WATCH,
            left - reads[0].used - RESERVE_PER_WATCH,
            left - reads[0].used - reads[1].used,
        ]
        assert [len(r.messages) for r in reads] == [3, 3, 3]
        assert reads[0].used == sum(size(m) for m in reads[0].messages)
        assert reads[0].room == 11_336
        assert reads[1].room == 12_360 - reads[0].used

    def test_an_earlier_source_can_leave_a_later_one_only_its_reference(self, world: World) -> None:
        big, small = thread(world, "Big"), thread(world, "Small")
        posted = [post(world, big, "b" * 3000) for _ in range(5)]
        late = post(world, small, "s")
        each = size(shown(posted[0].id, "b" * 3000))
        instructions = MAX_START_CHARS - RESERVE_PER_WATCH - 4 * each
        reads = world.store.run(
            lambda conn: read_sources(
                conn,
                [(big.id, None), (small.id, None)],
                instructions_chars=instructions,
                envelope_chars=0,
            ),
            write=False,
        )
        assert (reads[0].room, len(reads[0].messages), reads[0].stop) == (4 * each, 4, "capacity")
        assert reads[0].needs_decision is not None
        assert reads[0].needs_decision["messageId"] == str(posted[4].id)
        # what is left is the reserve less the first source's reference
        assert reads[1].room == RESERVE_PER_WATCH - (reads[0].used - 4 * each)
        assert reads[1].messages == (shown(late.id, "s"),)

    def test_an_instructions_text_of_the_whole_input_leaves_every_source_a_reference(
        self, world: World
    ) -> None:
        plan, other = thread(world, "A"), thread(world, "B")
        post(world, plan, "one")
        post(world, other, "two")
        reads = world.store.run(
            lambda conn: read_sources(
                conn,
                [(plan.id, None), (other.id, None)],
                instructions_chars=MAX_START_CHARS,
                envelope_chars=0,
            ),
            write=False,
        )
        assert [(r.room, r.messages, r.stop) for r in reads] == [(0, (), "capacity")] * 2
        assert all(r.needs_decision is not None for r in reads)

    def test_a_conversation_watched_twice_is_refused(self, world: World) -> None:
        plan = thread(world)
        with pytest.raises(InvalidInput):
            world.store.run(
                lambda conn: read_sources(
                    conn, [(plan.id, None), (plan.id, None)], instructions_chars=0, envelope_chars=0
                ),
                write=False,
            )


class TestAdvance:
    def test_completed_reads_move_their_cursors_and_a_failed_one_keeps_its_own(
        self, world: World
    ) -> None:
        kept, gone, fresh = thread(world, "A"), thread(world, "B"), thread(world, "C")
        for conversation in (kept, gone, fresh):
            post(world, conversation, "one")
        cursor_kept = read(world, kept.id, None).next_cursor
        cursor_gone = read(world, gone.id, None).next_cursor
        assert cursor_kept is not None and cursor_gone is not None
        assert cursor_gone.message_id is not None
        newer = post(world, kept, "two")
        world.conversations.delete(world.bob.id, cursor_gone.message_id, 1)
        cursors: dict[UUID, WatchCursor | None] = {
            kept.id: cursor_kept,
            gone.id: cursor_gone,
            fresh.id: None,
        }
        reads = world.store.run(
            lambda conn: read_sources(
                conn, list(cursors.items()), instructions_chars=0, envelope_chars=0
            ),
            write=False,
        )
        assert [r.failure for r in reads] == [None, "anchor-deleted", None]
        moved = advance(cursors, reads)
        assert moved[gone.id] == cursor_gone
        assert moved[kept.id].message_id == newer.id
        assert (moved[fresh.id].seq, moved[fresh.id].digest) == (1, digest_of("user", "one"))
        assert set(moved) == {kept.id, gone.id, fresh.id}

    def test_a_failed_first_read_leaves_the_source_without_a_cursor(self, world: World) -> None:
        missing = uuid.uuid4()
        result = read(world, missing, None)
        assert result.failure == "source-deleted"
        assert advance({missing: None}, [result]) == {}


class TestCursorJson:
    def test_a_cursor_survives_its_json(self, world: World) -> None:
        plan = thread(world)
        post(world, plan, "one")
        cursor = read(world, plan.id, None).next_cursor
        assert cursor is not None
        data = cursor.to_json()
        assert data == {
            "version": 1,
            "conversationId": str(plan.id),
            "messageId": str(cursor.message_id),
            "seq": 1,
            "digest": digest_of("user", "one"),
            "placement": placement_of(world, plan),
        }
        assert WatchCursor.from_json(json.loads(json.dumps(data))) == cursor
        start = WatchCursor(
            conversation_id=plan.id, message_id=None, seq=0, digest=None, placement="p"
        )
        assert WatchCursor.from_json(start.to_json()) == start

    @pytest.mark.parametrize(
        "change",
        [
            {"version": 2},  # another version
            {"conversationId": "nope"},  # not an ID
            {"seq": -1},  # below 0
            {"seq": True},  # not a number
            {"seq": 0},  # a message ID with seq 0
            {"digest": None},  # a message ID without its digest
            {"placement": ""},  # empty placement
        ],
    )
    def test_a_malformed_cursor_is_refused(self, change: dict[str, Any]) -> None:
        good = WatchCursor(
            conversation_id=uuid.uuid4(), message_id=uuid.uuid4(), seq=3, digest="d", placement="p"
        ).to_json()
        with pytest.raises(InvalidInput):
            WatchCursor.from_json({**good, **change})
