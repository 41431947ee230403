"""Attachments (upload and download) and reminder status (what ``kalends task attach``
and ``kalends reminders`` do).

An upload is multipart; its bytes are stored in the database, at most
:data:`MAX_ATTACHMENT_BYTES` (413 beyond, nothing written). A download is served as
an attachment, never rendered: ``Content-Disposition: attachment``, ``nosniff`` and a
sandboxing content security policy, since the bytes are whatever a member uploaded.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import quote
from uuid import UUID

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import JSONResponse, Response

from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.routes.tasks_models import (
    NO_NUL,
    AttachmentOut,
    IntentOut,
    TaskPath,
    answer,
    atomic,
)
from kalends.api.security import ContextDep, PrincipalDep
from kalends.api.uploads import GENERIC_TYPE, read_upload, upload_media_type, upload_name
from kalends.reminders.outbox import MAX_ATTEMPTS, Intent, Outbox
from kalends.tasks.media import MAX_MEDIA_TYPE_LENGTH, MEDIA_TYPE_PATTERN, is_media_type

router = APIRouter(prefix="/api", tags=["attachments and reminders"], route_class=DispatchedRoute)

MAX_NAME = 255
REMINDER_LIMIT = 10_000
Status = Literal["pending", "leased", "delivered", "cancelled", "dead", "closed"]


@router.post(
    "/tasks/{task}/attachments",
    summary="Attach a file to a task (multipart upload; editors and owners)",
    status_code=201,
    response_model=AttachmentOut,
    responses=error_responses(401, 403, 404, 409, 413, 422),
)
def upload_attachment(
    task: TaskPath,
    ctx: ContextDep,
    who: PrincipalDep,
    file: Annotated[UploadFile, File(description="The file; at most 25 MiB.")],
    name: Annotated[
        str | None,
        Form(max_length=MAX_NAME, pattern=NO_NUL, description="Default: the file's name."),
    ] = None,
    mediaType: Annotated[
        str | None,
        Form(
            max_length=MAX_MEDIA_TYPE_LENGTH,
            pattern=MEDIA_TYPE_PATTERN,
            description="Default: the part's type, else guessed from the name.",
        ),
    ] = None,
) -> JSONResponse:
    label = upload_name(name, file.filename)
    media = upload_media_type(mediaType, file.content_type, label)
    data = read_upload(file)
    made = ctx.services.tasks.attach(who.actor_id, task, label, media, data)
    return answer(made.to_json(), 201)


@router.get(
    "/tasks/{task}/attachments",
    summary="A task's attachments (metadata; download each by its ID)",
    response_model=list[AttachmentOut],
    responses=error_responses(401, 403, 404, 422),
)
def list_attachments(task: TaskPath, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    detail = ctx.services.tasks.get(who.actor_id, task)
    return answer([a.to_json() for a in detail.attachments])


def content_disposition(name: str) -> str:
    """``attachment`` with an ASCII fallback name and the exact one (RFC 6266, 5987)."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name)
    exact = quote(name, safe="", errors="replace")
    return f"attachment; filename=\"{fallback or 'attachment'}\"; filename*=UTF-8''{exact}"


@router.get(
    "/attachments/{attachment_id}",
    summary="Download an attachment's bytes",
    response_class=Response,
    responses={
        200: {"description": "The attachment's bytes, with its media type."},
        **error_responses(401, 403, 404, 422),
    },
)
def download_attachment(attachment_id: UUID, ctx: ContextDep, who: PrincipalDep) -> Response:
    meta, data = ctx.services.tasks.attachment(who.actor_id, attachment_id)
    # (one stored before media types were checked whole may not be one)
    media = meta.media_type if is_media_type(meta.media_type) else GENERIC_TYPE
    return Response(
        content=data,
        media_type=media,
        headers={
            "Content-Disposition": content_disposition(meta.name),
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "sandbox; default-src 'none'",
            "Cache-Control": "private, no-store",
        },
    )


# --------------------------------------------------------------------------- reminders

StatusQuery = Annotated[Status | None, Query(description="Only reminders in this status.")]
LimitQuery = Annotated[int, Query(ge=1, le=REMINDER_LIMIT, description="At most this many.")]


def _intents_json(found: list[Intent]) -> list[dict[str, object]]:
    return [intent.to_json() for intent in found]


@router.get(
    "/tasks/{task}/reminders",
    summary="The reminders of a task, earliest first: status, attempts, last error",
    description=f"Each reminder is tried at most {MAX_ATTEMPTS} times.",
    response_model=list[IntentOut],
    responses=error_responses(401, 403, 404, 422),
)
def task_reminders(
    task: TaskPath,
    ctx: ContextDep,
    who: PrincipalDep,
    status: StatusQuery = None,
    limit: LimitQuery = 100,
) -> JSONResponse:
    outbox = Outbox(ctx.services.store)

    def read() -> list[Intent]:
        task_id = ctx.services.tasks.get(who.actor_id, task).task.id
        return outbox.list(who.actor_id, status=status, task=task_id, limit=limit)

    return answer(_intents_json(atomic(ctx, read, write=False)))


@router.get(
    "/reminders",
    summary="The reminders of tasks in your lists, earliest first",
    response_model=list[IntentOut],
    responses=error_responses(401, 422),
)
def list_reminders(
    ctx: ContextDep, who: PrincipalDep, status: StatusQuery = None, limit: LimitQuery = 100
) -> JSONResponse:
    found = Outbox(ctx.services.store).list(who.actor_id, status=status, limit=limit)
    return answer(_intents_json(found))


@router.get(
    "/reminders/{reminder_id}",
    summary="One reminder: its task, recipient, status, attempts and last error",
    response_model=IntentOut,
    responses=error_responses(401, 404, 422),
)
def get_reminder(reminder_id: UUID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer(Outbox(ctx.services.store).get(who.actor_id, reminder_id).to_json())


@router.post(
    "/reminders/{reminder_id}/retry",
    summary="Give a dead (or waiting) reminder a fresh round of attempts, due now",
    description="Only its recipient or an editor of the list may.",
    response_model=IntentOut,
    responses=error_responses(401, 403, 404, 409, 422),
)
def retry_reminder(reminder_id: UUID, ctx: ContextDep, who: PrincipalDep) -> JSONResponse:
    return answer(Outbox(ctx.services.store).requeue(who.actor_id, reminder_id).to_json())
