"""A ``conversation`` condition: stable new messages in followed conversations.

Seed 002, the five source conditions: a schedule may follow conversations and launch only
when at least one of them has a *stable* new message since its checkpoint: a complete
message of the stable complete-message prefix that
:func:`~kalends.conversations.watch.read_source` reads after the conversation's cursor (a
message still being written ends that prefix, so it counts only once it is finished).
Everything is read on the caller's connection, in the caller's transaction, like the
record sources: no thread, no file.

The checkpoint and the observation (version :data:`CHECKPOINT_VERSION`):

- ``checkpoint``: the compact JSON of each followed conversation's position, by
  conversation ID in sorted order: the ``seq`` of its last stable message (``0``: none),
  e.g. ``{"0190…a1":12,"0190…b2":0}``. Two reads compare equal exactly when no followed
  conversation has a new stable message.
- ``observation``: ``{"kind": "conversation", "version": 1, "cursors": {ID: {"seq",
  "messageId", "digest", "placement"}}, "observedAt"}``: each conversation's
  :class:`~kalends.conversations.watch.WatchCursor` (its last stable message's ID and
  digest, and the conversation's placement digest), what the next read continues from.

A first read (the baseline at first Play, or at the first slot when Play could not read)
takes each conversation's position *now*: its last message before the first one still
being written; a conversation that a retained checkpoint of the schedule still holds (a
condition that followed it before, seed 002 "Keep watch cursor continuity when a watch is
removed") keeps that cursor instead, checked as any other (a moved one fails closed,
never reset to now: :func:`retained_cursors`). Later reads continue from the cursors of
the checkpoint; a conversation deleted, moved to another workspace, or whose cursor's
message was deleted, rewritten or moved blocks the slot (never "no change", never a
reset). The proof's ``change`` names the new messages (at most :data:`MAX_PROOF_MESSAGES`
in all, counted beyond that), never their text: a passage reads them from the
conversation.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from kalends.conversations import (
    MAX_MESSAGES_PER_SOURCE,
    Conversation,
    ConversationKind,
    Message,
    ReadFailure,
    ReadStop,
    WatchCursor,
    message_digest,
    placement_digest,
    read_conversation,
    read_source,
)
from kalends.missions.config_condition import Condition
from kalends.missions.config_fields import fail
from kalends.missions.document import load_body
from kalends.missions.gate import Blocked, Observed, Reading
from kalends.missions.gate_records import Checkpoint, source_key
from kalends.missions.sources.outcomes import BlockReason, instant_text
from kalends.storage.conversation_tables import conversation_messages
from kalends.storage.mission_tables import schedules

__all__ = [
    "CHECKPOINT_VERSION",
    "KIND",
    "MAX_PROOF_MESSAGES",
    "SOURCE_MOVED",
    "check_followed",
    "read_followed",
    "retained_cursors",
]

KIND = "conversation"
# kalends decision: the version of a conversation checkpoint's observation.
CHECKPOINT_VERSION = 1
# kalends decision: a proof names at most 32 new messages in all (as many as one source's
# read keeps, seed 002 "Watched sources": "Read at most 32 messages per source"); more are
# counted, not named, so that a document following 64 conversations stays within its
# 256 KiB ceiling.
MAX_PROOF_MESSAGES = MAX_MESSAGES_PER_SOURCE
# Seed 002 "moved/deleted sources ... block admission": the ``blockReason`` of a
# conversation now in another workspace (or a message of it now in another conversation).
SOURCE_MOVED = "source-moved"
# kalends decision: the gate keeps no message text, so its read is bounded by the 32
# messages of a read alone, never by characters.
_UNBOUNDED_ROOM = sys.maxsize

_M = conversation_messages.c


def check_followed(
    conn: Connection,
    ids: Sequence[str],
    *,
    workspace_id: UUID,
    schedule_id: UUID | None,
) -> None:
    """Refuse (on ``condition.conversationIds[i]``) an ID of no conversation of the
    workspace (another workspace's reads as none: its existence is not the caller's to
    learn), and a conversation of one of ``schedule_id``'s own passages (a schedule
    following its own passages would launch itself)."""
    for i, raw in enumerate(ids):
        field = f"condition.conversationIds[{i}]"
        try:
            conversation_id = UUID(raw)
        except ValueError:
            raise fail(field, f"no conversation {raw} in this workspace") from None
        found = read_conversation(conn, conversation_id)
        if found is None or found.workspace_id != workspace_id:
            raise fail(field, f"no conversation {raw} in this workspace")
        if (
            schedule_id is not None
            and found.kind is ConversationKind.PASSAGE
            and found.schedule_id == schedule_id
        ):
            raise fail(
                field,
                f"conversation {raw} is one of this schedule's own passages; "
                "a schedule cannot follow its own passages",
            )


def _failure_reason(failure: ReadFailure) -> str:
    """The ``blockReason`` of a failed read."""
    if failure is ReadFailure.SOURCE_DELETED:
        return BlockReason.SOURCE_MISSING.value
    if failure in (ReadFailure.SOURCE_MOVED, ReadFailure.ANCHOR_MOVED, ReadFailure.MESSAGE_MOVED):
        return SOURCE_MOVED
    # The message the checkpoint stands on is gone or rewritten: what was consumed
    # cannot be proved any more.
    return BlockReason.SOURCE_PROOF_MISSING.value


_FAILURE_SAID = {
    ReadFailure.SOURCE_DELETED: "was deleted",
    ReadFailure.SOURCE_MOVED: "was moved to another workspace",
    ReadFailure.ANCHOR_DELETED: "lost the message its checkpoint stands on (deleted)",
    ReadFailure.ANCHOR_REWRITTEN: "had the message its checkpoint stands on rewritten",
    ReadFailure.ANCHOR_MOVED: "had the message its checkpoint stands on moved",
    ReadFailure.MESSAGE_MOVED: "had a new message moved to another conversation",
}


def _cursors(baseline: Checkpoint, ids: Sequence[str]) -> dict[str, WatchCursor] | str:
    """The baseline's cursor of each of ``ids``, or why they cannot be read from it."""
    observation = baseline.observation
    stored = None if observation is None else observation.get("cursors")
    if (
        observation is None
        or observation.get("version") != CHECKPOINT_VERSION
        or not isinstance(stored, Mapping)
    ):
        return "the checkpoint keeps no conversation cursors"
    out: dict[str, WatchCursor] = {}
    for raw in ids:
        kept = stored.get(raw)
        if not isinstance(kept, Mapping):
            return f"the checkpoint keeps no cursor of conversation {raw}"
        try:
            out[raw] = WatchCursor.from_json({**kept, "version": 1, "conversationId": raw})
        except ValueError:
            return f"the checkpoint's cursor of conversation {raw} cannot be read"
    return out


