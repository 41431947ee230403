"""Conversation and message rows, statement by statement, in the caller's transaction.

Nothing here checks who asks: :mod:`kalends.conversations.service` does, and the mission
runtime writes its passages' conversations through :mod:`kalends.conversations.passages`.
Every change to a message also moves its conversation's ``revision`` and ``updated_at``
(its newest activity); a message's sequence number comes from the conversation's
``last_seq``, raised in the same statement that locks the conversation's row, so two
writers never get the same number and a deleted message's number is never handed out
again.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from kalends.conversations.values import (
    MAX_MESSAGE_CHARS,
    MAX_PAGE,
    MAX_TITLE,
    Conversation,
    ConversationKind,
    ConversationState,
    Message,
    MessageRole,
    message_digest,
)
from kalends.errors import InvalidInput, RevisionConflict
from kalends.identity import parse_uuid
from kalends.storage.conversation_tables import conversation_messages, conversations
from kalends.storage.ids import ids_at
from kalends.storage.unit_of_work import for_update

__all__ = [
    "add_message",
    "change_message",
    "check_after_seq",
    "check_id",
    "check_limit",
    "check_revision",
    "check_role",
    "check_text",
    "check_title",
    "insert_conversation",
    "list_conversations",
    "move_conversation",
    "read_conversation",
    "read_message",
    "read_messages",
    "remove_message",
]

_C = conversations.c
_M = conversation_messages.c
_ROLES = frozenset(r.value for r in MessageRole)


def check_id(value: object, field: str) -> UUID:
    """``value`` as the ID ``field`` names; anything but a UUID (or its text) is refused."""
    parsed = parse_uuid(value, field)
    if parsed is None:
        raise InvalidInput(f"{field}: not a {field} ID: {value!r}", field=field)
    return parsed


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def check_title(title: object) -> str:
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput("title: must be a non-empty string", field="title")
    stripped = title.strip()
    if len(stripped) > MAX_TITLE:
        raise InvalidInput(
            f"title: at most {MAX_TITLE} characters, got {len(stripped)}", field="title"
        )
    if _CONTROL.search(stripped):
        raise InvalidInput("title: control characters are not allowed in a title", field="title")
    return stripped


def check_text(text: object, field: str = "text", *, room: int = MAX_MESSAGE_CHARS) -> str:
    """A message's text (or a piece appended to one): 1 to ``room`` characters, no NUL."""
    if not isinstance(text, str) or not text:
        raise InvalidInput(f"{field}: must be a non-empty string", field=field)
    if len(text) > room:
        raise InvalidInput(
            f"{field}: a message holds at most {MAX_MESSAGE_CHARS} characters"
            f" ({room} left), got {len(text)}",
            field=field,
            limit=MAX_MESSAGE_CHARS,
        )
    if "\x00" in text:
        raise InvalidInput(f"{field}: a NUL character is not allowed", field=field)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field}: not valid text", field=field) from None
    return text


def check_role(role: object) -> MessageRole:
    if isinstance(role, str) and role in _ROLES:
        return MessageRole(role)
    raise InvalidInput(f"role: must be user, assistant or system, got {role!r}", field="role")


