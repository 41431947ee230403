"""Lists, their members and roles, and their sections (what ``kalends list`` does)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from kalends.api.dispatch import DispatchedRoute, inline_read
from kalends.api.errors import error_responses
from kalends.api.routes.tasks_models import (
    ActorPath,
    ListOut,
    ListRevision,
    MemberOut,
    MemberRole,
    NewList,
    NewSection,
    OptionalRevisionQuery,
    SectionOut,
    answer,
)
from kalends.api.security import ContextDep, PrincipalDep

router = APIRouter(prefix="/api", tags=["lists"], route_class=DispatchedRoute)


@router.get(
    "/lists",
    summary="The lists you are a member of, with your role",
    response_model=list[ListOut],
    responses=error_responses(401, 422),
)
@inline_read()
def list_lists(
    ctx: ContextDep,
    who: PrincipalDep,
    active: Annotated[bool, Query(description="Leave out archived lists.")] = False,
) -> JSONResponse:
    found = ctx.services.directory.lists(who.actor_id, include_archived=not active)
    return answer([item.to_json() for item in found])


@router.post(
    "/lists",
    summary="Create a list; you own it",
    status_code=201,
    response_model=ListOut,
    responses=error_responses(401, 403, 422),
)
def create_list(body: NewList, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer(ctx.services.directory.create_list(who.actor_id, body.name).to_json(), 201)


@router.get(
    "/lists/{list_id}",
    summary="One list, with your role on it",
    response_model=ListOut,
    responses=error_responses(401, 403, 404, 422),
)
@inline_read()
def get_list(list_id: UUID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer(ctx.services.directory.get_list(who.actor_id, list_id).to_json())


@router.post(
    "/lists/{list_id}/archive",
    summary="Archive a list: it can still be read, not changed (owners only)",
    response_model=ListOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def archive_list(
    list_id: UUID, body: ListRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    updated = ctx.services.directory.archive(
        who.actor_id, list_id, archived=True, expected_revision=body.expectedRevision
    )
    return answer(updated.to_json())


@router.post(
    "/lists/{list_id}/unarchive",
    summary="Make an archived list active again (owners only)",
    response_model=ListOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def unarchive_list(
    list_id: UUID, body: ListRevision, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    updated = ctx.services.directory.archive(
        who.actor_id, list_id, archived=False, expected_revision=body.expectedRevision
    )
    return answer(updated.to_json())


@router.get(
    "/lists/{list_id}/members",
    summary="The members of a list and their roles",
    response_model=list[MemberOut],
    responses=error_responses(401, 403, 404, 422),
)
def list_members(list_id: UUID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    members = ctx.services.directory.members(who.actor_id, list_id)
    return answer([{**a.to_json(), "role": r.value} for a, r in members])


@router.put(
    "/lists/{list_id}/members/{member}",
    summary="Give an actor a role on a list (owners only; a list keeps an owner)",
    response_model=ListOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def set_member(
    list_id: UUID, member: ActorPath, body: MemberRole, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    updated = ctx.services.directory.share(
        who.actor_id, list_id, member, body.role, body.expectedRevision
    )
    return answer(updated.to_json())


@router.delete(
    "/lists/{list_id}/members/{member}",
    summary="Take an actor off a list (owners only; the last owner stays)",
    response_model=ListOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def remove_member(
    list_id: UUID,
    member: ActorPath,
    ctx: ContextDep,
    who: PrincipalDep,
    expectedRevision: OptionalRevisionQuery = None,
) -> JSONResponse:
    updated = ctx.services.directory.share(who.actor_id, list_id, member, None, expectedRevision)
    return answer(updated.to_json())


@router.get(
    "/lists/{list_id}/sections",
    summary="The sections of a list, in order",
    response_model=list[SectionOut],
    responses=error_responses(401, 403, 404, 422),
)
def list_sections(list_id: UUID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    found = ctx.services.directory.sections(who.actor_id, list_id)
    return answer([item.to_json() for item in found])


@router.post(
    "/lists/{list_id}/sections",
    summary="Append a section to a list (editors and owners)",
    status_code=201,
    response_model=SectionOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def add_section(
    list_id: UUID, body: NewSection, ctx: ContextDep, who: PrincipalDep
) -> JSONResponse:
    return answer(
        ctx.services.directory.add_section(who.actor_id, list_id, body.name).to_json(), 201
    )
