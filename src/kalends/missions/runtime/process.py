"""The process runtime: each passage is a real command, recorded in a directory of its own.

Layout (``root/passages/<session_id>/``; every record a JSON object with ``version``,
written whole: aside then renamed or linked into place, and fsynced):

- ``start.json``: identities, schedule, workspace, frozen profile, ``createdAt``;
- ``input.json``: the passage's input document plus its identities;
- ``launch.lock``: who claimed the one launch (the shim's pid, start ticks, boot ID), or
  ``"by": "interrupt"`` when an interrupt came first and nothing was ever launched;
- ``shim.json``: shim pid, command pid, its process group, the session ID, ``startedAt``;
- ``exit.json``: ``status`` (0..255) or ``signal``, ``error`` when the command could
  not run (126 or 127), ``endedAt``;
- ``output.log``: the command's stdout and stderr, and the shim's own notes;
- ``report.json``: the passage's last ``kalends report``;
- ``interrupt.json``: when kalends interrupted it, and the grace period;
- ``exchange.json``: where the passage's exchange directory is.

Every passage has an **exchange directory** (``KALENDS_REPORT_SPOOL``) where
``kalends report`` spools its report (``report.json`` with the passage's token) before it
sends it anywhere: :meth:`ProcessRuntime.observe` takes the spooled report into
``report.json`` here once the token proves it is the passage's own, so a report made
while the server is down (a restart, an upgrade) is not lost. An unconfined passage's
exchange directory is ``io/`` in its passage directory. A confined passage (another OS
user or a sandbox: :mod:`kalends.missions.runtime.isolation`) cannot read its passage
directory: its exchange directory is its own, with a copy of ``input.json``.

Admission builds ``start.json`` and ``input.json`` in a temporary directory and renames it
into place, which fails if the session is there: a crash leaves nothing or a complete
admission; temporary directories (``.admit-*``) are never read. The launch is claimed by
the shim itself with the exclusive ``launch.lock``, so no interleaving of ``start`` calls,
in any number of processes, launches twice; a ``start`` after a crash between admission
and launch launches it. See :mod:`kalends.missions.runtime.shim` for the shim and the
reaper that enforces the grace period of :meth:`ProcessRuntime.interrupt`.

The runtime root must be on the machine that runs the passages: liveness is read from
``/proc``.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from kalends.clock import Clock, SystemClock
from kalends.errors import Conflict, InvalidInput, NotFound
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.base import (
    Observation,
    PassageStart,
    Presence,
    Report,
    RuntimeUnavailable,
)
from kalends.missions.runtime.isolation import (
    Isolation,
    check_env_name,
    default_path,
    passage_environment,
)
from kalends.missions.runtime.token import InvalidToken, ensure_secret, read_secret, sign, verify
from kalends.missions.stored_text import check_summary

__all__ = [
    "ENV_API_URL",
    "ENV_INPUT_FILE",
    "ENV_PASSAGE_DIR",
    "ENV_PASSAGE_ID",
    "ENV_PASSAGE_TOKEN",
    "ENV_REPORT_SPOOL",
    "ENV_RUNTIME_ROOT",
    "MAX_SUMMARY_CHARS",
    "OUTCOMES",
    "PassageSettled",
    "ProcessRuntime",
    "record_report",
    "spool_report",
]

ENV_PASSAGE_ID = "KALENDS_PASSAGE_ID"
ENV_PASSAGE_TOKEN = "KALENDS_PASSAGE_TOKEN"
ENV_INPUT_FILE = "KALENDS_INPUT_FILE"
ENV_PASSAGE_DIR = "KALENDS_PASSAGE_DIR"
ENV_RUNTIME_ROOT = "KALENDS_RUNTIME_ROOT"
# Set by a server (``kalends serve``) through ``extra_env``: where ``kalends report`` sends.
ENV_API_URL = "KALENDS_API_URL"
# Every passage's exchange directory, where ``kalends report`` spools its report first.
ENV_REPORT_SPOOL = "KALENDS_REPORT_SPOOL"
EXCHANGE = "exchange.json"
# The largest spooled report read back (a report is at most a few KiB of JSON).
MAX_SPOOL_BYTES = 256 * 1024

OUTCOMES = ("completed", "failed")
# A character takes at least one stored byte: a quick first bound; check_summary is the rule.
MAX_SUMMARY_CHARS = MAX_SUMMARY_BYTES
LOG_TAIL_BYTES = 4096
# The shim claims its launch within milliseconds; this bounds a wedged machine.
LAUNCH_TIMEOUT = 30.0
PASSAGES = "passages"
_SESSION_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")
_SHIM_FILE = str(Path(records.__file__).resolve())


class PassageSettled(Conflict):
    """The passage has settled (its command and every process of its session ended):
    its report can no longer change."""

    code = "passage-settled"


def valid_session_id(session_id: str) -> bool:
    """A session ID names a directory: letters, digits, ``_.:-``, not starting with a dot."""
    return isinstance(session_id, str) and _SESSION_ID.fullmatch(session_id) is not None


def _check_text(value: object, field: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty) or "\x00" in value:
        raise InvalidInput(f"{field} must be a non-empty string without NUL", field=field)
    return value


def _parse_at(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class ProcessRuntime:
    """Runs passages as detached commands under a durable shim (see the module docstring).

    ``secret`` signs passage tokens; by default it is ``root/secret``, created on first
    use, which ``kalends report`` reads too (a runtime given another secret can only take
    reports through :meth:`report`). ``grace``: seconds between TERM and KILL on
    interrupt. ``python``: the interpreter that runs the shim (standard library only).
    ``extra_env``: variables every passage gets on top of its profile's (a server gives
    its own URL as ``KALENDS_API_URL``); the passage's identities still come last.
    ``isolation``: the passage's environment, user and sandbox; by default a clean
    environment only (see :mod:`kalends.missions.runtime.isolation`).
    """

    def __init__(
        self,
        root: Path | str,
        *,
        secret: bytes | None = None,
        grace: float = 10.0,
        python: str = sys.executable,
        clock: Clock | None = None,
        extra_env: Mapping[str, str] | None = None,
        isolation: Isolation | None = None,
    ) -> None:
        if isinstance(grace, bool) or not math.isfinite(grace) or grace < 0:
            raise InvalidInput(f"grace must be a non-negative number of seconds, got {grace!r}")
        self.root = Path(root).absolute()
        self.passages = self.root / PASSAGES
        self.grace = float(grace)
        self.python = python
        self.clock: Clock = clock or SystemClock()
        self.extra_env: dict[str, str] = dict(extra_env or {})
        self.isolation = isolation if isolation is not None else Isolation(path=default_path())
        self._secret = secret
        try:
            # Private to the server's user: a passage never reads another's records.
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.passages.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot create {self.passages}: {exc.strerror}") from exc

    def __repr__(self) -> str:
        return f"ProcessRuntime({str(self.root)!r})"

    @property
    def secret(self) -> bytes:
        if self._secret is None:
            self._secret = ensure_secret(self.root)
        return self._secret

    def passage_dir(self, session_id: str) -> Path:
        if not valid_session_id(session_id):
            raise InvalidInput(f"session ID {session_id!r} cannot name a passage directory")
        return self.passages / session_id

    # --- the protocol --------------------------------------------------------------

    def start(self, start: PassageStart) -> Presence:
        """Admit (first admission wins) and launch once; see :class:`Runtime`."""
        presence = self.admit(start)
        if presence is Presence.PRESENT:
            try:
                self._launch(self.passage_dir(start.session_id))
            except (OSError, records.CorruptRecord) as exc:
                raise RuntimeUnavailable(
                    f"cannot launch session {start.session_id}: {exc}"
                ) from exc
        return presence

    def admit(self, start: PassageStart) -> Presence:
        """The first half of :meth:`start`: record the admission, launch nothing. A crash
        of ``start`` between the two halves leaves exactly this; ``start`` completes it."""
        start_doc, input_doc = self._documents(start)
        directory = self.passage_dir(start.session_id)
        try:
            presence = self._admission(directory, start.message_id)
            if presence is None:
                if self._rename_into_place(directory, start_doc, input_doc):
                    return Presence.PRESENT
                presence = self._admission(directory, start.message_id) or Presence.UNKNOWN
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot admit session {start.session_id}: {exc}") from exc
        return presence

    def lookup(self, session_id: str, message_id: str) -> Presence:
        """PRESENT, ABSENT or UNKNOWN from the passage directory alone."""
        if not valid_session_id(session_id):
            return Presence.ABSENT  # start() refuses such an ID: it was never admitted
        if not self.passages.is_dir():
            raise RuntimeUnavailable(f"the runtime directory {self.passages} is missing")
        try:
            return self._admission(self.passages / session_id, message_id) or Presence.ABSENT
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot read session {session_id}: {exc}") from exc

    def observe(self, session_id: str) -> Observation:
        """The session's state now; :class:`NotFound` if it was never admitted."""
        directory = self._existing(session_id)
        try:
            return self._observe(directory)
        except (OSError, records.CorruptRecord, KeyError, TypeError, ValueError) as exc:
            raise RuntimeUnavailable(f"cannot observe session {session_id}: {exc}") from exc

    def interrupt(self, session_id: str) -> None:
        """Record the interrupt, send TERM to every process group of the session now, and
        leave a detached reaper to send KILL to what remains after the grace period.

        Interrupting before the launch claims it, so nothing is ever launched. Calling it
        again sends TERM again; the KILL deadline stays the first call's.
        """
        directory = self._existing(session_id)
        try:
            self._interrupt(directory)
        except (OSError, records.CorruptRecord, ValueError) as exc:
            raise RuntimeUnavailable(f"cannot interrupt session {session_id}: {exc}") from exc

    def report(self, token: str, outcome: str, summary: str) -> Report:
        """Record a passage's report given its token (what an HTTP endpoint would call)."""
        return record_report(
            self.root, token, outcome, summary, secret=self.secret, at=self.clock.now()
        )

    def token(self, passage_id: str, session_id: str) -> str:
        """The token the passage gets in ``KALENDS_PASSAGE_TOKEN``."""
        return sign(self.secret, passage_id, session_id)

    # --- admission -----------------------------------------------------------------

    def _documents(self, start: PassageStart) -> tuple[dict[str, Any], dict[str, Any]]:
        if not valid_session_id(start.session_id):
            raise InvalidInput(
                f"session ID {start.session_id!r} cannot name a passage directory",
                field="session_id",
            )
        for name in ("passage_id", "message_id", "schedule_id", "workspace"):
            _check_text(getattr(start, name), name)
        if not os.path.isabs(start.workspace):
            raise InvalidInput("workspace must be an absolute path", field="workspace")
        if not start.command:
            raise InvalidInput("command must name a program", field="command")
        _check_text(start.command[0], "command[0]")
        for arg in start.command[1:]:
            _check_text(arg, "command", empty=True)
        for key, value in start.env:
            if "=" in _check_text(key, "env"):
                raise InvalidInput(f"environment name {key!r} holds '='", field="env")
            check_env_name(key, "env")
            _check_text(value, "env", empty=True)
        try:
            # Links are followed at launch: escaping through one ends the passage with 126.
            records.check_cwd(start.cwd)
        except ValueError as exc:
            raise InvalidInput(str(exc), field="cwd") from exc
        identities = {
            "passageId": start.passage_id,
            "sessionId": start.session_id,
            "messageId": start.message_id,
            "scheduleId": start.schedule_id,
        }
        start_doc = {
            "version": 1,
            **identities,
            "workspace": start.workspace,
            "command": list(start.command),
            "env": [list(pair) for pair in start.env],
            "cwd": start.cwd,
            "createdAt": self.clock.now().isoformat(),
        }
        input_doc = {**start.input, **identities}
        try:
            json.dumps(input_doc)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"the passage input is not JSON: {exc}", field="input") from exc
        return start_doc, input_doc

    def _admission(self, directory: Path, message_id: str) -> Presence | None:
        """What the directory proves about (session, message): ``None`` when absent."""
        try:
            os.lstat(directory)
        except FileNotFoundError:
            return None
        try:
            record = records.read_json(directory / records.START)
        except (records.CorruptRecord, IsADirectoryError, NotADirectoryError):
            return Presence.UNKNOWN
        if record is None or record.get("sessionId") != directory.name:
            return Presence.UNKNOWN  # partial or foreign: never resend on it
        return Presence.PRESENT if record.get("messageId") == message_id else Presence.UNKNOWN

    def _rename_into_place(
        self, directory: Path, start_doc: dict[str, Any], input_doc: dict[str, Any]
    ) -> bool:
        tmp = Path(tempfile.mkdtemp(prefix=f".admit-{directory.name}-", dir=self.passages))
        try:
            records.write_synced(tmp / records.START, start_doc)
            records.write_synced(tmp / records.INPUT, input_doc)
            records.fsync_dir(tmp)
            try:
                os.rename(tmp, directory)
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    return False  # another start admitted this session first
                raise
            records.fsync_dir(self.passages)
            return True
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    # --- launch --------------------------------------------------------------------

    def _launch(self, directory: Path) -> None:
        if (directory / records.LAUNCH_LOCK).exists():
            return
        start_doc = records.read_json(directory / records.START)
        if start_doc is None:
            raise records.CorruptRecord(f"{directory / records.START} is missing")
        passage = {
            ENV_PASSAGE_ID: start_doc["passageId"],
            ENV_PASSAGE_TOKEN: self.token(start_doc["passageId"], start_doc["sessionId"]),
        }
        exchange = self._exchange(directory)
        passage[ENV_REPORT_SPOOL] = str(exchange)
        if self.isolation.confined:
            # A confined passage learns nothing of the runtime's own directories.
            passage[ENV_INPUT_FILE] = str(exchange / records.INPUT)
        else:
            passage.update(
                {
                    ENV_INPUT_FILE: str(directory / records.INPUT),
                    ENV_PASSAGE_DIR: str(directory),
                    ENV_RUNTIME_ROOT: str(self.root),
                }
            )
        env = passage_environment(
            self.isolation,
            ((str(k), str(v)) for k, v in start_doc["env"]),
            self.extra_env,
            passage,
        )
        plan = json.dumps(
            self.isolation.plan(exchange if self.isolation.confined else None), sort_keys=True
        )
        self._spawn(["launch", str(directory), plan], directory, env=env)

    def _exchange(self, directory: Path) -> Path:
        """Prepare the passage's exchange directory and record where it is: ``io/`` in its
        directory, or for a confined passage one it owns, with a copy of its input."""
        isolation = self.isolation
        if not isolation.confined:
            exchange = directory / "io"
            exchange.mkdir(mode=0o700, exist_ok=True)
            records.write_json_atomic(directory / EXCHANGE, {"version": 1, "path": str(exchange)})
            return exchange
        if isolation.exchange_dir is not None:
            isolation.exchange_dir.mkdir(mode=0o711, parents=True, exist_ok=True)
            exchange = isolation.exchange_dir / directory.name
        else:
            exchange = directory / "io"
        exchange.mkdir(mode=0o700, exist_ok=True)
        copy = exchange / records.INPUT
        data = (directory / records.INPUT).read_bytes()
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
            if isolation.user is not None:
                os.fchown(fd, isolation.user.uid, isolation.user.gid)
        finally:
            os.close(fd)
        if isolation.user is not None:
            os.chown(exchange, isolation.user.uid, isolation.user.gid, follow_symlinks=False)
        records.write_json_atomic(directory / EXCHANGE, {"version": 1, "path": str(exchange)})
        return exchange

    def _take_spooled(self, directory: Path) -> None:
        """Move a report spooled in the exchange directory into ``report.json`` when its
        token is this passage's; anything else there is dropped with a note in the log."""
        noted = records.read_json(directory / EXCHANGE)
        if noted is None or not isinstance(noted.get("path"), str):
            return
        spool = Path(noted["path"]) / records.REPORT
        try:
            # The exchange directory is the passage's: never follow its links.
            fd = os.open(spool, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError:
            spool.unlink(missing_ok=True)
            return
        try:
            raw = os.read(fd, MAX_SPOOL_BYTES + 1)
        finally:
            os.close(fd)
        spool.unlink(missing_ok=True)
        try:
            doc = json.loads(raw) if len(raw) <= MAX_SPOOL_BYTES else None
            if not isinstance(doc, dict):
                raise InvalidInput("the spooled report is not a JSON object")
            at = _parse_at(doc.get("at"))
            if at is None:
                raise InvalidInput("the spooled report has no time")
            current = _report(records.read_json(directory / records.REPORT))
            if current is not None and current.at > at:
                return  # a later report came over HTTP: the last one wins
            record_report(
                self.root,
                str(doc.get("token", "")),
                str(doc.get("outcome", "")),
                str(doc.get("summary", "")),
                at=at,
                passage_dir=directory,
                secret=self.secret,
                settled_ok=True,
            )
        except (InvalidInput, InvalidToken, ValueError, records.CorruptRecord) as exc:
            with open(directory / records.OUTPUT, "a", encoding="utf-8") as log:
                log.write(f"\n[kalends] a spooled report was refused: {exc}\n")

    def _spawn(
        self, args: list[str], directory: Path, *, env: Mapping[str, str] | None = None
    ) -> None:
        """Run the shim in ``args`` mode and wait for it to detach (it forks and returns)."""
        log = os.open(
            directory / records.OUTPUT, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600
        )
        try:
            proc = subprocess.Popen(
                [self.python, "-I", "-S", _SHIM_FILE, *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,
            )
        finally:
            os.close(log)
        try:
            code = proc.wait(timeout=LAUNCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RuntimeUnavailable(
                f"the passage shim did not detach within {LAUNCH_TIMEOUT} s"
            ) from None
        if code not in (records.LAUNCH_CLAIMED, records.LAUNCH_HELD):
            raise RuntimeUnavailable(
                f"the passage shim failed (exit {code}); see {directory / records.OUTPUT}"
            )

    # --- observe and interrupt ------------------------------------------------------

    def _existing(self, session_id: str) -> Path:
        directory = self.passage_dir(session_id) if valid_session_id(session_id) else None
        if directory is None or not directory.is_dir():
            raise NotFound(f"no passage was admitted for session {session_id!r}")
        return directory

    def _observe(self, directory: Path) -> Observation:
        # Liveness first, records after: the shim writes exit.json before it exits, so a
        # shim seen dead has written every record it ever will.
        lock = records.read_json(directory / records.LAUNCH_LOCK)
        shim = records.read_json(directory / records.SHIM)
        family = records.family_of(lock, shim)
        members = family.members() if family is not None else []
        command_alive = shim is not None and records.is_alive(
            shim, "commandPid", "commandStartTicks"
        )
        owner_alive = lock is not None and records.is_alive(lock)
        ended = records.read_json(directory / records.EXIT)
        self._take_spooled(directory)
        report_doc = records.read_json(directory / records.REPORT)
        interrupted = (directory / records.INTERRUPT).exists()
        tail = _tail(directory / records.OUTPUT)
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
            report=_report(report_doc),
            started_at=_parse_at(shim.get("startedAt")) if shim else None,
            ended_at=_parse_at(ended.get("endedAt")) if ended else None,
            log_tail=tail,
            error="lost" if lost else None,
        )

    def _interrupt(self, directory: Path) -> None:
        now = self.clock.now()
        records.create_json_exclusive(
            directory / records.INTERRUPT,
            {"version": 1, "at": now.isoformat(), "grace": self.grace},
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
        first_at = _parse_at(noted.get("at")) or now
        grace = float(noted.get("grace", self.grace))
        remaining = max(0.0, grace - (now - first_at).total_seconds())
        groups = ",".join(str(g) for g in sorted(signalled))
        self._spawn(["reap", str(directory), f"{remaining:.3f}", groups], directory)


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - LOG_TAIL_BYTES))
            data = f.read()
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="replace")


