"""Server mode's :class:`~kalends.cli.conversation_client.ConversationsClient`: the
conversation routes of the HTTP API, their answers read back into the service's own
values, so that a command prints the same from a server as from a database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from kalends.cli.conversation_client import MessagePage, check_page, check_text
from kalends.conversations import (
    Conversation,
    ConversationKind,
    ConversationState,
    Message,
    MessageRole,
)

__all__ = ["ConversationWire", "HttpConversations", "conversation_from_json", "message_from_json"]


class ConversationWire(Protocol):
    """The requests a server-mode session sends (:class:`~kalends.cli.remote.Remote`)."""

    def get(self, path: str, **params: Any) -> Any: ...

    def post(self, path: str, body: Any = None) -> Any: ...

    def patch(self, path: str, body: Any = None) -> Any: ...

    def delete(self, path: str, **params: Any) -> Any: ...


def _instant(value: Any) -> datetime:
    return datetime.fromisoformat(str(value))


def _maybe_instant(value: Any) -> datetime | None:
    return None if value is None else _instant(value)


def _maybe_id(value: Any) -> UUID | None:
    return None if value is None else UUID(str(value))


def conversation_from_json(d: dict[str, Any]) -> Conversation:
    return Conversation(
        id=UUID(str(d["id"])),
        workspace_id=UUID(str(d["workspaceId"])),
        kind=ConversationKind(d["kind"]),
        title=str(d["title"]),
        created_by=_maybe_id(d["createdBy"]),
        passage_id=d["passageId"],
        schedule_id=_maybe_id(d["scheduleId"]),
        state=ConversationState(d["state"]),
        revision=int(d["revision"]),
        last_seq=int(d["lastSeq"]),
        created_at=_instant(d["createdAt"]),
        updated_at=_instant(d["updatedAt"]),
    )


def message_from_json(d: dict[str, Any]) -> Message:
    return Message(
        id=UUID(str(d["id"])),
        conversation_id=UUID(str(d["conversationId"])),
        seq=int(d["seq"]),
        role=MessageRole(d["role"]),
        author_actor_id=_maybe_id(d["authorActorId"]),
        author_passage_id=d["authorPassageId"],
        text=str(d["text"]),
        digest=str(d["digest"]),
        complete=bool(d["complete"]),
        revision=int(d["revision"]),
        created_at=_instant(d["createdAt"]),
        updated_at=_instant(d["updatedAt"]),
        completed_at=_maybe_instant(d["completedAt"]),
    )


@dataclass(frozen=True, slots=True)
class HttpConversations:
    wire: ConversationWire

    def create(self, actor: UUID | str, workspace: UUID, title: str) -> Conversation:
        made = self.wire.post(f"/api/workspaces/{workspace}/conversations", {"title": title})
        return conversation_from_json(made)

    def list(self, actor: UUID | str, workspace: UUID) -> list[Conversation]:
        found = self.wire.get(f"/api/workspaces/{workspace}/conversations")
        return [conversation_from_json(d) for d in found or []]

    def get(self, actor: UUID | str, conversation: UUID) -> Conversation:
        return conversation_from_json(self.wire.get(f"/api/conversations/{conversation}"))

    def page(
        self, actor: UUID | str, conversation: UUID, *, after_seq: int, limit: int
    ) -> MessagePage:
        check_page(after_seq, limit)
        found = self.wire.get(
            f"/api/conversations/{conversation}/messages", afterSeq=after_seq, limit=limit
        )
        following = found["nextAfterSeq"]
        return MessagePage(
            [message_from_json(d) for d in found["messages"]],
            None if following is None else int(following),
        )

    def post(self, actor: UUID | str, conversation: UUID, text: str) -> Message:
        body = {"text": check_text(text)}
        return message_from_json(
            self.wire.post(f"/api/conversations/{conversation}/messages", body)
        )

    def edit(self, actor: UUID | str, message: UUID, text: str, expected_revision: int) -> Message:
        body = {"text": check_text(text), "expectedRevision": expected_revision}
        return message_from_json(self.wire.patch(f"/api/messages/{message}", body))

    def delete(self, actor: UUID | str, message: UUID, expected_revision: int) -> None:
        self.wire.delete(f"/api/messages/{message}", expectedRevision=expected_revision)
