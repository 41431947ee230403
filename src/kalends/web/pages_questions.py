"""The questions passages ask people: a workspace's open questions, one question with its
typed form, and the two ways an answer reaches the service.

Thin callers, as the other pages: every read and write is one call of the
:class:`~kalends.questions.Questions` service with the signed-in person as the acting
actor, which checks their role in the question's workspace (a non-member gets 404, a
viewer's forged post 403). A viewer's page shows no form.

Seed 002's human decision mark, as kalends keeps it: the page's script asks for a one-use
answer token (``POST /questions/{id}/token``) only after a trusted pointer click on the
submit button or a trusted submit key press, binds it to the exact answer in the form, puts
it in the form's hidden ``token`` field and submits the form. The answer route then records
the answer with a ``pending`` mark (:meth:`~kalends.questions.Questions.answer_from_ui`),
which the passage confirms once it has the answer. A form posted without a token (script
off, or a submission script started itself) is recorded without a mark
(:meth:`~kalends.questions.Questions.answer_from_ui_unmarked`) and never counts as a
person's decision. A refused token writes nothing and is said as it is.

The principal is what the page was rendered for: the login session, named by the
session's row ID (never the cookie's secret), or the paired device, named by its device
ID; a device is never taken for a session (seed 002, "Wayfinder human decision mark": the
UI principal is explicit). A token is bound to its principal, so a token minted on a
device is taken only from that device, and a session's only from that session; both are
read again on every request, so a revoked device is sent to sign in before it can mint or
answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from kalends.api.errors import status_of
from kalends.errors import Forbidden, InvalidInput, KalendsError
from kalends.identity import Role
from kalends.missions.workspaces import Workspace
from kalends.questions import (
    AnswerTokenRefused,
    AnswerVia,
    ChoiceField,
    ConfirmField,
    Decision,
    Field,
    MarkState,
    Principal,
    Question,
    Questions,
    QuestionState,
    TextField,
)
from kalends.web.render import WebRoute, environment, instant_text, render
from kalends.web.session import CSRF_FIELD, SignInRequired, Viewer, check_csrf, viewer
from kalends.web.task_schedule_form import plain
from kalends.web.workspace_scope import find_workspace

__all__ = [
    "ANSWER_PREFIX",
    "CONFIRM_VALUE",
    "TOKEN_FIELD",
    "answer_of",
    "open_question_count",
    "passage_questions",
    "interface_principal",
    "router",
    "waiting_questions",
]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# A field's value in the form is posted as ``answer-<field id>``.
ANSWER_PREFIX = "answer-"
# What a checked confirm box posts; an unchecked one posts nothing (``false``).
CONFIRM_VALUE = "yes"
# The hidden field the script fills with the one-use answer token.
TOKEN_FIELD = "token"
REVISION_FIELD = "expected_revision"
# What an answer lands back with (``?done=``).
DONE = {"answered": "Answer recorded."}
VIA_WORDS = {
    AnswerVia.UI: "the kalends interface",
    AnswerVia.API: "the HTTP API",
    AnswerVia.CLI: "the command line",
    AnswerVia.COORDINATOR: "the passage itself",
}
STATE_WORDS = {
    QuestionState.OPEN: "Waiting for an answer",
    QuestionState.ANSWERED: "",  # the badge says it
    QuestionState.WITHDRAWN: "Withdrawn: the passage settled before it was answered",
}


def _questions(who: Viewer) -> Questions:
    return who.context.services.questions


def _can_answer(ws: Workspace) -> bool:
    return ws.role.rank >= Role.EDITOR.rank


def interface_principal(who: Viewer) -> Principal:
    """The principal of an interface answer: the viewer's login session (kind
    ``session``, the session row's ID) or paired device (kind ``device``, the device ID),
    each as what it is. Anything else (an API token) answers through no page."""
    found = who.principal
    if found.kind == "session":
        return Principal.of("session", str(found.credential_id), found.actor_id)
    if found.kind == "device":
        return Principal.of("device", str(found.credential_id), found.actor_id)
    raise Forbidden("principal: only a login session or a paired device answers through the pages")


def open_question_count(who: Viewer | None) -> int:
    """How many questions wait for an answer over the viewer's workspaces (the
    navigation's badge); 0 without a viewer."""
    if who is None:
        return 0
    return _questions(who).count_open(who.actor)


def waiting_questions(who: Viewer, spaces: Sequence[Workspace]) -> list[dict[str, Any]]:
    """The open questions over ``spaces`` (the viewer's workspaces), oldest first, each
    with its workspace (the Now page's "Questions waiting for you")."""
    by_id = {ws.id: ws for ws in spaces}
    return [
        {"q": q, "workspace": by_id[q.workspace_id]}
        for q in _questions(who).open_for(who.actor)
        if q.workspace_id in by_id
    ]


def passage_questions(who: Viewer, workspace: UUID, passage_id: str) -> list[Question]:
    """The open questions the passage ``passage_id`` of ``workspace`` waits on, oldest
    first (the passage's page)."""
    found = _questions(who).list_open(who.actor, workspace)
    return [q for q in found if q.passage_id == passage_id]


