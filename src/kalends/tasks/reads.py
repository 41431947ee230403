"""Reading tasks back: rows with their tags and reminders, and ordered trees.

Each concept is a module of its own, and every name is here as well:
:mod:`~kalends.tasks.loading` (tasks as values), :mod:`~kalends.tasks.tree_reads` (trees
of values), :mod:`~kalends.tasks.tree_pages` (pages and the whole list as JSON),
:mod:`~kalends.tasks.tree_json` (JSON straight from the rows) and
:mod:`~kalends.tasks.detail` (a task's detail).
"""

from kalends.tasks.detail import read_detail
from kalends.tasks.loading import load_tasks, task_after_write
from kalends.tasks.tree_json import PageKey, date_text, instant_text, uuid_text
from kalends.tasks.tree_pages import (
    if_more,
    page_ids,
    page_key,
    read_tree_json,
    read_tree_page,
    read_tree_page_json,
)
from kalends.tasks.tree_reads import (
    LIVE_TREE,
    SUBTREE_REMINDERS,
    SUBTREE_ROWS,
    read_tree,
    subtree_tree,
)

__all__ = [
    "LIVE_TREE",
    "SUBTREE_REMINDERS",
    "SUBTREE_ROWS",
    "PageKey",
    "date_text",
    "if_more",
    "instant_text",
    "load_tasks",
    "page_ids",
    "page_key",
    "read_detail",
    "read_tree",
    "read_tree_json",
    "read_tree_page",
    "read_tree_page_json",
    "subtree_tree",
    "task_after_write",
    "uuid_text",
]
