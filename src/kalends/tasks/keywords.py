"""The keyword groups that several task calls take alike, each written once (PEP 692).

The services (:class:`~kalends.tasks.service.TaskService`,
:class:`~kalends.tasks.changes.TaskChanges`), the command line's protocols
(:mod:`kalends.cli.task_client`) and their HTTP clients (:mod:`kalends.cli.http_tasks`)
take these as ``**kw: Unpack[Group]``: callers name the keywords as before, each
keyword-only, and mypy checks their names and types. A key a caller leaves out has the
default its comment names; each implementation reads it with ``kw.get(key, default)``.
Required keys are marked ``Required``.
"""

# No ``from __future__ import annotations``: ``Required`` must be seen at class creation
# for the groups' ``__required_keys__`` to be right at run time.

from collections.abc import Sequence
from datetime import date
from typing import Required, TypedDict
from uuid import UUID

from kalends.tasks.values import TaskStatus

__all__ = [
    "CreateKeywords",
    "EditKeywords",
    "PlaceKeywords",
    "RelocateKeywords",
    "RepeatKeywords",
    "TreeFilters",
    "TreePageKeywords",
]


class TreeFilters(TypedDict, total=False):
    """Which of a list's tasks a tree shows (``tree``); a filter keeps the matching tasks
    and their ancestors."""

    # Only tasks in the section of this name. Default ``None``: any section or none.
    section: str | None
    # Only tasks with this tag. Default ``None``: any tags.
    tag: str | None
    # Only tasks in this status: open, completed or skipped. Default ``None``: any.
    status: TaskStatus | str | None
    # Only tasks due on or after this day. Default ``None``.
    due_from: date | None
    # Only tasks due on or before this day. Default ``None``.
    due_to: date | None
    # Only tasks planned for this day. Default ``None``.
    planned: date | None
    # Trashed tasks too. Default ``False``.
    include_trashed: bool


class TreePageKeywords(TreeFilters, total=False):
    """A page of a list's trees (``tree_page``, ``tree_page_json``): the filters, and
    where the page starts and how long it is."""

    # At most this many top-level tasks (with their descendants).
    limit: Required[int]
    # The previous page's ``next_after`` cursor. Default ``None``: the first page.
    after: str | None


class CreateKeywords(TypedDict, total=False):
    """A new task's own fields and place, besides its list and title (``create``)."""

    # Its description. Default ``""``.
    description: str
    # The task it is a checklist item of, by ID or reference. Default ``None``: a root.
    parent: UUID | str | None
    # The section of its list, by name. Default ``None``: none.
    section: str | None
    # Its tags, created in the list when new. Default ``()``.
    tags: Sequence[str]
    # The sibling it goes just before. Default ``None``.
    before: UUID | str | None
    # The sibling it goes just after. Default ``None`` (with no ``before`` either: at
    # the end of its siblings).
    after: UUID | str | None


class EditKeywords(TypedDict, total=False):
    """What an edit of a task changes (``edit``), in this order; at least one."""

    # The new title. Default ``None``: unchanged.
    title: str | None
    # The new description. Default ``None``: unchanged.
    description: str | None
    # Tags to add (created in the list when new). Default ``()``.
    add_tags: Sequence[str]
    # Tags to take off. Default ``()``.
    remove_tags: Sequence[str]


class PlaceKeywords(TypedDict, total=False):
    """Where a task goes among its siblings and in its list's sections (``move``); what
    is not given stays."""

    # The sibling it goes just before, by ID or reference. Default ``None``.
    before: UUID | str | None
    # The sibling it goes just after. Default ``None``.
    after: UUID | str | None
    # The section of its list it goes into, by name. Default ``None``: unchanged.
    section: str | None
    # Take it out of its section. Default ``False``.
    clear_section: bool


class RelocateKeywords(PlaceKeywords, total=False):
    """A move that may reparent first, then place (``relocate``)."""

    # The task it becomes a checklist item of. Default ``None``: the same parent.
    parent: UUID | str | None
    # Make it a root task. Default ``False``.
    root: bool


class RepeatKeywords(TypedDict, total=False):
    """When a series' occurrences fall and how many there are (``repeat``)."""

    # The wall time the occurrences are due at, ``HH:MM`` or ``HH:MM:SS``. Default
    # ``None``: no time of day.
    time_of_day: str | None
    # The IANA zone of that wall time (needed with it). Default ``None``.
    zone: str | None
    # The last day an occurrence may fall on. Default ``None``: no end.
    end_date: date | None
    # How many occurrences in all. Default ``None``: no limit.
    count: int | None
