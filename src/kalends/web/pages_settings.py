"""The viewer's settings: reminder destinations, API tokens, paired devices, calendar feeds,
theme and clock.

Thin callers, as the other pages: the viewer's notification settings through
:class:`~kalends.cli.reminder_client.DestinationSettingsClient` and their API tokens
through :class:`~kalends.cli.account_client.AccountsClient` and their calendar feeds
through :class:`~kalends.cli.feed_client.FeedsClient`, with the viewer as both the
acting actor and the target; the services check that one may only see and change one's
own. A destination's URL holds secrets, so the page never holds it: it lists each by its
redacted form and names it in its forms by channel and position. A new token's secret is
in the answer to the post that made it, never in an address, and is not shown again; so
is a new calendar feed's address, whose secret is its credential, and a new device
pairing link (its writes are :mod:`kalends.web.pages_auth`'s, beside the pairing page).

A paired device sees its actor's settings but manages no credentials (seed 002,
"Wayfinder human decision mark": a device ID never poses as a cookie session): it cannot
create or revoke API tokens or calendar feeds, pair devices or add a reminder
destination — those forms are not shown to it and their posts are refused — and among
the devices it can only unpair itself.

Every write posts the session's CSRF token and lands back on the page with a short
status (``?done=…``, a word from a fixed table); a refused form is the page again with
the error beside its field. Theme and clock are cookies, read by every page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from kalends.api.errors import status_of
from kalends.auth import MAX_TOKEN_LIFETIME, DevicePairing, TokenInfo, instant_json, pairing_url
from kalends.cli.account_client import AccountsClient
from kalends.cli.feed_client import FeedsClient
from kalends.cli.reminder_client import DestinationSettingsClient
from kalends.errors import KalendsError
from kalends.feeds import FeedInfo, NewFeed
from kalends.reminders.channels import Channel
from kalends.reminders.destinations import MAX_DESTINATIONS, Destination, SendTestResult
from kalends.web.render import (
    CLOCK_COOKIE,
    CLOCKS,
    THEME_COOKIE,
    THEMES,
    WebRoute,
    render,
    viewer_clock,
)
from kalends.web.session import CSRF_FIELD, Viewer, check_csrf, refuse_device, viewer

__all__ = [
    "DEFAULT_DEVICE_DAYS",
    "Forms",
    "days_field",
    "field_message",
    "router",
    "settings_response",
]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

PAGE = "/settings"
# Theme and clock choices are kept for a year.
COOKIE_SECONDS = 365 * 24 * 3600
# What a new token's expiry field starts with, in days (what the command line asks for).
DEFAULT_TOKEN_DAYS = 90
# What a new device pairing's lifetime field starts with, in days (kalends decision: a
# season, as a token's).
DEFAULT_DEVICE_DAYS = 90
# The bounds of a form's free text before any service reads it: the services say the
# real limits (a token name's 120 characters, a URL's 2000) beside the field.
FORM_TEXT = 8192

CsrfField = Annotated[str, Form(alias=CSRF_FIELD, max_length=128)]
ChannelField = Annotated[str, Form(max_length=32)]
PositionField = Annotated[int, Form(ge=1, le=1_000_000)]

CHANNELS = (
    (Channel.EMAIL.value, "Email", "mailto:// or mailtos://"),
    (Channel.PUSH.value, "Push", "ntfy://, gotify://, pover://, json:// and more"),
)
# The statuses a write lands back with (``?done=``); nothing else is said from an address.
DONE = {
    "added": "Destination added.",
    "removed": "Destination removed.",
    "revoked": "Token revoked: it no longer signs anything in.",
    "appearance": "Theme and clock saved.",
    "feed-revoked": "Calendar feed revoked: its address answers nothing from now on.",
    "device-revoked": "Device revoked: its browser is signed out at its next page.",
}
_SERVICE_PATH = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")


def _destinations(who: Viewer) -> DestinationSettingsClient:
    return who.context.services.destinations


def _accounts(who: Viewer) -> AccountsClient:
    return who.context.accounts


def _feeds(who: Viewer) -> FeedsClient:
    return who.context.services.feeds


@dataclass(frozen=True, slots=True)
class Forms:
    """What the page's forms show: typed values kept, errors by field."""

    errors: dict[str, str]
    channel: str = Channel.PUSH.value
    token_name: str = ""
    token_days: str = str(DEFAULT_TOKEN_DAYS)
    device_name: str = ""
    device_days: str = str(DEFAULT_DEVICE_DAYS)


def field_message(exc: KalendsError) -> str:
    """A refusal's message beside its field: without the service's path, as a sentence."""
    message = _SERVICE_PATH.sub("", exc.message, count=1)
    return message[:1].upper() + message[1:]


