"""The mission pages: Now, a workspace's schedules, a schedule, and its controls.

Each route is a thin caller: it reads the viewer's session, calls the workspace and
schedule services through the protocols the CLI uses
(:class:`~kalends.cli.mission_client.WorkspacesClient`,
:class:`~kalends.cli.mission_client.SchedulesClient`), which check the viewer's role, and
renders. A viewer's page offers no write control, and a forged control from a viewer is
refused by the service.

Controls follow seed 002's panel rules: each form carries a request ID minted when the
page rendered and the revision it showed. Without script, the form posts and the browser
lands on the schedule again with the control's exact status read by its request ID; with
script, a lost reply leaves the control *uncertain* and offers **Check status** (that
same read) — nothing is ever sent again on its own. An applied human Play's word on
service supervision is shown either way: in the fragment with script, and without it as
a note on the page the browser lands on (:func:`supervision_note`).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from kalends.cli.mission_client import SchedulesClient, WorkspacesClient
from kalends.errors import InvalidInput, KalendsError, RevisionConflict
from kalends.identity import Role
from kalends.missions import ControlStatus, Workspace
from kalends.missions.controls import Action
from kalends.missions.limits import MAX_PAGE
from kalends.supervision import UNIT_NAME, State
from kalends.web.ledger_display import HistoryRow, nominal_text
from kalends.web.ledger_picture import Picture, recorded_year
from kalends.web.pages_questions import waiting_questions
from kalends.web.pages_tasks import due_today
from kalends.web.render import WebRoute, instant, instant_text, render
from kalends.web.schedule_display import (
    ACTION_LABELS,
    badge,
    condition_text,
    display_zone,
    dst_note,
    end_text,
    outcome_badge,
    sentence,
    why_not_now,
)
from kalends.web.schedule_ledger import WhyValues, history, ledger_values, why_values
from kalends.web.session import CSRF_FIELD, Viewer, check_csrf, viewer
from kalends.web.workspace_scope import find_workspace

__all__ = ["mint_request_id", "router", "supervision_note"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# How many upcoming slots a schedule's page shows (UI.md page 3).
UPCOMING_SLOTS = 10
# The controls a schedule page offers, in the order of its menu; the primary one first.
MENU_ACTIONS = (Action.RUN_NOW, Action.CHECK, Action.STOP, Action.DELETE)
PRIMARY_ACTIONS = (Action.PLAY, Action.RESUME, Action.PAUSE)
# A request ID: "web-" and 24 URL-safe characters (the services take 8-64).
REQUEST_ID_BYTES = 18


def mint_request_id() -> str:
    """A fresh request ID for one control on one rendered page."""
    return "web-" + secrets.token_urlsafe(REQUEST_ID_BYTES)


# Without script, a Play's word on supervision rides the redirect as a query parameter
# holding its state only, not as a flash kept on the server: the redirect stays stateless
# (whichever process answers the next GET, before or after a restart, shows it), and the
# parameter is one word of a closed set (:class:`~kalends.supervision.State`) whose
# sentence the page's template holds, so nothing a link carries reaches the page as
# text. The note shows only beside the exact status of the applied Play it belongs to,
# and a reload without the parameter drops it. (kalends' own decision.)
SUPERVISION_PARAM = "supervision"
# The states a page shows as a warning: supervision is not keeping the server running.
SUPERVISION_WARNINGS = frozenset({State.FAILED, State.UNAVAILABLE})


def _supervision_code(answer: dict[str, Any] | None) -> str | None:
    """The state of an applied Play's ``supervision`` answer, when it is one kalends
    knows; ``None`` when the Play had nothing to say."""
    if not answer:
        return None
    try:
        return State(str(answer.get("state"))).value
    except ValueError:
        return None


def supervision_note(code: str | None, status: ControlStatus | None) -> dict[str, Any] | None:
    """What the schedule page says of supervision for ``?supervision=CODE``: the state
    and whether it is a warning, when ``code`` is a known state and ``status`` is the
    exact status of an applied Play; else ``None`` (a forged or stray code shows
    nothing)."""
    if code is None or status is None:
        return None
    if status.status != "applied" or status.action != Action.PLAY.value:
        return None
    try:
        state = State(code)
    except ValueError:
        return None
    return {"state": state.value, "warning": state in SUPERVISION_WARNINGS, "unit": UNIT_NAME}


def _workspaces(who: Viewer) -> WorkspacesClient:
    return who.context.services.workspaces


def _schedules(who: Viewer) -> SchedulesClient:
    return who.context.services.schedules


def _nav(who: Viewer) -> list[Workspace]:
    return _workspaces(who).list(who.actor)


def _can_write(workspace: Workspace) -> bool:
    return workspace.role.rank >= Role.EDITOR.rank


def _controls(doc: dict[str, Any], workspace: Workspace) -> dict[str, Any]:
    """The controls a schedule page offers: none to a viewer or for an unread document;
    else those of its ``availableActions``, each with its own request ID."""
    if not _can_write(workspace) or doc.get("kind") == "tombstone":
        return {"primary": [], "menu": [], "edit": False}
    allowed = set(doc.get("availableActions") or ())

    def control(action: Action) -> dict[str, str]:
        label = ACTION_LABELS[action.value]
        return {"action": action.value, "label": label, "id": mint_request_id()}

    primary = [control(a) for a in PRIMARY_ACTIONS if a.value in allowed]
    menu = [control(a) for a in MENU_ACTIONS if a.value in allowed]
    return {"primary": primary, "menu": menu, "edit": Action.CONFIGURE.value in allowed}


# The Now page's memory of the viewer's previous visit (failures since then are shown).
SEEN_COOKIE = "kalends_seen"
# A visit this soon after the remembered one keeps it (a reload loses no failure).
SEEN_REFRESH = timedelta(minutes=30)
# Without a remembered visit, failures of this long ago are shown.
SEEN_DEFAULT = timedelta(days=1)


def _seen(request: Request, now: datetime) -> tuple[datetime, bool]:
    """Since when failures are news, and whether this visit moves that mark."""
    try:
        said = instant(request.cookies.get(SEEN_COOKIE))
    except ValueError:
        said = None
    if said is None or said.tzinfo is None or said > now:
        return now - SEEN_DEFAULT, True
    return said, now - said >= SEEN_REFRESH


@router.get("/")
def now_page(request: Request) -> Response:
    """Now: passages running, failures since the previous visit, tasks due or overdue
    (:func:`~kalends.web.pages_tasks.due_today`), launches in the next 24 hours, over
    every workspace and list of the viewer."""
    who = viewer(request)
    ctx = who.context
    now = ctx.services.store.clock.now()
    since, moves = _seen(request, now)
    spaces = _nav(who)
    running: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    upcoming: list[dict[str, Any]] = []
    horizon = now.timestamp() + 24 * 3600
    for ws in spaces:
        after: str | None = None
        while True:
            page = _schedules(who).page(who.actor, ws.id, after=after, limit=MAX_PAGE)
            for doc in page.items:
                if doc.get("kind") == "tombstone":
                    continue
                item = {"doc": doc, "workspace": ws, "zone": display_zone(doc)}
                pending = doc.get("pending")
                if pending:
                    running.append(item)
                latest = doc.get("latestResult") or {}
                if (
                    latest.get("outcome") in ("failed", "ended-without-report")
                    and _epoch(str(latest.get("settledAt") or "")) > since.timestamp()
                ):
                    failures.append(item)
                due = doc.get("nextDueAt")
                if due and _epoch(due) <= horizon:
                    upcoming.append(item)
            if page.next_after is None:
                break
            after = page.next_after
    upcoming.sort(key=lambda i: str(i["doc"]["nextDueAt"]))
    response = render(
        request,
        "now.html",
        {
            "title": "Now",
            "nav_workspaces": spaces,
            "workspaces": spaces,
            "running": running,
            "failures": failures,
            "since": since.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "upcoming": upcoming,
            "due_tasks": due_today(request, who),
            "questions": waiting_questions(who, spaces),
            "iso": instant_text,
            "badge": badge,
            "outcome_badge": outcome_badge,
            "sentence": sentence,
        },
        who=who,
    )
    if moves:
        stamp = now.astimezone(UTC).isoformat().replace("+00:00", "Z")
        response.set_cookie(SEEN_COOKIE, stamp, max_age=SEEN_COOKIE_SECONDS, samesite="lax")
    return response


# The remembered visit is kept for a year.
SEEN_COOKIE_SECONDS = 365 * 24 * 3600


def _epoch(text: str) -> float:
    at = instant(text)
    return at.timestamp() if at is not None else 0.0


@router.get("/w/{workspace}/schedules")
def schedules_page(
    request: Request,
    workspace: UUID,
    after: Annotated[UUID | None, Query()] = None,
) -> Response:
    """A workspace's schedules, a page of eight as the API reads them."""
    who = viewer(request)
    ws, nav = find_workspace(who, workspace)
    page = _schedules(who).page(who.actor, ws.id, after=after, limit=MAX_PAGE)
    members = _workspaces(who).members(who.actor, ws.id)
    rows = []
    for doc in page.items:
        rows.append(
            {
                "doc": doc,
                "zone": display_zone(doc) if doc.get("kind") != "tombstone" else "UTC",
                "controls": _controls(doc, ws),
            }
        )
    return render(
        request,
        "schedules.html",
        {
            "title": f"Schedules — {ws.name}",
            "nav_workspaces": nav,
            "workspace": ws,
            "members": members,
            "rows": rows,
            "after": after,
            "next_after": page.next_after,
            "can_write": _can_write(ws),
            "badge": badge,
            "outcome_badge": outcome_badge,
            "sentence": sentence,
            "end_text": end_text,
            "condition_text": condition_text,
        },
        who=who,
    )


