"""Schedule documents and their controls: one transaction per operation.

Every mutation is one compare-and-swap on the document's revision. Controls
carry a request ID and the revision the caller saw: a repeated request ID
returns the original outcome and never acts twice; a stale revision is a
conflict that changes nothing (seed 002 "Daily document controls"). A control
refused at its own revision, or at one not reached yet, changes nothing of the
document either; its refusal is recorded under its request ID, so that a repeat
and the exact status read answer what the refusal answered
(:mod:`kalends.missions.refusals`).

Each operation checks who asks, and in which scope, before anything else in its
transaction, then reads and writes through :mod:`kalends.missions.repository`; the
reads, the transaction and the scope check are :mod:`kalends.missions.schedule_reads`'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from types import MethodType
from typing import Any, Protocol, Unpack, overload
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.auth import Privilege, require_privilege
from kalends.errors import (
    ControlConflict,
    InvalidInput,
    KalendsError,
    LimitReached,
    RequestReused,
    ScheduleRevisionConflict,
)
from kalends.identity import Role, resolve_actor
from kalends.keywords import takes
from kalends.missions import repository
from kalends.missions.agents import refuse_missing_agent
from kalends.missions.checklists import workspace_list
from kalends.missions.condition_check import check_condition, cycle_of
from kalends.missions.config import Config, config_from_json, config_to_json
from kalends.missions.config_condition import Condition, parse_condition
from kalends.missions.controls import Action, Applied, DocState, apply, edit_refusal, refusal
from kalends.missions.document import Body, Phase, State, check_not_past, with_checkpoint
from kalends.missions.gate_records import Checkpoint, source_key
from kalends.missions.keywords import ControlKeywords, RequestKeywords
from kalends.missions.ledger import Entry, play_entries, stop_entries
from kalends.missions.ledger_writes import record
from kalends.missions.limits import MAX_SCHEDULES
from kalends.missions.outcomes import ControlOutcome, ControlStatus, Page, Receipt
from kalends.missions.refusals import refusal_of
from kalends.missions.requests import (
    ControlRequest,
    check_request_id,
    check_revision,
    request_digest,
)
from kalends.missions.reservation_writes import write_reserved
from kalends.missions.rows import ControlRead, ControlRecord, ScheduleRead, ScheduleRow
from kalends.missions.schedule_reads import (
    ScheduleReads,
    edited_config,
    present,
    schedule_id_of,
    seen,
    unseen,
)
from kalends.missions.source_reads import first_baseline, play_baseline, read_ahead, read_workspace
from kalends.missions.stored_documents import (
    cas_params,
    cas_write,
    cas_write_many,
    compact,
    doc_of,
)
from kalends.missions.supervision_hook import NoSupervision, SupervisionHook, prepare_for_play
from kalends.missions.views import project, project_tombstone
from kalends.missions.watching import check_watch
from kalends.missions.workspaces import workspace_role
from kalends.storage.ids import ids_at
from kalends.storage.unit_of_work import Store, keeping_writes

__all__ = [
    "ControlOutcome",
    "ControlStatus",
    "Page",
    "Receipt",
    "ScheduleService",
    "check_request_id",
    # The scheduler's document writes, reached here as ``docs``:
    "cas_params",
    "cas_write",
    "cas_write_many",
    "compact",
    "doc_of",
]


def _receipt(row: ScheduleRow, *, repeated: bool) -> Receipt:
    tomb = row.phase == Phase.TOMBSTONE
    return Receipt(
        request_id=row.creation_request_id,
        status="deleted" if tomb else "created",
        mission_id=row.id,
        workspace_id=row.workspace_id,
        created_at=row.created_at,
        repeated=repeated,
        schedule=project_tombstone(row) if tomb else project(doc_of(row), row),
    )


def _repeated_create(row: ScheduleRow, digest: str) -> Receipt:
    if row.creation_digest != digest:
        raise RequestReused(
            f"request_id: {row.creation_request_id!r} already created schedule {row.id} "
            "with a different configuration; use a new request ID",
            field="request_id",
        )
    return _receipt(row, repeated=True)


class _ControlCall(Protocol):
    def __call__(
        self, actor: UUID | str, schedule: UUID | str, **kw: Unpack[RequestKeywords]
    ) -> ControlOutcome: ...


class _ControlOf:
    """The method of one control action: :meth:`ScheduleService.control` with that action,
    taking every argument of it but ``changes`` (which only Configure has)."""

    def __init__(self, action: Action) -> None:
        @takes(RequestKeywords)
        def method(
            self: ScheduleService,
            actor: UUID | str,
            schedule: UUID | str,
            **kw: Unpack[RequestKeywords],
        ) -> ControlOutcome:
            return self.control(actor, schedule, action, **kw)

        method.__doc__ = (
            f"Apply {action.value} under the revision compare-and-swap (:meth:`control`); "
            "with ``workspace``, only to a schedule of that workspace (checked first)."
        )
        self._method = method

    def __set_name__(self, owner: type[object], name: str) -> None:
        self._method.__name__ = name
        self._method.__qualname__ = f"{owner.__qualname__}.{name}"

    @overload
    def __get__(self, service: None, owner: type[object]) -> Callable[..., ControlOutcome]: ...

    @overload
    def __get__(self, service: ScheduleService, owner: type[object]) -> _ControlCall: ...

    def __get__(
        self, service: ScheduleService | None, owner: type[object]
    ) -> Callable[..., ControlOutcome] | _ControlCall:
        if service is None:
            return self._method  # as a plain method reads on its class
        return MethodType(self._method, service)


class ScheduleService(ScheduleReads):
    """Create, control, edit, delete and read schedule documents. One transaction each.

    ``supervision``: what a human Play asks of service supervision before its transaction
    (:mod:`kalends.missions.supervision_hook`); none by default."""

    def __init__(self, store: Store, *, supervision: SupervisionHook | None = None) -> None:
        super().__init__(store)
        self.supervision: SupervisionHook = supervision or NoSupervision()

    # --- creation -----------------------------------------------------------------------

    def create(
        self,
        actor: UUID | str,
        workspace: UUID | str,
        config: Mapping[str, Any],
        *,
        request_id: str,
    ) -> Receipt:
        """Create a paused document (it never starts work). Idempotent by ``request_id``.

        The actor needs the editor role on the workspace and the run privilege (a new
        document defines what runs); :class:`~kalends.errors.RunPrivilegeRequired` when
        they lack it, and nothing is written.
        """
        request_id = check_request_id(request_id)
        parsed = config_from_json(config, new=True)
        digest = request_digest("create", config_to_json(parsed))

        def run(conn: Connection) -> Receipt:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.EDITOR)
            require_privilege(conn, actor_id, Privilege.RUN, "creating a schedule")
            found = repository.read_receipt(conn, workspace_id, request_id)
            if found is not None:
                return _repeated_create(found, digest)
            check_condition(
                conn, parsed, workspace_id=workspace_id, schedule_id=None,
                now=self.store.clock.now(),
            )  # fmt: skip
            check_watch(conn, parsed, workspace_id=workspace_id, schedule_id=None)
            live = repository.live_count(conn, workspace_id)
            if live >= MAX_SCHEDULES:
                raise LimitReached(
                    f"workspace: it holds {live} schedules, the most it may hold "
                    f"({MAX_SCHEDULES}); delete one first",
                    field="workspace",
                    limit=MAX_SCHEDULES,
                )
            now = self.store.clock.now()
            (schedule_id,) = ids_at(now, 1)
            first = repository.insert_schedule(
                conn,
                schedule_id=schedule_id,
                workspace_id=workspace_id,
                config=parsed,
                body=Body(checks_since=now),
                request_id=request_id,
                digest=digest,
                now=now,
            )
            if first is not None:
                return _repeated_create(first, digest)
            if parsed.template is not None:
                # The workspace's checklist list is needed from now on: made here, not in
                # the scheduler's round that reserves the first passage.
                workspace_list(conn, workspace_id, now)
            # (the actor's role was checked on the workspace, in this transaction)
            row = present(repository.read_schedule(conn, actor_id, schedule_id), schedule_id)
            return Receipt(
                request_id=request_id,
                status="created",
                mission_id=schedule_id,
                workspace_id=workspace_id,
                created_at=now,
                schedule=project(doc_of(row), row),
            )

        return self._run(run)

    def receipt(self, actor: UUID | str, workspace: UUID | str, request_id: str) -> Receipt:
        """The creation receipt of ``request_id`` (for a lost creation reply); a read only."""
        request_id = check_request_id(request_id)

        def run(conn: Connection) -> Receipt:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.VIEWER)
            row = repository.read_receipt(conn, workspace_id, request_id)
            if row is None:
                return Receipt(request_id=request_id, status="unknown", workspace_id=workspace_id)
            return _receipt(row, repeated=False)

        return self._run(run, write=False)

    # --- controls -----------------------------------------------------------------------

    play = _ControlOf(Action.PLAY)
    pause = _ControlOf(Action.PAUSE)
    stop = _ControlOf(Action.STOP)
    resume = _ControlOf(Action.RESUME)
    run_now = _ControlOf(Action.RUN_NOW)
    check = _ControlOf(Action.CHECK)
    delete = _ControlOf(Action.DELETE)

    @takes(RequestKeywords)
    def configure(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        changes: Mapping[str, Any],
        **kw: Unpack[RequestKeywords],
    ) -> ControlOutcome:
        """Edit the configuration: ``changes`` replaces the named top-level fields.

        What may change follows seed 002's editor table: everything before the first
        admission and between passages; only objective and notes while a passage is
        pending; nothing while its outcome is uncertain; the template only while no
        task was ever created from it. Changing the profile (command, ``env``, ``cwd``)
        also needs the run privilege (:class:`~kalends.errors.RunPrivilegeRequired`,
        nothing written); every other field is the editor role's. With ``workspace``,
        only a schedule of that workspace (checked first, see :meth:`within`).
        """
        return self.control(actor, schedule, Action.CONFIGURE, changes=changes, **kw)

    @takes(ControlKeywords)
    def control(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        action: Action | str,
        **kw: Unpack[ControlKeywords],
    ) -> ControlOutcome:
        """Apply one control under the revision compare-and-swap; with ``workspace``, only
        to a schedule of that workspace (checked first, see :meth:`within`)."""
        # Supervision preparation precedes the control's transaction (seed 002), and runs
        # outside any: it may wait on systemd.
        supervision = prepare_for_play(
            self.supervision, lambda read: self._run(read, write=False), actor, schedule,
            action, kw, self.store.clock.now(),
        )  # fmt: skip
        return self._within(
            actor,
            kw.get("workspace"),
            schedule,
            lambda: self._control(actor, schedule, action, supervision, **kw),
            write=True,
        )

    def _control(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        action: Action | str,
        supervision: dict[str, Any] | None,
        **kw: Unpack[ControlKeywords],
    ) -> ControlOutcome:
        """:meth:`control` once its scope is checked (``workspace`` is not read here);
        ``supervision``: what the Play's preparation answered, carried by its outcome."""
        changes = kw.get("changes")
        try:
            act = Action(action)
        except ValueError:
            raise InvalidInput(
                f"action: unknown control {action!r}; expected one of "
                f"{', '.join(a.value for a in Action)}",
                field="action",
            ) from None
        if act is Action.CONFIGURE and (not isinstance(changes, Mapping) or not changes):
            raise InvalidInput("changes: name at least one field to change", field="changes")
        request_id = check_request_id(kw["request_id"])
        expected = check_revision(kw["expected_revision"])
        schedule_id = schedule_id_of(schedule)
        request = ControlRequest(
            request_id=request_id,
            action=act,
            expected=expected,
            digest=request_digest(act.value, dict(changes) if changes is not None else None),
        )

        ahead = self._read_ahead(actor, act, schedule_id, changes)

        def run(conn: Connection) -> ControlOutcome:
            actor_id = resolve_actor(conn, actor)
            read = repository.read_for_control(conn, actor_id, schedule_id, request_id)
            if read is None:
                raise unseen(schedule_id)
            row = seen(read.schedule, schedule_id, Role.EDITOR)
            if read.repeat is not None:
                return self._repeat_of(conn, read.repeat, row, actor_id, request)
            if row.phase == Phase.TOMBSTONE:
                raise ControlConflict(
                    f"schedule {schedule_id} is deleted", action=act.value, reason="deleted"
                )
            if row.revision != expected:
                stale = ScheduleRevisionConflict(
                    f"schedule {schedule_id} is at revision {row.revision}, not {expected}: "
                    "it changed since you read it; read it again",
                    expected=expected,
                    actual=row.revision,
                )
                if expected < row.revision:
                    raise stale  # needs no record: the status read proves it by itself
                raise self._refused(conn, read, request, stale)
            doc = doc_of(row)
            why = refusal(act, doc)
            if why is not None:
                conflict = ControlConflict(
                    f"{act.value}: {why}", action=act.value, reason=why, revision=row.revision
                )
                raise self._refused(conn, read, request, conflict)
            now = self.store.clock.now()
            new_config = None
            if act is Action.CONFIGURE:
                assert changes is not None
                try:
                    new_config = _edited(doc, changes)
                except ControlConflict as exc:  # the edit is valid, but not allowed now
                    raise self._refused(conn, read, request, exc) from None
                if "condition" in changes:
                    # (a condition given now; a stored one is kept as it is)
                    check_condition(
                        conn, new_config, workspace_id=row.workspace_id, schedule_id=row.id,
                        now=now,
                    )  # fmt: skip
                if "watch" in changes:
                    check_watch(conn, new_config, workspace_id=row.workspace_id, schedule_id=row.id)
                if new_config.template is not None and "template" in changes:
                    workspace_list(conn, row.workspace_id, now)
                if new_config.profile != doc.config.profile:
                    require_privilege(
                        conn, actor_id, Privilege.RUN, "changing a schedule's command, env or cwd"
                    )
            if act is Action.PLAY and cycle_of(conn, row.id, doc.config.condition):
                # Each edit was checked, but edits made in another order can close a cycle.
                cycle = ControlConflict(
                    "play: the schedule's conditions lead back to it; "
                    "a cycle of conditions would never launch",
                    action=act.value,
                    reason="source-cycle",
                    revision=row.revision,
                )
                raise self._refused(conn, read, request, cycle)
            if act is Action.PLAY and doc.body.first_play_at is None:
                try:
                    check_not_past(doc.config, now)
                except InvalidInput as exc:
                    raise self._refused(conn, read, request, exc) from None
            if act is Action.PLAY and (missing := refuse_missing_agent(doc.config.profile)):
                # Nothing is recorded: once the program is installed, the same request plays.
                raise missing
            applied = apply(act, doc, now, request_id=request_id, config=new_config)
            applied = _with_baseline(conn, row.id, row.workspace_id, applied, now, ahead)
            try:
                complete, written = repository.write_control(conn, read, request, applied, now)
                if act is Action.RUN_NOW and applied.body.pending is not None:
                    write_reserved(
                        conn, schedule_id=row.id, workspace_id=row.workspace_id,
                        config=applied.config, pending=applied.body.pending, now=now,
                    )  # fmt: skip
                record(conn, [(row.id, e) for e in _passed_by(act, doc, now)], now)
            except repository.Raced:
                # Another writer came first: perhaps with this very request.
                raced = repository.control_record(conn, row.id, request_id)
                if raced is not None:
                    # (applied or refused by a concurrent attempt of this request)
                    return self._repeat_of(conn, raced, row, actor_id, request)
                raise ScheduleRevisionConflict(
                    f"schedule {schedule_id} changed while this control ran; read it again",
                    expected=expected,
                    actual=repository.read_revision(conn, schedule_id),
                ) from None
            # The document just written, as written: not parsed back from its text.
            shown = DocState(
                str(written.id),
                Phase(written.phase),
                State(written.state),
                applied.config,
                applied.body,
            )
            return ControlOutcome(
                request_id=request_id,
                action=act.value,
                status="applied",
                expected_revision=expected,
                revision=written.revision,
                complete=complete,
                repeated=False,
                schedule=self._project(written, shown),
                supervision=supervision,
            )

        return self._run(run)

    def _read_ahead(
        self,
        actor: UUID | str,
        act: Action,
        schedule_id: UUID,
        changes: Mapping[str, Any] | None,
    ) -> dict[str, Checkpoint]:
        """A workspace source's baseline, read before the control's transaction when the
        control may take it (Play, or a Configure giving a condition): by source key,
        empty when there is none to take or it could not be read. The transaction uses it
        only for the same source, still without a checkpoint; nothing is decided here."""
        condition = None
        if act is Action.CONFIGURE:
            if not changes or "condition" not in changes:
                return {}
            try:
                condition = parse_condition(changes["condition"])
            except InvalidInput:
                return {}  # (the transaction refuses it)
            if condition is None:
                return {}
        elif act is not Action.PLAY:
            return {}

        def ahead(conn: Connection) -> tuple[UUID, str, Condition] | None:
            found = read_ahead(conn, schedule_id, condition)
            if found is not None:
                # Only for whom the control may act: nobody else makes the server read.
                workspace_role(conn, resolve_actor(conn, actor), found[0], Role.EDITOR)
            return found

        try:
            found = self._run(ahead, write=False)
        except KalendsError:
            return {}  # (the transaction answers with its own error)
        if found is None:
            return {}
        _, path, wanted = found
        now = self.store.clock.now()
        taken = first_baseline(read_workspace(wanted, path, None, now), now)
        return {} if taken is None else {source_key(wanted): taken}

    def _refused(
        self,
        conn: Connection,
        read: ControlRead,
        request: ControlRequest,
        error: KalendsError,
    ) -> KalendsError:
        """``error``, the answer to ``request``, recorded under its request ID in this
        transaction and marked so that the transaction commits the record as it raises
        (:mod:`kalends.missions.refusals`). Raise it before any other write. A concurrent
        attempt of the request that recorded its answer first leaves nothing to keep."""
        if repository.record_refusal(conn, read, request, error, self.store.clock.now()):
            return keeping_writes(error)
        return error

    def _repeat_of(
        self,
        conn: Connection,
        record: ControlRecord,
        row: ScheduleRead,
        actor_id: UUID,
        request: ControlRequest,
    ) -> ControlOutcome:
        """The outcome of a request answered before as ``record``: its outcome again when it
        applied, its refusal again when it was refused; :class:`RequestReused` when this
        request is another under the same ID."""
        # A request is its action, payload and expected revision: another of any of them
        # under the same ID is a reuse, never the original's repeat.
        if (
            record.action != request.action.value
            or record.digest != request.digest
            or record.expected_revision != request.expected
        ):
            raise RequestReused(
                f"request_id: {request.request_id!r} was already used for {record.action} at "
                f"revision {record.expected_revision} with other input; use a new request ID",
                field="request_id",
            )
        refused = refusal_of(record.outcome)
        if refused is not None:
            raise refused
        fresh = present(repository.read_schedule(conn, actor_id, row.id), row.id)
        return ControlOutcome(
            request_id=request.request_id,
            action=record.action,
            status="applied",
            expected_revision=record.expected_revision,
            revision=record.recorded_revision,
            complete=record.complete,
            repeated=True,
            schedule=self._project(fresh),
        )