def retained_cursors(conn: Connection, schedule_id: UUID) -> dict[str, WatchCursor]:
    """The cursor of every conversation that a checkpoint of ``schedule_id``'s stored
    document holds, by conversation ID (the newest checkpoint's when several do); empty
    when the document cannot be read."""
    text = conn.execute(select(schedules.c.body).where(schedules.c.id == schedule_id)).scalar()
    if text is None:
        return {}
    try:
        body = load_body(text)
    except (ValueError, KeyError, TypeError):
        return {}
    out: dict[str, WatchCursor] = {}
    for key, kept in body.sources:  # (oldest first: a newer checkpoint's cursor wins)
        if not key.startswith(f"{KIND}:") or kept.observation is None:
            continue
        stored = kept.observation.get("cursors")
        if kept.observation.get("version") != CHECKPOINT_VERSION or not isinstance(stored, Mapping):
            continue
        for raw, cursor in stored.items():
            if not isinstance(cursor, Mapping):
                continue
            try:
                out[str(raw)] = WatchCursor.from_json(
                    {**cursor, "version": 1, "conversationId": raw}
                )
            except ValueError:
                continue
    return out


def _cursor_json(cursor: WatchCursor) -> dict[str, Any]:
    return {
        "seq": cursor.seq,
        "messageId": None if cursor.message_id is None else str(cursor.message_id),
        "digest": cursor.digest,
        "placement": cursor.placement,
    }


def _position_now(conn: Connection, found: Conversation) -> WatchCursor:
    """A cursor at the conversation's last message before the first one still being
    written (at its start when there is none)."""
    open_seq = (
        select(func.min(_M.seq))
        .where(_M.conversation_id == found.id, _M.complete.is_(False))
        .scalar_subquery()
    )
    query = select(conversation_messages).where(_M.conversation_id == found.id)
    query = query.where((open_seq.is_(None)) | (_M.seq < open_seq))
    row = conn.execute(query.order_by(_M.seq.desc()).limit(1)).first()
    placement = placement_digest(found)
    if row is None:
        return WatchCursor(
            conversation_id=found.id, message_id=None, seq=0, digest=None, placement=placement
        )
    last = Message.from_row(row)
    return WatchCursor(
        conversation_id=found.id,
        message_id=last.id,
        seq=last.seq,
        # A stored digest that disagrees with the text is read back as rewritten.
        digest=message_digest(last.role, last.text),
        placement=placement,
    )