# The navigation of every page shows the count (base.html asks for it when it is there).
environment().globals["open_question_count"] = open_question_count


async def _form(request: Request) -> FormData:
    """The posted form, read before the route runs (its field names depend on the
    question)."""
    return await request.form()


Posted = Annotated[FormData, Depends(_form)]


def _text(raw: str) -> str:
    """A text value as typed: browsers post a line break as CR LF; it is one LF here, in
    the token and in the answer alike."""
    return raw.replace("\r\n", "\n")


def answer_of(fields: Sequence[Field], form: FormData) -> dict[str, object]:
    """The answer a form posts, as the service checks it: a choice's option, a text, and
    ``true`` for a ticked confirm box (``false`` when none is posted). A field posted twice
    or a value of no field is passed on for the service to refuse."""
    answer: dict[str, object] = {}
    for field in fields:
        name = ANSWER_PREFIX + field.id
        values = [v for v in form.getlist(name) if isinstance(v, str)]
        match field:
            case ConfirmField():
                if not values:
                    answer[field.id] = False
                elif values == [CONFIRM_VALUE]:
                    answer[field.id] = True
                else:
                    answer[field.id] = values[0] if len(values) == 1 else values
            case ChoiceField() | TextField():
                if len(values) == 1:
                    answer[field.id] = _text(values[0])
                elif values:
                    answer[field.id] = values
    known = {ANSWER_PREFIX + f.id for f in fields}
    for key in form:
        if key.startswith(ANSWER_PREFIX) and key not in known:
            answer[key.removeprefix(ANSWER_PREFIX)] = form.get(key)
    return answer


def _typed(fields: Sequence[Field], form: FormData | None) -> dict[str, str | bool]:
    """What the form showed, to show it again after a refusal."""
    if form is None:
        return {}
    kept: dict[str, str | bool] = {}
    for field in fields:
        raw = form.get(ANSWER_PREFIX + field.id)
        if isinstance(field, ConfirmField):
            kept[field.id] = raw == CONFIRM_VALUE
        elif isinstance(raw, str):
            kept[field.id] = _text(raw)
    return kept


def _revision(form: FormData) -> int:
    raw = form.get(REVISION_FIELD)
    if isinstance(raw, str) and raw.isdigit() and len(raw) <= 12:
        return int(raw)
    raise InvalidInput(
        f"{REVISION_FIELD}: the form did not say which revision it showed", field=REVISION_FIELD
    )


def _csrf(form: FormData) -> str:
    raw = form.get(CSRF_FIELD)
    return raw if isinstance(raw, str) else ""


def _error_field(exc: KalendsError) -> str | None:
    """The form field a refusal is about (``answer.go`` → ``go``), if any."""
    field = exc.details.get("field")
    if isinstance(field, str) and field.startswith("answer."):
        return field.removeprefix("answer.")
    return None


def decision_words(question: Question, found: Decision) -> str:
    """Who decided, in words."""
    if found.decided_by == "human":
        return "Decided by a person in the kalends interface (confirmed)"
    if found.decided_by == "coordinator":
        return "Decided by the passage itself (the coordinator), not by a person"
    if question.state is not QuestionState.ANSWERED:
        return "Not decided yet"
    return f"Not a person's decision: {found.cause}"


def _value_words(field: Field, value: object) -> str:
    if isinstance(field, ConfirmField):
        return "Yes" if value is True else "No"
    return str(value)


def _handles(who: Viewer, ws: Workspace) -> dict[UUID, str]:
    return {m.actor_id: m.handle for m in who.context.services.workspaces.members(who.actor, ws.id)}


def _schedule_title(who: Viewer, question: Question) -> str | None:
    if question.schedule_id is None:
        return None
    try:
        doc = who.context.services.schedules.detail(
            who.actor, question.schedule_id, workspace=question.workspace_id
        )
    except KalendsError:
        return None
    title = doc.get("title")
    return title if isinstance(title, str) and title else None


# --- a workspace's open questions -----------------------------------------------------------


@router.get("/w/{workspace}/questions")
def questions_page(request: Request, workspace: UUID) -> Response:
    """The workspace's open questions, oldest first."""
    who = viewer(request)
    ws, nav = find_workspace(who, workspace)
    found = _questions(who).list_open(who.actor, ws.id)
    return render(
        request,
        "questions.html",
        {
            "title": f"Questions — {ws.name}",
            "nav_workspaces": nav,
            "workspace": ws,
            "questions": found,
            "can_answer": _can_answer(ws),
            "iso": instant_text,
        },
        who=who,
    )


# --- one question ---------------------------------------------------------------------------


@router.get("/questions/{question}")
def question_page(request: Request, question: UUID) -> Response:
    """A question: its prompt, the asking passage and schedule, its state, the form (to
    editors, while it is open), and once answered the answer and who decided."""
    who = viewer(request)
    return _question_page(request, who, question)


