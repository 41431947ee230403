"""The reads of :class:`~kalends.missions.service.ScheduleService`, and what each of its
operations shares: one transaction (busy past every retry: not dispatched) and the scope
check that comes first in it (the actor's role on the workspace, and that the schedule is
one of the workspace's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, Unpack
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.civil import format_local
from kalends.errors import DatabaseBusy, InvalidInput, NotDispatched, NotFound
from kalends.identity import Role, parse_uuid, require_role, resolve_actor
from kalends.keywords import takes
from kalends.missions import repository
from kalends.missions.controls import Action, DocState, refusal
from kalends.missions.document import Phase, preview_slots
from kalends.missions.keywords import PageKeywords, StatusKeywords
from kalends.missions.limits import MAX_PAGE, MAX_PREVIEW
from kalends.missions.outcomes import ControlStatus, Page
from kalends.missions.refusals import refusal_of
from kalends.missions.requests import check_request_id, check_revision
from kalends.missions.rows import ControlRecord, Schedule, ScheduleRead
from kalends.missions.stored_documents import doc_of
from kalends.missions.views import iso, project, project_tombstone
from kalends.missions.workspaces import check_within, workspace_role
from kalends.storage.unit_of_work import Store

__all__ = ["ScheduleReads", "present", "schedule_id_of", "seen", "unseen"]

T = TypeVar("T")


def _actor_id(conn: Connection, actor: UUID | str) -> UUID:
    # An ID the caller already holds (a principal's) is used as is: an unknown one is a
    # member of nothing, so it sees no workspace.
    return actor if isinstance(actor, UUID) else resolve_actor(conn, actor)


def schedule_id_of(value: object) -> UUID:
    """The schedule a caller names: a mission ID, else :class:`InvalidInput`."""
    as_id = parse_uuid(value, "schedule")
    if as_id is None:
        raise InvalidInput(f"schedule: not a mission ID: {value!r}", field="schedule")
    return as_id


def unseen(schedule_id: UUID) -> NotFound:
    """What a caller is told of a schedule that does not exist, or that it may not see."""
    return NotFound(f"schedule: no schedule {schedule_id}", field="schedule")


def present(row: ScheduleRead | None, schedule_id: UUID) -> ScheduleRead:
    """``row``, read again after its role was checked in the same transaction."""
    if row is None:
        raise unseen(schedule_id)
    return row


def seen(row: ScheduleRead | None, schedule_id: UUID, minimum: Role) -> ScheduleRead:
    """``row`` once the actor's role on its workspace reaches ``minimum``; a schedule of a
    workspace the actor is no member of is one that does not exist."""
    not_found = unseen(schedule_id)
    if row is None:
        raise not_found
    require_role(row.role, minimum, scope="workspace", unseen=not_found)
    return row


class ScheduleReads:
    """Read schedule documents; the transaction and scope check of every operation."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _run(self, run: Callable[[Connection], T], *, write: bool = True) -> T:
        """``run`` in one transaction; a store that stays busy past every retry is
        :class:`NotDispatched`: nothing was written, and the caller keeps its request ID."""
        try:
            return self.store.run(run, write=write)
        except NotDispatched:
            raise
        except DatabaseBusy as exc:
            raise NotDispatched(exc.message, **exc.details) from exc

    # --- scope ---------------------------------------------------------------------------

    def within(self, actor: UUID | str, workspace: UUID, schedule: UUID | str) -> None:
        """Nothing when the actor may read ``workspace`` and ``schedule`` is one of its
        schedules; else :class:`NotFound` (a workspace the actor has no role on is one
        that does not exist) or :class:`~kalends.missions.workspaces.OutsideWorkspace`."""
        self._within(actor, workspace, schedule, lambda: None, write=False)

    def _within(
        self,
        actor: UUID | str,
        workspace: UUID | None,
        schedule: UUID | str,
        operation: Callable[[], T],
        *,
        write: bool,
    ) -> T:
        """``operation`` after the scope check (:meth:`within`), in one transaction;
        without ``workspace``, ``operation`` alone."""
        if workspace is None:
            return operation()
        schedule_id = schedule_id_of(schedule)
        if self.store.in_transaction:
            # The caller's own transaction: whatever fails rolls all of it back, so no
            # savepoint is needed around this part.
            with self.store.transaction(write=False) as conn:
                check_within(conn, _actor_id(conn, actor), workspace, schedule_id)
            return operation()

        def run(conn: Connection) -> T:
            check_within(conn, _actor_id(conn, actor), workspace, schedule_id)
            return operation()

        return self._run(run, write=write)

    # --- reads --------------------------------------------------------------------------

    def _project(self, row: Schedule, doc: DocState | None = None) -> dict[str, Any]:
        """The detail of ``row``; ``doc``: its document when already parsed (just written)."""
        if row.phase == Phase.TOMBSTONE:
            return project_tombstone(row)
        return project(doc if doc is not None else doc_of(row), row, now=self.store.clock.now())

    def detail(
        self, actor: UUID | str, schedule: UUID | str, *, workspace: UUID | None = None
    ) -> dict[str, Any]:
        """The full document projection (seed 002 "Daily document snapshot" and the
        unified list/detail projections). With ``workspace``, only of a schedule of that
        workspace (checked first)."""
        if workspace is not None:
            return self._within(
                actor, workspace, schedule, lambda: self.detail(actor, schedule), write=False
            )
        schedule_id = schedule_id_of(schedule)

        def run(conn: Connection) -> dict[str, Any]:
            actor_id = resolve_actor(conn, actor)
            row = repository.read_schedule(conn, actor_id, schedule_id)
            return self._project(seen(row, schedule_id, Role.VIEWER))

        return self._run(run, write=False)

    @takes(PageKeywords, limit=MAX_PAGE)
    def page(self, actor: UUID | str, workspace: UUID | str, **kw: Unpack[PageKeywords]) -> Page:
        """At most eight documents in mission-ID order after ``after``; tombstones take
        their place on the page and the cursor moves past them."""
        after, limit = kw.get("after"), kw.get("limit", MAX_PAGE)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit: must be 1-{MAX_PAGE}, got {limit!r}", field="limit")
        cursor = None
        if after is not None:
            cursor = parse_uuid(after, "after")
            if cursor is None:
                raise InvalidInput(f"after: not a mission ID: {after!r}", field="after")

        def run(conn: Connection) -> Page:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.VIEWER)
            rows = repository.read_page(conn, workspace_id, cursor, limit + 1)
            more = len(rows) > limit
            rows = rows[:limit]
            items = [self._project(r) for r in rows]
            return Page(items=items, next_after=str(rows[-1].id) if more else None)

        return self._run(run, write=False)

    def preview(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        count: int = 5,
        *,
        workspace: UUID | None = None,
    ) -> list[dict[str, Any]]:
        """The next ``count`` slots under the current policy, end bounds and quota; before
        the first Play, as if Play happened now. With ``workspace``, only of a schedule of
        that workspace (checked first)."""
        if workspace is not None:
            return self._within(
                actor,
                workspace,
                schedule,
                lambda: self.preview(actor, schedule, count),
                write=False,
            )
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_PREVIEW:
            raise InvalidInput(f"count: must be 1-{MAX_PREVIEW}, got {count!r}", field="count")
        schedule_id = schedule_id_of(schedule)

        def run(conn: Connection) -> list[dict[str, Any]]:
            actor_id = resolve_actor(conn, actor)
            row = repository.read_schedule(conn, actor_id, schedule_id)
            row = seen(row, schedule_id, Role.VIEWER)
            if row.phase == Phase.TOMBSTONE:
                return []
            doc = doc_of(row)
            slots = preview_slots(doc.config, doc.body, self.store.clock.now(), count)
            return [
                {
                    "at": iso(s.at),
                    "local": format_local(s.local),
                    "zone": s.zone,
                    "dst": None if s.dst is None else s.dst.value,
                }
                for s in slots
            ]

        return self._run(run, write=False)

    # --- status reads -------------------------------------------------------------------

    @takes(StatusKeywords)
    def control_status(
        self, actor: UUID | str, schedule: UUID | str, request_id: str, **kw: Unpack[StatusKeywords]
    ) -> ControlStatus:
        """The exact status of a control (seed 002): ``applied`` when its record is kept;
        ``rejected`` only when the store proves it never applied and never can, with the
        code and reason its answer carried when its refusal is recorded; otherwise
        ``unknown`` (evicted, never seen, or still able to apply). A read only. With
        ``workspace``, only of a schedule of that workspace (checked first).
        """
        return self._within(
            actor,
            kw.get("workspace"),
            schedule,
            lambda: self._control_status(actor, schedule, request_id, **kw),
            write=False,
        )

    def _control_status(
        self, actor: UUID | str, schedule: UUID | str, request_id: str, **kw: Unpack[StatusKeywords]
    ) -> ControlStatus:
        """:meth:`control_status` once its scope is checked (``workspace`` is not read)."""
        request_id = check_request_id(request_id)
        schedule_id = schedule_id_of(schedule)
        expected_revision, action = kw.get("expected_revision"), kw.get("action")
        expected = None if expected_revision is None else check_revision(expected_revision)
        act = None
        if action is not None:
            try:
                act = Action(action)
            except ValueError:
                raise InvalidInput(f"action: unknown control {action!r}", field="action") from None

        def run(conn: Connection) -> ControlStatus:
            actor_id = resolve_actor(conn, actor)
            row = repository.read_schedule(conn, actor_id, schedule_id)
            row = seen(row, schedule_id, Role.VIEWER)
            record = repository.control_record(conn, schedule_id, request_id)
            if record is not None:
                return _recorded_status(record)
            return _unrecorded_status(request_id, row, expected, act)

        return self._run(run, write=False)


