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
stderr, a line per record, as text or JSON (:mod:`kalends.cli.logs`). Its parts: the
options (:mod:`kalends.cli.serve_options`), the owner and its login link
(:mod:`kalends.cli.serve_owner`), the socket and uvicorn (:mod:`kalends.cli.serve_http`),
the signals (:mod:`kalends.cli.serve_signals`) and the loops (:mod:`kalends.cli.loops`).

Its scheduler runs as a worker node (issue 23 §3, :mod:`kalends.cli.loops`): its
passages' shims send their heartbeats to this server's own address.

SIGTERM or SIGINT stops it gracefully: the listening socket closes, requests in
flight are answered, the background loops stop (the scheduler releases its wakes and
its node is recorded stopped, the delivery finishes the send in progress), then it
exits 0. A second signal
exits at once with 130.
"""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path
from typing import Annotated

import typer

from kalends.cli import heap
from kalends.cli.logs import LogFormatOption, QuietOption, check_log_format, logging_to_stderr
from kalends.cli.loops import LOOPS_PANEL
from kalends.cli.passage_isolation import (
    PassageUserOption,
    RuntimeDirOption,
    SandboxOption,
    passage_isolation,
)
from kalends.cli.serve_http import (
    GRACEFUL_SECONDS,
    SERVER_HTTP,
    SERVER_LOOP,
    bracketed,
    listen,
    make_server,
    url_host,
)
from kalends.cli.serve_options import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ENV_BASE_URL,
    ENV_FORWARDED_ALLOW_IPS,
    LOG_LEVELS,
    check_base_url,
    check_forwarded_allow_ips,
    check_host,
    check_log_level,
    check_port,
)
from kalends.cli.serve_owner import (
    FALLBACK_OWNER,
    LATER_START_HINT,
    check_handle,
    default_owner_handle,
    login_link_base,
    record_base_url,
    say,
    welcome_owner,
)
from kalends.cli.serve_signals import Stopping, handling_signals
from kalends.cli.session import DatabaseOption, report_error
from kalends.cli.worker import default_owner
from kalends.config import resolve_runtime_dir
from kalends.errors import KalendsError

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ENV_BASE_URL",
    "LATER_START_HINT",
    "LOG_LEVELS",
    "LOOP_JOIN_SECONDS",
    "SERVER_HTTP",
    "SERVER_LOOP",
    "check_base_url",
    "check_forwarded_allow_ips",
    "check_handle",
    "default_owner_handle",
    "login_link_base",
    "serve_command",
]

# How long a stopping server waits for each background loop.
LOOP_JOIN_SECONDS = 15.0

_log = logging.getLogger("kalends.serve")


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
        address = check_host(host)
        number = check_port(port)
        level = check_log_level(log_level)
        if quiet and LOG_LEVELS.index(level) < LOG_LEVELS.index("warning"):
            level = "warning"
        fmt = check_log_format(log_format)
        handle = default_owner_handle() if owner is None else check_handle(owner)
        public = None if base_url is None else check_base_url(base_url)
        proxies = check_forwarded_allow_ips(forwarded_allow_ips)
        root = resolve_runtime_dir(runtime_dir)
    except KalendsError as exc:
        report_error(exc, False)
    stopping = Stopping(log_format=fmt)
    with handling_signals(stopping), logging_to_stderr(level, fmt):
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
    stopping: Stopping,
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
    from kalends.supervision import Launch, kalends_command  # noqa: PLC0415

    # The unit `kalends service` and a human Play install runs this server as it runs.
    launch = Launch(command=kalends_command(), runtime_dir=root, host=host, port=port)
    try:
        services = open_services(database, launch=launch, serving=True)
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
            sock = listen(host, port)
        except KalendsError as exc:
            _log.error("cannot start", extra={"error": exc.message})
            report_error(exc, False)
        bound_port = sock.getsockname()[1]
        if services.supervisor is not None:
            services.supervisor.listening_on(bound_port)
        # Passages send their reports (`kalends report`) and their shims their heartbeats
        # to this server, on its own address.
        own_url = f"http://{url_host(host)}:{bound_port}"
        runtime.extra_env[ENV_API_URL] = own_url
        base = public or f"http://{url_host(host)}:{bound_port}"
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
        record_base_url(store, base)
        try:
            welcome_owner(accounts, handle, base)
        except KalendsError as exc:
            _log.error("cannot create the owner account", extra={"error": exc.message})
            report_error(exc, False)
        app = create_app(ctx)

        def on_state(name: str, running: bool) -> None:
            ctx.ready[name] = running
            _log.info(f"{name} {'running' if running else 'stopped'}", extra={"loop": name})

        lease_owner = default_owner()
        if schedules:
            try:
                threads.append(
                    start_scheduler(
                        store, runtime, lease_owner, stopping.stop, on_state, api_url=own_url
                    )
                )
            except KalendsError as exc:
                _log.error("cannot start the scheduler's node", extra={"error": exc.message})
                report_error(exc, False)
        if reminders:
            threads.append(
                start_reminders(store, AppriseTransport(), lease_owner, stopping.stop, on_state)
            )

        def on_started() -> None:
            where = f"http://{bracketed(host)}:{bound_port}"
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
            say(f"kalends serving on {where} (open it in a browser; the API reference: /docs)")

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
        server = make_server(config, on_started)
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
