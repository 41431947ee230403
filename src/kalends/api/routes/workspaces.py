"""Workspaces over HTTP: the directories passages run in, and who may act in them.

Registering a directory is the server's owner account's decision (passages run commands
in it as the server's user); its members and their roles are then the workspace
owners'. Each route is a thin caller of :class:`~kalends.missions.Workspaces`, which
checks the caller's role: a workspace the caller has no role on is one that does not
exist (404).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from kalends.api.dispatch import DispatchedRoute, inline_read
from kalends.api.errors import error_responses
from kalends.api.routes.mission_models import (
    MemberBody,
    MemberOut,
    WorkspaceBody,
    WorkspaceDetailOut,
    WorkspaceOut,
)
from kalends.api.routes.mission_paths import WORKSPACE, WORKSPACES, WorkspaceID
from kalends.api.routes.tasks_actors import require_server_owner
from kalends.api.routes.tasks_models import ACTOR_KEY
from kalends.api.security import ContextDep, PrincipalDep
from kalends.missions import Member, Workspace

__all__ = ["router"]

router = APIRouter(tags=["missions"], route_class=DispatchedRoute)


def _workspace_out(w: Workspace) -> WorkspaceOut:
    return WorkspaceOut(**w.to_json())


def _member_out(m: Member) -> MemberOut:
    return MemberOut(**m.to_json())


@router.get(
    WORKSPACES,
    summary="The workspaces you are a member of, with your role",
    tags=["workspaces"],
    responses=error_responses(401, 503),
)
@inline_read()
def list_workspaces(ctx: ContextDep, who: PrincipalDep) -> list[WorkspaceOut]:
    return [_workspace_out(w) for w in ctx.services.workspaces.list(who.actor_id)]


@router.post(
    WORKSPACES,
    summary=(
        "Register a directory as a workspace (the server's owner account only); "
        "you become its owner"
    ),
    tags=["workspaces"],
    status_code=201,
    responses=error_responses(401, 403, 409, 422, 503),
)
def add_workspace(body: WorkspaceBody, ctx: ContextDep, who: PrincipalDep) -> WorkspaceOut:
    # Passages run their profile's command in a workspace as the server's own user, so
    # choosing directories is the server owner's decision; members are then invited.
    require_server_owner(
        ctx, who, "register a directory: passages run commands in it as the server's user"
    )
    added = ctx.services.workspaces.add(who.actor_id, body.path, body.name)
    return _workspace_out(added)


@router.get(
    WORKSPACE,
    summary="A workspace: its path, your role, its live schedules and its members",
    tags=["workspaces"],
    responses=error_responses(401, 403, 404, 422, 503),
)
@inline_read()
def get_workspace(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> WorkspaceDetailOut:
    found, members = ctx.services.workspaces.detail(who.actor_id, workspace)
    return WorkspaceDetailOut(**found.to_json(), members=[_member_out(m) for m in members])


@router.delete(
    WORKSPACE,
    summary="Unregister a workspace (owners); refused while it holds schedules",
    tags=["workspaces"],
    status_code=204,
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def remove_workspace(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> Response:
    ctx.services.workspaces.remove(who.actor_id, workspace)
    return Response(status_code=204)


@router.get(
    WORKSPACE + "/members",
    summary="A workspace's members and their roles",
    tags=["workspaces"],
    responses=error_responses(401, 403, 404, 422, 503),
)
def list_members(workspace: WorkspaceID, ctx: ContextDep, who: PrincipalDep) -> list[MemberOut]:
    return [_member_out(m) for m in ctx.services.workspaces.members(who.actor_id, workspace)]


@router.put(
    WORKSPACE + "/members/{actorID}",
    summary="Give an actor a role on the workspace (owners); a workspace keeps an owner",
    tags=["workspaces"],
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def set_member(
    workspace: WorkspaceID,
    member: Annotated[
        str, Path(alias="actorID", pattern=ACTOR_KEY, description="The member's handle or ID.")
    ],
    body: MemberBody,
    ctx: ContextDep,
    who: PrincipalDep,
) -> MemberOut:
    made = ctx.services.workspaces.set_member(who.actor_id, workspace, member, body.role)
    return _member_out(made)


@router.delete(
    WORKSPACE + "/members/{actorID}",
    summary="Take an actor off the workspace (owners); the last owner stays",
    tags=["workspaces"],
    status_code=204,
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def remove_member(
    workspace: WorkspaceID,
    member: Annotated[
        str, Path(alias="actorID", pattern=ACTOR_KEY, description="The member's handle or ID.")
    ],
    ctx: ContextDep,
    who: PrincipalDep,
) -> Response:
    ctx.services.workspaces.remove_member(who.actor_id, workspace, member)
    return Response(status_code=204)
