"""Actors and their reminder destinations (what ``kalends actor`` and ``actor notify`` do).

Who may do what, and why:

- Listing actors: any authenticated principal. Sharing a list or a workspace names
  people by handle, so every person may learn the handles (and the names and e-mail
  addresses that go with them, as ``kalends actor ls`` prints them).
- Adding an actor: the server's owner account only (403 for anyone else, before
  anything is read or written). Who exists on a server is the server owner's decision,
  as registering workspace directories is; the new actor has no account until
  ``kalends login-link --as HANDLE`` gives them one.
- The run privilege (``mayRun`` in the listing): granting and revoking it, the server's
  owner account only (403 for anyone else, before anything is read or written). Whoever
  holds it defines what passages run, and so can run anything the passage user can: a
  server-level decision, not a workspace role. The owner account holds it always.
- Reminder destinations: each actor reads and changes only their own, the server's
  owner included (403 for anyone else's). The destinations are Apprise URLs that hold
  passwords and tokens and decide where reminders, with their task titles, are sent: an
  owner who could set another person's could read that person's reminders. This is the
  rule of the local command line too (:class:`~kalends.reminders.destinations.Destinations`).
  No answer shows a URL: only Apprise's redacted form, as the CLI prints it; errors name
  the URL's scheme at most.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, StringConstraints

from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.routes.tasks_models import ACTOR_KEY, NO_NUL, Strict, answer
from kalends.api.security import ContextDep, PrincipalDep
from kalends.auth import Principal
from kalends.errors import Forbidden, NotFound
from kalends.identity import MAX_NAME_LENGTH
from kalends.reminders.destinations import MAX_DESTINATIONS, MAX_URL_LENGTH
from kalends.reminders.transports import redacted_url

__all__ = ["router", "require_server_owner"]

router = APIRouter(prefix="/api", tags=["actors"], route_class=DispatchedRoute)

ACTORS = "/actors"
GRANT = ACTORS + "/{actor}/grants/{privilege}"
DESTINATIONS = ACTORS + "/{actor}/destinations"
CHANNEL = DESTINATIONS + "/{channel}"

# The longest text a field of these bodies carries: past what the services accept, so
# that they word the refusal as the CLI does (the handle's rule, a blank name, a URL's
# 2,000 characters), yet bounded.
MAX_HANDLE_CHARS = 256
MAX_DISPLAY_NAME_CHARS = 4 * MAX_NAME_LENGTH
MAX_EMAIL_CHARS = 320
MAX_URL_CHARS = 4 * MAX_URL_LENGTH
# The most URLs a replacement may carry; the service refuses more than MAX_DESTINATIONS.
MAX_URLS = 8 * MAX_DESTINATIONS

Handle = Annotated[str, StringConstraints(max_length=MAX_HANDLE_CHARS, pattern=NO_NUL)]
DisplayName = Annotated[str, StringConstraints(max_length=MAX_DISPLAY_NAME_CHARS, pattern=NO_NUL)]
Email = Annotated[str, StringConstraints(max_length=MAX_EMAIL_CHARS, pattern=NO_NUL)]
Url = Annotated[str, StringConstraints(max_length=MAX_URL_CHARS, pattern=NO_NUL)]
ChannelName = Literal["email", "push"]
ChannelPath = Annotated[ChannelName, Path(description="The channel: email or push.")]
PrivilegePath = Annotated[
    Literal["run"], Path(description="The server privilege: run (defining what runs).")
]
GranteePath = Annotated[
    str, Path(alias="actor", pattern=ACTOR_KEY, description="The actor's handle or ID.")
]
TargetPath = Annotated[
    str,
    Path(alias="actor", pattern=ACTOR_KEY, description="Whose destinations: your handle or ID."),
]


def require_server_owner(ctx: ApiContext, who: Principal, why: str) -> None:
    """Refuses (403) anyone but the server's owner account; ``why`` ends the message."""
    try:
        is_owner = bool(ctx.accounts.account(who.actor_id).get("isOwner"))
    except NotFound:
        is_owner = False  # a token without an account (a bot) is no owner
    if not is_owner:
        raise Forbidden(f"only the server's owner account may {why}")


# --- bodies and answers ---------------------------------------------------------------------


class NewActor(Strict):
    handle: Handle = Field(description="Unique: 1-64 lowercase letters, digits, '.', '_', '-'.")
    display_name: DisplayName = Field(
        description=f"How people see them: not blank, at most {MAX_NAME_LENGTH} characters."
    )
    email: Email | None = Field(default=None, description="E-mail address.")


