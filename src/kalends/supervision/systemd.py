"""The systemd user manager, reached through ``systemctl --user`` and ``loginctl`` as
real subprocesses.

Whether a user manager answers is asked with ``systemctl --user show-environment``: a
missing ``systemctl``, or one that cannot reach a user manager (a container, a session
without one), makes supervision *unavailable*, with a sentence saying what to run
instead. A negative answer is kept for :data:`UNAVAILABLE_CACHE_SECONDS` in the process,
so a Play on a machine without systemd costs one lookup a minute, not a subprocess each.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kalends.supervision.unit import UNIT_NAME

__all__ = [
    "SYSTEMCTL_SECONDS",
    "UNAVAILABLE_CACHE_SECONDS",
    "Answer",
    "Systemd",
    "login_name",
]

# kalends' decisions: one systemctl call waits at most 15 s (a daemon-reload on a busy
# manager takes a few); an unavailable manager is asked again after a minute.
SYSTEMCTL_SECONDS = 15.0
UNAVAILABLE_CACHE_SECONDS = 60.0

INSTEAD = (
    "keep `kalends serve` running under your own supervisor instead (a container's "
    "restart policy, supervisord, runit, or a terminal multiplexer), or run "
    "`kalends service on` where a systemd user manager runs"
)

# Unavailable answers by where they were asked (the systemctl found, the manager's
# addresses): (when asked, the sentence).
_unavailable: dict[tuple[str | None, ...], tuple[float, str]] = {}
_unavailable_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Answer:
    """What one command answered: its exit code and its output, stripped."""

    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def why(self) -> str:
        """The command's own words on why it failed (its first line), else its code."""
        for text in (self.err, self.out):
            for line in text.splitlines():
                if line.strip():
                    return line.strip()
        return f"exit status {self.code}"


def login_name(environ: Mapping[str, str] | None = None) -> str:
    """The login name of this process's user (``$USER``, else the password database)."""
    env = os.environ if environ is None else environ
    name = env.get("USER", "").strip()
    if name:
        return name
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


class Systemd:
    """``systemctl --user`` and ``loginctl`` for the unit :data:`UNIT_NAME`.

    ``monotonic`` times the cache of an unavailable manager; ``environ`` is the
    environment the commands are looked up in and run with (this process's)."""

    def __init__(
        self, monotonic: Callable[[], float], environ: Mapping[str, str] | None = None
    ) -> None:
        self._monotonic = monotonic
        self._environ = dict(os.environ if environ is None else environ)

    def _which(self, name: str) -> str | None:
        return shutil.which(name, path=self._environ.get("PATH", os.defpath))

    def _call(self, program: str, *args: str) -> Answer:
        found = self._which(program)
        if found is None:
            return Answer(127, "", f"{program}: command not found")
        try:
            done = subprocess.run(
                [found, *args],
                capture_output=True,
                text=True,
                timeout=SYSTEMCTL_SECONDS,
                check=False,
                stdin=subprocess.DEVNULL,
                env=self._environ,
            )
        except subprocess.TimeoutExpired:
            return Answer(
                124, "", f"{program} {' '.join(args)}: no answer in {SYSTEMCTL_SECONDS:g} s"
            )
        except OSError as exc:
            return Answer(126, "", f"{program}: {exc.strerror or exc}")
        return Answer(done.returncode, done.stdout.strip(), done.stderr.strip())

    def systemctl(self, *args: str) -> Answer:
        """``systemctl --user ARGS``."""
        return self._call("systemctl", "--user", *args)

    # --- availability -------------------------------------------------------------------

    def _cache_key(self) -> tuple[str | None, ...]:
        return (
            self._which("systemctl"),
            self._environ.get("XDG_RUNTIME_DIR"),
            self._environ.get("DBUS_SESSION_BUS_ADDRESS"),
        )

    def unavailable(self) -> str | None:
        """``None`` when a user manager answers; else a sentence saying why it does not
        and what to run instead (kept for :data:`UNAVAILABLE_CACHE_SECONDS`)."""
        key = self._cache_key()
        now = self._monotonic()
        with _unavailable_lock:
            cached = _unavailable.get(key)
            if cached is not None and now - cached[0] < UNAVAILABLE_CACHE_SECONDS:
                return cached[1]
        if key[0] is None:
            reason = f"systemd is not installed here (no systemctl on PATH): {INSTEAD}"
        else:
            answer = self.systemctl("show-environment")
            if answer.ok:
                with _unavailable_lock:
                    _unavailable.pop(key, None)
                return None
            reason = f"no systemd user manager answers here ({answer.why()}): {INSTEAD}"
        with _unavailable_lock:
            _unavailable[key] = (now, reason)
        return reason

    # --- the unit ------------------------------------------------------------------------

    def enabled_state(self) -> str:
        """``systemctl --user is-enabled``'s word for the unit (``enabled``, ``disabled``,
        ``not-found``…), or why it could not tell."""
        answer = self.systemctl("is-enabled", UNIT_NAME)
        return answer.out.splitlines()[0] if answer.out else answer.why()

    def active_state(self) -> str:
        """``systemctl --user is-active``'s word for the unit (``active``, ``inactive``…)."""
        answer = self.systemctl("is-active", UNIT_NAME)
        return answer.out.splitlines()[0] if answer.out else answer.why()

    def last_exit(self) -> str | None:
        """How the unit's main process last ended (``exited with status 1``, ``killed by
        signal 9``), or ``None`` when it never ended or systemd could not tell."""
        answer = self.systemctl(
            "show", UNIT_NAME, "-p", "ExecMainCode", "-p", "ExecMainStatus", "-p",
            "ExecMainExitTimestamp",
        )  # fmt: skip
        if not answer.ok:
            return None
        fields = dict(line.partition("=")[::2] for line in answer.out.splitlines())
        code, status = fields.get("ExecMainCode", ""), fields.get("ExecMainStatus", "")
        when = fields.get("ExecMainExitTimestamp", "").strip()
        if code in ("", "0") or not status:
            return None
        # ExecMainCode is a CLD_* code: 1 exited, 2 killed, 3 dumped core.
        how = {"1": f"exited with status {status}", "2": f"killed by signal {status}"}.get(
            code, f"dumped core on signal {status}"
        )
        return f"{how} at {when}" if when else how

    def daemon_reload(self) -> Answer:
        return self.systemctl("daemon-reload")

    def enable(self, *, now: bool) -> Answer:
        return self.systemctl("enable", *(("--now",) if now else ()), UNIT_NAME)

    def disable(self, *, now: bool) -> Answer:
        return self.systemctl("disable", *(("--now",) if now else ()), UNIT_NAME)

    # --- lingering ------------------------------------------------------------------------

    def linger_advice(self) -> str | None:
        """The advice to enable lingering when ``loginctl`` says this user has none
        (without it the unit starts only at login and stops at logout); ``None`` when
        lingering is on or ``loginctl`` cannot tell."""
        user = login_name(self._environ)
        answer = self._call("loginctl", "show-user", user, "-p", "Linger")
        if answer.ok and answer.out.strip() == "Linger=no":
            return (
                f"run `loginctl enable-linger {user}` so that it starts at boot and keeps "
                "running after you log out"
            )
        return None
