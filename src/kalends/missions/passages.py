"""A passage's way through the scheduler, as pure rules: its identities, the body that
reserves it and the one that admits it, what its command is started with, whether it may
still start or must be interrupted, the outcome it settles with, and its log lines.

Seed 002 "Daily write-ahead passage start and recovery". Nothing here reads a clock or
the database: every rule that needs the time takes ``now``.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid5

from kalends.missions.document import Body, PassageStatus, Pending, Phase, Result, State
from kalends.missions.runtime.base import Observation, PassageStart

if TYPE_CHECKING:
    # (only a type here: the controls reserve a Run now's passage through this module)
    from kalends.missions.controls import DocState

__all__ = [
    "admission",
    "checklist_id_of",
    "dispatch_allowed",
    "interrupt_wanted",
    "log_passage",
    "ran_seconds",
    "reservation",
    "reserved",
    "result_of",
    "scheduled_identity",
    "settle_outcome",
    "settle_summary",
    "start_of",
]

# The scheduler's log lines keep the logger they always had.
log = logging.getLogger("kalends.missions.scheduler")


_CHECKLISTS = UUID("6f1c2b3a-8d4e-5f60-9a7b-0c1d2e3f4a5b")
"""The namespace of passage checklist IDs (a UUIDv5 of the passage ID)."""


def checklist_id_of(passage_id: str) -> UUID:
    """The ID of the passage's checklist: derived from the passage, so every retry of its
    reservation names the same one."""
    return uuid5(_CHECKLISTS, passage_id)


def scheduled_identity(schedule_id: str, slot: datetime) -> tuple[str, str, str]:
    """The passage, session and message IDs of a scheduled slot (deterministic)."""
    key = f"{schedule_id}\x00scheduled\x00{slot.isoformat()}"

    def derive(role: str) -> str:
        return hashlib.sha256(f"{key}\x00{role}".encode()).hexdigest()[:26]

    return f"psg_{derive('passage')}", f"ses_{derive('session')}", f"msg_{derive('message')}"


def reserved(
    doc: DocState,
    identity: tuple[str, str, str],
    now: datetime,
    *,
    trigger: str,
    slot: datetime | None = None,
    request_id: str | None = None,
    node: str | None = None,
    high_water: datetime | None = None,
) -> Body:
    """``doc``'s body with a passage reserved at ``now``, before any effect: its pending
    record under ``identity`` (its passage, session and message IDs), starting with the
    profile and generations of the document as it is. A Run now counts as a check where
    the policy has a condition (seed 002 ``checks``: explicit Run now reservations count;
    policies without a condition contribute zero). Both triggers reserve through
    here: ``scheduled`` (:func:`reservation`) and ``manual`` (Run now, with its
    ``request_id``). ``node``: the worker node whose scheduler reserves it (issue 23 §3),
    if any; ``high_water``: the high-water mark it advances to, if any."""
    body = doc.body
    passage, session, message = identity
    # Seed 002 / SPEC §4: a schedule with a template gets a task checklist per passage,
    # written with the reservation; from then on the template is locked (task_created).
    checklist = None if doc.config.template is None else str(checklist_id_of(passage))
    pending = Pending(
        passage_id=passage,
        session_id=session,
        message_id=message,
        trigger=trigger,
        slot=slot,
        request_id=request_id,
        status=PassageStatus.STARTING,
        admitted=False,
        reserved_at=now,
        profile=doc.config.profile.to_json(),
        config_generation=body.config_generation,
        temporal_generation=body.temporal_generation,
        checklist_id=checklist,
        node=node,
    )
    # A scheduled slot of a conditioned schedule counts its read where the gate commits it
    # (kalends.missions.gate); a Run now counts here.
    counted = trigger == "manual" and doc.config.condition is not None
    return replace(
        body,
        pending=pending,
        task_created=body.task_created or checklist is not None,
        checks_count=body.checks_count + (1 if counted else 0),
        # (a document without tracking begins here)
        checks_since=now if counted and body.checks_since is None else body.checks_since,
        high_water=body.high_water if high_water is None else high_water,
    )


def reservation(doc: DocState, slot: datetime, now: datetime, *, node: str | None = None) -> Body:
    """The body with the pending record of ``slot``: deterministic identities, before
    any effect; the high-water mark advances with it (seed 002: technical high-water
    advances at durable reservation), so the older missed slots are never launched.
    ``node``: the worker node whose scheduler reserves it, if any."""
    identity = scheduled_identity(doc.schedule_id, slot)
    return reserved(doc, identity, now, trigger="scheduled", slot=slot, node=node, high_water=slot)


def admission(body: Body, now: datetime, *, node: str | None = None) -> Body:
    """``body`` with its pending passage admitted at ``now`` (its start was seen) and
    counted; the admission is recorded once and never made again. ``node``: the worker
    node that admitted it (issue 23 §3), which observes it from then on; ``None`` keeps
    the node the pending record names."""
    pending = body.pending
    assert pending is not None
    admitted = replace(
        pending,
        admitted=True,
        admitted_at=now,
        status=PassageStatus.RUNNING,
        node=pending.node if node is None else node,
    )
    return replace(body, pending=admitted, admitted=body.admitted + 1)


def start_of(
    doc: DocState,
    pending: Pending,
    workspace: str,
    *,
    checklist: list[dict[str, Any]] | None = None,
    answers: list[dict[str, Any]] | None = None,
    watched: list[dict[str, Any]] | None = None,
) -> PassageStart:
    """What the runtime starts the pending passage with, in ``workspace``; ``checklist``:
    its checklist's items as the input lists them (ref and revision for
    ``kalends task done REF --expect REV``); ``answers``: the answers to the previous
    passage's questions (:func:`~kalends.missions.question_holds.told_answers_many`);
    ``watched``: the watched conversations' new messages it was handed at its
    reservation (:func:`~kalends.missions.watching.handed_many`)."""
    profile = pending.profile
    config = doc.config
    return PassageStart(
        passage_id=pending.passage_id,
        session_id=pending.session_id,
        message_id=pending.message_id,
        schedule_id=doc.schedule_id,
        workspace=workspace,
        command=tuple(profile.get("command", ())),
        env=tuple(sorted((profile.get("env") or {}).items())),
        cwd=profile.get("cwd", "."),
        agent=profile.get("agent"),
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
            "proof": pending.proof,
            "checklistId": pending.checklist_id,
            "checklist": checklist,
            "answers": answers,
            "watched": watched,
        },
    )


def dispatch_allowed(doc: DocState, pending: Pending) -> bool:
    """Whether the pending passage may still start: the document is live, not stopped or
    interrupted, and not paused since the passage was reserved (a Run now starts while
    paused, unless paused again after it)."""
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


def interrupt_wanted(doc: DocState, pending: Pending) -> bool:
    """Whether the running passage's family is to be interrupted: the schedule was
    deleted, or paused or stopped after the passage was reserved."""
    if doc.phase is not Phase.LIVE:
        return True
    last = doc.body.last_pause_at
    return doc.state is not State.RUNNING and last is not None and last >= pending.reserved_at


def settle_outcome(obs: Observation) -> tuple[str, str | None]:
    """The outcome of a settled family (SPEC §4): a completed report stands; a failed
    report, a non-zero exit or a signal fail; a clean end with an agent's final message
    (:mod:`kalends.missions.agents`) is ``completed``; a clean end without either is
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
    if obs.final_message:
        return "completed", None
    return "ended-without-report", None


