"""Helpers of the runtime suite: passages in a temporary root, and polling with deadlines
(never a fixed sleep for correctness) for what real processes do."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kalends.missions.runtime import Observation, PassageStart
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.process import ProcessRuntime

T = TypeVar("T")

# Generous: a loaded two-core machine may take seconds to start a Python process.
DEADLINE = 60.0
GRACE = 0.5


def wait_until(probe: Callable[[], T | None], *, timeout: float = DEADLINE, what: str = "") -> T:
    """Polls ``probe`` until it returns something truthy; fails the test at the deadline."""
    end = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {timeout} s waiting for {what or probe}")
        time.sleep(0.02)


def python(code: str) -> tuple[str, ...]:
    """A command running ``code`` with this test's interpreter."""
    return (sys.executable, "-c", textwrap.dedent(code))


@dataclass
class Lab:
    runtime: ProcessRuntime
    workspace: Path
    tmp: Path

    def passage(
        self,
        *command: str,
        session: str = "ses_1",
        message: str = "msg_1",
        passage: str = "psg_1",
        cwd: str = ".",
        env: tuple[tuple[str, str], ...] = (),
        input: dict[str, Any] | None = None,
    ) -> PassageStart:
        return PassageStart(
            passage_id=passage,
            session_id=session,
            message_id=message,
            schedule_id="sch_1",
            workspace=str(self.workspace),
            command=command,
            env=env,
            cwd=cwd,
            input=input or {},
        )

    def observe_until(
        self, session: str, done: Callable[[Observation], bool], what: str = ""
    ) -> Observation:
        def probe() -> Observation | None:
            seen = self.runtime.observe(session)
            return seen if done(seen) else None

        return wait_until(probe, what=what or f"session {session}")

    def settled(self, session: str = "ses_1") -> Observation:
        return self.observe_until(session, lambda o: o.settled, f"{session} to settle")

    def log_has(self, session: str, *texts: str) -> Observation:
        return self.observe_until(
            session, lambda o: all(t in o.log_tail for t in texts), f"{texts} in the log"
        )

    def dir(self, session: str = "ses_1") -> Path:
        return self.runtime.passage_dir(session)


def kill_families(root: Path) -> None:
    """Ends every process a passage under ``root`` left behind (shims included)."""
    passages = root / "passages"
    if not passages.is_dir():
        return
    for directory in passages.iterdir():
        with contextlib.suppress(records.CorruptRecord, OSError):
            family = records.family_of(
                records.read_json(directory / records.LAUNCH_LOCK),
                records.read_json(directory / records.SHIM),
            )
            if family is None:
                continue
            for proc in records.session_members(family.sid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
