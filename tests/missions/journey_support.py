"""Helpers of the acceptance journeys (seed 002 "Daily document acceptance journeys"):
passage commands written into the workspace, what they leave behind, the passage
records of a process runtime, and real ``kalends worker`` processes.

The passage command ``passage.py TAG MODE`` reads its input file, appends one JSON line
per event to ``journal.jsonl`` in its working directory (``started`` with the whole input
document, ``term`` when it traps TERM, ``reported``), and then by ``MODE``:

- ``report``: reports ``completed`` at once (summary ``TAG: <objective>``) and exits 0;
- ``gate``: waits for the file ``TAG.go`` (at most a minute), then reports and exits 0;
- ``trap``: ignores TERM (noting it) and sleeps until killed;
- ``silent``: exits 0 without a report.

``sleeper.sh`` notes its passage ID in ``sleeper.started`` and sleeps two minutes; it
ignores nothing, so TERM ends it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kalends.missions.runtime import shim as records

T = TypeVar("T")

# Generous: a loaded two-core machine may take seconds to start a Python process.
DEADLINE = 45.0

PASSAGE_SCRIPT = textwrap.dedent(
    """\
    import json, os, signal, subprocess, sys, time
    from pathlib import Path

    tag, mode = sys.argv[1], sys.argv[2]
    doc = json.loads(Path(os.environ["KALENDS_INPUT_FILE"]).read_text())
    here = Path.cwd()


    def note(event, **extra):
        line = {"tag": tag, "event": event, "passageId": doc["passageId"],
                "sessionId": doc["sessionId"], "pid": os.getpid(), **extra}
        with open(here / "journal.jsonl", "a") as f:
            f.write(json.dumps(line) + "\\n")


    names = ("API_TOKEN", "KALENDS_PASSAGE_ID")
    note("started", input=doc, env={k: os.environ.get(k) for k in names})
    if mode == "trap":
        signal.signal(signal.SIGTERM, lambda signum, frame: note("term"))
        while True:
            time.sleep(0.2)
    if mode == "silent":
        sys.exit(0)
    if mode == "gate":
        end = time.monotonic() + 60
        while not (here / (tag + ".go")).exists():
            if time.monotonic() > end:
                note("gate-timeout")
                sys.exit(3)
            time.sleep(0.05)
    subprocess.run(
        [sys.executable, "-m", "kalends", "report", "completed",
         "--summary", tag + ": " + doc["objective"]],
        check=True,
    )
    note("reported")
    """
)

SLEEPER_SCRIPT = textwrap.dedent(
    """\
    #!/bin/sh
    test -r "$KALENDS_INPUT_FILE" || exit 9
    printf '%s\\n' "$KALENDS_PASSAGE_ID" >> sleeper.started
    sleep 120
    """
)


def install_commands(workspace: Path) -> None:
    """Writes ``passage.py`` and ``sleeper.sh`` into the workspace."""
    (workspace / "passage.py").write_text(PASSAGE_SCRIPT)
    (workspace / "sleeper.sh").write_text(SLEEPER_SCRIPT)


def passage_command(tag: str, mode: str = "report") -> list[str]:
    """The profile command running ``passage.py`` with this interpreter."""
    return [sys.executable, "passage.py", tag, mode]


def open_gate(workspace: Path, tag: str) -> None:
    (workspace / f"{tag}.go").touch()


def wait_until(probe: Callable[[], T | None], *, timeout: float = DEADLINE, what: str = "") -> T:
    """Polls ``probe`` until it returns something truthy; fails the test at the deadline."""
    end = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {timeout} s waiting for {what or probe}")
        time.sleep(0.05)


def journal(workspace: Path) -> list[dict[str, Any]]:
    """The events passage commands noted in the workspace, in order."""
    path = workspace / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events(workspace: Path, event: str, tag: str | None = None) -> list[dict[str, Any]]:
    return [
        e for e in journal(workspace) if e["event"] == event and (tag is None or e["tag"] == tag)
    ]


def sessions(root: Path) -> list[str]:
    """The passage directories (admitted starts) under a process runtime's root."""
    passages = root / "passages"
    if not passages.is_dir():
        return []
    return sorted(p.name for p in passages.iterdir() if not p.name.startswith("."))


def record(root: Path, session: str, name: str) -> dict[str, Any]:
    """One record of a passage directory (``start.json``, ``exit.json``, ...)."""
    found = records.read_json(root / "passages" / session / name)
    assert found is not None, f"{session} has no {name}"
    return found


def kill_families(root: Path) -> None:
    """Ends every process a passage under ``root`` left behind (shims included)."""
    for session in sessions(root):
        directory = root / "passages" / session
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


# --------------------------------------------------------------------------- workers


@dataclass
class Workers:
    """Real ``kalends worker`` processes on one database and runtime directory; whatever
    a test leaves running is killed at its end."""

    url: str
    runtime_dir: Path
    logs: Path
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, owner: str) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
        env["KALENDS_DATABASE_URL"] = self.url
        # Journeys test scheduling, not confinement (tests/runtime/test_isolation.py
        # does): as root, passages run as the worker's own user.
        env["KALENDS_PASSAGE_USER"] = "root"
        with (
            open(self.logs / f"{owner}.out", "wb") as out,
            open(self.logs / f"{owner}.err", "wb") as err,
        ):
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kalends",
                    "worker",
                    "--runtime-dir",
                    str(self.runtime_dir),
                    "--transport",
                    "null",
                    "--owner",
                    owner,
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
            )
        self.started.append(process)
        return process

    def log(self, owner: str) -> str:
        return (self.logs / f"{owner}.err").read_text(errors="replace")

    def alive(self, process: subprocess.Popen[bytes], owner: str) -> None:
        """Fails the test when the worker has exited."""
        if process.poll() is not None:
            pytest.fail(f"worker {owner} exited ({process.returncode}):\n{self.log(owner)}")

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL: the worker dies at once, releasing nothing."""
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=DEADLINE)

    def stop(self, process: subprocess.Popen[bytes]) -> int:
        """SIGTERM: a graceful stop; its exit code."""
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail("the worker did not stop within 30 s of SIGTERM")

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait()


@contextlib.contextmanager
def cleanup(root: Path) -> Iterator[None]:
    try:
        yield
    finally:
        kill_families(root)
