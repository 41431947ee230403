"""One error tree for the whole of kalends.

Every error subclasses :class:`KalendsError` and, where one fits, the builtin
exception it means, so callers may catch ``ValueError`` for every bad-input case.
The class docstring is the default message.
"""

from __future__ import annotations

from typing import Any


class KalendsError(Exception):
    """Something went wrong in kalends."""

    code = "error"

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or (type(self).__doc__ or type(self).__name__).strip()
        self.details = details
        super().__init__(self.message)


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
    """The task has open checklist items: complete them, or pass complete_subtree=true."""

    code = "open-descendants"


class ReparentCycle(InvalidInput):
    """A task cannot be moved under itself or one of its own descendants."""

    code = "reparent-cycle"


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


class NotDispatched(StorageError):
    """The store could not take the request (busy or unavailable); nothing was written.

    The client keeps its request ID and reads the request's status rather than
    inventing a new one.
    """

    code = "recurrence-not-dispatched"
