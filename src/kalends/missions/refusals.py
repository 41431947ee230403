"""A control's refusal, recorded under its request ID: the answer read back as it was given.

A control refused at its own revision (the state does not allow it or the edit, a first
Play's date is past) or at a revision the document has not reached yet never applies:
not now, and not later under the same request ID. Its
refusal is kept as the request's control record, in the transaction that decided it,
so that the exact status read reports the code the answer carried (and a repeat of the
request answers the same refusal) — however far the document has moved since, a
restart's Interrupted mark included. Re-deriving the reason at read time could not tell
a request refused by the state at its revision from one that arrived after the revision
had moved on.

The record is an ordinary control record (it counts towards the 64 a document keeps and
is evicted like a completed one) whose ``outcome`` holds the refusal; an applied
control's outcome is ``{}``. Its recorded revision is the revision the document would
have reached had the control applied, so evicting it raises the eviction bound over it
and the status read then says ``unknown``, never a reason it no longer knows.

A stale revision is not recorded: the status read proves that refusal by itself, from
the document's revision and eviction bound. Nor are refusals of who asks (a missing role
or privilege, which may be granted), of a deleted document (a tombstone keeps only its
Delete's record; every other request there reads unknown) or of the request's own input
(422: an unknown field, a value out of bounds), which leave its request ID free for the
corrected request, as a request refused before it is read does; once the document has
moved on, the status read of such a request says what a send would get then.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert

from kalends.errors import ControlConflict, InvalidInput, KalendsError, ScheduleRevisionConflict

__all__ = [
    "APPLIED",
    "MAX_MESSAGE",
    "insert_refusal",
    "refusal_of",
    "refusal_outcome",
]

APPLIED = "{}"
"""The outcome of an applied control's record."""

_KINDS = (ControlConflict, ScheduleRevisionConflict, InvalidInput)
"""The kinds of refusal a record may hold (their subclasses included): a conflict with the
state or the revision, and the past first Play (an :class:`InvalidInput`)."""

MAX_MESSAGE = 2000
"""kalends' decision: a recorded message is cut to this many characters (one may quote
the input it refuses)."""

_KEY = "refused"


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def refusal_outcome(error: KalendsError) -> str:
    """The stored outcome of a control refused with ``error``: its code, message and details."""
    details = {key: _plain(value) for key, value in error.details.items()}
    refused = {"code": error.code, "message": error.message[:MAX_MESSAGE], "details": details}
    return json.dumps({_KEY: refused}, ensure_ascii=False, sort_keys=True)


def _classes() -> dict[str, type[KalendsError]]:
    found: dict[str, type[KalendsError]] = {}
    waiting: list[type[KalendsError]] = list(_KINDS)
    while waiting:
        cls = waiting.pop()
        found.setdefault(cls.code, cls)
        waiting.extend(cls.__subclasses__())
    return found


def refusal_of(outcome: str | None) -> KalendsError | None:
    """The refusal a control record holds, as the error first raised (its class, code,
    message and details); ``None`` for an applied control's record."""
    if not outcome or outcome == APPLIED:
        return None
    refused = json.loads(outcome).get(_KEY)
    if not isinstance(refused, dict):
        return None
    cls = _classes().get(refused["code"], ControlConflict)
    error = cls(refused["message"], **refused["details"])
    error.code = refused["code"]
    return error


def insert_refusal(table: Table, dialect: str) -> Insert:
    """The insert of a refusal record that leaves a record of the same request alone (a
    concurrent attempt of that request recorded its answer first): it returns the request
    ID of the row it inserted, and no row when it inserted none."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(table)
        .on_conflict_do_nothing(index_elements=["schedule_id", "request_id"])
        .returning(table.c.request_id)
    )