def _report(doc: Mapping[str, Any] | None) -> Report | None:
    if doc is None:
        return None
    at = _parse_at(doc.get("at"))
    if at is None or doc.get("outcome") not in OUTCOMES or not isinstance(doc.get("summary"), str):
        raise records.CorruptRecord("report.json does not hold a report")
    return Report(outcome=doc["outcome"], summary=doc["summary"], at=at)


def check_report(outcome: str, summary: str) -> None:
    """The input checks every report passes, recorded or spooled."""
    if outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be completed or failed, got {outcome!r}", field="outcome")
    check_summary(summary)


def record_report(
    root: Path,
    token: str,
    outcome: str,
    summary: str,
    *,
    at: datetime,
    passage_dir: Path | None = None,
    secret: bytes | None = None,
    settled_ok: bool = False,
) -> Report:
    """Record a passage's final report, replacing any earlier one (the last one wins).

    The token must be signed with the runtime's secret (``root/secret`` unless given) and
    name the passage of ``passage_dir`` when given. Refused, with nothing written: a bad
    outcome or a summary over its byte bound (:class:`InvalidInput`), a bad or foreign
    token (:class:`InvalidToken`), a settled passage (:class:`PassageSettled`).
    """
    check_report(outcome, summary)
    if secret is None:
        try:
            secret = read_secret(root)
        except FileNotFoundError as exc:
            raise InvalidToken(f"no runtime secret in {root}: is this a kalends runtime?") from exc
    passage_id, session_id = verify(secret, token)
    if not valid_session_id(session_id):
        raise InvalidToken(field="token")
    directory = root / PASSAGES / session_id
    if passage_dir is not None and os.path.realpath(passage_dir) != os.path.realpath(directory):
        raise InvalidToken(f"the passage token is for another passage than {passage_dir}")
    start_doc = records.read_json(directory / records.START)
    if start_doc is None or (start_doc.get("passageId"), start_doc.get("sessionId")) != (
        passage_id,
        session_id,
    ):
        raise InvalidToken(f"the passage token names no passage of {root}")
    if not settled_ok and (directory / records.EXIT).exists():
        family = records.family_of(
            records.read_json(directory / records.LAUNCH_LOCK),
            records.read_json(directory / records.SHIM),
        )
        if family is None or not family.members():
            raise PassageSettled(f"passage {passage_id} has settled: its report is final")
    records.write_json_atomic(
        directory / records.REPORT,
        {
            "version": 1,
            "passageId": passage_id,
            "sessionId": session_id,
            "outcome": outcome,
            "summary": summary,
            "at": at.isoformat(),
        },
    )
    return Report(outcome=outcome, summary=summary, at=at)


def spool_report(spool: Path, token: str, outcome: str, summary: str, *, at: datetime) -> Report:
    """What ``kalends report`` does in a confined passage: write the report, with the
    passage's token, into its exchange directory ``spool`` (whole, then renamed into
    place, fsynced). The runtime checks the token and takes it when it next observes the
    passage, so a report is never lost to a server that is down. The same input checks
    as :func:`record_report` apply; the token's own check is the runtime's."""
    check_report(outcome, summary)
    if not token:
        raise InvalidToken(field="token")
    records.write_json_atomic(
        spool / records.REPORT,
        {
            "version": 1,
            "token": token,
            "outcome": outcome,
            "summary": summary,
            "at": at.isoformat(),
        },
    )
    return Report(outcome=outcome, summary=summary, at=at)
