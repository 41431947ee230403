"""Rendering pages: one Jinja2 environment (autoescaped), the filters the templates use
to show times, and the route class that turns a service's refusal into a page.

Every time a page shows is an instant written as a wall time in a zone (the schedule's,
else UTC) inside ``<time datetime="…">`` with the zone named, and, when it is near, how
far away it is; the filters below do it, with the clock the services run on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, StrictUndefined, pass_context, select_autoescape
from jinja2.runtime import Context
from markupsafe import Markup

from kalends import __version__
from kalends.api.context import ApiContext
from kalends.api.errors import status_of
from kalends.civil import get_zone
from kalends.civil.zones import to_naive_datetime
from kalends.errors import InvalidInput, KalendsError, UnknownZone
from kalends.web.schedule_display import ACTION_LABELS
from kalends.web.session import CSRF_FIELD, SignInRequired, Viewer, sign_in_url

__all__ = [
    "CLOCKS",
    "CLOCK_COOKIE",
    "HTMX_FILE",
    "THEME_COOKIE",
    "THEMES",
    "WebRoute",
    "environment",
    "instant",
    "render",
    "wall",
]

TEMPLATES = Path(__file__).parent / "templates"
# The one vendored script the pages use, pinned by its file name.
HTMX_FILE = "htmx-2.0.11.min.js"
# The stored theme override: "light", "dark", or absent (the system's preference).
THEME_COOKIE = "kalends_theme"
THEMES = ("light", "dark")
# The viewer's own zone, as the browser reports it (set by the pages' script).
ZONE_COOKIE = "kalends_zone"
# The stored clock choice: "12" (2:30 PM) or "24" (14:30, also when absent).
CLOCK_COOKIE = "kalends_clock"
CLOCKS = ("12", "24")
DEFAULT_CLOCK = "24"


def instant_text(at: datetime) -> str:
    """An instant as the ``time_tag`` filter and the documents write it (UTC, ``…Z``)."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def instant(text: str | None) -> datetime | None:
    """An ISO instant as the documents write it (``…Z``), or ``None``."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def wall(
    text: str | None, zone: str | None = None, *, seconds: bool = False, hour12: bool = False
) -> str:
    """The wall time of an ISO instant in ``zone`` (UTC when unknown), without the zone:
    ``2026-03-08 03:00 Sun``, or with ``hour12`` ``2026-03-08 3:00 AM Sun``."""
    at = instant(text)
    if at is None:
        return "—"
    epoch = int(at.timestamp())
    try:
        tz = get_zone(zone or "UTC")
    except UnknownZone:
        tz = get_zone("UTC")
    tz.cover(epoch)
    local = to_naive_datetime(epoch + tz.offset_at(epoch))
    with_seconds = seconds or bool(local.second)
    if not hour12:
        shown = "%Y-%m-%d %H:%M:%S %a" if with_seconds else "%Y-%m-%d %H:%M %a"
        return local.strftime(shown)
    clock = f"{local.hour % 12 or 12}:{local:%M}" + (f":{local:%S}" if with_seconds else "")
    return f"{local:%Y-%m-%d} {clock} {'AM' if local.hour < 12 else 'PM'} {local:%a}"


def relative(text: str | None, now: datetime) -> str:
    """How far an instant is from ``now``: ``in 3 h 5 min``, ``12 min ago``, ``now``."""
    at = instant(text)
    if at is None:
        return ""
    delta = int((at - now).total_seconds())
    ahead, span = delta >= 0, abs(delta)
    if span < 60:
        return "now"
    days, rest = divmod(span, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        said = f"{days} d {hours} h" if hours and days < 3 else f"{days} d"
    elif hours:
        said = f"{hours} h {minutes} min" if minutes else f"{hours} h"
    else:
        said = f"{minutes} min"
    return f"in {said}" if ahead else f"{said} ago"


def _hour12(context: Context) -> bool:
    """Whether the page being rendered shows the 12-hour clock (the viewer's choice)."""
    return bool(context.get("clock") == "12")


@pass_context
def _wall_filter(
    context: Context, text: str | None, zone: str | None = None, seconds: bool = False
) -> str:
    """:func:`wall` on the viewer's clock (12 or 24 hours)."""
    return wall(text, zone, seconds=seconds, hour12=_hour12(context))


@pass_context
def _time_tag(
    context: Context, text: str | None, zone: str | None = None, now: datetime | None = None
) -> Markup:
    """``<time datetime="ISO">wall zone</time>``, with how far it is when ``now`` is given;
    on the viewer's clock."""
    if not text:
        return Markup("<span>—</span>")
    shown = f"{wall(text, zone, hour12=_hour12(context))} {zone or 'UTC'}"
    tag = Markup('<time datetime="{}">{}</time>').format(text, shown)
    if now is not None:
        tag += Markup(' <span class="muted">({})</span>').format(relative(text, now))
    return tag


def _pretty(value: object) -> str:
    """A JSON value laid out for reading (a ``<pre>``'s text; autoescaped)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The pages' templates: autoescaped (user text is text), undefined names refused."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.filters["wall"] = _wall_filter
    env.filters["time_tag"] = _time_tag
    env.filters["relative"] = relative
    env.filters["pretty"] = _pretty
    env.globals["HTMX_FILE"] = HTMX_FILE
    env.globals["VERSION"] = __version__
    env.globals["CSRF_FIELD"] = CSRF_FIELD
    env.globals["ACTION_LABELS"] = ACTION_LABELS
    return env


def render(
    request: Request,
    template: str,
    values: Mapping[str, Any],
    *,
    who: Viewer | None = None,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """A page or fragment from ``template`` with ``values`` and what every page knows: the
    viewer and its CSRF token, the theme override, the 12- or 24-hour clock, the clock's
    now, the request path."""
    ctx: ApiContext = request.app.state.kalends
    theme = request.cookies.get(THEME_COOKIE)
    base = {
        "clock": viewer_clock(request),
        "viewer_zone": viewer_zone(request),
        "who": who,
        "csrf": who.csrf if who is not None else "",
        "theme": theme if theme in THEMES else "",
        "now": ctx.services.store.clock.now().astimezone(UTC),
        "path": request.url.path,
        "fragment": request.headers.get("hx-request") == "true",
    }
    html = environment().get_template(template).render({**base, **values})
    response = HTMLResponse(html, status_code=status, headers=dict(headers or {}))
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def viewer_clock(request: Request) -> str:
    """The clock the viewer chose: ``"12"`` or ``"24"`` (the default)."""
    said = request.cookies.get(CLOCK_COOKIE)
    return said if said in CLOCKS else DEFAULT_CLOCK


def viewer_zone(request: Request) -> str | None:
    """The zone the viewer's browser reports, when it is one this machine knows."""
    said = request.cookies.get(ZONE_COOKIE)
    if not said or len(said) > 64:
        return None
    try:
        get_zone(said)
    except KalendsError:
        return None
    return said


def error_page(request: Request, exc: KalendsError) -> Response:
    """A refusal as a page: sign-in for a missing session, else the error's message with
    its HTTP status."""
    if isinstance(exc, SignInRequired):
        if request.headers.get("hx-request") == "true":
            # htmx follows no redirect for a fragment: ask it to load the sign-in page.
            return Response(status_code=204, headers={"HX-Redirect": sign_in_url(exc.back_to)})
        return RedirectResponse(sign_in_url(exc.back_to), status_code=303)
    status = status_of(exc)
    return render(
        request,
        "error.html",
        {"status": status, "code": exc.code, "message": exc.message},
        status=status,
    )


class WebRoute(APIRoute):
    """A page's route: a :class:`~kalends.errors.KalendsError` raised by the page or the
    services it calls is answered as a page (or a sign-in redirect), never as JSON."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except KalendsError as exc:
                return error_page(request, exc)
            except RequestValidationError as exc:
                said = "; ".join(
                    f"{'.'.join(str(p) for p in e.get('loc', ())[1:])}: {e.get('msg', '')}"
                    for e in exc.errors()
                )
                return error_page(request, InvalidInput(said or "the request is not valid"))

        return handle
