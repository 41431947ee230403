"""What a passage can reach: its environment, its OS user and its view of the files.

A passage is untrusted code. Whoever may define a profile's command (the run privilege)
can run anything the passage's OS user can, so kalends keeps three walls between a
passage and the server:

- **A clean environment.** A passage never inherits the server's environment (database
  URLs, credentials, proxies). It gets the names of :data:`INHERITED_NAMES` that the
  server sets, ``PATH`` from the runtime's configuration (:data:`DEFAULT_PATH` plus the
  directory of the running ``kalends``), ``HOME`` of the passage user, then its profile's
  ``env`` and kalends' passage variables. Profile names that steer the dynamic loader or
  the interpreter (:data:`REFUSED_PREFIXES`) are refused.
- **Another OS user.** When the server runs as root, passages run as an unprivileged user
  (:data:`DEFAULT_PASSAGE_USER`, created on first use by ``kalends serve``), which cannot
  read the server's files: the database, the runtime directory and its secret are 0600 or
  0700 and owned by the server's user.
- **A sandbox.** Where bubblewrap (``bwrap``) is installed, a passage sees the system
  read-only, its workspace and its exchange directory read-write, a private ``/tmp`` and
  ``/proc`` of its own (other processes are out of sight), and no kalends data directory.

A passage's **exchange directory** is what it may write besides its workspace: its input
file and the spooled report of ``kalends report``. Without another user or a sandbox it
is ``io/`` inside the passage directory; with a passage user it lives under
:data:`DEFAULT_EXCHANGE_DIR`, owned by that user, so that the runtime directory stays
private to the server.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from kalends.errors import InvalidInput

__all__ = [
    "DEFAULT_EXCHANGE_DIR",
    "DEFAULT_PASSAGE_USER",
    "DEFAULT_PATH",
    "INHERITED_NAMES",
    "REFUSED_PREFIXES",
    "Isolation",
    "PassageUser",
    "SandboxMode",
    "UNCONFINED_USER",
    "check_env_name",
    "find_bwrap",
    "passage_environment",
    "resolve_isolation",
]

# kalends decisions (no seed names them), see the module docstring.
DEFAULT_PASSAGE_USER = "kalends-passage"
# ``--passage-user root``: the operator's explicit choice to run passages as root.
UNCONFINED_USER = "root"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
DEFAULT_EXCHANGE_DIR = Path("/var/tmp/kalends-passages")
# Taken from the server's environment when set; nothing else is.
INHERITED_NAMES = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
# A profile may not set these: they load code into every program the passage starts.
REFUSED_PREFIXES = ("LD_", "PYTHON")
ENV_PASSAGE_USER = "KALENDS_PASSAGE_USER"
ENV_SANDBOX = "KALENDS_SANDBOX"


class SandboxMode(StrEnum):
    """``auto`` sandboxes where bubblewrap works; ``on`` requires it; ``off`` never."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


def kalends_paths() -> tuple[str, ...]:
    """The directories the running kalends is read from that a sandbox's private ``/tmp``
    would hide: its environment (``sys.prefix``), the interpreter's own prefix, and the
    directory its package is imported from, where they lie under ``/tmp``."""
    # This file is kalends/missions/runtime/isolation.py: the package's parent is three up.
    found = {sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[3])}
    found |= {os.path.realpath(p) for p in found}
    # The sandbox shows the whole system read-only but for its private /tmp: only what
    # lies there must be bound again.
    return tuple(sorted(p for p in found if p.startswith("/tmp/") and os.path.isdir(p)))


@dataclass(frozen=True, slots=True, kw_only=True)
class PassageUser:
    """The unprivileged OS user passages run as."""

    name: str
    uid: int
    gid: int
    home: str

    @classmethod
    def lookup(cls, name: str) -> PassageUser:
        """The user called ``name``; :class:`InvalidInput` if there is none, or it is root."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise InvalidInput(
                f"passage user {name!r} does not exist: create it (useradd --system "
                f"--no-create-home --shell /usr/sbin/nologin {name}) or name another",
                field="passage_user",
            ) from None
        if entry.pw_uid == 0 or entry.pw_gid == 0:
            raise InvalidInput(
                f"passage user {name!r} is root or in root's group: passages need an "
                "unprivileged user",
                field="passage_user",
            )
        return cls(name=name, uid=entry.pw_uid, gid=entry.pw_gid, home=entry.pw_dir)


@dataclass(frozen=True, slots=True, kw_only=True)
class Isolation:
    """How a runtime confines its passages. The default confines the environment only."""

    user: PassageUser | None = None
    bwrap: str | None = None
    path: str = DEFAULT_PATH
    # Directories a sandboxed passage must not see (the data and runtime directories).
    hidden: tuple[str, ...] = ()
    exchange_dir: Path | None = None
    inherited: Mapping[str, str] = field(default_factory=dict)
    # What a sandboxed passage must still read wherever it lies (under /tmp, say): the
    # running kalends, its interpreter and its packages, so that `kalends report` runs.
    readable: tuple[str, ...] = field(default_factory=kalends_paths)

    @property
    def confined(self) -> bool:
        """Whether passages run apart from the server: as another user or sandboxed."""
        return self.user is not None or self.bwrap is not None

    def describe(self) -> dict[str, object]:
        """What ``kalends doctor`` shows (no secrets: names and paths only)."""
        return {
            "user": (
                {"name": self.user.name, "uid": self.user.uid, "gid": self.user.gid}
                if self.user
                else None
            ),
            "sandbox": self.bwrap,
            "path": self.path,
            "hidden": list(self.hidden),
            "exchangeDir": str(self.exchange_dir) if self.exchange_dir else None,
            "inheritedNames": sorted(self.inherited),
        }

    def plan(self, exchange: Path | None) -> dict[str, object]:
        """What the shim needs to confine one passage (see ``shim.confined_argv``)."""
        plan: dict[str, object] = {}
        if self.user is not None:
            plan.update(uid=self.user.uid, gid=self.user.gid)
        if self.bwrap is not None:
            plan.update(bwrap=self.bwrap, hidden=list(self.hidden), readable=list(self.readable))
        if exchange is not None:
            plan["exchange"] = str(exchange)
        return plan


def check_env_name(name: str, field_name: str = "profile.env") -> None:
    """Refuses a name that would load code into the passage's programs."""
    upper = name.upper()
    for prefix in REFUSED_PREFIXES:
        if upper.startswith(prefix):
            raise InvalidInput(
                f"{field_name}: {name!r} is refused: names starting with {prefix} load "
                "code into every program the passage starts",
                field=field_name,
            )