def _token_row(token: TokenInfo) -> dict[str, Any]:
    if token.revoked_at is not None:
        state = "revoked"
    elif token.active:
        state = "active"
    else:
        state = "expired"
    return {
        "id": str(token.id),
        "name": token.name,
        "created": instant_json(token.created_at),
        "last_used": instant_json(token.last_used_at),
        "expires": instant_json(token.expires_at),
        "revoked": instant_json(token.revoked_at),
        "state": state,
    }


def _device_row(device: TokenInfo, who: Viewer) -> dict[str, Any]:
    """A paired device as the list shows it: a token's facts, and whether it is the
    browser the page is seen through."""
    return {
        **_token_row(device),
        "this": who.device and device.id == who.principal.credential_id,
    }


def _pairing(made: DevicePairing, who: Viewer) -> dict[str, Any]:
    """A new pairing link as the page shows it, once: the link, its expiry, how many
    minutes it is open for, and how long the device will stay paired."""
    left = made.expires_at - who.context.services.store.clock.now()
    return {
        "name": made.name,
        "url": pairing_url(who.context.settings.base_url, made.secret),
        "expires": instant_json(made.expires_at),
        "minutes": max(1, round(left.total_seconds() / 60)),
        "lifetime_days": None if made.lifetime is None else made.lifetime.days,
    }


def _feed_row(feed: FeedInfo) -> dict[str, Any]:
    return {
        "id": str(feed.id),
        "created": instant_json(feed.created_at),
        "last_used": instant_json(feed.last_used_at),
        "revoked": instant_json(feed.revoked_at),
        "active": feed.active,
    }


def _destination_row(d: Destination) -> dict[str, Any]:
    return {
        "channel": d.channel.value,
        "position": d.position,
        "display": d.display,
        "added": instant_json(d.created_at),
    }


def settings_response(
    request: Request,
    who: Viewer,
    *,
    forms: Forms | None = None,
    done: str = "",
    tested: SendTestResult | None = None,
    new_token: tuple[TokenInfo, str] | None = None,
    new_feed: NewFeed | None = None,
    new_pairing: DevicePairing | None = None,
    status: int = 200,
) -> Response:
    """The Settings page for ``who``: with a write's outcome (``done``, a key of the
    page's table), a refused form's values and errors, or what a write made and shows
    this once (a token's secret, a feed's address, a device's pairing link)."""
    shown = forms or Forms(errors={})
    found = _destinations(who).list(who.actor, who.actor)
    by_channel = {
        value: [_destination_row(d) for d in found if d.channel.value == value]
        for value, _, _ in CHANNELS
    }
    tokens = [_token_row(t) for t in _accounts(who).tokens(who.principal.actor_id) if not t.device]
    devices = [_device_row(d, who) for d in who.context.accounts.devices(who.principal.actor_id)]
    feeds = [_feed_row(f) for f in _feeds(who).list(who.principal.actor_id)]
    test_result = None
    if tested is not None:
        test_result = {
            **_destination_row(tested.destination),
            "sent": tested.sent,
            "error": tested.error or "",
            "at": instant_json(tested.at),
        }
    errors = shown.errors
    first = next(iter(errors), "")
    return render(
        request,
        "settings.html",
        {
            "title": "Settings",
            # A post's answer is this page: its forms return here, not to the post.
            "path": PAGE,
            "done": DONE.get(done, ""),
            "channels": CHANNELS,
            "by_channel": by_channel,
            "max_destinations": MAX_DESTINATIONS,
            "tokens": tokens,
            "new_token": (
                None
                if new_token is None
                else {"row": _token_row(new_token[0]), "secret": new_token[1]}
            ),
            "devices": devices,
            "new_pairing": None if new_pairing is None else _pairing(new_pairing, who),
            "feeds": feeds,
            "new_feed": (
                None if new_feed is None else {"row": _feed_row(new_feed.feed), "url": new_feed.url}
            ),
            "tested": test_result,
            "forms": shown,
            "field_errors": errors,
            "first_error": first,
            "max_token_days": MAX_TOKEN_LIFETIME.days,
            "device_viewer": who.device,
            "clock_choice": viewer_clock(request),
        },
        who=who,
        status=status,
    )


def _back(done: str, anchor: str) -> RedirectResponse:
    return RedirectResponse(f"{PAGE}?done={done}#{anchor}", status_code=303)


@router.get(PAGE)
def settings_page(request: Request, done: Annotated[str, Query(max_length=32)] = "") -> Response:
    """The viewer's destinations, API tokens, theme and clock."""
    who = viewer(request)
    return settings_response(request, who, done=done)