class ActorOut(BaseModel):
    id: str
    handle: str
    display_name: str
    email: str | None


class ActorListed(ActorOut):
    mayRun: bool = Field(
        description="Holds the run privilege: may create schedules and change what they run."
    )


class DestinationsBody(Strict):
    urls: list[Url] = Field(
        max_length=MAX_URLS,
        description=f"Apprise URLs in delivery order (at most {MAX_DESTINATIONS}); "
        "an empty list clears the channel.",
    )


class DestinationBody(Strict):
    url: Url = Field(description="One Apprise URL (email: mailto:// or mailtos://).")


class DestinationOut(BaseModel):
    channel: ChannelName
    position: int = Field(description="Its place in the delivery order, from 1.")
    display: str = Field(description="The URL in Apprise's redacted form (no secrets).")
    created_at: str


class RemovedOut(BaseModel):
    channel: ChannelName
    display: str = Field(description="The removed URL in Apprise's redacted form.")


# --- actors ---------------------------------------------------------------------------------


@router.get(
    ACTORS,
    summary="Every actor, by handle (any caller: sharing names people by handle)",
    response_model=list[ActorListed],
    responses=error_responses(401),
)
def list_actors(ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer([a.to_json() for a in ctx.services.grants.actors()])


@router.post(
    ACTORS,
    summary="Create an actor (the server's owner account only); no account yet",
    status_code=201,
    response_model=ActorOut,
    responses=error_responses(401, 403, 409, 422),
)
def add_actor(body: NewActor, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    require_server_owner(ctx, who, "add actors")
    added = ctx.services.directory.add_actor(body.handle, body.display_name, body.email)
    return answer(added.to_json(), 201)


@router.post(
    GRANT,
    summary="Grant a server privilege to an actor (the server's owner account only)",
    response_model=ActorListed,
    responses=error_responses(401, 403, 404, 422),
)
def grant_privilege(
    target: GranteePath, privilege: PrivilegePath, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    require_server_owner(ctx, who, f"grant the {privilege} privilege")
    return answer(ctx.services.grants.grant(target, privilege).to_json())


@router.delete(
    GRANT,
    summary="Revoke an actor's server privilege (the server's owner account only)",
    response_model=ActorListed,
    responses=error_responses(401, 403, 404, 422),
)
def revoke_privilege(
    target: GranteePath, privilege: PrivilegePath, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    require_server_owner(ctx, who, f"revoke the {privilege} privilege")
    return answer(ctx.services.grants.revoke(target, privilege).to_json())


# --- reminder destinations --------------------------------------------------------------------


@router.get(
    DESTINATIONS,
    summary="Your reminder destinations by channel and delivery order, redacted",
    response_model=list[DestinationOut],
    responses=error_responses(401, 403, 404, 422),
)
def list_destinations(
    target: TargetPath,
    ctx: ContextDep,
    who: PrincipalDep,
    channel: Annotated[ChannelName | None, Query(description="Only this channel.")] = None,
) -> JSONResponse:
    found = ctx.services.destinations.list(who.actor_id, target, channel)
    return answer([d.to_json() for d in found])


@router.put(
    CHANNEL,
    summary="Replace your destinations of a channel (an empty list clears it)",
    response_model=list[DestinationOut],
    responses=error_responses(401, 403, 404, 422),
)
def set_destinations(
    target: TargetPath,
    channel: ChannelPath,
    body: DestinationsBody,
    ctx: ContextDep,
    who: PrincipalDep,
) -> JSONResponse:
    written = ctx.services.destinations.set(who.actor_id, target, channel, body.urls)
    return answer([d.to_json() for d in written])


@router.post(
    CHANNEL,
    summary="Append one destination to a channel of yours",
    status_code=201,
    response_model=DestinationOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def add_destination(
    target: TargetPath,
    channel: ChannelPath,
    body: DestinationBody,
    ctx: ContextDep,
    who: PrincipalDep,
) -> JSONResponse:
    added = ctx.services.destinations.add(who.actor_id, target, channel, body.url)
    return answer(added.to_json(), 201)


@router.post(
    CHANNEL + "/remove",
    summary="Remove one destination of yours, given by its full URL (sent in the body)",
    response_model=RemovedOut,
    responses=error_responses(401, 403, 404, 422),
)
def remove_destination(
    target: TargetPath,
    channel: ChannelPath,
    body: DestinationBody,
    ctx: ContextDep,
    who: PrincipalDep,
) -> JSONResponse:
    ctx.services.destinations.remove(who.actor_id, target, channel, body.url)
    return answer({"channel": channel, "display": redacted_url(body.url)})