def _whole(value: object, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{field}: a whole number is required, got {value!r}", field=field)
    return value


def check_limit(limit: object) -> int:
    count = _whole(limit, "limit")
    if not 1 <= count <= MAX_PAGE:
        raise InvalidInput(f"limit: from 1 to {MAX_PAGE}, got {count}", field="limit")
    return count


def check_after_seq(after_seq: object) -> int:
    seq = _whole(after_seq, "after_seq")
    if seq < 0:
        raise InvalidInput(f"after_seq: 0 or more, got {seq}", field="after_seq")
    return seq


def check_revision(expected_revision: object) -> int:
    return _whole(expected_revision, "expected_revision")


def insert_conversation(
    conn: Connection,
    now: datetime,
    *,
    workspace_id: UUID,
    kind: ConversationKind,
    title: str,
    created_by: UUID | None,
    state: ConversationState,
    passage_id: str | None = None,
    schedule_id: UUID | None = None,
) -> Conversation:
    (conversation_id,) = ids_at(now, 1)
    found = Conversation(
        id=conversation_id,
        workspace_id=workspace_id,
        kind=kind,
        title=title,
        created_by=created_by,
        passage_id=passage_id,
        schedule_id=schedule_id,
        state=state,
        revision=1,
        last_seq=0,
        created_at=now,
        updated_at=now,
    )
    conn.execute(
        insert(conversations).values(
            id=conversation_id,
            workspace_id=workspace_id,
            kind=kind.value,
            title=title,
            created_by=created_by,
            passage_id=passage_id,
            schedule_id=schedule_id,
            state=state.value,
            revision=1,
            last_seq=0,
            created_at=now,
            updated_at=now,
        )
    )
    return found


def read_conversation(
    conn: Connection, conversation_id: UUID, *, lock: bool = False
) -> Conversation | None:
    query = select(conversations).where(_C.id == conversation_id)
    row = conn.execute(for_update(query) if lock else query).first()
    return None if row is None else Conversation.from_row(row)


def list_conversations(conn: Connection, workspace_id: UUID, limit: int) -> list[Conversation]:
    """At most ``limit`` of the workspace's conversations, newest activity first."""
    rows = conn.execute(
        select(conversations)
        .where(_C.workspace_id == workspace_id)
        .order_by(_C.updated_at.desc(), _C.id.desc())
        .limit(limit)
    ).all()
    return [Conversation.from_row(r) for r in rows]


def read_messages(
    conn: Connection, conversation_id: UUID, after_seq: int, limit: int
) -> list[Message]:
    """At most ``limit`` messages of the conversation after ``after_seq``, by seq."""
    rows = conn.execute(
        select(conversation_messages)
        .where(_M.conversation_id == conversation_id, _M.seq > after_seq)
        .order_by(_M.seq)
        .limit(limit)
    ).all()
    return [Message.from_row(r) for r in rows]


def read_message(conn: Connection, message_id: UUID, *, lock: bool = False) -> Message | None:
    query = select(conversation_messages).where(_M.id == message_id)
    row = conn.execute(for_update(query) if lock else query).first()
    return None if row is None else Message.from_row(row)


def _touch(conn: Connection, conversation_id: UUID, now: datetime) -> None:
    conn.execute(
        update(conversations)
        .where(_C.id == conversation_id)
        .values(revision=_C.revision + 1, updated_at=now)
    )


def add_message(
    conn: Connection,
    now: datetime,
    conversation_id: UUID,
    *,
    role: MessageRole,
    text: str,
    complete: bool,
    author_actor_id: UUID | None = None,
    author_passage_id: str | None = None,
) -> Message:
    """A new last message of the conversation, numbered one past its ``last_seq``."""
    conn.execute(
        update(conversations)
        .where(_C.id == conversation_id)
        .values(last_seq=_C.last_seq + 1, revision=_C.revision + 1, updated_at=now)
    )
    seq = conn.execute(select(_C.last_seq).where(_C.id == conversation_id)).scalar_one()
    (message_id,) = ids_at(now, 1)
    values: dict[str, Any] = {
        "id": message_id,
        "conversation_id": conversation_id,
        "seq": seq,
        "role": role.value,
        "author_actor_id": author_actor_id,
        "author_passage_id": author_passage_id,
        "text": text,
        "digest": message_digest(role, text),
        "complete": complete,
        "revision": 1,
        "created_at": now,
        "updated_at": now,
        "completed_at": now if complete else None,
    }
    conn.execute(insert(conversation_messages).values(values))
    return Message(**{**values, "role": role})


def _conflict(what: str, expected: int, actual: int | None) -> RevisionConflict:
    return RevisionConflict(
        f"the {what} changed: expected revision {expected}, it is {actual}",
        expected=expected,
        actual=actual,
    )


def change_message(
    conn: Connection,
    now: datetime,
    message: Message,
    expected_revision: int,
    *,
    text: str | None = None,
    complete: bool | None = None,
) -> Message:
    """The message with a new text and/or complete, its digest recomputed and revision
    raised, if it is still at ``expected_revision``; else :class:`RevisionConflict`."""
    new_text = message.text if text is None else text
    values: dict[str, Any] = {
        "text": new_text,
        "digest": message_digest(message.role, new_text),
        "revision": message.revision + 1,
        "updated_at": now,
    }
    if complete and not message.complete:
        values.update(complete=True, completed_at=now)
    result = conn.execute(
        update(conversation_messages)
        .where(_M.id == message.id, _M.revision == expected_revision)
        .values(values)
    )
    if result.rowcount == 0:
        raise _conflict("message", expected_revision, message.revision)
    _touch(conn, message.conversation_id, now)
    return Message.from_row(
        conn.execute(select(conversation_messages).where(_M.id == message.id)).one()
    )


def remove_message(
    conn: Connection, now: datetime, message: Message, expected_revision: int
) -> None:
    """Deletes the message if it is still at ``expected_revision``; its seq stays used."""
    result = conn.execute(
        delete(conversation_messages).where(_M.id == message.id, _M.revision == expected_revision)
    )
    if result.rowcount == 0:
        raise _conflict("message", expected_revision, message.revision)
    _touch(conn, message.conversation_id, now)


def move_conversation(
    conn: Connection,
    now: datetime,
    conversation: Conversation,
    workspace_id: UUID,
    expected_revision: int,
) -> Conversation:
    result = conn.execute(
        update(conversations)
        .where(_C.id == conversation.id, _C.revision == expected_revision)
        .values(workspace_id=workspace_id, revision=_C.revision + 1, updated_at=now)
    )
    if result.rowcount == 0:
        raise _conflict("conversation", expected_revision, conversation.revision)
    return Conversation.from_row(
        conn.execute(select(conversations).where(_C.id == conversation.id)).one()
    )
