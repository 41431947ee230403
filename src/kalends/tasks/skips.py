"""Which tasks a skip settled: shown as ``skipped``, never as ``completed``.

Seed 000: skipping an occurrence makes its live tasks complete "with ``recurrence-skip``
history", and "skips do not become ordinary completion events". So the stored state of a
skipped task stays ``completed`` (the skip settles it: nothing reminds, a filter or a
checklist count sees it settled), and whether it was skipped is read from its history: a
completed task whose latest settling event is a ``recurrence-skip`` (no ``completed``
event after it; a reopened task is open, whatever came before).

:data:`SHOWN_STATUS` is the status a person and the JSON see (``open``, ``completed`` or
``skipped``), as one SQL expression correlated to the ``tasks`` row of the statement it
is put in, so every read adds it as a column rather than a statement.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, and_, case, exists, literal_column, not_, select
from sqlalchemy.sql.elements import ColumnElement

from kalends.storage.task_tables import task_history, tasks
from kalends.tasks.values import SKIPPED, TaskStatus

__all__ = ["SHOWN_STATUS", "SKIP_EVENT", "SKIPPED", "is_skipped"]

# The history kind a skip writes on each task it settles.
SKIP_EVENT = "recurrence-skip"

_skip = task_history.alias("skip_event")
_later = task_history.alias("later_completion")


def _skipped_condition() -> ColumnElement[bool]:
    completed_later: Select[Any] = (
        select(literal_column("1"))
        .select_from(_later)
        .where(
            _later.c.task_id == _skip.c.task_id,
            _later.c.id > _skip.c.id,
            _later.c.kind == TaskStatus.COMPLETED.value,
        )
    )
    skip_stands: Select[Any] = (
        select(literal_column("1"))
        .select_from(_skip)
        .where(
            _skip.c.task_id == tasks.c.id,
            _skip.c.kind == SKIP_EVENT,
            not_(exists(completed_later)),
        )
    )
    # Only a completed task is looked up in the history (a CASE evaluates lazily).
    return and_(tasks.c.status == TaskStatus.COMPLETED.value, exists(skip_stands))


SHOWN_STATUS: ColumnElement[Any] = case(
    (_skipped_condition(), literal_column(f"'{SKIPPED}'")), else_=tasks.c.status
)


def is_skipped(shown_status: object) -> bool:
    """Whether a status read through :data:`SHOWN_STATUS` is a skip."""
    return shown_status == SKIPPED
