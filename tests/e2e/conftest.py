"""Real ``kalends serve`` processes, driven over HTTP on a free loopback port.

:func:`start_server` runs ``python -m kalends serve --port 0`` on a database, reads
the port (and the login link, on a first start) from its stdout, and keeps its
stderr (JSON log lines: ``--log-format json`` unless a test says otherwise) in a file.
Every process is stopped by its PID when its fixture ends, killed if it does not stop.

``shared_server`` is one server per module and backend (SQLite, and PostgreSQL when
the storage plugin reaches one), for tests that do not stop or reconfigure it.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from kalends.storage.testing import discover_postgresql, provision

HOST = "127.0.0.1"
OWNER = "olivia"
# How long a start may take: about a second when the machine is idle.
START_WITHIN = 30.0
# How long a stop may take after SIGTERM or SIGINT.
STOP_WITHIN = 10.0
SERVING = re.compile(r"kalends serving on http://127\.0\.0\.1:(\d+)(?: \(.*\))?")
LINK = re.compile(r"open this link once to log in as (\S+): (\S+/api/auth/link\?token=(\S+))")


def environment(**extra: str) -> dict[str, str]:
    """This environment without any KALENDS_ setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    env.update(extra)
    return env


@dataclass
class Server:
    """One ``kalends serve`` process and what it said."""

    process: subprocess.Popen[str]
    database: str
    directory: Path
    stderr_path: Path
    port: int = 0
    lines: list[str] = field(default_factory=list)
    _out: queue.Queue[str | None] = field(default_factory=queue.Queue)

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def links(self) -> list[re.Match[str]]:
        return [m for m in map(LINK.fullmatch, self.lines) if m is not None]

    @property
    def link(self) -> str:
        """The login link the first start printed."""
        [found] = self.links()
        return found.group(2)

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=10.0, **kwargs)

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def logs(self) -> list[dict[str, Any]]:
        """Every stderr line, each parsed as JSON (the test fails on a line that is not)."""
        found = []
        for line in self.stderr().splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                pytest.fail(f"a stderr line is not JSON: {line!r}")
        return found

    def more_output(self) -> list[str]:
        """The stdout lines printed since the last look (after the process ended: all)."""
        while True:
            try:
                line = self._out.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return self.lines

    def send(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self, within: float = STOP_WITHIN) -> tuple[int, float]:
        """The exit code and the seconds it took to come; kills it after ``within``."""
        started = time.monotonic()
        try:
            code = self.process.wait(within)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"kalends serve did not exit within {within} s:\n{self.stderr()[-3000:]}")
        return code, time.monotonic() - started

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, float]:
        """Sends ``signum`` by PID and waits for the exit."""
        self.send(signum)
        return self.wait()

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            self.process.wait()

    def accepts(self) -> bool:
        """Whether a new connection to its port is accepted now."""
        try:
            with socket.create_connection((HOST, self.port), timeout=1.0):
                return True
        except OSError:
            return False


