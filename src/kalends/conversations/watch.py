"""Reading a watched conversation after its cursor, for a passage's start input.

A schedule watches conversations; each passage's start input carries, per watched
source in order, the new messages after that source's cursor. Every function here is a
pure read on the caller's connection, inside the caller's transaction: the scheduler
reads, starts the passage, and moves the cursors (:func:`advance`) only once the passage
settles ``completed``.

A read is a *stable complete-message prefix*: at most :data:`MAX_MESSAGES_PER_SOURCE`
messages after the cursor, ascending; a message still being written ends it, every
message is read again by its ID and a changed one defers it and every later one, and a
message found in another conversation fails the read. Before and after the query the
source's placement and the cursor's anchor message are checked: a deleted, moved or
rewritten source or anchor fails the read, which is never taken for "no change" and
never resets the cursor to the start.

Characters are counted as the length (in code points) of each projected message's
compact JSON: ``json.dumps(message, separators=(",", ":"), ensure_ascii=False)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.conversations.records import read_conversation, read_message, read_messages
from kalends.conversations.values import (
    Conversation,
    Message,
    MessageRole,
    message_digest,
    placement_digest,
)
from kalends.errors import InvalidInput

__all__ = [
    "CAPACITY_DECISION",
    "CURSOR_VERSION",
    "MAX_MESSAGES_PER_SOURCE",
    "MAX_START_CHARS",
    "RESERVE_PER_WATCH",
    "ReadFailure",
    "ReadStop",
    "SourceRead",
    "WatchCursor",
    "advance",
    "measure",
    "project",
    "read_source",
    "read_sources",
]

# seed 002 "Settlement, result and watched cursors" (Watched sources): "Read at most 32
# messages per source".
MAX_MESSAGES_PER_SOURCE = 32
# seed 002 "Settlement, result and watched cursors": "the 16,384-character lifecycle input".
MAX_START_CHARS = 16_384
# seed 002 "Settlement, result and watched cursors": "a 1 KiB reserve per remaining watch".
RESERVE_PER_WATCH = 1024
# seed 002 "Settlement, result and watched cursors": the unconsumed reference's decision.
CAPACITY_DECISION = "source-input-capacity"
# kalends decision: the version of a stored cursor's JSON.
CURSOR_VERSION = 1

_TYPES = {
    MessageRole.USER: "user",
    MessageRole.SYSTEM: "synthetic",
    MessageRole.ASSISTANT: "assistant",
}


class ReadStop(StrEnum):
    """Why a read ended: no more messages (``end``), :data:`MAX_MESSAGES_PER_SOURCE`
    reached (``limit``), a message still being written (``streaming``), a message changed
    while read (``changed``), a message that did not fit (``capacity``), or a failed read
    (``failed``)."""

    END = "end"
    LIMIT = "limit"
    STREAMING = "streaming"
    CHANGED = "changed"
    CAPACITY = "capacity"
    FAILED = "failed"


class ReadFailure(StrEnum):
    """Why a read failed: the conversation is gone (``source-deleted``) or in another
    workspace than the cursor's (``source-moved``); the cursor's anchor message is gone
    (``anchor-deleted``), rewritten (``anchor-rewritten``) or in another conversation or
    place (``anchor-moved``); a message read after the cursor is now in another
    conversation (``message-moved``)."""

    SOURCE_DELETED = "source-deleted"
    SOURCE_MOVED = "source-moved"
    ANCHOR_DELETED = "anchor-deleted"
    ANCHOR_REWRITTEN = "anchor-rewritten"
    ANCHOR_MOVED = "anchor-moved"
    MESSAGE_MOVED = "message-moved"


def _text(data: Mapping[str, Any], key: str, *, optional: bool = False) -> str | None:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"cursor: {key} must be a non-empty string", field="cursor")
    return value


def _uuid(data: Mapping[str, Any], key: str, *, optional: bool = False) -> UUID | None:
    value = _text(data, key, optional=optional)
    if value is None:
        return None
    try:
        return UUID(value)
    except ValueError:
        raise InvalidInput(f"cursor: {key} is not an ID: {value!r}", field="cursor") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchCursor:
    """Where a watch of one conversation stands: its last consumed message (``None``,
    ``seq`` 0 and ``digest`` ``None`` before any) and the conversation's placement digest
    when the cursor was taken."""

    conversation_id: UUID
    message_id: UUID | None
    seq: int
    digest: str | None
    placement: str

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CURSOR_VERSION,
            "conversationId": str(self.conversation_id),
            "messageId": None if self.message_id is None else str(self.message_id),
            "seq": self.seq,
            "digest": self.digest,
            "placement": self.placement,
        }

    @classmethod
    def from_json(cls, data: object) -> WatchCursor:
        """The cursor :meth:`to_json` gave; anything else is :class:`InvalidInput`."""
        if not isinstance(data, Mapping) or data.get("version") != CURSOR_VERSION:
            raise InvalidInput(
                f"cursor: an object of version {CURSOR_VERSION} is required", field="cursor"
            )
        conversation_id = _uuid(data, "conversationId")
        message_id = _uuid(data, "messageId", optional=True)
        digest = _text(data, "digest", optional=True)
        placement = _text(data, "placement")
        seq = data.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise InvalidInput("cursor: seq must be a whole number, 0 or more", field="cursor")
        if (message_id is None) != (digest is None) or (message_id is None) != (seq == 0):
            raise InvalidInput(
                "cursor: a message ID, a digest and a seq above 0 go together", field="cursor"
            )
        assert conversation_id is not None and placement is not None  # not optional
        return cls(
            conversation_id=conversation_id,
            message_id=message_id,
            seq=seq,
            digest=digest,
            placement=placement,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRead:
    """One source's read: the kept messages (projected, see :func:`project`), the cursor
    after them, why the read ended, the message that did not fit (``needs_decision``),
    why it failed, the ``room`` it was given and the characters it ``used``.

    A failed read has no messages, no reference and ``next_cursor`` ``None``. A
    successful one always has a ``next_cursor``: the last kept message's, else the
    cursor as it was (a first read keeps the start cursor, pinned to the placement)."""

    conversation_id: UUID
    messages: tuple[dict[str, Any], ...]
    next_cursor: WatchCursor | None
    stop: ReadStop
    needs_decision: dict[str, Any] | None
    failure: ReadFailure | None
    room: int
    used: int


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def project(message: Message) -> dict[str, Any]:
    """The message as a start input carries it: its ID, type (``user``, ``synthetic``
    for a system message, ``assistant``), digest, completion time and text; nothing else."""
    return {
        "messageId": str(message.id),
        "type": _TYPES[message.role],
        "digest": message.digest,
        "completedAt": _instant(message.completed_at),
        "text": message.text,
    }


def measure(projected: Mapping[str, Any]) -> int:
    """The characters a projected message takes: the length of its compact JSON."""
    return len(json.dumps(projected, separators=(",", ":"), ensure_ascii=False))


def _failed(conversation_id: UUID, failure: ReadFailure, room: int) -> SourceRead:
    return SourceRead(
        conversation_id=conversation_id,
        messages=(),
        next_cursor=None,
        stop=ReadStop.FAILED,
        needs_decision=None,
        failure=failure,
        room=room,
        used=0,
    )


def _check(
    conn: Connection, conversation_id: UUID, cursor: WatchCursor | None
) -> Conversation | ReadFailure:
    """The conversation when it and the cursor's anchor stand as the cursor saw them."""
    found = read_conversation(conn, conversation_id)
    if found is None:
        return ReadFailure.SOURCE_DELETED
    if cursor is None:
        return found
    if placement_digest(found) != cursor.placement:
        return ReadFailure.SOURCE_MOVED
    if cursor.message_id is None:
        return found
    anchor = read_message(conn, cursor.message_id)
    if anchor is None:
        return ReadFailure.ANCHOR_DELETED
    if anchor.conversation_id != conversation_id or anchor.seq != cursor.seq:
        return ReadFailure.ANCHOR_MOVED
    if anchor.digest != cursor.digest or anchor.digest != message_digest(anchor.role, anchor.text):
        return ReadFailure.ANCHOR_REWRITTEN
    return found


