"""Sign in, sign out and the theme: the pages' own session forms.

Signing in opens the same session ``POST /api/auth/login`` opens (the same cookies), so a
page and a script in it are one login. The sign-in form is protected against login CSRF
by a double-submit token: a random value in a short-lived cookie and the form's hidden
field must agree. The one-time link the first start prints (``/api/auth/link``) also
signs in and lands on the Now page.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from kalends.api.context import CSRF_COOKIE, SESSION_COOKIE, ApiContext
from kalends.api.routes.auth import set_session_cookies
from kalends.errors import RateLimited, Unauthenticated
from kalends.web.render import THEME_COOKIE, THEMES, WebRoute, render
from kalends.web.session import CSRF_FIELD, WebCsrfFailed, check_csrf, viewer

__all__ = ["router", "safe_next"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# The sign-in form's double-submit token (login CSRF): cookie and hidden field agree.
LOGIN_CSRF_COOKIE = "kalends_login_csrf"
LOGIN_CSRF_SECONDS = 30 * 60
# The hidden field of every form: the session's (or the sign-in form's) CSRF token.
CsrfField = Annotated[str, Form(alias=CSRF_FIELD, max_length=128)]
# A theme choice is kept for a year.
THEME_SECONDS = 365 * 24 * 3600


def safe_next(value: str | None) -> str:
    """Where to go after a form: a path on this server only (never ``//host`` nor a URL)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def _login_page(
    request: Request,
    *,
    next_path: str,
    handle: str = "",
    error: str = "",
    status: int = 200,
    signed_out: bool = False,
) -> Response:
    token = secrets.token_urlsafe(24)
    response = render(
        request,
        "login.html",
        {
            "title": "Sign in",
            "next": next_path,
            "handle": handle,
            "error": error,
            "signed_out": signed_out,
            "login_csrf": token,
        },
        status=status,
    )
    ctx: ApiContext = request.app.state.kalends
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        token,
        max_age=LOGIN_CSRF_SECONDS,
        httponly=True,
        samesite="strict",
        secure=ctx.settings.secure_cookies,
        path="/login",
    )
    return response


@router.get("/login")
def login_page(request: Request, next: str | None = None, out: int = 0) -> Response:
    return _login_page(request, next_path=safe_next(next), signed_out=out == 1)


@router.post("/login")
def login(
    request: Request,
    handle: Annotated[str, Form(max_length=64)] = "",
    password: Annotated[str, Form(max_length=1024)] = "",
    next: Annotated[str, Form(max_length=2048)] = "/",
    csrf: CsrfField = "",
) -> Response:
    ctx: ApiContext = request.app.state.kalends
    back_to = safe_next(next)
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not csrf or not expected or not hmac.compare_digest(csrf.encode(), expected.encode()):
        raise WebCsrfFailed("the sign-in form expired: load the sign-in page again")
    if not handle or not password:
        return _login_page(
            request,
            next_path=back_to,
            handle=handle,
            error="Enter your handle and your password.",
            status=422,
        )
    try:
        remote = request.client.host if request.client else ""
        grant = ctx.accounts.login(handle, password, remote=remote)
    except Unauthenticated as exc:
        return _login_page(request, next_path=back_to, handle=handle, error=exc.message, status=401)
    except RateLimited as exc:
        return _login_page(request, next_path=back_to, handle=handle, error=exc.message, status=429)
    response = RedirectResponse(back_to, status_code=303)
    set_session_cookies(response, ctx, grant)
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    return response


@router.post("/logout")
def logout(request: Request, csrf: CsrfField = "") -> Response:
    who = viewer(request)
    check_csrf(request, who, csrf)
    request.app.state.kalends.accounts.logout(request.cookies.get(SESSION_COOKIE, ""))
    response = RedirectResponse("/login?out=1", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


@router.post("/theme")
def theme(
    request: Request,
    csrf: CsrfField = "",
    theme: Annotated[str, Form(max_length=16)] = "",
    next: Annotated[str, Form(max_length=2048)] = "/",
) -> Response:
    who = viewer(request)
    check_csrf(request, who, csrf)
    chosen = theme
    back_to = safe_next(next)
    response = RedirectResponse(back_to, status_code=303)
    if chosen in THEMES:
        response.set_cookie(THEME_COOKIE, chosen, max_age=THEME_SECONDS, samesite="lax", path="/")
    else:
        response.delete_cookie(THEME_COOKIE, path="/")
    return response
