"""Interrupting a passage of the process runtime: TERM now to every process group of its
session, and a detached reaper that sends KILL to what remains after the grace period.

Interrupting before the launch claims it, so nothing is ever launched. Interrupting
again sends TERM again; the KILL deadline stays the first interrupt's.
"""

from __future__ import annotations

import os
import signal
from datetime import datetime
from pathlib import Path

from kalends.missions.runtime import shim as records
from kalends.missions.runtime.launch import spawn_shim
from kalends.missions.runtime.layout import parse_at

__all__ = ["interrupt_passage"]


def interrupt_passage(directory: Path, *, now: datetime, grace: float, python: str) -> None:
    """Record the interrupt of the passage of ``directory`` at ``now`` and stop its family
    (see the module docstring); ``python`` runs the reaper."""
    records.create_json_exclusive(
        directory / records.INTERRUPT,
        {"version": 1, "at": now.isoformat(), "grace": grace},
    )
    noted = records.read_json(directory / records.INTERRUPT) or {}
    if records.create_json_exclusive(
        directory / records.LAUNCH_LOCK,
        {
            "version": 1,
            "by": "interrupt",
            **records.identity(os.getpid()),
            "at": now.isoformat(),
        },
    ):
        records.record_exit(
            directory, status=None, signal_number=None, error="interrupted before launch"
        )
        return
    lock = records.read_json(directory / records.LAUNCH_LOCK)
    shim = records.read_json(directory / records.SHIM)
    family = records.family_of(lock, shim)
    if family is None:
        return  # claimed by an interrupt (nothing ran), or a family of an earlier boot
    signalled = family.signal(signal.SIGTERM)
    if (directory / records.EXIT).exists() and not family.members():
        return
    first_at = parse_at(noted.get("at")) or now
    noted_grace = float(noted.get("grace", grace))
    remaining = max(0.0, noted_grace - (now - first_at).total_seconds())
    groups = ",".join(str(g) for g in sorted(signalled))
    spawn_shim(python, ["reap", str(directory), f"{remaining:.3f}", groups], directory)