def _steady(listed: Message, again: Message | None) -> bool:
    """Whether the message read again by ID is the one the query listed, whole."""
    return (
        again is not None
        and again.seq == listed.seq
        and again.complete
        and again.digest == listed.digest
        and again.text == listed.text
        and again.digest == message_digest(again.role, again.text)
    )


def read_source(
    conn: Connection, conversation_id: UUID, cursor: WatchCursor | None, room: int
) -> SourceRead:
    """The messages of the conversation after ``cursor`` (from its start when ``None``)
    that fit ``room`` characters, kept whole, as a stable complete-message prefix.

    The first message that does not fit ends the read as ``needs_decision``: its
    projection with empty text and ``"needsDecision": "source-input-capacity"``; it is
    not consumed. ``used`` counts the kept messages and that reference, so it exceeds
    ``room`` by the reference alone (a few hundred characters: the per-watch reserve of
    :func:`read_sources` holds it). A cursor of another conversation is
    :class:`InvalidInput`."""
    if cursor is not None and cursor.conversation_id != conversation_id:
        raise InvalidInput(
            f"cursor: it is the cursor of conversation {cursor.conversation_id},"
            f" not of {conversation_id}",
            field="cursor",
        )
    room = max(room, 0)
    before = _check(conn, conversation_id, cursor)
    if isinstance(before, ReadFailure):
        return _failed(conversation_id, before, room)
    listed = read_messages(
        conn, conversation_id, 0 if cursor is None else cursor.seq, MAX_MESSAGES_PER_SOURCE
    )
    kept: list[dict[str, Any]] = []
    last: Message | None = None
    used = 0
    needs_decision: dict[str, Any] | None = None
    stop = ReadStop.LIMIT if len(listed) == MAX_MESSAGES_PER_SOURCE else ReadStop.END
    for message in listed:
        if not message.complete:
            stop = ReadStop.STREAMING
            break
        again = read_message(conn, message.id)
        if again is not None and again.conversation_id != conversation_id:
            return _failed(conversation_id, ReadFailure.MESSAGE_MOVED, room)
        if not _steady(message, again):
            stop = ReadStop.CHANGED
            break
        projected = project(message)
        size = measure(projected)
        if used + size > room:
            needs_decision = {**projected, "text": "", "needsDecision": CAPACITY_DECISION}
            used += measure(needs_decision)
            stop = ReadStop.CAPACITY
            break
        kept.append(projected)
        used += size
        last = message
    after = _check(conn, conversation_id, cursor)
    if isinstance(after, ReadFailure):
        return _failed(conversation_id, after, room)
    placement = placement_digest(after)
    if last is not None:
        next_cursor = WatchCursor(
            conversation_id=conversation_id,
            message_id=last.id,
            seq=last.seq,
            digest=last.digest,
            placement=placement,
        )
    elif cursor is not None:
        next_cursor = cursor
    else:
        next_cursor = WatchCursor(
            conversation_id=conversation_id,
            message_id=None,
            seq=0,
            digest=None,
            placement=placement,
        )
    return SourceRead(
        conversation_id=conversation_id,
        messages=tuple(kept),
        next_cursor=next_cursor,
        stop=stop,
        needs_decision=needs_decision,
        failure=None,
        room=room,
        used=used,
    )


