"""Conversations: ordered threads of messages in a workspace.

People post to threads; every passage has a conversation of its own (its input, what
it says, its report), ``streaming`` until the passage settles. Each message has a stable
ID, a sequence number never reused, a digest of its content and whether it is complete,
so that a reader after a cursor can tell a deleted, rewritten or moved message or
conversation from an unchanged one.

:class:`Conversations` is the service people use; the mission runtime writes its
passages' conversations with the connection-level functions of
:mod:`~kalends.conversations.passages`.
"""

from __future__ import annotations

from kalends.conversations.passages import (
    PassageOpening,
    conversation_of_passage,
    open_passage_conversation,
    open_passage_conversations,
    passage_say,
    settle_passage_conversation,
)
from kalends.conversations.records import read_conversation
from kalends.conversations.service import Conversations
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
    placement_digest,
)
from kalends.conversations.watch import (
    MAX_MESSAGES_PER_SOURCE,
    MAX_START_CHARS,
    RESERVE_PER_WATCH,
    ReadFailure,
    ReadStop,
    SourceRead,
    WatchCursor,
    read_source,
    read_sources,
)

__all__ = [
    "MAX_MESSAGES_PER_SOURCE",
    "MAX_START_CHARS",
    "RESERVE_PER_WATCH",
    "SourceRead",
    "WatchCursor",
    "read_conversation",
    "ReadFailure",
    "ReadStop",
    "read_source",
    "read_sources",
    "MAX_MESSAGE_CHARS",
    "MAX_PAGE",
    "MAX_TITLE",
    "Conversation",
    "ConversationKind",
    "ConversationState",
    "Conversations",
    "Message",
    "MessageRole",
    "PassageOpening",
    "conversation_of_passage",
    "message_digest",
    "open_passage_conversation",
    "open_passage_conversations",
    "passage_say",
    "placement_digest",
    "settle_passage_conversation",
]
