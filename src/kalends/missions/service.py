"""Schedule documents and their controls: one transaction per operation.

Every mutation is one compare-and-swap on the document's revision. Controls
carry a request ID and the revision the caller saw: a repeated request ID
returns the original outcome and never acts twice; a stale revision is a
conflict that changes nothing (seed 002 "Daily document controls"). A control
refused at its own revision, or at one not reached yet, changes nothing of the
document either; its refusal is recorded under its request ID, so that a repeat
and the exact status read answer what the refusal answered
(:mod:`kalends.missions.refusals`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from types import SimpleNamespace
from typing import Any, TypeVar
from uuid import UUID

from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.auth import Privilege, require_privilege
from kalends.civil import format_local
from kalends.errors import (
    ControlConflict,
    CorruptDocument,
    DatabaseBusy,
    InvalidInput,
    KalendsError,
    LimitReached,
    NotDispatched,
    NotFound,
    RequestReused,
    ScheduleRevisionConflict,
    TooLarge,
)
from kalends.identity import Role, parse_uuid, require_role, resolve_actor
from kalends.missions import wakes
from kalends.missions.config import (
    Config,
    config_from_json,
    config_to_json,
    dump_config,
    load_config,
)
from kalends.missions.controls import Action, Applied, DocState, apply, edit_refusal, refusal
from kalends.missions.document import (
    Body,
    Phase,
    State,
    check_not_past,
    dump_body,
    load_body,
    next_due,
    preview_slots,
)
from kalends.missions.limits import (
    MAX_CONFIG_BYTES,
    MAX_CONTROL_RECORDS,
    MAX_DOCUMENT_BYTES,
    MAX_PAGE,
    MAX_PREVIEW,
    MAX_REQUEST_ID,
    MAX_SCHEDULES,
    MAX_TOMBSTONE_BYTES,
    MAX_TOMBSTONES,
    MIN_REQUEST_ID,
)
from kalends.missions.refusals import (
    APPLIED,
    insert_refusal,
    refusal_of,
    refusal_outcome,
)
from kalends.missions.views import iso, project, project_tombstone
from kalends.missions.workspaces import check_within, workspace_role
from kalends.storage.ids import ids_at
from kalends.storage.mission_tables import (
    schedule_controls,
    schedule_wakes,
    schedules,
    workspace_members,
    workspaces,
)
from kalends.storage.prepared import Prepared
from kalends.storage.unit_of_work import Store, for_update, keeping_writes

__all__ = [
    "ControlOutcome",
    "ControlStatus",
    "Page",
    "Receipt",
    "ScheduleService",
    "check_request_id",
]

_REQUEST_ID = re.compile(rf"[A-Za-z0-9._:-]{{{MIN_REQUEST_ID},{MAX_REQUEST_ID}}}")


def check_request_id(value: object, field: str = "request_id") -> str:
    """A request ID: 8-64 characters of letters, digits and ``. _ : -``."""
    if not isinstance(value, str) or not _REQUEST_ID.fullmatch(value):
        raise InvalidInput(
            f"{field}: a request ID is {MIN_REQUEST_ID}-{MAX_REQUEST_ID} characters of letters, "
            f"digits and . _ : -, got {value!r}",
            field=field,
        )
    return value


def _check_revision(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInput(
            f"expected_revision: must be a whole number ≥ 1, got {value!r}",
            field="expected_revision",
        )
    return value


def _digest(action: str, payload: object) -> str:
    text = json.dumps({"action": action, "payload": payload}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlOutcome:
    """What a control did. ``repeated``: the request ID was seen before; nothing acted again."""

    request_id: str
    action: str
    status: str  # "applied"
    expected_revision: int
    revision: int  # the revision the control recorded
    complete: bool
    repeated: bool
    schedule: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "action": self.action,
            "status": self.status,
            "expectedRevision": self.expected_revision,
            "revision": self.revision,
            "complete": self.complete,
            "repeated": self.repeated,
            "schedule": self.schedule,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlStatus:
    """The exact status of a control by request ID: applied, rejected or unknown."""

    request_id: str
    status: str  # applied | rejected | unknown
    code: str | None = None
    action: str | None = None
    expected_revision: int | None = None
    revision: int | None = None
    complete: bool | None = None
    at: datetime | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "status": self.status,
            "code": self.code,
            "action": self.action,
            "expectedRevision": self.expected_revision,
            "revision": self.revision,
            "complete": self.complete,
            "at": iso(self.at),
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipt:
    """A creation receipt by request ID: which document it created, or unknown."""

    request_id: str
    status: str  # created | deleted | unknown
    mission_id: UUID | None = None
    workspace_id: UUID | None = None
    created_at: datetime | None = None
    repeated: bool = False
    schedule: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "status": self.status,
            "missionId": None if self.mission_id is None else str(self.mission_id),
            "workspaceId": None if self.workspace_id is None else str(self.workspace_id),
            "revision": None if self.mission_id is None else 1,
            "createdAt": iso(self.created_at),
            "repeated": self.repeated,
            "schedule": self.schedule,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One page of a workspace's documents in mission-ID order, tombstones included."""

    items: list[dict[str, Any]]
    next_after: str | None

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "nextAfter": self.next_after}