def read_sources(
    conn: Connection,
    sources: Sequence[tuple[UUID, WatchCursor | None]],
    *,
    instructions_chars: int,
    envelope_chars: int,
) -> tuple[SourceRead, ...]:
    """Every watched source read in order, the whole start text within
    :data:`MAX_START_CHARS`: each source's room is what is left after the instructions,
    the envelope, the earlier sources' ``used`` and :data:`RESERVE_PER_WATCH` for every
    source after it; a negative room is 0 (its first message becomes the reference). A
    conversation watched twice is :class:`InvalidInput`."""
    seen = [conversation_id for conversation_id, _ in sources]
    if len(set(seen)) != len(seen):
        raise InvalidInput("sources: a conversation is watched once", field="sources")
    left = MAX_START_CHARS - instructions_chars - envelope_chars
    reads: list[SourceRead] = []
    for index, (conversation_id, cursor) in enumerate(sources):
        remaining = len(sources) - index - 1
        read = read_source(conn, conversation_id, cursor, left - RESERVE_PER_WATCH * remaining)
        left -= read.used
        reads.append(read)
    return tuple(reads)


def advance(
    cursors: Mapping[UUID, WatchCursor | None], reads: Sequence[SourceRead]
) -> dict[UUID, WatchCursor]:
    """The cursors after a ``completed`` settlement of the passage these reads started:
    each successful read's ``next_cursor``; a failed read, and a source not read, keeps
    its old cursor (a source with none stays without). Only ``completed`` consumes: after
    ``failed`` or ``ended-without-report`` the caller keeps ``cursors`` as they are and
    does not call this."""
    moved: dict[UUID, WatchCursor] = {
        conversation_id: cursor for conversation_id, cursor in cursors.items() if cursor is not None
    }
    for read in reads:
        if read.failure is None and read.next_cursor is not None:
            moved[read.conversation_id] = read.next_cursor
    return moved
