"""The mission scheduler: durable wakes, write-ahead starts, observation and settlement.

Each schedule that needs attention has one wake row (:mod:`kalends.missions.wakes`).
A scheduler claims free wakes (new, released, or left behind by a dead scheduler
whose lease ran out) and renews the leases of its own together; it looks at each of
its wakes when due and sets when to look again. Several schedulers on one database
never admit a slot twice: the pending passage is written with a compare-and-swap on
the document's revision before anything starts, its identities derive from the
schedule and the slot, and the high-water mark advances with the reservation, so a
wall-clock roll-back never makes a processed slot new again.

A look at a schedule (seed 002 "Daily scheduler and civil time", "Daily write-ahead
passage start and recovery"):

- a pending passage not yet admitted: ``lookup`` its start; present → record the
  admission; absent and dispatch no longer allowed (or the workspace gone) → archive
  ``failed``/``not-started`` (the only archive without an admission); absent → start
  it with the same identities; unknown → keep it pending, ``uncertain``;
- an admitted passage: ``observe``; interrupt its family when the schedule was paused,
  stopped or deleted after the passage was reserved; once the family is gone, archive
  its outcome in one compare-and-swap, then look again for the next slot;
- nothing pending, running: admit the latest missed slot only (never a backlog),
  within end bounds and quota; otherwise sleep until min(next slot, now + 1 hour).

A failed look keeps the schedule running and records ``lastError {code, at}`` on the
wake row (outside the document revision), retrying after 30 s, 2 min, 5 min, 15 min,
1 h; the next successful look clears it. A workspace that no longer exists ends the
schedule as Interrupted with reason ``error``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from types import SimpleNamespace
from typing import Any
from uuid import UUID

from sqlalchemy import and_, bindparam, delete, or_, select, update
from sqlalchemy.engine import Connection

from kalends.errors import KalendsError, StorageError, TooLarge
from kalends.missions import service as docs
from kalends.missions.config import Restart
from kalends.missions.controls import DocState
from kalends.missions.document import (
    Body,
    PassageStatus,
    Pending,
    Phase,
    Result,
    State,
    archive,
    latest_missed,
    next_due,
    quota_exhausted,
)
from kalends.missions.runtime.base import (
    Observation,
    PassageStart,
    Presence,
    Runtime,
)
from kalends.missions.wakes import (
    EVENT_DEBOUNCE,
    MAX_SLEEP,
    WAKE_LEASE,
    error_delay,
    fallback_delay,
)
from kalends.storage.mission_tables import schedule_controls, schedule_wakes, schedules, workspaces
from kalends.storage.unit_of_work import Store, for_update

__all__ = [
    "CLAIM_BATCH",
    "LookResult",
    "Scheduler",
    "log_passage",
    "scheduled_identity",
    "settle_outcome",
]

log = logging.getLogger(__name__)

CLAIM_BATCH = 500
"""How many free wakes a scheduler takes per round (it takes more on later rounds)."""
LOOK_BATCH = 500
"""How many due wakes a scheduler looks at per round."""
OUTAGE_MAX_WAIT = 60
"""The longest wait between retries while the database is unavailable (seconds)."""
WATCH_SECONDS = 1.0
"""How often a scheduler checks its running passages for an exit (the terminal event)."""

_W = schedule_wakes
_S = schedules
_C = schedule_controls

_ROW = (
    select(_S, workspaces.c.path.label("workspace_path"))
    .join(workspaces, workspaces.c.id == _S.c.workspace_id)
    .where(_S.c.id == bindparam("sid"))
)
_ROWS = (
    select(_S, workspaces.c.path.label("workspace_path"))
    .join(workspaces, workspaces.c.id == _S.c.workspace_id)
    .where(_S.c.id.in_(bindparam("sids", expanding=True)))
)
_RENEW = (
    update(_W)
    .where(_W.c.owner == bindparam("me"), _W.c.lease_token == bindparam("tok"))
    .values(lease_expires_at=bindparam("expires"))
)
_MY_DUE = (
    select(_W.c.schedule_id, _W.c.armed, _W.c.polls, _W.c.failures)
    .where(_W.c.lease_token == bindparam("me"), _W.c.due_at <= bindparam("now"))
    .order_by(_W.c.due_at)
    .limit(LOOK_BATCH)
)
_SET_WAKE = (
    update(_W)
    .where(
        _W.c.schedule_id == bindparam("sid"),
        _W.c.lease_token == bindparam("me"),
        _W.c.armed == bindparam("seen"),
    )
    .values(
        due_at=bindparam("due"),
        polls=bindparam("p"),
        failures=0,
        last_error_code=None,
        last_error_message=None,
        last_error_at=None,
    )
)
_DROP_WAKE = delete(_W).where(
    _W.c.schedule_id == bindparam("sid"),
    _W.c.lease_token == bindparam("me"),
    _W.c.armed == bindparam("seen"),
)
_FAIL_WAKE = (
    update(_W)
    .where(_W.c.schedule_id == bindparam("sid"), _W.c.lease_token == bindparam("me"))
    .values(
        due_at=bindparam("due"),
        failures=bindparam("f"),
        last_error_code=bindparam("code"),
        last_error_message=bindparam("message"),
        last_error_at=bindparam("at"),
    )
)
_NUDGE = (
    update(_W)
    .where(_W.c.schedule_id == bindparam("sid"), _W.c.lease_token == bindparam("me"))
    .values(due_at=bindparam("due"))
)


def scheduled_identity(schedule_id: str, slot: datetime) -> tuple[str, str, str]:
    """The passage, session and message IDs of a scheduled slot (deterministic)."""
    key = f"{schedule_id}\x00scheduled\x00{slot.isoformat()}"

    def derive(role: str) -> str:
        return hashlib.sha256(f"{key}\x00{role}".encode()).hexdigest()[:26]

    return f"psg_{derive('passage')}", f"ses_{derive('session')}", f"msg_{derive('message')}"


def log_passage(
    event: str,
    doc: DocState,
    pending: Pending,
    *,
    outcome: str | None = None,
    reason: str | None = None,
    seconds: float | None = None,
) -> None:
    """One INFO line of the passage's way: ``admitted`` (the scheduler took a due slot and
    wrote its passage ahead of the start), ``started`` (its command launched and its
    admission recorded), ``settled`` (archived with ``outcome``, after ``seconds``)."""
    if not log.isEnabledFor(logging.INFO):
        return
    slot = None if pending.slot is None else pending.slot.isoformat().replace("+00:00", "Z")
    said = f'passage {event}: "{doc.config.title}" ' + (f"slot {slot}" if slot else "run now")
    if outcome is not None:
        said += f": {outcome}" + (f" ({reason})" if reason else "")
        if seconds is not None:
            said += f" after {_duration(seconds)}"
    log.info(
        said,
        extra={
            "fields": {
                "event": f"passage-{event}",
                "schedule_id": doc.schedule_id,
                "title": doc.config.title,
                "passage_id": pending.passage_id,
                "trigger": pending.trigger,
                "slot": slot,
                "outcome": outcome,
                "reason": reason,
                "duration_s": None if seconds is None else round(seconds, 3),
            }
        },
    )


def _duration(seconds: float) -> str:
    """``2.4 s``, ``3 min 05 s``, ``2 h 07 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def settle_outcome(obs: Observation) -> tuple[str, str | None]:
    """The outcome of a settled family (SPEC §4): a completed report stands; a failed
    report, a non-zero exit or a signal fail; a clean end without a report is
    ``ended-without-report`` (reason ``interrupted`` when kalends interrupted it)."""
    if obs.report is not None and obs.report.outcome == "completed":
        return "completed", None
    if obs.report is not None and obs.report.outcome == "failed":
        return "failed", "reported"
    if obs.interrupted:
        return "ended-without-report", "interrupted"
    if obs.error is not None:
        return "failed", obs.error
    if obs.signal is not None:
        return "failed", f"signal {obs.signal}"
    if obs.exit_status not in (0, None):
        return "failed", f"exit status {obs.exit_status}"
    return "ended-without-report", None


