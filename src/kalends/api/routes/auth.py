"""Login, logout, password change, one-time login links, API tokens and paired devices.

A device is paired with a one-time link that a session or an API token makes
(``POST /api/auth/devices``); the web pages answer the link and give the device's
browser its cookie. These routes list and revoke the caller's devices; a paired device
itself never calls them (its cookie is no credential of the API).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from kalends.api.context import CSRF_COOKIE, SESSION_COOKIE, ApiContext
from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.security import ContextDep, PrincipalDep, SessionPrincipalDep
from kalends.auth import (
    MAX_PASSWORD_LENGTH,
    MAX_TOKEN_LIFETIME,
    DevicePairing,
    SessionGrant,
    pairing_url,
)

router = APIRouter(prefix="/api", tags=["auth"], route_class=DispatchedRoute)

# A token lives at most a year (and a day, for leap years); the CLI asks for 90 days.
MAX_TOKEN_DAYS = 366
MAX_HANDLE = 64


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoginBody(Strict):
    handle: str = Field(min_length=1, max_length=MAX_HANDLE)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)


class ActorOut(BaseModel):
    id: UUID
    handle: str


class LoginOut(BaseModel):
    actor: ActorOut
    csrfToken: str = Field(description="Echo it in the X-CSRF-Token header on unsafe requests.")
    expiresAt: datetime


class MeOut(BaseModel):
    actor: ActorOut
    kind: str = Field(description="`session` or `token`.")
    account: dict[str, Any]


class PasswordBody(Strict):
    currentPassword: str | None = Field(default=None, max_length=MAX_PASSWORD_LENGTH)
    newPassword: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)


class TokenBody(Strict):
    name: str = Field(min_length=1, max_length=120)
    expiresInDays: int | None = Field(default=90, ge=1, le=MAX_TOKEN_DAYS)


class ExchangeBody(Strict):
    handle: str = Field(min_length=1, max_length=MAX_HANDLE)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)
    name: str = Field(min_length=1, max_length=120)
    expiresInDays: int | None = Field(default=90, ge=1, le=MAX_TOKEN_DAYS)


# A device's longest lifetime, in seconds, as a token's (kalends.auth.MAX_TOKEN_LIFETIME).
MAX_DEVICE_SECONDS = int(MAX_TOKEN_LIFETIME.total_seconds())


class DeviceBody(Strict):
    name: str = Field(min_length=1, max_length=120, description="What the device is.")
    expiresIn: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_DEVICE_SECONDS,
        description="How long the device stays paired once the link is opened, in seconds; "
        "null (the default): until revoked.",
    )


class PairingOut(BaseModel):
    pairingUrl: str = Field(
        description="Open it once in the device's browser; its secret is in it, shown once."
    )
    name: str
    expiresAt: datetime = Field(description="When the link stops working (15 minutes).")
    lifetimeSeconds: int | None = Field(
        description="How long the device stays paired once the link is opened; null: until revoked."
    )


class TokenOut(BaseModel):
    id: UUID
    name: str
    createdAt: datetime
    expiresAt: datetime | None
    revokedAt: datetime | None
    lastUsedAt: datetime | None
    active: bool
    device: bool = Field(
        default=False, description="A paired device's credential, not a program's token."
    )


class NewTokenOut(BaseModel):
    token: TokenOut
    secret: str = Field(description="Shown once; only its hash is stored.")


def _remote(request: Request) -> str:
    """The client's address: the peer's, or what a trusted proxy forwarded (uvicorn sets it
    only for the addresses of `kalends serve --forwarded-allow-ips`)."""
    return request.client.host if request.client else ""


def set_session_cookies(response: Response, ctx: ApiContext, grant: SessionGrant) -> None:
    """Sets the session's cookies: the HttpOnly secret and the CSRF token a page echoes
    (the API's login, a one-time link and the web sign-in form all open sessions so)."""
    max_age = max(1, int((grant.expires_at - ctx.services.store.clock.now()).total_seconds()))
    secure = ctx.settings.secure_cookies
    response.set_cookie(
        SESSION_COOKIE,
        grant.secret,
        max_age=max_age,
        httponly=True,
        samesite="lax",
        secure=secure,
        path="/",
    )
    response.set_cookie(
        CSRF_COOKIE,
        grant.csrf_token,
        max_age=max_age,
        httponly=False,
        samesite="strict",
        secure=secure,
        path="/",
    )


def _login_out(grant: SessionGrant) -> LoginOut:
    p = grant.principal
    return LoginOut(
        actor=ActorOut(id=p.actor_id, handle=p.handle),
        csrfToken=grant.csrf_token,
        expiresAt=grant.expires_at,
    )


@router.post(
    "/auth/login",
    summary="Log in with a handle and password; sets the session cookie",
    responses=error_responses(401, 422, 429),
)
def login(body: LoginBody, request: Request, response: Response, ctx: ContextDep) -> LoginOut:
    grant = ctx.accounts.login(body.handle, body.password, remote=_remote(request))
    set_session_cookies(response, ctx, grant)
    return _login_out(grant)


@router.get(
    "/auth/link",
    summary="Redeem a one-time login link (printed by the first start); sets the session cookie",
    status_code=303,
    responses=error_responses(401, 422),
)
def redeem_link(
    request: Request, ctx: ContextDep, token: Annotated[str, Query(min_length=1, max_length=256)]
) -> RedirectResponse:
    grant = ctx.accounts.redeem_login_link(token, remote=_remote(request))
    response = RedirectResponse("/", status_code=303)
    set_session_cookies(response, ctx, grant)
    return response


@router.post(
    "/auth/logout",
    summary="End this login session",
    status_code=204,
    responses=error_responses(401, 403),
)
def logout(request: Request, ctx: ContextDep, who: SessionPrincipalDep) -> Response:
    ctx.accounts.logout(request.cookies.get(SESSION_COOKIE, ""))
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/")
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


@router.get("/auth/me", summary="Who is calling", responses=error_responses(401))
def me(ctx: ContextDep, who: PrincipalDep) -> MeOut:
    return MeOut(
        actor=ActorOut(id=who.actor_id, handle=who.handle),
        kind=who.kind,
        account=ctx.accounts.account(who.actor_id),
    )


@router.post(
    "/auth/password",
    summary="Set or change the password; other sessions of the account end",
    status_code=204,
    responses=error_responses(401, 403, 409, 422, 429),
)
def change_password(
    body: PasswordBody, request: Request, ctx: ContextDep, who: SessionPrincipalDep
) -> Response:
    ctx.accounts.set_password(
        who.actor_id,
        body.newPassword,
        current_password=body.currentPassword,
        keep_session=who.credential_id,
        remote=_remote(request),
    )
    return Response(status_code=204)


def _days(value: int | None) -> timedelta | None:
    return None if value is None else timedelta(days=value)


@router.post(
    "/auth/tokens/exchange",
    summary="Trade a handle and password for a new API token (what `kalends login` does)",
    status_code=201,
    responses=error_responses(401, 422, 429),
)
def exchange(body: ExchangeBody, request: Request, ctx: ContextDep) -> NewTokenOut:
    grant = ctx.accounts.login(body.handle, body.password, remote=_remote(request))
    try:
        info, secret = ctx.accounts.create_token(
            grant.principal.actor_id, body.name, expires_in=_days(body.expiresInDays)
        )
    finally:
        ctx.accounts.logout(grant.secret)
    return NewTokenOut(token=TokenOut(**info.to_json()), secret=secret)


@router.get("/tokens", summary="Your API tokens", responses=error_responses(401))
def list_tokens(ctx: ContextDep, who: PrincipalDep) -> list[TokenOut]:
    return [TokenOut(**t.to_json()) for t in ctx.accounts.tokens(who.actor_id)]


@router.post(
    "/tokens",
    summary="Create an API token (needs a login session)",
    status_code=201,
    responses=error_responses(401, 403, 422),
)
def create_token(body: TokenBody, ctx: ContextDep, who: SessionPrincipalDep) -> NewTokenOut:
    info, secret = ctx.accounts.create_token(
        who.actor_id, body.name, expires_in=_days(body.expiresInDays)
    )
    return NewTokenOut(token=TokenOut(**info.to_json()), secret=secret)


@router.delete(
    "/tokens/{token_id}",
    summary="Revoke one of your API tokens",
    responses=error_responses(401, 403, 404, 422),
)
def revoke_token(token_id: UUID, ctx: ContextDep, who: PrincipalDep) -> TokenOut:
    return TokenOut(**ctx.accounts.revoke_token(who.actor_id, token_id).to_json())


# --- paired devices -----------------------------------------------------------------------


class DeviceOut(TokenOut):
    """A paired device (its credential, never its secret)."""


def _pairing_out(ctx: ApiContext, made: DevicePairing) -> PairingOut:
    return PairingOut(
        pairingUrl=pairing_url(ctx.settings.base_url, made.secret),
        name=made.name,
        expiresAt=made.expires_at,
        lifetimeSeconds=None if made.lifetime is None else int(made.lifetime.total_seconds()),
    )


@router.post(
    "/auth/devices",
    summary="Make a one-time link that pairs a device (open it in the device's browser)",
    status_code=201,
    responses=error_responses(401, 403, 409, 422),
)
def pair_device(body: DeviceBody, ctx: ContextDep, who: PrincipalDep) -> PairingOut:
    lifetime = None if body.expiresIn is None else timedelta(seconds=body.expiresIn)
    return _pairing_out(ctx, ctx.accounts.pair_device(who, body.name, lifetime))


@router.get("/auth/devices", summary="Your paired devices", responses=error_responses(401))
def list_devices(ctx: ContextDep, who: PrincipalDep) -> list[DeviceOut]:
    return [DeviceOut(**d.to_json()) for d in ctx.accounts.devices(who.actor_id)]


@router.delete(
    "/auth/devices/{device_id}",
    summary="Unpair one of your devices: it is refused from its next request on",
    responses=error_responses(401, 403, 404, 422),
)
def revoke_device(device_id: UUID, ctx: ContextDep, who: PrincipalDep) -> DeviceOut:
    return DeviceOut(**ctx.accounts.revoke_device(who, device_id).to_json())