def settle_summary(obs: Observation) -> str:
    """The summary a settled family archives: its report's, else the final message that
    completed it (:func:`settle_outcome`), else none."""
    if obs.report is not None:
        return obs.report.summary
    if settle_outcome(obs)[0] == "completed" and obs.final_message:
        return obs.final_message
    return ""


def result_of(
    pending: Pending,
    outcome: str,
    reason: str | None,
    summary: str | None,
    now: datetime,
    *,
    checklist: tuple[int, int] | None = None,
) -> Result:
    """The archived record of the pending passage, settled at ``now``; ``checklist``: its
    checklist's ``(open, done)`` item counts."""
    return Result(
        passage_id=pending.passage_id,
        trigger=pending.trigger,
        slot=pending.slot,
        outcome=outcome,
        reason=reason,
        summary=summary or "",  # archive() cuts it to its byte bound
        admitted_at=pending.admitted_at,
        settled_at=now,
        checklist=None
        if checklist is None or pending.checklist_id is None
        else {"id": pending.checklist_id, "open": checklist[0], "done": checklist[1]},
    )


def ran_seconds(obs: Observation | None, pending: Pending, now: datetime) -> float | None:
    """How long the passage ran: from its command's start to its end when the runtime saw
    both, else from its admission to ``now``; ``None`` for one never admitted."""
    if obs is not None and obs.started_at is not None and obs.ended_at is not None:
        return max((obs.ended_at - obs.started_at).total_seconds(), 0.0)
    if pending.admitted_at is None:
        return None
    return max((now - pending.admitted_at).total_seconds(), 0.0)


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