_wm = workspace_members
_S = schedules
_W = schedule_wakes
# What reads show of a schedule's wake: whether a live scheduler holds it, and lastError
# (kept on the wake row, outside the document revision).
_WAKE_COLUMNS = (
    _W.c.owner.label("wake_owner"),
    _W.c.lease_expires_at.label("wake_lease"),
    _W.c.last_error_code.label("last_error_code"),
    _W.c.last_error_at.label("last_error_at"),
    _W.c.last_error_message.label("last_error_message"),
)
# A schedule's row with the actor's role on its workspace and its wake's columns.
_SCHEDULE_ROW = (
    select(_S, _wm.c.role, *_WAKE_COLUMNS)
    .select_from(
        _S.outerjoin(
            _wm,
            and_(_wm.c.workspace_id == _S.c.workspace_id, _wm.c.actor_id == bindparam("actor_id")),
        ).outerjoin(_W, _W.c.schedule_id == _S.c.id)
    )
    .where(_S.c.id == bindparam("schedule_id"))
)
_SCHEDULE = Prepared(_SCHEDULE_ROW)
_sc = schedule_controls
_rc = schedule_controls.alias("repeat_of")
# A control's first read: the schedule's row, the record of its request ID if that
# request was answered before (applied or refused), and how many records the schedule
# keeps (the bound of 64).
_SCHEDULE_FOR_CONTROL = Prepared(
    _SCHEDULE_ROW.add_columns(
        _rc.c.action.label("repeat_action"),
        _rc.c.digest.label("repeat_digest"),
        _rc.c.expected_revision.label("repeat_expected"),
        _rc.c.recorded_revision.label("repeat_recorded"),
        _rc.c.complete.label("repeat_complete"),
        _rc.c.outcome.label("repeat_outcome"),
        select(func.count())
        .select_from(_sc)
        .where(_sc.c.schedule_id == _S.c.id)
        .scalar_subquery()
        .label("control_count"),
    ).outerjoin(
        _rc, and_(_rc.c.schedule_id == _S.c.id, _rc.c.request_id == bindparam("request_id"))
    )
)
_CAS = (
    update(_S)
    .where(_S.c.id == bindparam("b_id"), _S.c.revision == bindparam("b_expected"))
    .values(
        phase=bindparam("phase"),
        state=bindparam("state"),
        revision=bindparam("revision"),
        title=bindparam("title"),
        config=bindparam("config"),
        body=bindparam("body"),
        size=bindparam("size"),
        next_due_at=bindparam("next_due_at"),
        updated_at=bindparam("updated_at"),
        evicted_control_revision=bindparam("evicted"),
    )
)
# The single compare-and-swap of a control, run on the driver (the scheduler's batches
# run _CAS itself, many parameter sets at once).
_CAS_ONE = Prepared(_CAS)
# Eviction past the bound of control records: a long-lived schedule evicts on every
# control. The oldest completed records, read and then deleted by the same selection (in
# the control's transaction, which holds the schedule's row), all run on the driver.
_OLDEST = (
    select(_sc.c.request_id, _sc.c.recorded_revision)
    .where(_sc.c.schedule_id == bindparam("schedule_id"), _sc.c.complete)
    # (a refusal's record shares its recorded revision with others: one order for both)
    .order_by(_sc.c.recorded_revision, _sc.c.request_id)
    .limit(bindparam("excess"))
)
_OLDEST_COMPLETE = Prepared(_OLDEST)
_EVICT = Prepared(
    delete(_sc).where(
        _sc.c.schedule_id == bindparam("schedule_id"),
        _sc.c.request_id.in_(_OLDEST.with_only_columns(_sc.c.request_id).scalar_subquery()),
    )
)
_RAISE_EVICTED = {
    dialect: Prepared(
        update(_S)
        .where(_S.c.id == bindparam("b_schedule_id"))
        .values(
            evicted_control_revision=greatest(_S.c.evicted_control_revision, bindparam("bound"))
        )
    )
    for dialect, greatest in (("sqlite", func.max), ("postgresql", func.greatest))
}
_INSERT_CONTROL = Prepared(insert(_sc).values({c.name: bindparam(c.name) for c in _sc.c}))
_SUPERSEDE = Prepared(
    update(_sc)
    .where(
        _sc.c.schedule_id == bindparam("b_schedule_id"),
        # (two comparisons, not IN, so the driver runs it as it is prepared)
        or_(_sc.c.action == Action.PAUSE.value, _sc.c.action == Action.STOP.value),
        _sc.c.complete.is_(False),
    )
    .values(complete=True)
)
_CONTROL = Prepared(
    select(schedule_controls).where(
        schedule_controls.c.schedule_id == bindparam("schedule_id"),
        schedule_controls.c.request_id == bindparam("request_id"),
    )
)


T = TypeVar("T")


def _actor_id(conn: Connection, actor: UUID | str) -> UUID:
    # An ID the caller already holds (a principal's) is used as is: an unknown one is a
    # member of nothing, so it sees no workspace.
    return actor if isinstance(actor, UUID) else resolve_actor(conn, actor)


def _schedule_id(value: object) -> UUID:
    as_id = parse_uuid(value, "schedule")
    if as_id is None:
        raise InvalidInput(f"schedule: not a mission ID: {value!r}", field="schedule")
    return as_id


@lru_cache(maxsize=4096)
def _parse_config(text: str) -> tuple[Config, int]:
    return load_config(text), len(text.encode())


@lru_cache(maxsize=4096)
def _parse_body(text: str) -> tuple[Body, int]:
    return load_body(text), len(text.encode())


def _doc(row: Any) -> DocState:
    """The parsed document of a row. Parsing is cached by the stored text (both parts
    are immutable values), so rereading an unchanged document costs a dict lookup."""
    try:
        config, config_size = _parse_config(row.config)
        body, body_size = _parse_body(row.body)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptDocument(
            f"schedule {row.id}: the stored document does not parse: {exc}", schedule=str(row.id)
        ) from None
    # Seed 002: each read validates the document bounds; one over them fails, never guessed.
    size = config_size + body_size
    if config_size > MAX_CONFIG_BYTES or size > MAX_DOCUMENT_BYTES:
        raise CorruptDocument(
            f"schedule {row.id}: the stored document is {size} bytes (configuration "
            f"{config_size}), over its ceilings of {MAX_DOCUMENT_BYTES} ({MAX_CONFIG_BYTES})",
            schedule=str(row.id),
        )
    return DocState(str(row.id), Phase(row.phase), State(row.state), config, body)


def _sizes(config: Config, body: Body, config_text: str | None = None) -> tuple[str, str, int]:
    """The stored texts and size of a document; refuses one over its ceilings.
    ``config_text``: the stored text of an unchanged configuration, reused."""
    if config_text is None:
        config_text = dump_config(config)
    body_text = dump_body(body)
    size = len(config_text.encode()) + len(body_text.encode())
    if size > MAX_DOCUMENT_BYTES:
        raise TooLarge(
            f"document: {size} bytes is over the {MAX_DOCUMENT_BYTES}-byte ceiling; "
            "nothing was written",
            field="document",
            size=size,
            limit=MAX_DOCUMENT_BYTES,
        )
    return config_text, body_text, size


def _next_due_column(state: State, phase: Phase, config: Config, body: Body) -> datetime | None:
    if state is not State.RUNNING or phase is not Phase.LIVE or body.pending is not None:
        return None
    return next_due(config, body)


def doc_of(row: Any) -> DocState:
    """The parsed document of a schedule row (for the scheduler)."""
    return _doc(row)


def _cas_params(
    row: Any,
    *,
    state: State,
    phase: Phase,
    config: Config,
    body: Body,
    now: datetime,
) -> dict[str, Any]:
    """The parameters of :data:`_CAS` writing a whole document over ``row`` at
    ``row.revision``; an unchanged configuration keeps its stored text."""
    unchanged = config is _parse_config(row.config)[0]
    config_text, body_text, size = _sizes(config, body, row.config if unchanged else None)
    return {
        "b_id": row.id,
        "b_expected": row.revision,
        "phase": phase.value,
        "state": state.value,
        "revision": int(row.revision) + 1,
        "title": config.title,
        "config": config_text,
        "body": body_text,
        "size": size,
        "next_due_at": _next_due_column(state, phase, config, body),
        "updated_at": now,
        "evicted": row.evicted_control_revision,
    }


def cas_write(
    conn: Connection,
    row: Any,
    *,
    state: State,
    phase: Phase,
    config: Config,
    body: Body,
    now: datetime,
) -> int | None:
    """One compare-and-swap of a whole document against ``row.revision``; the new
    revision, or ``None`` when another writer changed it first (nothing written)."""
    params = _cas_params(row, state=state, phase=phase, config=config, body=body, now=now)
    result = conn.execute(_CAS, params)
    return int(params["revision"]) if result.rowcount == 1 else None


def cas_params(
    row: Any,
    *,
    state: State,
    phase: Phase,
    config: Config,
    body: Body,
    now: datetime,
) -> dict[str, Any]:
    """The compare-and-swap parameters of a whole document over ``row`` (for
    :func:`cas_write_many`); :class:`TooLarge` when the document is over its ceilings."""
    return _cas_params(row, state=state, phase=phase, config=config, body=body, now=now)


def cas_write_many(conn: Connection, params: Sequence[dict[str, Any]]) -> list[bool]:
    """Many compare-and-swaps (from :func:`cas_params`) in one statement when every one
    applies; which of them wrote. When a writer came first for any of them, the batch is
    rolled back to its savepoint and each is tried alone, so the others still apply."""
    if len(params) > 1 and conn.dialect.supports_sane_multi_rowcount:
        with conn.begin_nested() as savepoint:
            if conn.execute(_CAS, list(params)).rowcount == len(params):
                return [True] * len(params)
            savepoint.rollback()
    return [conn.execute(_CAS, p).rowcount == 1 for p in params]


