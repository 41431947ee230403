"""What the HTTP layer is built on: the wired services, the accounts and the settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kalends.auth import Accounts
from kalends.bootstrap import Services

if TYPE_CHECKING:
    from kalends.missions.runtime.process import ProcessRuntime

__all__ = [
    "MAX_BODY_BYTES",
    "SESSION_COOKIE",
    "DEVICE_COOKIE",
    "CSRF_COOKIE",
    "CSRF_HEADER",
    "ApiContext",
    "ApiSettings",
]

SESSION_COOKIE = "kalends_session"
# A paired device's credential (``Accounts.check_device``): never a session, never a
# bearer token.
DEVICE_COOKIE = "kalends_device"
# Readable by the page's script, which echoes it in CSRF_HEADER (double submit).
CSRF_COOKIE = "kalends_csrf"
CSRF_HEADER = "X-CSRF-Token"
# Largest JSON body any route accepts; a schedule document is at most 256 KiB (seed 002).
MAX_BODY_BYTES = 1024 * 1024


def default_request_threads(dialect: str) -> int:
    """How many requests run at once in the thread pool, by database.

    The routes are mostly Python work under one interpreter lock: every extra thread
    that runs Python adds lock hand-offs, and on SQLite (reads never wait in WAL mode,
    and there are no network round trips to overlap) a task detail cost 0.7 ms of CPU
    with one thread, 0.94 ms with two and 1.55 ms with eight. On SQLite the short routes
    do not use the pool at all (``kalends.api.dispatch``); two threads keep one pooled
    request going while another waits for the write lock. On PostgreSQL every route runs
    in the pool and each statement waits on the network, which is what more threads
    overlap: four per CPU, at most 32.
    """
    if dialect == "sqlite":
        return SQLITE_REQUEST_THREADS
    return min(MAX_REQUEST_THREADS, 4 * (os.cpu_count() or 1))


# Requests running at once on SQLite: one can wait for the write lock while one runs.
SQLITE_REQUEST_THREADS = 2
# The most request threads a server runs (the framework's own default is 40).
MAX_REQUEST_THREADS = 32


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """How the server presents itself: cookies, limits, the public base URL."""

    base_url: str = "http://127.0.0.1:8000"
    # Secure cookies only over https; a loopback http server must still get its cookie.
    secure_cookies: bool = False
    max_body_bytes: int = MAX_BODY_BYTES
    # Where this server's passages live (report callbacks verify their token there).
    runtime_dir: Path | None = None
    # How many requests run at once (in the thread pool); the rest wait their turn.
    # (``None``: :func:`default_request_threads` for the database)
    request_threads: int | None = None
    # Whether short reads and controls run on the event loop (``kalends.api.dispatch``).
    # (``None``: on SQLite, whose reads never wait for a lock nor on a network)
    inline_routes: bool | None = None
    # Readiness also needs the workers when the process runs them.
    workers: tuple[str, ...] = field(default_factory=tuple)


@dataclass(slots=True)
class ApiContext:
    """The application's state: one per server process."""

    services: Services
    accounts: Accounts
    settings: ApiSettings = field(default_factory=ApiSettings)
    runtime: ProcessRuntime | None = None
    # Set by the server once its background loops run; /readyz reports them.
    ready: dict[str, bool] = field(default_factory=dict)
    # Set from the settings by ``create_app``.
    inline_routes: bool = False
