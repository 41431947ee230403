"""The lost-reply proxy of the browser tests, against a small HTTP server in this process:
it forwards requests and answers as they are, and loses the one reply it is armed for
after the server has done the write."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from .browser_support import HOST, LostReplyProxy, wait_for


class Recorder(ThreadingHTTPServer):
    """Answers every request with its method and path; keeps every POST body."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__((HOST, 0), Handler)
        self.posted: list[bytes] = []
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        port: int = self.server_address[1]
        return port


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real server
    server: Recorder

    def do_GET(self) -> None:
        self.answer(f"GET {self.path}".encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.posted.append(body)
        self.answer(b"POST " + self.path.encode() + b" " + body)

    def answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def proxy(recorder: Recorder) -> Iterator[LostReplyProxy]:
    with LostReplyProxy(recorder.port) as started:
        yield started


def test_requests_and_answers_pass_through_on_one_connection(
    recorder: Recorder, proxy: LostReplyProxy
) -> None:
    with httpx.Client(base_url=proxy.base_url, timeout=5.0) as client:
        assert client.get("/a").text == "GET /a"
        assert client.post("/b", content=b"x" * 100_000).text == "POST /b " + "x" * 100_000
        assert client.get("/c?d=1").text == "GET /c?d=1"
    assert proxy.requests == [("GET", "/a"), ("POST", "/b"), ("GET", "/c?d=1")]


def test_the_armed_request_is_done_and_its_reply_lost_once(
    recorder: Recorder, proxy: LostReplyProxy
) -> None:
    seen_by_callback: list[list[bytes]] = []

    def on_reply() -> None:
        with recorder.lock:
            seen_by_callback.append(list(recorder.posted))

    trap = proxy.arm("post", "/control", on_reply)
    with httpx.Client(base_url=proxy.base_url, timeout=5.0) as client:
        # Another method, or another path: passed on as usual.
        assert client.get("/s/control").text == "GET /s/control"
        assert client.post("/s/other", content=b"1").text == "POST /s/other 1"
        assert not trap.fired.is_set()

        with pytest.raises(httpx.RemoteProtocolError):
            client.post("/s/control", content=b"pause")
        wait_for(trap.fired, "the trap to fire")
        # The server had taken the write when the callback ran; its answer had begun.
        [posted] = seen_by_callback
        assert posted[-2:] == [b"1", b"pause"]
        assert trap.lost is not None
        assert (trap.lost.method, trap.lost.target) == ("POST", "/s/control")
        assert trap.lost.answer_start.startswith(b"HTTP/1.1 200")

        # The trap fired once: the next such request is answered.
        assert client.post("/s/control", content=b"play").text == "POST /s/control play"
    assert recorder.posted[-2:] == [b"pause", b"play"]


def test_while_the_server_is_down_the_browser_gets_a_closed_connection(
    recorder: Recorder,
) -> None:
    with socket_port_nobody_listens_on() as port, LostReplyProxy(port) as proxy:
        with (
            httpx.Client(base_url=proxy.base_url, timeout=5.0) as client,
            pytest.raises(httpx.RemoteProtocolError),
        ):
            client.get("/readyz")
        # Pointed at the server again, it forwards.
        proxy.upstream_port = recorder.port
        with httpx.Client(base_url=proxy.base_url, timeout=5.0) as client:
            assert client.get("/readyz").text == "GET /readyz"


@contextmanager
def socket_port_nobody_listens_on() -> Iterator[int]:
    """A loopback port that was just free: bound, never listened on, released at exit."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        yield port
