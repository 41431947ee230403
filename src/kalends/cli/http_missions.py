"""Server mode's workspace and schedule clients: each call of
:mod:`kalends.cli.mission_client` as a request to the HTTP API, its answer read back with
the values' ``from_json``.

The server acts as the token's owner, so the ``actor`` every call takes is not sent.
Workspaces are named by ID on the API and by name or ID on the command line
(:meth:`MissionWire.workspace_id`); a schedule given by its ID alone is found with ``GET
/api/missions/{id}``, whose detail names its workspace, and then addressed through it.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, Unpack
from uuid import UUID

from kalends.cli.http import ServerError, path_part
from kalends.cli.http_tasks import Wire
from kalends.errors import InvalidInput, NotFound
from kalends.identity import Role
from kalends.missions import Action, ControlOutcome, ControlStatus, Member, Receipt, Workspace
from kalends.missions.keywords import ControlKeywords, PageKeywords, RequestKeywords, StatusKeywords
from kalends.missions.ledger_reads import LEDGER_PAGE
from kalends.missions.limits import MAX_PAGE
from kalends.missions.outcomes import Page

__all__ = ["HttpSchedules", "HttpWorkspaces", "MissionWire"]


class MissionWire(Wire, Protocol):
    """The requests a server-mode session sends, and how it names workspaces and actors
    (:class:`~kalends.cli.remote.Remote`)."""

    def workspace_id(self, ref: str) -> str:
        """A workspace by ID, or by exact name among the caller's workspaces."""
        ...

    def member_id(self, ref: str) -> str:
        """An actor by ID, or by handle in the server's directory of actors."""
        ...


def _value(given: Role | Action | str) -> str:
    return given.value if isinstance(given, Role | Action) else given


@dataclass(frozen=True, slots=True)
class HttpWorkspaces:
    wire: MissionWire

    def _workspace(self, workspace: UUID | str, *rest: str) -> str:
        return "/".join(("/api/workspaces", self.wire.workspace_id(str(workspace)), *rest))

    def add(
        self, actor: UUID | str, path: str | os.PathLike[str], name: str | None = None
    ) -> Workspace:
        body = {"path": _absolute(os.fspath(path)), "name": name}
        return Workspace.from_json(self.wire.post("/api/workspaces", body))

    def list(self, actor: UUID | str) -> builtins.list[Workspace]:
        return [Workspace.from_json(d) for d in self.wire.get("/api/workspaces")]

    def get(self, actor: UUID | str, workspace: UUID | str) -> Workspace:
        return Workspace.from_json(self.wire.get(self._workspace(workspace)))

    def remove(self, actor: UUID | str, workspace: UUID | str) -> None:
        self.wire.delete(self._workspace(workspace))

    def members(self, actor: UUID | str, workspace: UUID | str) -> builtins.list[Member]:
        return [Member.from_json(d) for d in self.wire.get(self._workspace(workspace, "members"))]

    def set_member(
        self, actor: UUID | str, workspace: UUID | str, member: UUID | str, role: str | Role
    ) -> Member:
        route = self._workspace(workspace, "members")
        route = f"{route}/{self.wire.member_id(str(member))}"
        return Member.from_json(self.wire.put(route, {"role": _value(role)}))

    def remove_member(self, actor: UUID | str, workspace: UUID | str, member: UUID | str) -> None:
        route = self._workspace(workspace, "members")
        self.wire.delete(f"{route}/{self.wire.member_id(str(member))}")


