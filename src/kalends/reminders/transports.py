"""How a reminder leaves kalends: e-mail and push through Apprise, or nowhere (benchmarks).

A :class:`Delivery` is one reminder intent for one recipient on one channel, with
the Apprise URLs of that recipient's destinations. A :class:`Transport` sends it
or raises :class:`DeliveryFailed`; the outbox decides what a failure means.

Delivery is at least once: a reminder whose acknowledgement is lost is sent
again. So every message carries its idempotency key, the reminder intent's ID:

* always in the body, whose last line is ``Reminder ID: <job_id>``;
* as the headers ``Idempotency-Key`` and ``X-Kalends-Reminder`` wherever the
  Apprise service takes custom headers (its URL accepts ``+Header=value``):
  e-mail (``mailto``/``mailtos``) and the generic web hooks (``json``, ``form``,
  ``xml`` and their secure forms) among others. ntfy, Gotify and Pushover take
  none: there the body alone carries the key.

Apprise reads no configuration file here: only the URLs given, with persistent
storage kept in memory. This module also holds what kalends knows about Apprise
URLs (:func:`apprise_service`, :func:`redacted_url`), which the notification
settings use to validate and display them; what of a URL is shown, and what Apprise
may log of it, is :mod:`kalends.reminders.privacy`'s rule.

Apprise is imported when it is first needed (a send, a URL to read), not with this
module: importing it and its plugins costs about 100 ms, which every command of the
command line would pay otherwise.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, unquote, urlencode
from uuid import UUID

from kalends.errors import DeliveryFailed
from kalends.reminders.privacy import (
    EMAIL_SCHEMES,
    handing_to_apprise,
    install_log_redaction,
    masked_url,
    secret_parts,
)

if TYPE_CHECKING:
    import apprise

__all__ = [
    "CONNECT_TIMEOUT_SECONDS",
    "EMAIL_SCHEMES",
    "IDEMPOTENCY_HEADERS",
    "READ_TIMEOUT_SECONDS",
    "REMINDER_ID_LABEL",
    "SERVICE_TIMEOUT_SECONDS",
    "AppriseTransport",
    "Delivery",
    "DeliveryFailed",
    "NullTransport",
    "Transport",
    "apprise_service",
    "body_with_key",
    "redacted_url",
    "url_scheme",
]

# kalends decision: a destination that does not answer within these bounds is a
# failed attempt, retried later by the outbox, rather than a stuck worker.
CONNECT_TIMEOUT_SECONDS = 10.0
READ_TIMEOUT_SECONDS = 20.0
# The most one destination may take in all (Apprise reports a timeout after it).
SERVICE_TIMEOUT_SECONDS = 60.0

REMINDER_ID_LABEL = "Reminder ID:"
IDEMPOTENCY_HEADERS = ("Idempotency-Key", "X-Kalends-Reminder")

_SCHEME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.-]{0,31})://")
# What separates the parts of a URL: the parts hidden by Apprise's privacy form are secrets.
_URL_PARTS = re.compile(r"[\s/:@?&=#,;+]+")
_MIN_SECRET_LENGTH = 3
_REDACTED = "****"
# URL arguments Apprise's privacy form repeats verbatim: custom headers and payload extras.
_VERBATIM_PREFIXES = ("+", ":")


@dataclass(frozen=True, slots=True)
class Delivery:
    """One reminder for one recipient on one channel, and where it goes."""

    job_id: str
    channel: str
    destinations: tuple[str, ...]
    recipient: str
    recipient_name: str
    recipient_email: str | None
    title: str
    body: str
    task_id: UUID
    task_ref: str
    at: datetime

    def __repr__(self) -> str:
        # Destination URLs may hold passwords and tokens: keep them out of logs.
        return (
            f"Delivery(job_id={self.job_id!r}, channel={self.channel!r}, "
            f"destinations=<{len(self.destinations)}>, recipient={self.recipient!r}, "
            f"task_ref={self.task_ref!r}, at={self.at.isoformat()})"
        )


class Transport(Protocol):
    """Sends one delivery, or raises :class:`DeliveryFailed`."""

    def send(self, delivery: Delivery) -> None: ...


class NullTransport:
    """Accepts every delivery and only counts them: the worker's cost without the network."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent = 0

    @property
    def sent(self) -> int:
        with self._lock:
            return self._sent

    def send(self, delivery: Delivery) -> None:
        with self._lock:
            self._sent += 1


