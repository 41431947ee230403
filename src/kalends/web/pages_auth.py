"""Sign in, sign out, paired devices and the theme: the pages' own credential forms.

Signing in opens the same session ``POST /api/auth/login`` opens (the same cookies), so a
page and a script in it are one login. The sign-in form is protected against login CSRF
by a double-submit token: a random value in a short-lived cookie and the form's hidden
field must agree. The one-time link the first start prints (``/api/auth/link``) also
signs in and lands on the Now page.

A paired device is a browser that holds a device credential instead of a login session
(seed 002, "Wayfinder human decision mark": an interface answer's principal is a login
session or a paired device). A signed-in person makes a one-time pairing link on
Settings (``POST /settings/devices``); the device's browser opens it (``GET
/pair/{secret}``: who it pairs as, until when the link is open, and a button) and
confirms (``POST /pair/{secret}``), which uses the link up and sets the HttpOnly device
cookie. Opening the link uses nothing, so a link preview cannot pair; the confirmation
carries a double-submit token as the sign-in form does, so another site cannot pair a
browser to an account of its choosing. Signing out of a device unpairs it.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import RedirectResponse, Response

from kalends.api.context import CSRF_COOKIE, DEVICE_COOKIE, SESSION_COOKIE, ApiContext
from kalends.api.errors import status_of
from kalends.api.routes.auth import set_session_cookies
from kalends.auth import DEVICE_PAIRING_TTL, PAIRING_PATH, DeviceGrant, instant_json
from kalends.errors import KalendsError, NotFound, RateLimited, Unauthenticated
from kalends.web.pages_settings import Forms, days_field, field_message, settings_response
from kalends.web.render import THEME_COOKIE, THEMES, WebRoute, render
from kalends.web.session import (
    CSRF_FIELD,
    Viewer,
    WebCsrfFailed,
    check_csrf,
    optional_viewer,
    refuse_device,
    viewer,
)

__all__ = ["router", "safe_next"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# The sign-in form's double-submit token (login CSRF): cookie and hidden field agree.
LOGIN_CSRF_COOKIE = "kalends_login_csrf"
LOGIN_CSRF_SECONDS = 30 * 60
# The hidden field of every form: the session's (or the sign-in form's) CSRF token.
CsrfField = Annotated[str, Form(alias=CSRF_FIELD, max_length=128)]
# A theme choice is kept for a year.
THEME_SECONDS = 365 * 24 * 3600
# What the sign-in page says after a sign-out (``/login?out=…``).
OUT_SIGNED = 1
OUT_UNPAIRED = 2

# The pairing form's double-submit token, as the sign-in form's: confirming a pairing
# signs a browser in. It outlives the pairing link itself (15 minutes).
PAIR_CSRF_COOKIE = "kalends_pair_csrf"
PAIR_CSRF_SECONDS = 30 * 60
# Where a pairing link points (``kalends.auth.pairing_url`` makes the address).
PAIR_PATH = PAIRING_PATH
# A pairing secret in the address, before any service reads it (the services know the
# real shape; this only bounds what is read).
PAIR_SECRET_CHARS = 256
# kalends decision: a device that never expires keeps its cookie 400 days, the longest
# a browser keeps any cookie (Chromium caps Max-Age there); a browser that comes back
# after that signs in again.
DEVICE_COOKIE_NEVER_SECONDS = 400 * 24 * 3600
# The bounds of a form's free text before any service reads it (the services say the
# real limits, a device name's 120 characters, beside the field).
FORM_TEXT = 8192

PairSecret = Annotated[str, Path(min_length=1, max_length=PAIR_SECRET_CHARS)]


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
    unpaired: bool = False,
    device_ended: bool = False,
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
            "unpaired": unpaired,
            "device_ended": device_ended,
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
    """The sign-in form; it says so when the browser was a paired device whose pairing
    ended (revoked or expired), and clears that device's cookie."""
    ended = _device_ended(request)
    response = _login_page(
        request,
        next_path=safe_next(next),
        signed_out=out in (OUT_SIGNED, OUT_UNPAIRED),
        unpaired=out == OUT_UNPAIRED,
        device_ended=ended,
    )
    if ended:
        response.delete_cookie(DEVICE_COOKIE, path="/")
    return response


