"""Where the database is: resolving and normalising the database URL.

Precedence: an explicit value (``--database``) over the environment variable
``KALENDS_DATABASE_URL`` over the default SQLite file ``kalends.sqlite3`` in the
user's data directory. A plain filesystem path means a SQLite file;
``postgresql://`` URLs are served by psycopg 3.

The data directory kalends creates holds the database, its runtime secret and the
passages' records: :func:`secure_data_dir` creates it private to the server's user
(``0700``), and :mod:`kalends.storage.engine` creates a new SQLite file ``0600``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import platformdirs
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from kalends.errors import InvalidInput

__all__ = [
    "DEFAULT_DATABASE_FILENAME",
    "ENV_DATABASE_URL",
    "default_database_url",
    "mask_password",
    "resolve_runtime_dir",
    "normalize_database_url",
    "resolve_database_url",
    "secure_data_dir",
]

ENV_DATABASE_URL = "KALENDS_DATABASE_URL"
ENV_RUNTIME_DIR = "KALENDS_RUNTIME_DIR"
DEFAULT_RUNTIME_DIRNAME = "runtime"
DEFAULT_DATABASE_FILENAME = "kalends.sqlite3"

DATA_DIR_MODE = 0o700
"""The mode of a data directory kalends creates: only the server's user may enter it."""

_FIELD = "database"
_SQLITE_DRIVERS = {"sqlite", "sqlite+pysqlite"}
_POSTGRES_DRIVERS = {"postgresql", "postgres", "postgresql+psycopg"}
_USERINFO_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")
_SUPPORTED = "sqlite:///PATH, postgresql://USER@HOST/DB or a file path"


def resolve_database_url(
    explicit: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
) -> str:
    """Return the SQLAlchemy URL of the database to use, normalised.

    An empty environment variable counts as unset; an empty explicit value is
    refused. The default's directory is created if missing.
    """
    if explicit is not None:
        return normalize_database_url(explicit)
    env = os.environ if environ is None else environ
    from_env = env.get(ENV_DATABASE_URL, "").strip()
    if from_env:
        return normalize_database_url(from_env)
    return default_database_url(data_dir)


def resolve_runtime_dir(
    explicit: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
) -> Path:
    """Where the process runtime keeps passage directories: ``--runtime-dir``, else
    ``KALENDS_RUNTIME_DIR``, else ``runtime`` in the user's data directory. It must be
    on the machine that runs the passages (liveness is read from its process table)."""
    env = os.environ if environ is None else environ
    raw = explicit if explicit is not None else env.get(ENV_RUNTIME_DIR, "").strip()
    if explicit is not None and not explicit.strip():
        raise InvalidInput("runtime directory must not be empty", field="runtime_dir")
    if raw:
        return Path(raw).expanduser().resolve()
    base = data_dir if data_dir is not None else Path(platformdirs.user_data_dir("kalends"))
    return secure_data_dir(base) / DEFAULT_RUNTIME_DIRNAME


def default_database_url(data_dir: Path | None = None) -> str:
    """Return the URL of the default SQLite file, creating its directory
    (:func:`secure_data_dir`)."""
    directory = data_dir if data_dir is not None else Path(platformdirs.user_data_dir("kalends"))
    return _sqlite_file_url(secure_data_dir(directory) / DEFAULT_DATABASE_FILENAME)


def secure_data_dir(directory: Path) -> Path:
    """Return ``directory``, created :data:`DATA_DIR_MODE` if missing (its missing parents
    as the umask says); an existing directory keeps its mode.

    The one place that decides who may enter the data directory kalends creates; the
    mode is set after creation, so no umask loosens (or tightens) it.
    """
    try:
        directory.mkdir(mode=DATA_DIR_MODE, parents=True)
    except FileExistsError:
        if not directory.is_dir():
            raise
    else:
        directory.chmod(DATA_DIR_MODE)
    return directory


def normalize_database_url(raw: str) -> str:
    """Return ``raw`` as a SQLAlchemy URL kalends can use, or raise :class:`InvalidInput`.

    ``postgresql://`` and ``postgres://`` become ``postgresql+psycopg://``; a
    path without a scheme becomes an absolute ``sqlite:///`` URL.
    """
    value = raw.strip()
    if not value:
        raise InvalidInput("database must not be empty", field=_FIELD)
    if "://" not in value:
        return _sqlite_file_url(Path(value))
    try:
        url = make_url(value)
    except ArgumentError as exc:
        raise InvalidInput(
            f"database {mask_password(value)!r} is not a valid URL ({exc})", field=_FIELD
        ) from exc
    scheme = url.drivername.lower()
    if scheme in _SQLITE_DRIVERS:
        return _render(url.set(drivername="sqlite"))
    if scheme in _POSTGRES_DRIVERS:
        if not url.database:
            raise InvalidInput(
                "database URL must name a PostgreSQL database, e.g. postgresql://user@host/kalends",
                field=_FIELD,
            )
        return _render(url.set(drivername="postgresql+psycopg"))
    raise InvalidInput(
        f"database URL scheme {url.drivername!r} is not supported; use {_SUPPORTED}",
        field=_FIELD,
    )


def mask_password(url: str) -> str:
    """Return ``url`` with its password, if any, replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return _USERINFO_PASSWORD.sub(r"\1***@", url)


def _sqlite_file_url(path: Path) -> str:
    return f"sqlite:///{path.expanduser().resolve()}"


def _render(url: URL) -> str:
    return url.render_as_string(hide_password=False)
