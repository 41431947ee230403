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

Heartbeats (issue 23 §3): when the runtime wrote ``beat.json`` in the passage directory
(the service's URL, the node, the session, the token of the session's shim and the
period ``every`` in seconds), a thread of the shim POSTs the passage's state there as
JSON: ``start`` once the command runs, ``beat`` every ``every`` seconds, and ``exit``
once the command's end is recorded in ``exit.json`` and no other process of its session
lives (the shim beats on, ``descendants`` true, while some do). The local records stay
the truth: an answer that never comes, or an error, changes none of them and delays
none (one line in ``output.log`` at the first failure). A reply ``{"interrupt": true,
"grace": G}`` interrupts the passage as the runtime's ``interrupt`` does: ``interrupt.json``,
TERM now, KILL after the grace period. Without ``beat.json`` the shim sends nothing,
starts no thread and imports no HTTP client.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import threading
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
BEAT = "beat.json"
EXCHANGE = "exchange.json"

# Shell conventions: not found, and found but not runnable.
EXIT_NOT_FOUND = 127
EXIT_CANNOT_RUN = 126
# ``launch`` exit codes: the launch was claimed by this shim, or by an earlier one.
LAUNCH_CLAIMED = 0
LAUNCH_HELD = 3

_POLL = 0.05
# How long the reaper keeps sending KILL to a family that keeps forking.
_KILL_ROUNDS = 100

# Heartbeats (issue 23 §3). The period comes from beat.json's "every" (the runtime's
# PASSAGE_BEAT unless it was given another), so the shim keeps no period of its own.
BEAT_TIMEOUT = 5.0  # seconds one POST may take ("timeout 5 s")
FAMILY_POLL = 0.5  # seconds between looks at a family the command left behind
LOG_TAIL_BYTES = 4096  # as observation.LOG_TAIL_BYTES: the log tail a beat carries
FINAL_OUTPUT_BYTES = 256 * 1024  # as agents.FINAL_OUTPUT_BYTES: what an agent's exit carries
MAX_BEAT_BODY = 512 * 1024  # the largest body the service takes (larger: 413)
MAX_BEAT_REPLY = 64 * 1024  # kalends' own bound on the reply read back
MAX_SPOOL_BYTES = 256 * 1024  # as exchange.MAX_SPOOL_BYTES: a spooled report read back
REPORT_OUTCOMES = ("completed", "failed")


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


def _run(directory: Path, plan: Mapping[str, Any], beats: Beats | None = None) -> int:
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
    if beats is not None:
        beats.begin()
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
    beats = Beats.of(directory, plan)
    code = _run(directory, plan, beats)
    if beats is not None:
        beats.close()  # (after exit.json: the local record never waits for the service)
    return code


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


# --- heartbeats ---------------------------------------------------------------------


class BeatTarget(NamedTuple):
    """What ``beat.json`` holds: where to POST, as which node and session, with which
    token, every how many seconds."""

    url: str
    node: str
    session: str
    token: str
    every: float


def beat_target(directory: Path) -> BeatTarget | None:
    """The passage's ``beat.json``; ``None`` without one, :class:`CorruptRecord` when it
    does not say where and how often to beat."""
    doc = read_json(directory / BEAT)
    if doc is None:
        return None
    url, every = doc.get("url"), doc.get("every")
    texts = [doc.get(k) for k in ("node", "session", "token")]
    if (
        doc.get("version") != 1
        or not isinstance(url, str)
        or not url.startswith(("http://", "https://"))
        or not all(isinstance(t, str) and t for t in texts)
        or isinstance(every, bool)
        or not isinstance(every, int | float)
        or not 0 < every < float("inf")
    ):
        raise CorruptRecord(f"{directory / BEAT} does not hold a heartbeat target")
    return BeatTarget(url, str(texts[0]), str(texts[1]), str(texts[2]), float(every))


def _tail(path: Path, size: int) -> str:
    """The last ``size`` bytes of the file at ``path`` as text (none when it is missing)."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(0, end - size))
            return f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _report_of(doc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``{outcome, summary, at}`` of a report record, ``None`` when it holds none."""
    if doc is None:
        return None
    report = {k: doc.get(k) for k in ("outcome", "summary", "at")}
    if report["outcome"] not in REPORT_OUTCOMES or not all(
        isinstance(report[k], str) for k in ("summary", "at")
    ):
        return None
    try:
        _at(report)
    except ValueError:
        return None
    return report


def _at(report: Mapping[str, Any]) -> datetime:
    return datetime.fromisoformat(report["at"])


def _spooled(directory: Path, plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """The report spooled in the exchange directory, read without taking it (the runtime
    takes it, checking its token) and without following the passage's links."""
    noted = read_json(directory / EXCHANGE) or {}
    where = noted.get("path", plan.get("exchange"))
    if not isinstance(where, str):
        return None
    try:
        fd = os.open(
            Path(where) / REPORT, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        )
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, MAX_SPOOL_BYTES + 1)
    finally:
        os.close(fd)
    try:
        doc = json.loads(raw) if len(raw) <= MAX_SPOOL_BYTES else None
    except ValueError:
        return None
    return _report_of(doc) if isinstance(doc, dict) else None