def passage_environment(
    isolation: Isolation,
    profile_env: Iterable[tuple[str, str]],
    *layers: Mapping[str, str],
) -> dict[str, str]:
    """The whole environment of a passage: the allow-list, then the profile's variables,
    then each of ``layers`` (the server's and the passage's own variables) in order."""
    env = dict(isolation.inherited)
    env["PATH"] = isolation.path
    home = isolation.user.home if isolation.user else os.environ.get("HOME", "/")
    env["HOME"] = home
    for name, value in profile_env:
        check_env_name(name)
        env[name] = value
    for layer in layers:
        env.update(layer)
    return env


def find_bwrap() -> str | None:
    """The path of a working bubblewrap, or ``None``: found on the PATH and able to start
    a sandbox here (user namespaces may be disabled)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    try:
        probe = subprocess.run(
            [found, "--ro-bind", "/", "/", "--unshare-pid", "--", "/bin/true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if probe.returncode == 0 else None


def default_path() -> str:
    """``PATH`` for passages: the running ``kalends``'s directory first (so that a
    passage finds ``kalends report``), then the system's."""
    own = str(Path(sys.executable).parent)
    parts = [own, *(p for p in DEFAULT_PATH.split(":") if p != own)]
    return ":".join(parts)


def resolve_isolation(
    *,
    passage_user: str | None,
    sandbox: SandboxMode | str = SandboxMode.AUTO,
    hidden: Iterable[Path | str] = (),
    exchange_dir: Path | None = None,
    path: str | None = None,
    environ: Mapping[str, str] | None = None,
    euid: int | None = None,
) -> Isolation:
    """The isolation a server (``kalends serve``, ``kalends worker``) gives its passages.

    As root, passages run as ``passage_user`` (default :data:`DEFAULT_PASSAGE_USER`,
    which must exist: see :func:`ensure_passage_user`) unless it is
    :data:`UNCONFINED_USER`; otherwise naming a passage user is refused, since only root
    can switch users.
    ``sandbox``: ``on`` refuses to start without a working bubblewrap.
    """
    env = os.environ if environ is None else environ
    euid = os.geteuid() if euid is None else euid
    try:
        mode = SandboxMode(sandbox)
    except ValueError:
        raise InvalidInput(
            f"sandbox must be auto, on or off, got {sandbox!r}", field="sandbox"
        ) from None
    user: PassageUser | None = None
    if euid == 0:
        if passage_user != UNCONFINED_USER:
            user = PassageUser.lookup(passage_user or DEFAULT_PASSAGE_USER)
    elif passage_user:
        raise InvalidInput(
            f"--passage-user {passage_user}: only a server running as root can run passages "
            "as another user",
            field="passage_user",
        )
    bwrap = None if mode is SandboxMode.OFF else find_bwrap()
    if mode is SandboxMode.ON and bwrap is None:
        raise InvalidInput(
            "--sandbox on: bubblewrap (bwrap) is not installed or cannot start a sandbox here",
            field="sandbox",
        )
    return Isolation(
        user=user,
        bwrap=bwrap,
        path=path or default_path(),
        hidden=tuple(sorted({str(Path(h).absolute()) for h in hidden})),
        exchange_dir=exchange_dir if exchange_dir else (DEFAULT_EXCHANGE_DIR if user else None),
        inherited={k: env[k] for k in INHERITED_NAMES if env.get(k)},
    )


def ensure_passage_user(name: str | None) -> str:
    """As root, create the default passage user if it is missing (a system account with no
    home and no login shell); a user named by the operator must exist already. Returns
    what it did, for the log; does nothing when not root."""
    if os.geteuid() != 0:
        return ""
    wanted = name or DEFAULT_PASSAGE_USER
    try:
        pwd.getpwnam(wanted)
        return ""
    except KeyError:
        pass
    if wanted != DEFAULT_PASSAGE_USER:
        PassageUser.lookup(wanted)  # raises, naming the missing user
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run(
        [
            useradd,
            "--system",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            wanted,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        reason = result.stderr.strip() or f"useradd exited {result.returncode}"
        raise InvalidInput(
            f"cannot create the passage user {wanted}: {reason}",
            field="passage_user",
        )
    return f"created the passage user {wanted}"
