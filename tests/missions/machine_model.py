"""A reference model of one schedule document's controls, for the control state machine.

Written from seed 002 "Daily document controls" and the transition table in
``kalends.missions.controls`` (not from the service's code): the model knows the
revision, the desired state, the phase (live, deleting, tombstone), the pending
passage, the Interrupted mark, the first Play, the quota, the configuration
generations and the control records (at most 64; a new control evicts the oldest
completed one, and refuses when every record is unresolved). A control refused at its
own revision, or at one the document has not reached, is recorded too, as a completed
record holding its refusal (when no record makes room, the eviction bound rises over
it instead), so that its status reads the code its answer carried; a stale revision is
not recorded. A Delete with no passage pending compacts the document to its tombstone
at once, and the records go with it: only the Delete's own record stays, so every
earlier request then reads unknown.

Every method is pure: :meth:`Model.control` returns the expected outcome and the
model after it, so a caller commits the new model only when the real service agreed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "ACTIONS",
    "MAX_RECORDS",
    "Control",
    "Expected",
    "Model",
    "Record",
    "Status",
]

MAX_RECORDS = 64
ACTIONS = ("play", "pause", "stop", "resume", "run-now", "check", "configure", "delete")

Payload = dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Control:
    """One control a client sends: the action and, for Configure, the changed fields."""

    action: str
    payload: Payload = None

    def label(self) -> str:
        return self.action if self.payload is None else f"{self.action} {self.payload}"


@dataclass(frozen=True, slots=True)
class Record:
    """A kept control record: what was asked, at which revision, and what it recorded;
    for a refused control, the code of its refusal."""

    control: Control
    expected: int
    recorded: int
    complete: bool
    refused: Kind | None = None


Kind = Literal[
    "applied",
    "repeated",
    "revision-conflict",
    "control-conflict",
    "request-reused",
    "limit-reached",
]


@dataclass(frozen=True, slots=True)
class Expected:
    """What a control must do: its kind and, when it applied or repeated, its record."""

    kind: Kind
    record: Record | None = None


@dataclass(frozen=True, slots=True)
class Status:
    """What ``control_status`` must read for a request ID."""

    status: str  # applied | rejected | unknown
    code: str | None = None
    record: Record | None = None


@dataclass(frozen=True, slots=True)
class Model:
    revision: int = 1
    state: str = "paused"  # paused | running | stopped
    phase: str = "live"  # live | deleting | tombstone
    pending: str | None = None  # None | "starting" | "uncertain"
    pending_request: str | None = None
    interrupted: bool = False
    first_play: bool = False
    ever_stopped: bool = False
    max_passages: int | None = None
    admitted: int = 0
    settled: int = 0
    notes: str = ""
    policy_time: str = "09:00"
    config_generation: int = 1
    temporal_generation: int = 1
    # Insertion order is admission order; a request ID is kept once.
    records: dict[str, Record] = field(default_factory=dict)
    evicted: frozenset[str] = frozenset()
    evicted_revision: int = 0

    # --- what the table allows ----------------------------------------------------------

    def quota_left(self) -> bool:
        used = self.admitted + (1 if self.pending is not None else 0)
        return self.max_passages is None or used < self.max_passages

    def allows(self, action: str) -> bool:
        """The transition table of ``kalends.missions.controls``, from its docstring."""
        if self.phase != "live":
            return False
        paused, running = self.state == "paused", self.state == "running"
        if self.pending == "uncertain" and action not in ("resume", "pause", "stop", "check"):
            # Seed 002: while an unadmitted passage's start stays unknown, only Resume,
            # Pause, Stop and Check are offered (uncertain passages here are unadmitted).
            return False
        return {
            "play": paused,
            "pause": running,
            "stop": paused or running,
            "resume": running and self.interrupted,
            "run-now": (paused or running) and self.pending is None and self.quota_left(),
            "check": self.pending is not None and not running,
            "configure": (paused or running) and self.pending != "uncertain",
            "delete": True,
        }[action]

    def allowed(self) -> set[str]:
        return {a for a in ACTIONS if self.allows(a)}

    def edit_allowed(self, payload: Payload) -> bool:
        """With a passage pending only objective and notes may change."""
        assert payload is not None
        if self.pending is None:
            return True
        policy = payload.get("policy")
        return policy is None or policy["time"] == self.policy_time

    # --- a control ------------------------------------------------------------------------

    def control(self, request_id: str, control: Control, expected: int) -> tuple[Expected, Model]:
        """The outcome of sending ``control`` as ``request_id`` at ``expected``."""
        kept = self.records.get(request_id)
        if kept is not None:
            # A request is its control and expected revision; anything else under its ID
            # is a reuse.
            if kept.control != control or kept.expected != expected:
                return Expected("request-reused", kept), self
            if kept.refused is not None:
                return Expected(kept.refused, kept), self  # the same refusal again
            return Expected("repeated", kept), self
        if self.phase == "tombstone":
            return Expected("control-conflict"), self
        if expected < self.revision:
            return Expected("revision-conflict"), self
        if expected > self.revision:
            return self._refuse(request_id, control, expected, "revision-conflict")
        if not self.allows(control.action):
            return self._refuse(request_id, control, expected, "control-conflict")
        if control.action == "configure" and not self.edit_allowed(control.payload):
            return self._refuse(request_id, control, expected, "control-conflict")
        after, complete = self._apply(request_id, control)
        if control.action == "play" or after.state != "running":
            # Interrupted is desired running without a live scheduler: Pause, Stop and
            # Delete end the desire, and Play arms the scheduler afresh.
            after = replace(after, interrupted=False)
        revision = self.revision + 1
        record = Record(control, expected, revision, complete)
        after = replace(after, revision=revision)
        if after.phase == "tombstone":
            # Compaction keeps the tombstone only: every earlier record goes with the body,
            # and the eviction bound covers every revision before the Delete.
            after = replace(
                after,
                records={},
                evicted=after.evicted | frozenset(after.records),
                evicted_revision=expected,
            )
        else:
            room = after._evict()
            if room is None:
                return Expected("limit-reached"), self
            after = room
        if control.action in ("pause", "stop") and not complete:
            # A single unresolved Pause/Stop: the newest carries the interruption, so it
            # supersedes (completes) the earlier ones.
            after = replace(
                after,
                records={
                    rid: replace(r, complete=True) if r.control.action in ("pause", "stop") else r
                    for rid, r in after.records.items()
                },
            )
        after = replace(after, records={**after.records, request_id: record})
        return Expected("applied", record), after

    def _refuse(
        self, request_id: str, control: Control, expected: int, kind: Kind
    ) -> tuple[Expected, Model]:
        """A refusal recorded under its request ID, at the revision an applied control would
        have recorded; unrecorded, the eviction bound rises over that revision instead."""
        revision = self.revision + 1
        room = self._evict()
        if room is None:
            return Expected(kind), replace(
                self, evicted_revision=max(self.evicted_revision, revision)
            )
        record = Record(control, expected, revision, complete=True, refused=kind)
        return Expected(kind, record), replace(room, records={**room.records, request_id: record})

    def _apply(self, request_id: str, control: Control) -> tuple[Model, bool]:
        action = control.action
        if action == "play":
            return replace(self, state="running", first_play=True), True
        # Pause and Stop complete at once unless a passage may be running: one reserved and
        # still starting has no process to interrupt (its dispatch is refused from now on).
        settled = self.pending != "uncertain"
        if action == "pause":
            return replace(self, state="paused"), settled
        if action == "stop":
            return replace(self, state="stopped", ever_stopped=True), settled
        if action == "resume":
            return replace(self, interrupted=False), True
        if action == "run-now":
            return replace(self, pending="starting", pending_request=request_id), False
        if action == "check":
            # Its observer is a durable wake written with it: nothing is left unknown.
            return self, True
        if action == "configure":
            payload = control.payload
            assert payload is not None
            notes = payload.get("notes", self.notes)
            policy = payload.get("policy")
            time = self.policy_time if policy is None else policy["time"]
            if notes == self.notes and time == self.policy_time:
                return self, True
            return replace(
                self,
                notes=notes,
                policy_time=time,
                config_generation=self.config_generation + 1,
                temporal_generation=self.temporal_generation + (time != self.policy_time),
            ), True
        assert action == "delete"
        complete = self.pending is None
        phase = "tombstone" if complete else "deleting"
        return replace(self, state="stopped", ever_stopped=True, phase=phase), complete

    def _evict(self) -> Model | None:
        """Room for one more record: the oldest completed ones go; ``None`` when none can."""
        excess = len(self.records) - MAX_RECORDS + 1
        if excess <= 0:
            return self
        done = sorted((r.recorded, rid) for rid, r in self.records.items() if r.complete)[:excess]
        if len(done) < excess:
            return None
        gone = {rid for _, rid in done}
        return replace(
            self,
            records={rid: r for rid, r in self.records.items() if rid not in gone},
            evicted=self.evicted | gone,
            evicted_revision=max(self.evicted_revision, *(rev for rev, _ in done)),
        )

    # --- what the test does in place of the scheduler ------------------------------------------

    def settle(self) -> Model:
        """The pending passage is admitted and archived; its Run now, Pause and Stop records
        complete (seed 002: archiving resolves them)."""
        assert self.pending is not None
        records = {
            rid: r if r.complete or r.control.action == "delete" else replace(r, complete=True)
            for rid, r in self.records.items()
        }
        return replace(
            self,
            revision=self.revision + 1,
            pending=None,
            pending_request=None,
            admitted=self.admitted + 1,
            settled=self.settled + 1,
            records=records,
        )

    def uncertain(self) -> Model:
        return replace(self, revision=self.revision + 1, pending="uncertain")

    def interrupt(self) -> Model:
        return replace(self, revision=self.revision + 1, interrupted=True)

    # --- reads ------------------------------------------------------------------------------

    def status(self, request_id: str, expected: int | None, action: str | None) -> Status:
        """Seed 002's exact status read: applied while the record is kept; rejected only when
        storage proves the request never applied and never can; otherwise unknown."""
        kept = self.records.get(request_id)
        if kept is not None and kept.refused is not None:
            return Status("rejected", kept.refused)
        if kept is not None:
            return Status("applied", record=kept)
        if expected is None or self.phase == "tombstone":
            return Status("unknown")
        if expected < self.revision:
            # The revision after ``expected`` is not evicted, so its record would be here.
            if expected + 1 > self.evicted_revision:
                return Status("rejected", "revision-conflict")
            return Status("unknown")
        if expected == self.revision and action is not None and not self.allows(action):
            return Status("rejected", "control-conflict")
        return Status("unknown")
