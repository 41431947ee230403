"""Who is calling: a cookie session (with CSRF protection) or an API token.

A request with ``Authorization: Bearer <token>`` is a token principal and never
looks at cookies: a token never poses as a cookie session. Otherwise the session
cookie names a server-side session; for unsafe methods its CSRF token must come
back in the ``X-CSRF-Token`` header. Expiry and revocation are checked on every
request, before any service runs.

A few routes also take a running passage's own token, ``Authorization: Passage <token>``
(:func:`principal_or_passage`): the route hands it to the service that checks it and
what it may reach. Everywhere else such a header is no credential at all.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal, cast

from fastapi import Depends, Request

from kalends.api.context import CSRF_HEADER, SESSION_COOKIE, ApiContext
from kalends.auth import Principal
from kalends.auth.accounts import Touch
from kalends.errors import Forbidden, Unauthenticated
from kalends.missions.runtime.server_passages import PassageTokenRefused

__all__ = [
    "PASSAGE_SECURITY_SCHEME",
    "ContextDep",
    "DeferredPrincipal",
    "PassageCaller",
    "PrincipalOrPassageDep",
    "PrincipalDep",
    "SECURITY_SCHEMES",
    "SessionPrincipalDep",
    "context",
    "principal",
    "principal_or_passage",
]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# How the OpenAPI document describes the two kinds of credentials (:func:`principal`
# reads them straight from the request; see ``kalends.api.app.document_security``).
SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "token": {
        "type": "http",
        "scheme": "bearer",
        "description": "An API token (`kalends token create`): `Authorization: Bearer kal_…`.",
    },
    "session": {
        "type": "apiKey",
        "in": "cookie",
        "name": SESSION_COOKIE,
        "description": (
            "A login session cookie (`POST /api/auth/login`); unsafe methods also need the "
            f"`{CSRF_HEADER}` header with the session's CSRF token."
        ),
    },
}


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


@dataclass(frozen=True, slots=True)
class DeferredPrincipal:
    """Credentials whose form was checked, looked up when the route starts
    (:mod:`kalends.api.dispatch`), in the route's own thread: one trip through the thread
    pool per request, not two, or none for a read run on the event loop.

    ``check`` is the lookup as a read only: the principal and the write recording the
    use, when one is due (:meth:`~kalends.auth.Accounts.check_token`).
    """

    kind: Literal["session", "token"]
    check: Callable[[], tuple[Principal, Touch | None]]

    def resolve(self) -> Principal:
        """The principal, the use recorded."""
        found, touch = self.check()
        if touch is not None:
            touch()
        return found


async def principal(request: Request) -> Principal:
    """The caller: 401 without valid credentials, 403 on a CSRF failure, before the route
    does anything.

    What needs no database is checked here, on the event loop; the session or token is
    looked up (expiry, revocation, the CSRF token's value) when the route starts, in its
    thread (the returned object is a :class:`DeferredPrincipal` until then).
    """
    ctx: ApiContext = request.app.state.kalends
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, secret = header.partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret:
            raise Unauthenticated("the Authorization header must be `Bearer <token>`")
        return cast(
            Principal,
            DeferredPrincipal("token", lambda: ctx.accounts.check_token(secret)),
        )
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        raise Unauthenticated("log in, or send an API token as `Authorization: Bearer <token>`")
    unsafe = request.method not in SAFE_METHODS
    sent = request.headers.get(CSRF_HEADER, "")
    if unsafe and not sent:
        raise CsrfFailed(f"send the session's CSRF token in the {CSRF_HEADER} header")

    def check() -> tuple[Principal, Touch | None]:
        found, touch = ctx.accounts.check_session(cookie)
        if unsafe and (
            not found.csrf_token
            or not hmac.compare_digest(sent.encode(), found.csrf_token.encode())
        ):
            raise CsrfFailed(f"send the session's CSRF token in the {CSRF_HEADER} header")
        return found, touch

    return cast(Principal, DeferredPrincipal("session", check))


PrincipalDep = Annotated[Principal, Depends(principal)]


async def session_principal(found: PrincipalDep) -> Principal:
    if found.kind == "session":
        return found
    if isinstance(found, DeferredPrincipal):
        token = found

        def refuse() -> tuple[Principal, Touch | None]:
            token.check()  # an unknown, expired or revoked token is 401 first
            raise SessionRequired()

        return cast(Principal, DeferredPrincipal("token", refuse))
    raise SessionRequired()


SessionPrincipalDep = Annotated[Principal, Depends(session_principal)]


PASSAGE_SECURITY_SCHEME = "passage"
"""The OpenAPI name of ``Authorization: Passage <token>`` (the passage report route's)."""


@dataclass(frozen=True, slots=True)
class PassageCaller:
    """A request made with a passage's token: not checked yet (the service checks it)."""

    token: str


async def principal_or_passage(request: Request) -> Principal | PassageCaller:
    """The caller as :func:`principal` finds it, or a passage's token when the request
    sends ``Authorization: Passage <token>`` (401 ``invalid-passage-token`` when the
    token is missing after the scheme)."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, secret = header.strip().partition(" ")
        if scheme.lower() == PASSAGE_SECURITY_SCHEME:
            token = secret.strip()
            if not token:
                raise PassageTokenRefused(
                    "send the passage's token (KALENDS_PASSAGE_TOKEN) as "
                    "`Authorization: Passage <token>`"
                )
            return PassageCaller(token)
    return await principal(request)


PrincipalOrPassageDep = Annotated[Principal | PassageCaller, Depends(principal_or_passage)]
