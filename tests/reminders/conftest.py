"""Real receivers for reminder deliveries: an SMTP server and an HTTP server on 127.0.0.1.

``smtp_server`` is aiosmtpd speaking plain SMTP (no TLS, no login) on a free
port; :meth:`SmtpServer.url` builds the Apprise ``mailto://`` URL that reaches
it. ``http_receiver`` is a threading HTTP server answering ``200 {}`` (or, once
told, ``500``); its ``json_url`` and ``ntfy_url`` build Apprise URLs for it.
Both record everything they receive and shut down when the test ends.
"""

from __future__ import annotations

import email
import email.policy
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

HOST = "127.0.0.1"
# How many times a fixture tries another free port when one is taken meanwhile.
PORT_ATTEMPTS = 5


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (at the moment of asking)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


# --- SMTP -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceivedMail:
    """One message as the server received it."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    message: Message

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def text(self) -> str:
        """The decoded text of the message (its first text part)."""
        for part in self.message.walk():
            if part.get_content_maintype() == "text":
                payload = part.get_payload(decode=True)
                charset = part.get_content_charset() or "utf-8"
                return payload.decode(charset) if isinstance(payload, bytes) else ""
        return ""


class _Recorder:
    """aiosmtpd handler: accepts every message and keeps it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.messages: list[ReceivedMail] = []

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        message = email.message_from_bytes(content, policy=email.policy.compat32)
        received = ReceivedMail(
            mail_from=str(envelope.mail_from),
            rcpt_tos=tuple(envelope.rcpt_tos),
            message=message,
        )
        with self.lock:
            self.messages.append(received)
        return "250 OK"


@dataclass(slots=True)
class SmtpServer:
    """A running plain-SMTP server and what it received."""

    port: int
    _recorder: _Recorder
    sender: str = "kalends@example.org"

    @property
    def messages(self) -> list[ReceivedMail]:
        with self._recorder.lock:
            return list(self._recorder.messages)

    def url(self, recipient: str, **args: str) -> str:
        """The Apprise URL that mails ``recipient`` through this server, in plain SMTP.

        ``mailto://`` (not ``mailtos://``) with ``mode=insecure``: no STARTTLS, no login.
        """
        query = {"from": self.sender, "mode": "insecure", **args}
        params = "&".join(f"{k}={v}" for k, v in query.items())
        return f"mailto://{HOST}:{self.port}/{recipient}?{params}"


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    recorder = _Recorder()
    controller: Controller | None = None
    for _ in range(PORT_ATTEMPTS):
        candidate = Controller(recorder, hostname=HOST, port=free_port(), ready_timeout=5.0)
        try:
            candidate.start()
        except (OSError, TimeoutError):
            continue
        controller = candidate
        break
    assert controller is not None, "no free port for the SMTP server"
    try:
        yield SmtpServer(port=controller.port, _recorder=recorder)
    finally:
        controller.stop()


# --- HTTP -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        """A header's value, whatever the case of its name."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


@dataclass(slots=True)
class HttpReceiver:
    """A running HTTP server and what it received.

    It answers ``status`` after waiting ``delay`` seconds (to test read timeouts).
    """

    port: int
    status: int = 200
    delay: float = 0.0
    requests: list[ReceivedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> list[ReceivedRequest]:
        with self.lock:
            return list(self.requests)

    def json_url(self, path: str = "hook", **args: str) -> str:
        """An Apprise ``json://`` URL posting to ``/path`` here."""
        return self._url("json", path, args)

    def ntfy_url(self, topic: str = "reminders", **args: str) -> str:
        """An Apprise ``ntfy://`` URL publishing to ``topic`` here (ntfy's JSON API on ``/``)."""
        return self._url("ntfy", topic, args)

    def _url(self, scheme: str, path: str, args: dict[str, str]) -> str:
        query = "&".join(f"{k}={v}" for k, v in args.items())
        return f"{scheme}://{HOST}:{self.port}/{path}" + (f"?{query}" if query else "")


def _handler(receiver: HttpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self._record()

        def do_PUT(self) -> None:
            self._record()

        def do_GET(self) -> None:
            self._record()

        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with receiver.lock:
                receiver.requests.append(
                    ReceivedRequest(
                        method=self.command,
                        path=self.path,
                        headers=dict(self.headers.items()),
                        body=body,
                    )
                )
                status, delay = receiver.status, receiver.delay
            if delay:
                time.sleep(delay)
            answer = b"{}"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            """Keeps the test output quiet."""

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a read timeout under test) is no error of the test's."""


@pytest.fixture
def http_receiver() -> Iterator[HttpReceiver]:
    receiver = HttpReceiver(port=0)
    server = _QuietServer((HOST, 0), _handler(receiver))
    receiver.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="http-receiver"
    )
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on: connections to it are refused."""
    return free_port()