class AppriseTransport:
    """Sends each delivery to every destination URL with Apprise, synchronously.

    Holds no state between sends, so worker threads may share one instance.
    ``connect_timeout`` and ``read_timeout`` apply to destinations whose URL sets
    no ``cto``/``rto`` of its own.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        read_timeout: float = READ_TIMEOUT_SECONDS,
        service_timeout: float = SERVICE_TIMEOUT_SECONDS,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.service_timeout = service_timeout
        # Made on the first send: making it loads Apprise and every plugin of it, which a
        # server or worker that sends no reminder need not pay for at its start.
        self._made: apprise.AppriseAsset | None = None
        self._making = threading.Lock()

    @property
    def _asset(self) -> apprise.AppriseAsset:
        if self._made is None:
            with self._making:
                if self._made is None:
                    self._made = _new_asset(self.service_timeout)
        return self._made

    def send(self, delivery: Delivery) -> None:
        import apprise  # noqa: PLC0415 (imported on first use)

        if not delivery.destinations:
            raise DeliveryFailed(f"no {delivery.channel} destination")
        defaults = {
            "cto": self.connect_timeout,
            "rto": self.read_timeout,
            # The body is plain text: send it as such unless the URL asks otherwise.
            "format": apprise.NotifyFormat.TEXT,
        }
        headers = dict.fromkeys(IDEMPOTENCY_HEADERS, delivery.job_id)
        notifier = apprise.Apprise(asset=self._asset)
        labels: list[tuple[int, str]] = []
        secrets: set[str] = set()
        failures: list[tuple[int, str]] = []
        for number, url in enumerate(delivery.destinations, start=1):
            found = _service(url, self._asset, defaults, headers)
            if found is None:
                scheme = url_scheme(url)
                what = f"{scheme}:// URL" if scheme else "URL"
                failures.append((number, f"destination {number}: Apprise cannot use this {what}"))
                continue
            service, _ = found
            shown = masked_url(_compact(_privacy_url(service), url))
            secrets |= _hidden_parts(url, shown) | secret_parts(url)
            labels.append((number, f"destination {number} ({service.service_name})"))
            notifier.add(service)
        delivered = 0
        if labels:
            with handing_to_apprise(delivery.destinations):
                reasons, status = self._notify(notifier, delivery)
            for index, (number, label) in enumerate(labels):
                reason = reasons[index] if index < len(reasons) else f"not sent ({status})"
                if reason is None:
                    delivered += 1
                else:
                    failures.append((number, f"{label}: {reason}"))
        if failures:
            total = len(delivery.destinations)
            prefix = f"{delivery.channel}: "
            if total > 1:
                prefix += f"{total - delivered} of {total} destinations failed: "
            message = _redact(prefix + "; ".join(text for _, text in sorted(failures)), secrets)
            raise DeliveryFailed(message, delivered=delivered)

    @staticmethod
    def _notify(notifier: apprise.Apprise, delivery: Delivery) -> tuple[list[str | None], str]:
        """Why each service (in the order added) failed, ``None`` if it accepted; the status."""
        import apprise  # noqa: PLC0415 (imported on first use)

        try:
            result = notifier.notify(
                body=body_with_key(delivery.body, delivery.job_id),
                title=delivery.title,
                body_format=apprise.NotifyFormat.TEXT,
                log_level=logging.WARNING,
            )
        except Exception as error:  # Apprise reports failures; anything else is its bug
            # Only the type: an exception's text may quote a URL.
            return [], f"Apprise raised {type(error).__name__}"
        with result:
            reasons = [None if outcome else _reason(outcome) for outcome in result.results]
            return reasons, result.status.name.lower()


# --- what kalends knows about Apprise URLs -------------------------------------------------

# Apprise's registry of services (one per process), its plugins loaded: see _plugins().
_manager: apprise.NotificationManager | None = None
_load_lock = threading.Lock()
_default_asset: apprise.AppriseAsset | None = None


def url_scheme(url: str) -> str | None:
    """The URL's scheme in lower case, or ``None`` when the text has no plain ``scheme://``."""
    match = _SCHEME.match(url) if isinstance(url, str) else None
    return match.group(1).lower() if match else None


def apprise_service(url: str) -> tuple[str, str] | None:
    """The Apprise scheme a URL resolves to and its display; ``None`` if unusable.

    The display is Apprise's privacy form masked further
    (:func:`kalends.reminders.privacy.masked_url`). Native service URLs (e.g. a Discord
    webhook's ``https://`` address) resolve to their Apprise scheme, which is why the
    scheme is returned.
    """
    global _default_asset
    if _default_asset is None:
        _default_asset = _new_asset(SERVICE_TIMEOUT_SECONDS)
    found = _service(url, _default_asset, {}, {})
    if found is None:
        return None
    service, scheme = found
    return scheme, masked_url(_compact(_privacy_url(service), url))


def redacted_url(url: str) -> str:
    """The display of ``url`` (see :func:`apprise_service`); ``scheme://****`` when Apprise
    cannot read it.

    Of the URL arguments the form lists, only those the URL itself gives are kept
    (Apprise spells out every default); their values are the privacy form's.
    """
    found = apprise_service(url)
    if found is not None:
        return found[1]
    return f"{url_scheme(url) or 'unknown'}://{_REDACTED}"


def body_with_key(body: str, job_id: str) -> str:
    """The body, ending with the line ``Reminder ID: <job_id>`` (added when missing)."""
    line = f"{REMINDER_ID_LABEL} {job_id}"
    text = body.rstrip()
    if text.splitlines()[-1:] == [line]:
        return text
    return f"{text}\n\n{line}" if text else line


