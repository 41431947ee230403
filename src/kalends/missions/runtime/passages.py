"""Reading the process runtime's passage directories: the records the shim and the
runtime wrote, found by passage or session ID, and the end of a passage's output.

Read only: nothing here creates a directory or a secret. The CLI (`kalends passage`,
`kalends schedule show`) and the HTTP API read passages through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kalends.errors import InvalidInput, KalendsError, NotFound
from kalends.missions.runtime.base import Observation
from kalends.missions.runtime.process import PASSAGES, ProcessRuntime, valid_session_id
from kalends.missions.runtime.shim import (
    EXIT,
    INTERRUPT,
    REPORT,
    SHIM,
    START,
    CorruptRecord,
    read_json,
)

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "MAX_LIST_LIMIT",
    "Passage",
    "created_key",
    "env_names",
    "find_passage",
    "parse_instant",
    "passage_dirs",
    "passage_log_tail",
    "newest_passages",
    "read_passage",
    "status_text",
]


def passage_log_tail(root: Path, session_id: str) -> str | None:
    """The end of a passage's output, when its directory is in ``root``; ``None`` when it
    is not (another machine's runtime, not admitted yet) or cannot be read. Never creates
    anything."""
    if not valid_session_id(session_id):
        return None
    try:
        if not (root / PASSAGES / session_id).is_dir():
            return None
        return ProcessRuntime(root).observe(session_id).log_tail
    except (KalendsError, OSError):
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    """One passage directory, read once."""

    directory: Path
    start: Mapping[str, Any]
    shim: Mapping[str, Any]
    exit: Mapping[str, Any] | None
    report: Mapping[str, Any] | None
    interrupt: Mapping[str, Any] | None
    observation: Observation | None
    problem: str | None

    @property
    def session_id(self) -> str:
        return self.directory.name

    @property
    def status(self) -> str:
        """admitted (not launched yet), running, exited, lost (the shim died without
        recording the end) or unreadable."""
        obs = self.observation
        if obs is None:
            return "unreadable"
        if obs.error == "lost":
            return "lost"
        if obs.exited:
            return "exited"
        if obs.launched:
            return "running"
        return "admitted"

    @property
    def created(self) -> datetime | None:
        return parse_instant(self.start.get("createdAt"))

    def status_text(self) -> str:
        """The status in words: ``running``, ``exited 0``, ``killed by signal 15``, …"""
        return status_text(self.to_json())

    def to_json(self, *, log: str | None = None) -> dict[str, Any]:
        """The records as JSON (environment values never shown)."""
        start, shim, ended = self.start, self.shim, self.exit or {}
        obs = self.observation
        out: dict[str, Any] = {
            "passageId": start.get("passageId"),
            "sessionId": self.session_id,
            "messageId": start.get("messageId"),
            "scheduleId": start.get("scheduleId"),
            "directory": str(self.directory),
            "status": self.status,
            "exitStatus": ended.get("status"),
            "signal": ended.get("signal"),
            "error": ended.get("error") or (obs.error if obs is not None else None),
            "descendants": obs.descendants if obs is not None else None,
            "problem": self.problem,
            "command": list(start.get("command") or []),
            "envNames": env_names(start),
            "workspace": start.get("workspace"),
            "cwd": start.get("cwd"),
            "createdAt": start.get("createdAt"),
            "startedAt": shim.get("startedAt"),
            "endedAt": ended.get("endedAt"),
            "pid": shim.get("commandPid"),
            "report": None
            if self.report is None
            else {k: self.report.get(k) for k in ("outcome", "summary", "at")},
            "interrupted": None
            if self.interrupt is None
            else {k: self.interrupt.get(k) for k in ("at", "grace")},
        }
        if log is not None:
            out["log"] = log
        return out


def status_text(passage: Mapping[str, Any]) -> str:
    """A passage's status in words, from its JSON (:meth:`Passage.to_json`, as a server
    answers it too): ``running``, ``exited 0``, ``killed by signal 15``, …"""
    status = passage.get("status")
    if status == "unreadable":
        return f"unreadable: {passage.get('problem')}"
    if status == "lost":
        return "lost: the shim ended without recording the command's end"
    if status == "admitted":
        return "admitted, not launched yet (a scheduler launches it)"
    if status == "running":
        return "running"
    code, sig, error = passage.get("exitStatus"), passage.get("signal"), passage.get("error")
    if sig is not None:
        text = f"killed by signal {sig}"
    elif code is not None:
        text = f"exited {code}"
    else:
        text = "ended"
    if error:
        text += f" ({error})"
    if passage.get("descendants"):
        text += "; processes of its session still run"
    return text


# As many passages as a listing shows unless told otherwise.
DEFAULT_LIST_LIMIT = 50
# The largest limit a JSON client can name exactly (2^53 - 1); 0 asks for all.
MAX_LIST_LIMIT = 2**53 - 1


def newest_passages(
    root: Path, limit: int, *, schedules: set[str] | None = None
) -> tuple[int, list[Path]]:
    """How many passages ``root`` holds, and the first ``limit`` of them newest first
    (0: all); with ``schedules``, only those of these schedules (by the ID their
    ``start.json`` names). Each start record is read once."""
    keyed: list[tuple[tuple[float, str], Path]] = []
    for directory in passage_dirs(root):
        try:
            start = read_json(directory / START)
        except (CorruptRecord, OSError):
            start = None
        if schedules is not None:
            schedule = None if start is None else start.get("scheduleId")
            if not isinstance(schedule, str) or schedule not in schedules:
                continue
        keyed.append((_created_key(directory, start), directory))
    keyed.sort(reverse=True)
    dirs = [directory for _key, directory in keyed]
    return len(dirs), dirs[:limit] if limit else dirs


def parse_instant(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def env_names(start: Mapping[str, Any]) -> list[str]:
    names = []
    for pair in start.get("env") or []:
        if isinstance(pair, list | tuple) and pair:
            names.append(str(pair[0]))
    return sorted(names)


def _record(directory: Path, name: str, problems: list[str]) -> dict[str, Any] | None:
    try:
        return read_json(directory / name)
    except (CorruptRecord, OSError) as exc:
        problems.append(str(exc))
        return None


def read_passage(runtime: ProcessRuntime, directory: Path) -> Passage:
    """Every record of one passage directory, and what ``observe`` sees of it now."""
    problems: list[str] = []
    start = _record(directory, START, problems) or {}
    shim = _record(directory, SHIM, problems) or {}
    ended = _record(directory, EXIT, problems)
    report = _record(directory, REPORT, problems)
    interrupt = _record(directory, INTERRUPT, problems)
    observation: Observation | None = None
    try:
        observation = runtime.observe(directory.name)
    except KalendsError as exc:
        problems.append(exc.message)
    return Passage(
        directory=directory,
        start=start,
        shim=shim,
        exit=ended,
        report=report,
        interrupt=interrupt,
        observation=observation,
        problem="; ".join(problems) or None,
    )


def passage_dirs(root: Path) -> list[Path]:
    """The passage directories of ``root`` (admissions in progress left out)."""
    passages = root / PASSAGES
    try:
        entries = list(passages.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise KalendsError(f"cannot read {passages}: {exc.strerror}") from exc
    return [p for p in entries if valid_session_id(p.name) and p.is_dir()]


def created_key(directory: Path) -> tuple[float, str]:
    """The sort key of a passage directory: when it was admitted, else its change time."""
    try:
        start = read_json(directory / START)
    except (CorruptRecord, OSError):
        start = None
    return _created_key(directory, start)


def _created_key(directory: Path, start: Mapping[str, Any] | None) -> tuple[float, str]:
    found = parse_instant((start or {}).get("createdAt"))
    if found is not None:
        return found.timestamp(), directory.name
    try:
        return directory.stat().st_mtime, directory.name
    except OSError:
        return 0.0, directory.name


def _not_here(what: str, root: Path) -> NotFound:
    return NotFound(
        f"no passage {what} in the runtime directory {root}: give the passage or session ID "
        "that `kalends schedule show` names, and --runtime-dir (or KALENDS_RUNTIME_DIR) of "
        "the machine that ran it",
        passage=what,
        runtime_dir=str(root),
    )


def find_passage(root: Path, ident: str) -> Path:
    """The directory of a passage by session ID, or by passage ID (its ``start.json``)."""
    text = ident.strip()
    if not text:
        raise InvalidInput("passage: give a passage ID (psg_…) or a session ID (ses_…)")
    passages = root / PASSAGES
    if valid_session_id(text) and (passages / text).is_dir():
        return passages / text
    found: list[Path] = []
    for directory in passage_dirs(root):
        try:
            start = read_json(directory / START)
        except (CorruptRecord, OSError):
            continue
        if start is not None and start.get("passageId") == text:
            found.append(directory)
    if not found:
        raise _not_here(repr(text), root)
    return max(found, key=created_key)
