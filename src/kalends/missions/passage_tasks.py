"""What a passage may do to tasks with its own token: tick and comment the items of its
own checklist (SPEC §4 "Templates"), and nothing else.

The token (``KALENDS_PASSAGE_TOKEN``) names one passage and is checked first, against
the runtime directory that signed it (the ``speaker``: refused when forged, foreign or
spent because the passage settled). Then, in one transaction, the passage's checklist
(:func:`~kalends.missions.checklists.checklist_of`) becomes a
:class:`~kalends.tasks.Delegation` to the passages' actor: the task written must be the
checklist's root or lie below it. Any other task (another passage's checklist, a
person's task, a task that does not exist) and any task at all for a passage without a
checklist is :class:`PassageScope`, the same refusal word for word, and nothing is
written. A token grants no other operation: the HTTP API takes it on these two routes
only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import Forbidden
from kalends.missions.checklists import PASSAGES_ACTOR_ID, checklist_of
from kalends.tasks import Comment, Delegation, Task, TaskService

__all__ = ["PassageScope", "PassageTasks"]


class PassageScope(Forbidden):
    """A passage's token ticks and comments the items of that passage's own checklist only."""

    code = "passage-scope"


@dataclass(frozen=True, slots=True)
class PassageTasks:
    """Ticks and comments by a passage on its own checklist. Each method is one transaction.

    ``speaker`` gives the ID of the passage a token speaks for, or refuses the token (the
    HTTP API's is :meth:`~kalends.missions.runtime.server_passages.ServerPassages.speaker`);
    it reads no database.
    """

    tasks: TaskService
    speaker: Callable[[str], str]

    def complete(
        self,
        token: str,
        task: UUID | str,
        expected_revision: int,
        *,
        complete_subtree: bool = False,
    ) -> Task:
        """Completes an item of the token's passage's checklist (or its root), as
        :meth:`~kalends.tasks.TaskService.complete` does for a person; :class:`PassageScope`
        for any other task, nothing written."""
        passage_id = self.speaker(token)
        return self.tasks.store.run(
            lambda conn: self.tasks.complete_delegated(
                _delegation(conn, passage_id),
                task,
                expected_revision,
                complete_subtree=complete_subtree,
            )
        )

    def comment(self, token: str, task: UUID | str, body: str) -> Comment:
        """Comments an item of the token's passage's checklist (or its root), the passages'
        actor as the author; :class:`PassageScope` for any other task, nothing written."""
        passage_id = self.speaker(token)
        return self.tasks.store.run(
            lambda conn: self.tasks.comment_delegated(_delegation(conn, passage_id), task, body)
        )


def _delegation(conn: Connection, passage_id: str) -> Delegation:
    refusal = PassageScope(
        "a passage's token ticks and comments the items of its own checklist only",
        field="task",
    )
    root = checklist_of(conn, passage_id)
    if root is None:
        raise refusal
    return Delegation(actor_id=PASSAGES_ACTOR_ID, root_id=root, outside=refusal)
