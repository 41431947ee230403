"""Calendar feeds: an actor's own secret feed addresses (``/api/feeds``), and the feed
itself at ``/feeds/{secret}.ics``, where the secret in the address is the credential.

The feed answers ``ETag`` and, to a request whose ``If-None-Match`` names it, ``304``
with no body: a calendar app polling every few minutes gets a few hundred bytes while
nothing changed. An unknown and a revoked secret get the same 404.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Header, Response
from pydantic import BaseModel, Field

from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.security import ContextDep, PrincipalDep

router = APIRouter(tags=["feeds"], route_class=DispatchedRoute)

ICALENDAR = "text/calendar; charset=utf-8"
# The address holds a secret: no shared cache keeps the feed; a calendar app may reuse
# it for five minutes, then asks again with If-None-Match.
CACHE_CONTROL = "private, max-age=300"
# The longest If-None-Match read; a longer header is as if none were sent.
MAX_IF_NONE_MATCH = 2048


class FeedOut(BaseModel):
    id: UUID
    createdAt: datetime
    revokedAt: datetime | None
    lastUsedAt: datetime | None
    active: bool


class NewFeedOut(BaseModel):
    feed: FeedOut
    url: str = Field(description="The feed's address, shown once: its secret is in it.")
    secret: str = Field(description="Shown once; only its hash is stored.")


@router.get("/api/feeds", summary="Your calendar feeds", responses=error_responses(401))
def list_feeds(ctx: ContextDep, who: PrincipalDep) -> list[FeedOut]:
    return [FeedOut(**f.to_json()) for f in ctx.services.feeds.list(who.actor_id)]


@router.post(
    "/api/feeds",
    summary="Create a calendar feed (its address is shown once)",
    status_code=201,
    responses=error_responses(401, 403, 409),
)
def create_feed(ctx: ContextDep, who: PrincipalDep) -> NewFeedOut:
    made = ctx.services.feeds.create(who.actor_id, base_url=ctx.settings.base_url)
    return NewFeedOut(feed=FeedOut(**made.feed.to_json()), url=made.url, secret=made.secret)


@router.delete(
    "/api/feeds/{feed_id}",
    summary="Revoke one of your calendar feeds",
    responses=error_responses(401, 403, 404, 422),
)
def revoke_feed(feed_id: UUID, ctx: ContextDep, who: PrincipalDep) -> FeedOut:
    return FeedOut(**ctx.services.feeds.revoke(who.actor_id, feed_id).to_json())


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weakly, as RFC 9110 compares for it)."""
    if not if_none_match or len(if_none_match) > MAX_IF_NONE_MATCH:
        return False
    tags = (t.strip() for t in if_none_match.split(","))
    return any(t == "*" or t.removeprefix("W/") == etag for t in tags)


@router.get(
    "/feeds/{secret}.ics",
    summary="A calendar feed (iCalendar); the secret in its address is the credential",
    response_class=Response,
    responses={
        200: {"content": {"text/calendar": {}}, "description": "The feed."},
        304: {"description": "Unchanged since the ETag sent in If-None-Match."},
        **error_responses(404),
    },
)
def feed(
    secret: str,
    ctx: ContextDep,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    found = ctx.services.feeds.render(secret)
    headers = {"ETag": found.etag, "Cache-Control": CACHE_CONTROL}
    if matches(if_none_match, found.etag):
        return Response(status_code=304, headers=headers)
    headers["Content-Disposition"] = 'inline; filename="kalends.ics"'
    return Response(content=found.body, media_type=ICALENDAR, headers=headers)
