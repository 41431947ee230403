"""Observing a passage of the process runtime: liveness from ``/proc``, then its records.

The runtime root must be on the machine that runs the passages.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kalends.missions.agents import (
    FINAL_OUTPUT_BYTES,
    FinalMessage,
    final_message,
    final_message_of,
)
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.base import Observation
from kalends.missions.runtime.exchange import take_spooled
from kalends.missions.runtime.layout import parse_at
from kalends.missions.runtime.reports import read_report

__all__ = ["LOG_TAIL_BYTES", "log_tail", "observe_passage"]

LOG_TAIL_BYTES = 4096


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def observe_passage(directory: Path, *, root: Path, secret: bytes) -> Observation:
    """The state of the passage of ``directory`` now, a spooled report taken first; the
    final message of an agent preset's command that exited 0 without a report."""
    # Liveness first, records after: the shim writes exit.json before it exits, so a
    # shim seen dead has written every record it ever will.
    lock = records.read_json(directory / records.LAUNCH_LOCK)
    shim = records.read_json(directory / records.SHIM)
    family = records.family_of(lock, shim)
    members = family.members() if family is not None else []
    command_alive = shim is not None and records.is_alive(shim, "commandPid", "commandStartTicks")
    owner_alive = lock is not None and records.is_alive(lock)
    ended = records.read_json(directory / records.EXIT)
    if ended is not None and shim is None:
        # A launched command's shim record is written before its end: both appeared
        # between the two reads (a command that ends at once). Read it again, so that an
        # ended passage never reads as never launched.
        shim = records.read_json(directory / records.SHIM)
    with _taking(directory):
        take_spooled(directory, root, secret)
        report_doc = records.read_json(directory / records.REPORT)
    interrupted = (directory / records.INTERRUPT).exists()
    final = None
    if ended is not None and ended.get("status") == 0 and report_doc is None and not interrupted:
        final = _final_message(directory)
    tail = log_tail(directory / records.OUTPUT)
    lost = ended is None and lock is not None and not owner_alive
    if lost:
        tail += "\n[kalends] the shim ended without recording the command's end"
    return Observation(
        launched=shim is not None,
        running=ended is None and command_alive,
        exited=ended is not None or lost,
        exit_status=_int_or_none(ended.get("status")) if ended else None,
        signal=_int_or_none(ended.get("signal")) if ended else None,
        descendants=bool(members),
        interrupted=interrupted,
        report=read_report(report_doc),
        started_at=parse_at(shim.get("startedAt")) if shim else None,
        ended_at=parse_at(ended.get("endedAt")) if ended else None,
        log_tail=tail,
        error="lost" if lost else None,
        final_message=final,
    )


@contextmanager
def _taking(directory: Path) -> Iterator[None]:
    """Hold the passage directory's lock while a spooled report is taken and
    ``report.json`` read: two observers (a node's scheduler and its loop, or another
    process) never see the spool already taken and the report not yet written."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


def _final_message(directory: Path) -> str | None:
    """What the agent preset named in ``start.json`` printed last, if it names one."""
    start = records.read_json(directory / records.START) or {}
    reader = final_message_of(start.get("agent"))
    if reader is FinalMessage.NONE:
        return None  # (a command of no agent, or one read by its report alone: no read)
    output = _tail(directory / records.OUTPUT, FINAL_OUTPUT_BYTES)
    return final_message(reader, output, MAX_SUMMARY_BYTES)


def log_tail(path: Path) -> str:
    """The last :data:`LOG_TAIL_BYTES` of the log, as text."""
    return _tail(path, LOG_TAIL_BYTES).decode("utf-8", errors="replace")


def _tail(path: Path, size: int) -> bytes:
    """The last ``size`` bytes of the file at ``path`` (none when it is missing)."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(0, end - size))
            return f.read()
    except FileNotFoundError:
        return b""
