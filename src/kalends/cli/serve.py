"""``kalends serve``: one process runs the whole service.

The HTTP API (FastAPI on uvicorn) answers in the main thread; the mission
scheduler and the reminder delivery run in background threads, on the same
database and the same process runtime, and on SQLite another thread copies the
write-ahead log back into the database (:mod:`kalends.storage.checkpoints`).
The database is opened (and migrated) once, before the port is taken.

The first start on a database creates the owner's account and prints a one-time
login link on stdout; later starts print how to get a fresh one
(``kalends login-link --as HANDLE``, which links to the base URL this start records in
the database). Once the server listens it prints ``kalends serving on
http://HOST:PORT`` (the real port with ``--port 0``). Everything else is logged on
stderr, a line per record, as text or JSON (:mod:`kalends.cli.logs`).

SIGTERM or SIGINT stops it gracefully: the listening socket closes, requests in
flight are answered, the background loops stop (the scheduler releases its wakes,
the delivery finishes the send in progress), then it exits 0. A second signal
exits at once with 130.
"""

from __future__ import annotations

import getpass
import ipaddress
import logging
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Final, NoReturn
from urllib.parse import urlsplit

import typer

from kalends.cli import heap
from kalends.cli.logs import (
    JsonFormatter,
    LogFormatOption,
    QuietOption,
    TextFormatter,
    check_log_format,
    logging_to_stderr,
)
from kalends.cli.loops import LOOPS_PANEL
from kalends.cli.passage_isolation import (
    PassageUserOption,
    RuntimeDirOption,
    SandboxOption,
    passage_isolation,
)
from kalends.cli.session import DatabaseOption, report_error
from kalends.cli.worker import EXIT_INTERRUPTED, default_owner
from kalends.config import resolve_runtime_dir
from kalends.errors import Conflict, InvalidInput, KalendsError
from kalends.identity import HANDLE_PATTERN

if TYPE_CHECKING:
    import uvicorn

    from kalends.auth import Accounts
    from kalends.bootstrap import Store

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ENV_BASE_URL",
    "LATER_START_HINT",
    "LOG_LEVELS",
    "SERVER_HTTP",
    "SERVER_LOOP",
    "check_base_url",
    "check_forwarded_allow_ips",
    "check_handle",
    "default_owner_handle",
    "login_link_base",
    "serve_command",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
ENV_BASE_URL = "KALENDS_BASE_URL"
ENV_FORWARDED_ALLOW_IPS = "KALENDS_FORWARDED_ALLOW_IPS"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
# The owner's handle when the login name gives none.
FALLBACK_OWNER = "owner"
# What a later start says instead of a login link.
LATER_START_HINT = (
    "the owner account exists: `kalends login-link --as HANDLE` prints a fresh login link"
)
# The HTTP parser and event loop, named rather than left to what is installed: httptools
# parses a request in C (the h11 parser in Python cost about 0.1 ms more per request),
# and asyncio's own loop serves connections in the order their requests came, where
# uvloop let some wait ten times longer than the rest (p99 0.35-0.8 s against 32-62 ms
# over 50 connections, bench/api.py).
SERVER_HTTP: Final = "httptools"
SERVER_LOOP: Final = "asyncio"
# How long requests in flight may take to finish once a stop signal came.
GRACEFUL_SECONDS = 10
# How long a stopping server waits for each background loop.
LOOP_JOIN_SECONDS = 15.0
_NOT_HANDLE = re.compile(r"[^a-z0-9._-]+")
# Links name the loopback address when the server listens on every address.
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1"}

_log = logging.getLogger("kalends.serve")


# --------------------------------------------------------------------------- options


def check_handle(text: str) -> str:
    """``text`` as an owner handle, else :class:`InvalidInput`."""
    handle = text.strip()
    if HANDLE_PATTERN.fullmatch(handle) is None:
        raise InvalidInput(
            f"owner: a handle of 1-64 lowercase letters, digits, '.', '_' or '-', got {text!r}",
            field="owner",
        )
    return handle


def default_owner_handle(environ: Mapping[str, str] | None = None) -> str:
    """The login name from the environment as a valid handle, else ``owner``.

    Uppercase becomes lowercase and every run of other characters one ``-``.
    """
    if environ is None:
        try:
            name = getpass.getuser()
        except (OSError, KeyError):
            name = ""
    else:
        name = next(
            (environ[k] for k in ("LOGNAME", "USER", "LNAME", "USERNAME") if environ.get(k)), ""
        )
    handle = _NOT_HANDLE.sub("-", name.strip().lower()).strip("._-")[:64].rstrip("._-")
    return handle if HANDLE_PATTERN.fullmatch(handle) else FALLBACK_OWNER


