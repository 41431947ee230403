"""Passage beats: which node admitted each passage, and what was last reported of it.

Issue 23 §3: "any scheduler can observe any passage". A node records each start it
admits (``passage_beats``); the node's own loop and the passage's shim (over HTTP) publish
what they observe of it; a scheduler on another node reads that record instead of
``/proc`` and applies :func:`remote_observation`, which never guesses a passage finished.

States of a row (``state``), per session::

    (none)   --ask (a scheduler elsewhere)------> asked
    (none)   --record_admitted (its node)-------> admitted
    asked    --record_admitted / answer_asked---> admitted   (the node holds the admission)
    asked    --answer_asked (not present)--------> absent    (it never will start here)
    absent   --record_admitted (ANOTHER node)----> admitted  (taken over by that node)
    absent   --record_admitted (the same node)---> refused   (the start must not happen)

Every function works on the caller's connection, inside the caller's transaction, and
takes ``now`` from the caller: none reads the clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

from sqlalchemy import Row, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.clock import require_aware
from kalends.errors import InvalidInput, NotFound
from kalends.missions.runtime.base import Observation, Report
from kalends.missions.runtime.beats import PASSAGE_BEAT
from kalends.missions.runtime.reports import OUTCOMES
from kalends.storage.node_tables import BEAT_SOURCES, passage_beats, worker_nodes
from kalends.storage.unit_of_work import for_update

__all__ = [
    "NODE_LOST",
    "OBSERVATION_VERSION",
    "SILENT_AFTER",
    "BeatRow",
    "BeatState",
    "answer_asked",
    "ask",
    "observation_from_json",
    "observation_to_json",
    "publish",
    "read_beat",
    "record_admitted",
    "remote_observation",
    "request_interrupt",
    "unsettled_of",
]

SILENT_AFTER = timedelta(seconds=3 * PASSAGE_BEAT)
"""Issue 23 §3: after three missed beats (45 s) a node's or a passage's reports are stale
and the passage is not observed (kalends decision: three, so that one lost beat or a
slow database round never makes a passage uncertain). :mod:`kalends.missions.nodes`
exports it beside the node heartbeat."""
NODE_LOST = "node-lost"
"""The ``error`` of a passage whose node a person declared gone (``kalends node forget``)."""
OBSERVATION_VERSION = 1


class BeatState(StrEnum):
    """Where a passage stands with its node; the values are the stored strings."""

    ASKED = "asked"
    ADMITTED = "admitted"
    ABSENT = "absent"


@dataclass(frozen=True, slots=True)
class BeatRow:
    """One row of ``passage_beats`` with its node's heartbeat and ends beside it."""

    session_id: str
    passage_id: str
    message_id: str
    schedule_id: UUID
    node_id: str
    state: BeatState
    observation: Observation | None
    source: str | None
    beat_at: datetime
    interrupt_at: datetime | None
    node_beat_at: datetime | None
    node_stopped_at: datetime | None
    node_forgotten_at: datetime | None


# --- the observation as stored JSON ---------------------------------------------------


def _instant(value: datetime | None) -> str | None:
    return None if value is None else require_aware(value, "instant").isoformat()


def observation_to_json(obs: Observation) -> dict[str, Any]:
    """``obs`` as the JSON object stored in ``passage_beats.observation`` (the keys the
    shim reports, plus ``finalMessage`` and ``version``)."""
    report = obs.report
    return {
        "version": OBSERVATION_VERSION,
        "launched": obs.launched,
        "running": obs.running,
        "exited": obs.exited,
        "exitStatus": obs.exit_status,
        "signal": obs.signal,
        "descendants": obs.descendants,
        "interrupted": obs.interrupted,
        "error": obs.error,
        "startedAt": _instant(obs.started_at),
        "endedAt": _instant(obs.ended_at),
        "logTail": obs.log_tail,
        "report": None
        if report is None
        else {"outcome": report.outcome, "summary": report.summary, "at": _instant(report.at)},
        "finalMessage": obs.final_message,
    }


def _bad(name: str, what: str, value: object) -> InvalidInput:
    return InvalidInput(
        f"observation.{name} must be {what}, got {value!r:.80}", field=f"observation.{name}"
    )