def _detail_values(
    who: Viewer, ws: Workspace, nav: list[Workspace], schedule: UUID, request_id: str | None
) -> dict[str, Any]:
    schedules = _schedules(who)
    doc = schedules.detail(who.actor, schedule, workspace=ws.id)
    zone = display_zone(doc) if doc.get("kind") != "tombstone" else "UTC"
    upcoming: list[dict[str, Any]] = []
    if doc.get("kind") != "tombstone":
        upcoming = schedules.preview(who.actor, schedule, UPCOMING_SLOTS, workspace=ws.id)
    status = None
    if request_id:
        status = schedules.control_status(who.actor, schedule, request_id, workspace=ws.id)
    rows: list[HistoryRow] = []
    older = False
    picture: Picture | None = None
    now = who.context.services.store.clock.now()
    if doc.get("kind") != "tombstone":
        reads = who.context.services.schedules
        rows, older = history(reads, who.actor, schedule, ws.id, doc.get("results") or [])
        title = str(doc.get("title") or "Schedule")
        picture = recorded_year(reads, who.actor, schedule, ws.id, now=now, zone=zone, title=title)
    return {
        "title": str(doc.get("title") or "Schedule"),
        "nav_workspaces": nav,
        "workspace": ws,
        "doc": doc,
        "zone": zone,
        "upcoming": [{**s, "note": dst_note(s)} for s in upcoming],
        "controls": _controls(doc, ws),
        "can_write": _can_write(ws),
        "status": status,
        "conflict": None,
        "gates": why_not_now(doc, now),
        "history": rows,
        "history_older": older,
        "picture": picture,
        **WhyValues().values(),
        "nominal_text": nominal_text,
        "badge": badge,
        "outcome_badge": outcome_badge,
        "sentence": sentence,
        "end_text": end_text,
        "condition_text": condition_text,
    }


