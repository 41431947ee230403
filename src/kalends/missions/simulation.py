"""Simulate a schedule over a window (issue 24 §2): the real scheduler and controls on a
fake clock, with the in-memory runtime, in a database of its own.

:func:`simulate` makes a migrated SQLite database and a workspace in a temporary
directory (both removed afterwards), an actor with the run privilege, creates the
schedule from the configuration (its profile replaced by a harmless ``true``: nothing
runs) and Plays it at the window's start. Then an event loop moves the fake clock to the
next of: the schedule's wake (``schedule_wakes.due_at``), the end of a running passage
(its duration drawn from the options' distribution with a seeded generator), an outage
or pause boundary, the window's end. At each instant, in this order: passages that end
report (failed with the fail rate's probability, else completed) and exit, and the
scheduler holding the wake is told at once, as the running loop's exit watch does (the
wake due 3 s later); an outage begins (the scheduler is dropped without releasing its
wakes, as a killed process leaves them) or ends (a new scheduler under another owner
starts, and takes the wakes over once the dead one's leases run out); a pause begins or
ends (Pause and Play through the service); the scheduler runs one round.

Between far slots a running scheduler wakes every hour (the sleep ceiling) and finds
nothing to do; unless ``exact``, the loop goes straight to the next slot instead. The
ledger is the same either way (a test compares them); ``exact`` runs every such round.

The slot ledger's retention (the last 1,000 rows or 90 days) would drop the oldest rows
of a long simulation: the simulation moves the rows written out of its private database
every few hundred steps (no decision reads them), and a trigger makes the retention's own
deletes no-ops, so the whole window's ledger comes back.
"""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import delete, select, text
from sqlalchemy.engine import Connection

from kalends.auth import Privilege
from kalends.bootstrap import Services, build
from kalends.civil import next_slots
from kalends.clock import Clock, FakeClock, SystemClock
from kalends.errors import InvalidInput, KalendsError
from kalends.missions.config import Config, config_from_json
from kalends.missions.leases import WakeLeases, held_wakes
from kalends.missions.ledger import Reason, iso
from kalends.missions.ledger_reads import empty_counts, row_json
from kalends.missions.reservation_writes import passage_zone
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import LOOK_BATCH, Scheduler
from kalends.missions.simulation_options import SimulationOptions
from kalends.missions.wakes import EVENT_DEBOUNCE, MAX_SLEEP
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.migrate import open_store
from kalends.storage.mission_tables import schedule_wakes
from kalends.storage.unit_of_work import Store

__all__ = [
    "DST_REASONS",
    "MAX_SIMULATED_SLOTS",
    "MAX_SIMULATION_ROUNDS",
    "PROGRESS_EVERY",
    "Progress",
    "Simulation",
    "SimulationTooLong",
    "policy_zone",
    "simulate",
    "simulation_config",
]

# kalends decision: a simulation covers at most 110,000 slots (a year of every five
# minutes is 105,120), refused before it starts. Each slot costs the real scheduler two
# rounds (the launch and, 3 s later, the settlement) of about 5-15 ms on SQLite, so the
# largest simulation takes some tens of minutes.
MAX_SIMULATED_SLOTS = 110_000
# kalends decision: and at most 500,000 scheduler rounds, for long passages that the
# scheduler looks at every 5 minutes while they run; beyond, the run stops with an error.
MAX_SIMULATION_ROUNDS = 500_000
# How many slots one engine call enumerates while the window's slots are counted.
_COUNT_CHUNK = 4_096
# How many steps of the loop pass between two progress reports, and between two harvests
# of the ledger rows written (see :meth:`_Run.harvest`).
PROGRESS_EVERY = 100
HARVEST_EVERY = 200
DST_REASONS = frozenset({Reason.DST_GAP, Reason.DST_SHIFTED, Reason.DAY_MISSING})
_HARMLESS = {"command": ["true"]}
_ONE_SECOND = timedelta(seconds=1)


