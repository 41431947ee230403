"""One error tree for the whole of kalends.

Every error subclasses :class:`KalendsError` and, where one fits, the builtin
exception it means, so callers may catch ``ValueError`` for every bad-input case.
The class docstring is the default message.

An error names what it is about in the services' own words: ``field`` (``end_date``)
and the terms in braces of its message template (``{complete_subtree}``). Each edge says
it in its caller's words through one table (:data:`Vocabulary`) and :meth:`KalendsError.named`;
an edge's machine code and HTTP status come from the error's class.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Self

Vocabulary = Mapping[str, str]
"""How one edge names the services' fields and terms: ``{"end_date": "until"}``."""


class KalendsError(Exception):
    """Something went wrong in kalends."""

    code = "error"
    terms: ClassVar[Mapping[str, str]] = {}
    """How the Python API says each ``{term}`` of a message template."""

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.template = message or (type(self).__doc__ or type(self).__name__).strip()
        self.message = self.template.format_map(self.terms) if self.terms else self.template
        self.details = details
        super().__init__(self.message)

    def named(self, vocabulary: Vocabulary) -> Self:
        """This error in a caller's words: each term of the template, and the field it is
        about, as ``vocabulary`` names them; itself when ``vocabulary`` names neither."""
        words = {term: vocabulary.get(term, said) for term, said in self.terms.items()}
        message = self.template.format_map(words) if words else self.message
        field = self.details.get("field")
        renamed = vocabulary.get(field) if isinstance(field, str) else None
        if renamed is not None:
            reason = message.removeprefix(f"{field}: ")
            message = f"{renamed}: {reason}" if reason != message else message
        if message == self.message and renamed is None:
            return self
        said = copy.copy(self)
        said.message = message
        said.args = (message,)
        if renamed is not None:
            said.details = {**self.details, "field": renamed}
            if hasattr(said, "field"):
                said.field = renamed
        return said


class InvalidInput(KalendsError, ValueError):
    """The input is not valid."""

    code = "invalid-input"

    def __init__(self, message: str | None = None, *, field: str | None = None, **details: Any):
        self.field = field
        if field is not None:
            details["field"] = field
        super().__init__(message, **details)


class InvalidRule(InvalidInput):
    """The recurrence rule is not valid."""

    code = "invalid-rule"


class UnknownZone(InvalidInput):
    """The time zone is not a known IANA zone name."""

    code = "unknown-zone"


class NonexistentLocalTime(InvalidInput):
    """The local time does not exist in its zone: clocks skip over it."""

    code = "nonexistent-local-time"


class AmbiguousLocalTime(InvalidInput):
    """The local time occurs twice in its zone: clocks fall back over it."""

    code = "ambiguous-local-time"


class NotFound(KalendsError, LookupError):
    """The requested record does not exist."""

    code = "not-found"


class Conflict(KalendsError):
    """The operation conflicts with the current state."""

    code = "conflict"


class RevisionConflict(Conflict):
    """The record was changed by someone else: its revision is not the expected one."""

    code = "revision-conflict"

    def __init__(
        self, message: str | None = None, *, expected: int | None = None, actual: int | None = None
    ) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(message, expected=expected, actual=actual)


class StorageError(KalendsError, RuntimeError):
    """The database could not complete the operation."""

    code = "storage-error"


class DatabaseBusy(StorageError):
    """The database stayed busy (locked by another writer) past every retry; nothing was written."""

    code = "database-busy"


class LeaseLost(Conflict):
    """The lease is no longer held with this token: it expired, was released or was taken over."""

    code = "lease-lost"

    def __init__(
        self, message: str | None = None, *, name: str | None = None, owner: str | None = None
    ) -> None:
        self.name = name
        self.owner = owner
        super().__init__(message, name=name, owner=owner)


class UnknownSchemaRevision(StorageError):
    """The database's schema revision is unknown to this kalends: a newer version migrated it."""

    code = "unknown-schema-revision"

    def __init__(self, message: str | None = None, *, revision: str | None = None) -> None:
        self.revision = revision
        super().__init__(message, revision=revision)


