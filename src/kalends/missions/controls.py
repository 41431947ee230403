"""The controls of a schedule document: which are allowed when, and what each does.

Pure functions over a document's state (no storage, no clock): the service
calls :func:`refusal` before any write and :func:`apply` to compute the new
document, and reads use the same :func:`refusal` for ``availableActions``.

The transition table (desired state and pending passage → allowed controls):

============  =====================================================================
control       allowed when
============  =====================================================================
play          paused (first Play freezes the relative origins)
pause         running (Interrupted included)
stop          paused or running; stopped is terminal
resume        running and Interrupted (a paused schedule is started with Play)
run-now       paused or running, no pending passage, quota left
check         paused or stopped, with a pending passage
configure     paused or running, and not while the passage's outcome is uncertain;
              with a passage pending only objective and notes may change
delete        any state, once
============  =====================================================================

Every control is refused on a document being deleted, except a repeated request.
While a reserved passage's start is unconfirmed (pending, not admitted, uncertain),
only Resume, Pause, Stop and Check are allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from kalends.missions.config import Config
from kalends.missions.document import (
    Body,
    PassageStatus,
    Phase,
    State,
    manual_identity,
    quota_exhausted,
)
from kalends.missions.passages import reserved

__all__ = ["ACTIONS", "Action", "Applied", "DocState", "apply", "edit_refusal", "refusal"]


class Action(StrEnum):
    PLAY = "play"
    PAUSE = "pause"
    STOP = "stop"
    RESUME = "resume"
    RUN_NOW = "run-now"
    CHECK = "check"
    CONFIGURE = "configure"
    DELETE = "delete"


ACTIONS = tuple(Action)
# Seed 002 "Daily document controls": while a reserved but unadmitted passage's start
# stays unknown, the snapshot offers only these.
_WHILE_START_UNKNOWN = frozenset({Action.RESUME, Action.PAUSE, Action.STOP, Action.CHECK})


@dataclass(frozen=True, slots=True)
class DocState:
    """What the rules read of a document."""

    schedule_id: str
    phase: Phase
    state: State
    config: Config
    body: Body


@dataclass(frozen=True, slots=True)
class Applied:
    """The document after a control, and whether the control is complete.

    A control is incomplete while it waits on the runtime: a Pause or Stop with a
    pending passage to interrupt, a Run now until its passage is admitted or
    archived, a Delete until it is reconciled.
    """

    state: State
    config: Config
    body: Body
    complete: bool
    phase: Phase


def refusal(action: Action, doc: DocState) -> str | None:
    """Why ``action`` cannot apply to ``doc`` now, or ``None`` when it can."""
    if doc.phase is not Phase.LIVE:
        return "the schedule is deleted"
    state, body = doc.state, doc.body
    pending = body.pending
    if (
        pending is not None
        and not pending.admitted
        and pending.status is PassageStatus.UNCERTAIN
        and action not in _WHILE_START_UNKNOWN
    ):
        return (
            f"the start of passage {pending.passage_id} is uncertain; until it is "
            "reconciled only Resume, Pause, Stop and Check are offered"
        )
    match action:
        case Action.PLAY:
            if state is State.STOPPED:
                return "the schedule is stopped; Stop is final"
            if state is State.RUNNING:
                if body.interruption is not None:
                    return "the schedule is Interrupted; Resume reconciles it"
                return "the schedule is already running"
        case Action.PAUSE:
            if state is State.STOPPED:
                return "the schedule is stopped; Stop is final"
            if state is State.PAUSED:
                return "the schedule is already paused"
        case Action.STOP:
            if state is State.STOPPED:
                return "the schedule is already stopped"
        case Action.RESUME:
            if state is State.STOPPED:
                return "the schedule is stopped; Stop is final"
            if state is State.PAUSED:
                return "the schedule is paused; Play starts it"
            if body.interruption is None:
                return "the schedule is running, not Interrupted; there is nothing to resume"
        case Action.RUN_NOW:
            if state is State.STOPPED:
                return "the schedule is stopped; Stop is final"
            if pending is not None:
                return f"passage {pending.passage_id} is still pending; passages never overlap"
            if quota_exhausted(doc.config, body):
                return "the schedule's passage quota is used up"
        case Action.CHECK:
            if pending is None:
                return "no passage is pending; there is nothing to check"
            if state is State.RUNNING:
                return (
                    "a running schedule's scheduler observes its passage; "
                    "Check is for paused or stopped schedules"
                )
        case Action.CONFIGURE:
            if state is State.STOPPED:
                return "the schedule is stopped; a stopped schedule cannot be edited"
            if pending is not None and pending.status is PassageStatus.UNCERTAIN:
                return (
                    "the pending passage's outcome is uncertain; "
                    "the schedule is read-only until it is reconciled"
                )
        case Action.DELETE:
            pass
    return None


def edit_refusal(doc: DocState, new: Config) -> str | None:
    """Why the configuration cannot become ``new`` now (seed 002, the shared editor table)."""
    old, body = doc.config, doc.body
    if body.pending is not None and new.with_instructions(old.objective, old.notes) != old:
        return "a passage is pending: only the objective and notes can change until it settles"
    if new.template != old.template and body.task_created:
        return "the checklist template is locked: a task was already created from it"
    return None


def apply(
    action: Action,
    doc: DocState,
    now: datetime,
    *,
    request_id: str,
    config: Config | None = None,
) -> Applied:
    """The document after ``action``; call only when :func:`refusal` allowed it."""
    state, body, cfg = doc.state, doc.body, doc.config
    complete = True
    phase = Phase.LIVE
    match action:
        case Action.PLAY:
            if body.first_play_at is None:
                body = replace(body, first_play_at=now, last_play_at=now)
                if not cfg.one_shot:
                    body = replace(body, high_water=_later(body.high_water, now))
            else:
                # Seed 002: an explicitly paused recurring calendar resumes at a future
                # slot; a paused one-shot may still arrive once, late.
                body = replace(body, last_play_at=now)
                if not cfg.one_shot:
                    body = replace(body, high_water=_later(body.high_water, now))
            state = State.RUNNING
        case Action.PAUSE:
            state = State.PAUSED
            complete = _nothing_to_interrupt(body)
            body = replace(body, last_pause_at=now)
        case Action.STOP:
            state = State.STOPPED
            complete = _nothing_to_interrupt(body)
            body = replace(body, last_pause_at=now)
        case Action.RESUME:
            body = replace(body, interruption=None, interrupted_at=None)
        case Action.RUN_NOW:
            # (``body`` and ``cfg`` are still the document's own here)
            identity = manual_identity(doc.schedule_id, request_id)
            body = reserved(doc, identity, now, trigger="manual", request_id=request_id)
            complete = False
        case Action.CHECK:
            # The observer it restarts is a durable wake written in this same
            # transaction, so nothing is left unknown: complete at once.
            pass
        case Action.CONFIGURE:
            assert config is not None
            if config != cfg:
                generation = body.temporal_generation + (
                    1 if config.timing_key() != cfg.timing_key() else 0
                )
                body = replace(
                    body,
                    config_generation=body.config_generation + 1,
                    temporal_generation=generation,
                )
            cfg = config
        case Action.DELETE:
            state = State.STOPPED
            phase = Phase.DELETING
            body = replace(body, deleted_at=now)
            complete = body.pending is None
    if body.interruption is not None and (action is Action.PLAY or state is not State.RUNNING):
        # Interrupted means desired running without a live scheduler: a Pause, Stop or
        # Delete ends the desire, and a later Play arms the scheduler afresh, so the
        # reason never outlives it (nor reappears on the next Play).
        body = replace(body, interruption=None, interrupted_at=None)
    return Applied(state=state, config=cfg, body=body, complete=complete, phase=phase)


def _nothing_to_interrupt(body: Body) -> bool:
    """Whether a Pause or Stop completes at once: no passage, or one reserved and not yet
    dispatched (seed 002: a reserved passage without an admission has no actor to
    interrupt, and its dispatch is refused once paused or stopped)."""
    pending = body.pending
    return pending is None or (not pending.admitted and pending.status is PassageStatus.STARTING)


def _later(a: datetime | None, b: datetime) -> datetime:
    return b if a is None or b > a else a
