"""A worker node: the process runtime of one scheduler process, known to the database.

Issue 23 §3: "each worker node has an identity and a heartbeat; a passage whose node
stopped heartbeating is ``uncertain (not-observed)`` — never guessed finished — until
its node returns and reconciles, or a person acts". A node is a process running a
scheduler with a :class:`~kalends.missions.runtime.process.ProcessRuntime`
(``kalends worker``, ``kalends serve``); its identity lives in its runtime root
(:func:`~kalends.missions.nodes.node_identity`), so a node restarted on the same
directory returns as itself.

:class:`NodeRuntime` records in ``passage_beats`` that this node admits a start before
it admits it locally, so a scheduler on another node can ask who holds a passage.
:class:`NodeLoop` is the node's own loop: every :data:`~kalends.missions.nodes.NODE_BEAT`
it beats, answers the questions other nodes asked about starts it may hold, publishes
what it observes locally of its unsettled passages, and interrupts those another node
asked it to. Its first round runs at once: a returning node reconciles first.

The local runtime stays the fast path of the node's own scheduler (``/proc``); a
passage of another node is observed through the database by
:class:`~kalends.missions.looks.Look`, never through a runtime.
"""

from __future__ import annotations

import logging
import socket
import threading
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, KalendsError, NotFound
from kalends.missions import passage_beats as beats
from kalends.missions.nodes import NODE_BEAT, beat_node, node_identity, register_node, stop_node
from kalends.missions.runtime.base import Observation, PassageStart, Presence, RuntimeUnavailable
from kalends.missions.runtime.beats import BeatTarget
from kalends.missions.runtime.process import ProcessRuntime, check_beat_target
from kalends.storage.node_tables import NODE_NAME_LENGTH
from kalends.storage.unit_of_work import Store

__all__ = ["NOT_STARTED", "NodeLoop", "NodeRound", "NodeRuntime", "open_node"]

log = logging.getLogger("kalends.missions.nodes")

NOT_STARTED = "not-started"
"""The error a node publishes for a passage it recorded as admitted but whose local
admission never happened (it died, or its disk refused, between the two): the passage
never started and never will on this node (kalends' own decision, issue 23 §3)."""


class NodeRuntime:
    """The runtime of a worker node: its local process runtime, with each admission
    recorded in ``passage_beats`` first (issue 23 §3).

    ``start`` refuses (:class:`RuntimeUnavailable`) a start this node answered
    ``absent`` to another node, or that another node holds: the answer is a promise
    never to start it here. ``lookup``, ``observe`` and ``interrupt`` are the local
    runtime's. ``lock`` is shared with the :class:`NodeLoop`, so an answer to another
    node never interleaves with a start.
    """

    def __init__(self, local: ProcessRuntime, store: Store, node_id: str) -> None:
        if not node_id:
            raise InvalidInput("a node runtime needs its node's ID", field="node_id")
        self.local = local
        self.store = store
        self.node_id = node_id
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NodeRuntime({self.node_id!r}, {self.local!r})"

    def start(self, start: PassageStart) -> Presence:
        """Record that this node admits the start, then admit and launch it locally
        (idempotent by session, as the local runtime's ``start``)."""
        try:
            schedule_id = UUID(start.schedule_id)
        except ValueError as exc:
            raise InvalidInput(
                f"schedule ID {start.schedule_id!r} of session {start.session_id} is not a UUID",
                field="schedule_id",
            ) from exc
        with self.lock:
            now = self.store.clock.now()

            def record(conn: Connection) -> bool:
                return beats.record_admitted(
                    conn, session_id=start.session_id, passage_id=start.passage_id,
                    message_id=start.message_id, schedule_id=schedule_id,
                    node_id=self.node_id, now=now,
                )  # fmt: skip

            if not self.store.run(record):
                raise RuntimeUnavailable(
                    f"session {start.session_id} was answered absent on node {self.node_id} or "
                    "is held by another node: it will not start here"
                )
            return self.local.start(start)

    def lookup(self, session_id: str, message_id: str) -> Presence:
        return self.local.lookup(session_id, message_id)

    def observe(self, session_id: str) -> Observation:
        return self.local.observe(session_id)

    def interrupt(self, session_id: str) -> None:
        self.local.interrupt(session_id)


def open_node(
    store: Store, local: ProcessRuntime, *, name: str | None = None, api_url: str | None = None
) -> NodeRuntime:
    """``local`` as a worker node: its identity read or created in its root, the node
    registered (again: a returning node keeps its ID and beat key), and, with
    ``api_url`` (the service's base URL), its shims told to beat there."""
    now = store.clock.now()
    try:
        identity = node_identity(local.root, now)
    except OSError as exc:
        raise RuntimeUnavailable(
            f"cannot read or create the node identity in {local.root}: {exc.strerror}"
        ) from exc
    host = (name or socket.gethostname() or "node")[:NODE_NAME_LENGTH]
    key = store.run(
        lambda conn: register_node(conn, identity, name=host, runtime_dir=str(local.root), now=now)
    )
    if api_url is not None:
        target = BeatTarget(url=api_url, node_id=identity.node_id, key=key)
        check_beat_target(target)
        local.beats = target
    return NodeRuntime(local, store, identity.node_id)


