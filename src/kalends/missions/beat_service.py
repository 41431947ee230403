"""A passage's shim reporting over HTTP: one beat checked and recorded (issue 23 §3).

The shim of a passage started by a node reports the passage's start, a heartbeat every
:data:`~kalends.missions.runtime.beats.PASSAGE_BEAT` seconds and its end to the service
(``POST /api/passages/beats``), so that a scheduler on any machine observes the passage
through the database, even once the node that started it is gone. A beat names its node
and session and carries the shim's token: the HMAC of the session under the node's beat
key (:func:`~kalends.missions.runtime.beats.beat_token`), so a token speaks for one
session of one node, and no person's credential is involved.

:meth:`PassageBeats.record` checks and records one beat in one transaction, in this
order, and writes nothing on a refusal:

1. the node is known and not forgotten, and the token is its token for the session —
   else :class:`BeatTokenRefused` (401 ``invalid-beat-token``; an unknown node, a
   forgotten one and a wrong token are told apart to nobody);
2. the session's beat row is this node's and in state ``admitted`` — else
   :class:`PassageNotAdmitted` (404);
3. an exit with status 0, no report and no interruption of a passage run by an agent
   preset gets its final message, read from the output the shim sent
   (:func:`~kalends.missions.agents.final_message`), as a local observation does;
4. the observation is published with source ``shim``
   (:func:`~kalends.missions.passage_beats.publish`: a settled observation already
   recorded stays, as an end is final; a later beat only refreshes the row's beat).

The reply says whether a scheduler asked for the passage to be interrupted
(:func:`~kalends.missions.passage_beats.request_interrupt`) and the grace period between
TERM and KILL the shim then gives its family.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, NotFound, Unauthenticated
from kalends.missions import nodes, passage_beats
from kalends.missions.agents import final_message, final_message_of
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime.base import Observation
from kalends.missions.runtime.beats import check_beat_token
from kalends.missions.stored_text import stored_size
from kalends.storage.unit_of_work import Store

__all__ = [
    "DEFAULT_INTERRUPT_GRACE",
    "MAX_AGENT_CHARS",
    "MAX_BEAT_BODY_BYTES",
    "MAX_NODE_ID_CHARS",
    "MAX_SESSION_ID_CHARS",
    "MAX_TOKEN_CHARS",
    "SHIM_SOURCE",
    "Beat",
    "BeatEvent",
    "BeatReply",
    "BeatTokenRefused",
    "PassageBeats",
    "PassageNotAdmitted",
]

MAX_BEAT_BODY_BYTES = 512 * 1024
"""The largest beat a shim may send (issue 23 §3, kalends' decision): an exit carries at
most 256 KiB of output for the final message and 4 KiB of log tail, with room for JSON
escapes."""
MAX_NODE_ID_CHARS = 32
"""A node ID: 16 random bytes as hex (``node.json``)."""
MAX_SESSION_ID_CHARS = 200
"""A session ID as the scheduler derives them, with room (``passage_beats.session_id``)."""
MAX_TOKEN_CHARS = 256
"""A token is 64 hex digits; a longer text up to this bound is a wrong token (401) rather
than a malformed beat."""
MAX_AGENT_CHARS = 64
"""An agent preset's name, with room."""
DEFAULT_INTERRUPT_GRACE = 10.0
"""Seconds between TERM and KILL when the serving process runs no passages of its own to
take the figure from (the process runtime's own default)."""
SHIM_SOURCE = "shim"
"""``passage_beats.source`` of an observation reported by the passage's shim."""


class BeatEvent(StrEnum):
    """What the shim reports: the command started, it still runs (or its session's other
    processes do), or the whole family ended."""

    START = "start"
    BEAT = "beat"
    EXIT = "exit"


class BeatTokenRefused(Unauthenticated):
    """The beat's node is unknown or forgotten, or its token is not that node's token for
    the session; nothing was recorded."""

    code = "invalid-beat-token"


class PassageNotAdmitted(NotFound):
    """No passage of this session is admitted on this node; nothing was recorded."""

    code = "passage-not-admitted"


@dataclass(frozen=True, slots=True, kw_only=True)
class Beat:
    """One report of a shim, as the edge parsed it. ``agent``: the agent preset the
    passage's profile names (its start record's), if any; ``final_output``: the end of
    the passage's output, sent with an exit of status 0 without a report."""

    node_id: str
    session_id: str
    token: str
    event: BeatEvent
    observation: Observation
    agent: str | None = None
    final_output: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BeatReply:
    """What the shim is told: whether to interrupt its passage, and the grace period."""

    interrupt: bool
    grace: float

    def to_json(self) -> dict[str, object]:
        return {"interrupt": self.interrupt, "grace": self.grace}


@dataclass(frozen=True, slots=True)
class PassageBeats:
    """Records shims' beats in the store; each call is one transaction. ``grace``: the
    seconds between TERM and KILL a shim is told to give an interrupted family."""

    store: Store
    grace: float = DEFAULT_INTERRUPT_GRACE

    def record(self, beat: Beat) -> BeatReply:
        """Check ``beat`` and record its observation (see the module's steps); raises
        :class:`BeatTokenRefused`, :class:`PassageNotAdmitted` or
        :class:`~kalends.errors.InvalidInput` with nothing written."""
        check_beat(beat)
        observation = with_final_message(beat)
        return self.store.run(lambda conn: self._record(conn, beat, observation))

    def _record(self, conn: Connection, beat: Beat, observation: Observation) -> BeatReply:
        now = self.store.clock.now()
        key = nodes.beat_key(conn, beat.node_id)
        if key is None or not check_beat_token(key, beat.session_id, beat.token):
            raise BeatTokenRefused
        row = passage_beats.read_beat(conn, beat.session_id)
        if (
            row is None
            or row.node_id != beat.node_id
            or row.state is not passage_beats.BeatState.ADMITTED
        ):
            raise PassageNotAdmitted(
                f"no passage of session {beat.session_id!r} is admitted on node {beat.node_id}"
            )
        published = passage_beats.publish(
            conn,
            session_id=beat.session_id,
            node_id=beat.node_id,
            observation=observation,
            source=SHIM_SOURCE,
            now=now,
        )
        if not published:  # taken over by another node since it was read
            raise PassageNotAdmitted(
                f"no passage of session {beat.session_id!r} is admitted on node {beat.node_id}"
            )
        return BeatReply(interrupt=row.interrupt_at is not None, grace=self.grace)


def check_beat(beat: Beat) -> None:
    """The checks a beat's parts must pass together (each part is typed by the edge), and
    that each text is storable (a JSON body may carry a lone surrogate)."""
    obs = beat.observation
    texts = {
        "node": beat.node_id,
        "session": beat.session_id,
        "token": beat.token,
        "agent": beat.agent,
        "finalOutput": beat.final_output,
        "observation.error": obs.error,
        "observation.logTail": obs.log_tail,
        "observation.report.summary": obs.report.summary if obs.report else None,
    }
    for field, text in texts.items():
        if text is not None and not _encodable(text):
            raise InvalidInput(
                f"{field}: text must be valid Unicode (no lone surrogates)", field=field
            )
    if obs.report is not None and stored_size(obs.report.summary) > MAX_SUMMARY_BYTES:
        raise InvalidInput(
            f"observation.report.summary: over the bound of {MAX_SUMMARY_BYTES} bytes as stored",
            field="observation.report.summary",
        )
    if beat.event is BeatEvent.EXIT and not obs.exited:
        raise InvalidInput("an exit's observation must have exited", field="observation.exited")
    if beat.event is not BeatEvent.EXIT and beat.final_output is not None:
        raise InvalidInput("only an exit carries finalOutput", field="finalOutput")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def with_final_message(beat: Beat) -> Observation:
    """The beat's observation, with the final message of an agent preset's command that
    exited 0 without a report and was not interrupted (as a local observation reads it)."""
    obs = beat.observation
    if (
        beat.event is not BeatEvent.EXIT
        or obs.exit_status != 0
        or obs.report is not None
        or obs.interrupted
        or beat.final_output is None
    ):
        return replace(obs, final_message=None)
    reader = final_message_of(beat.agent)
    found = final_message(reader, beat.final_output.encode("utf-8"), MAX_SUMMARY_BYTES)
    return replace(obs, final_message=found)