def _recorded_status(record: ControlRecord) -> ControlStatus:
    """The status of a control whose record is kept: applied, or its recorded refusal."""
    refused = refusal_of(record.outcome)
    if refused is None:
        return ControlStatus(
            request_id=record.request_id,
            status="applied",
            action=record.action,
            expected_revision=record.expected_revision,
            revision=record.recorded_revision,
            complete=record.complete,
            at=record.at,
        )
    reason = refused.details.get("reason")
    return ControlStatus(
        request_id=record.request_id,
        status="rejected",
        code=refused.code,
        action=record.action,
        expected_revision=record.expected_revision,
        at=record.at,
        reason=reason if isinstance(reason, str) else refused.message,
    )


def _unrecorded_status(
    request_id: str, row: ScheduleRead, expected: int | None, act: Action | None
) -> ControlStatus:
    """The status of a control with no record: rejected when ``row`` proves it never
    applied and never can (a revision passed without it and not evicted, or a control the
    document's state refuses at its revision), else unknown."""
    action = None if act is None else act.value
    unknown = ControlStatus(
        request_id=request_id, status="unknown", action=action, expected_revision=expected
    )
    if expected is None or row.phase == Phase.TOMBSTONE:
        return unknown
    if expected < row.revision:
        if expected + 1 > row.evicted_control_revision:
            return ControlStatus(
                request_id=request_id,
                status="rejected",
                code="revision-conflict",
                action=action,
                expected_revision=expected,
                reason=f"the schedule moved past revision {expected} without it",
            )
        return unknown
    if expected == row.revision and act is not None:
        why = refusal(act, doc_of(row))
        if why is not None:
            return ControlStatus(
                request_id=request_id,
                status="rejected",
                code="control-conflict",
                action=act.value,
                expected_revision=expected,
                reason=why,
            )
    return unknown
