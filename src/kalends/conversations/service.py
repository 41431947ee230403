"""Conversations as people use them: create threads, read them, post, stream, edit,
delete and move. One transaction per call.

Every call checks the actor's role on the conversation's workspace: viewers read,
editors write, owners also edit and delete others' messages and move conversations. A
conversation in a workspace the actor is no member of is, to them, one that does not
exist (:class:`~kalends.errors.NotFound`, as for an ID nobody uses); a member whose role
is too low is :class:`~kalends.errors.Forbidden`. Input is checked before anything is
read, and any refusal writes nothing.
"""

from __future__ import annotations

import builtins
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.conversations import records
from kalends.conversations.values import (
    MAX_MESSAGE_CHARS,
    MAX_PAGE,
    Conversation,
    ConversationKind,
    ConversationState,
    Message,
    MessageRole,
)
from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound, RevisionConflict
from kalends.identity import Role, require_role, resolve_actor
from kalends.storage.mission_tables import workspace_members
from kalends.storage.unit_of_work import Store

__all__ = ["Conversations"]

_W = workspace_members.c


def _role(
    conn: Connection, actor_id: UUID, workspace_id: UUID, minimum: Role, unseen: NotFound
) -> Role:
    held = conn.execute(
        select(_W.role).where(_W.workspace_id == workspace_id, _W.actor_id == actor_id)
    ).scalar()
    return require_role(held, minimum, scope="workspace", unseen=unseen)


def _workspace(conn: Connection, actor_id: UUID, workspace_id: UUID, minimum: Role) -> Role:
    unseen = NotFound(f"workspace: no workspace {workspace_id}", field="workspace")
    return _role(conn, actor_id, workspace_id, minimum, unseen)


def _conversation(
    conn: Connection, actor_id: UUID, conversation_id: UUID, minimum: Role, *, lock: bool = False
) -> tuple[Conversation, Role]:
    """The conversation and the actor's role on its workspace, once it reaches ``minimum``."""
    unseen = NotFound(f"conversation: no conversation {conversation_id}", field="conversation")
    found = records.read_conversation(conn, conversation_id, lock=lock)
    if found is None:
        raise unseen
    return found, _role(conn, actor_id, found.workspace_id, minimum, unseen)


def _message(
    conn: Connection, actor_id: UUID, message_id: UUID, expected_revision: int
) -> tuple[Message, Conversation, Role]:
    """The message, its conversation (both locked, the conversation first, as every write
    locks them) and the actor's role (editor at least), once the message is still at
    ``expected_revision``."""
    unseen = NotFound(f"message: no message {message_id}", field="message")
    seen = records.read_message(conn, message_id)
    if seen is None:
        raise unseen
    conversation = records.read_conversation(conn, seen.conversation_id, lock=True)
    message = records.read_message(conn, message_id, lock=True)
    if conversation is None or message is None:  # deleted meanwhile
        raise unseen
    role = _role(conn, actor_id, conversation.workspace_id, Role.EDITOR, unseen)
    if message.revision != expected_revision:
        raise RevisionConflict(
            f"the message changed: expected revision {expected_revision}, it is {message.revision}",
            expected=expected_revision,
            actual=message.revision,
        )
    return message, conversation, role


def _own(message: Message, actor_id: UUID, what: str) -> None:
    if message.author_actor_id != actor_id:
        raise Forbidden(f"message: only its author may {what} it")


def _open(message: Message) -> None:
    if message.complete:
        raise Conflict("message: it is complete; it takes no more text", field="message")


