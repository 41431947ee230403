"""The mission scheduler: durable wakes, write-ahead starts, observation and settlement.

Each schedule that needs attention has one wake row (:mod:`kalends.missions.wakes`).
A scheduler claims free wakes (new, released, or left behind by a dead scheduler
whose lease ran out) and renews the leases of its own together
(:mod:`kalends.missions.leases`); it looks at each of its wakes when due and sets when
to look again. Several schedulers on one database never admit a slot twice: the pending
passage is written with a compare-and-swap on the document's revision before anything
starts, its identities derive from the schedule and the slot, and the high-water mark
advances with the reservation, so a wall-clock roll-back never makes a processed slot
new again.

What to do with a due schedule is one pure decision (:mod:`kalends.missions.decide`).
A round acts on it set-based for the many running schedules with nothing pending
(:mod:`kalends.missions.batch`), and in a look of its own for everything else
(:mod:`kalends.missions.looks`); a passage's identities, reservation, admission and
outcome are pure rules (:mod:`kalends.missions.passages`). This module is the loop.

A failed look keeps the schedule running and records ``lastError {code, at}`` on the
wake row (outside the document revision), retrying after 30 s, 2 min, 5 min, 15 min,
1 h; the next successful look clears it. A workspace that no longer exists ends the
schedule as Interrupted with reason ``error``.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.civil.zone_data import zone_data_version
from kalends.errors import InvalidInput, KalendsError, StorageError
from kalends.missions.batch import Batch
from kalends.missions.gate_reads import SourceReads
from kalends.missions.leases import WakeLeases
from kalends.missions.ledger_writes import Trimmer
from kalends.missions.looks import Look, LookResult
from kalends.missions.node_runtime import NodeRuntime
from kalends.missions.passages import log_passage, scheduled_identity, settle_outcome
from kalends.missions.runtime.base import Runtime
from kalends.missions.scheduler_rows import DueWake, SchedulerRow, due_wakes, read_schedules
from kalends.missions.wakes import EVENT_DEBOUNCE, WAKE_LEASE
from kalends.missions.zone_changes import recompute_changed
from kalends.storage.unit_of_work import Store

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


class Scheduler:
    """One scheduler process's loop over the wakes it holds. Thread-safe to stop.

    ``node``: the worker node it runs as (issue 23 §3): given a
    :class:`~kalends.missions.node_runtime.NodeRuntime`, that runtime's node. Its
    reservations name the node, and it observes other nodes' passages through the
    database (:mod:`kalends.missions.looks`). Without one it is the scheduler it always
    was, with no write of its own about nodes."""

    def __init__(
        self,
        store: Store,
        runtime: Runtime,
        *,
        owner: str | None = None,
        lease: timedelta = WAKE_LEASE,
        exists: Callable[[str], bool] = os.path.isdir,
        node: str | None = None,
    ) -> None:
        if isinstance(runtime, NodeRuntime):
            if node is not None and node != runtime.node_id:
                raise InvalidInput(
                    f"the scheduler runs as node {node} but its runtime is node "
                    f"{runtime.node_id}'s",
                    field="node",
                )
            node = runtime.node_id
        self.store = store
        self.runtime = runtime
        self.node = node
        self.owner = owner or f"scheduler-{os.getpid()}-{secrets.token_hex(4)}"
        self.lease = lease
        self.token = secrets.token_hex(16)
        self._watch: dict[UUID, str] = {}
        self._leases = WakeLeases(store, self.owner, self.token, lease)
        self._reads = SourceReads()
        self._look = Look(store, runtime, self._leases, exists, self._watch, self._reads, node=node)
        self._batch = Batch(store, runtime, self.token, exists, self._watch, self._reads, node=node)
        self._trimmer = Trimmer(store)
        self._zones_checked = False

    # --- the loop ------------------------------------------------------------------------

    def run_once(self) -> LookResult:
        """Renew, claim, and look at every due wake of this scheduler once."""
        result = LookResult()
        now = self.store.clock.now()
        self._leases.renew(now)
        if not self._zones_checked:
            self._zone_changes(now)
            self._zones_checked = True
        taken = self._leases.claim(now, CLAIM_BATCH)
        result.claimed = len(taken)
        over = [c.schedule_id for c in taken if c.takeover]
        if over:  # (recorded under other zone data by a scheduler that died)
            self._zone_changes(now, over)
            # One read for the round's takeovers (each read its own row: after a SIGKILL
            # mid-burst the survivor took the dead one's wakes at a third of its rate).
            taken_rows = self.store.run(lambda conn: read_schedules(conn, over), write=False)
            for sid in over:
                restart = partial(self._look.restart, sid, now, taken_rows.get(sid))
                self._guard(sid, now, result, restart)

        def mine(conn: Connection) -> tuple[list[DueWake], dict[UUID, SchedulerRow]]:
            due = due_wakes(conn, self.token, now, LOOK_BATCH)
            return due, read_schedules(conn, [d.schedule_id for d in due])

        due, rows = self.store.run(mine, write=False)
        self._reads.forget_older(now)
        result.looked = len(due)
        for wake in self._batch.run(due, rows, now, result):
            self._guard(
                wake.schedule_id,
                now,
                result,
                partial(
                    self._look.look_and_set, wake.schedule_id, wake.armed, wake.polls, now, result
                ),
                failures=wake.failures,
            )
        try:
            result.trimmed = self._trimmer.maybe(now)
        except StorageError as exc:  # (retention waits for the next pass)
            log.warning("scheduler %s: could not trim the slot ledger: %s", self.owner, exc)
        return result

    def _zone_changes(self, now: datetime, only: list[UUID] | None = None) -> None:
        """Recompute the next slots recorded under other zone data (issue 24 §3): every
        free wake once at start, then the wakes this scheduler takes over."""
        version = zone_data_version()
        moved = recompute_changed(self.store, now, version, token=self.token, only=only)
        if moved:
            log.info("scheduler %s: zone data %s moved %d slot(s)", self.owner, version, moved)

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
                    pause = self._leases.sleep_seconds()
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
            self._reads.close()
            try:
                self.release()
            except StorageError as exc:  # the leases run out on their own
                log.warning("scheduler %s: could not release its wakes: %s", self.owner, exc)

    def release(self) -> None:
        """Give up every wake this scheduler holds (graceful shutdown). They are marked
        orphaned, so the next scheduler treats them as after a restart."""
        self._leases.release()

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
        for sid in ended:
            self._watch.pop(sid, None)
        self._leases.nudge(ended, now + EVENT_DEBOUNCE)
        return True

    def _guard(
        self,
        sid: UUID,
        now: datetime,
        result: LookResult,
        action: Callable[[], None],
        *,
        failures: int = 0,
    ) -> None:
        """Run one look; its failure is its own: counted, logged and recorded on its wake
        as ``lastError``, retried after the backoff."""
        try:
            action()
        except Exception as exc:
            result.errors += 1
            code = exc.code if isinstance(exc, KalendsError) else "internal-error"
            log.warning("schedule %s: wake failed (%s): %s", sid, code, exc)
            self._leases.fail(sid, now, failures, code, str(exc))