@router.get("/w/{workspace}/schedules/{schedule}")
def schedule_page(
    request: Request,
    workspace: UUID,
    schedule: UUID,
    request_id: Annotated[str | None, Query(alias="request", max_length=64)] = None,
    supervision: Annotated[str | None, Query(alias=SUPERVISION_PARAM)] = None,
    at: Annotated[str | None, Query()] = None,
) -> Response:
    """One schedule: state and controls, schedule card, Upcoming, History (with the
    ledger's slots between the passages), Why not now?, Why didn't it run? (``?at=`` a
    wall time in the schedule's zone: the answer, or its refusal with status 422),
    Technical details; with ``?request=ID``, that control's exact status, and with
    ``&supervision=STATE`` too, the note of :func:`supervision_note`."""
    who = viewer(request)
    ws, nav = find_workspace(who, workspace)
    values = _detail_values(who, ws, nav, schedule, request_id)
    values["supervision_note"] = supervision_note(supervision, values["status"])
    status = 200
    if values["doc"].get("kind") != "tombstone":
        why = why_values(who.context.services.schedules, who.actor, schedule, ws.id, at)
        values.update(why.values())
        status = why.status
    return render(request, "schedule.html", values, who=who, status=status)


@router.get("/w/{workspace}/schedules/{schedule}/ledger")
def ledger_page(
    request: Request,
    workspace: UUID,
    schedule: UUID,
    after: Annotated[str | None, Query(max_length=400)] = None,
    start: Annotated[str | None, Query(alias="from")] = None,
    end: Annotated[str | None, Query(alias="to")] = None,
) -> Response:
    """A schedule's full slot ledger: counts by outcome and reason over the window, the
    rows a page at a time in slot order (``?after=`` the cursor), and a GET form that
    narrows the window to days in the schedule's zone (``?from=DAY&to=DAY``); a refused
    day or cursor is said in the page with status 422."""
    who = viewer(request)
    ws, nav = find_workspace(who, workspace)
    values, status = ledger_values(who, ws, schedule, after=after, start=start, end=end)
    values["nav_workspaces"] = nav
    return render(request, "ledger.html", values, who=who, status=status)