def _flag(d: Mapping[str, Any], name: str, *, default: bool | None = None) -> bool:
    value = d.get(name, default)
    if not isinstance(value, bool):
        raise _bad(name, "true or false", value)
    return value


def _text(d: Mapping[str, Any], name: str) -> str | None:
    value = d.get(name)
    if value is not None and not isinstance(value, str):
        raise _bad(name, "text or null", value)
    return value


def _number(d: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = d.get(name)
    if value is None:
        return None
    # (a JSON true is a Python int too)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(name, f"a whole number from {low} to {high} or null", value)
    return value


def _at(d: Mapping[str, Any], name: str, where: str = "") -> datetime | None:
    value = d.get(name)
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise _bad(where + name, "an ISO 8601 instant with its offset, or null", value)
    return require_aware(parsed, name)


def _report(value: object) -> Report | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _bad("report", "an object {outcome, summary, at} or null", value)
    outcome, summary = value.get("outcome"), value.get("summary")
    if outcome not in OUTCOMES:
        raise _bad("report.outcome", "completed or failed", outcome)
    if not isinstance(summary, str):
        raise _bad("report.summary", "text", summary)
    at = _at(value, "at", "report.")
    if at is None:
        raise _bad("report.at", "an ISO 8601 instant with its offset", None)
    return Report(outcome=outcome, summary=summary, at=at)


def observation_from_json(d: Mapping[str, Any]) -> Observation:
    """The observation ``d`` holds (stored by :func:`observation_to_json`, or reported by
    a shim, which leaves out ``version`` and ``finalMessage``): every field typed, or
    :class:`~kalends.errors.InvalidInput` naming the first that is not."""
    if not isinstance(d, Mapping):
        raise InvalidInput("observation must be a JSON object", field="observation")
    if d.get("version", OBSERVATION_VERSION) != OBSERVATION_VERSION:
        raise _bad("version", str(OBSERVATION_VERSION), d.get("version"))
    log_tail = _text(d, "logTail")
    return Observation(
        launched=_flag(d, "launched"),
        running=_flag(d, "running"),
        exited=_flag(d, "exited"),
        exit_status=_number(d, "exitStatus", 0, 255),
        signal=_number(d, "signal", 1, 255),
        descendants=_flag(d, "descendants", default=False),
        interrupted=_flag(d, "interrupted", default=False),
        report=_report(d.get("report")),
        started_at=_at(d, "startedAt"),
        ended_at=_at(d, "endedAt"),
        log_tail="" if log_tail is None else log_tail,
        error=_text(d, "error"),
        final_message=_text(d, "finalMessage"),
    )


def _stored(obs: Observation) -> str:
    return json.dumps(observation_to_json(obs), ensure_ascii=False, sort_keys=True)


def _loaded(text: str | None) -> Observation | None:
    return None if text is None else observation_from_json(json.loads(text))


# --- reading --------------------------------------------------------------------------

_JOINED = select(
    passage_beats,
    worker_nodes.c.beat_at.label("node_beat_at"),
    worker_nodes.c.stopped_at.label("node_stopped_at"),
    worker_nodes.c.forgotten_at.label("node_forgotten_at"),
).select_from(passage_beats.outerjoin(worker_nodes))


def _row(row: Row[Any]) -> BeatRow:
    return BeatRow(
        session_id=row.session_id,
        passage_id=row.passage_id,
        message_id=row.message_id,
        schedule_id=row.schedule_id,
        node_id=row.node_id,
        state=BeatState(row.state),
        observation=_loaded(row.observation),
        source=row.source,
        beat_at=row.beat_at,
        interrupt_at=row.interrupt_at,
        node_beat_at=row.node_beat_at,
        node_stopped_at=row.node_stopped_at,
        node_forgotten_at=row.node_forgotten_at,
    )


def read_beat(conn: Connection, session_id: str) -> BeatRow | None:
    """The row of ``session_id`` with its node's heartbeat, or ``None`` when no node
    admitted it nor was asked about it."""
    found = conn.execute(_JOINED.where(passage_beats.c.session_id == session_id)).one_or_none()
    return None if found is None else _row(found)


def unsettled_of(conn: Connection, node_id: str) -> list[BeatRow]:
    """The passages ``node_id`` admitted whose recorded observation is missing or not
    settled: those its loop still has to observe and publish, in session order."""
    found = conn.execute(
        _JOINED.where(
            passage_beats.c.node_id == node_id, passage_beats.c.state == BeatState.ADMITTED
        ).order_by(passage_beats.c.session_id)
    ).all()
    rows = [_row(r) for r in found]
    return [r for r in rows if r.observation is None or not r.observation.settled]


# --- writing --------------------------------------------------------------------------


def _insert_new(conn: Connection, values: dict[str, Any]) -> bool:
    """Inserts the row unless its session has one; whether this call inserted it.
    :class:`~kalends.errors.NotFound` when its node was never registered."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = (
        dialect.insert(passage_beats)
        .values(**values)
        .on_conflict_do_nothing(index_elements=["session_id"])
    )
    try:
        return conn.execute(statement).rowcount == 1
    except IntegrityError as exc:
        # (the only constraint left to break once the session's conflict is ignored)
        raise NotFound(f"no worker node {values['node_id']!r}") from exc


def _new_row(
    *,
    session_id: str,
    passage_id: str,
    message_id: str,
    schedule_id: UUID,
    node_id: str,
    state: BeatState,
    now: datetime,
) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "passage_id": passage_id,
        "message_id": message_id,
        "schedule_id": schedule_id,
        "node_id": node_id,
        "state": state.value,
        "beat_at": now,
        "created_at": now,
    }


def record_admitted(
    conn: Connection,
    *,
    session_id: str,
    passage_id: str,
    message_id: str,
    schedule_id: UUID,
    node_id: str,
    now: datetime,
) -> bool:
    """Records that ``node_id`` admits this start; whether it may start it.

    True for a new row, for this node's own row asked about or already admitted, and for
    another node's row answered ``absent`` (taken over: the row becomes this node's, its
    old observation and interrupt request dropped). False, changing nothing, for this
    node's own ``absent`` row (it promised never to start it) and for another node's row
    asked about or admitted (that node may hold the admission).
    """
    now = require_aware(now, "now")
    values = _new_row(
        session_id=session_id,
        passage_id=passage_id,
        message_id=message_id,
        schedule_id=schedule_id,
        node_id=node_id,
        state=BeatState.ADMITTED,
        now=now,
    )
    if _insert_new(conn, values):
        return True
    beats = passage_beats.c
    own = conn.execute(
        update(passage_beats)
        .where(
            beats.session_id == session_id,
            beats.node_id == node_id,
            beats.state.in_([BeatState.ASKED.value, BeatState.ADMITTED.value]),
        )
        .values(state=BeatState.ADMITTED.value, beat_at=now)
    )
    if own.rowcount == 1:
        return True
    taken = conn.execute(
        update(passage_beats)
        .where(
            beats.session_id == session_id,
            beats.node_id != node_id,
            beats.state == BeatState.ABSENT.value,
        )
        .values(
            node_id=node_id,
            passage_id=passage_id,
            message_id=message_id,
            schedule_id=schedule_id,
            state=BeatState.ADMITTED.value,
            observation=None,
            source=None,
            beat_at=now,
            interrupt_at=None,
        )
    )
    return taken.rowcount == 1


def ask(
    conn: Connection,
    *,
    session_id: str,
    passage_id: str,
    message_id: str,
    schedule_id: UUID,
    node_id: str,
    now: datetime,
) -> BeatRow:
    """Asks ``node_id`` whether it admitted this start (state ``asked``) unless the
    session has a row already; the row as now stored, whichever it is."""
    now = require_aware(now, "now")
    values = _new_row(
        session_id=session_id,
        passage_id=passage_id,
        message_id=message_id,
        schedule_id=schedule_id,
        node_id=node_id,
        state=BeatState.ASKED,
        now=now,
    )
    _insert_new(conn, values)
    row = read_beat(conn, session_id)
    assert row is not None  # (inserted above, or there before; rows are never deleted)
    return row


def answer_asked(
    conn: Connection, node_id: str, present: Callable[[str, str], bool], now: datetime
) -> int:
    """Answers every question asked of ``node_id``: ``admitted`` where
    ``present(session_id, message_id)`` (its local directory holds that admission), else
    ``absent``, after which the node refuses that start. Call it under the lock the
    node's starts take, so that no start is admitted between the look and the answer.
    Returns how many rows were answered."""
    now = require_aware(now, "now")
    beats = passage_beats.c
    asked = conn.execute(
        for_update(
            select(beats.session_id, beats.message_id)
            .where(beats.node_id == node_id, beats.state == BeatState.ASKED.value)
            .order_by(beats.session_id)
        )
    ).all()
    answered = 0
    for session_id, message_id in asked:
        state = BeatState.ADMITTED if present(session_id, message_id) else BeatState.ABSENT
        done = conn.execute(
            update(passage_beats)
            .where(
                beats.session_id == session_id,
                beats.node_id == node_id,
                beats.state == BeatState.ASKED.value,
            )
            .values(state=state.value, beat_at=now)
        )
        answered += done.rowcount
    return answered


def publish(
    conn: Connection,
    *,
    session_id: str,
    node_id: str,
    observation: Observation,
    source: str,
    now: datetime,
) -> bool:
    """Records ``observation`` of ``session_id`` as reported by ``source`` (``node`` or
    ``shim``) at ``now``; whether the session's row belongs to ``node_id`` (False, nothing
    written, otherwise). A settled observation is final: a later unsettled one (a report
    read before the exit, arriving after it) refreshes the row's beat but not its
    observation."""
    if source not in BEAT_SOURCES:
        raise InvalidInput(f"source must be node or shim, got {source!r}", field="source")
    now = require_aware(now, "now")
    beats = passage_beats.c
    stored = conn.execute(
        for_update(
            select(beats.observation).where(
                beats.session_id == session_id, beats.node_id == node_id
            )
        )
    ).one_or_none()
    if stored is None:
        return False
    recorded = _loaded(stored.observation)
    values: dict[str, Any] = {"beat_at": now}
    if recorded is None or not recorded.settled or observation.settled:
        values.update(observation=_stored(observation), source=source)
    conn.execute(
        update(passage_beats)
        .where(beats.session_id == session_id, beats.node_id == node_id)
        .values(**values)
    )
    return True


def request_interrupt(conn: Connection, session_id: str, now: datetime) -> None:
    """Asks the node of ``session_id`` to interrupt it; the first request's time is kept.
    :class:`~kalends.errors.NotFound` when the session has no row."""
    now = require_aware(now, "now")
    beats = passage_beats.c
    conn.execute(
        update(passage_beats)
        .where(beats.session_id == session_id, beats.interrupt_at.is_(None))
        .values(interrupt_at=now)
    )
    exists = conn.execute(select(beats.session_id).where(beats.session_id == session_id)).first()
    if exists is None:
        raise NotFound(f"no node admitted passage session {session_id!r}")


# --- the rule -------------------------------------------------------------------------


def remote_observation(row: BeatRow, now: datetime) -> Observation | None:
    """What a scheduler on another node may take as the passage's state, or ``None``: not
    observed (the caller marks it uncertain, ``not-observed``), never guessed finished.

    A settled observation is final, however old. A node a person declared gone
    (forgotten) leaves its unsettled passages ended with error ``node-lost``. Otherwise
    the record counts while anything about it is fresh (within :data:`SILENT_AFTER`):
    the row's own beat (the shim reports over HTTP even while its node is dead) or its
    node's heartbeat; a fresh row not observed yet reads as not launched.
    """
    now = require_aware(now, "now")
    recorded = row.observation
    if recorded is not None and recorded.settled:
        return recorded
    if row.node_forgotten_at is not None:
        return Observation(launched=True, running=False, exited=True, error=NODE_LOST)
    beats = [row.beat_at] + ([row.node_beat_at] if row.node_beat_at is not None else [])
    if any(now - at <= SILENT_AFTER for at in beats):
        return recorded or Observation(launched=False, running=False, exited=False)
    return None
