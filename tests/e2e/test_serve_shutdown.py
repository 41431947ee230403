"""Stopping `kalends serve`: SIGTERM and SIGINT are graceful, a second signal is not.

Each test starts its own server on a fresh SQLite file and stops it by its PID.
A request in flight is a POST whose route already waits for its body (the server
said ``100 Continue``) when the signal comes: the server must stop accepting
connections, then take the body, answer and only then exit.
"""

from __future__ import annotations

import json
import signal
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import select

from kalends.auth import Accounts
from kalends.bootstrap import open_services
from kalends.cli.serve import LOOP_JOIN_SECONDS
from kalends.storage.migrate import open_store
from kalends.storage.mission_tables import schedule_wakes

from .conftest import HOST, OWNER, STOP_WITHIN, Server, start_server, wait_until

# How soon a stopping server must refuse new connections.
REFUSED_WITHIN = 5.0
# How long after the stop the body of the request in flight comes.
BODY_LATE_BY = 1.0
# How soon a second signal must end it (a graceful stop would wait for the request).
AT_ONCE_WITHIN = 3.0


@dataclass
class Session:
    cookie: str
    csrf: str


def log_in(server: Server) -> Session:
    with server.client() as client:
        redeemed = client.get(server.link, follow_redirects=False)
        assert redeemed.status_code == 303, redeemed.text
        return Session(client.cookies["kalends_session"], client.cookies["kalends_csrf"])


def begin_post(server: Server, session: Session, path: str, body: bytes) -> socket.socket:
    """Sends a POST's headers with ``Expect: 100-continue`` and waits for the ``100
    Continue`` that says the route started reading the body; returns the socket."""
    sock = socket.create_connection((HOST, server.port), timeout=STOP_WITHIN)
    sock.sendall(
        (
            f"POST {path} HTTP/1.1\r\n"
            f"Host: {HOST}:{server.port}\r\n"
            f"Cookie: kalends_session={session.cookie}; kalends_csrf={session.csrf}\r\n"
            f"X-CSRF-Token: {session.csrf}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Expect: 100-continue\r\n"
            "\r\n"
        ).encode()
    )
    interim = b""
    while not interim.endswith(b"\r\n\r\n"):
        chunk = sock.recv(1)
        assert chunk, f"the connection closed before 100 Continue: {interim!r}"
        interim += chunk
    assert interim.startswith(b"HTTP/1.1 100 "), interim
    return sock


def finish_post(sock: socket.socket, body: bytes) -> tuple[int, bytes]:
    """Sends the body and reads the answer to the end of the connection."""
    sock.sendall(body)
    raw = b""
    while chunk := sock.recv(65536):
        raw += chunk
    sock.close()
    head, _, payload = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), payload


@pytest.fixture
def server(tmp_path: Path, servers: list[Server]) -> Server:
    started = start_server(f"sqlite:///{tmp_path / 'kalends.sqlite3'}", tmp_path)
    servers.append(started)
    return started


@pytest.fixture
def owner_session(server: Server) -> Iterator[Session]:
    yield log_in(server)


