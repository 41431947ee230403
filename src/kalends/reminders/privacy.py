"""What in a destination URL is secret, and keeping it out of replies and logs.

A destination URL carries passwords, tokens and keys in many places: the user
information, the path (``jsons://host/webhook/TOKEN``, a Discord or Slack web hook's
address), the query (``?token=…``), even the host (an ntfy topic, ``ntfy://topic``).
Apprise's privacy form hides only what each of its services declares secret, so
kalends shows less, by one rule whatever the service (its decision):

* shown: the scheme; a host name with a dot, ``localhost`` or an IP address; the
  port; the user name when a password follows it (a login, its password the secret)
  and on e-mail URLs; e-mail addresses in the path of an e-mail URL; the argument
  names, and the values of the arguments in :data:`SHOWN_ARGUMENTS`;
* masked as ``****``: the password, any other host or user, every other path
  segment, every other argument value, a fragment. What Apprise already abbreviated
  (``a...z``) stays so.

So a path never shows: a topic, a web hook's token or an endpoint name alike.

Logs: Apprise logs URLs itself, a mistyped one in full at error level. The filter
:func:`install_log_redaction` puts on Apprise's loggers rewrites each record: every
URL in it shows as the rule above shows it, and every secret of the URLs kalends is
handing to Apprise at that moment (:func:`handing_to_apprise`) is masked wherever it
appears. Both are plain text work: the filter never calls Apprise.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode

__all__ = [
    "APPRISE_LOGGERS",
    "MASK",
    "SHOWN_ARGUMENTS",
    "handing_to_apprise",
    "install_log_redaction",
    "masked_url",
    "redact_text",
    "secret_parts",
]

MASK = "****"

SHOWN_ARGUMENTS = frozenset(
    {
        "format",
        "overflow",
        "method",
        "mode",
        "priority",
        "auth",
        "smtp",
        "from",
        "to",
        "cc",
        "bcc",
        "name",
        "cto",
        "rto",
        "tags",
    }
)
"""kalends decision: URL arguments that choose how a message is sent, never who may send
it, so their values are shown; every other argument's value is masked."""

APPRISE_LOGGERS = ("apprise", "apprise.xmpp")
"""The loggers Apprise writes to (a logger's filter does not see its children's records)."""

EMAIL_SCHEMES = frozenset({"mailto", "mailtos"})

# Shorter parts are left alone in logs: masking every "to" or "id" would garble them.
_MIN_SECRET_LENGTH = 3
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,31}):?//")
# A URL inside a log message (also one missing the colon, as a mistyped one may).
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}:?//[^\s'\"<>]+")
# How Apprise abbreviates a token: its first and last character.
_ABBREVIATED = re.compile(r"^[^/:@?&=#]\.\.\.[^/:@?&=#]$")
_EMAIL = re.compile(r"^[^@\s/:]+@[^@\s/:]+\.[^@\s/:]+$")
_IP = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


@dataclass(frozen=True, slots=True)
class _Url:
    """A URL cut into its parts by text alone: it need not be well formed."""

    scheme: str | None
    user: str | None
    password: str | None
    host: str
    port: str | None
    path: str | None
    query: str | None
    fragment: str | None


def _split(url: str) -> _Url:
    text = url.strip()
    found = _SCHEME.match(text)
    scheme = found.group(1).lower() if found else None
    rest = text[found.end() :] if found else text
    rest, hashed, fragment = rest.partition("#")
    rest, asked, query = rest.partition("?")
    authority, slashed, path = rest.partition("/")
    userinfo, at, hostport = authority.rpartition("@")
    user, colon, password = userinfo.partition(":")
    host, port = hostport, None
    if not hostport.startswith("[") or "]:" in hostport:
        head, sep, tail = hostport.rpartition(":")
        if sep and tail.isdigit():
            host, port = head, tail
    return _Url(
        scheme=scheme,
        user=user if at else None,
        password=password if at and colon else None,
        host=host,
        port=port,
        path=path if slashed else None,
        query=query if asked else None,
        fragment=fragment if hashed else None,
    )


def _already_masked(part: str) -> bool:
    return part == MASK or bool(_ABBREVIATED.match(part))


