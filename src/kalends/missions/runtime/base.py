"""The runtime contract the scheduler relies on (SPEC §4, seed 002 "Daily runtime
guarantees and shared settlement primitives")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from kalends.errors import KalendsError

__all__ = ["Observation", "PassageStart", "Presence", "Report", "Runtime", "RuntimeUnavailable"]


class RuntimeUnavailable(KalendsError):
    """The runtime could not answer or act now (a transient cause); nothing is assumed."""

    code = "runtime-unavailable"


class Presence(StrEnum):
    """What ``lookup`` proves about an admitted start."""

    PRESENT = "present"  # the start with exactly this session and message was admitted
    ABSENT = "absent"  # provably never admitted
    UNKNOWN = "unknown"  # cannot tell (a partial or foreign record): never resend on this


@dataclass(frozen=True, slots=True, kw_only=True)
class PassageStart:
    """Everything a start needs, frozen at reservation.

    ``workspace``: the workspace directory (absolute). ``command``/``env``/``cwd``: the
    frozen runner profile (``cwd`` relative to the workspace); the command's placeholders
    (``{prompt}``, ``{input_file}``, ...) are the runtime's to substitute. ``input``: the
    passage's input document (objective, notes, checklist template, identities, slot,
    trigger), written to the input file as JSON.
    """

    passage_id: str
    session_id: str
    message_id: str
    schedule_id: str
    workspace: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = "."
    input: dict[str, Any] = field(default_factory=dict)
    agent: str | None = None
    """The agent preset the profile names: how the final message is read at the end
    (:mod:`kalends.missions.agents`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """A passage's own final report (``kalends report``); the last one wins."""

    outcome: str  # "completed" | "failed"
    summary: str
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """What ``observe`` saw of a session.

    ``launched``: the command was started (its pid recorded). ``running``: the main
    process still lives. ``exited``: its end was recorded, with ``exit_status`` (0..255)
    or ``signal``. ``descendants``: some process of its session still lives (settlement
    waits for none). ``interrupted``: kalends asked it to stop. ``report``: the final
    report, if any. ``log_tail``: the end of its output, for display. ``error``: why it
    ended without a recorded status or signal (``lost``: the shim itself died), if so.
    ``final_message``: what an agent preset's command printed last, read when it exited 0
    without a report (:func:`kalends.missions.agents.final_message`), if any.
    """

    launched: bool
    running: bool
    exited: bool
    exit_status: int | None = None
    signal: int | None = None
    descendants: bool = False
    interrupted: bool = False
    report: Report | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    log_tail: str = ""
    error: str | None = None
    final_message: str | None = None

    @property
    def settled(self) -> bool:
        """The whole family is gone: the passage can be archived."""
        return self.exited and not self.running and not self.descendants


class Runtime(Protocol):
    """Starts and observes passages. Every method may raise :class:`RuntimeUnavailable`;
    ``observe`` and ``interrupt`` raise :class:`~kalends.errors.NotFound` for a session
    never admitted, ``start`` :class:`~kalends.errors.InvalidInput` for a start that can
    never be built (an empty command, a directory outside the workspace)."""

    def start(self, start: PassageStart) -> Presence:
        """Admit and launch the start; idempotent by session: a second call with the same
        session and message returns PRESENT without launching again (first admission
        wins); a session admitted with another message returns UNKNOWN."""
        ...

    def lookup(self, session_id: str, message_id: str) -> Presence:
        """Whether exactly this start was admitted."""
        ...

    def observe(self, session_id: str) -> Observation:
        """The session's state now."""
        ...

    def interrupt(self, session_id: str) -> None:
        """Signal the whole family to stop (TERM, then KILL after a grace period); records
        that kalends interrupted it. Returns without waiting for the grace period."""
        ...
