"""Eligibility: whether a claimed intent may still be delivered now (seed 000, "Reminder
outbox", ``reminder_eligible``), with what a message about it needs.

An intent may be delivered when its schedule revision is still the task's current one,
the task is open and neither it nor an ancestor is in the trash, its list is active and
the recipient is still a member of that list (every role may read). Otherwise its
verdict's ``reason`` says why not, the first that holds of ``stale-schedule``,
``task-completed``, ``task-trashed``, ``list-archived`` and ``recipient-not-a-member``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import String, bindparam, case, func, select, type_coerce
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from kalends.errors import NotFound
from kalends.reminders.local_times import intent_zone
from kalends.reminders.raw_forms import RAW, db_form, uuid_of
from kalends.storage.identity_tables import actors
from kalends.storage.task_tables import list_members, lists, reminder_intents, tasks

__all__ = [
    "E_DUE",
    "E_ID",
    "E_LIST_NAME",
    "E_PARENT",
    "E_REASON",
    "E_REF",
    "E_TITLE",
    "E_ZONE",
    "LIST_ACTIVE",
    "TASK_OPEN",
    "Verdict",
    "VerdictRow",
    "eligibility",
    "reminder_eligible",
    "verdict_rows_in",
]

# The stored status of an open task and of an active list, as the task store writes them
# (kalends.tasks.TaskStatus.OPEN, kalends.tasks.ListStatus.ACTIVE): the verdict reads them.
TASK_OPEN = "open"
LIST_ACTIVE = "active"

ri = reminder_intents


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether an intent may be delivered now, with what a message about it needs."""

    intent_id: UUID
    reason: str | None
    task_id: UUID
    task_ref: str
    task_title: str
    due_text: str | None
    list_name: str
    recipient_id: UUID
    recipient: str
    recipient_name: str
    recipient_email: str | None
    # The zone the recipient reads the reminder's time in (kalends.reminders.local_times).
    zone: str | None = None

    @property
    def eligible(self) -> bool:
        return self.reason is None


# The columns of an eligibility row (see :func:`verdict_rows_in`), in order; the intent's
# and the parent's IDs in the database's own form. The worker reads these only (who the
# recipient is comes with their destinations); :func:`eligibility` reads the task's and
# the recipient's IDs and the recipient's names after them. Few columns: every value
# fetched costs (Python's sqlite3 module lets go of the GIL for each).
E_ID, E_REASON, E_PARENT, E_REF, E_TITLE, E_DUE, E_LIST_NAME, E_ZONE = range(8)
_E_TASK, _E_RECIPIENT, _E_HANDLE, _E_NAME, _E_EMAIL = range(8, 13)

VerdictRow = tuple[str | None, Sequence[Any]]
"""Why an intent may not be delivered (``None``: it may) and its eligibility row (``E_*``)."""

# The reasons that come before a trashed ancestor's "task-trashed" (see verdict_rows_in).
_BEFORE_TRASH = frozenset({"stale-schedule", "task-completed", "task-trashed"})


class _date_text(FunctionElement[str]):
    """A date as ISO 8601 text (``YYYY-MM-DD``), as ``date.isoformat()`` writes it."""

    type = String()
    inherit_cache = True
    name = "date_text"


@compiles(_date_text, "sqlite")
def _date_text_sqlite(element: _date_text, compiler: Any, **kw: Any) -> str:
    # SQLite keeps a date as that text already.
    return str(compiler.process(element.clauses, **kw))


@compiles(_date_text, "postgresql")
def _date_text_postgresql(element: _date_text, compiler: Any, **kw: Any) -> str:
    return f"to_char({compiler.process(element.clauses, **kw)}, 'YYYY-MM-DD')"


def _eligibility_statement(with_ids: bool) -> Any:
    member = (
        select(list_members.c.role)
        .where(
            list_members.c.list_id == tasks.c.list_id,
            list_members.c.actor_id == ri.c.recipient_id,
        )
        .scalar_subquery()
    )
    # reminder_eligible, in order, but for the walk up to a trashed ancestor (a second
    # statement, for checklist items only): the first reason that holds.
    reason = case(
        (ri.c.schedule_revision != tasks.c.schedule_revision, "stale-schedule"),
        (tasks.c.status != TASK_OPEN, "task-completed"),
        (tasks.c.trashed.is_(True), "task-trashed"),
        (lists.c.status != LIST_ACTIVE, "list-archived"),
        (member.is_(None), "recipient-not-a-member"),
        else_=None,
    )
    # The due date or time as a message shows it: "2025-03-02 09:30 Europe/Paris", or
    # "2025-03-04" (the wall time is "YYYY-MM-DDTHH:MM:SS").
    due = case(
        (
            tasks.c.due_local.is_not(None),
            func.substr(func.replace(tasks.c.due_local, "T", " "), 1, 16) + " " + tasks.c.due_zone,
        ),
        else_=_date_text(tasks.c.due_date),
    )
    columns = [
        type_coerce(ri.c.id, RAW).label("id"),
        reason.label("reason"),
        type_coerce(tasks.c.parent_id, RAW).label("parent_id"),
        tasks.c.ref,
        tasks.c.title,
        due.label("due"),
        lists.c.name.label("list_name"),
        intent_zone().label("zone"),
    ]
    joined = ri.join(tasks, tasks.c.id == ri.c.task_id).join(lists, lists.c.id == tasks.c.list_id)
    if with_ids:
        columns += [
            type_coerce(ri.c.task_id, RAW).label("task_id"),
            type_coerce(ri.c.recipient_id, RAW).label("recipient_id"),
            actors.c.handle,
            actors.c.display_name,
            actors.c.email,
        ]
        joined = joined.join(actors, actors.c.id == ri.c.recipient_id)
    return (
        select(*columns)
        .select_from(joined)
        .where(type_coerce(ri.c.id, RAW).in_(bindparam("ids", expanding=True)))
    )


