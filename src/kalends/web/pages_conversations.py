"""A workspace's conversations: the threads people post to and each passage's own.

Thin callers, as the other pages: every read and write is one call of the
:class:`~kalends.conversations.Conversations` service with the signed-in person as the
acting actor, which checks their role in the conversation's workspace (a non-member
gets 404, a viewer's forged post 403). A viewer's page shows no form.

A conversation's page shows its messages in order, a page of :data:`PAGE` at a time
after a sequence number (``?after=``), each with its author, its time and whether it is
still being written; a thread takes a new message from an editor. A passage's
conversation is written by its passage alone, so its page has no form. A refused post
is the page again with the error beside the field and the typed text kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from kalends.api.errors import status_of
from kalends.conversations import (
    MAX_MESSAGE_CHARS,
    MAX_PAGE,
    MAX_TITLE,
    ConversationKind,
    Conversations,
    Message,
)
from kalends.errors import KalendsError
from kalends.identity import Role
from kalends.missions.workspaces import Workspace
from kalends.web.render import WebRoute, instant_text, render
from kalends.web.session import CSRF_FIELD, Viewer, check_csrf, viewer
from kalends.web.task_schedule_form import plain
from kalends.web.workspace_scope import find_workspace

__all__ = ["router"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# Messages on one page of a conversation: the service's own page.
PAGE = MAX_PAGE
# What a post lands back with (``?done=``); nothing else is said from an address.
DONE = {"created": "Conversation started.", "posted": "Message posted."}
# A form's text is bounded before the service reads it; the service says the real
# limits (a title's 200 characters, a message's 65,536) beside the field.
FORM_TEXT = MAX_MESSAGE_CHARS + 1024

Csrf = Annotated[str, Form(alias=CSRF_FIELD, max_length=128)]
Text = Annotated[str, Form(max_length=FORM_TEXT)]


def _conversations(who: Viewer) -> Conversations:
    return who.context.services.conversations


def _can_write(ws: Workspace) -> bool:
    return ws.role.rank >= Role.EDITOR.rank


def _authors(who: Viewer, ws: Workspace) -> dict[UUID, str]:
    return {m.actor_id: m.handle for m in who.context.services.workspaces.members(who.actor, ws.id)}


# --- a workspace's conversations ------------------------------------------------------------


@router.get("/w/{workspace}/conversations")
def conversations_page(request: Request, workspace: UUID) -> Response:
    """The workspace's conversations, newest activity first, and a form that starts one."""
    who = viewer(request)
    return _list_page(request, who, workspace, {})


def _list_page(
    request: Request,
    who: Viewer,
    workspace: UUID,
    form: Mapping[str, str],
    error: str = "",
    status: int = 200,
) -> Response:
    ws, nav = find_workspace(who, workspace)
    found = _conversations(who).list(who.actor, ws.id)
    return render(
        request,
        "conversations.html",
        {
            "title": f"Conversations — {ws.name}",
            "nav_workspaces": nav,
            "workspace": ws,
            "conversations": found,
            "can_write": _can_write(ws),
            "form": {"title": form.get("title", "")},
            "error": error,
            "max_title": MAX_TITLE,
            "iso": instant_text,
            "done": DONE.get(request.query_params.get("done", ""), ""),
        },
        who=who,
        status=status,
    )


@router.post("/w/{workspace}/conversations")
def create_conversation(
    request: Request,
    workspace: UUID,
    title: Annotated[str, Form(max_length=FORM_TEXT)] = "",
    csrf: Csrf = "",
) -> Response:
    """Starts a thread in the workspace (editors and owners) and opens it."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        made = _conversations(who).create(who.actor, workspace, title)
    except KalendsError as exc:
        if status_of(exc) != 422:
            raise
        return _list_page(request, who, workspace, {"title": title}, plain(exc.message), 422)
    return RedirectResponse(f"/conversations/{made.id}?done=created", status_code=303)


# --- one conversation -----------------------------------------------------------------------


@router.get("/conversations/{conversation}")
def conversation_page(
    request: Request,
    conversation: UUID,
    after: Annotated[int, Query(ge=0, le=2**31)] = 0,
) -> Response:
    """A conversation's messages, a page after the sequence number ``after``."""
    who = viewer(request)
    return _conversation_page(request, who, conversation, after, {})


def _conversation_page(
    request: Request,
    who: Viewer,
    conversation: UUID,
    after: int,
    form: Mapping[str, str],
    error: str = "",
    status: int = 200,
) -> Response:
    service = _conversations(who)
    found = service.get(who.actor, conversation)
    ws, nav = find_workspace(who, found.workspace_id)
    # A full page says a later one may follow.
    messages = service.messages(who.actor, found.id, after_seq=after, limit=PAGE)
    following = messages[-1].seq if len(messages) == PAGE else None
    return render(
        request,
        "conversation.html",
        {
            "title": found.title,
            "nav_workspaces": nav,
            "workspace": ws,
            "conversation": found,
            "messages": [_shown(m, _authors(who, ws)) for m in messages],
            "after": after,
            "next_after": following,
            "can_post": _can_write(ws) and found.kind is ConversationKind.THREAD,
            "form": {"text": form.get("text", "")},
            "error": error,
            "max_text": MAX_MESSAGE_CHARS,
            "iso": instant_text,
            "done": DONE.get(request.query_params.get("done", ""), ""),
        },
        who=who,
        status=status,
    )


def _shown(message: Message, authors: Mapping[UUID, str]) -> dict[str, Any]:
    """A message as the page shows it: its author in words."""
    if message.author_actor_id is not None:
        author = authors.get(message.author_actor_id, "a former member")
    elif message.author_passage_id is not None:
        author = f"passage {message.author_passage_id}"
    else:
        author = "kalends"
    return {"m": message, "author": author}


@router.post("/conversations/{conversation}/messages")
def post_message(
    request: Request,
    conversation: UUID,
    text: Text = "",
    csrf: Csrf = "",
) -> Response:
    """Posts a message to a thread (editors and owners) and lands on its last page."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    service = _conversations(who)
    try:
        made = service.post(who.actor, conversation, text)
    except KalendsError as exc:
        if status_of(exc) not in (409, 422):
            raise
        return _conversation_page(
            request, who, conversation, 0, {"text": text}, plain(exc.message), status_of(exc)
        )
    after = max(0, made.seq - PAGE)
    return RedirectResponse(
        f"/conversations/{conversation}?after={after}&done=posted#message-{made.seq}",
        status_code=303,
    )