@router.post(PAGE + "/destinations")
def add_destination(
    request: Request,
    csrf: CsrfField = "",
    channel: ChannelField = "",
    url: Annotated[str, Form(max_length=FORM_TEXT)] = "",
) -> Response:
    """Adds one destination; a refused URL or channel is said beside its field (the URL
    is not put back in the form: a page never shows it)."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    refuse_device(who, "adding a reminder destination")
    try:
        _destinations(who).add(who.actor, who.actor, channel, url)
    except KalendsError as exc:
        field = exc.details.get("field")
        if field not in ("url", "channel"):
            raise
        forms = Forms(errors={f"dest_{field}": field_message(exc)}, channel=channel)
        return settings_response(request, who, forms=forms, status=status_of(exc))
    return _back("added", "destinations")


@router.post(PAGE + "/destinations/remove")
def remove_destination(
    request: Request, position: PositionField, csrf: CsrfField = "", channel: ChannelField = ""
) -> Response:
    """Removes the destination at that position of the channel."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    _destinations(who).remove_at(who.actor, who.actor, channel, position)
    return _back("removed", "destinations")


@router.post(PAGE + "/destinations/test")
def test_destination(
    request: Request, position: PositionField, csrf: CsrfField = "", channel: ChannelField = ""
) -> Response:
    """Sends one test message to that destination now; the page says what became of it
    (a send writes nothing, so the answer is the page itself, not a redirect)."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    tested = _destinations(who).send_test(who.actor, who.actor, channel, position)
    return settings_response(request, who, tested=tested)


def days_field(text: str, what: str = "token") -> tuple[timedelta | None, str]:
    """The lifetime an expiry field asks for (blank: none), or why it cannot be read
    (``what`` never expires when it is left blank: a token, a device)."""
    said = text.strip()
    if not said:
        return None, ""
    most = MAX_TOKEN_LIFETIME.days
    if not said.isdigit() or not 1 <= int(said) <= most:
        return None, (
            f"Expires after: a whole number of days from 1 to {most}, got {said[:20]!r}; "
            f"leave it blank for a {what} that never expires"
        )
    return timedelta(days=int(said)), ""


@router.post(PAGE + "/tokens")
def create_token(
    request: Request,
    csrf: CsrfField = "",
    name: Annotated[str, Form(max_length=FORM_TEXT)] = "",
    expires_in_days: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    """Creates an API token; the answer shows its secret this once."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    refuse_device(who, "creating an API token")
    lifetime, problem = days_field(expires_in_days)
    keep = {"token_name": name[:200], "token_days": expires_in_days[:20]}
    if problem:
        forms = Forms(errors={"token_days": problem}, **keep)
        return settings_response(request, who, forms=forms, status=422)
    try:
        made = _accounts(who).create_token(who.principal.actor_id, name, expires_in=lifetime)
    except KalendsError as exc:
        if exc.details.get("field") not in ("name", "expires_in"):
            raise
        key = "token_name" if exc.details.get("field") == "name" else "token_days"
        forms = Forms(errors={key: field_message(exc)}, **keep)
        return settings_response(request, who, forms=forms, status=status_of(exc))
    return settings_response(request, who, new_token=made, status=201)


@router.post(PAGE + "/tokens/{token_id}/revoke")
def revoke_token(request: Request, token_id: UUID, csrf: CsrfField = "") -> Response:
    """Revokes one of the viewer's tokens (another's is not found)."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    refuse_device(who, "revoking an API token")
    _accounts(who).revoke_token(who.principal.actor_id, token_id)
    return _back("revoked", "tokens")


@router.post(PAGE + "/feeds")
def create_feed(request: Request, csrf: CsrfField = "") -> Response:
    """Creates a calendar feed; the answer shows its address (the secret in it) this once."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    refuse_device(who, "creating a calendar feed")
    made = _feeds(who).create(who.principal.actor_id, base_url=who.context.settings.base_url)
    return settings_response(request, who, new_feed=made, status=201)


@router.post(PAGE + "/feeds/{feed_id}/revoke")
def revoke_feed(request: Request, feed_id: UUID, csrf: CsrfField = "") -> Response:
    """Revokes one of the viewer's calendar feeds (another's is not found)."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    refuse_device(who, "revoking a calendar feed")
    _feeds(who).revoke(who.principal.actor_id, feed_id)
    return _back("feed-revoked", "feed")


@router.post(PAGE + "/appearance")
def appearance(
    request: Request,
    csrf: CsrfField = "",
    theme: Annotated[str, Form(max_length=16)] = "",
    clock: Annotated[str, Form(max_length=8)] = "",
) -> Response:
    """Keeps the theme (system, light, dark) and the clock (12 or 24 hours) in cookies."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    response = _back("appearance", "appearance")
    if theme in THEMES:
        response.set_cookie(THEME_COOKIE, theme, max_age=COOKIE_SECONDS, samesite="lax", path="/")
    else:
        response.delete_cookie(THEME_COOKIE, path="/")
    if clock in CLOCKS:
        response.set_cookie(CLOCK_COOKIE, clock, max_age=COOKIE_SECONDS, samesite="lax", path="/")
    else:
        response.delete_cookie(CLOCK_COOKIE, path="/")
    return response