@router.post("/w/{workspace}/schedules/{schedule}/control")
def control(
    request: Request,
    workspace: UUID,
    schedule: UUID,
    action: Annotated[str, Form(max_length=32)],
    request_id: Annotated[str, Form(max_length=64)],
    revision: Annotated[int, Form(ge=1)],
    csrf: Annotated[str, Form(alias=CSRF_FIELD, max_length=128)] = "",
) -> Response:
    """Sends one control with the request ID and revision the page showed; answers with
    the schedule page (its exact status read) or, for a script, the status fragment."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        chosen = Action(action)
    except ValueError:
        raise InvalidInput(f"action: no control {action!r}", field="action") from None
    if chosen is Action.CONFIGURE:
        raise InvalidInput("action: edit the schedule in its editor", field="action")
    ws, nav = find_workspace(who, workspace)
    fragment = request.headers.get("hx-request") == "true"
    try:
        outcome = _schedules(who).control(
            who.actor,
            schedule,
            chosen,
            request_id=request_id,
            expected_revision=revision,
            workspace=ws.id,
        )
    except RevisionConflict as exc:
        values = _detail_values(who, ws, nav, schedule, None)
        values["conflict"] = {
            "action": ACTION_LABELS.get(chosen.value, chosen.value),
            "request_id": request_id,
            "revision": revision,
            "message": exc.message,
        }
        template = "parts/control_result.html" if fragment else "schedule.html"
        return render(request, template, values, who=who, status=409)
    except KalendsError as exc:
        if not fragment:
            raise
        values = {"error": exc.message, "code": exc.code, "request_id": request_id}
        return render(request, "parts/control_result.html", values, who=who, status=400)
    if fragment:
        values = _detail_values(who, ws, nav, schedule, request_id)
        values["supervision"] = outcome.supervision  # (an applied human Play's, or None)
        return render(request, "parts/control_result.html", values, who=who)
    if chosen is Action.DELETE:
        return RedirectResponse(f"/w/{ws.id}/schedules", status_code=303)
    query = {"request": request_id}
    code = _supervision_code(outcome.supervision)
    if code is not None:
        query[SUPERVISION_PARAM] = code
    return RedirectResponse(f"/w/{ws.id}/schedules/{schedule}?{urlencode(query)}", status_code=303)


@router.get("/w/{workspace}/schedules/{schedule}/requests/{request_id}")
def check_status(
    request: Request,
    workspace: UUID,
    schedule: UUID,
    request_id: str,
    action: Annotated[str | None, Query(max_length=32)] = None,
    revision: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    """**Check status**: the exact status of a control by its request ID, a read only."""
    who = viewer(request)
    ws = _workspaces(who).get(who.actor, workspace)
    status = _schedules(who).control_status(
        who.actor,
        schedule,
        request_id,
        workspace=ws.id,
        action=action,
        expected_revision=revision,
    )
    values = {"status": status, "workspace": ws, "schedule_id": str(schedule)}
    return render(request, "parts/control_status.html", values, who=who)
