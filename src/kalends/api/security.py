"""Who is calling: a cookie session (with CSRF protection) or an API token.

A request with ``Authorization: Bearer <token>`` is a token principal and never
looks at cookies: a token never poses as a cookie session. Otherwise the session
cookie names a server-side session; for unsafe methods its CSRF token must come
back in the ``X-CSRF-Token`` header. Expiry and revocation are checked on every
request, before any service runs.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer

from kalends.api.context import CSRF_HEADER, SESSION_COOKIE, ApiContext
from kalends.auth import Principal
from kalends.errors import Forbidden, Unauthenticated

__all__ = [
    "ContextDep",
    "PrincipalDep",
    "SessionPrincipalDep",
    "context",
    "principal",
]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="token",
    description="An API token (`kalends token create`): `Authorization: Bearer kal_…`.",
)
_cookie = APIKeyCookie(
    name=SESSION_COOKIE,
    auto_error=False,
    scheme_name="session",
    description=(
        "A login session cookie (`POST /api/auth/login`); unsafe methods also need the "
        f"`{CSRF_HEADER}` header with the session's CSRF token."
    ),
)


async def context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.kalends
    return ctx


ContextDep = Annotated[ApiContext, Depends(context)]


class CsrfFailed(Forbidden):
    """The CSRF token is missing or wrong: a cookie session's unsafe request needs it."""

    code = "csrf-failed"


class SessionRequired(Forbidden):
    """This needs a login session; an API token cannot do it."""

    code = "session-required"


def principal(
    request: Request,
    ctx: ContextDep,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    cookie: Annotated[str | None, Depends(_cookie)],
) -> Principal:
    """The authenticated caller; 401 without valid credentials, 403 on a CSRF failure."""
    header = request.headers.get("authorization")
    if header is not None:
        if bearer is None or bearer.scheme.lower() != "bearer" or not bearer.credentials:
            raise Unauthenticated("the Authorization header must be `Bearer <token>`")
        return ctx.accounts.authenticate_token(bearer.credentials)
    if not cookie:
        raise Unauthenticated("log in, or send an API token as `Authorization: Bearer <token>`")
    found = ctx.accounts.authenticate_session(cookie)
    if request.method not in SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER, "")
        if not found.csrf_token or not hmac.compare_digest(
            sent.encode(), found.csrf_token.encode()
        ):
            raise CsrfFailed(f"send the session's CSRF token in the {CSRF_HEADER} header")
    return found


PrincipalDep = Annotated[Principal, Depends(principal)]


async def session_principal(found: PrincipalDep) -> Principal:
    if found.kind != "session":
        raise SessionRequired()
    return found


SessionPrincipalDep = Annotated[Principal, Depends(session_principal)]