def _device_ended(request: Request) -> bool:
    """Whether the browser holds a device cookie that no longer signs in (a read only:
    the device's use is not recorded here)."""
    secret = request.cookies.get(DEVICE_COOKIE)
    if not secret:
        return False
    ctx: ApiContext = request.app.state.kalends
    try:
        ctx.accounts.check_device(secret)
    except Unauthenticated:
        return True
    return False


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
    """Ends the login session; from a paired device, unpairs the device (it is revoked
    and its cookie cleared), since a device has no password to come back with."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    if who.device:
        return _unpair_self(who)
    request.app.state.kalends.accounts.logout(request.cookies.get(SESSION_COOKIE, ""))
    response = RedirectResponse(f"/login?out={OUT_SIGNED}", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


def _unpair_self(who: Viewer) -> Response:
    """Revokes the device ``who`` sees the pages through and clears its cookie."""
    who.context.accounts.revoke_device(who.principal, who.principal.credential_id)
    response = RedirectResponse(f"/login?out={OUT_UNPAIRED}", status_code=303)
    response.delete_cookie(DEVICE_COOKIE, path="/")
    return response


# --- pairing a device ------------------------------------------------------------------------


def _secure(request: Request) -> bool:
    """Whether a cookie is sent over https only: when the server says it is public over
    https, or this request came over https."""
    ctx: ApiContext = request.app.state.kalends
    return ctx.settings.secure_cookies or request.url.scheme == "https"


def _pairing_gone(request: Request, exc: NotFound) -> Response:
    """The page of a pairing link that cannot be used (unknown, used or expired): 404,
    what to do instead, and nothing written."""
    response = render(
        request,
        "pair.html",
        {
            "title": "Pairing link not usable",
            "gone": exc.message,
            "facts": None,
            "link_minutes": int(DEVICE_PAIRING_TTL.total_seconds() // 60),
        },
        who=optional_viewer(request),
        status=404,
    )
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@router.get(PAIR_PATH + "/{secret}")
def pairing_page(request: Request, secret: PairSecret) -> Response:
    """Who the link pairs this browser as, until when it is open, and the button that
    pairs it (opening the link uses nothing: a link preview cannot pair)."""
    ctx: ApiContext = request.app.state.kalends
    try:
        facts = ctx.accounts.pairing_facts(secret)
    except NotFound as exc:
        return _pairing_gone(request, exc)
    who = optional_viewer(request)
    token = secrets.token_urlsafe(24)
    response = render(
        request,
        "pair.html",
        {
            "title": "Pair this browser",
            "gone": "",
            "facts": {
                "name": facts.name,
                "handle": facts.handle,
                "expires": instant_json(facts.expires_at),
            },
            "pair_csrf": token,
            "action": f"{PAIR_PATH}/{secret}",
        },
        who=who,
    )
    # The secret is in this page's address: no other site learns it from a link here.
    response.headers["Referrer-Policy"] = "no-referrer"
    response.set_cookie(
        PAIR_CSRF_COOKIE,
        token,
        max_age=PAIR_CSRF_SECONDS,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
        path=PAIR_PATH,
    )
    return response


def _set_device_cookie(request: Request, response: Response, grant: DeviceGrant) -> None:
    """Sets the device cookie: HttpOnly, SameSite=Lax, for the whole site, over https only
    when the request came so, for as long as the device stays paired (or
    :data:`DEVICE_COOKIE_NEVER_SECONDS` for one that never expires)."""
    ctx: ApiContext = request.app.state.kalends
    if grant.expires_at is None:
        max_age = DEVICE_COOKIE_NEVER_SECONDS
    else:
        left = grant.expires_at - ctx.services.store.clock.now()
        max_age = max(1, int(left.total_seconds()))
    response.set_cookie(
        DEVICE_COOKIE,
        grant.secret,
        max_age=max_age,
        httponly=True,
        samesite="lax",
        secure=_secure(request),
        path="/",
    )


@router.post(PAIR_PATH + "/{secret}")
def pair_this_browser(request: Request, secret: PairSecret, csrf: CsrfField = "") -> Response:
    """Uses the pairing link up, sets this browser's device cookie and opens the Now page;
    a link unknown, used or expired is its page again (404) and nothing is written."""
    ctx: ApiContext = request.app.state.kalends
    expected = request.cookies.get(PAIR_CSRF_COOKIE, "")
    if not csrf or not expected or not hmac.compare_digest(csrf.encode(), expected.encode()):
        raise WebCsrfFailed("the pairing form expired: open the pairing link again")
    try:
        grant = ctx.accounts.redeem_pairing(secret)
    except NotFound as exc:
        return _pairing_gone(request, exc)
    response = RedirectResponse("/", status_code=303)
    _set_device_cookie(request, response, grant)
    response.delete_cookie(PAIR_CSRF_COOKIE, path=PAIR_PATH)
    return response


# --- paired devices on Settings -------------------------------------------------------------


@router.post("/settings/devices")
def pair_device(
    request: Request,
    csrf: CsrfField = "",
    name: Annotated[str, Form(max_length=FORM_TEXT)] = "",
    expires_in_days: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    """Makes a one-time pairing link for a new device of the viewer; the answer is the
    Settings page with the link, shown this once. A paired device pairs no other."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    refuse_device(who, "pairing a device")
    lifetime, problem = days_field(expires_in_days, "device")
    keep = {"device_name": name[:200], "device_days": expires_in_days[:20]}
    if problem:
        forms = Forms(errors={"device_days": problem}, **keep)
        return settings_response(request, who, forms=forms, status=422)
    try:
        made = who.context.accounts.pair_device(who.principal, name, expires_in=lifetime)
    except KalendsError as exc:
        field = exc.details.get("field")
        if field not in ("name", "expires_in"):
            raise
        key = "device_name" if field == "name" else "device_days"
        forms = Forms(errors={key: field_message(exc)}, **keep)
        return settings_response(request, who, forms=forms, status=status_of(exc))
    return settings_response(request, who, new_pairing=made, status=201)


@router.post("/settings/devices/{device_id}/revoke")
def revoke_device(request: Request, device_id: UUID, csrf: CsrfField = "") -> Response:
    """Revokes one of the viewer's paired devices (another's is not found); a device may
    revoke only itself, which signs it out."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    if who.device and device_id == who.principal.credential_id:
        return _unpair_self(who)
    who.context.accounts.revoke_device(who.principal, device_id)
    return RedirectResponse("/settings?done=device-revoked#devices", status_code=303)


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
