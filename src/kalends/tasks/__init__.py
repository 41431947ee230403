"""The task store and its scheduling domain (seed 000): lists, checklists, schedules."""

from kalends.identity import Actor, Role
from kalends.reminders import Channel
from kalends.tasks.access import Delegation
from kalends.tasks.directory import Directory, insert_list
from kalends.tasks.due import DueTask, due_tasks
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
from kalends.tasks.outlines import (
    MAX_OUTLINE_DEPTH,
    Outline,
    OutlineItem,
    TreeSpec,
    insert_tree,
    insert_trees,
    subtree_counts,
    subtree_items,
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
    "MAX_OUTLINE_DEPTH",
    "Actor",
    "AfterTaskUpdate",
    "Attachment",
    "Channel",
    "Comment",
    "Delegation",
    "Directory",
    "DueTask",
    "HistoryEvent",
    "ListStatus",
    "Outline",
    "OutlineItem",
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
    "due_tasks",
    "insert_list",
    "TreeSpec",
    "insert_tree",
    "insert_trees",
    "parse_schedule",
    "subtree_counts",
    "subtree_items",
]