def _plugins() -> apprise.NotificationManager:
    """Apprise's registry of services, its plugins loaded once, before any URL is read.

    Imports Apprise on first use, its loggers redacted
    (:func:`kalends.reminders.privacy.install_log_redaction`) before it reads a URL. On
    Python < 3.13 one of Apprise's e-mail helpers imports the deprecated ``imghdr``
    module; that known warning is silenced here, once, and no other.
    """
    global _manager
    if _manager is not None:
        return _manager
    with _load_lock:
        if _manager is None:
            with warnings.catch_warnings():
                warnings.filterwarnings(
                    "ignore", message="'imghdr' is deprecated", category=DeprecationWarning
                )
                import apprise  # noqa: PLC0415 (imported on first use)

                manager = apprise.NotificationManager()  # type: ignore[no-untyped-call]
                manager.load_modules()  # type: ignore[no-untyped-call]
            install_log_redaction()
            _manager = manager
        return _manager


def _new_asset(service_timeout: float) -> apprise.AppriseAsset:
    """Apprise's settings for kalends: memory-only storage, UTC, no templates, no config files."""
    _plugins()
    import apprise  # noqa: PLC0415 (imported on first use)

    return apprise.AppriseAsset(
        storage_mode="memory",
        timezone="UTC",
        language="en",
        allow_templates=False,
        secure_logging=True,
        service_timeout=service_timeout,
        app_id="kalends",
        app_desc="kalends reminders",
    )


def _service(
    url: str,
    asset: apprise.AppriseAsset,
    defaults: Mapping[str, Any],
    headers: Mapping[str, str],
) -> tuple[apprise.NotifyBase, str] | None:
    """Apprise's service for ``url`` and the scheme it resolved to; ``None`` if unusable.

    ``defaults`` fill the URL arguments the URL leaves unset. ``headers`` join the
    service's custom headers (ours win), for a service that takes them: one whose
    URL accepts ``+Header=value``.
    """
    if not isinstance(url, str) or not url.strip():
        return None
    manager = _plugins()
    import apprise  # noqa: PLC0415 (imported on first use)
    from apprise.plugins import url_to_dict  # noqa: PLC0415 (imported on first use)

    with handing_to_apprise([url]):
        parsed = url_to_dict(url.strip(), secure_logging=True)  # type: ignore[no-untyped-call]
        if not isinstance(parsed, dict) or not isinstance(parsed.get("schema"), str):
            return None
        scheme = parsed["schema"].lower()
        if scheme not in manager:
            return None
        given = parsed.get("qsd") or {}
        for key, value in defaults.items():
            if key not in parsed and key not in given:
                parsed[key] = value
        if headers and _takes_headers(manager[scheme]):
            parsed["headers"] = {**(parsed.get("headers") or {}), **headers}
        service = apprise.Apprise.instantiate(parsed, asset=asset)
    if not isinstance(service, apprise.NotifyBase):
        return None
    return service, scheme


def _takes_headers(plugin: object) -> bool:
    kwargs = getattr(plugin, "template_kwargs", None)
    if not isinstance(kwargs, Mapping):
        return False
    spec = kwargs.get("headers")
    return isinstance(spec, Mapping) and spec.get("prefix") == "+"


def _privacy_url(service: apprise.NotifyBase) -> str:
    return str(service.url(privacy=True))  # type: ignore[no-untyped-call]


def _compact(privacy_form: str, url: str) -> str:
    """The privacy form without the arguments the URL does not give.

    Apprise's privacy form shows custom headers (``+Name=value``) and payload
    extras (``:name=value``) as given, and those often carry API keys: their
    values are masked too.
    """
    base, _, query = privacy_form.partition("?")
    # Apprise reads '+' in a URL literally (custom headers are "+Name=value").
    asked = url.partition("?")[2].replace("+", "%2B")
    given = {k.lower() for k, _ in parse_qsl(asked, keep_blank_values=True)}
    kept = [
        (k, _REDACTED if k[:1] in _VERBATIM_PREFIXES else v)
        for k, v in parse_qsl(query, keep_blank_values=True)
        if k.lower() in given
    ]
    return f"{base}?{urlencode(kept, safe='*@:/')}" if kept else base


def _hidden_parts(url: str, privacy_form: str) -> set[str]:
    """The parts of ``url`` Apprise's privacy form leaves out: passwords, tokens, keys."""
    shown = unquote(privacy_form)
    parts = {unquote(p) for p in _URL_PARTS.split(url)} | set(_URL_PARTS.split(url))
    return {p for p in parts if len(p) >= _MIN_SECRET_LENGTH and p not in shown}


def _redact(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    return text


def _reason(outcome: apprise.NotifyResult) -> str:
    import apprise  # noqa: PLC0415 (imported on first use)

    messages = [
        entry.message.strip()
        for entry in outcome.logs()
        if entry.level in {"WARNING", "ERROR", "CRITICAL"} and entry.message.strip()
    ]
    if messages:
        return " / ".join(dict.fromkeys(messages))
    if outcome.status == apprise.AppriseResultStatus.TIMEOUT:
        return "timed out"
    return "not accepted"