def _port(text: str) -> int:
    value = text.strip()
    if re.fullmatch(r"[0-9]{1,5}", value) is None or int(value) > 65535:
        raise InvalidInput(
            f"port: a whole number from 0 to 65535 (0 picks a free port), got {text!r}",
            field="port",
        )
    return int(value)


def _host(text: str) -> str:
    host = text.strip()
    if not host or any(c.isspace() for c in host):
        raise InvalidInput(f"host: an address or host name, got {text!r}", field="host")
    return host.removeprefix("[").removesuffix("]")


def _log_level(text: str) -> str:
    level = text.strip().lower()
    if level not in LOG_LEVELS:
        raise InvalidInput(f"log-level: {', '.join(LOG_LEVELS)}, got {text!r}", field="log_level")
    return level


def check_base_url(text: str) -> str:
    """``text`` as the public base URL (``http(s)://HOST[:PORT][/PATH]``, no trailing ``/``)."""
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 -- raises on a bad port
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise InvalidInput(
            f"base-url: an http:// or https:// URL with no query, got {text!r}", field="base_url"
        )
    return text.strip().rstrip("/")


def login_link_base(given: str | None, store: Store) -> tuple[str, bool]:
    """The base URL of a login link: ``given`` (``--base-url``), else the one the last
    start recorded in the database, and whether it is that recorded one. While neither
    is there, :class:`InvalidInput`: a guessed port would print a link to nowhere."""
    from kalends.bootstrap import recorded_server_base_url  # noqa: PLC0415

    if given is not None and given.strip():
        return check_base_url(given), False
    recorded = recorded_server_base_url(store)
    if recorded is None:
        raise InvalidInput(
            "base-url: no `kalends serve` has started on this database yet, so its address "
            f"is unknown: give --base-url URL (or set {ENV_BASE_URL})",
            field="base_url",
        )
    return recorded, True


def check_forwarded_allow_ips(text: str) -> str:
    """``text`` as the trusted proxies uvicorn takes: comma-separated IP addresses or
    networks, or ``*``; empty trusts no one. uvicorn would take a typo as a host name
    that never matches, so a typo is refused here instead."""
    entries = [part.strip() for part in text.split(",") if part.strip()]
    if entries == ["*"]:
        return "*"
    for entry in entries:
        parse = ipaddress.ip_network if "/" in entry else ipaddress.ip_address
        try:
            parse(entry)
        except ValueError:
            raise InvalidInput(
                "forwarded-allow-ips: comma-separated IP addresses or networks, or '*', "
                f"got {text!r}",
                field="forwarded_allow_ips",
            ) from None
    return ",".join(entries)


def _url_host(host: str) -> str:
    """``host`` as links name it: the loopback address for a wildcard one."""
    return _bracketed(_WILDCARD_HOSTS.get(host, host))


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# --------------------------------------------------------------------------- signals


@dataclass(slots=True)
class _Stopping:
    """What the first stop signal stops: the loops (``stop``) and the server once it runs."""

    log_format: str = "text"
    stop: threading.Event = field(default_factory=threading.Event)
    server: uvicorn.Server | None = None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():
            _exit_at_once(signum, self.log_format)
        self.stop.set()
        if self.server is not None:
            self.server.should_exit = True


def _exit_at_once(signum: int, log_format: str) -> NoReturn:
    """The second signal: leave now, without waiting for requests or loops.

    The line is written straight to the file descriptor: the signal may have come while
    the log's stream held its lock."""
    record = _log.makeRecord(
        _log.name,
        logging.WARNING,
        __file__,
        0,
        "stopped at once by a second signal",
        (),
        None,
        extra={"signal": signal.Signals(signum).name},
    )
    formatter = JsonFormatter() if log_format == "json" else TextFormatter()
    try:
        os.write(2, (formatter.format(record) + "\n").encode())
    finally:
        os._exit(EXIT_INTERRUPTED)


@contextmanager
def _signals(stopping: _Stopping) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, stopping.handle) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


# --------------------------------------------------------------------------- listening


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; else :class:`_CannotListen` (address taken, unknown)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise _CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        raise _CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


class _CannotListen(KalendsError):
    """The address is taken, unknown, or not this machine's."""

    code = "cannot-listen"


def _make_server(config: uvicorn.Config, on_started: Callable[[], None]) -> uvicorn.Server:
    import uvicorn  # noqa: PLC0415

    class Server(uvicorn.Server):
        """uvicorn's server, leaving the signals to ``kalends serve``."""

        @contextmanager
        def capture_signals(self) -> Generator[None, None, None]:
            yield

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                on_started()

    return Server(config)


# --------------------------------------------------------------------------- the command


