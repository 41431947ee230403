"""What the workspace and schedule commands ask for, the same whether they run on a
database or a server.

Each protocol mirrors a service, method for method with its signature (the acting actor
first), so the service itself is the local implementation:
:class:`~kalends.missions.Workspaces` and :class:`~kalends.missions.ScheduleService`
satisfy them as they are. :mod:`kalends.cli.http_missions` implements them over the HTTP
API, where the server acts as the token's owner and ``actor`` is not sent. A call's wide
keyword lists are written once, as the groups of :mod:`kalends.missions.keywords` that
all three take as ``**kw``.

A command gets both from its session (:class:`MissionSession`): the local
:class:`~kalends.cli.session.Session` or the server's
:class:`~kalends.cli.remote.Remote`, chosen once by
:func:`~kalends.cli.remote.local_or_remote`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol, TypeVar, Unpack
from uuid import UUID

from kalends.cli.session import Reporter
from kalends.identity import Role
from kalends.missions import Action, ControlOutcome, ControlStatus, Member, Receipt, Workspace
from kalends.missions.keywords import ControlKeywords, PageKeywords, RequestKeywords, StatusKeywords
from kalends.missions.ledger_reads import LEDGER_PAGE
from kalends.missions.outcomes import Page

__all__ = ["MissionSession", "SchedulesClient", "WorkspacesClient"]

T = TypeVar("T")


class WorkspacesClient(Protocol):
    """Workspaces and their members (:class:`~kalends.missions.Workspaces`)."""

    def add(
        self, actor: UUID | str, path: str | os.PathLike[str], name: str | None = None
    ) -> Workspace:
        """Registers the directory ``path``; the acting actor becomes its owner."""
        ...

    def list(self, actor: UUID | str) -> builtins.list[Workspace]:
        """The workspaces the actor is a member of, with their role."""
        ...

    def get(self, actor: UUID | str, workspace: UUID | str) -> Workspace:
        """A workspace by ID, or by name among the actor's."""
        ...

    def remove(self, actor: UUID | str, workspace: UUID | str) -> None:
        """Unregisters an empty workspace (owners only)."""
        ...

    def members(self, actor: UUID | str, workspace: UUID | str) -> builtins.list[Member]: ...

    def set_member(
        self, actor: UUID | str, workspace: UUID | str, member: UUID | str, role: str | Role
    ) -> Member:
        """Gives ``member`` a role (owners only); the last owner cannot be demoted."""
        ...

    def remove_member(self, actor: UUID | str, workspace: UUID | str, member: UUID | str) -> None:
        """Takes ``member`` off the workspace (owners only); the last owner stays."""
        ...


class SchedulesClient(Protocol):
    """Schedule documents, their controls and reads
    (:class:`~kalends.missions.ScheduleService`).

    ``workspace``, where a method takes it, is the schedule's own workspace when the
    caller knows it: locally it is checked first; on a server it names the schedule's
    route, found otherwise from the schedule's ID alone.
    """

    def create(
        self,
        actor: UUID | str,
        workspace: UUID | str,
        config: Mapping[str, Any],
        *,
        request_id: str,
    ) -> Receipt:
        """Creates a paused document; idempotent by ``request_id``."""
        ...

    def receipt(self, actor: UUID | str, workspace: UUID | str, request_id: str) -> Receipt:
        """The creation receipt of ``request_id``; a read only."""
        ...

    def configure(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        changes: Mapping[str, Any],
        **kw: Unpack[RequestKeywords],
    ) -> ControlOutcome:
        """Replaces the named top-level fields of the configuration."""
        ...

    def control(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        action: Action | str,
        **kw: Unpack[ControlKeywords],
    ) -> ControlOutcome:
        """Applies one control under the revision compare-and-swap."""
        ...

    def detail(
        self, actor: UUID | str, schedule: UUID | str, *, workspace: UUID | None = None
    ) -> dict[str, Any]:
        """The document's detail projection (``workspaceId`` names its workspace)."""
        ...

    def page(self, actor: UUID | str, workspace: UUID | str, **kw: Unpack[PageKeywords]) -> Page:
        """One page of a workspace's documents in mission-ID order, tombstones included."""
        ...

    def preview(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        count: int = 5,
        *,
        workspace: UUID | None = None,
    ) -> list[dict[str, Any]]:
        """The next ``count`` slots; before the first Play, as if Play happened now."""
        ...

    def preview_draft(
        self,
        actor: UUID | str,
        workspace: UUID | str,
        config: Mapping[str, Any],
        count: int = 5,
        *,
        schedule: UUID | str | None = None,
    ) -> dict[str, Any]:
        """What a draft configuration would do (sentence, slots, warnings), written
        nowhere; with ``schedule``, ``config`` is an edit's changes, and the answer adds
        the saved slots (``before``) and whether saving launches a catch-up."""
        ...

    def control_status(
        self, actor: UUID | str, schedule: UUID | str, request_id: str, **kw: Unpack[StatusKeywords]
    ) -> ControlStatus:
        """The exact status of a control by its request ID; a read only."""
        ...

    def ledger(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        *,
        workspace: UUID | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        after: str | None = None,
        limit: int = LEDGER_PAGE,
    ) -> dict[str, Any]:
        """One page of the slot ledger's rows overlapping ``[start, end)``, with the
        window's counts."""
        ...

    def why(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        at: str,
        *,
        zone: str | None = None,
        workspace: UUID | None = None,
    ) -> dict[str, Any]:
        """Why the slot at the wall time ``at`` did or did not run."""
        ...


class MissionSession(Reporter, Protocol):
    """What a workspace or schedule command asks of its session, local or on a server:
    what printing its result needs (:class:`~kalends.cli.session.Reporter`), and these."""

    @property
    def workspaces(self) -> WorkspacesClient: ...

    @property
    def schedules(self) -> SchedulesClient: ...

    @property
    def server(self) -> str | None:
        """The server the command runs against; ``None`` in local mode."""
        ...

    def read_together(self, fn: Callable[[], T]) -> T:
        """Runs ``fn``'s reads: locally in one read transaction, so that they agree with
        each other; on a server each is its own request."""
        ...