class Forbidden(KalendsError, PermissionError):
    """The actor may not do this: their current role on the list does not allow it."""

    code = "forbidden"


class RunPrivilegeRequired(Forbidden):
    """Defining what runs needs the run privilege, which the server's owner grants
    (`kalends actor grant run ACTOR`); nothing was written."""

    code = "run-privilege-required"


class ListArchived(Conflict):
    """The list is archived: it can be read, not changed."""

    code = "list-archived"


class TaskTrashed(Conflict):
    """The task is in the trash (itself or an ancestor): restore it before changing it."""

    code = "task-trashed"


class OpenDescendants(Conflict):
    """The task has open checklist items: complete them, or pass {complete_subtree}."""

    code = "open-descendants"
    terms: ClassVar[Mapping[str, str]] = {"complete_subtree": "complete_subtree=true"}

    @classmethod
    def of(cls, open_items: int, *, recurring: bool) -> OpenDescendants:
        """The refusal to complete a task alone: ``open_items`` remain, or it is the open
        occurrence of a series, which is completed only as a whole (seed 000)."""
        if recurring:
            return cls(
                "a recurring checklist is completed only as a whole: pass {complete_subtree}",
                open=open_items,
                recurring=True,
            )
        return cls(
            f"{open_items} open checklist item(s) remain; complete them or pass "
            "{complete_subtree}",
            open=open_items,
        )


class ReparentCycle(InvalidInput):
    """A task cannot be moved under itself or one of its own descendants."""

    code = "reparent-cycle"


class ScheduleRevisionConflict(RevisionConflict):
    """The schedule was changed meanwhile: its revision is not the expected one; nothing
    was written (seed 002: the exact status read calls it ``revision-conflict``)."""


class ControlConflict(Conflict):
    """The control is not allowed in the schedule's current state; the schedule is
    unchanged (the refusal is kept under the control's request ID)."""

    code = "control-conflict"


class RequestReused(Conflict):
    """This request ID was already used for a different control or payload; nothing was written."""

    code = "request-reused"


class LimitReached(Conflict):
    """A bound of the store is reached (schedules per workspace, controls); nothing was written."""

    code = "limit-reached"


class TooLarge(InvalidInput):
    """The document or configuration is over its size ceiling; refused, never truncated."""

    code = "too-large"


class CorruptDocument(StorageError):
    """A stored document does not parse or breaks its bounds; the read fails rather than guess."""

    code = "corrupt-document"


class Unauthenticated(KalendsError, PermissionError):
    """No valid credentials: the session or token is missing, unknown, expired or revoked."""

    code = "unauthenticated"


class RateLimited(KalendsError):
    """Too many attempts: wait before trying again; nothing was written."""

    code = "rate-limited"

    def __init__(self, message: str | None = None, *, retry_after: float = 0.0) -> None:
        self.retry_after = retry_after
        super().__init__(message, retry_after=round(retry_after, 3))


class NotDispatched(DatabaseBusy):
    """The store could not take a schedule's control or Run now (busy or unavailable);
    nothing was written.

    The client keeps its request ID and reads the request's status rather than
    inventing a new one (seed 002).
    """

    code = "recurrence-not-dispatched"


class CorruptRecord(StorageError, ValueError):
    """A passage record does not parse as a JSON object."""

    code = "corrupt-record"


# A delivery failure's reason is one line of at most this many characters.
MAX_REASON_LENGTH = 500


class DeliveryFailed(KalendsError):
    """The reminder was not accepted by (every one of) its destinations.

    The message is one line and holds no secret from the destination URLs.
    ``delivered`` counts the destinations that did accept it: a retry sends to
    them again, and the idempotency key lets the receiver tell.
    """

    code = "delivery-failed"

    def __init__(self, message: str, *, delivered: int = 0) -> None:
        self.delivered = delivered
        line = " ".join(message.split())
        if len(line) > MAX_REASON_LENGTH:
            line = line[: MAX_REASON_LENGTH - 1] + "…"
        super().__init__(line or "delivery failed", delivered=delivered)
