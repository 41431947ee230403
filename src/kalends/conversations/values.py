"""What the conversations service gives back, its kinds and states, its bounds, and the
digests a watcher compares: a message's (its role and text) and a conversation's
placement (its ID and workspace).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from kalends.auth import instant_json
from kalends.storage.conversation_tables import MAX_TITLE

__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_PAGE",
    "MAX_TITLE",
    "Conversation",
    "ConversationKind",
    "ConversationState",
    "Message",
    "MessageRole",
    "message_digest",
    "placement_digest",
]

# kalends decision: a message holds at most 65,536 characters (a long report still
# fits; a watched conversation's reader keeps messages whole, seed 002 "Watched sources").
MAX_MESSAGE_CHARS = 65_536
# kalends decision: a page of messages, or of a workspace's conversations, holds at most
# 100 of them.
MAX_PAGE = 100


class ConversationKind(StrEnum):
    """A ``thread`` people post to, or the ``passage`` transcript a passage writes."""

    THREAD = "thread"
    PASSAGE = "passage"


class ConversationState(StrEnum):
    """A thread is ``open``; a passage's conversation is ``streaming`` until the passage
    settles, then ``settled``."""

    OPEN = "open"
    STREAMING = "streaming"
    SETTLED = "settled"


class MessageRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"


def message_digest(role: MessageRole | str, text: str) -> str:
    """SHA-256 (hex) of the role, a NUL and the text, in UTF-8: the same content always
    gives the same digest, and a rewritten message another."""
    return hashlib.sha256(f"{role}\x00{text}".encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    id: UUID
    workspace_id: UUID
    kind: ConversationKind
    title: str
    created_by: UUID | None
    passage_id: str | None
    schedule_id: UUID | None
    state: ConversationState
    revision: int
    last_seq: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Conversation:
        return cls(
            id=row.id,
            workspace_id=row.workspace_id,
            kind=ConversationKind(row.kind),
            title=row.title,
            created_by=row.created_by,
            passage_id=row.passage_id,
            schedule_id=row.schedule_id,
            state=ConversationState(row.state),
            revision=row.revision,
            last_seq=row.last_seq,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "workspaceId": str(self.workspace_id),
            "kind": self.kind.value,
            "title": self.title,
            "createdBy": None if self.created_by is None else str(self.created_by),
            "passageId": self.passage_id,
            "scheduleId": None if self.schedule_id is None else str(self.schedule_id),
            "state": self.state.value,
            "revision": self.revision,
            "lastSeq": self.last_seq,
            "placementDigest": placement_digest(self),
            "createdAt": instant_json(self.created_at),
            "updatedAt": instant_json(self.updated_at),
        }


def placement_digest(conversation: Conversation) -> str:
    """SHA-256 (hex) of the conversation's ID, a NUL and its workspace's ID: a moved
    conversation has another."""
    text = f"{conversation.id}\x00{conversation.workspace_id}"
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    id: UUID
    conversation_id: UUID
    seq: int
    role: MessageRole
    author_actor_id: UUID | None
    author_passage_id: str | None
    text: str
    digest: str
    complete: bool
    revision: int
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None

    @classmethod
    def from_row(cls, row: Any) -> Message:
        return cls(
            id=row.id,
            conversation_id=row.conversation_id,
            seq=row.seq,
            role=MessageRole(row.role),
            author_actor_id=row.author_actor_id,
            author_passage_id=row.author_passage_id,
            text=row.text,
            digest=row.digest,
            complete=bool(row.complete),
            revision=row.revision,
            created_at=row.created_at,
            updated_at=row.updated_at,
            completed_at=row.completed_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "conversationId": str(self.conversation_id),
            "seq": self.seq,
            "role": self.role.value,
            "authorActorId": None if self.author_actor_id is None else str(self.author_actor_id),
            "authorPassageId": self.author_passage_id,
            "text": self.text,
            "digest": self.digest,
            "complete": self.complete,
            "revision": self.revision,
            "createdAt": instant_json(self.created_at),
            "updatedAt": instant_json(self.updated_at),
            "completedAt": instant_json(self.completed_at),
        }
