"""Who is looking at a page: the API's own cookie session, and the CSRF check of a form.

The web pages and the HTTP API share one login session: the cookie ``/api/auth/login``
or a one-time link sets is the cookie these pages read, and the session's CSRF token is
the one a page puts in every form it renders (a hidden ``csrf`` field) and the htmx
requests echo in the ``X-CSRF-Token`` header. A page without a valid session sends the
browser to the sign-in page and back; an unsafe request whose token does not match is
refused before any service runs. An API token is no credential here: pages are for people.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from urllib.parse import quote

from fastapi import Request

from kalends.api.context import CSRF_HEADER, SESSION_COOKIE, ApiContext
from kalends.auth import Principal
from kalends.errors import Forbidden, KalendsError, Unauthenticated

__all__ = [
    "CSRF_FIELD",
    "SignInRequired",
    "WebCsrfFailed",
    "Viewer",
    "check_csrf",
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


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in person a page is rendered for."""

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


def sign_in_url(back_to: str) -> str:
    """The sign-in page, returning to ``back_to`` (a path on this server) afterwards."""
    return "/login" if back_to in ("", "/") else f"/login?next={quote(back_to, safe='/')}"


def viewer(request: Request) -> Viewer:
    """The page's viewer from the session cookie; :class:`SignInRequired` without one.

    The session is looked up with its expiry and revocation; the write recording its use
    (at most once a minute) is made here too, as the API does.
    """
    ctx: ApiContext = request.app.state.kalends
    back_to = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        raise SignInRequired(back_to)
    try:
        found, touch = ctx.accounts.check_session(cookie)
    except Unauthenticated as exc:
        raise SignInRequired(back_to) from exc
    if touch is not None:
        touch()
    return Viewer(found, ctx)


def check_csrf(request: Request, who: Viewer, field: str | None) -> None:
    """Refuses an unsafe request whose form field (``field``) or ``X-CSRF-Token`` header
    does not carry the session's CSRF token (compared in constant time)."""
    sent = field or request.headers.get(CSRF_HEADER, "")
    expected = who.csrf
    if not sent or not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise WebCsrfFailed()