class TestGracefulStop:
    @pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
    def test_a_request_in_flight_is_answered_then_it_exits_0(
        self, server: Server, owner_session: Session, signum: int
    ) -> None:
        body = json.dumps({"name": "in flight", "expiresInDays": 7}).encode()
        sock = begin_post(server, owner_session, "/api/tokens", body)

        server.send(signum)
        wait_until(lambda: not server.accepts(), REFUSED_WITHIN, "new connections refused")
        time.sleep(BODY_LATE_BY)  # the body comes late: the server waits for it
        assert server.process.poll() is None, "it exited with a request in flight"
        status, payload = finish_post(sock, body)
        code, took = server.wait()

        assert status == 201, payload
        answer = json.loads(payload)
        assert answer["token"]["name"] == "in flight"
        assert code == 0, server.stderr()
        assert took < STOP_WITHIN
        # What the answer reported was written.
        store = open_store(server.database)
        try:
            [token] = Accounts(store).tokens(OWNER)
        finally:
            store.close()
        assert (str(token.id), token.name, token.active) == (
            answer["token"]["id"],
            "in flight",
            True,
        )
        messages = [e["message"] for e in server.logs()]
        assert "Shutting down" in messages
        assert messages[-1] == "stopped"
        assert {"scheduler stopped", "reminders stopped"} <= set(messages)

    def test_an_idle_server_stops_on_sigterm_at_once_and_says_so(self, server: Server) -> None:
        code, took = server.stop(signal.SIGTERM)

        assert code == 0, server.stderr()
        assert took < STOP_WITHIN
        assert server.more_output()[-1].startswith("kalends serving on ")
        assert [e for e in server.logs() if e["level"] in {"error", "critical"}] == []

    def test_the_scheduler_releases_the_wakes_it_holds(
        self, tmp_path: Path, servers: list[Server]
    ) -> None:
        url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
        schedule_id = _a_running_schedule(url, tmp_path)
        server = start_server(url, tmp_path)
        servers.append(server)
        wait_until(lambda: _wake(url, schedule_id)[0] is not None, STOP_WITHIN, "a wake taken")
        holder, orphaned = _wake(url, schedule_id)
        assert holder is not None and holder.endswith("/scheduler") and not orphaned

        code, took = server.stop(signal.SIGTERM)

        assert code == 0, server.stderr()
        assert took < LOOP_JOIN_SECONDS
        assert _wake(url, schedule_id) == (None, True)


class TestSecondSignal:
    def test_a_second_signal_exits_at_once_without_waiting_for_the_request(
        self, server: Server, owner_session: Session
    ) -> None:
        body = json.dumps({"name": "never"}).encode()
        sock = begin_post(server, owner_session, "/api/tokens", body)
        server.send(signal.SIGTERM)
        wait_until(lambda: not server.accepts(), REFUSED_WITHIN, "new connections refused")
        assert server.process.poll() is None

        server.send(signal.SIGTERM)
        code, took = server.wait()

        sock.close()
        assert code == 130, server.stderr()
        assert took < AT_ONCE_WITHIN
        assert server.logs()[-1]["message"] == "stopped at once by a second signal"
        store = open_store(server.database)
        try:
            assert Accounts(store).tokens(OWNER) == []
        finally:
            store.close()


def _a_running_schedule(url: str, root: Path) -> UUID:
    """A daily schedule of alice's, playing; its wake waits for a scheduler."""
    services = open_services(url)
    try:
        alice = services.directory.add_actor("alice", "Alice")
        services.grants.grant(alice.id, "run")
        (root / "work").mkdir()
        workspace = services.workspaces.add(alice.id, root / "work", "work")
        config = {
            "title": "Morning report",
            "objective": "Summarise yesterday.",
            "profile": {"command": ["true"], "cwd": "."},
            "policy": {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
        }
        receipt = services.schedules.create(
            alice.id, workspace.id, config, request_id="create-0001"
        )
        assert receipt.mission_id is not None
        revision = services.schedules.detail(alice.id, receipt.mission_id)["revision"]
        services.schedules.play(
            alice.id, receipt.mission_id, request_id="play-0001", expected_revision=revision
        )
        return receipt.mission_id
    finally:
        services.store.close()


def _wake(url: str, schedule_id: UUID) -> tuple[str | None, bool]:
    """The owner of the schedule's wake and whether it is marked orphaned."""
    store = open_store(url)
    try:
        with store.engine.connect() as conn:
            row = conn.execute(
                select(schedule_wakes.c.owner, schedule_wakes.c.orphaned).where(
                    schedule_wakes.c.schedule_id == schedule_id
                )
            ).one()
    finally:
        store.close()
    return row.owner, bool(row.orphaned)