def _question_page(
    request: Request,
    who: Viewer,
    question: UUID,
    *,
    form: FormData | None = None,
    error: str = "",
    error_field: str | None = None,
    status: int = 200,
) -> Response:
    service = _questions(who)
    found = service.get(who.actor, question)
    ws, nav = find_workspace(who, found.workspace_id)
    marks = service.marks(who.actor, found.id)
    decided = service.decision(who.actor, found.id)
    own_marks = [m for m in marks if m.attempt_id == found.attempt_id]
    answered_by = (
        _handles(who, ws).get(found.answered_by, "a former member")
        if found.answered_by is not None
        else None
    )
    answer_rows: list[dict[str, str]] = []
    if found.answer is not None:
        answer_rows = [
            {"label": f.label, "value": _value_words(f, found.answer.get(f.id))}
            for f in found.fields
        ]
    typed = _typed(found.fields, form)
    open_now = found.state is QuestionState.OPEN
    return render(
        request,
        "question.html",
        {
            "title": f"Question — {ws.name}",
            "nav_workspaces": nav,
            "workspace": ws,
            "q": found,
            "fields": found.fields,
            "state_words": STATE_WORDS[found.state],
            "schedule_title": _schedule_title(who, found),
            "can_answer": _can_answer(ws) and open_now,
            "viewer_only": not _can_answer(ws),
            "typed": typed,
            "kept": [] if open_now else _kept_rows(found.fields, typed),
            "answer_rows": answer_rows,
            "answered_by": answered_by,
            "answered_via": VIA_WORDS.get(found.answered_via) if found.answered_via else None,
            "decision": decided,
            "decision_words": decision_words(found, decided),
            "mark": own_marks[-1] if own_marks else None,
            "pending": MarkState.PENDING,
            "error": error,
            "error_field": error_field,
            "answer_prefix": ANSWER_PREFIX,
            "confirm_value": CONFIRM_VALUE,
            "token_field": TOKEN_FIELD,
            "revision_field": REVISION_FIELD,
            "iso": instant_text,
            "done": DONE.get(request.query_params.get("done", ""), ""),
        },
        who=who,
        status=status,
    )


def _kept_rows(fields: Sequence[Field], typed: Mapping[str, str | bool]) -> list[dict[str, str]]:
    """What the person had typed, when the question can no longer take it."""
    return [
        {"label": f.label, "value": _value_words(f, typed[f.id])} for f in fields if f.id in typed
    ]


@router.post("/questions/{question}/answer")
def answer_question(request: Request, question: UUID, form: Posted) -> Response:
    """Records an answer (editors and owners): with the form's one-use token, an
    interface answer with a pending mark; without one, an interface answer with no mark.
    A refusal is the page again, the typed answer kept and nothing written."""
    who = viewer(request)
    check_csrf(request, who, _csrf(form))
    service = _questions(who)
    found = service.get(who.actor, question)
    raw_token = form.get(TOKEN_FIELD)
    token = raw_token if isinstance(raw_token, str) else ""
    try:
        answer = answer_of(found.fields, form)
        revision = _revision(form)
        if token:
            service.answer_from_ui(
                who.actor, interface_principal(who), found.id, answer, token, revision
            )
        else:
            service.answer_from_ui_unmarked(who.actor, found.id, answer, revision)
    except AnswerTokenRefused as exc:
        said = f"Not recorded: {plain(exc.message)[:1].lower()}{plain(exc.message)[1:]}."
        return _question_page(request, who, found.id, form=form, error=said, status=403)
    except KalendsError as exc:
        status = status_of(exc)
        if status not in (409, 422):
            raise
        return _question_page(
            request,
            who,
            found.id,
            form=form,
            error=plain(exc.message),
            error_field=_error_field(exc),
            status=status,
        )
    return RedirectResponse(f"/questions/{found.id}?done=answered", status_code=303)


@router.post("/questions/{question}/token")
def answer_token(request: Request, question: UUID, form: Posted) -> Response:
    """A one-use answer token for the exact answer in the posted form, bound to the
    viewer's login session or paired device (editors and owners, CSRF-checked); the
    page's script asks for it only after a trusted click or key press. JSON:
    ``{"token": …}``, or ``{"code", "message", "field"}`` with the refusal's status."""
    try:
        who = viewer(request)
        check_csrf(request, who, _csrf(form))
        service = _questions(who)
        found = service.get(who.actor, question)
        answer = answer_of(found.fields, form)
        secret = service.mint_token(who.actor, interface_principal(who), found.id, answer)
    except SignInRequired:
        return _json({"code": "sign-in-required", "message": "sign in again"}, 401)
    except KalendsError as exc:
        field = exc.details.get("field")
        return _json({"code": exc.code, "message": exc.message, "field": field}, status_of(exc))
    return _json({"token": secret}, 200)


def _json(body: Mapping[str, Any], status: int) -> JSONResponse:
    return JSONResponse(dict(body), status_code=status, headers={"Cache-Control": "no-store"})