def wait_until(condition: Callable[[], bool], within: float, what: str) -> None:
    """Waits until ``condition()``; fails after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _pump(stream: Any, out: queue.Queue[str | None]) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))
    out.put(None)


def launch(
    database: str,
    directory: Path,
    *args: str,
    owner: str | None = OWNER,
    env: dict[str, str] | None = None,
    wrapper: tuple[str, ...] = (),
    python: str = sys.executable,
    cwd: Path | None = None,
) -> Server:
    """Starts ``kalends serve`` without waiting; see :func:`start_server`.

    ``owner=None`` leaves ``--owner`` out; ``env`` adds to the environment; ``wrapper``
    is a command that runs the server's command line (e.g. ``setpriv`` with its options);
    ``python`` is the interpreter that runs it, started in ``cwd``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    stderr_path = directory / f"serve-{time.monotonic_ns()}.stderr"
    with stderr_path.open("w") as err:
        process = subprocess.Popen(
            [
                *wrapper,
                python,
                "-m",
                "kalends",
                "serve",
                "--database",
                database,
                "--runtime-dir",
                str(directory / "runtime"),
                "--log-format",
                "json",
                *(() if owner is None else ("--owner", owner)),
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=cwd,
            # Journeys test behaviour, not confinement: as root, passages run as the
            # server's user unless a test names a passage user (test_passage_confinement).
            env=environment(COLUMNS="200", KALENDS_PASSAGE_USER="root", **(env or {})),
        )
    server = Server(
        process=process, database=database, directory=directory, stderr_path=stderr_path
    )
    threading.Thread(target=_pump, args=(process.stdout, server._out), daemon=True).start()
    return server


def start_server(
    database: str,
    directory: Path,
    *args: str,
    owner: str | None = OWNER,
    env: dict[str, str] | None = None,
    wrapper: tuple[str, ...] = (),
    python: str = sys.executable,
    cwd: Path | None = None,
) -> Server:
    """Starts ``kalends serve --port 0`` and waits until it says where it serves."""
    server = launch(
        database,
        directory,
        "--port",
        "0",
        *args,
        owner=owner,
        env=env,
        wrapper=wrapper,
        python=python,
        cwd=cwd,
    )
    deadline = time.monotonic() + START_WITHIN
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            server.kill()
            pytest.fail(f"kalends serve did not start within {START_WITHIN} s:\n{server.stderr()}")
        try:
            line = server._out.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            code = server.process.wait()
            pytest.fail(f"kalends serve exited ({code}) before serving:\n{server.stderr()}")
        server.lines.append(line)
        found = SERVING.fullmatch(line)
        if found is not None:
            server.port = int(found.group(1))
            return server


def finish(server: Server) -> None:
    """Stops ``server`` by its PID if it still runs: SIGTERM, then SIGKILL."""
    if server.process.poll() is None:
        server.send(signal.SIGTERM)
        try:
            server.process.wait(STOP_WITHIN)
        except subprocess.TimeoutExpired:
            server.kill()
    if server.process.stdout is not None:
        server.process.stdout.close()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Servers a test started: stopped by their PID when it ends."""
    started: list[Server] = []
    yield started
    for server in started:
        finish(server)


def _backends() -> list[str]:
    found = discover_postgresql()
    return ["sqlite", "postgresql"] if found.url is not None or found.required else ["sqlite"]


@pytest.fixture(scope="module", params=_backends())
def shared_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A fresh database of each backend for one module, and a directory beside it."""
    backend: str = request.param
    directory = tmp_path_factory.mktemp(f"serve-{backend}")
    with provision(backend, directory) as target:
        yield target.url, directory


@pytest.fixture(scope="module")
def shared_server(shared_database: tuple[str, Path]) -> Iterator[Server]:
    """One server for the module, first started on its fresh database."""
    url, directory = shared_database
    server = start_server(url, directory)
    try:
        yield server
    finally:
        finish(server)


# --------------------------------------------------------------------------- journeys
# Helpers of the user journeys (test_journeys_*.py) and of the passage reports over HTTP.

CSRF_HEADER = "X-CSRF-Token"
CSRF_COOKIE = "kalends_csrf"
# How long a journey waits for what a background loop of the server does (a reminder
# sent, a passage started, run and archived): seconds on an idle machine.
LOOP_WITHIN = 30.0


def kalends_executable() -> str:
    """The ``kalends`` console script of this environment, by its absolute path."""
    found = Path(sys.executable).with_name("kalends")
    assert found.is_file(), f"no kalends executable beside {sys.executable}"
    return str(found)


def run_cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    """``kalends ARGS --database DB`` as its own process, on the server's database."""
    return subprocess.run(
        [sys.executable, "-m", "kalends", *args, "--database", server.database],
        capture_output=True,
        text=True,
        timeout=START_WITHIN,
        check=False,
        env=environment(COLUMNS="200"),
    )


@contextmanager
def owner_session(server: Server) -> Iterator[httpx.Client]:
    """A client logged in as the owner through the first start's login link, as a browser
    is: the session cookie kept, and the CSRF token sent back on unsafe requests."""
    with server.client() as client:
        redeemed = client.get(server.link, follow_redirects=False)
        assert redeemed.status_code == 303, redeemed.text
        csrf = client.cookies.get(CSRF_COOKIE)
        assert csrf, "the login set no CSRF cookie"
        client.headers[CSRF_HEADER] = csrf
        yield client


def requests_logged(server: Server, method: str, path: str) -> list[dict[str, Any]]:
    """The access log entries of ``method path`` the server wrote so far."""
    return [
        e
        for e in server.logs()
        if e.get("logger") == "kalends.api.access"
        and (e.get("method"), e.get("path")) == (method, path)
    ]


def poll(probe: Callable[[], Any], within: float, what: str) -> Any:
    """The first truthy value of ``probe()``; fails after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {within} s waiting for {what}")
        time.sleep(0.05)


@dataclass(frozen=True)
class Mail:
    """One message a local SMTP server received."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    subject: str
    text: str


@dataclass
class SmtpInbox:
    """A plain-SMTP server (aiosmtpd) on a free loopback port, and what it received."""

    port: int
    sender: str = "kalends@example.org"
    received: list[Mail] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def mails(self) -> list[Mail]:
        with self.lock:
            return list(self.received)

    def url(self, recipient: str) -> str:
        """The Apprise e-mail URL that reaches ``recipient`` here: plain SMTP, no login."""
        return f"mailto://{HOST}:{self.port}/{recipient}?from={self.sender}&mode=insecure"


class _Keeper:
    """aiosmtpd handler: accepts every message and keeps it in the inbox."""

    def __init__(self, inbox: SmtpInbox) -> None:
        self.inbox = inbox

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        import email  # noqa: PLC0415
        import email.policy  # noqa: PLC0415

        message = email.message_from_bytes(
            envelope.original_content or b"", policy=email.policy.default
        )
        body = message.get_body(preferencelist=("plain", "html"))
        mail = Mail(
            mail_from=str(envelope.mail_from),
            rcpt_tos=tuple(envelope.rcpt_tos),
            subject=str(message["Subject"]),
            text=body.get_content() if body is not None else "",
        )
        with self.inbox.lock:
            self.inbox.received.append(mail)
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def smtp_inbox() -> Iterator[SmtpInbox]:
    """A local SMTP server for one test, stopped when it ends."""
    from aiosmtpd.controller import Controller  # noqa: PLC0415

    for _ in range(5):  # another process may take the free port meanwhile
        inbox = SmtpInbox(port=_free_port())
        controller = Controller(_Keeper(inbox), hostname=HOST, port=inbox.port, ready_timeout=5.0)
        try:
            controller.start()
        except (OSError, TimeoutError):
            continue
        break
    else:
        pytest.fail("no free port for the SMTP server")
    try:
        yield inbox
    finally:
        controller.stop()
