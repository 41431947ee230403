"""The HTTP side of ``kalends serve``: the listening socket, uvicorn's server with the
signals left to kalends, and the addresses links name."""

from __future__ import annotations

import socket
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from kalends.errors import KalendsError

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "GRACEFUL_SECONDS",
    "SERVER_HTTP",
    "SERVER_LOOP",
    "CannotListen",
    "bracketed",
    "listen",
    "make_server",
    "url_host",
]

# The HTTP parser and event loop, named rather than left to what is installed: httptools
# parses a request in C (the h11 parser in Python cost about 0.1 ms more per request),
# and asyncio's own loop serves connections in the order their requests came, where
# uvloop let some wait ten times longer than the rest (p99 0.35-0.8 s against 32-62 ms
# over 50 connections, bench/api.py).
SERVER_HTTP: Final = "httptools"
SERVER_LOOP: Final = "asyncio"
# How long requests in flight may take to finish once a stop signal came.
GRACEFUL_SECONDS = 10
# Links name the loopback address when the server listens on every address.
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def url_host(host: str) -> str:
    """``host`` as links name it: the loopback address for a wildcard one."""
    return bracketed(_WILDCARD_HOSTS.get(host, host))


def bracketed(host: str) -> str:
    """``host`` as a URL names it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; else :class:`CannotListen` (address taken, unknown)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


class CannotListen(KalendsError):
    """The address is taken, unknown, or not this machine's."""

    code = "cannot-listen"


def make_server(config: uvicorn.Config, on_started: Callable[[], None]) -> uvicorn.Server:
    """uvicorn's server for ``config``, calling ``on_started`` once it listens."""
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