_ELIGIBILITY = _eligibility_statement(with_ids=False)
_ELIGIBILITY_WITH_IDS = _eligibility_statement(with_ids=True)


def _hidden_by_trash_statement() -> Any:
    """The intents whose task has a trashed ancestor (a trashed subtree hides everything in it)."""
    start = (
        select(ri.c.id.label("intent_id"), tasks.c.parent_id.label("ancestor"))
        .join(tasks, tasks.c.id == ri.c.task_id)
        .where(type_coerce(ri.c.id, RAW).in_(bindparam("ids", expanding=True)))
        .cte("chain", recursive=True)
    )
    up = start.union_all(
        select(start.c.intent_id, tasks.c.parent_id).join(tasks, tasks.c.id == start.c.ancestor)
    )
    return (
        select(type_coerce(up.c.intent_id, RAW))
        .join(tasks, tasks.c.id == up.c.ancestor)
        .where(tasks.c.trashed.is_(True))
        .distinct()
    )


_HIDDEN_BY_TRASH = _hidden_by_trash_statement()


def verdict_rows_in(
    conn: Connection, intent_ids: Sequence[Any], *, statement: Any = _ELIGIBILITY
) -> dict[Any, VerdictRow]:
    """:func:`eligibility` of intents given by their IDs in the database's own form (see
    :data:`RAW`), keyed by that form: each intent's reason and its eligibility row, no
    object built per intent. Runs inside the caller's transaction."""
    if not intent_ids:
        return {}
    rows = conn.execute(statement, {"ids": list(intent_ids)}).all()
    # Only intents of checklist items need the walk up to the ancestors.
    items = [row[E_ID] for row in rows if row[E_PARENT] is not None]
    if not items:
        return {row[E_ID]: (row[E_REASON], row) for row in rows}
    hidden = set(conn.execute(_HIDDEN_BY_TRASH, {"ids": items}).scalars())
    found: dict[Any, VerdictRow] = {}
    for row in rows:
        reason = row[E_REASON]
        if reason not in _BEFORE_TRASH and row[E_ID] in hidden:
            reason = "task-trashed"
        found[row[E_ID]] = (reason, row)
    return found


def eligibility(conn: Connection, intent_ids: Sequence[UUID]) -> dict[UUID, Verdict]:
    """``reminder_eligible`` for many intents in one or two statements (seed 000, "Reminder
    outbox"): the walk up to the ancestors runs only for intents of checklist items.

    An intent may be delivered when its schedule revision is still the task's current one,
    the task is open and neither it nor an ancestor is in the trash, its list is active and
    the recipient is still a member of that list (every role may read). Otherwise the
    verdict's ``reason`` says why not. Intents that do not exist are left out.
    """
    verdicts: dict[UUID, Verdict] = {}
    raw_ids = db_form(conn, intent_ids)
    found = verdict_rows_in(conn, raw_ids, statement=_ELIGIBILITY_WITH_IDS)
    for reason, row in found.values():
        intent_id = uuid_of(row[E_ID])
        verdicts[intent_id] = Verdict(
            intent_id,
            reason,
            uuid_of(row[_E_TASK]),
            row[E_REF],
            row[E_TITLE],
            row[E_DUE],
            row[E_LIST_NAME],
            uuid_of(row[_E_RECIPIENT]),
            row[_E_HANDLE],
            row[_E_NAME],
            row[_E_EMAIL],
            row[E_ZONE],
        )
    return verdicts


def reminder_eligible(conn: Connection, intent_id: UUID) -> str | None:
    """Why the intent may not be delivered now, or ``None`` if it may (see :func:`eligibility`)."""
    verdict = eligibility(conn, [intent_id]).get(intent_id)
    if verdict is None:
        raise NotFound(f"reminder: no intent {intent_id}", field="reminder")
    return verdict.reason
