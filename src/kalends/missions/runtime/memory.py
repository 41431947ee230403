"""An in-process runtime with the process runtime's contract, for unit tests and benchmarks.

Nothing runs: a start is recorded and launched at once; the test (or the benchmark) then
says how the passage ends with :meth:`MemoryRuntime.finish` and :meth:`MemoryRuntime.report`,
or builds the runtime with ``instant=True`` so every passage exits 0 with a completed
report the moment it starts. Every method is safe to call from many threads.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from kalends.clock import Clock, SystemClock
from kalends.errors import InvalidInput, NotFound
from kalends.missions.runtime.base import (
    Observation,
    PassageStart,
    Presence,
    Report,
    RuntimeUnavailable,
)
from kalends.missions.runtime.process import OUTCOMES, PassageSettled
from kalends.missions.stored_text import check_summary

__all__ = ["MemoryRuntime"]


@dataclass(slots=True, kw_only=True)
class _Passage:
    start: PassageStart
    launches: int = 0
    running: bool = False
    exited: bool = False
    exit_status: int | None = None
    signal: int | None = None
    descendants: bool = False
    interrupted: bool = False
    report: Report | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    unknown: bool = False
    log: list[str] = field(default_factory=list)

    @property
    def settled(self) -> bool:
        return self.exited and not self.descendants


class MemoryRuntime:
    """A :class:`~kalends.missions.runtime.base.Runtime` kept in a dictionary.

    ``instant``: each launch exits at once with ``instant_status`` and, if
    ``instant_outcome`` is set, that report. ``interrupt_ends``: an interrupt ends the
    family at once (the command by SIGTERM), as a well-behaved command would.
    ``on_event(session_id)`` is called (outside the lock) when a passage exits, reports
    or loses its last descendant: the runtime's terminal events.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        instant: bool = False,
        instant_status: int = 0,
        instant_outcome: str | None = "completed",
        interrupt_ends: bool = True,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        if instant_outcome is not None and instant_outcome not in OUTCOMES:
            raise InvalidInput(
                f"instant_outcome must be one of {OUTCOMES}", field="instant_outcome"
            )
        self.clock: Clock = clock or SystemClock()
        self.instant = instant
        self.instant_status = instant_status
        self.instant_outcome = instant_outcome
        self.interrupt_ends = interrupt_ends
        self.on_event = on_event
        self._lock = threading.Lock()
        self._passages: dict[str, _Passage] = {}
        self._unavailable = False

    def __repr__(self) -> str:
        return f"MemoryRuntime({len(self._passages)} passages)"

    # --- the protocol --------------------------------------------------------------

    def start(self, start: PassageStart) -> Presence:
        with self._lock:
            self._available()
            presence = self._admit(start)
            passage = self._passages[start.session_id]
            if presence is not Presence.PRESENT or passage.launches:
                return presence
            now = self.clock.now()
            passage.launches = 1
            passage.started_at = now
            passage.log.append(f"launched {' '.join(start.command)}")
            if not self.instant:
                passage.running = True
                return presence
            if self.instant_outcome is not None:
                passage.report = Report(outcome=self.instant_outcome, summary="", at=now)
            self._end(passage, status=self.instant_status, signal_number=None, now=now)
        self._event(start.session_id)
        return presence

    def lookup(self, session_id: str, message_id: str) -> Presence:
        with self._lock:
            self._available()
            passage = self._passages.get(session_id)
            if passage is None:
                return Presence.ABSENT
            if passage.unknown or passage.start.message_id != message_id:
                return Presence.UNKNOWN
            return Presence.PRESENT

    def observe(self, session_id: str) -> Observation:
        with self._lock:
            self._available()
            p = self._get(session_id)
            return Observation(
                launched=p.launches > 0,
                running=p.running,
                exited=p.exited,
                exit_status=p.exit_status,
                signal=p.signal,
                descendants=p.descendants,
                interrupted=p.interrupted,
                report=p.report,
                started_at=p.started_at,
                ended_at=p.ended_at,
                log_tail="\n".join(p.log[-20:]),
            )

    def interrupt(self, session_id: str) -> None:
        with self._lock:
            self._available()
            p = self._get(session_id)
            p.interrupted = True
            if not self.interrupt_ends:
                return
            now = self.clock.now()
            if p.launches == 0:
                p.launches = -1  # claimed by the interrupt: never launched
                self._end(p, status=None, signal_number=None, now=now)
            elif p.running:
                self._end(p, status=None, signal_number=int(signal.SIGTERM), now=now)
            p.descendants = False
        self._event(session_id)

    # --- driving it ----------------------------------------------------------------

    def admit(self, start: PassageStart) -> Presence:
        """Admit without launching, as a crash between admission and launch leaves it."""
        with self._lock:
            self._available()
            return self._admit(start)

    def finish(
        self,
        session_id: str,
        *,
        status: int | None = 0,
        signal_number: int | None = None,
        descendants: bool = False,
    ) -> None:
        """The main process ends with ``status`` or ``signal_number``; ``descendants``:
        whether some process of its session lives on."""
        with self._lock:
            p = self._get(session_id)
            if not p.running:
                raise InvalidInput(f"session {session_id} is not running", field="session_id")
            self._end(p, status=status, signal_number=signal_number, now=self.clock.now())
            p.descendants = descendants
        self._event(session_id)

    def end_descendants(self, session_id: str) -> None:
        """The last process of the session's family ends."""
        with self._lock:
            self._get(session_id).descendants = False
        self._event(session_id)

    def report(self, session_id: str, outcome: str, summary: str) -> Report:
        """The passage reports (what ``kalends report`` does); the last report wins until
        the passage settles."""
        if outcome not in OUTCOMES:
            raise InvalidInput(f"outcome must be completed or failed, got {outcome!r}")
        check_summary(summary)
        with self._lock:
            p = self._get(session_id)
            if p.settled:
                raise PassageSettled(f"passage {p.start.passage_id} has settled")
            p.report = Report(outcome=outcome, summary=summary, at=self.clock.now())
        self._event(session_id)
        return p.report

    def make_unknown(self, session_id: str) -> None:
        """Lookups of this session answer UNKNOWN, as a partial or foreign record would."""
        with self._lock:
            self._get(session_id).unknown = True

    def set_unavailable(self, unavailable: bool) -> None:
        """While set, every protocol call raises :class:`RuntimeUnavailable`."""
        with self._lock:
            self._unavailable = unavailable

    def launches(self, session_id: str) -> int:
        """How many times the session's command was launched (0 or 1)."""
        with self._lock:
            p = self._passages.get(session_id)
            return max(p.launches, 0) if p else 0

    def started(self, session_id: str) -> PassageStart:
        """What the session's passage was started with (its input included)."""
        with self._lock:
            return self._get(session_id).start

    def sessions(self) -> list[str]:
        with self._lock:
            return list(self._passages)

    # --- inside --------------------------------------------------------------------

    def _available(self) -> None:
        if self._unavailable:
            raise RuntimeUnavailable("the memory runtime is set unavailable")

    def _admit(self, start: PassageStart) -> Presence:
        passage = self._passages.get(start.session_id)
        if passage is None:
            self._passages[start.session_id] = _Passage(start=start)
            return Presence.PRESENT
        if passage.unknown or passage.start.message_id != start.message_id:
            return Presence.UNKNOWN
        return Presence.PRESENT

    def _get(self, session_id: str) -> _Passage:
        passage = self._passages.get(session_id)
        if passage is None:
            raise NotFound(f"no passage was admitted for session {session_id!r}")
        return passage

    @staticmethod
    def _end(p: _Passage, *, status: int | None, signal_number: int | None, now: datetime) -> None:
        p.running = False
        p.exited = True
        p.exit_status = status
        p.signal = signal_number
        p.ended_at = now
        p.log.append(
            f"ended: status {status}" if signal_number is None else f"signal {signal_number}"
        )

    def _event(self, session_id: str) -> None:
        if self.on_event is not None:
            self.on_event(session_id)
