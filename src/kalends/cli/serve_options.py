"""The options of ``kalends serve`` that are checked here: address, port, log level,
public base URL and trusted proxies (each refused with :class:`InvalidInput`)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from kalends.errors import InvalidInput

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ENV_BASE_URL",
    "ENV_FORWARDED_ALLOW_IPS",
    "LOG_LEVELS",
    "check_base_url",
    "check_forwarded_allow_ips",
    "check_host",
    "check_log_level",
    "check_port",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
ENV_BASE_URL = "KALENDS_BASE_URL"
ENV_FORWARDED_ALLOW_IPS = "KALENDS_FORWARDED_ALLOW_IPS"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def check_port(text: str) -> int:
    """``text`` as a port to listen on, 0 for a free one."""
    value = text.strip()
    if re.fullmatch(r"[0-9]{1,5}", value) is None or int(value) > 65535:
        raise InvalidInput(
            f"port: a whole number from 0 to 65535 (0 picks a free port), got {text!r}",
            field="port",
        )
    return int(value)


def check_host(text: str) -> str:
    """``text`` as an address or host name to listen on, without IPv6 brackets."""
    host = text.strip()
    if not host or any(c.isspace() for c in host):
        raise InvalidInput(f"host: an address or host name, got {text!r}", field="host")
    return host.removeprefix("[").removesuffix("]")


def check_log_level(text: str) -> str:
    """``text`` as one of :data:`LOG_LEVELS`."""
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
