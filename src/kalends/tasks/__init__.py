"""The task store and its scheduling domain (seed 000): lists, checklists, schedules."""

from kalends.identity import Actor, Role
from kalends.reminders import Channel
from kalends.tasks.directory import Directory
from kalends.tasks.models import (
    Attachment,
    Comment,
    HistoryEvent,
    Section,
    Task,
    TaskDetail,
    TaskList,
    TreeNode,
    TreePage,
)
from kalends.tasks.service import AfterTaskUpdate, TaskChange, TaskService
from kalends.tasks.values import (
    ListStatus,
    Reminder,
    Schedule,
    TaskStatus,
    TimedValue,
    parse_schedule,
)

__all__ = [
    "Actor",
    "AfterTaskUpdate",
    "Attachment",
    "Channel",
    "Comment",
    "Directory",
    "HistoryEvent",
    "ListStatus",
    "Reminder",
    "Role",
    "Schedule",
    "Section",
    "Task",
    "TaskChange",
    "TaskDetail",
    "TaskList",
    "TaskService",
    "TaskStatus",
    "TimedValue",
    "TreeNode",
    "TreePage",
    "parse_schedule",
]
