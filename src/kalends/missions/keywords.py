"""The keyword groups of the schedule calls, each written once (PEP 692).

:class:`~kalends.missions.ScheduleService`, the CLI's
:class:`~kalends.cli.mission_client.SchedulesClient` protocol and its HTTP client take
these as ``**kw: Unpack[Group]``: callers name the keywords as before, each keyword-only,
and mypy checks their names and types. A key a caller leaves out has the default its
comment names; each implementation reads it with ``kw.get(key, default)``. Required keys
are marked ``Required``.
"""

# No ``from __future__ import annotations``: ``Required`` must be seen at class creation
# for the groups' ``__required_keys__`` to be right at run time.

from collections.abc import Mapping
from typing import Any, Required, TypedDict
from uuid import UUID

from kalends.missions.controls import Action

__all__ = [
    "ControlKeywords",
    "PageKeywords",
    "RequestKeywords",
    "StatusKeywords",
]


class RequestKeywords(TypedDict, total=False):
    """What every control of a schedule carries (Play, Pause, …, Configure)."""

    # The caller's ID of this request (8-64 characters): a repeat of it returns the first
    # outcome and never acts twice.
    request_id: Required[str]
    # The revision of the document the caller read: another one is a conflict.
    expected_revision: Required[int]
    # The schedule's own workspace, when the caller knows it: checked first, and on a
    # server the route taken. Default ``None``: found from the schedule's ID alone.
    workspace: UUID | None


class ControlKeywords(RequestKeywords, total=False):
    """The keywords of ``control``: a control's, and what Configure changes."""

    # The top-level configuration fields Configure replaces, by name. Default ``None``
    # (every other action takes none).
    changes: Mapping[str, Any] | None


class StatusKeywords(TypedDict, total=False):
    """What a control's exact status read (``control_status``) may say of the control
    besides its request ID, so that a control never recorded is still answered."""

    # The revision the control expected. Default ``None``: unknown.
    expected_revision: int | None
    # The control's action. Default ``None``: unknown.
    action: Action | str | None
    # The schedule's own workspace, as :class:`RequestKeywords` has it. Default ``None``.
    workspace: UUID | None


class PageKeywords(TypedDict, total=False):
    """Which page of a workspace's schedules ``page`` reads."""

    # The mission ID the page starts after (the previous page's ``next_after``). Default
    # ``None``: the first page.
    after: UUID | str | None
    # At most this many documents, 1 to :data:`~kalends.missions.limits.MAX_PAGE`.
    # Default ``MAX_PAGE``.
    limit: int
