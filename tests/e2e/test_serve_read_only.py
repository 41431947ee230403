"""A real ``kalends serve`` whose SQLite files turn read-only, then writable again.

The files are made read-only with ``chmod``, as an operator's mistake or a backup tool
would. The file modes bind only an unprivileged user, so under root the server runs as
``nobody`` (``setpriv``) in a directory that user owns; otherwise as the test's user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import Server, owner_session, start_server

UNPRIVILEGED = "nobody"
SETPRIV = ("setpriv", f"--reuid={UNPRIVILEGED}", "--regid=nogroup", "--clear-groups")
# A server that is not root has no passage user to name (the journeys' launch names root).
NO_PASSAGE_USER = ("env", "-u", "KALENDS_PASSAGE_USER")


def _wrapper() -> tuple[str, ...]:
    """How to run the server as a user that file modes bind; skips when there is none."""
    if os.geteuid() != 0:
        return NO_PASSAGE_USER
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no unprivileged user for the server")
    tried = subprocess.run(
        [*SETPRIV, sys.executable, "-c", "import kalends.cli.main"],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    if tried.returncode != 0:
        pytest.skip(f"{UNPRIVILEGED} cannot run this environment's kalends: {tried.stderr[-300:]}")
    return (*NO_PASSAGE_USER, *SETPRIV)


@pytest.fixture
def server_home() -> Iterator[Path]:
    """A directory the server's user owns, outside the test's private temporary tree."""
    home = Path(tempfile.mkdtemp(prefix="kalends-read-only-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(home, UNPRIVILEGED, "nogroup")
        yield home
    finally:
        _set_writable(home, writable=True)
        shutil.rmtree(home, ignore_errors=True)


def _set_writable(home: Path, *, writable: bool) -> None:
    """The data directory and every file in it (database, -wal, -shm) read-only or back."""
    data = home / "data"
    if not data.exists():
        return
    for path in data.iterdir():
        path.chmod(0o600 if writable else 0o400)
    data.chmod(0o700 if writable else 0o500)


def _add_list(client: httpx.Client, name: str) -> httpx.Response:
    return client.post("/api/lists", json={"name": name})


def _readiness(server: Server) -> tuple[int, bool]:
    with server.client() as client:
        reply = client.get("/readyz")
    return reply.status_code, reply.json()["checks"]["database"]


def test_writes_and_readiness_follow_the_files_mode_and_recover_without_a_restart(
    server_home: Path, servers: list[Server]
) -> None:
    wrapper = _wrapper()
    data, beside = server_home / "data", server_home / "serve"
    for directory in (data, beside):
        # The server's user creates the database and its runtime directory in these.
        directory.mkdir(mode=0o700)
        if os.geteuid() == 0:
            shutil.chown(directory, UNPRIVILEGED, "nogroup")
    server = start_server(str(data / "kalends.sqlite3"), beside, wrapper=wrapper)
    servers.append(server)
    with owner_session(server) as client:
        assert _add_list(client, "before").status_code == 201
        assert _readiness(server) == (200, True)

        _set_writable(server_home, writable=False)

        assert _readiness(server) == (503, False)
        refused = _add_list(client, "while read-only")
        assert refused.status_code == 503, refused.text
        assert refused.json()["code"] == "storage-error"

        _set_writable(server_home, writable=True)

        # The first write after the files are writable again succeeds: no restart.
        written = _add_list(client, "after")
        assert written.status_code == 201, written.text
        assert _readiness(server) == (200, True)
        names = [entry["name"] for entry in client.get("/api/lists").json()]
    assert "after" in names and "while read-only" not in names