def compact(conn: Connection, row: Any, now: datetime) -> bool:
    """Turn a deleted, reconciled document into a tombstone when the registry has room;
    completes its Delete (seed 002 "Unified document foundation")."""
    if not tombstone_room(conn, row):
        return False
    result = conn.execute(
        update(_S)
        .where(_S.c.id == row.id, _S.c.revision == row.revision)
        .values(
            phase=Phase.TOMBSTONE.value,
            config=None,
            body=None,
            size=_tombstone_size(row),
            revision=row.revision + 1,
            evicted_control_revision=row.revision,
            next_due_at=None,
            updated_at=now,
        )
    )
    if result.rowcount != 1:
        return False
    # Only the Delete's own record stays (a refused Delete's goes with the others).
    conn.execute(
        delete(_sc).where(
            _sc.c.schedule_id == row.id,
            or_(_sc.c.action != Action.DELETE.value, _sc.c.outcome != APPLIED),
        )
    )
    conn.execute(update(_sc).where(_sc.c.schedule_id == row.id).values(complete=True))
    return True


def tombstone_room(conn: Connection, row: Any) -> bool:
    """Whether the workspace's tombstone registry can take one more entry."""
    conn.execute(
        for_update(select(workspaces.c.id).where(workspaces.c.id == row.workspace_id))
    ).first()
    count, total = conn.execute(
        select(func.count(), func.coalesce(func.sum(_S.c.size), 0)).where(
            _S.c.workspace_id == row.workspace_id, _S.c.phase == Phase.TOMBSTONE.value
        )
    ).one()
    return bool(count < MAX_TOMBSTONES and total + _tombstone_size(row) <= MAX_TOMBSTONE_BYTES)


class _Raced(Exception):
    """The compare-and-swap found another revision: a concurrent writer won."""