def _shown_host(host: str) -> bool:
    name = unquote(host).lower()
    return (
        _already_masked(host)
        or name == "localhost"
        or name.startswith("[")
        or bool(_IP.match(name))
        or ("." in name and not name.startswith(".") and not name.endswith("."))
    )


def _mask(url: str, hidden: set[str] | None = None) -> str:
    """``url`` as the module's rule shows it; the parts masked are added to ``hidden``."""
    parts = _split(url)
    secrets: list[str] = []

    def keep(part: str, shown: bool) -> str:
        if shown or not part or _already_masked(part):
            return part
        secrets.append(part)
        return MASK

    email = parts.scheme in EMAIL_SCHEMES
    out = f"{parts.scheme or 'unknown'}://"
    if parts.user is not None:
        out += keep(parts.user, email or parts.password is not None)
        if parts.password is not None:
            out += ":" + keep(parts.password, False)
        out += "@"
    out += keep(parts.host, _shown_host(parts.host))
    if parts.port is not None:
        out += f":{parts.port}"
    if parts.path is not None:
        segments = parts.path.split("/")
        out += "/" + "/".join(keep(s, email and bool(_EMAIL.match(unquote(s)))) for s in segments)
    if parts.query is not None:
        # Apprise reads '+' in a URL literally (custom headers are "+Name=value").
        pairs = parse_qsl(parts.query.replace("+", "%2B"), keep_blank_values=True)
        shown = [(k, keep(v, k.lower() in SHOWN_ARGUMENTS)) for k, v in pairs]
        if shown:
            out += "?" + urlencode(shown, safe="*@:/")
    if parts.fragment is not None:
        out += "#" + keep(parts.fragment, False)
    if hidden is not None:
        for secret in secrets:
            hidden.update({secret, unquote(secret)})
    return out


def masked_url(privacy_form: str) -> str:
    """The display of a destination: Apprise's privacy form of its URL, masked further
    by the module's rule."""
    return _mask(privacy_form)


def secret_parts(url: str) -> set[str]:
    """The parts of ``url`` (as given, and unquoted) the module's rule masks, of at least
    three characters: what must not appear in a log line or an error message."""
    hidden: set[str] = set()
    _mask(url, hidden)
    return {part for part in hidden if len(part) >= _MIN_SECRET_LENGTH}


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each URL in it masked by the module's rule and each of ``secrets``
    replaced by ``****`` (the longest first, so no part of one survives another)."""
    text = _URL_IN_TEXT.sub(lambda found: _mask(found.group(0)), text)
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_LENGTH:
            text = text.replace(secret, MASK)
    return text


# The secrets of the URLs being handed to Apprise now, by any thread: Apprise may log
# from threads of its own, so a context variable would not reach them.
_in_use: Counter[str] = Counter()
_in_use_lock = threading.Lock()


@contextmanager
def handing_to_apprise(urls: Iterable[str]) -> Iterator[None]:
    """While the block runs, Apprise's log records mask the secrets of ``urls``."""
    secrets: set[str] = set()
    for url in urls:
        if isinstance(url, str):
            secrets |= secret_parts(url)
    with _in_use_lock:
        _in_use.update(secrets)
    try:
        yield
    finally:
        with _in_use_lock:
            _in_use.subtract(secrets)
            for secret in secrets:
                if _in_use[secret] <= 0:
                    del _in_use[secret]


class _Redaction(logging.Filter):
    """Rewrites an Apprise log record with :func:`redact_text`; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _in_use_lock:
            secrets = list(_in_use)
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format
            message = str(record.msg)
        record.msg = redact_text(message, secrets)
        record.args = None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact_text(text, secrets)
            record.exc_info = None
        return True


_installed = False
_install_lock = threading.Lock()


def install_log_redaction() -> None:
    """Puts the redacting filter on :data:`APPRISE_LOGGERS`, once per process."""
    global _installed
    with _install_lock:
        if _installed:
            return
        redaction = _Redaction()
        for name in APPRISE_LOGGERS:
            logging.getLogger(name).addFilter(redaction)
        _installed = True