@dataclass(slots=True)
class LookResult:
    """What one round did (for logs, tests and benchmarks)."""

    claimed: int = 0
    looked: int = 0
    reserved: int = 0
    admitted: int = 0
    settled: int = 0
    interrupted: int = 0
    not_started: int = 0
    errors: int = 0
    admissions: list[tuple[UUID, datetime, datetime]] = field(default_factory=list)


class Scheduler:
    """One scheduler process's loop over the wakes it holds. Thread-safe to stop."""

    def __init__(
        self,
        store: Store,
        runtime: Runtime,
        *,
        owner: str | None = None,
        lease: timedelta = WAKE_LEASE,
        exists: Callable[[str], bool] = os.path.isdir,
    ) -> None:
        self.store = store
        self.runtime = runtime
        self.owner = owner or f"scheduler-{os.getpid()}-{secrets.token_hex(4)}"
        self.lease = lease
        self.token = secrets.token_hex(16)
        self._exists = exists
        self._renewed_at: datetime | None = None
        self._watch: dict[UUID, str] = {}

    # --- the loop ------------------------------------------------------------------------

    def run_once(self) -> LookResult:
        """Renew, claim, and look at every due wake of this scheduler once."""
        result = LookResult()
        now = self.store.clock.now()
        self._renew(now)
        taken = self._claim(now)
        result.claimed = len(taken)
        for sid, takeover in taken:
            if takeover:
                self._guard(sid, now, result, partial(self._restart, sid, now))

        def mine(conn: Connection) -> tuple[list[Any], dict[UUID, Any]]:
            due = list(conn.execute(_MY_DUE, {"me": self.token, "now": now}).all())
            rows = {}
            if due:
                found = conn.execute(_ROWS, {"sids": [d.schedule_id for d in due]})
                rows = {r.id: r for r in found}
            return due, rows

        due, rows = self.store.run(mine, write=False)
        result.looked = len(due)
        slow = self._fast(due, rows, now, result)
        for sid, armed, polls, failures in slow:
            self._guard(
                sid,
                now,
                result,
                partial(self._look_and_set, sid, armed, polls, now, result),
                failures=failures,
            )
        return result

    def _fast(
        self, due: list[Any], rows: dict[UUID, Any], now: datetime, result: LookResult
    ) -> list[Any]:
        """The common case of many wakes at once, set-based: running schedules with nothing
        pending either sleep until their next slot or have their latest missed slot
        reserved (one transaction for all), started, and admitted (one more transaction).
        Everything else goes back to the caller for a look of its own."""
        slow: list[Any] = []
        sleeps: list[dict[str, Any]] = []
        drops: list[dict[str, Any]] = []
        reserves: list[tuple[Any, Any, DocState, Body]] = []
        exists: dict[str, bool] = {}
        for wake in due:
            row = rows.get(wake.schedule_id)
            try:
                doc = docs.doc_of(row) if row is not None and row.phase == "live" else None
            except KalendsError:
                doc = None
            if (
                row is None
                or doc is None
                or doc.body.pending is not None
                or doc.state is not State.RUNNING
                or doc.body.interruption is not None
            ):
                slow.append(wake)
                continue
            path = row.workspace_path
            if path not in exists:
                exists[path] = self._exists(path)
            if not exists[path]:
                slow.append(wake)
                continue
            fence = {"sid": wake.schedule_id, "me": self.token, "seen": wake.armed}
            slot = None
            if not quota_exhausted(doc.config, doc.body):
                slot = latest_missed(doc.config, doc.body, now)
            if slot is not None:
                reserves.append((wake, row, doc, self._reservation(doc, slot.at, now)))
                continue
            nxt = next_due(doc.config, doc.body)
            if nxt is None:
                drops.append(fence)
            else:
                sleeps.append({**fence, "due": min(nxt, now + MAX_SLEEP), "p": 0})
        reserved: list[tuple[Any, Any, DocState, Body, int]] = []

        def reserve(conn: Connection) -> None:
            reserved.clear()  # retried whole when busy: only the last attempt's writes count
            writes: list[tuple[Any, Any, DocState, Body, int]] = []
            params: list[dict[str, Any]] = []
            for wake, row, doc, body in reserves:
                try:
                    params.append(
                        docs.cas_params(
                            row, state=doc.state, phase=doc.phase, config=doc.config,
                            body=body, now=now,
                        )
                    )  # fmt: skip
                except TooLarge:
                    continue  # refused before any write: its own look records lastError
                writes.append((wake, row, doc, body, int(row.revision) + 1))
            for write, applied in zip(writes, docs.cas_write_many(conn, params), strict=True):
                if applied:
                    reserved.append(write)
            if sleeps:
                conn.execute(_SET_WAKE, sleeps)
            if drops:
                conn.execute(_DROP_WAKE, drops)

        if reserves or sleeps or drops:
            self.store.run(reserve)
        result.reserved += len(reserved)
        for _wake, _row, doc, body, _revision in reserved:
            assert body.pending is not None
            log_passage("admitted", doc, body.pending)
        lost = {wake.schedule_id for wake, *_ in reserves} - {w.schedule_id for w, *_ in reserved}
        slow.extend(w for w, *_ in reserves if w.schedule_id in lost)
        admitted: list[tuple[Any, Any, DocState, Body, int]] = []
        for wake, row, doc, body, revision in reserved:
            pending = body.pending
            assert pending is not None
            try:
                presence = self.runtime.start(self._start_of(row, doc, pending))
            except Exception:
                slow.append(wake)  # its own look marks it uncertain and records lastError
                continue
            if presence is Presence.PRESENT:
                admitted.append((wake, row, doc, body, revision))
            else:
                slow.append(wake)
        if not admitted:
            return slow

        def admit(conn: Connection) -> list[UUID]:
            done = []
            wakes_due = []
            params: list[dict[str, Any]] = []
            writes: list[tuple[Any, Any, DocState, Body, int]] = []
            for write in admitted:
                _wake, row, doc, body, revision = write
                pending = body.pending
                assert pending is not None
                new = replace(
                    body,
                    pending=replace(
                        pending, admitted=True, admitted_at=now, status=PassageStatus.RUNNING
                    ),
                    admitted=body.admitted + 1,
                )
                written = SimpleNamespace(
                    id=row.id,
                    revision=revision,
                    config=row.config,
                    evicted_control_revision=row.evicted_control_revision,
                )
                try:
                    params.append(
                        docs.cas_params(
                            written, state=doc.state, phase=doc.phase, config=doc.config,
                            body=new, now=now,
                        )
                    )  # fmt: skip
                except TooLarge:
                    continue  # its own look admits it, dropping old results to fit
                writes.append(write)
            for (wake, row, *_), applied in zip(
                writes, docs.cas_write_many(conn, params), strict=True
            ):
                if not applied:
                    continue  # a control came first: its own look reconciles the start
                done.append(row.id)
                wakes_due.append(
                    {
                        "sid": row.id,
                        "me": self.token,
                        "seen": wake.armed,
                        "due": now + fallback_delay(0),
                        "p": 1,
                    }
                )
            if wakes_due:
                conn.execute(_SET_WAKE, wakes_due)
            return done

        done = set(self.store.run(admit))
        for _wake, row, doc, body, _ in admitted:
            if row.id not in done:
                continue
            pending = body.pending
            assert pending is not None and pending.slot is not None
            result.admitted += 1
            result.admissions.append((row.id, pending.slot, now))
            self._watch[row.id] = pending.session_id
            log_passage("started", doc, pending)
        return slow

    def run(
        self,
        stop: threading.Event,
        *,
        wait: Callable[[float, threading.Event], bool] | None = None,
        on_round: Callable[[LookResult], None] | None = None,
    ) -> None:
        """Look at due wakes until ``stop`` is set, sleeping until the next due wake (at
        most an hour), a wake-up from ``wait`` (a :class:`~kalends.storage.wake.Waker`),
        the next lease renewal, or a running passage's exit; then release the wakes."""
        waiter = wait or (lambda seconds, ev: ev.wait(seconds))
        outages = 0
        try:
            while not stop.is_set():
                try:
                    result = self.run_once()
                    pause = self._sleep_seconds()
                except Exception as exc:
                    # The database is down or locked, or a round failed as a whole: wait
                    # 1 s, doubling to 60 s, and go on (one look's failure is the look's own:
                    # it records lastError on its wake and never reaches here).
                    outages += 1
                    delay = min(OUTAGE_MAX_WAIT, 2 ** (outages - 1))
                    kind = "database error" if isinstance(exc, StorageError) else "round failed"
                    log.warning(
                        "scheduler %s: %s, retrying in %ss: %s", self.owner, kind, delay, exc
                    )
                    stop.wait(delay)
                    continue
                outages = 0
                if on_round is not None:
                    on_round(result)
                if result.looked >= LOOK_BATCH or result.claimed >= CLAIM_BATCH:
                    continue
                deadline = time.monotonic() + pause
                while not stop.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    step = min(left, WATCH_SECONDS) if self._watch else left
                    if waiter(step, stop):
                        break
                    if self._watch and self._exits_seen():
                        break
        finally:
            try:
                self.release()
            except StorageError as exc:  # the leases run out on their own
                log.warning("scheduler %s: could not release its wakes: %s", self.owner, exc)

    def release(self) -> None:
        """Give up every wake this scheduler holds (graceful shutdown). They are marked
        orphaned, so the next scheduler treats them as after a restart."""

        def run(conn: Connection) -> None:
            conn.execute(
                update(_W)
                .where(_W.c.lease_token == self.token)
                .values(owner=None, lease_token=None, lease_expires_at=None, orphaned=True)
            )

        self.store.run(run)

    # --- leases --------------------------------------------------------------------------

    def _renew(self, now: datetime) -> None:
        if self._renewed_at is not None and now - self._renewed_at < self.lease / 3:
            return
        expires = now + self.lease
        self.store.run(
            lambda conn: conn.execute(
                _RENEW, {"me": self.owner, "tok": self.token, "expires": expires}
            )
        )
        self._renewed_at = now

    def _claim(self, now: datetime) -> list[tuple[UUID, bool]]:
        expires = now + self.lease

        def run(conn: Connection) -> list[tuple[UUID, bool]]:
            free = or_(_W.c.owner.is_(None), _W.c.lease_expires_at <= now)
            rows = conn.execute(
                for_update(
                    select(_W.c.schedule_id, _W.c.owner, _W.c.orphaned)
                    .where(free)
                    .order_by(_W.c.due_at)
                    .limit(CLAIM_BATCH),
                    skip_locked=True,
                )
            ).all()
            if not rows:
                return []
            ids = [r.schedule_id for r in rows]
            conn.execute(
                update(_W)
                .where(_W.c.schedule_id.in_(ids), free)
                .values(
                    owner=self.owner,
                    lease_token=self.token,
                    lease_expires_at=expires,
                    orphaned=False,
                )
            )
            taken = [(r.schedule_id, r.owner is not None or bool(r.orphaned)) for r in rows]
            over = [sid for sid, takeover in taken if takeover]
            if over:
                # A taken-over wake is looked at now, its pending fallback starting afresh:
                # the dead scheduler's next look (up to 5 min, or 1 h after failures) was
                # its own, and nothing watched the passage's exit since it died.
                conn.execute(
                    update(_W)
                    .where(_W.c.schedule_id.in_(over), _W.c.due_at > now)
                    .values(due_at=now, polls=0)
                )
            return taken

        taken = self.store.run(run)
        if taken:
            self._renewed_at = now
        return taken

    def _sleep_seconds(self) -> float:
        """Until this scheduler's next due wake, a free wake, another scheduler's lease
        running out (to take its wakes over), the next renewal, or an hour at most."""
        now = self.store.clock.now()

        def run(conn: Connection) -> tuple[Any, Any, Any]:
            mine = conn.execute(
                select(_W.c.due_at)
                .where(_W.c.lease_token == self.token)
                .order_by(_W.c.due_at)
                .limit(1)
            ).scalar()
            unowned = conn.execute(
                select(_W.c.schedule_id).where(_W.c.owner.is_(None)).limit(1)
            ).scalar()
            others = conn.execute(
                select(_W.c.lease_expires_at)
                .where(_W.c.owner.is_not(None), _W.c.lease_token != self.token)
                .order_by(_W.c.lease_expires_at)
                .limit(1)
            ).scalar()
            return mine, unowned, others

        mine, unowned, others = self.store.run(run, write=False)
        if unowned is not None:
            return 0.0
        until = now + MAX_SLEEP
        for instant in (mine, others):
            if instant is not None:
                until = min(until, instant)
        if self._renewed_at is not None:
            until = min(until, self._renewed_at + self.lease / 3)
        return max(0.0, (until - now).total_seconds())

    def _exits_seen(self) -> bool:
        """Whether a watched passage's main process ended: its wake becomes due after the
        3-second debounce (a wake hint, never settlement evidence)."""
        now = self.store.clock.now()
        ended = []
        for sid, session in list(self._watch.items()):
            try:
                if self.runtime.observe(session).exited:
                    ended.append(sid)
            except KalendsError:
                continue
        if not ended:
            return False
        nudges = [{"sid": sid, "me": self.token, "due": now + EVENT_DEBOUNCE} for sid in ended]
        for sid in ended:
            self._watch.pop(sid, None)

        def nudge(conn: Connection) -> None:
            conn.execute(_NUDGE, nudges)

        self.store.run(nudge)
        return True

    # --- one look --------------------------------------------------------------------------

    def _guard(
        self,
        sid: UUID,
        now: datetime,
        result: LookResult,
        action: Callable[[], None],
        *,
        failures: int = 0,
    ) -> None:
        try:
            action()
        except Exception as exc:
            result.errors += 1
            code = exc.code if isinstance(exc, KalendsError) else "internal-error"
            log.warning("schedule %s: wake failed (%s): %s", sid, code, exc)
            attempt = failures + 1
            params = {
                "sid": sid,
                "me": self.token,
                "due": now + error_delay(attempt),
                "f": attempt,
                "code": code,
                "message": str(exc)[:2000],
                "at": now,
            }

            def fail(conn: Connection) -> None:
                conn.execute(_FAIL_WAKE, params)

            self.store.run(fail)

    def _look_and_set(
        self, sid: UUID, armed: int, polls: int, now: datetime, result: LookResult
    ) -> None:
        nxt, new_polls = self._look(sid, polls, now, result)
        params = {"sid": sid, "me": self.token, "seen": armed}
        if nxt is None:
            self.store.run(lambda conn: conn.execute(_DROP_WAKE, params))
        else:
            self.store.run(
                lambda conn: conn.execute(_SET_WAKE, {**params, "due": nxt, "p": new_polls})
            )

    def _read(self, sid: UUID) -> Any:
        return self.store.run(lambda conn: conn.execute(_ROW, {"sid": sid}).first(), write=False)

    def _look(
        self, sid: UUID, polls: int, now: datetime, result: LookResult
    ) -> tuple[datetime | None, int]:
        """Look at one schedule; when to look again (``None``: nothing left) and the
        pending-fallback step."""
        for _ in range(8):  # a few compare-and-swap rounds against concurrent controls
            row = self._read(sid)
            if row is None or row.phase == Phase.TOMBSTONE.value:
                self._watch.pop(sid, None)
                return None, 0
            doc = docs.doc_of(row)
            body = doc.body
            if body.pending is not None:
                step = self._attend(row, doc, now, result)
                if step is _AGAIN:
                    continue
                if step is None:
                    return fallback_at(now, polls), polls + 1
                assert isinstance(step, datetime)
                return step, 0
            self._watch.pop(sid, None)
            if doc.phase is Phase.DELETING:
                if not self._write(partial(docs.compact, row=row, now=now)):
                    continue
                return None, 0
            if doc.state is not State.RUNNING or body.interruption is not None:
                return None, 0
            if not self._exists(row.workspace_path):
                if self._interrupt_schedule(row, doc, now, "error"):
                    return None, 0
                continue
            slot = latest_missed(doc.config, body, now)
            if slot is not None and not quota_exhausted(doc.config, body):
                if self._reserve(row, doc, slot.at, now):
                    result.reserved += 1
                continue
            nxt = next_due(doc.config, body)
            if nxt is None:
                return None, 0
            return min(nxt, now + MAX_SLEEP), 0
        return now, polls  # kept losing races: look again soon

    def _write(self, fn: Callable[[Connection], Any]) -> Any:
        return self.store.run(fn)

    def _cas(self, row: Any, doc: DocState, body: Body, now: datetime, **extra: Any) -> bool:
        """One compare-and-swap of ``body``; when the document would be over its ceiling,
        the oldest results are dropped until it fits. Byte-bounded results make every
        document fit (``missions/limits.py``), but one written before the bounds may not,
        and a settlement refused for good would hold Stop and Delete forever."""
        while True:
            try:
                return self._cas_once(row, doc, body, now, **extra)
            except TooLarge:
                if not body.results:
                    raise
                log.warning(
                    "schedule %s: the document is over its ceiling; dropping its oldest result",
                    row.id,
                )
                body = replace(body, results=body.results[1:])

    def _cas_once(self, row: Any, doc: DocState, body: Body, now: datetime, **extra: Any) -> bool:
        state = extra.get("state", doc.state)

        def run(conn: Connection) -> bool:
            revision = docs.cas_write(
                conn,
                row,
                state=state,
                phase=doc.phase,
                config=doc.config,
                body=body,
                now=now,
            )
            if revision is None:
                return False
            complete = extra.get("complete")
            if complete:
                conn.execute(
                    update(_C)
                    .where(
                        _C.c.schedule_id == row.id,
                        _C.c.complete.is_(False),
                        or_(*complete),
                    )
                    .values(complete=True)
                )
            return True

        return bool(self.store.run(run))

    def _reservation(self, doc: DocState, slot: datetime, now: datetime) -> Body:
        """The body with the pending record of ``slot``: deterministic identities, before
        any effect; the high-water mark advances with it (seed 002: technical high-water
        advances at durable reservation)."""
        body = doc.body
        passage, session, message = scheduled_identity(doc.schedule_id, slot)
        pending = Pending(
            passage_id=passage,
            session_id=session,
            message_id=message,
            trigger="scheduled",
            slot=slot,
            request_id=None,
            status=PassageStatus.STARTING,
            admitted=False,
            reserved_at=now,
            profile=doc.config.profile.to_json(),
            config_generation=body.config_generation,
            temporal_generation=body.temporal_generation,
        )
        checks = body.checks_count + (1 if doc.config.condition is not None else 0)
        return replace(body, pending=pending, high_water=slot, checks_count=checks)

    def _reserve(self, row: Any, doc: DocState, slot: datetime, now: datetime) -> bool:
        """Write-ahead: the pending record, in one compare-and-swap."""
        body = self._reservation(doc, slot, now)
        if not self._cas(row, doc, body, now):
            return False
        assert body.pending is not None
        log_passage("admitted", doc, body.pending)
        return True

    def _interrupt_schedule(self, row: Any, doc: DocState, now: datetime, reason: str) -> bool:
        body = replace(doc.body, interruption=reason, interrupted_at=now)
        return self._cas(row, doc, body, now)

    def _dispatch_allowed(self, doc: DocState, pending: Pending) -> bool:
        if doc.phase is not Phase.LIVE or doc.state is State.STOPPED:
            return False
        if doc.body.interruption is not None:
            return False
        paused_after = doc.body.last_pause_at is not None and (
            doc.body.last_pause_at >= pending.reserved_at
        )
        if doc.state is State.RUNNING:
            return not paused_after
        return pending.trigger == "manual" and not paused_after

    def _interrupt_wanted(self, doc: DocState, pending: Pending) -> bool:
        if doc.phase is not Phase.LIVE:
            return True
        last = doc.body.last_pause_at
        return doc.state is not State.RUNNING and last is not None and last >= pending.reserved_at

    def _start_of(self, row: Any, doc: DocState, pending: Pending) -> PassageStart:
        profile = pending.profile
        config = doc.config
        return PassageStart(
            passage_id=pending.passage_id,
            session_id=pending.session_id,
            message_id=pending.message_id,
            schedule_id=doc.schedule_id,
            workspace=row.workspace_path,
            command=tuple(profile.get("command", ())),
            env=tuple(sorted((profile.get("env") or {}).items())),
            cwd=profile.get("cwd", "."),
            input={
                "passageId": pending.passage_id,
                "sessionId": pending.session_id,
                "messageId": pending.message_id,
                "scheduleId": doc.schedule_id,
                "title": config.title,
                "objective": config.objective,
                "notes": config.notes,
                "template": None
                if config.template is None
                else [item.to_json() for item in config.template],
                "trigger": pending.trigger,
                "slot": None if pending.slot is None else pending.slot.isoformat(),
                "requestId": pending.request_id,
            },
        )

    def _attend(
        self, row: Any, doc: DocState, now: datetime, result: LookResult
    ) -> datetime | object | None:
        """Reconcile, observe or settle the pending passage. Returns when to look again,
        ``None`` for the pending fallback, or ``_AGAIN`` to reread the document."""
        pending = doc.body.pending
        assert pending is not None
        if not pending.admitted:
            presence = self.runtime.lookup(pending.session_id, pending.message_id)
            if presence is Presence.ABSENT:
                if not self._dispatch_allowed(doc, pending) or not self._exists(row.workspace_path):
                    if self._archive(row, doc, now, "failed", "not-started", None):
                        result.not_started += 1
                    return _AGAIN
                try:
                    presence = self.runtime.start(self._start_of(row, doc, pending))
                except Exception:
                    self._mark(row, doc, pending, now, PassageStatus.UNCERTAIN, "admission-failing")
                    raise
            if presence is Presence.PRESENT:
                admitted = replace(
                    pending, admitted=True, admitted_at=now, status=PassageStatus.RUNNING
                )
                body = replace(doc.body, pending=admitted, admitted=doc.body.admitted + 1)
                done = (
                    [and_(_C.c.action == "run-now", _C.c.request_id == pending.request_id)]
                    if pending.request_id is not None
                    else None
                )
                if not self._cas(row, doc, body, now, complete=done):
                    return _AGAIN
                result.admitted += 1
                if pending.slot is not None:
                    result.admissions.append((row.id, pending.slot, now))
                log_passage("started", doc, admitted)
                return _AGAIN
            self._mark(row, doc, pending, now, PassageStatus.UNCERTAIN, "not-observed")
            return None
        obs = self.runtime.observe(pending.session_id)
        if not obs.launched and not obs.exited and self._dispatch_allowed(doc, pending):
            # Admitted, never launched (a crash between the two): ``start`` is idempotent
            # and launches it exactly once; the admission is never made again.
            self.runtime.start(self._start_of(row, doc, pending))
            obs = self.runtime.observe(pending.session_id)
        if self._interrupt_wanted(doc, pending) and not obs.settled and not obs.interrupted:
            self.runtime.interrupt(pending.session_id)
            result.interrupted += 1
        if obs.settled:
            outcome, reason = settle_outcome(obs)
            summary = obs.report.summary if obs.report is not None else ""
            if self._archive(row, doc, now, outcome, reason, summary, obs=obs):
                result.settled += 1
                self._watch.pop(row.id, None)
            return _AGAIN
        self._watch[row.id] = pending.session_id
        status = PassageStatus.SETTLING if obs.exited else PassageStatus.RUNNING
        if pending.status is not status or pending.reason is not None:
            self._mark(row, doc, pending, now, status, None)
        return None

    def _mark(
        self,
        row: Any,
        doc: DocState,
        pending: Pending,
        now: datetime,
        status: PassageStatus,
        reason: str | None,
    ) -> None:
        if pending.status is status and pending.reason == reason:
            return
        body = replace(doc.body, pending=replace(pending, status=status, reason=reason))
        self._cas(row, doc, body, now)

    def _archive(
        self,
        row: Any,
        doc: DocState,
        now: datetime,
        outcome: str,
        reason: str | None,
        summary: str | None,
        *,
        obs: Observation | None = None,
    ) -> bool:
        """Archive the pending passage in one compare-and-swap and resolve the controls
        that waited on it (its Run now, Pause/Stop interrupting it)."""
        pending = doc.body.pending
        assert pending is not None
        res = Result(
            passage_id=pending.passage_id,
            trigger=pending.trigger,
            slot=pending.slot,
            outcome=outcome,
            reason=reason,
            summary=summary or "",  # archive() cuts it to its byte bound
            admitted_at=pending.admitted_at,
            settled_at=now,
        )
        body = archive(doc.body, res)
        waiting: list[Any] = [_C.c.action.in_(("pause", "stop", "check"))]
        if pending.request_id is not None:
            waiting.append(and_(_C.c.action == "run-now", _C.c.request_id == pending.request_id))
        if not self._cas(row, doc, body, now, complete=waiting):
            return False
        log_passage(
            "settled", doc, pending, outcome=outcome, reason=reason, seconds=_ran(obs, pending, now)
        )
        return True

    def _restart(self, sid: UUID, now: datetime) -> None:
        """A wake taken over from a dead or stopped scheduler: the schedule's Job was gone.
        ``restart: interrupt`` schedules show Interrupted until an explicit Resume (which
        rearms the wake); ``resume`` ones go on, their pending passage reconciled first."""
        row = self._read(sid)
        if row is None or row.phase != Phase.LIVE.value:
            return
        doc = docs.doc_of(row)
        if doc.config.restart is not Restart.INTERRUPT or doc.state is not State.RUNNING:
            return
        if doc.body.interruption is None:
            self._interrupt_schedule(row, doc, now, "restart")
        self.store.run(lambda conn: conn.execute(delete(_W).where(_W.c.schedule_id == sid)))


_AGAIN = object()


def _ran(obs: Observation | None, pending: Pending, now: datetime) -> float | None:
    """How long the passage ran: from its command's start to its end when the runtime saw
    both, else from its admission to ``now``; ``None`` for one never admitted."""
    if obs is not None and obs.started_at is not None and obs.ended_at is not None:
        return max((obs.ended_at - obs.started_at).total_seconds(), 0.0)
    if pending.admitted_at is None:
        return None
    return max((now - pending.admitted_at).total_seconds(), 0.0)


def fallback_at(now: datetime, polls: int) -> datetime:
    return now + fallback_delay(polls)
