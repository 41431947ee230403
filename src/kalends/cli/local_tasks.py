"""Local mode's :class:`~kalends.cli.task_client.TaskChanges`: the task store's own
:class:`~kalends.tasks.changes.TaskChanges`, the class the HTTP API's routes use, so that a
change (a schedule with its recipients and warnings among them) is made and refused alike
in both modes.
"""

from __future__ import annotations

from kalends.bootstrap import Services
from kalends.tasks.changes import TaskChanges

__all__ = ["LocalTaskChanges"]


class LocalTaskChanges(TaskChanges):
    """The changes of a session's services, each in one transaction."""

    def __init__(self, services: Services) -> None:
        super().__init__(services.store, services.tasks, services.series)