@dataclass(frozen=True, slots=True)
class HttpSchedules:
    wire: MissionWire

    def _scheduled(self, workspace: UUID | str, *rest: str) -> str:
        """``/api/workspaces/W/missions/scheduled[/…]``."""
        wid = self.wire.workspace_id(str(workspace))
        return "/".join((f"/api/workspaces/{wid}/missions/scheduled", *rest))

    def _by_id(self, schedule: UUID | str) -> dict[str, Any]:
        """The detail of a schedule named by its ID alone, in whichever workspace holds it."""
        mission = _mission(schedule)
        try:
            found: dict[str, Any] = self.wire.get(f"/api/missions/{mission}")
        except ServerError as exc:
            if exc.status != 404:
                raise
            raise NotFound(f"schedule: no schedule {mission}", field="schedule") from None
        return found

    def _route(self, schedule: UUID | str, workspace: UUID | None, *rest: str) -> str:
        """``/api/workspaces/W/missions/M/schedule[/…]``; W found from M when not given."""
        mission = _mission(schedule)
        if workspace is None:
            workspace = UUID(str(self._by_id(mission)["workspaceId"]))
        return "/".join((f"/api/workspaces/{workspace}/missions/{mission}/schedule", *rest))

    def create(
        self,
        actor: UUID | str,
        workspace: UUID | str,
        config: Mapping[str, Any],
        *,
        request_id: str,
    ) -> Receipt:
        body = {"requestID": request_id, "config": dict(config)}
        return Receipt.from_json(self.wire.post(self._scheduled(workspace), body))

    def receipt(self, actor: UUID | str, workspace: UUID | str, request_id: str) -> Receipt:
        route = self._scheduled(workspace, "requests", path_part(request_id))
        return Receipt.from_json(self.wire.get(route))

    def configure(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        changes: Mapping[str, Any],
        **kw: Unpack[RequestKeywords],
    ) -> ControlOutcome:
        return self.control(actor, schedule, Action.CONFIGURE, changes=changes, **kw)

    def control(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        action: Action | str,
        **kw: Unpack[ControlKeywords],
    ) -> ControlOutcome:
        route = self._route(schedule, kw.get("workspace"))
        body: dict[str, Any] = {
            "requestID": kw["request_id"],
            "expectedRevision": kw["expected_revision"],
        }
        if _value(action) == Action.RUN_NOW.value:
            return ControlOutcome.from_json(self.wire.post(f"{route}/run-now", body))
        body = {"action": _value(action), **body}
        changes = kw.get("changes")
        if changes is not None:
            body["changes"] = dict(changes)
        return ControlOutcome.from_json(self.wire.post(route, body))

    def detail(
        self, actor: UUID | str, schedule: UUID | str, *, workspace: UUID | None = None
    ) -> dict[str, Any]:
        if workspace is None:
            return self._by_id(schedule)
        found: dict[str, Any] = self.wire.get(self._route(schedule, workspace))
        return found

    def page(self, actor: UUID | str, workspace: UUID | str, **kw: Unpack[PageKeywords]) -> Page:
        after = kw.get("after")
        answer = self.wire.get(
            self._scheduled(workspace),
            after=None if after is None else str(after),
            limit=kw.get("limit", MAX_PAGE),
        )
        return Page.from_json(answer)

    def preview(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        count: int = 5,
        *,
        workspace: UUID | None = None,
    ) -> list[dict[str, Any]]:
        slots: list[dict[str, Any]] = self.wire.get(
            self._route(schedule, workspace, "preview"), count=count
        )
        return slots

    def preview_draft(
        self,
        actor: UUID | str,
        workspace: UUID | str,
        config: Mapping[str, Any],
        count: int = 5,
        *,
        schedule: UUID | str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"config": dict(config), "count": count}
        if schedule is not None:
            body["missionID"] = _mission(schedule)
        answer: dict[str, Any] = self.wire.post(self._scheduled(workspace, "preview"), body)
        return answer

    def control_status(
        self, actor: UUID | str, schedule: UUID | str, request_id: str, **kw: Unpack[StatusKeywords]
    ) -> ControlStatus:
        route = self._route(schedule, kw.get("workspace"), "requests", path_part(request_id))
        action = kw.get("action")
        act = None if action is None else _value(action)
        answer = self.wire.get(route, expectedRevision=kw.get("expected_revision"), action=act)
        return ControlStatus.from_json(answer)

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
        window = {
            "from": None if start is None else _instant(start, "from"),
            "to": None if end is None else _instant(end, "to"),
        }
        answer: dict[str, Any] = self.wire.get(
            self._route(schedule, workspace, "ledger"), after=after, limit=limit, **window
        )
        return answer

    def why(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        at: str,
        *,
        zone: str | None = None,
        workspace: UUID | None = None,
    ) -> dict[str, Any]:
        answer: dict[str, Any] = self.wire.get(
            self._route(schedule, workspace, "why"), at=at, zone=zone
        )
        return answer


def _mission(schedule: UUID | str) -> str:
    """A schedule's ID as the API spells it; anything else is refused before a request."""
    if isinstance(schedule, UUID):
        return str(schedule)
    try:
        return str(UUID(schedule.strip()))
    except ValueError:
        raise InvalidInput(f"schedule: not a mission ID: {schedule!r}", field="schedule") from None


def _instant(value: datetime, field: str) -> str:
    """An aware instant as the API takes it (a naive one is refused before a request)."""
    if value.utcoffset() is None:
        raise InvalidInput(f"{field}: an aware instant is required, got {value!r}", field=field)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _absolute(path: str) -> str:
    """A path the server can find: relative ones are taken from the current directory."""
    return os.path.abspath(os.path.expanduser(path)) if path.strip() else path