@dataclass(slots=True)
class NodeRound:
    """What one round of a node's loop did (for logs and tests)."""

    answered: int = 0
    published: int = 0
    interrupted: int = 0


class NodeLoop:
    """The loop of a worker node (see the module docstring); ``every``: its period."""

    def __init__(self, runtime: NodeRuntime, *, every: timedelta = NODE_BEAT) -> None:
        if every <= timedelta(0):
            raise InvalidInput(f"a node beats at a positive period, got {every}", field="every")
        self.runtime = runtime
        self.store = runtime.store
        self.node_id = runtime.node_id
        self.every = every
        self._interrupted: set[str] = set()

    def round(self) -> NodeRound:
        """Beat, answer what other nodes asked, publish this node's unsettled passages as
        observed here, and interrupt those another node asked to."""
        done = NodeRound()
        local = self.runtime.local
        now = self.store.clock.now()
        self.store.run(lambda conn: beat_node(conn, self.node_id, now))

        def present(session_id: str, message_id: str) -> bool:
            return local.lookup(session_id, message_id) is Presence.PRESENT

        with self.runtime.lock:
            done.answered = self.store.run(
                lambda conn: beats.answer_asked(conn, self.node_id, present, now)
            )
        rows = self.store.run(lambda conn: beats.unsettled_of(conn, self.node_id), write=False)
        seen: list[tuple[str, Observation]] = []
        for row in rows:
            obs = self._observe(row.session_id, row.message_id)
            if obs is None:
                continue
            wanted = row.interrupt_at is not None and not obs.settled and not obs.interrupted
            if wanted and self._interrupt(row.session_id):
                done.interrupted += 1
                obs = self._observe(row.session_id, row.message_id) or obs
            seen.append((row.session_id, obs))
        if seen:
            at = self.store.clock.now()

            def publish(conn: Connection) -> int:
                return sum(
                    beats.publish(
                        conn,
                        session_id=session,
                        node_id=self.node_id,
                        observation=obs,
                        source="node",
                        now=at,
                    )
                    for session, obs in seen
                )

            done.published = self.store.run(publish)
        return done

    def run(self, stop: threading.Event) -> None:
        """Rounds every ``every`` until ``stop`` (the first at once); a failed round is
        logged and the next one comes on time. On stop the node is recorded stopped
        (:meth:`close`)."""
        try:
            while not stop.is_set():
                try:
                    self.round()
                except Exception as exc:
                    code = exc.code if isinstance(exc, KalendsError) else "internal-error"
                    log.warning("node %s: round failed (%s): %s", self.node_id, code, exc)
                stop.wait(self.every.total_seconds())
        finally:
            self.close()

    def close(self) -> None:
        """Records the node stopped (a graceful stop: its passages go on, observed by
        their shims' beats, or ``not-observed`` until it returns); a failure is logged."""
        try:
            now = self.store.clock.now()
            self.store.run(lambda conn: stop_node(conn, self.node_id, now))
        except KalendsError as exc:
            log.warning("node %s: could not record its stop: %s", self.node_id, exc)

    def start(self, stop: threading.Event) -> threading.Thread:
        """:meth:`run` in a daemon thread of its own."""
        thread = threading.Thread(target=self.run, args=(stop,), name="kalends-node", daemon=True)
        thread.start()
        return thread

    # --- one passage -------------------------------------------------------------------

    def _observe(self, session_id: str, message_id: str) -> Observation | None:
        """The passage as this node sees it; a start recorded here whose local admission
        is absent never started (:data:`NOT_STARTED`); ``None`` when the runtime cannot
        tell now (published again next round)."""
        local = self.runtime.local
        try:
            return local.observe(session_id)
        except NotFound:
            pass
        except KalendsError as exc:
            log.warning("node %s: cannot observe %s: %s", self.node_id, session_id, exc)
            return None
        # Under the lock: a start in progress holds it between its record and its
        # local admission, so absent here is absent for good.
        with self.runtime.lock:
            try:
                presence = local.lookup(session_id, message_id)
            except KalendsError:
                return None
            if presence is Presence.PRESENT:
                return None
        return Observation(launched=False, running=False, exited=True, error=NOT_STARTED)

    def _interrupt(self, session_id: str) -> bool:
        if session_id in self._interrupted:
            return False
        try:
            self.runtime.local.interrupt(session_id)
        except KalendsError as exc:
            log.warning("node %s: cannot interrupt %s: %s", self.node_id, session_id, exc)
            return False
        self._interrupted.add(session_id)
        return True
