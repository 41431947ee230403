"""The reads of :class:`~kalends.missions.service.ScheduleService`, and what each of its
operations shares: one transaction (busy past every retry: not dispatched) and the scope
check that comes first in it (the actor's role on the workspace, and that the schedule is
one of the workspace's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar, Unpack
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.auth import Privilege, require_privilege
from kalends.civil import Slot, check_zone_name, describe, format_local
from kalends.errors import (
    ControlConflict,
    DatabaseBusy,
    InvalidInput,
    NotDispatched,
    NotFound,
    RunPrivilegeRequired,
)
from kalends.identity import Role, parse_uuid, require_role, resolve_actor
from kalends.keywords import takes
from kalends.missions import repository
from kalends.missions.condition_check import check_condition
from kalends.missions.config import Config, config_from_json, config_to_json
from kalends.missions.controls import Action, DocState, edit_refusal, refusal
from kalends.missions.decide import Launch, decide
from kalends.missions.document import Body, Phase, check_not_past, preview_slots
from kalends.missions.keywords import PageKeywords, StatusKeywords
from kalends.missions.ledger_reads import (
    LEDGER_PAGE,
    check_limit,
    check_window,
    decode_cursor,
    empty_counts,
    explain,
    ledger_page,
    parse_wall_time,
)
from kalends.missions.limits import MAX_PAGE, MAX_PREVIEW, ON_CHANGE_CHECK_MINUTES
from kalends.missions.outcomes import ControlStatus, Page
from kalends.missions.passage_beats import read_beat
from kalends.missions.refusals import refusal_of
from kalends.missions.requests import check_request_id, check_revision
from kalends.missions.reservation_writes import passage_zone
from kalends.missions.rows import ControlRecord, Schedule, ScheduleRead
from kalends.missions.stored_documents import doc_of
from kalends.missions.views import iso, project, project_tombstone
from kalends.missions.workspaces import check_within, workspace_role
from kalends.missions.zone_change_reads import read_zone_changes
from kalends.storage.unit_of_work import Store

__all__ = ["ScheduleReads", "edited_config", "present", "schedule_id_of", "seen", "unseen"]

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
            doc = with_recorded_tail(conn, self._project(seen(row, schedule_id, Role.VIEWER)))
            if row is not None and row.phase != Phase.TOMBSTONE:
                # Only when new zone data moved a slot lately: a list item stays the same.
                changes = read_zone_changes(conn, schedule_id, self.store.clock.now())
                if changes:
                    doc["zoneChanges"] = changes
            return doc

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
        _check_count(count)
        schedule_id = schedule_id_of(schedule)

        def run(conn: Connection) -> list[dict[str, Any]]:
            actor_id = resolve_actor(conn, actor)
            row = repository.read_schedule(conn, actor_id, schedule_id)
            row = seen(row, schedule_id, Role.VIEWER)
            if row.phase == Phase.TOMBSTONE:
                return []
            doc = doc_of(row)
            slots = preview_slots(doc.config, doc.body, self.store.clock.now(), count)
            return [_slot_json(s) for s in slots]

        return self._run(run, write=False)

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
        """The slot ledger's rows overlapping ``[start, end)`` (issue 24 §1), at most
        ``limit`` ascending by slot after the cursor ``after``, with ``nextAfter`` and the
        window's counts (:func:`~kalends.missions.ledger_reads.ledger_page`). A deleted
        schedule's ledger is empty. With ``workspace``, only of a schedule of that
        workspace (checked first)."""
        if workspace is not None:
            return self._within(
                actor,
                workspace,
                schedule,
                lambda: self.ledger(
                    actor, schedule, start=start, end=end, after=after, limit=limit
                ),
                write=False,
            )
        size = check_limit(limit)
        first, last = check_window(start, end)
        cursor = None if after is None else decode_cursor(after)
        schedule_id = schedule_id_of(schedule)

        def run(conn: Connection) -> dict[str, Any]:
            actor_id = resolve_actor(conn, actor)
            row = seen(
                repository.read_schedule(conn, actor_id, schedule_id), schedule_id, Role.VIEWER
            )
            answer: dict[str, Any] = {
                "missionId": str(schedule_id),
                "zone": "UTC",
                "from": iso(first),
                "to": iso(last),
                "items": [],
                "nextAfter": None,
                "counts": empty_counts(),
            }
            if row.phase == Phase.TOMBSTONE:
                return answer
            answer["zone"] = passage_zone(doc_of(row).config)
            items, following, counts = ledger_page(
                conn, schedule_id, start=first, end=last, after=cursor, limit=size
            )
            answer.update(items=items, nextAfter=following, counts=counts)
            return answer

        return self._run(run, write=False)

    def why(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        at: str,
        *,
        zone: str | None = None,
        workspace: UUID | None = None,
    ) -> dict[str, Any]:
        """Why the slot at the wall time ``at`` (in ``zone``, else the policy's zone) did or
        did not run: the ledger row that records it, else what the policy and the document
        say (:func:`~kalends.missions.ledger_reads.explain`). A deleted schedule is not
        found. With ``workspace``, only of a schedule of that workspace (checked first)."""
        if workspace is not None:
            return self._within(
                actor,
                workspace,
                schedule,
                lambda: self.why(actor, schedule, at, zone=zone),
                write=False,
            )
        wall = parse_wall_time(at)
        named = None if zone is None else check_zone_name(zone)
        schedule_id = schedule_id_of(schedule)

        def run(conn: Connection) -> dict[str, Any]:
            actor_id = resolve_actor(conn, actor)
            row = seen(
                repository.read_schedule(conn, actor_id, schedule_id), schedule_id, Role.VIEWER
            )
            if row.phase == Phase.TOMBSTONE:
                raise NotFound(f"schedule: schedule {schedule_id} is deleted", field="schedule")
            doc = doc_of(row)
            now = self.store.clock.now()
            live = (
                row.wake_owner is not None and row.wake_lease is not None and row.wake_lease > now
            )
            return explain(
                conn,
                schedule_id,
                doc,
                wall,
                named or passage_zone(doc.config),
                now,
                scheduler_live=live,
            )

        return self._run(run, write=False)

    def preview_draft(
        self,
        actor: UUID | str,
        workspace: UUID | str,
        config: Mapping[str, Any],
        count: int = 5,
        *,
        schedule: UUID | str | None = None,
    ) -> dict[str, Any]:
        """What a draft configuration would do, written nowhere: ``sentence``, the policy in
        words; ``slots``, its next ``count`` slots; and ``warnings``, what saving or the
        first Play would meet. The actor needs the editor role on ``workspace``.

        Without ``schedule`` the draft is a new schedule's configuration, parsed and checked
        as :meth:`create` does (the same errors), its slots shown as if Play happened now.
        With ``schedule`` (one of the workspace's) it is an edit: ``config`` names the
        fields it changes, parsed as :meth:`configure` parses ``changes`` (the rest kept,
        the environment's values too when the profile names no ``env``), its slots
        counted from the saved schedule's own state; the answer adds ``before``, the saved
        configuration's next slots, and ``catchUp`` with ``catchUpSlot``: whether saving
        would launch a catch-up passage at once, and for which slot
        (:func:`catch_up_slot`)."""
        _check_count(count)
        if not isinstance(config, Mapping):
            raise InvalidInput("config: must be a JSON object", field="config")
        schedule_id = None if schedule is None else schedule_id_of(schedule)
        fresh = config_from_json(config, new=True) if schedule_id is None else None

        def run(conn: Connection) -> dict[str, Any]:
            actor_id = _actor_id(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.EDITOR)
            now = self.store.clock.now()
            warnings: list[str] = []
            if schedule_id is None:
                assert fresh is not None
                check_condition(conn, fresh, workspace_id=workspace_id, schedule_id=None, now=now)
                warnings += _privilege(conn, actor_id, "creating a schedule")
                return _draft(fresh, Body(), now, count, warnings)
            check_within(conn, actor_id, workspace_id, schedule_id)
            row = present(repository.read_schedule(conn, actor_id, schedule_id), schedule_id)
            if row.phase == Phase.TOMBSTONE:
                raise ControlConflict(
                    f"schedule {schedule_id} is deleted", action="configure", reason="deleted"
                )
            doc = doc_of(row)
            new = edited_config(doc, config)
            if "condition" in config:
                check_condition(
                    conn, new, workspace_id=row.workspace_id, schedule_id=row.id, now=now
                )
            why = refusal(Action.CONFIGURE, doc) or edit_refusal(doc, new)
            if why is not None:
                warnings.append(f"saving this change is refused now: {why}")
            if new.profile != doc.config.profile:
                warnings += _privilege(conn, actor_id, "changing a schedule's command, env or cwd")
            answer = _draft(new, doc.body, now, count, warnings)
            answer["before"] = [
                _slot_json(s) for s in preview_slots(doc.config, doc.body, now, count)
            ]
            caught = catch_up_slot(doc, new, now) if why is None else None
            answer["catchUp"] = caught is not None
            answer["catchUpSlot"] = None if caught is None else _slot_json(caught)
            if caught is not None:
                warnings.append(
                    f"saving launches one catch-up passage at once, for the missed slot "
                    f"{format_local(caught.local)} {caught.zone}"
                )
            return answer

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


def _check_count(count: object) -> None:
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_PREVIEW:
        raise InvalidInput(f"count: must be 1-{MAX_PREVIEW}, got {count!r}", field="count")


def _slot_json(slot: Slot) -> dict[str, Any]:
    """A previewed slot as reads show it: the instant, its wall time, zone and DST note."""
    return {
        "at": iso(slot.at),
        "local": format_local(slot.local),
        "zone": slot.zone,
        "dst": None if slot.dst is None else slot.dst.value,
    }


def edited_config(doc: DocState, changes: Mapping[str, Any]) -> Config:
    """The configuration ``changes`` makes of ``doc``'s, parsed as Configure parses it;
    whether the edit is allowed now is :func:`~kalends.missions.controls.edit_refusal`'s."""
    merged = config_to_json(doc.config)
    unknown = sorted(set(changes) - set(merged))
    if unknown:
        raise InvalidInput(f"{unknown[0]}: is not a known field", field=unknown[0])
    merged.update(changes)
    profile = changes.get("profile")
    if isinstance(profile, Mapping) and "env" not in profile:
        # The environment's values are never shown, so an edit that names no
        # environment keeps the current one; ``"env": {}`` clears it.
        merged["profile"] = {**profile, "env": doc.config.profile.to_json()["env"]}
    profile = merged.get("profile")
    if isinstance(profile, Mapping) and "agent" not in profile and doc.config.profile.agent:
        # Likewise the agent preset (a form that shows the command alone keeps it);
        # ``"agent": null`` removes it.
        merged["profile"] = {**profile, "agent": doc.config.profile.agent}
    return config_from_json(
        merged,
        new="title" in changes,
        stored_profile="profile" not in changes,
        stored_condition="condition" not in changes,
    )


def catch_up_slot(doc: DocState, new: Config, now: datetime) -> Slot | None:
    """The slot of the catch-up passage saving ``new`` over ``doc`` at ``now`` would
    launch at once, or ``None``.

    What the code does: a saved edit of a running schedule arms its wake at once, and the
    scheduler then decides on the saved document
    (:func:`~kalends.missions.decide.decide`). It launches when the schedule is running,
    not Interrupted, with no passage pending and quota left, and the new policy has a slot
    after the recorded high-water mark (the newest slot already processed, or the last
    Play) and not after ``now`` (:func:`~kalends.missions.document.latest_missed`): only
    the latest such slot, the older ones skipped, and none past the end bounds.
    """
    decision = decide(replace(doc, config=new), now)
    return decision.slot if isinstance(decision, Launch) else None


def _privilege(conn: Connection, actor_id: UUID, doing: str) -> list[str]:
    """A warning when the actor lacks the run privilege that saving needs."""
    try:
        require_privilege(conn, actor_id, Privilege.RUN, doing)
    except RunPrivilegeRequired as exc:
        return [exc.message]
    return []


_ON_CHANGE_SENTENCE = (
    f"Whenever the condition holds, checked every {ON_CHANGE_CHECK_MINUTES} minutes from Play"
)


def _draft(
    config: Config, body: Body, now: datetime, count: int, warnings: list[str]
) -> dict[str, Any]:
    """The answer of :meth:`ScheduleReads.preview_draft`: ``config``'s sentence, its slots
    from ``body`` (as if Play happened now before the first Play) and ``warnings``."""
    slots = preview_slots(config, body, now, count)
    if body.first_play_at is None:
        try:
            check_not_past(config, now)
        except InvalidInput as exc:
            warnings.append(f"Play would be refused: {exc.message}")
        if config.policy.kind in ("immediate", "after", "every") or config.end.within:
            warnings.append(
                "times counted from the first Play are shown as if Play happened now; "
                "the first Play freezes them"
            )
    if not slots:
        warnings.append("no slot is left under this policy, its end bounds and its quota")
    if config.one_shot and (config.end.max_passages or 0) > 1:
        warnings.append("a one-time policy launches at most once, whatever the passage limit")
    return {
        "sentence": _ON_CHANGE_SENTENCE if config.on_change else describe(config.policy),
        "slots": [_slot_json(s) for s in slots],
        "warnings": warnings,
    }


def with_recorded_tail(conn: Connection, doc: dict[str, Any]) -> dict[str, Any]:
    """The detail with the end of its pending passage's output as its node or shim last
    recorded it (``pending.logTail``, and when in ``pending.recordedAt``), for a passage
    a worker node admitted: the output of a passage on another machine, which no local
    runtime directory holds (a server's own directory, when it holds the passage, gives
    a fresher tail on top)."""
    pending = doc.get("pending")
    if not isinstance(pending, dict) or not pending.get("node") or not pending.get("admitted"):
        return doc
    row = read_beat(conn, str(pending["sessionId"]))
    if row is None or row.observation is None or row.node_id != pending["node"]:
        return doc
    pending["logTail"] = row.observation.log_tail
    pending["recordedAt"] = iso(row.beat_at)
    return doc