def _say(line: str) -> None:
    """A line for the person who started the server, on stdout, at once."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def serve_command(
    host: Annotated[
        str,
        typer.Option(
            "--host", metavar="ADDRESS", envvar="KALENDS_HOST", help="The address to listen on."
        ),
    ] = DEFAULT_HOST,
    port: Annotated[
        str,
        typer.Option(
            "--port",
            metavar="PORT",
            envvar="KALENDS_PORT",
            help="The port to listen on; 0 picks a free one.",
        ),
    ] = str(DEFAULT_PORT),
    database: DatabaseOption = None,
    runtime_dir: RuntimeDirOption = None,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner",
            metavar="HANDLE",
            help="The owner account created on the first start (default: your login name "
            f"as a handle, else {FALLBACK_OWNER!r}); ignored once an owner exists.",
            show_default=False,
        ),
    ] = None,
    log_level: Annotated[
        str,
        typer.Option(
            "--log-level",
            metavar="LEVEL",
            help=f"The least level logged: {', '.join(LOG_LEVELS)}.",
        ),
    ] = "info",
    log_format: LogFormatOption = "text",
    quiet: QuietOption = False,
    schedules: Annotated[
        bool,
        typer.Option(
            "--schedules/--no-schedules",
            help="Run the mission scheduler (starts passages of running schedules).",
            rich_help_panel=LOOPS_PANEL,
        ),
    ] = True,
    reminders: Annotated[
        bool,
        typer.Option(
            "--reminders/--no-reminders",
            help="Deliver due reminders.",
            rich_help_panel=LOOPS_PANEL,
        ),
    ] = True,
    passage_user: PassageUserOption = None,
    sandbox: SandboxOption = "auto",
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            envvar=ENV_BASE_URL,
            help="The public URL printed in links (default: http://HOST:PORT); an https:// "
            "one makes the cookies Secure.",
            show_default=False,
        ),
    ] = None,
    forwarded_allow_ips: Annotated[
        str,
        typer.Option(
            "--forwarded-allow-ips",
            metavar="ADDRESSES",
            envvar=ENV_FORWARDED_ALLOW_IPS,
            help="The reverse proxies whose X-Forwarded-For and X-Forwarded-Proto headers are "
            "believed: comma-separated IP addresses or networks (CIDR), or '*' for any peer. "
            "Default: none, so the client is always the connecting peer (login throttling "
            "counts per client address).",
            show_default=False,
        ),
    ] = "",
) -> None:
    """Run the HTTP API, the mission scheduler and the reminder delivery in one process.

    The first start creates the owner account and prints a one-time login link (valid
    15 minutes); later, `kalends login-link --as HANDLE` prints a fresh one, to the base
    URL this start records in the database. Logs on stderr one line per request, per
    passage admitted, started and settled and per reminder batch (--quiet: only
    warnings and errors; --log-format json: one JSON object per line). SIGTERM or Ctrl-C
    stops it gracefully (requests in flight are answered); a second signal stops it at
    once. X-Forwarded-For is believed only from the proxies named by
    --forwarded-allow-ips. Exit codes: 0 stopped; 1 the database or the address refused;
    2 bad input; 130 a second signal.
    """
    try:
        address = _host(host)
        number = _port(port)
        level = _log_level(log_level)
        if quiet and LOG_LEVELS.index(level) < LOG_LEVELS.index("warning"):
            level = "warning"
        fmt = check_log_format(log_format)
        handle = default_owner_handle() if owner is None else check_handle(owner)
        public = None if base_url is None else check_base_url(base_url)
        proxies = check_forwarded_allow_ips(forwarded_allow_ips)
        root = resolve_runtime_dir(runtime_dir)
    except KalendsError as exc:
        report_error(exc, False)
    stopping = _Stopping(log_format=fmt)
    with _signals(stopping), logging_to_stderr(level, fmt):
        _serve(
            stopping,
            address,
            number,
            database,
            root,
            handle,
            schedules,
            reminders,
            public,
            (passage_user, sandbox),
            proxies=proxies,
        )


def _serve(
    stopping: _Stopping,
    host: str,
    port: int,
    database: str | None,
    root: Path,
    handle: str,
    schedules: bool,
    reminders: bool,
    public: str | None,
    confinement: tuple[str | None, str],
    *,
    proxies: str,
) -> None:
    from kalends.api import ApiContext, ApiSettings, create_app  # noqa: PLC0415
    from kalends.auth import Accounts, LoginThrottle  # noqa: PLC0415
    from kalends.bootstrap import open_services, start_checkpointer  # noqa: PLC0415
    from kalends.cli.loops import (  # noqa: PLC0415
        REMINDERS,
        SCHEDULER,
        start_reminders,
        start_scheduler,
    )
    from kalends.missions.runtime.process import ENV_API_URL, ProcessRuntime  # noqa: PLC0415
    from kalends.reminders.transports import AppriseTransport  # noqa: PLC0415

    try:
        services = open_services(database)
    except KalendsError as exc:
        _log.error("cannot open the database", extra={"error": exc.message})
        report_error(exc, False)
    store = services.store
    threads: list[threading.Thread] = []
    sock: socket.socket | None = None
    # SQLite's log is copied back by a thread of its own, not by requests' commits.
    checkpointer = start_checkpointer(store)
    try:
        try:
            isolation, note = passage_isolation(
                *confinement, root, store.engine.url.render_as_string(hide_password=False)
            )
            if note:
                _log.info(note)
            if not isolation.confined:
                _log.warning(
                    "passages run as the server's own user without a sandbox: whoever may "
                    "run commands can read everything the server can (kalends doctor)"
                )
            runtime = ProcessRuntime(root, isolation=isolation)
            sock = _listen(host, port)
        except KalendsError as exc:
            _log.error("cannot start", extra={"error": exc.message})
            report_error(exc, False)
        bound_port = sock.getsockname()[1]
        # Passages send their reports to this server, on its own address (`kalends report`).
        runtime.extra_env[ENV_API_URL] = f"http://{_url_host(host)}:{bound_port}"
        base = public or f"http://{_url_host(host)}:{bound_port}"
        accounts = Accounts(store, throttle=LoginThrottle(store.clock))
        workers = tuple(name for name, on in ((SCHEDULER, schedules), (REMINDERS, reminders)) if on)
        settings = ApiSettings(
            base_url=base,
            secure_cookies=base.startswith("https://"),
            runtime_dir=runtime.root,
            workers=workers,
        )
        ctx = ApiContext(services, accounts, settings, runtime)
        if stopping.stop.is_set():
            return  # stopped while starting: no owner, no loops
        _record_base_url(store, base)
        try:
            _welcome_owner(accounts, handle, base)
        except KalendsError as exc:
            _log.error("cannot create the owner account", extra={"error": exc.message})
            report_error(exc, False)
        app = create_app(ctx)

        def on_state(name: str, running: bool) -> None:
            ctx.ready[name] = running
            _log.info(f"{name} {'running' if running else 'stopped'}", extra={"loop": name})

        lease_owner = default_owner()
        if schedules:
            threads.append(start_scheduler(store, runtime, lease_owner, stopping.stop, on_state))
        if reminders:
            threads.append(
                start_reminders(store, AppriseTransport(), lease_owner, stopping.stop, on_state)
            )

        def on_started() -> None:
            where = f"http://{_bracketed(host)}:{bound_port}"
            frozen = heap.settle()
            _log.info(
                "serving",
                extra={
                    "url": where,
                    "base_url": base,
                    "database": store.engine.url.render_as_string(hide_password=True),
                    "runtime_dir": str(runtime.root),
                    "passage_user": isolation.user.name if isolation.user else None,
                    "sandbox": isolation.bwrap,
                    "workers": ",".join(workers) or "none",
                    "settled_objects": frozen,
                },
            )
            _say(f"kalends serving on {where}")

        import uvicorn  # noqa: PLC0415

        config = uvicorn.Config(
            app,
            host=host,
            port=bound_port,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            http=SERVER_HTTP,
            loop=SERVER_LOOP,
            # Forwarded headers only from the configured proxies: uvicorn would otherwise
            # believe any local client (and FORWARDED_ALLOW_IPS from the environment).
            proxy_headers=bool(proxies),
            forwarded_allow_ips=proxies,
        )
        server = _make_server(config, on_started)
        stopping.server = server
        if not stopping.stop.is_set():
            server.run(sockets=[sock])
    finally:
        stopping.stop.set()
        if sock is not None:
            sock.close()
        for thread in threads:
            thread.join(LOOP_JOIN_SECONDS)
        checkpointer.stop()
        store.close()
        _log.info("stopped")


def _record_base_url(store: Store, base: str) -> None:
    """Keep ``base`` in the database for ``kalends login-link``; a database that takes no
    write now (read-only) keeps the last one recorded, and the server serves all the same."""
    from kalends.bootstrap import record_server_base_url  # noqa: PLC0415

    try:
        record_server_base_url(store, base)
    except KalendsError as exc:
        _log.warning(
            "cannot record the base URL for kalends login-link", extra={"error": exc.message}
        )


def _welcome_owner(accounts: Accounts, handle: str, base: str) -> None:
    """Create the owner account and print its login link; or say how to get a link."""
    from kalends.auth.links import LOGIN_LINK_TTL  # noqa: PLC0415

    if not accounts.has_owner():
        try:
            _, secret = accounts.bootstrap_owner(handle, handle)
        except Conflict:
            pass  # another server on this database created it just now
        else:
            minutes = int(LOGIN_LINK_TTL.total_seconds() // 60)
            _log.info("owner account created", extra={"handle": handle})
            _say(f"open this link once to log in as {handle}: {base}/api/auth/link?token={secret}")
            _log.info(f"the login link is valid for {minutes} minutes", extra={"handle": handle})
            return
    _say(LATER_START_HINT)