def _passed_by(action: Action, doc: DocState, now: datetime) -> list[Entry]:
    """The ledger rows of the slots a control passes over at ``now``: a Play after a pause
    or an interruption (the high-water mark moves to now), and a Stop."""
    body = doc.body
    if body.first_play_at is None or doc.state is State.STOPPED:
        return []
    if action is Action.PLAY:
        return play_entries(doc.config, body, now, paused=doc.state is State.PAUSED)
    if action is Action.STOP:
        return stop_entries(doc.config, body, now)
    return []


def _with_baseline(
    conn: Connection,
    schedule_id: UUID,
    workspace_id: UUID,
    applied: Applied,
    now: datetime,
    ahead: Mapping[str, Checkpoint],
) -> Applied:
    """Seed 002: first Play establishes the source's baseline (and a source added to a
    played schedule takes its own at once); Pause/Resume and edits keep every checkpoint,
    a removed source's too. A baseline read counts no check."""
    condition, body = applied.config.condition, applied.body
    if condition is None or body.first_play_at is None:
        return applied
    key = source_key(condition)
    if body.checkpoint(key) is not None:
        return applied
    taken = play_baseline(
        conn, schedule_id, workspace_id, condition, now, read_before=ahead.get(key)
    )
    if taken is None:
        return applied
    return replace(applied, body=with_checkpoint(body, key, taken))


def _edited(doc: DocState, changes: Mapping[str, Any]) -> Config:
    """The configuration ``changes`` makes of ``doc``'s; :class:`ControlConflict` when the
    edit is valid but not allowed in the document's state now."""
    new = edited_config(doc, changes)
    why = edit_refusal(doc, new)
    if why is not None:
        raise ControlConflict(f"configure: {why}", action="configure", reason=why)
    return new