def read_followed(
    conn: Connection,
    condition: Condition,
    workspace_id: UUID,
    baseline: Checkpoint | None,
    at: datetime,
    *,
    retained: Mapping[str, WatchCursor] | None = None,
) -> Reading:
    """The reading of a ``conversation`` condition against ``baseline`` (``None``: a first
    read, each conversation's position now, or its cursor in ``retained``)."""
    key = source_key(condition)
    ids: tuple[str, ...] = tuple(dict(condition.spec)["conversationIds"])

    def blocked(reason: str, detail: str) -> Blocked:
        return Blocked(key=key, kind=KIND, at=at, reason=reason, detail=detail)

    before: dict[str, WatchCursor] | None = None
    if baseline is not None:
        found = _cursors(baseline, ids)
        if isinstance(found, str):
            return blocked(BlockReason.SOURCE_PROOF_MISSING.value, found)
        before = found
    after: dict[str, WatchCursor] = {}
    news: list[tuple[str, int, tuple[dict[str, Any], ...], bool]] = []
    for raw in ids:
        try:
            conversation_id = UUID(raw)
        except ValueError:
            return blocked(BlockReason.SOURCE_MISSING.value, f"no conversation {raw}")
        cursor = None if before is None else before[raw]
        kept = before is None and retained is not None and raw in retained
        if kept:
            assert retained is not None
            cursor = retained[raw]
        if cursor is None:
            conversation = read_conversation(conn, conversation_id)
            if conversation is None:
                return blocked(BlockReason.SOURCE_MISSING.value, f"conversation {raw} is gone")
            if conversation.workspace_id != workspace_id:
                return blocked(SOURCE_MOVED, f"conversation {raw} is in another workspace")
            cursor = _position_now(conn, conversation)
        read = read_source(conn, conversation_id, cursor, _UNBOUNDED_ROOM)
        if read.failure is not None:
            return blocked(
                _failure_reason(read.failure),
                f"conversation {raw} {_FAILURE_SAID[read.failure]} ({read.failure.value})",
            )
        assert read.next_cursor is not None  # (a read that did not fail has one)
        # A retained cursor, checked by the read, is the position: what came after it is
        # new to the next read.
        after[raw] = cursor if kept else read.next_cursor
        if before is not None and read.messages:
            news.append((raw, cursor.seq, read.messages, read.stop is ReadStop.LIMIT))
    positions = {raw: after[raw].seq for raw in sorted(after)}
    checkpoint = json.dumps(positions, separators=(",", ":"))
    observation: dict[str, Any] = {
        "kind": KIND,
        "version": CHECKPOINT_VERSION,
        "cursors": {raw: _cursor_json(after[raw]) for raw in sorted(after)},
        "observedAt": instant_text(at),
    }
    change = _change(news, after) if news else None
    return Observed(
        key=key, kind=KIND, at=at, checkpoint=checkpoint, observation=observation,
        baseline=None if baseline is None else baseline.checkpoint, change=change,
    )  # fmt: skip


def _change(
    news: list[tuple[str, int, tuple[dict[str, Any], ...], bool]],
    after: Mapping[str, WatchCursor],
) -> dict[str, Any]:
    """The proof's ``change``: per conversation with new stable messages, the positions
    since and through, how many, whether the read stopped at its 32 (``more``: more may
    follow, the next read sees them), and the new messages named (ID, type, digest,
    completion time) while :data:`MAX_PROOF_MESSAGES` lasts."""
    left = MAX_PROOF_MESSAGES
    listed: list[dict[str, Any]] = []
    total = 0
    for raw, since, messages, more in news:
        named = messages[:left]
        left -= len(named)
        total += len(messages)
        listed.append(
            {
                "conversationId": raw,
                "since": since,
                "through": after[raw].seq,
                "count": len(messages),
                "more": more,
                "messages": [
                    {k: m[k] for k in ("messageId", "type", "digest", "completedAt")} for m in named
                ],
            }
        )
    return {"conversations": listed, "messages": total, "truncated": total > MAX_PROOF_MESSAGES}
