"""What a passage may say with its own token: messages in its own conversation (SPEC §4
"Conversations"), and nothing else.

The token (``KALENDS_PASSAGE_TOKEN``) names one passage and is checked first, against the
runtime directory that signed it (the ``speaker``: refused when forged, foreign or spent
because the passage settled). The message then goes to that passage's conversation,
opened with its reservation, in one transaction; a passage reserved before passages had
conversations has none (404), and a settled one takes no more (409). The passage never
names a conversation: it can write to no other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kalends.conversations import Message, MessageRole, passage_say
from kalends.storage.unit_of_work import Store

__all__ = ["PassageConversation"]


@dataclass(frozen=True, slots=True)
class PassageConversation:
    """Messages by a passage in its own conversation. Each call is one transaction.

    ``speaker`` gives the ID of the passage a token speaks for, or refuses the token (the
    HTTP API's is :meth:`~kalends.missions.runtime.server_passages.ServerPassages.speaker`).
    """

    store: Store
    speaker: Callable[[str], str]

    def say(
        self,
        token: str,
        text: str,
        *,
        role: MessageRole | str = MessageRole.ASSISTANT,
        complete: bool = True,
    ) -> Message:
        """A new last message of the token's passage's conversation, by the passage."""
        passage_id = self.speaker(token)
        return self.store.run(
            lambda conn: passage_say(
                conn, self.store.clock.now(), passage_id, text, role=role, complete=complete
            )
        )
