"""What the CLI tests of a passage's own commands (``kalends ask``, ``kalends decide``)
share: the API of the test's world served on a loopback port with a schedule in home, a
runtime that admits that schedule's passages (never launched), a ``kalends`` process with
only the passage's token and its server's address in its environment, and a run of the
command in a fresh Python that prints what it imported."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import uvicorn

from api.conftest import ApiWorld, make_api_world
from api.questions_support import schedule_in_home
from e2e.conftest import environment, kalends_executable
from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.missions.runtime.process import ProcessRuntime
from kalends.storage.unit_of_work import Store
from runtime.support import kill_families

HOST = "127.0.0.1"
# How long the served API may take to start, in seconds.
STARTUP_SECONDS = 10
# What a passage's command must not import: it runs from scripts, often many times per
# passage, and must start fast (the standard library's HTTP only).
HEAVY = (
    "httpx",
    "sqlalchemy",
    "kalends.missions",
    "kalends.storage",
    "kalends.questions",
    "rich",
    "fastapi",
)


class Served(NamedTuple):
    """The API served at ``base``, the runtime of its passages and a schedule in home."""

    api: ApiWorld
    base: str
    runtime: ProcessRuntime
    schedule: str


def free_port() -> int:
    """A loopback port nothing listens on (as the probe closes)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


@contextmanager
def served_world(store: Store, clock: FakeClock, tmp_path: Path) -> Iterator[Served]:
    """Serves the API of a world over ``store`` until the block ends, then stops it and
    kills whatever the runtime under ``tmp_path`` left running."""
    api = make_api_world(build(store), clock, tmp_path)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(api.client.app, host=HOST, port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    root = tmp_path / "runtime"
    runtime = ProcessRuntime(root, clock=clock)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        yield Served(api, f"http://{HOST}:{port}", runtime, schedule_in_home(api))
    finally:
        server.should_exit = True
        thread.join(10)
        kill_families(root)


def passage_env(base: str, token: str, **extra: str) -> dict[str, str]:
    """A passage's environment: its server at ``base`` and its token, then ``extra``."""
    passage = {"KALENDS_API_URL": base, "KALENDS_PASSAGE_TOKEN": token}
    return environment(**{**passage, **extra})


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``kalends ARGS`` as a real process with ``env`` only."""
    return subprocess.run(
        [kalends_executable(), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def run_counting_heavy(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``kalends ARGS`` through its entry point in a fresh Python with ``env``; the last
    line of its output lists the :data:`HEAVY` modules it imported (``[]``: none)."""
    code = textwrap.dedent(
        f"""\
        import sys
        from kalends.cli.entry import main
        sys.argv = {["kalends", *args]!r}
        try:
            main()
        except SystemExit as exc:
            assert not exc.code, exc.code
        heavy = {HEAVY!r}
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or
                     m.startswith(heavy)))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
    )
