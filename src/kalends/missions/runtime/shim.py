"""The durable shim that runs one passage's command, and the reaper that ends a family.

This module imports the standard library only: the runtime runs it by file path as
``python -I -S shim.py launch DIR`` (or ``reap DIR SECONDS [PGIDS]``), so a shim costs a
bare interpreter (no site-packages, no kalends package import) for the whole passage.
The runtime imports its file helpers (atomic JSON records, ``/proc`` scans) from here.
Run by file path, it cannot import modules beside it, which is why it stays one file of
more than 500 lines.

``launch DIR [PLAN]``: the starter runs it in a new session and waits only for it to *claim* the
launch; it forks, and the child (the shim proper) calls ``setsid`` so that it leads a
session of its own, creates ``launch.lock`` exclusively (a second shim exits at once),
tells its parent (which exits: the starter never holds a zombie, and the shim survives
the starter's death), launches the command in its own process group inside the shim's
session, records ``shim.json``, waits for it and records ``exit.json``. ``PLAN``, a JSON
object from :meth:`Isolation.plan <kalends.missions.runtime.isolation.Isolation.plan>`,
confines the command: ``uid``/``gid`` to run it as another user (no supplementary
groups), ``bwrap``/``hidden``/``exchange`` to run it in a bubblewrap sandbox.

``reap``: started by ``interrupt`` the same way; during the grace period it sends TERM
to any process group of the session that was not signalled yet (one launched late, or
a new group), then sends KILL to every remaining process of the session except the shim,
which records the command's end and exits by itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

START = "start.json"
INPUT = "input.json"
LAUNCH_LOCK = "launch.lock"
SHIM = "shim.json"
EXIT = "exit.json"
OUTPUT = "output.log"
REPORT = "report.json"
INTERRUPT = "interrupt.json"

# Shell conventions: not found, and found but not runnable.
EXIT_NOT_FOUND = 127
EXIT_CANNOT_RUN = 126
# ``launch`` exit codes: the launch was claimed by this shim, or by an earlier one.
LAUNCH_CLAIMED = 0
LAUNCH_HELD = 3

_POLL = 0.05
# How long the reaper keeps sending KILL to a family that keeps forking.
_KILL_ROUNDS = 100


try:  # imported by the runtime: the error of kalends' one tree
    from kalends.errors import CorruptRecord as CorruptRecord  # noqa: PLC0414 (re-exported)
except ImportError:  # run by file path with the standard library only

    class CorruptRecord(ValueError):  # type: ignore[no-redef]
        """A passage record does not parse as a JSON object."""


class Proc(NamedTuple):
    """One line of ``/proc/<pid>/stat``, as much as the runtime needs."""

    pid: int
    state: str
    pgid: int
    sid: int
    start_ticks: int


def now_text() -> str:
    return datetime.now(UTC).isoformat()


# --- records: JSON objects written whole, then made durable -------------------------


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(path: Path, data: Mapping[str, Any]) -> None:
    """Create ``path`` (which must not exist) holding ``data``, flushed to disk."""
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Replace ``path`` with ``data``: readers see the old record or the new, never a part."""
    tmp = _temp_name(path)
    write_synced(tmp, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def create_json_exclusive(path: Path, data: Mapping[str, Any]) -> bool:
    """Create ``path`` holding ``data`` unless it exists; whether this call created it.

    The record is complete before it appears (written aside, then hard-linked into place),
    so whoever sees the file sees its content.
    """
    tmp = _temp_name(path)
    write_synced(tmp, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    fsync_dir(path.parent)
    return True


def read_json(path: Path) -> dict[str, Any] | None:
    """The record at ``path``; ``None`` if there is none, :class:`CorruptRecord` if unreadable."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptRecord(f"{path} is not valid JSON") from exc
    if not isinstance(data, dict):
        raise CorruptRecord(f"{path} is not a JSON object")
    return data


def check_cwd(cwd: str) -> str:
    """``cwd`` normalised; :class:`ValueError` if it is absolute or climbs out with ``..``."""
    if os.path.isabs(cwd) or "\x00" in cwd:
        raise ValueError(f"cwd {cwd!r} must be a relative path inside the workspace")
    normal = os.path.normpath(cwd)
    if normal == ".." or normal.startswith("../"):
        raise ValueError(f"cwd {cwd!r} leaves the workspace")
    return normal


def resolve_cwd(workspace: str, cwd: str) -> Path:
    """The directory ``cwd`` names inside ``workspace``; :class:`ValueError` if it leaves it
    (an absolute path, ``..``, or a symbolic link pointing outside)."""
    normal = check_cwd(cwd)
    base = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(base, normal))
    if target != base and not target.startswith(base.rstrip("/") + "/"):
        raise ValueError(f"cwd {cwd!r} resolves to {target}, outside the workspace {base}")
    return Path(target)


# --- processes ----------------------------------------------------------------------


@cache
def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def proc_stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = raw[raw.rindex(b")") + 2 :].split()
    return Proc(pid, fields[0].decode(), int(fields[2]), int(fields[3]), int(fields[19]))


def _live(proc: Proc | None) -> bool:
    return proc is not None and proc.state not in ("Z", "X", "x")


def identity(pid: int) -> dict[str, Any]:
    """What tells this process apart from a later one given the same pid."""
    stat = proc_stat(pid)
    return {"pid": pid, "startTicks": stat.start_ticks if stat else None, "bootId": boot_id()}


def is_alive(
    record: Mapping[str, Any], pid_key: str = "pid", ticks_key: str = "startTicks"
) -> bool:
    """Whether the process ``record`` identifies still lives (not a zombie, not a reuse)."""
    pid = record.get(pid_key)
    if not isinstance(pid, int) or record.get("bootId", boot_id()) != boot_id():
        return False
    stat = proc_stat(pid)
    return _live(stat) and stat is not None and stat.start_ticks == record.get(ticks_key)


def session_members(sid: int, *, spare: int | None = None) -> list[Proc]:
    """Every live process (zombies excluded) of session ``sid`` except ``spare``."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == spare:
            continue
        stat = proc_stat(int(name))
        if stat is not None and stat.sid == sid and _live(stat):
            members.append(stat)
    return members


class Family(NamedTuple):
    """A passage's session: its ID is the pid of the shim, which leads it."""

    sid: int
    leader_ticks: int | None

    def members(self) -> list[Proc]:
        """The session's live processes but the shim; none once the session is gone.

        Linux never reuses a pid while a session of that ID has members, so a process
        holding the pid now that is not the shim proves the family is gone, and the
        session of that ID is someone else's.
        """
        leader = proc_stat(self.sid)
        if leader is not None and leader.start_ticks != self.leader_ticks:
            return []
        return session_members(self.sid, spare=self.sid)

    def signal(self, sig: int, done: set[int] | None = None) -> set[int]:
        """Send ``sig`` once to each process group of the family not in ``done``.

        The shim's own group (its pid, the session ID) is never signalled as a whole: the
        shim must outlive the command to record its end; other members of that group, if
        any, get ``sig`` one by one and are remembered as ``-pid``. Returns ``done`` with
        what was signalled added, so a later call signals only newcomers (the children
        of a command cleaning up after TERM are left alone).
        """
        done = set() if done is None else done
        for proc in self.members():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if proc.pgid == self.sid:
                    if -proc.pid not in done:
                        os.kill(proc.pid, sig)
                        done.add(-proc.pid)
                elif proc.pgid not in done:
                    os.killpg(proc.pgid, sig)
                    done.add(proc.pgid)
        return done


def family_of(lock: Mapping[str, Any] | None, shim: Mapping[str, Any] | None) -> Family | None:
    """The passage's family as recorded, if a shim claimed its launch in this boot (the
    processes of an earlier boot are all gone)."""
    if shim is not None and isinstance(shim.get("sid"), int):
        sid, ticks, boot = shim["sid"], shim.get("shimStartTicks"), shim.get("bootId")
    elif lock is not None and lock.get("by") == "shim" and isinstance(lock.get("pid"), int):
        sid, ticks, boot = lock["pid"], lock.get("startTicks"), lock.get("bootId")
    else:
        return None
    if boot != boot_id():
        return None
    return Family(int(sid), ticks if isinstance(ticks, int) else None)


# --- the shim -----------------------------------------------------------------------


def _say(message: str) -> None:
    print(f"[kalends] {message}", file=sys.stderr, flush=True)


def _ignore(signum: int, frame: FrameType | None) -> None:
    """The shim outlives TERM/INT/HUP aimed at the family: it must record the end."""


def record_exit(
    directory: Path, *, status: int | None, signal_number: int | None, error: str | None = None
) -> None:
    write_json_atomic(
        directory / EXIT,
        {
            "version": 1,
            "status": status,
            "signal": signal_number,
            "error": error,
            "endedAt": now_text(),
        },
    )


def reachable(path: str, uid: int, gid: int) -> bool:
    """Whether user ``uid`` (group ``gid``) may enter ``path`` and every directory above."""
    current = os.path.realpath(path)
    while True:
        try:
            st = os.stat(current)
        except OSError:
            return False
        if st.st_uid == uid:
            allowed = bool(st.st_mode & 0o100)
        elif st.st_gid == gid:
            allowed = bool(st.st_mode & 0o010)
        else:
            allowed = bool(st.st_mode & 0o001)
        if not allowed:
            return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def confined_argv(
    plan: Mapping[str, Any], command: list[str], workspace: str, cwd: str
) -> list[str]:
    """``command`` inside the sandbox the plan names, or unchanged without one: the system
    read-only, ``hidden`` directories replaced by empty ones, a private ``/tmp`` and
    ``/proc``, the workspace and the exchange directory read-write."""
    bwrap = plan.get("bwrap")
    if not bwrap:
        return command
    argv = [str(bwrap), "--unshare-pid", "--unshare-ipc", "--ro-bind", "/", "/"]
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for directory in plan.get("readable", ()):
        # The private /tmp must not hide the kalends the passage reports with, where the
        # passage's user can reach it at all (bubblewrap refuses a source it cannot).
        if plan.get("uid") is None or reachable(str(directory), plan["uid"], plan["gid"]):
            argv += ["--ro-bind-try", str(directory), str(directory)]
    hidden = [str(h) for h in plan.get("hidden", ())]
    # A hidden directory is emptied after the workspace is bound, so that a workspace
    # holding the data directory does not show it again; one that holds the workspace
    # is emptied first, so that the workspace stays.
    holding = [h for h in hidden if _within(workspace, h)]
    for directory in holding:
        argv += ["--tmpfs", directory]
    argv += ["--bind", workspace, workspace]
    for directory in hidden:
        if directory not in holding:
            argv += ["--tmpfs", directory]
    exchange = plan.get("exchange")
    if exchange:
        argv += ["--bind", str(exchange), str(exchange)]
    return [*argv, "--chdir", cwd, "--", *command]


def _run(directory: Path, plan: Mapping[str, Any]) -> int:
    start = read_json(directory / START)
    if start is None:
        _say(f"no {START} in {directory}")
        return 1
    if (directory / INTERRUPT).exists():
        record_exit(directory, status=None, signal_number=None, error="interrupted before launch")
        return 0
    command = [str(a) for a in start["command"]]
    try:
        cwd = resolve_cwd(str(start["workspace"]), str(start.get("cwd", ".")))
        if not cwd.is_dir():
            raise ValueError(f"cwd {cwd} is not a directory")
    except ValueError as exc:
        _say(f"cannot run {command[0]!r}: {exc}")
        record_exit(directory, status=EXIT_CANNOT_RUN, signal_number=None, error=str(exc))
        return 0
    if plan.get("bwrap") and os.sep not in command[0]:
        # Found here or not at all: the sandbox sees the same system, read-only.
        found = shutil.which(command[0], path=os.environ.get("PATH", os.defpath))
        if found is None:
            error = f"cannot run {command[0]!r}: not found on the passage's PATH"
            _say(error)
            record_exit(directory, status=EXIT_NOT_FOUND, signal_number=None, error=error)
            return 0
    workspace = os.path.realpath(str(start["workspace"]))
    user: dict[str, Any] = {}
    if plan.get("uid") is not None:
        user = {"user": int(plan["uid"]), "group": int(plan["gid"]), "extra_groups": []}
    try:
        # Inherits the environment the runtime prepared, and stdout/stderr (output.log).
        proc = subprocess.Popen(
            confined_argv(plan, command, workspace, str(cwd)),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            process_group=0,
            **user,
        )
    except OSError as exc:
        status = EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_CANNOT_RUN
        error = f"cannot run {command[0]!r}: {exc.strerror or exc}"
        _say(error)
        record_exit(directory, status=status, signal_number=None, error=error)
        return 0
    command_stat = proc_stat(proc.pid)
    write_json_atomic(
        directory / SHIM,
        {
            "version": 1,
            "shimPid": os.getpid(),
            "shimStartTicks": identity(os.getpid())["startTicks"],
            "commandPid": proc.pid,
            "commandStartTicks": command_stat.start_ticks if command_stat else None,
            "pgid": proc.pid,
            "sid": os.getsid(0),
            "bootId": boot_id(),
            "startedAt": now_text(),
        },
    )
    if (directory / INTERRUPT).exists():
        # Interrupted while launching: the interrupter may have scanned before we began.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    code = proc.wait()
    if code < 0:
        record_exit(directory, status=None, signal_number=-code)
    else:
        record_exit(directory, status=code, signal_number=None)
    return 0


def _shim(directory: Path, notify: int, plan: Mapping[str, Any]) -> int:
    claimed = create_json_exclusive(
        directory / LAUNCH_LOCK,
        {"version": 1, "by": "shim", **identity(os.getpid()), "at": now_text()},
    )
    os.write(notify, b"claimed" if claimed else b"held")
    os.close(notify)
    if not claimed:
        return 0
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _ignore)
    return _run(directory, plan)


def _launch(directory: Path, plan: Mapping[str, Any]) -> int:
    read_end, write_end = os.pipe()
    if os.fork():
        os.close(write_end)
        answer = b""
        while chunk := os.read(read_end, 64):
            answer += chunk
        return {b"claimed": LAUNCH_CLAIMED, b"held": LAUNCH_HELD}.get(answer, 1)
    os.close(read_end)
    code = 1
    try:
        os.setsid()
        code = _shim(directory, write_end, plan)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


# --- the reaper ---------------------------------------------------------------------


def _reap(directory: Path, grace: float, signalled: set[int]) -> None:
    deadline = time.monotonic() + grace
    family = None
    while True:
        family = family_of(read_json(directory / LAUNCH_LOCK), read_json(directory / SHIM))
        members = family.members() if family is not None else []
        if family is not None and members:
            family.signal(signal.SIGTERM, signalled)
        if not members and (directory / EXIT).exists():
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(_POLL)
    if family is None:
        return
    killed = 0
    for _ in range(_KILL_ROUNDS):
        members = family.members()
        if not members:
            break
        killed += len(members)
        for proc in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if proc.pgid != family.sid:
                    os.killpg(proc.pgid, signal.SIGKILL)
                os.kill(proc.pid, signal.SIGKILL)
        time.sleep(_POLL / 2)
    if killed:
        _say(f"interrupted: sent KILL after the {grace:g} s grace period")


def _daemon() -> bool:
    """Fork; the parent gets ``True`` (and should exit), the child leads a new session."""
    if os.fork():
        return True
    os.setsid()
    return False


def main(argv: list[str]) -> int:
    if len(argv) in (2, 3) and argv[0] == "launch":
        plan = json.loads(argv[2]) if len(argv) == 3 else {}
        return _launch(Path(argv[1]), plan if isinstance(plan, dict) else {})
    if len(argv) in (3, 4) and argv[0] == "reap":
        directory, grace = Path(argv[1]), max(0.0, float(argv[2]))
        groups = {int(g) for g in argv[3].split(",") if g} if len(argv) == 4 else set()
        if _daemon():
            return 0
        code = 1
        try:
            _reap(directory, grace, groups)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    print("usage: shim.py launch DIR [PLAN] | reap DIR SECONDS [PGID,...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
