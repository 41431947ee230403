"""The systemd user unit that keeps ``kalends serve`` running, rendered from what a
server runs with.

The unit runs this environment's ``kalends`` executable (or ``python -m kalends``) with
``serve`` and the database URL, runtime directory, address and port the server was
started with; ``Restart=on-failure`` brings it back after a crash (a graceful stop exits
0 and stays stopped). It never carries a password: a database URL with one is refused,
and the unit reads ``KALENDS_DATABASE_URL`` from an environment file instead when that
file names it (:func:`env_file_path`, a file only its user may read).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from kalends.errors import InvalidInput

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ENV_DATABASE_URL",
    "RESTART_SECONDS",
    "UNIT_NAME",
    "Launch",
    "config_home",
    "env_file_names_database",
    "env_file_path",
    "kalends_command",
    "render_unit",
    "systemd_quote",
    "unit_path",
]

UNIT_NAME = "kalends.service"
# What ``kalends serve`` listens on when not told (kalends.cli.serve_options says the same).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
ENV_DATABASE_URL = "KALENDS_DATABASE_URL"
# kalends' decision: a crashed server comes back after 5 s, so a database that is down
# for a while is retried every 5 s instead of exhausting systemd's start limit at once.
RESTART_SECONDS = 5

# Characters a word of ExecStart may hold unquoted.
_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@+=:,./-")


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """How the supervised server starts: the ``kalends`` command and what ``serve`` is
    given. ``None`` leaves an option out, so the served process takes its own default."""

    command: tuple[str, ...]
    database_url: str | None = None
    runtime_dir: Path | None = None
    host: str | None = None
    port: int | None = None

    @property
    def address(self) -> tuple[str, int]:
        """Where the supervised server listens."""
        return (
            self.host or DEFAULT_HOST,
            DEFAULT_PORT if self.port is None else self.port,
        )


def kalends_command() -> tuple[str, ...]:
    """This environment's ``kalends`` executable, else its Python running ``-m kalends``."""
    beside = Path(sys.executable).with_name("kalends")
    if beside.is_file() and os.access(beside, os.X_OK):
        return (str(beside),)
    return (sys.executable, "-m", "kalends")


def config_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME``, else ``~/.config`` (of ``$HOME``)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg)
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".config"


def unit_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user unit lives: ``~/.config/systemd/user/kalends.service``."""
    return config_home(environ) / "systemd" / "user" / UNIT_NAME


def env_file_path(environ: Mapping[str, str] | None = None) -> Path:
    """The environment file the unit reads when it exists: ``~/.config/kalends/service.env``."""
    return config_home(environ) / "kalends" / "service.env"


def env_file_names_database(path: Path) -> bool:
    """Whether the environment file at ``path`` sets ``KALENDS_DATABASE_URL``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return any(line.strip().startswith(f"{ENV_DATABASE_URL}=") for line in lines)


def systemd_quote(word: str) -> str:
    """``word`` as one word of a unit's command line: ``%`` and ``$`` doubled (systemd's
    specifiers and variables), quoted with backslash escapes when it holds anything else
    than plain characters. A control character is refused: no line of a unit holds one."""
    if any(ord(c) < 32 or ord(c) == 127 for c in word):
        raise InvalidInput(
            f"a unit's command line cannot hold a control character: {word!r}", field="unit"
        )
    escaped = word.replace("%", "%%").replace("$", "$$")
    if escaped and all(c in _BARE or c in "%$" for c in escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _has_password(url: str) -> bool:
    try:
        return make_url(url).password is not None
    except ArgumentError:
        return False


def render_unit(launch: Launch, *, env_file: Path) -> str:
    """The text of the unit for ``launch``; it reads ``env_file`` when that file exists.

    :class:`InvalidInput` when the database URL carries a password and ``env_file`` does
    not name the URL: the unit is no place for a secret."""
    argv = [*launch.command, "serve"]
    if launch.database_url is not None:
        if not _has_password(launch.database_url):
            argv += ["--database", launch.database_url]
        elif not env_file_names_database(env_file):
            raise InvalidInput(
                "database: the URL carries a password, and kalends does not write a "
                f"password into {UNIT_NAME}; put {ENV_DATABASE_URL}=<the URL> in {env_file} "
                f"(chmod 600; the unit reads it) and try again",
                field="database",
            )
    if launch.runtime_dir is not None:
        argv += ["--runtime-dir", str(launch.runtime_dir)]
    if launch.host is not None:
        argv += ["--host", launch.host]
    if launch.port is not None:
        argv += ["--port", str(launch.port)]
    command = " ".join(systemd_quote(word) for word in argv)
    return (
        "# Written by `kalends service` (`kalends service uninstall` removes it).\n"
        "[Unit]\n"
        "Description=kalends: tasks, reminders and scheduled missions\n"
        "\n"
        "[Service]\n"
        "Type=exec\n"
        f"EnvironmentFile=-{str(env_file).replace('%', '%%')}\n"
        f"ExecStart={command}\n"
        "Restart=on-failure\n"
        f"RestartSec={RESTART_SECONDS}\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )
