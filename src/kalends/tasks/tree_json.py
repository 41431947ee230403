"""A forest's JSON made straight from raw task rows, and the JSON texts of the IDs,
instants and dates as the database gives them.

The rows are the driver's, typed by protocols of what is read of them
(:class:`~kalends.tasks.task_rows.RawTaskRow`, ``RawReminderRow``, ``TagPair``), not
made into values: each is read once, straight into its JSON, in the loop the HTTP API's
page reads spend their time in (``bench/api.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC
from typing import Any

from kalends.tasks.models import (
    TASK_COLUMNS,
)
from kalends.tasks.task_rows import RawReminderRow, RawTaskRow, TagPair

# A page of a list's trees is keyed by its last top-level task's sibling order.
PageKey = tuple[int, str]

_Entry = tuple[int, str, dict[str, Any]]
# Where each column of the tasks table sits in a raw row.
_COLUMN = {name: i for i, name in enumerate(TASK_COLUMNS)}


def json_forest(
    rows: Sequence[RawTaskRow],
    tag_rows: Iterable[TagPair],
    reminder_rows: Iterable[RawReminderRow],
    include_trashed: bool,
) -> tuple[list[dict[str, Any]], PageKey]:
    """The trees' JSON from raw task rows (a set closed under parents: every task's parent
    is among them or it is top-level) with their tags' and reminders' rows, and the sibling
    key of the last tree. Without the trash, a trashed task hides its whole subtree."""
    tag_map: dict[str | None, list[str]] = {}
    for tagged, name in tag_rows:
        tag_map.setdefault(uuid_text(tagged), []).append(name)
    reminder_map: dict[str | None, list[dict[str, Any]]] = {}
    for r in reminder_rows:
        reminder_map.setdefault(uuid_text(r.task_id), []).append(
            {
                "channel": r.channel,
                "local": r.local,
                "zone": r.zone,
                "at": instant_text(r.at),
                "recipient_id": uuid_text(r.recipient_id),
            }
        )
    children: dict[str | None, list[_Entry]] = {}
    c = _COLUMN
    for row in rows:
        trashed = bool(row[c["trashed"]])
        if trashed and not include_trashed:
            continue
        task_id = uuid_text(row[c["id"]])
        parent = uuid_text(row[c["parent_id"]])
        position, ref = row[c["position"]], row[c["ref"]]
        due_local = row[c["due_local"]]
        due: Any = (
            {"local": due_local, "zone": row[c["due_zone"]]}
            if due_local is not None
            else date_text(row[c["due_date"]])
        )
        children.setdefault(parent, []).append(
            (
                position,
                ref,
                {
                    "id": task_id,
                    "ref": ref,
                    "list_id": uuid_text(row[c["list_id"]]),
                    "section_id": uuid_text(row[c["section_id"]]),
                    "parent_id": parent,
                    "position": position,
                    "title": row[c["title"]],
                    "description": row[c["description"]],
                    "status": row[c["status"]],
                    "completed_at": instant_text(row[c["completed_at"]]),
                    "trashed": trashed,
                    "revision": row[c["revision"]],
                    "schedule_revision": row[c["schedule_revision"]],
                    "priority": row[c["priority"]],
                    "planned": date_text(row[c["planned_date"]]),
                    "due": due,
                    "series_id": uuid_text(row[c["series_id"]]),
                    "occurrence": row[c["occurrence"]],
                    "created_at": instant_text(row[c["created_at"]]),
                    "updated_at": instant_text(row[c["updated_at"]]),
                    "tags": tag_map.get(task_id, []),
                    "reminders": reminder_map.get(task_id, []),
                },
            )
        )

    # Reached only from a visible parent: a trashed task's subtree is never walked.
    def node(entry: _Entry) -> dict[str, Any]:
        found = entry[2]
        kids = sorted(children.get(found["id"], ()), key=_sibling_order)
        found["children"] = [node(k) for k in kids]
        return found

    tops = sorted(children.get(None, ()), key=_sibling_order)
    if not tops:
        return [], (BEFORE_ALL, "")
    return [node(t) for t in tops], (tops[-1][0], tops[-1][1])


def _sibling_order(entry: _Entry) -> tuple[int, str]:
    return entry[0], entry[1]


def uuid_text(value: Any) -> str | None:
    """An ID as JSON text from what the database gave: SQLite's 32 hex digits (or a
    dashed text), or the driver's UUID."""
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) == 32:
            return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
        return value.lower()
    return str(value)


def instant_text(value: Any) -> str | None:
    """An instant as the domain's JSON (``…Z``, microseconds only when not zero) from the
    stored text (SQLite) or the driver's aware datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        return value[:-8] + "Z" if value.endswith(".000000Z") else value
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")  # type: ignore[no-any-return]


def date_text(value: Any) -> str | None:
    """A date as ``YYYY-MM-DD`` from the stored text (SQLite) or the driver's date."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return value.isoformat()  # type: ignore[no-any-return]


# Lower than any sibling position a task can have.
BEFORE_ALL = -(2**63)