class SimulationTooLong(InvalidInput):
    """The simulation needs more scheduler rounds than one run allows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """How far a simulation got: the simulated instant, the window's fraction done, and
    the passages launched so far."""

    at: datetime
    fraction: float
    launched: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    """What a simulation found: the ledger ``rows`` (the reads' JSON shape, ascending by
    slot), ``counts`` by outcome and reason (summing summary rows' slots), the
    DST-affected rows, the passages launched, completed, failed, interrupted (by a control
    or the scheduler before their end) and still running at the window's end, the
    scheduler rounds run and the wall time taken."""

    mission_id: str
    zone: str
    start: datetime
    end: datetime
    rows: list[dict[str, Any]]
    counts: dict[str, Any]
    passages: dict[str, int]
    rounds: int
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def dst(self) -> list[dict[str, Any]]:
        """Rows a DST transition or a missing day touched."""
        reasons = {r.value for r in DST_REASONS}
        return [r for r in self.rows if r["note"] is not None or r["reason"] in reasons]

    @property
    def first(self) -> dict[str, Any] | None:
        return self.rows[0] if self.rows else None

    @property
    def last(self) -> dict[str, Any] | None:
        return self.rows[-1] if self.rows else None

    def to_json(self) -> dict[str, Any]:
        return {
            "missionId": self.mission_id,
            "zone": self.zone,
            "from": iso(self.start),
            "to": iso(self.end),
            "counts": self.counts,
            "passages": self.passages,
            "dst": self.dst,
            "first": self.first,
            "last": self.last,
            "rounds": self.rounds,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "items": self.rows,
        }


def simulation_config(
    config: Mapping[str, Any], options: SimulationOptions
) -> tuple[dict[str, Any], list[str]]:
    """The configuration the simulation creates, and notes on what it left out: the
    profile becomes ``true`` (nothing runs), a condition, its watch and a task template
    are dropped (every slot's condition is taken to hold), the options' end bounds
    replace the configuration's. An on-change policy cannot be simulated."""
    if not isinstance(config, Mapping):
        raise InvalidInput("config: expected a JSON object", field="config")
    prepared = dict(config)
    notes: list[str] = []
    _refuse_on_change(prepared.get("policy"))
    prepared["profile"] = dict(_HARMLESS)
    prepared.setdefault("title", "Simulation")
    if prepared.get("condition") is not None:
        notes.append("the condition is not simulated: every slot's condition holds")
    for left_out in ("condition", "watch", "template"):
        prepared.pop(left_out, None)
    end = prepared.get("end")
    bounds: dict[str, Any] = dict(end) if isinstance(end, Mapping) else {}
    if end is not None and not isinstance(end, Mapping):
        bounds = end  # (the engine refuses it with its own words)
    elif options.max_passages is not None or options.until_local or options.within:
        if options.max_passages is not None:
            bounds["maxPassages"] = options.max_passages
        if options.until_local is not None:
            bounds["until"] = {"local": options.until_local, "zone": options.zone}
        if options.within is not None:
            bounds["within"] = dict(options.within)
    if bounds:
        prepared["end"] = bounds
    config_from_json(prepared)  # the engine's own refusals, before any database
    return prepared, notes


def _refuse_on_change(policy: object) -> None:
    if isinstance(policy, Mapping) and policy.get("kind") == "on-change":
        raise InvalidInput(
            "policy: an on-change policy launches when a source changes, which a "
            "simulation cannot foresee; simulate a policy with slots",
            field="policy",
        )


def policy_zone(config: Mapping[str, Any]) -> str:
    """The zone a configuration's slots are shown in (UTC for elapsed policies); the
    engine's refusal when its policy is not valid."""
    if not isinstance(config, Mapping):
        raise InvalidInput("config: expected a JSON object", field="config")
    policy = config.get("policy")
    _refuse_on_change(policy)
    if policy is None:
        raise InvalidInput("policy: is required", field="policy")
    return passage_zone(
        config_from_json({"title": "Simulation", "profile": _HARMLESS, "policy": policy})
    )


def simulate(
    config: Mapping[str, Any],
    options: SimulationOptions,
    *,
    progress: Callable[[Progress], None] | None = None,
    wall: Clock | None = None,
) -> Simulation:
    """Run ``config`` over the options' window (see the module docstring) and return the
    ledger it wrote. Bad options or a configuration the engine refuses raise
    :class:`~kalends.errors.InvalidInput` before anything runs."""
    checked = options.checked()
    prepared, notes = simulation_config(config, checked)
    _check_slots(config_from_json(prepared), checked)
    timer = wall or SystemClock()
    began = timer.monotonic()
    with tempfile.TemporaryDirectory(prefix="kalends-simulation-") as tmp:
        root = Path(tmp)
        clock = FakeClock(checked.start)
        store = open_store(f"sqlite:///{root / 'simulation.sqlite3'}", clock=clock)
        try:
            _keep_every_row(store)
            run = _Run(build(store), clock, root, checked, progress)
            run.begin(prepared)
            run.loop()
            rows = run.rows()
        finally:
            store.close()
    return Simulation(
        mission_id=str(run.sid),
        zone=passage_zone(config_from_json(prepared)),
        start=checked.start,
        end=checked.end,
        rows=rows,
        counts=_counts(rows),
        passages=run.passage_counts(),
        rounds=run.rounds,
        seconds=timer.monotonic() - began,
        notes=notes + run.notes,
    )


def _check_slots(config: Config, options: SimulationOptions) -> None:
    """Refuse a window holding more than :data:`MAX_SIMULATED_SLOTS` slots."""
    if config.one_shot:
        return
    cursor, counted = options.start, 0
    while counted <= MAX_SIMULATED_SLOTS:
        found = next_slots(config.policy, cursor, _COUNT_CHUNK, origin=options.start)
        inside = [s for s in found if s.at < options.end]
        counted += len(inside)
        if len(inside) < _COUNT_CHUNK:
            return
        cursor = inside[-1].at
    raise SimulationTooLong(
        f"to: the window holds more than {MAX_SIMULATED_SLOTS:,} slots of this policy; "
        "a simulation runs at most that many: simulate a shorter window",
        field="to",
    )


def _keep_every_row(store: Store) -> None:
    """Make this private database ignore the retention's deletes of ledger rows, except
    while the simulation harvests them (a row in ``simulation_harvest``)."""

    def run(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE simulation_harvest (open INTEGER NOT NULL)"))
        conn.execute(
            text(
                "CREATE TRIGGER simulation_keeps_the_ledger BEFORE DELETE ON slot_ledger "
                "WHEN NOT EXISTS (SELECT 1 FROM simulation_harvest) "
                "BEGIN SELECT RAISE(IGNORE); END"
            )
        )

    store.run(run)


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts = empty_counts()
    reasons: Counter[str] = Counter()
    for row in rows:
        counts[row["outcome"]] += row["slots"]
        if row["reason"] is not None:
            reasons[row["reason"]] += row["slots"]
    counts["reasons"] = dict(sorted(reasons.items()))
    return counts


@dataclass(slots=True)
class _Passage:
    end: datetime
    failed: bool
    done: bool = False
    interrupted: bool = False


class _Run:
    """One simulation's state: the services, the fake clock, the schedule, the current
    scheduler (``None`` during an outage) and the passages it launched."""

    def __init__(
        self,
        services: Services,
        clock: FakeClock,
        root: Path,
        options: SimulationOptions,
        progress: Callable[[Progress], None] | None,
    ) -> None:
        self.services = services
        self.store = services.store
        self.clock = clock
        self.root = root
        self.options = options
        self.on_progress = progress
        self.rng = random.Random(options.seed)
        self.runtime = MemoryRuntime(clock=clock, instant=False)
        self.passages: dict[str, _Passage] = {}
        self.running: set[str] = set()
        self.harvested: dict[str, tuple[datetime, str, dict[str, Any]]] = {}
        self.notes: list[str] = []
        self.rounds = 0
        self.generation = 0
        self.requests = 0
        self.scheduler: Scheduler | None = None
        self.sid: UUID | None = None
        self.actor: UUID | None = None
        self.last_round: datetime | None = None
        # The wake as the last step's end read it, and whether anything since may have
        # changed it (a passage's exit, a control, an outage's edge).
        self.seen: Any = None
        self.changed = True
        boundaries: list[tuple[datetime, int, str]] = []
        # At one instant an outage ends before a pause begins, and so on: the order here.
        for interval in options.outages:
            boundaries += [(interval.start, 0, "down"), (interval.end, 1, "up")]
        for interval in options.pauses:
            boundaries += [(interval.start, 2, "pause"), (interval.end, 3, "play")]
        self.boundaries = sorted(boundaries)

    # --- setting up ------------------------------------------------------------------

    def begin(self, prepared: dict[str, Any]) -> None:
        s = self.services
        workspace_dir = self.root / "workspace"
        workspace_dir.mkdir()
        with self.store.transaction():
            actor = s.directory.add_actor("simulation", "Simulation")
            s.grants.grant(actor.id, Privilege.RUN)
            workspace = s.workspaces.add(actor.id, workspace_dir, "simulation")
        self.actor = actor.id
        receipt = s.schedules.create(
            actor.id, workspace.id, prepared, request_id="simulation-create"
        )
        assert receipt.mission_id is not None
        self.sid = receipt.mission_id
        self._control("play")
        if any(i.start <= self.options.start for i in self.options.outages):
            self.scheduler = None
        else:
            self._new_scheduler()

    def _new_scheduler(self) -> None:
        self.generation += 1
        self.scheduler = Scheduler(self.store, self.runtime, owner=f"simulation-{self.generation}")

    def _control(self, action: str) -> None:
        assert self.actor is not None and self.sid is not None
        schedules = self.services.schedules
        revision = schedules.detail(self.actor, self.sid)["revision"]
        self.requests += 1
        schedules.control(
            self.actor,
            self.sid,
            action,
            request_id=f"simulation-{self.requests:06d}",
            expected_revision=revision,
        )

    # --- the loop --------------------------------------------------------------------

    def loop(self) -> None:
        end = self.options.end
        steps = 0
        while True:
            now = self.clock.now()
            if now >= end:
                return
            self._end_passages(now)
            self._boundaries(now)
            if self.scheduler is not None and self._wanted(now):
                self._round(now)
            steps += 1
            if steps % HARVEST_EVERY == 0:
                self.harvest()
            if self.on_progress is not None and steps % PROGRESS_EVERY == 0:
                self._progress(now)
            following = self._next(now)
            if following is None:
                return
            if following > now:
                self.clock.advance(min(following, end) - now)

    def _progress(self, now: datetime) -> None:
        assert self.on_progress is not None
        window = (self.options.end - self.options.start).total_seconds()
        done = (now - self.options.start).total_seconds()
        self.on_progress(
            Progress(at=now, fraction=min(1.0, done / window), launched=len(self.passages))
        )

    def _end_passages(self, now: datetime) -> None:
        for session in list(self.running):
            if self.runtime.observe(session).exited:  # (ended by a control first)
                self.running.discard(session)
                self.passages[session].done = self.passages[session].interrupted = True
        ended = sorted(
            (self.passages[s].end, s) for s in self.running if self.passages[s].end <= now
        )
        for _, session in ended:
            passage = self.passages[session]
            passage.done = True
            self.running.discard(session)
            outcome = "failed" if passage.failed else "completed"
            self.runtime.report(session, outcome, f"simulated: {outcome}")
            self.runtime.finish(session, status=1 if passage.failed else 0)
        if ended:
            self.changed = True
        if ended and self.scheduler is not None:
            # The running loop watches its passages' exits every second and makes the
            # wake due after the debounce; a dead scheduler (an outage) sees nothing.
            s = self.scheduler
            WakeLeases(self.store, s.owner, s.token, s.lease).nudge(
                [self._sid()], now + EVENT_DEBOUNCE
            )

    def _boundaries(self, now: datetime) -> None:
        while self.boundaries and self.boundaries[0][0] <= now:
            _, _, kind = self.boundaries.pop(0)
            self.changed = True
            if kind == "down":
                self.scheduler = None  # killed: its wakes stay leased until they run out
            elif kind == "up":
                self._new_scheduler()
            else:
                try:
                    self._control(kind)
                except KalendsError as exc:
                    self.notes.append(f"{kind} at {iso(now)} was refused: {exc}")

    def _round(self, now: datetime) -> None:
        assert self.scheduler is not None
        while True:
            if self.rounds >= MAX_SIMULATION_ROUNDS:
                raise SimulationTooLong(
                    f"the simulation needs more than {MAX_SIMULATION_ROUNDS:,} scheduler "
                    f"rounds; it reached {iso(now)}: simulate a shorter window",
                    field="to",
                )
            result = self.scheduler.run_once()
            self.rounds += 1
            self.last_round = now
            if result.admitted:
                self._admitted(now)
            if result.looked < LOOK_BATCH:
                return

    def _admitted(self, now: datetime) -> None:
        # (the runtime lists its sessions in the order they were admitted)
        for session in self.runtime.sessions()[len(self.passages) :]:
            started = self.runtime.observe(session).started_at or now
            duration = self.options.durations.draw(self.rng)
            failed = self.rng.random() < self.options.fail_rate
            self.passages[session] = _Passage(end=started + duration, failed=failed)
            self.running.add(session)

    def _sid(self) -> UUID:
        assert self.sid is not None
        return self.sid

    def _wake(self) -> Any:
        return self.store.run(
            lambda conn: conn.execute(
                held_wakes().where(schedule_wakes.c.schedule_id == self._sid())
            ).first(),
            write=False,
        )

    def _wanted(self, now: datetime) -> bool:
        """Whether a round now has anything to do: the wake is free, or due and ours, or
        another scheduler's lease on it ran out. (A round that finds nothing due changes
        nothing but lease renewals and retention, which a lone scheduler needs not.)"""
        assert self.scheduler is not None
        wake = self._wake() if self.changed else self.seen
        if wake is None:
            return False
        if wake.owner is None:
            return True
        if wake.lease_token != self.scheduler.token:
            return bool(wake.lease_expires_at is None or wake.lease_expires_at <= now)
        return bool(wake.due_at <= now)

    def _next(self, now: datetime) -> datetime | None:
        """The next instant something happens, or ``None`` when nothing ever will."""
        candidates = [self.passages[s].end for s in self.running]
        if self.boundaries:
            candidates.append(self.boundaries[0][0])
        wake = self.seen = self._wake()
        self.changed = False
        if wake is not None and self.scheduler is not None:
            candidates.append(self._wake_at(wake, now))
        if not candidates:
            return None
        return max(min(candidates), now)

    def _wake_at(self, wake: Any, now: datetime) -> datetime:
        assert self.scheduler is not None
        if wake.owner is not None and wake.lease_token != self.scheduler.token:
            # Another (dead) scheduler's lease: claimed when it runs out, looked at then.
            expires = wake.lease_expires_at or now
            return max(expires, now + _ONE_SECOND) if expires <= now else expires
        if wake.owner is None:
            return now + _ONE_SECOND
        due: datetime = wake.due_at
        if due <= now:
            return now + _ONE_SECOND  # (a look left it due: look again a second later)
        sleeping = (
            not self.options.exact
            and self.last_round is not None
            and due == self.last_round + MAX_SLEEP
            and wake.polls == 0
            and wake.failures == 0
            and wake.next_slot_at is not None
            and wake.next_slot_at > due
            and not self.running
        )
        if sleeping:
            # The hourly ceiling of a sleep: the rounds until the next slot find nothing.
            following: datetime = wake.next_slot_at
            return min(following, self.options.end)
        return due

    # --- results ---------------------------------------------------------------------

    def harvest(self) -> None:
        """Move the rows written so far out of the database into :attr:`harvested` (rows
        are written once and never read by a decision), so the retention pass of every
        round ranks a few rows, not the whole window's."""
        c = slot_ledger.c

        def run(conn: Connection) -> None:
            found = conn.execute(select(slot_ledger).where(c.schedule_id == self._sid())).all()
            if not found:
                return
            for r in found:
                self.harvested[r.slot_key] = (r.slot_at, r.slot_key, row_json(r._mapping))
            conn.execute(text("INSERT INTO simulation_harvest (open) VALUES (1)"))
            conn.execute(delete(slot_ledger).where(c.schedule_id == self._sid()))
            conn.execute(text("DELETE FROM simulation_harvest"))

        self.store.run(run)

    def rows(self) -> list[dict[str, Any]]:
        self.harvest()
        return [row for _, _, row in sorted(self.harvested.values())]

    def passage_counts(self) -> dict[str, int]:
        done = [p for p in self.passages.values() if p.done and not p.interrupted]
        failed = sum(1 for p in done if p.failed)
        return {
            "launched": len(self.passages),
            "completed": len(done) - failed,
            "failed": failed,
            "interrupted": sum(1 for p in self.passages.values() if p.interrupted),
            "running": len(self.running),
        }