class ScheduleService:
    """Create, control, edit, delete and read schedule documents. One transaction each."""

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
        digest = _digest("create", config_to_json(parsed))

        def run(conn: Connection) -> Receipt:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.EDITOR)
            require_privilege(conn, actor_id, Privilege.RUN, "creating a schedule")
            found = self._receipt_row(conn, workspace_id, request_id)
            if found is not None:
                return self._repeated_create(found, digest)
            conn.execute(
                for_update(select(workspaces.c.id).where(workspaces.c.id == workspace_id))
            ).first()
            live = conn.execute(
                select(func.count()).where(
                    _S.c.workspace_id == workspace_id, _S.c.phase != Phase.TOMBSTONE.value
                )
            ).scalar_one()
            if live >= MAX_SCHEDULES:
                raise LimitReached(
                    f"workspace: it holds {live} schedules, the most it may hold "
                    f"({MAX_SCHEDULES}); delete one first",
                    field="workspace",
                    limit=MAX_SCHEDULES,
                )
            now = self.store.clock.now()
            body = Body(checks_since=now)
            config_text, body_text, size = _sizes(parsed, body)
            (schedule_id,) = ids_at(now, 1)
            try:
                with conn.begin_nested():
                    conn.execute(
                        insert(_S).values(
                            id=schedule_id,
                            workspace_id=workspace_id,
                            phase=Phase.LIVE.value,
                            state=State.PAUSED.value,
                            revision=1,
                            evicted_control_revision=0,
                            title=parsed.title,
                            creation_request_id=request_id,
                            creation_digest=digest,
                            config=config_text,
                            body=body_text,
                            size=size,
                            next_due_at=None,
                            created_at=now,
                            updated_at=now,
                        )
                    )
            except IntegrityError:
                raced = self._receipt_row(conn, workspace_id, request_id)
                if raced is None:
                    raise
                return self._repeated_create(raced, digest)
            row = _SCHEDULE.first(conn, {"actor_id": actor_id, "schedule_id": schedule_id})
            return Receipt(
                request_id=request_id,
                status="created",
                mission_id=schedule_id,
                workspace_id=workspace_id,
                created_at=now,
                schedule=project(_doc(row), row),
            )

        return self._run(run)

    @staticmethod
    def _receipt_row(conn: Connection, workspace_id: UUID, request_id: str) -> Any:
        return conn.execute(
            select(_S).where(
                _S.c.workspace_id == workspace_id, _S.c.creation_request_id == request_id
            )
        ).first()

    @staticmethod
    def _repeated_create(row: Any, digest: str) -> Receipt:
        if row.creation_digest != digest:
            raise RequestReused(
                f"request_id: {row.creation_request_id!r} already created schedule {row.id} "
                "with a different configuration; use a new request ID",
                field="request_id",
            )
        tomb = row.phase == Phase.TOMBSTONE.value
        return Receipt(
            request_id=row.creation_request_id,
            status="deleted" if tomb else "created",
            mission_id=row.id,
            workspace_id=row.workspace_id,
            created_at=row.created_at,
            repeated=True,
            schedule=project_tombstone(row) if tomb else project(_doc(row), row),
        )

    def receipt(self, actor: UUID | str, workspace: UUID | str, request_id: str) -> Receipt:
        """The creation receipt of ``request_id`` (for a lost creation reply); a read only."""
        request_id = check_request_id(request_id)

        def run(conn: Connection) -> Receipt:
            actor_id = resolve_actor(conn, actor)
            workspace_id, _ = workspace_role(conn, actor_id, workspace, Role.VIEWER)
            row = self._receipt_row(conn, workspace_id, request_id)
            if row is None:
                return Receipt(request_id=request_id, status="unknown", workspace_id=workspace_id)
            tomb = row.phase == Phase.TOMBSTONE.value
            return Receipt(
                request_id=request_id,
                status="deleted" if tomb else "created",
                mission_id=row.id,
                workspace_id=row.workspace_id,
                created_at=row.created_at,
                schedule=project_tombstone(row) if tomb else project(_doc(row), row),
            )

        return self._run(run, write=False)

    # --- controls -----------------------------------------------------------------------

    def play(
        self, actor: UUID | str, schedule: UUID | str, *, request_id: str, expected_revision: int
    ) -> ControlOutcome:
        return self.control(
            actor, schedule, Action.PLAY, request_id=request_id, expected_revision=expected_revision
        )

    def pause(
        self, actor: UUID | str, schedule: UUID | str, *, request_id: str, expected_revision: int
    ) -> ControlOutcome:
        return self.control(
            actor,
            schedule,
            Action.PAUSE,
            request_id=request_id,
            expected_revision=expected_revision,
        )

    def stop(
        self, actor: UUID | str, schedule: UUID | str, *, request_id: str, expected_revision: int
    ) -> ControlOutcome:
        return self.control(
            actor, schedule, Action.STOP, request_id=request_id, expected_revision=expected_revision
        )

    def resume(
        self, actor: UUID | str, schedule: UUID | str, *, request_id: str, expected_revision: int
    ) -> ControlOutcome:
        return self.control(
            actor,
            schedule,
            Action.RESUME,
            request_id=request_id,
            expected_revision=expected_revision,
        )

    def run_now(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        *,
        request_id: str,
        expected_revision: int,
        workspace: UUID | None = None,
    ) -> ControlOutcome:
        return self.control(
            actor,
            schedule,
            Action.RUN_NOW,
            request_id=request_id,
            expected_revision=expected_revision,
            workspace=workspace,
        )

    def check(
        self, actor: UUID | str, schedule: UUID | str, *, request_id: str, expected_revision: int
    ) -> ControlOutcome:
        return self.control(
            actor,
            schedule,
            Action.CHECK,
            request_id=request_id,
            expected_revision=expected_revision,
        )

    def delete(
        self, actor: UUID | str, schedule: UUID | str, *, request_id: str, expected_revision: int
    ) -> ControlOutcome:
        return self.control(
            actor,
            schedule,
            Action.DELETE,
            request_id=request_id,
            expected_revision=expected_revision,
        )

    def configure(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        changes: Mapping[str, Any],
        *,
        request_id: str,
        expected_revision: int,
        workspace: UUID | None = None,
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
        if workspace is not None:
            return self._within(
                actor,
                workspace,
                schedule,
                lambda: self.configure(
                    actor,
                    schedule,
                    changes,
                    request_id=request_id,
                    expected_revision=expected_revision,
                ),
                write=True,
            )
        if not isinstance(changes, Mapping) or not changes:
            raise InvalidInput("changes: name at least one field to change", field="changes")
        return self.control(
            actor,
            schedule,
            Action.CONFIGURE,
            request_id=request_id,
            expected_revision=expected_revision,
            changes=changes,
        )

    def control(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        action: Action | str,
        *,
        request_id: str,
        expected_revision: int,
        changes: Mapping[str, Any] | None = None,
        workspace: UUID | None = None,
    ) -> ControlOutcome:
        """Apply one control under the revision compare-and-swap; with ``workspace``, only
        to a schedule of that workspace (checked first, see :meth:`within`)."""
        return self._within(
            actor,
            workspace,
            schedule,
            lambda: self._control(
                actor,
                schedule,
                action,
                request_id=request_id,
                expected_revision=expected_revision,
                changes=changes,
            ),
            write=True,
        )

    def _control(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        action: Action | str,
        *,
        request_id: str,
        expected_revision: int,
        changes: Mapping[str, Any] | None,
    ) -> ControlOutcome:
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
        request_id = check_request_id(request_id)
        expected = _check_revision(expected_revision)
        schedule_id = _schedule_id(schedule)
        digest = _digest(act.value, dict(changes) if changes is not None else None)

        def run(conn: Connection) -> ControlOutcome:
            actor_id = resolve_actor(conn, actor)
            key = {"actor_id": actor_id, "schedule_id": schedule_id, "request_id": request_id}
            row = _SCHEDULE_FOR_CONTROL.first(conn, key)
            unseen = NotFound(f"schedule: no schedule {schedule_id}", field="schedule")
            if row is None:
                raise unseen
            require_role(row.role, Role.EDITOR, scope="workspace", unseen=unseen)
            if row.repeat_action is not None:
                record = SimpleNamespace(
                    action=row.repeat_action,
                    digest=row.repeat_digest,
                    expected_revision=row.repeat_expected,
                    recorded_revision=row.repeat_recorded,
                    complete=row.repeat_complete,
                    outcome=row.repeat_outcome,
                )
                return self._repeat_of(
                    conn, record, row, actor_id, request_id, act, digest, expected
                )
            if row.phase == Phase.TOMBSTONE.value:
                raise ControlConflict(
                    f"schedule {schedule_id} is deleted", action=act.value, reason="deleted"
                )
            answered = (request_id, act, expected, digest)
            if row.revision != expected:
                stale = ScheduleRevisionConflict(
                    f"schedule {schedule_id} is at revision {row.revision}, not {expected}: "
                    "it changed since you read it; read it again",
                    expected=expected,
                    actual=row.revision,
                )
                if expected < row.revision:
                    raise stale  # needs no record: the status read proves it by itself
                raise self._refused(conn, row, answered, stale)
            doc = _doc(row)
            why = refusal(act, doc)
            if why is not None:
                raise self._refused(
                    conn,
                    row,
                    answered,
                    ControlConflict(
                        f"{act.value}: {why}", action=act.value, reason=why, revision=row.revision
                    ),
                )
            now = self.store.clock.now()
            new_config = None
            if act is Action.CONFIGURE:
                assert changes is not None
                try:
                    new_config = self._edited(doc, changes)
                except ControlConflict as exc:  # the edit is valid, but not allowed now
                    raise self._refused(conn, row, answered, exc) from None
                if new_config.profile != doc.config.profile:
                    require_privilege(
                        conn, actor_id, Privilege.RUN, "changing a schedule's command, env or cwd"
                    )
            if act is Action.PLAY and doc.body.first_play_at is None:
                try:
                    check_not_past(doc.config, now)
                except InvalidInput as exc:
                    raise self._refused(conn, row, answered, exc) from None
            applied = apply(act, doc, now, request_id=request_id, config=new_config)
            try:
                revision, complete, view = self._write(
                    conn, row, applied, now, act, request_id, expected, digest
                )
            except _Raced:
                # Another writer came first: perhaps with this very request.
                raced = _CONTROL.first(conn, {"schedule_id": row.id, "request_id": request_id})
                if raced is not None:
                    # (applied or refused by a concurrent attempt of this request)
                    return self._repeat_of(
                        conn, raced, row, actor_id, request_id, act, digest, expected
                    )
                actual = conn.execute(select(_S.c.revision).where(_S.c.id == schedule_id)).scalar()
                raise ScheduleRevisionConflict(
                    f"schedule {schedule_id} changed while this control ran; read it again",
                    expected=expected,
                    actual=actual,
                ) from None
            return ControlOutcome(
                request_id=request_id,
                action=act.value,
                status="applied",
                expected_revision=expected,
                revision=revision,
                complete=complete,
                repeated=False,
                # The document just written, as written: not parsed back from its text.
                schedule=self._project(
                    view,
                    DocState(
                        str(view.id),
                        Phase(view.phase),
                        State(view.state),
                        applied.config,
                        applied.body,
                    ),
                ),
            )

        return self._run(run)

    @staticmethod
    def _edited(doc: DocState, changes: Mapping[str, Any]) -> Config:
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
        new = config_from_json(
            merged, new="title" in changes, stored_profile="profile" not in changes
        )
        why = edit_refusal(doc, new)
        if why is not None:
            raise ControlConflict(f"configure: {why}", action="configure", reason=why)
        return new

    def _row(self, conn: Connection, actor_id: UUID, schedule_id: UUID, minimum: Role) -> Any:
        row = _SCHEDULE.first(conn, {"actor_id": actor_id, "schedule_id": schedule_id})
        unseen = NotFound(f"schedule: no schedule {schedule_id}", field="schedule")
        if row is None:
            raise unseen
        require_role(row.role, minimum, scope="workspace", unseen=unseen)
        return row

    def _refused(
        self,
        conn: Connection,
        row: Any,
        answered: tuple[str, Action, int, str],
        error: KalendsError,
    ) -> KalendsError:
        """``error``, the answer to this request, recorded under its request ID in this
        transaction and marked so that the transaction commits the record as it raises
        (:mod:`kalends.missions.refusals`). Raise it before any other write."""
        request_id, act, expected, digest = answered
        # The revision it would have recorded: evicting its record bounds it.
        revision = min(expected, row.revision) + 1
        now = self.store.clock.now()
        try:
            self._record(
                conn,
                row,
                row.control_count,
                request_id,
                act,
                expected,
                revision,
                True,
                digest,
                now,
                outcome=refusal_outcome(error),
            )
        except LimitReached:
            # Every record is an unresolved control's, so none makes room: unrecorded, the
            # refusal raises the eviction bound over it, and its status reads unknown.
            bound = {"b_schedule_id": row.id, "bound": revision}
            _RAISE_EVICTED[conn.dialect.name].rowcount(conn, bound)
        except _Raced:
            # A concurrent attempt of this request recorded its answer first: this one
            # answers the same and writes nothing.
            return error
        return keeping_writes(error)

    def _project(self, row: Any, doc: DocState | None = None) -> dict[str, Any]:
        """The detail of ``row``; ``doc``: its document when already parsed (just written)."""
        if row.phase == Phase.TOMBSTONE.value:
            return project_tombstone(row)
        return project(doc if doc is not None else _doc(row), row, now=self.store.clock.now())

    def _repeat_of(
        self,
        conn: Connection,
        record: Any,
        row: Any,
        actor_id: UUID,
        request_id: str,
        act: Action,
        digest: str,
        expected: int,
    ) -> ControlOutcome:
        """The outcome of a request answered before as ``record``: its outcome again when it
        applied, its refusal again when it was refused; :class:`RequestReused` when this
        request is another under the same ID."""
        # A request is its action, payload and expected revision: another of any of them
        # under the same ID is a reuse, never the original's repeat.
        if (
            record.action != act.value
            or record.digest != digest
            or record.expected_revision != expected
        ):
            raise RequestReused(
                f"request_id: {request_id!r} was already used for {record.action} at revision "
                f"{record.expected_revision} with other input; use a new request ID",
                field="request_id",
            )
        refused = refusal_of(record.outcome)
        if refused is not None:
            raise refused
        fresh = _SCHEDULE.first(conn, {"actor_id": actor_id, "schedule_id": row.id})
        return ControlOutcome(
            request_id=request_id,
            action=record.action,
            status="applied",
            expected_revision=record.expected_revision,
            revision=record.recorded_revision,
            complete=record.complete,
            repeated=True,
            schedule=self._project(fresh),
        )

    def _write(
        self,
        conn: Connection,
        row: Any,
        applied: Applied,
        now: datetime,
        act: Action,
        request_id: str,
        expected: int,
        digest: str,
    ) -> tuple[int, bool, Any]:
        """The compare-and-swap write and the control record; returns the new revision,
        whether the control is complete, and the written row (for the reply, so the
        document is not read back)."""
        revision = expected + 1
        phase = applied.phase
        complete = applied.complete
        values = _cas_params(
            row,
            state=applied.state,
            phase=phase,
            config=applied.config,
            body=applied.body,
            now=now,
        )
        tombstone = False
        if phase is Phase.DELETING and complete:
            tombstone = tombstone_room(conn, row)
            if tombstone:
                # Compaction drops the control records (the Delete's own is kept), so the
                # eviction bound covers every revision before the Delete.
                values.update(
                    phase=Phase.TOMBSTONE.value,
                    config=None,
                    body=None,
                    size=_tombstone_size(row),
                    evicted=expected,
                )
            else:
                complete = False
        if _CAS_ONE.rowcount(conn, values) != 1:
            raise _Raced
        if tombstone:
            conn.execute(delete(_sc).where(_sc.c.schedule_id == row.id))
        elif act is not Action.CONFIGURE or applied.state is State.RUNNING:
            # The scheduler looks again at once: to arm or cancel slots, start or observe
            # the pending passage, or interrupt it (seed 002: Pause/Stop cancel the Job).
            wakes.arm(conn, row.id, now)
        # The records the schedule keeps, read with it in this transaction (which holds
        # it): none added since, and none left once a tombstone's compaction dropped them.
        kept = 0 if tombstone else row.control_count
        evicted = self._record(
            conn, row, kept, request_id, act, expected, revision, complete, digest, now
        )
        view = SimpleNamespace(
            id=row.id,
            workspace_id=row.workspace_id,
            phase=values["phase"],
            state=values["state"],
            revision=revision,
            title=values["title"],
            config=values["config"],
            body=values["body"],
            size=values["size"],
            evicted_control_revision=max(values["evicted"], evicted),
            created_at=row.created_at,
            updated_at=now,
        )
        return revision, complete, view

    def _record(
        self,
        conn: Connection,
        row: Any,
        count: int,
        request_id: str,
        act: Action,
        expected: int,
        revision: int,
        complete: bool,
        digest: str,
        now: datetime,
        *,
        outcome: str = APPLIED,
    ) -> int:
        """Insert the control record, evicting the oldest completed ones past the bound of
        64 (``count``: how many the schedule keeps now); returns the highest evicted
        revision (0 when none was evicted). A refusal's record (``outcome``) is left out,
        raising :class:`_Raced`, when one of its request ID is there already."""
        bound = 0
        if count >= MAX_CONTROL_RECORDS:
            excess = count - MAX_CONTROL_RECORDS + 1
            oldest_key = {"schedule_id": row.id, "excess": excess}
            oldest = _OLDEST_COMPLETE.rows(conn, oldest_key)
            if len(oldest) < excess:
                raise LimitReached(
                    f"schedule {row.id}: {MAX_CONTROL_RECORDS} controls are unresolved; "
                    "wait for one to complete",
                    limit=MAX_CONTROL_RECORDS,
                )
            _EVICT.rowcount(conn, oldest_key)
            bound = max(o.recorded_revision for o in oldest)
            _RAISE_EVICTED[conn.dialect.name].rowcount(
                conn, {"b_schedule_id": row.id, "bound": bound}
            )
        if act in (Action.PAUSE, Action.STOP) and not complete:
            # Seed 002: a schedule admits a single unresolved Pause/Stop; the newest one
            # carries the interruption, so it supersedes (completes) the earlier ones.
            _SUPERSEDE.rowcount(conn, {"b_schedule_id": row.id})
        values = {
            "schedule_id": row.id,
            "request_id": request_id,
            "action": act.value,
            "expected_revision": expected,
            "recorded_revision": revision,
            "complete": complete,
            "digest": digest,
            "outcome": outcome,
            "at": now,
        }
        if outcome == APPLIED:
            _INSERT_CONTROL.rowcount(conn, values)
        elif conn.execute(insert_refusal(_sc, conn.dialect.name), values).first() is None:
            raise _Raced
        return bound

    # --- status reads -------------------------------------------------------------------

    def control_status(
        self,
        actor: UUID | str,
        schedule: UUID | str,
        request_id: str,
        *,
        expected_revision: int | None = None,
        action: Action | str | None = None,
        workspace: UUID | None = None,
    ) -> ControlStatus:
        """The exact status of a control (seed 002): ``applied`` when its record is kept;
        ``rejected`` only when the store proves it never applied and never can, with the
        code and reason its answer carried when its refusal is recorded; otherwise
        ``unknown`` (evicted, never seen, or still able to apply). A read only. With
        ``workspace``, only of a schedule of that workspace (checked first).
        """
        if workspace is not None:
            return self._within(
                actor,
                workspace,
                schedule,
                lambda: self.control_status(
                    actor,
                    schedule,
                    request_id,
                    expected_revision=expected_revision,
                    action=action,
                ),
                write=False,
            )
        request_id = check_request_id(request_id)
        schedule_id = _schedule_id(schedule)
        expected = None if expected_revision is None else _check_revision(expected_revision)
        act = None
        if action is not None:
            try:
                act = Action(action)
            except ValueError:
                raise InvalidInput(f"action: unknown control {action!r}", field="action") from None

        def run(conn: Connection) -> ControlStatus:
            actor_id = resolve_actor(conn, actor)
            row = self._row(conn, actor_id, schedule_id, Role.VIEWER)
            record = _CONTROL.first(conn, {"schedule_id": schedule_id, "request_id": request_id})
            refused = None if record is None else refusal_of(record.outcome)
            if record is not None and refused is not None:
                reason = refused.details.get("reason")
                return ControlStatus(
                    request_id=request_id,
                    status="rejected",
                    code=refused.code,
                    action=record.action,
                    expected_revision=record.expected_revision,
                    at=record.at,
                    reason=reason if isinstance(reason, str) else refused.message,
                )
            if record is not None:
                return ControlStatus(
                    request_id=request_id,
                    status="applied",
                    action=record.action,
                    expected_revision=record.expected_revision,
                    revision=record.recorded_revision,
                    complete=record.complete,
                    at=record.at,
                )
            unknown = ControlStatus(
                request_id=request_id,
                status="unknown",
                action=None if act is None else act.value,
                expected_revision=expected,
            )
            if expected is None or row.phase == Phase.TOMBSTONE.value:
                return unknown
            if expected < row.revision:
                if expected + 1 > row.evicted_control_revision:
                    return ControlStatus(
                        request_id=request_id,
                        status="rejected",
                        code="revision-conflict",
                        action=None if act is None else act.value,
                        expected_revision=expected,
                        reason=f"the schedule moved past revision {expected} without it",
                    )
                return unknown
            if expected == row.revision and act is not None:
                why = refusal(act, _doc(row))
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

        return self._run(run, write=False)

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
        schedule_id = _schedule_id(schedule)
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
        schedule_id = _schedule_id(schedule)

        def run(conn: Connection) -> dict[str, Any]:
            actor_id = resolve_actor(conn, actor)
            return self._project(self._row(conn, actor_id, schedule_id, Role.VIEWER))

        return self._run(run, write=False)

    def page(
        self,
        actor: UUID | str,
        workspace: UUID | str,
        *,
        after: UUID | str | None = None,
        limit: int = MAX_PAGE,
    ) -> Page:
        """At most eight documents in mission-ID order after ``after``; tombstones take
        their place on the page and the cursor moves past them."""
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
            query = (
                select(_S, *_WAKE_COLUMNS)
                .select_from(_S.outerjoin(_W, _W.c.schedule_id == _S.c.id))
                .where(_S.c.workspace_id == workspace_id)
            )
            if cursor is not None:
                query = query.where(_S.c.id > cursor)
            rows = conn.execute(query.order_by(_S.c.id).limit(limit + 1)).all()
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
        schedule_id = _schedule_id(schedule)

        def run(conn: Connection) -> list[dict[str, Any]]:
            actor_id = resolve_actor(conn, actor)
            row = self._row(conn, actor_id, schedule_id, Role.VIEWER)
            if row.phase == Phase.TOMBSTONE.value:
                return []
            doc = _doc(row)
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


def _tombstone_size(row: Any) -> int:
    entry = {
        "id": str(row.id),
        "title": row.title,
        "creationRequestId": row.creation_request_id,
        "deletedAt": "0000-00-00T00:00:00.000000Z",
    }
    return len(json.dumps(entry, ensure_ascii=False).encode())