class Beats:
    """The heartbeats of one passage: a thread that reports to :class:`BeatTarget`.

    :meth:`begin` starts it once the command runs; :meth:`close`, called once ``exit.json``
    is recorded, lets it beat on while the family lives, send ``exit`` and end (or sends
    ``exit`` alone when the command never ran).
    """

    def __init__(self, directory: Path, target: BeatTarget, plan: Mapping[str, Any]) -> None:
        # Only a passage that beats pays for the HTTP client (tens of milliseconds).
        import http.client  # noqa: PLC0415
        import urllib.request  # noqa: PLC0415

        self.directory = directory
        self.target = target
        self.plan = plan
        self.family = Family(os.getpid(), identity(os.getpid())["startTicks"])
        self._ended = threading.Event()
        self._thread: threading.Thread | None = None
        self._reaper: threading.Thread | None = None
        self._failing = False
        # The service's URL is the node's own: no proxy a profile's variables name.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._request = urllib.request.Request
        self._garbled = http.client.HTTPException  # (an answer that is not HTTP)

    @classmethod
    def of(cls, directory: Path, plan: Mapping[str, Any] | None = None) -> Beats | None:
        """The passage's heartbeats when ``beat.json`` asks for them, else ``None``."""
        try:
            target = beat_target(directory)
        except (OSError, CorruptRecord) as exc:
            _say(f"no heartbeats: {exc}")
            return None
        return None if target is None else cls(directory, target, plan or {})

    def begin(self) -> None:
        """Send ``start`` and beat every ``every`` seconds beside the command."""
        self._thread = threading.Thread(target=self._beat, name="kalends-beats", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """The command's end is recorded: beat while the family lives, then send ``exit``."""
        if self._thread is None:
            if (self.directory / EXIT).exists():
                self.send("exit")  # (the command never ran)
            return
        self._ended.set()
        self._thread.join()

    def _beat(self) -> None:
        every = self.target.every
        self.send("start")
        while not self._ended.wait(every):
            self.send("beat")
        next_at = time.monotonic()  # (the end, and a family left behind, at once)
        while self.family.members():
            if time.monotonic() >= next_at:
                self.send("beat")
                next_at = time.monotonic() + every
            time.sleep(FAMILY_POLL)
        if self._reaper is not None:
            self._reaper.join()  # (its note in the log belongs to the exit's tail)
        self.send("exit")

    def send(self, event: str) -> None:
        """POST ``event``; a reply asking for an interrupt is obeyed (not after ``exit``).
        A failure is noted once in the log and changes nothing else."""
        try:
            reply = self._post(self.payload(event))
            interrupt, grace = _interrupt_asked(reply)
        except (OSError, ValueError, self._garbled) as exc:
            if not self._failing:
                self._failing = True
                _say(f"heartbeats to {self.target.url} failing: {exc}")
            return
        if interrupt and event != "exit":
            self.interrupt(grace)

    def _post(self, body: bytes) -> bytes:
        request = self._request(
            self.target.url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with self._opener.open(request, timeout=BEAT_TIMEOUT) as response:
            return bytes(response.read(MAX_BEAT_REPLY + 1))

    def payload(self, event: str) -> bytes:
        """The JSON body of ``event``: the passage's state read from its records."""
        directory = self.directory
        shim = read_json(directory / SHIM)
        ended = read_json(directory / EXIT) or {}
        interrupted = (directory / INTERRUPT).exists()
        report = _report_of(read_json(directory / REPORT))
        spooled = _spooled(directory, self.plan)
        if spooled is not None and (report is None or _at(spooled) > _at(report)):
            report = spooled  # (the last one wins, as when the runtime takes it)
        observation = {
            "launched": shim is not None,
            "running": not ended
            and shim is not None
            and is_alive(shim, "commandPid", "commandStartTicks"),
            "exited": bool(ended),
            "exitStatus": ended.get("status"),
            "signal": ended.get("signal"),
            "descendants": bool(self.family.members()),
            "interrupted": interrupted,
            "error": ended.get("error"),
            "startedAt": shim.get("startedAt") if shim else None,
            "endedAt": ended.get("endedAt"),
            "logTail": _tail(directory / OUTPUT, LOG_TAIL_BYTES),
            "report": report,
        }
        body: dict[str, Any] = {
            "version": 1,
            "node": self.target.node,
            "session": self.target.session,
            "token": self.target.token,
            "event": event,
            "observation": observation,
        }
        if event == "exit":
            agent = (read_json(directory / START) or {}).get("agent")
            body["agent"] = agent
            if ended.get("status") == 0 and report is None and agent and not interrupted:
                body["finalOutput"] = _tail(directory / OUTPUT, FINAL_OUTPUT_BYTES)
        return _fitted(body)

    def interrupt(self, grace: float) -> None:
        """Interrupt the passage as the runtime's ``interrupt`` does, once: record it, TERM
        now, KILL after the grace period (of the first interrupt recorded)."""
        if self._reaper is not None:
            return
        now = datetime.now(UTC)
        try:
            create_json_exclusive(
                self.directory / INTERRUPT, {"version": 1, "at": now.isoformat(), "grace": grace}
            )
            noted = read_json(self.directory / INTERRUPT) or {}
        except (OSError, CorruptRecord) as exc:
            _say(f"cannot record the interrupt the service asked for: {exc}")
            return
        try:
            first_at = datetime.fromisoformat(noted["at"])
            noted_grace = float(noted["grace"])
        except (KeyError, TypeError, ValueError):
            first_at, noted_grace = now, grace
        remaining = max(0.0, noted_grace - (now - first_at).total_seconds())
        self._reaper = threading.Thread(
            target=_reap, args=(self.directory, remaining, set()), name="kalends-reap", daemon=True
        )
        self._reaper.start()


def _interrupt_asked(reply: bytes) -> tuple[bool, float]:
    """Whether the service's reply asks for an interrupt, and its grace period;
    :class:`ValueError` for a reply that is not one."""
    if len(reply) > MAX_BEAT_REPLY:
        raise ValueError("the reply is too large")
    doc = json.loads(reply) if reply.strip() else {}
    if not isinstance(doc, dict):
        raise ValueError("the reply is not a JSON object")
    interrupt = doc.get("interrupt", False)
    if not isinstance(interrupt, bool):
        raise ValueError("the reply's interrupt is not true or false")
    if not interrupt:
        return False, 0.0
    grace = doc.get("grace")
    if (
        isinstance(grace, bool)
        or not isinstance(grace, int | float)
        or not 0 <= grace < float("inf")
    ):
        raise ValueError("the reply asks for an interrupt without a grace period")
    return True, float(grace)


def _fitted(body: dict[str, Any]) -> bytes:
    """``body`` as JSON within :data:`MAX_BEAT_BODY`, the final output shortened from its
    start (its end holds the final message) when escaping made it larger."""
    while True:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        final = body.get("finalOutput")
        if len(data) <= MAX_BEAT_BODY or not final:
            return data
        body["finalOutput"] = final[len(final) // 2 + 1 :]


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