class Conversations:
    """Threads of messages in workspaces, and the passages' transcripts as people see them."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, actor: UUID | str, workspace: UUID | str, title: str) -> Conversation:
        """A new, empty ``open`` thread in the workspace (editors and owners)."""
        workspace_id = records.check_id(workspace, "workspace")
        clean = records.check_title(title)

        def run(conn: Connection) -> Conversation:
            actor_id = resolve_actor(conn, actor)
            _workspace(conn, actor_id, workspace_id, Role.EDITOR)
            return records.insert_conversation(
                conn,
                self.store.clock.now(),
                workspace_id=workspace_id,
                kind=ConversationKind.THREAD,
                title=clean,
                created_by=actor_id,
                state=ConversationState.OPEN,
            )

        return self.store.run(run)

    def list(
        self, actor: UUID | str, workspace: UUID | str, *, limit: int = MAX_PAGE
    ) -> builtins.list[Conversation]:
        """The workspace's ``limit`` (1 to :data:`MAX_PAGE`) conversations of newest
        activity (threads and passages), newest first."""
        workspace_id = records.check_id(workspace, "workspace")
        count = records.check_limit(limit)

        def run(conn: Connection) -> builtins.list[Conversation]:
            actor_id = resolve_actor(conn, actor)
            _workspace(conn, actor_id, workspace_id, Role.VIEWER)
            return records.list_conversations(conn, workspace_id, count)

        return self.store.run(run, write=False)

    def get(self, actor: UUID | str, conversation: UUID | str) -> Conversation:
        conversation_id = records.check_id(conversation, "conversation")

        def run(conn: Connection) -> Conversation:
            actor_id = resolve_actor(conn, actor)
            return _conversation(conn, actor_id, conversation_id, Role.VIEWER)[0]

        return self.store.run(run, write=False)

    def messages(
        self,
        actor: UUID | str,
        conversation: UUID | str,
        *,
        after_seq: int = 0,
        limit: int = MAX_PAGE,
    ) -> builtins.list[Message]:
        """At most ``limit`` (1 to :data:`MAX_PAGE`) messages after ``after_seq``, by seq."""
        conversation_id = records.check_id(conversation, "conversation")
        after = records.check_after_seq(after_seq)
        count = records.check_limit(limit)

        def run(conn: Connection) -> builtins.list[Message]:
            actor_id = resolve_actor(conn, actor)
            _conversation(conn, actor_id, conversation_id, Role.VIEWER)
            return records.read_messages(conn, conversation_id, after, count)

        return self.store.run(run, write=False)

    def post(
        self,
        actor: UUID | str,
        conversation: UUID | str,
        text: str,
        *,
        role: MessageRole | str = MessageRole.USER,
        complete: bool = True,
    ) -> Message:
        """A new last message of a thread, by the actor (editors and owners). A person
        posts as ``user`` only; a passage's conversation is written by its passage alone
        (:class:`~kalends.errors.Conflict`). An incomplete message takes more text with
        :meth:`append` until :meth:`finish`."""
        conversation_id = records.check_id(conversation, "conversation")
        clean = records.check_text(text)
        said = records.check_role(role)
        if said is not MessageRole.USER:
            raise InvalidInput(f"role: a person posts as user, not {said.value}", field="role")
        if not isinstance(complete, bool):
            raise InvalidInput(f"complete: true or false, got {complete!r}", field="complete")

        def run(conn: Connection) -> Message:
            actor_id = resolve_actor(conn, actor)
            found, _ = _conversation(conn, actor_id, conversation_id, Role.EDITOR, lock=True)
            if found.kind is ConversationKind.PASSAGE:
                raise Conflict(
                    "conversation: a passage's conversation is written by its passage; "
                    "post to a thread",
                    field="conversation",
                )
            return records.add_message(
                conn,
                self.store.clock.now(),
                conversation_id,
                role=said,
                text=clean,
                complete=complete,
                author_actor_id=actor_id,
            )

        return self.store.run(run)

    def append(
        self, actor: UUID | str, message: UUID | str, text: str, expected_revision: int
    ) -> Message:
        """The actor's own incomplete message with ``text`` added at its end, still
        incomplete; the whole stays within :data:`MAX_MESSAGE_CHARS`."""
        message_id = records.check_id(message, "message")
        piece = records.check_text(text)
        expected = records.check_revision(expected_revision)

        def run(conn: Connection) -> Message:
            actor_id = resolve_actor(conn, actor)
            found, _, _ = _message(conn, actor_id, message_id, expected)
            _own(found, actor_id, "add to")
            _open(found)
            records.check_text(piece, room=MAX_MESSAGE_CHARS - len(found.text))
            return records.change_message(
                conn, self.store.clock.now(), found, expected, text=found.text + piece
            )

        return self.store.run(run)

    def finish(self, actor: UUID | str, message: UUID | str, expected_revision: int) -> Message:
        """The actor's own incomplete message, now complete (``completed_at``: now)."""
        message_id = records.check_id(message, "message")
        expected = records.check_revision(expected_revision)

        def run(conn: Connection) -> Message:
            actor_id = resolve_actor(conn, actor)
            found, _, _ = _message(conn, actor_id, message_id, expected)
            _own(found, actor_id, "finish")
            _open(found)
            return records.change_message(
                conn, self.store.clock.now(), found, expected, complete=True
            )

        return self.store.run(run)

    def edit(
        self, actor: UUID | str, message: UUID | str, text: str, expected_revision: int
    ) -> Message:
        """The message rewritten to ``text`` (by its author, or a workspace owner): its
        digest changes, its seq does not."""
        message_id = records.check_id(message, "message")
        clean = records.check_text(text)
        expected = records.check_revision(expected_revision)

        def run(conn: Connection) -> Message:
            actor_id = resolve_actor(conn, actor)
            found, _, role = _message(conn, actor_id, message_id, expected)
            if role is not Role.OWNER:
                _own(found, actor_id, "edit")
            return records.change_message(conn, self.store.clock.now(), found, expected, text=clean)

        return self.store.run(run)

    def delete(self, actor: UUID | str, message: UUID | str, expected_revision: int) -> None:
        """Removes the message (by its author, or a workspace owner); its seq is never
        handed out again."""
        message_id = records.check_id(message, "message")
        expected = records.check_revision(expected_revision)

        def run(conn: Connection) -> None:
            actor_id = resolve_actor(conn, actor)
            found, _, role = _message(conn, actor_id, message_id, expected)
            if role is not Role.OWNER:
                _own(found, actor_id, "delete")
            records.remove_message(conn, self.store.clock.now(), found, expected)

        self.store.run(run)

    def move(
        self,
        actor: UUID | str,
        conversation: UUID | str,
        workspace: UUID | str,
        expected_revision: int,
    ) -> Conversation:
        """The conversation placed in another workspace, by an owner of both; its
        :func:`~kalends.conversations.placement_digest` changes."""
        conversation_id = records.check_id(conversation, "conversation")
        workspace_id = records.check_id(workspace, "workspace")
        expected = records.check_revision(expected_revision)

        def run(conn: Connection) -> Conversation:
            actor_id = resolve_actor(conn, actor)
            found, _ = _conversation(conn, actor_id, conversation_id, Role.OWNER, lock=True)
            _workspace(conn, actor_id, workspace_id, Role.OWNER)
            if found.revision != expected:
                raise RevisionConflict(
                    f"the conversation changed: expected revision {expected}, "
                    f"it is {found.revision}",
                    expected=expected,
                    actual=found.revision,
                )
            if found.workspace_id == workspace_id:
                raise InvalidInput(
                    "workspace: the conversation is already in this workspace",
                    field="workspace",
                )
            return records.move_conversation(
                conn, self.store.clock.now(), found, workspace_id, expected
            )

        return self.store.run(run)
