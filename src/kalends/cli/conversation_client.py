"""What the conversation commands ask for, the same whether they run on a database or a
server.

:class:`ConversationsClient` mirrors :class:`~kalends.conversations.Conversations`, the
acting actor first, with :meth:`~ConversationsClient.page` for a page of messages and
whether more follow; :class:`LocalConversations` is the service itself, and
:class:`~kalends.cli.http_conversations.HttpConversations` the HTTP API's
conversation routes. :func:`conversations_of` picks one for a session.

The texts and pages a command is given are checked here first (:func:`check_text`,
:func:`check_page`; IDs by :func:`kalends.cli.arguments.check_id`), so that bad input is
refused in the same words in either mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from kalends.conversations import MAX_MESSAGE_CHARS, MAX_PAGE
from kalends.errors import InvalidInput

if TYPE_CHECKING:
    from kalends.bootstrap import Services
    from kalends.cli.remote import Remote
    from kalends.cli.session import Session
    from kalends.conversations import Conversation, Message

__all__ = [
    "ConversationsClient",
    "LocalConversations",
    "MessagePage",
    "check_text",
    "conversations_of",
]


@dataclass(frozen=True, slots=True)
class MessagePage:
    """Messages in ascending seq, and the ``after`` of the next page (``None``: the last)."""

    messages: list[Message]
    next_after_seq: int | None


def check_text(text: str) -> str:
    """A message's text: 1 to :data:`MAX_MESSAGE_CHARS` characters, no NUL."""
    if not text:
        raise InvalidInput("text: must be a non-empty string", field="text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInput(
            f"text: a message holds at most {MAX_MESSAGE_CHARS} characters, got {len(text)}",
            field="text",
            limit=MAX_MESSAGE_CHARS,
        )
    if "\x00" in text:
        raise InvalidInput("text: a NUL character is not allowed", field="text")
    return text


def check_page(after_seq: int, limit: int) -> None:
    if after_seq < 0:
        raise InvalidInput(f"after: 0 or more, got {after_seq}", field="after")
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit: from 1 to {MAX_PAGE}, got {limit}", field="limit")


class ConversationsClient(Protocol):
    """Conversations as the acting actor sees them
    (:class:`~kalends.conversations.Conversations`)."""

    def create(self, actor: UUID | str, workspace: UUID, title: str) -> Conversation:
        """A new thread in the workspace (editors and owners)."""
        ...

    def list(self, actor: UUID | str, workspace: UUID) -> list[Conversation]:
        """The workspace's conversations, newest activity first."""
        ...

    def get(self, actor: UUID | str, conversation: UUID) -> Conversation: ...

    def page(
        self, actor: UUID | str, conversation: UUID, *, after_seq: int, limit: int
    ) -> MessagePage:
        """At most ``limit`` messages after ``after_seq``, and whether more follow."""
        ...

    def post(self, actor: UUID | str, conversation: UUID, text: str) -> Message:
        """A new, complete message of the actor's (role ``user``)."""
        ...

    def edit(
        self, actor: UUID | str, message: UUID, text: str, expected_revision: int
    ) -> Message: ...

    def delete(self, actor: UUID | str, message: UUID, expected_revision: int) -> None: ...


@dataclass(frozen=True, slots=True)
class LocalConversations:
    """The service on the database."""

    services: Services

    def create(self, actor: UUID | str, workspace: UUID, title: str) -> Conversation:
        return self.services.conversations.create(actor, workspace, title)

    def list(self, actor: UUID | str, workspace: UUID) -> list[Conversation]:
        return self.services.conversations.list(actor, workspace)

    def get(self, actor: UUID | str, conversation: UUID) -> Conversation:
        return self.services.conversations.get(actor, conversation)

    def page(
        self, actor: UUID | str, conversation: UUID, *, after_seq: int, limit: int
    ) -> MessagePage:
        check_page(after_seq, limit)
        service = self.services.conversations

        def read() -> MessagePage:
            found = service.messages(actor, conversation, after_seq=after_seq, limit=limit)
            more = len(found) == limit and bool(
                service.messages(actor, conversation, after_seq=found[-1].seq, limit=1)
            )
            return MessagePage(found, found[-1].seq if more else None)

        # One transaction: the page and the look past its end see the same messages.
        return self.services.store.run(lambda _conn: read(), write=False)

    def post(self, actor: UUID | str, conversation: UUID, text: str) -> Message:
        return self.services.conversations.post(actor, conversation, check_text(text))

    def edit(self, actor: UUID | str, message: UUID, text: str, expected_revision: int) -> Message:
        return self.services.conversations.edit(actor, message, check_text(text), expected_revision)

    def delete(self, actor: UUID | str, message: UUID, expected_revision: int) -> None:
        self.services.conversations.delete(actor, message, expected_revision)


def conversations_of(s: Session | Remote) -> ConversationsClient:
    """The conversations of a session: the service in local mode, the HTTP API on a server."""
    from kalends.cli.http_conversations import HttpConversations  # noqa: PLC0415
    from kalends.cli.remote import Remote  # noqa: PLC0415

    if isinstance(s, Remote):
        return HttpConversations(s)
    return LocalConversations(s.services)
