"""Task operations: each one transaction that checks the actor's role, writes the
rows, appends history, keeps reminder intents in step and calls the
``after_task_update`` hooks before it commits.
"""

from kalends.tasks.annotations import TaskAnnotations
from kalends.tasks.page_cursors import PAGE_CURSOR_LENGTH, parse_page_cursor
from kalends.tasks.steps import AfterTaskUpdate, TaskChange
from kalends.tasks.task_edits import TaskEdits
from kalends.tasks.task_moves import TaskMoves
from kalends.tasks.task_reads import TaskReads
from kalends.tasks.task_trash import TaskTrash
from kalends.tasks.transitions import Transitions


class TaskService(TaskReads, TaskEdits, TaskMoves, TaskTrash, TaskAnnotations, Transitions):
    """Tasks, checklists and schedules. Every method is one transaction.

    Each part is a module of its own: reads (:mod:`~kalends.tasks.task_reads`), creation
    and edits (:mod:`~kalends.tasks.task_edits`), moves (:mod:`~kalends.tasks.task_moves`),
    the trash (:mod:`~kalends.tasks.task_trash`), comments and attachments
    (:mod:`~kalends.tasks.annotations`), schedules and completion
    (:mod:`~kalends.tasks.transitions`).
    """


__all__ = [
    "PAGE_CURSOR_LENGTH",
    "AfterTaskUpdate",
    "TaskChange",
    "TaskService",
    "parse_page_cursor",
]
