"""Who is looking at a page: the API's own cookie session or a paired device, and the CSRF
check of a form.

The web pages and the HTTP API share one login session: the cookie ``/api/auth/login``
or a one-time link sets is the cookie these pages read, and the session's CSRF token is
the one a page puts in every form it renders (a hidden ``csrf`` field) and the htmx
requests echo in the ``X-CSRF-Token`` header. A browser paired as a device (its pairing
link opened and confirmed on ``/pair/…``) holds the device cookie instead; the device's
credential carries a CSRF token of its own, used the same way. A live login session
takes precedence over the device cookie; each is looked up with its expiry and
revocation on every request, so a revoked or expired device is signed out at its next
page. A page without either sends the browser to the sign-in page and back; an unsafe
request whose token does not match is refused before any service runs. An API token is
no credential here: pages are for people.

A device reads and acts on the pages as its actor (the services check the actor's
roles), but manages no credentials: :func:`refuse_device` says so on the few Settings
writes that would create or revoke a way in (seed 002, "Wayfinder human decision mark",
"The UI principal is explicit…": a device ID never poses as a cookie session).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from urllib.parse import quote

from fastapi import Request

from kalends.api.context import CSRF_HEADER, DEVICE_COOKIE, SESSION_COOKIE, ApiContext
from kalends.auth import Principal
from kalends.errors import Forbidden, KalendsError, Unauthenticated

__all__ = [
    "CSRF_FIELD",
    "DeviceRefused",
    "SignInRequired",
    "Viewer",
    "WebCsrfFailed",
    "check_csrf",
    "optional_viewer",
    "refuse_device",
    "sign_in_url",
    "viewer",
]

# The hidden field every form carries: the session's CSRF token.
CSRF_FIELD = "csrf"


class SignInRequired(KalendsError):
    """This page needs a login session: the browser is sent to the sign-in page."""

    code = "sign-in-required"

    def __init__(self, back_to: str) -> None:
        super().__init__()
        self.back_to = back_to


class WebCsrfFailed(Forbidden):
    """The form did not carry this session's CSRF token: reload the page and try again."""

    code = "csrf-failed"


class DeviceRefused(Forbidden):
    """A paired device manages no credentials: sign in with your password to do this."""

    code = "device-refused"


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in person a page is rendered for, through a login session or a paired
    device (``principal.kind``)."""

    principal: Principal
    context: ApiContext

    @property
    def actor(self) -> str:
        return str(self.principal.actor_id)

    @property
    def handle(self) -> str:
        return self.principal.handle

    @property
    def csrf(self) -> str:
        return self.principal.csrf_token or ""

    @property
    def device(self) -> bool:
        """Whether the page is seen through a paired device rather than a login session."""
        return self.principal.kind == "device"


def sign_in_url(back_to: str) -> str:
    """The sign-in page, returning to ``back_to`` (a path on this server) afterwards."""
    return "/login" if back_to in ("", "/") else f"/login?next={quote(back_to, safe='/')}"


def viewer(request: Request) -> Viewer:
    """The page's viewer: the login session of the session cookie, else the paired device
    of the device cookie; :class:`SignInRequired` when neither is live.

    Each credential is looked up with its expiry and revocation (a session cookie that no
    longer signs in leaves the device cookie to be tried); the write recording its use
    (at most once a minute) is made here too, as the API does.
    """
    found = optional_viewer(request)
    if found is None:
        back_to = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInRequired(back_to)
    return found


def optional_viewer(request: Request) -> Viewer | None:
    """:func:`viewer`, or ``None`` when the browser has no live session nor device (for a
    page anyone may open, such as a pairing link's)."""
    ctx: ApiContext = request.app.state.kalends
    session = request.cookies.get(SESSION_COOKIE)
    device = request.cookies.get(DEVICE_COOKIE)
    checks = ((session, ctx.accounts.check_session), (device, ctx.accounts.check_device))
    for secret, check in checks:
        if not secret:
            continue
        try:
            found, touch = check(secret)
        except Unauthenticated:
            continue
        if touch is not None:
            touch()
        return Viewer(found, ctx)
    return None


def refuse_device(who: Viewer, what: str) -> None:
    """Refuses ``what`` (a credential's creation or revocation, or a new place reminders
    go) to a paired device: :class:`DeviceRefused`, before any service runs."""
    if who.device:
        raise DeviceRefused(
            f"{what}: a paired device cannot do this; sign in with your password "
            "in a browser of your own to do it"
        )


def check_csrf(request: Request, who: Viewer, field: str | None) -> None:
    """Refuses an unsafe request whose form field (``field``) or ``X-CSRF-Token`` header
    does not carry the session's (or the device's) CSRF token (compared in constant
    time)."""
    sent = field or request.headers.get(CSRF_HEADER, "")
    expected = who.csrf
    if not sent or not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise WebCsrfFailed()
