"""What the web pages' browser tests stand on: a real ``kalends serve`` on a clock the
test moves, Debian's chromium driven through Playwright, axe-core's accessibility check,
screenshots, and a loopback proxy that loses a reply after the server wrote.

:class:`Server` runs ``kalends serve --port 0`` on a fresh SQLite database through a
small launcher that adds to the system clock the offset written in a file, so a test
moves the server's clock with :meth:`Server.shift_to` or :meth:`Server.advance`. It waits
until ``/readyz`` answers 200 (the database takes writes, the scheduler and the reminder
delivery run) and keeps the one-time login link the first start prints.

:class:`LostReplyProxy` sits between the browser and the server. It forwards every byte
both ways, except for the one request it is armed for: that request reaches the server,
and once the server's answer begins to arrive the proxy calls the test's callback (which
typically kills the server) and closes the browser's connection without a byte of the
answer: the write happened, its reply is lost.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright
from playwright.sync_api import Error as PlaywrightError
from typer.testing import CliRunner, Result

from kalends import clock
from kalends.cli.main import app

HOST = "127.0.0.1"
OWNER = "olivia"
"""The owner account the first start creates (``--owner``)."""
START_WITHIN = 30.0
"""Seconds a start may take (listening and ready): about one on an idle machine."""
STOP_WITHIN = 10.0
"""Seconds a stop may take after SIGTERM before the server is killed."""
REPOSITORY = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPOSITORY / "test-output" / "web"
WIDTHS = (1280, 390)
"""The screenshot widths: a desktop window and a phone."""
VIEWPORT_HEIGHT = 800
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")
NEVER = datetime.min.replace(tzinfo=UTC)
SERIOUS = ("serious", "critical")
"""The axe impacts a page must not have."""

SERVING = re.compile(r"kalends serving on http://127\.0\.0\.1:(\d+)\b")
LINK = re.compile(r"open this link once to log in as (\S+): (\S+/api/auth/link\?token=[\w-]+)")

LAUNCHER = textwrap.dedent(
    """\
    import os
    import sys
    import threading
    import time
    from datetime import timedelta
    from pathlib import Path

    from kalends import clock


    def orphaned(parent):
        # Ends this process once the test process that started it has ended.
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)


    parent = int(os.environ.get("KALENDS_TEST_PARENT", "0"))
    if parent:
        threading.Thread(target=orphaned, args=(parent,), daemon=True).start()

    shift = Path(sys.argv[1])
    real = clock.SystemClock.now


    def shifted(self):
        return real(self) + timedelta(seconds=float(shift.read_text()))


    clock.SystemClock.now = shifted
    sys.argv = ["kalends", *sys.argv[2:]]
    from kalends.cli.entry import main

    main()
    """
)
"""``python launcher.py SHIFT_FILE ARGS...`` runs ``kalends ARGS...`` with the system
clock moved by the seconds written in ``SHIFT_FILE`` (read at every look at the clock).
Given ``KALENDS_TEST_PARENT`` (the test process's PID), it dies with that process."""


def environment(**extra: str) -> dict[str, str]:
    """This environment without any KALENDS_ setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    env.update(extra)
    return env


@contextmanager
def shifted_clock(seconds: float) -> Iterator[None]:
    """This process's system clock runs ``seconds`` ahead while the block runs (what the
    launcher does for the server, for in-process CLI calls on the same database)."""
    if seconds == 0.0:
        yield
        return
    real = clock.SystemClock.now

    def shifted(self: clock.SystemClock) -> datetime:
        return real(self) + timedelta(seconds=seconds)

    clock.SystemClock.now = shifted  # type: ignore[method-assign]
    try:
        yield
    finally:
        clock.SystemClock.now = real  # type: ignore[method-assign]


def _pump(stream: Any, out: queue.Queue[str | None]) -> None:
    """Passes on the server's stdout line by line; closes it at the end (here: closing it
    from another thread would wait for this read, and the passages a killed server leaves
    running keep the pipe open)."""
    with stream:
        for line in stream:
            out.put(line.rstrip("\n"))
    out.put(None)


# ------------------------------------------------------------------------------ server


@dataclass
class Server:
    """A real ``kalends serve`` on a SQLite database in ``directory``, on a shifted clock.

    Start it with :meth:`start`; the module fixture ``server`` (conftest.py) does, and
    stops it when the module ends. ``restart()`` starts it again on the same database,
    runtime directory and port: the address was the server's own a moment ago and it
    listens with SO_REUSEADDR, so the port is taken again unless another process grabbed
    it meanwhile; then the server listens on a new free port and ``port`` and
    ``base_url`` change: a test that went through a :class:`LostReplyProxy` points it at
    ``server.port`` again (``proxy.upstream_port = server.port``); the browser keeps its
    session either way (cookies do not depend on the port).
    """

    directory: Path
    owner: str = OWNER
    port: int = 0
    offset: float = 0.0
    login_link: str = ""
    login_link_until: datetime = NEVER
    """When the first start's link expires on the server's clock (15 minutes, less a
    margin)."""
    lines: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    _out: queue.Queue[str | None] = field(default_factory=queue.Queue)
    _nudges: int = 0

    # --- where things are ------------------------------------------------------------

    @property
    def database_path(self) -> Path:
        return self.directory / "kalends.sqlite3"

    @property
    def database(self) -> str:
        return f"sqlite:///{self.database_path}"

    @property
    def runtime_dir(self) -> Path:
        return self.directory / "runtime"

    @property
    def shift_file(self) -> Path:
        return self.directory / "clock-shift"

    @property
    def launcher(self) -> Path:
        return self.directory / "launcher.py"

    @property
    def stderr_path(self) -> Path:
        return self.directory / "serve.stderr"

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None, "the server was never started"
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=10.0, **kwargs)

    # --- start and stop ----------------------------------------------------------------

    def start(self, port: int = 0) -> Server:
        """Starts ``kalends serve --port PORT`` and waits until it is ready; ``self``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self.launcher.exists():
            self.launcher.write_text(LAUNCHER)
        if not self.shift_file.exists():
            self._write_offset(self.offset)
        assert not self.running(), "the server runs already"
        self._out = queue.Queue()
        with self.stderr_path.open("a") as err:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    str(self.launcher),
                    str(self.shift_file),
                    "serve",
                    "--host",
                    HOST,
                    "--port",
                    str(port),
                    "--database",
                    self.database,
                    "--runtime-dir",
                    str(self.runtime_dir),
                    "--owner",
                    self.owner,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                cwd=self.directory,
                env=environment(
                    COLUMNS="200",
                    KALENDS_PASSAGE_USER="root",
                    KALENDS_TEST_PARENT=str(os.getpid()),
                ),
            )
        threading.Thread(target=_pump, args=(self.process.stdout, self._out), daemon=True).start()
        self._wait_serving()
        self._wait_ready()
        return self

    def _wait_serving(self) -> None:
        deadline = time.monotonic() + START_WITHIN
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                said = "\n".join(self.lines)
                pytest.fail(
                    f"kalends serve did not say where it serves within {START_WITHIN} s;"
                    f" its stdout:\n{said}\nits stderr:\n{self.stderr()}"
                )
            try:
                line = self._out.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                assert self.process is not None
                code = self.process.wait()
                pytest.fail(f"kalends serve exited ({code}) before serving:\n{self.stderr()}")
            self.lines.append(line)
            link = LINK.match(line)
            if link is not None:
                assert link.group(1) == self.owner, line
                self.login_link = link.group(2)
                self.login_link_until = self.now() + timedelta(minutes=14)
            serving = SERVING.match(line)
            if serving is not None:
                self.port = int(serving.group(1))
                return

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_WITHIN
        last = "no answer"
        with self.client() as client:
            while True:
                try:
                    answer = client.get("/readyz")
                except httpx.HTTPError as exc:
                    last = repr(exc)
                else:
                    if answer.status_code == 200:
                        return
                    last = f"{answer.status_code} {answer.text}"
                if not self.running():
                    pytest.fail(f"kalends serve exited before it was ready:\n{self.stderr()}")
                if time.monotonic() > deadline:
                    self.kill()
                    pytest.fail(f"kalends serve was not ready within {START_WITHIN} s ({last})")
                time.sleep(0.05)

    def stop(self) -> int:
        """SIGTERM by PID, SIGKILL after :data:`STOP_WITHIN` seconds; the exit code."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(STOP_WITHIN)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def kill(self) -> int:
        """SIGKILL by PID at once (a crash: nothing is answered or cleaned up)."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        return self.process.returncode

    def restart(self) -> Server:
        """Stops the server if it runs, then starts it again on the same database and
        runtime directory, on the same port unless it is taken (see the class)."""
        self.stop()
        wanted = self.port
        try:
            return self.start(port=wanted)
        except pytest.fail.Exception:
            if self.running() or f"cannot listen on {HOST}:{wanted}" not in self.stderr():
                raise
        return self.start(port=0)

    # --- the clock ------------------------------------------------------------------------

    def shift_to(self, at: datetime) -> None:
        """Moves the server's clock so that it reads ``at`` now."""
        self.set_offset((at - datetime.now(UTC)).total_seconds())

    def advance(self, by: timedelta) -> None:
        self.set_offset(self.offset + by.total_seconds())

    def set_offset(self, seconds: float) -> None:
        """The server's clock runs ``seconds`` ahead of the real one from now on (read at
        its next look); then its loops are woken the way another process's write does."""
        self.offset = seconds
        self._write_offset(seconds)
        if self.database_path.exists():
            self.wake()

    def _write_offset(self, seconds: float) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.shift_file.with_suffix(".tmp")
        tmp.write_text(repr(seconds))
        tmp.replace(self.shift_file)

    def now(self) -> datetime:
        """What the server's clock reads."""
        return datetime.now(UTC) + timedelta(seconds=self.offset)

    def wake(self) -> None:
        """A commit on the database, which the server's loops watch for (SQLite's
        ``data_version``): they look at the clock again at once."""
        self._nudges += 1
        with sqlite3.connect(self.database_path, timeout=10.0) as db:
            db.execute("CREATE TABLE IF NOT EXISTS clock_nudges (n INTEGER)")
            db.execute("INSERT INTO clock_nudges VALUES (?)", (self._nudges,))
        db.close()

    # --- the CLI on the same database -------------------------------------------------

    def cli(
        self, *args: str, actor: str | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``kalends ARGS [--as ACTOR] --database DB`` as its own process, on the server's
        shifted clock (about a second: a new Python)."""
        return subprocess.run(
            [
                sys.executable,
                str(self.launcher),
                str(self.shift_file),
                *args,
                *(() if actor is None else ("--as", actor)),
                "--database",
                self.database,
            ],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=START_WITHIN,
            check=False,
            cwd=self.directory,
            env=environment(COLUMNS="200"),
        )

    def cli_here(self, *args: str, actor: str | None = None, stdin: str | None = None) -> Result:
        """``kalends ARGS [--as ACTOR] --database DB`` in this process (a fraction of a
        second), on the server's shifted clock while it runs."""
        env: dict[str, str | None] = {
            "KALENDS_ACTOR": None,
            "KALENDS_DATABASE_URL": None,
            "KALENDS_SERVER": None,
            "KALENDS_TOKEN": None,
            "COLUMNS": "200",
        }
        with shifted_clock(self.offset):
            return CliRunner().invoke(
                app,
                [*args, *(() if actor is None else ("--as", actor)), "--database", self.database],
                env=env,
                input=stdin,
            )

    def add_workspace(self, name: str, actor: str | None = None) -> dict[str, Any]:
        """A new directory ``name`` beside the database, registered as a workspace by
        ``actor`` (the owner by default) with ``kalends workspace add``; what it printed."""
        path = self.directory / "workspaces" / name
        path.mkdir(parents=True, exist_ok=True)
        done = self.cli_here(
            "workspace", "add", str(path), "--name", name, "--json", actor=actor or self.owner
        )
        assert done.exit_code == 0, (done.stdout, done.stderr)
        added: dict[str, Any] = json.loads(done.stdout)
        return added

    def fresh_login_link(self, actor: str | None = None, base_url: str | None = None) -> str:
        """A new one-time login link for ``actor`` (the owner by default) from ``kalends
        login-link``, to ``base_url`` (the server's own by default). Made on the server's
        clock."""
        made = self.cli_here(
            "login-link",
            "--base-url",
            base_url or self.base_url,
            "--json",
            actor=actor or self.owner,
        )
        assert made.exit_code == 0, (made.stdout, made.stderr)
        url: str = json.loads(made.stdout)["url"]
        return url


# ----------------------------------------------------------------------------- browser

NEED_CHROMIUM = "the browser tests need Debian's chromium: apt-get install chromium"


def launch_chromium(playwright: Playwright, executable: str | None = None) -> Browser:
    """Debian's chromium (``executable``, else the ``chromium`` on PATH), headless; the
    test fails, saying what to install, when it is missing or does not start."""
    path = executable if executable is not None else shutil.which("chromium")
    if path is None:
        pytest.fail(f"{NEED_CHROMIUM}; there is no chromium on PATH", pytrace=False)
    try:
        return playwright.chromium.launch(
            executable_path=path, args=list(CHROMIUM_ARGS), headless=True, timeout=30_000
        )
    except PlaywrightError as exc:
        pytest.fail(f"{NEED_CHROMIUM}; launching {path} failed: {exc.message}", pytrace=False)


def login(page: Page, server: Server, via: str | None = None) -> None:
    """Logs ``page`` in as the owner: opens the first start's one-time link (a fresh one
    once that is used or expired on the server's clock), through ``via`` (a proxy's base
    URL) if given, and waits for the redirect to ``/``."""
    base = via or server.base_url
    if server.login_link and server.now() < server.login_link_until:
        _, _, path = server.login_link.partition("/api/auth/link")
        link, server.login_link = f"{base}/api/auth/link{path}", ""
    else:
        link = server.fresh_login_link(base_url=base)
    answer = page.goto(link)
    assert answer is not None, f"no answer to {link}"
    assert page.url == f"{base}/", f"the login link led to {page.url} ({answer.status})"


# -------------------------------------------------------------------------------- axe


def _axe_source() -> Path:
    """axe-core's axe.min.js, as shipped inside the axe-playwright-python package."""
    spec = importlib.util.find_spec("axe_playwright_python")
    assert spec is not None and spec.origin is not None, "axe-playwright-python is missing"
    found = Path(spec.origin).with_name("axe.min.js")
    assert found.is_file(), f"no axe.min.js in {found.parent}"
    return found


AXE_SOURCE = _axe_source()


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations on ``page`` as it is now (every impact).

    The script is evaluated through the browser's debugging protocol rather than added as
    a ``<script>`` element, so a page's Content-Security-Policy does not refuse it."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SOURCE.read_text())
    found: list[dict[str, Any]] = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return found


def check_axe(page: Page, label: str) -> None:
    """Fails the test when axe-core finds a serious or critical violation on ``page``,
    listing each with its rule, impact, help and the elements it found."""
    serious = [v for v in axe_violations(page) if v.get("impact") in SERIOUS]
    if not serious:
        return
    lines = [f"axe: {len(serious)} serious or critical violation(s) on {label} ({page.url}):"]
    for violation in serious:
        lines.append(
            f"- {violation['id']} ({violation['impact']}): {violation['help']}"
            f" [{violation.get('helpUrl', '')}]"
        )
        for node in violation.get("nodes", []):
            lines.append(f"    at {' '.join(map(str, node.get('target', [])))}")
    pytest.fail("\n".join(lines), pytrace=False)


def check_axe_both(page: Page, label: str) -> None:
    """:func:`check_axe` on the page as it is, in the light and in the dark color scheme
    (only where script runs: axe is a script)."""
    try:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            check_axe(page, f"{label} ({scheme})")
    finally:
        page.emulate_media(color_scheme="light")


# ------------------------------------------------------------------------- screenshots


def screenshot(page: Page, name: str) -> list[Path]:
    """Full-page PNGs of ``page`` as it is now, 1280 and 390 px wide, in the light and the
    dark color scheme, in ``test-output/web/NAME-WIDTH-SCHEME.png``; their paths. The page
    gets back its size and the light scheme afterwards."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    before = page.viewport_size
    taken: list[Path] = []
    try:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": VIEWPORT_HEIGHT})
                path = SCREENSHOTS / f"{name}-{width}-{scheme}.png"
                page.screenshot(path=str(path), full_page=True)
                taken.append(path)
    finally:
        page.emulate_media(color_scheme="light")
        if before is not None:
            page.set_viewport_size(before)
    return taken


# ------------------------------------------------------------------ the lost-reply proxy


@dataclass
class Lost:
    """The request whose reply the proxy lost: its method and target, and what the server
    had begun to answer when the callback ran."""

    method: str
    target: str
    answer_start: bytes


@dataclass
class Trap:
    method: str
    path_contains: str
    on_reply: Callable[[], object]
    fired: threading.Event = field(default_factory=threading.Event)
    lost: Lost | None = None


class _Requests:
    """Finds where each HTTP/1.1 request begins in a connection's stream from the browser
    (requests with a Content-Length body or none; browsers send no other kind here)."""

    def __init__(self) -> None:
        self.head = b""
        self.body_left = 0

    def feed(self, data: bytes) -> list[tuple[str, str]]:
        """The method and target of each request whose head completes in ``data``."""
        heads: list[tuple[str, str]] = []
        while data:
            if self.body_left:
                taken = min(self.body_left, len(data))
                self.body_left -= taken
                data = data[taken:]
                continue
            self.head += data
            data = b""
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                break
            head, data = self.head[:end], self.head[end + 4 :]
            self.head = b""
            first, *fields = head.decode("latin-1").split("\r\n")
            method, target, *_ = [*first.split(" "), "", ""]
            for line in fields:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    self.body_left = int(value.strip())
            heads.append((method, target))
        return heads


class LostReplyProxy:
    """A loopback TCP proxy to ``HOST:upstream_port``, in threads of the test process.

    Point the browser at ``base_url`` instead of the server's. ``arm(method, part,
    on_reply)`` traps the next request of ``method`` whose target contains ``part``: it is
    forwarded; when the first bytes of the server's answer arrive, ``on_reply()`` runs
    (say ``server.kill``), then both connections are closed and the browser gets nothing.
    The trap fires once. A browser may send the request again on a new connection after
    such a loss (Chromium does for a connection it had reused); while the server is down
    the proxy closes every new connection it cannot forward, and a test that restarts
    the server sees any such second attempt reach it.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server((HOST, 0))
        self.port: int = self._listener.getsockname()[1]
        self._trap: Trap | None = None
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        self.requests: list[tuple[str, str]] = []
        """The method and target of every request forwarded, in order."""
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def arm(self, method: str, part: str, on_reply: Callable[[], object]) -> Trap:
        """Traps the next ``method`` request whose target contains ``part``; the trap, whose
        ``fired`` event is set (and ``lost`` filled in) once the reply was lost."""
        trap = Trap(method.upper(), part, on_reply)
        with self._lock:
            self._trap = trap
        return trap

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets = [self._listener, *self._open]
            self._open.clear()
        for sock in sockets:
            _close(sock)

    def __enter__(self) -> LostReplyProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the threads ----------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                browser_side, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server_side = socket.create_connection((HOST, self.upstream_port), timeout=5.0)
            except OSError:
                _close(browser_side)  # the server is down: as if nothing listened
                continue
            server_side.settimeout(None)
            with self._lock:
                if self._closed:
                    _close(browser_side)
                    _close(server_side)
                    return
                self._open.update((browser_side, server_side))
            link = _Link(self, browser_side, server_side)
            threading.Thread(target=link.requests, daemon=True).start()
            threading.Thread(target=link.answers, daemon=True).start()

    def _take_trap(self, method: str, target: str) -> Trap | None:
        with self._lock:
            self.requests.append((method, target))
            trap = self._trap
            if trap is not None and trap.method == method and trap.path_contains in target:
                self._trap = None
                return trap
        return None

    def _forget(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._open.difference_update(sockets)
        for sock in sockets:
            _close(sock)


class _Link:
    """One browser connection and its connection to the server."""

    def __init__(
        self, proxy: LostReplyProxy, browser: socket.socket, server: socket.socket
    ) -> None:
        self.proxy = proxy
        self.browser = browser
        self.server = server
        self.trapped: tuple[Trap, str, str] | None = None

    def requests(self) -> None:
        parser = _Requests()
        try:
            while data := self.browser.recv(65536):
                for method, target in parser.feed(data):
                    trap = self.proxy._take_trap(method, target)
                    if trap is not None:
                        self.trapped = (trap, method, target)
                self.server.sendall(data)
            self.server.shutdown(socket.SHUT_WR)
        except OSError:
            self.proxy._forget(self.browser, self.server)

    def answers(self) -> None:
        try:
            while data := self.server.recv(65536):
                if self.trapped is not None:
                    trap, method, target = self.trapped
                    try:
                        trap.on_reply()
                    finally:
                        trap.lost = Lost(method, target, data)
                        self.proxy._forget(self.browser, self.server)
                        trap.fired.set()
                    return
                self.browser.sendall(data)
        except OSError:
            pass
        self.proxy._forget(self.browser, self.server)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def wait_for(event: threading.Event, what: str, within: float = START_WITHIN) -> None:
    """Waits until ``event`` is set; fails the test after ``within`` seconds."""
    if not event.wait(within):
        pytest.fail(f"timed out after {within} s waiting for {what}")
