"""The editor: create a schedule, edit one, and the live preview beside the form.

Thin callers, as the other pages: the form's fields become a configuration
(:mod:`kalends.web.editor_form`), which the schedule service creates, configures or
previews (:meth:`~kalends.cli.mission_client.SchedulesClient.preview_draft`) with the
viewer as the acting actor; the service checks the role, so a viewer's forged post is
refused and writes nothing.

Creation carries a request ID minted when the form first renders and kept across every
re-render of the same draft (Preview, Add a calendar, errors), so a repeated post creates
one schedule. An edit carries the revision its form showed: a conflict re-renders the
form with the user's values kept beside the schedule's current ones. The preview answers
with a fragment that echoes the draft's sequence number; with script, a reply older than
the newest shown is dropped (``static/editor.js``), and without script the **Preview**
button renders the whole editor with the preview filled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from uuid import UUID
from zoneinfo import available_timezones

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from kalends.api.errors import status_of
from kalends.civil import get_zone, parse_rule, rule_to_json
from kalends.cli.mission_client import SchedulesClient
from kalends.errors import (
    ControlConflict,
    Forbidden,
    InvalidInput,
    KalendsError,
    NotFound,
    RevisionConflict,
    RunPrivilegeRequired,
)
from kalends.identity import Role
from kalends.missions import Workspace
from kalends.missions.config_condition import parse_condition
from kalends.missions.config_end import parse_end
from kalends.web import editor_form
from kalends.web.editor_form import FieldError, form_field, from_config, from_form, to_config
from kalends.web.pages_missions import mint_request_id
from kalends.web.render import WebRoute, render
from kalends.web.schedule_display import dst_note
from kalends.web.session import CSRF_FIELD, Viewer, check_csrf, viewer

__all__ = ["router"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

PREVIEW_SLOTS = 5
DEFAULT_ZONE = "UTC"
DEFAULT_TIME = "09:00"
# What the preview puts in place of a title or command not written yet: the preview is
# about timing, and says so.
_PLACEHOLDER_TITLE = "Untitled"
_PLACEHOLDER_COMMAND = ["true"]
_OPS = ("save", "preview", "add-calendar")
_SECTIONS = (
    ("title", "Title"),
    ("objective", "Objective"),
    ("notes", "Notes"),
    ("policy", "Frequency"),
    ("end", "End"),
    ("condition", "Condition"),
    ("restart", "Restart"),
    ("watch", "Watched conversations"),
    ("profile", "Profile"),
)


@lru_cache(maxsize=1)
def zone_names() -> list[str]:
    """The IANA zones the zone field offers."""
    return sorted(z for z in available_timezones() if "/" in z or z == "UTC")


def _schedules(who: Viewer) -> SchedulesClient:
    return who.context.services.schedules


def _workspace(who: Viewer, workspace: UUID) -> Workspace:
    """The workspace, when the viewer may edit its schedules (a viewer gets no editor)."""
    ws = who.context.services.workspaces.get(who.actor, workspace)
    if ws.role.rank < Role.EDITOR.rank:
        raise Forbidden(
            f"workspace: you are a {ws.role.value} of {ws.name}; editing schedules needs "
            "the editor role",
            field="workspace",
        )
    return ws


# The form's fields that steer the request rather than describe the schedule.
_CONTROL_FIELDS = (CSRF_FIELD, "request_id", "revision", "seq", "op", "schedule")


async def _posted(request: Request) -> tuple[dict[str, Any], dict[str, str]]:
    """The editor's fields and its control fields (``csrf``, ``request_id``, ``revision``,
    ``seq``, ``op``, ``schedule``) from the posted form."""
    form = await request.form()
    pairs = [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
    control = {k: v for k, v in pairs if k in _CONTROL_FIELDS}
    return from_form(pairs), control


def _op(control: Mapping[str, str]) -> str:
    op = control.get("op", "save")
    return op if op in _OPS or op.startswith("remove-calendar-") else "save"


def _calendar_op(op: str, fields: dict[str, Any]) -> None:
    """Add a calendar row, or remove one, keeping every other value."""
    rows = list(fields["calendars"])
    if op == "add-calendar" and len(rows) < editor_form.MAX_EXTRA_CALENDARS:
        kind = fields["frequency"] if fields["frequency"] in editor_form.CALENDAR_KINDS else "daily"
        rows.append(editor_form.calendar_row(kind))
    elif op.startswith("remove-calendar-"):
        index = op.removeprefix("remove-calendar-")
        if index.isdigit() and 1 <= int(index) <= len(rows):
            rows.pop(int(index) - 1)
    fields["calendars"] = rows


def _seq(control: Mapping[str, str]) -> int:
    text = control.get("seq", "0")
    return int(text) if text.isdigit() and len(text) < 12 else 0


# --- errors ------------------------------------------------------------------------------------


# The service's path to the field its message begins with ("policy.expression: "): a
# form shows the message beside the field itself, so the path is left out there.
_SERVICE_PATH = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")


def _errors_of(exc: KalendsError, fields: Mapping[str, Any]) -> list[FieldError]:
    field = form_field(exc.details.get("field"), fields)
    message = exc.message if field is None else _SERVICE_PATH.sub("", exc.message, count=1)
    return [FieldError(field, message[:1].upper() + message[1:])]


def _by_field(errors: list[FieldError]) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in errors:
        if e.field is not None and e.field not in out:
            out[e.field] = e.message
    return out


# --- the preview -------------------------------------------------------------------------------


def _slots(slots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**s, "note": dst_note(s)} for s in slots]


def _for_preview(config: dict[str, Any], *, edit: bool) -> dict[str, Any]:
    """``config`` with a blank title or command stood in for, so the timing previews."""
    draft = dict(config)
    if "title" in draft and not str(draft["title"]).strip():
        if edit:
            draft.pop("title")
        else:
            draft["title"] = _PLACEHOLDER_TITLE
    profile = draft.get("profile")
    if isinstance(profile, Mapping) and not profile.get("command"):
        if edit:
            draft.pop("profile")
        else:
            draft["profile"] = {**profile, "command": _PLACEHOLDER_COMMAND}
    return draft


def _shown_zone(zone: object) -> str:
    """The zone the preview shows times in: the form's, when it names one."""
    try:
        get_zone(zone)
    except InvalidInput:
        return DEFAULT_ZONE
    return str(zone)


def _preview(
    who: Viewer,
    ws: Workspace,
    fields: dict[str, Any],
    *,
    seq: int = 0,
    detail: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What the preview region shows for the form's draft (an edit's, with ``detail``)."""
    shown: dict[str, Any] = {
        "seq": seq,
        "zone": _shown_zone(fields.get("zone")),
        "edit": detail is not None,
        "error": None,
    }
    config, errors = to_config(fields)
    if errors:
        shown["error"] = errors[0].message
        return shown
    try:
        if detail is None:
            answer = _schedules(who).preview_draft(
                who.actor, ws.id, _for_preview(config, edit=False), PREVIEW_SLOTS
            )
        else:
            changes = _for_preview(_changes(config, fields, detail), edit=True)
            answer = _schedules(who).preview_draft(
                who.actor, ws.id, changes, PREVIEW_SLOTS, schedule=str(detail["id"])
            )
    except (InvalidInput, ControlConflict) as exc:
        shown["error"] = _SERVICE_PATH.sub("", exc.message, count=1)
        return shown
    shown.update(
        sentence=answer["sentence"],
        slots=_slots(answer["slots"]),
        warnings=answer["warnings"],
        before=_slots(answer.get("before") or []),
        catch_up=bool(answer.get("catchUp")),
        catch_up_slot=answer.get("catchUpSlot"),
    )
    return shown


# --- an edit's changes -------------------------------------------------------------------------


def _canonical(key: str, value: Any) -> Any:
    """A configuration field as the service writes it back, when it parses; else as given."""
    try:
        if key == "policy":
            kind = value.get("kind") if isinstance(value, Mapping) else None
            return value if kind == "on-change" else rule_to_json(parse_rule(value))
        if key == "end":
            return parse_end(value).to_json()
        if key == "condition":
            parsed = parse_condition(value)
            return None if parsed is None else parsed.to_json()
    except (InvalidInput, AttributeError, TypeError):
        return value
    return value


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _changes(
    config: Mapping[str, Any], fields: Mapping[str, Any], detail: Mapping[str, Any]
) -> dict[str, Any]:
    """The fields of ``config`` that differ from the saved schedule's (``detail``). While a
    passage is pending only the objective and notes may change: nothing else is sent. The
    profile is sent only when its command or directory changed or the environment is
    replaced (whose values are never shown)."""
    locks = detail.get("locks") or {}
    keys = ("objective", "notes") if locks.get("structural") else tuple(k for k, _ in _SECTIONS)
    changes: dict[str, Any] = {}
    for key in keys:
        if key not in config:
            continue
        if key == "profile":
            saved = detail.get("profile") or {}
            mine = config["profile"]
            if (
                mine.get("command") != saved.get("command")
                or mine.get("cwd") != saved.get("cwd")
                or fields.get("env_replace")
                or (not saved.get("envNames") and mine.get("env"))
            ):
                changes["profile"] = mine
            continue
        if not _same(_canonical(key, config[key]), _canonical(key, detail.get(key))):
            changes[key] = config[key]
    return changes


def _comparison(mine: Mapping[str, Any], current: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What the user had beside what is saved now, section by section."""
    rows = []
    for key, label in _SECTIONS:
        if key not in mine:
            continue
        a: Any = mine.get(key)
        b: Any = current.get(key)
        if key == "profile":
            a = {k: (a or {}).get(k) for k in ("command", "cwd")}
            b = {k: (b or {}).get(k) for k in ("command", "cwd")}
        rows.append(
            {
                "label": label,
                "mine": _said(_canonical(key, a)),
                "saved": _said(_canonical(key, b)),
                "differs": not _same(_canonical(key, a), _canonical(key, b)),
            }
        )
    return rows


def _said(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


# --- rendering ---------------------------------------------------------------------------------


def _locks(detail: Mapping[str, Any] | None) -> dict[str, str | None]:
    """Why parts of the form are read-only (``None``: editable)."""
    if detail is None:
        return {"all": None, "structure": None, "template": None}
    locks = detail.get("locks") or {}
    everything = None
    if locks.get("readOnly"):
        everything = (
            "the pending passage's outcome is uncertain: the schedule is read-only until it "
            "is reconciled"
        )
    elif "configure" not in (detail.get("availableActions") or ()):
        everything = f"the schedule is {detail.get('state')}: it cannot be edited now"
    structure = None
    if locks.get("structural"):
        structure = "a passage is pending: only the objective and notes can change until it settles"
    template = None
    if locks.get("template"):
        template = "a task was already created from it"
    return {"all": everything, "structure": structure, "template": template}


def _page(
    request: Request,
    who: Viewer,
    ws: Workspace,
    fields: dict[str, Any],
    *,
    request_id: str,
    detail: Mapping[str, Any] | None = None,
    revision: int | None = None,
    errors: list[FieldError] | None = None,
    status: int = 200,
    seq: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> Response:
    errors = errors or []
    edit = detail is not None
    action = (
        f"/w/{ws.id}/schedules/{detail['id']}/edit"
        if detail is not None
        else f"/w/{ws.id}/schedules/new"
    )
    by_field = _by_field(errors)
    first = next((e.field for e in errors if e.field is not None), None)
    values = {
        "title": f"Edit — {detail.get('title')}" if detail is not None else "New schedule",
        "nav_workspaces": who.context.services.workspaces.list(who.actor),
        "workspace": ws,
        "f": fields,
        "doc": detail,
        "edit": edit,
        "action": action,
        "request_id": request_id,
        "revision": revision,
        "errors": errors,
        "field_errors": by_field,
        "first_error": first,
        "locks": _locks(detail),
        "preview": _preview(who, ws, fields, seq=seq, detail=detail),
        "zones": zone_names(),
        "frequencies": editor_form.FREQUENCIES,
        "calendar_kinds": editor_form.CALENDAR_KINDS,
        "conditions": editor_form.CONDITIONS,
        "weekdays": editor_form.WEEKDAYS,
        "max_extra": editor_form.MAX_EXTRA_CALENDARS,
        "conflict": None,
        "notice": None,
        **(extra or {}),
    }
    return render(request, "editor.html", values, who=who, status=status)


# --- create ------------------------------------------------------------------------------------


@router.get("/w/{workspace}/schedules/new")
def new_schedule(request: Request, workspace: UUID) -> Response:
    """The editor for a new schedule, with its request ID minted now."""
    who = viewer(request)
    ws = _workspace(who, workspace)
    fields = editor_form.blank(DEFAULT_ZONE)
    fields["daily_time"] = DEFAULT_TIME
    return _page(request, who, ws, fields, request_id=mint_request_id())


@router.post("/w/{workspace}/schedules/new")
async def create_schedule(request: Request, workspace: UUID) -> Response:
    """Create the schedule the form says (Save), or render the form again: Preview, Add or
    Remove a calendar, or the errors beside their fields (422)."""
    fields, control = await _posted(request)
    # The services block on the database: off the event loop, as a plain route runs.
    return await run_in_threadpool(_create, request, workspace, fields, control)


def _create(
    request: Request, workspace: UUID, fields: dict[str, Any], control: dict[str, str]
) -> Response:
    who = viewer(request)
    check_csrf(request, who, control.get(CSRF_FIELD))
    ws = who.context.services.workspaces.get(who.actor, workspace)
    request_id = control.get("request_id") or mint_request_id()
    op = _op(control)
    if op != "save":
        _calendar_op(op, fields)
        return _page(request, who, _workspace(who, workspace), fields, request_id=request_id)
    config, errors = to_config(fields)
    errors += _missing(config)
    if errors:
        errors += _timing_errors(who, ws, config, fields, errors)
    else:
        try:
            receipt = _schedules(who).create(who.actor, ws.id, config, request_id=request_id)
        except Forbidden as exc:
            if not isinstance(exc, RunPrivilegeRequired):
                raise
            errors = [FieldError(None, exc.message)]
            return _page(request, who, ws, fields, request_id=request_id, errors=errors, status=403)
        except KalendsError as exc:
            errors = _errors_of(exc, fields)
            status = status_of(exc)
            return _page(
                request, who, ws, fields, request_id=request_id, errors=errors, status=status
            )
        return RedirectResponse(f"/w/{ws.id}/schedules/{receipt.mission_id}", status_code=303)
    return _page(request, who, ws, fields, request_id=request_id, errors=errors, status=422)


def _missing(config: Mapping[str, Any]) -> list[FieldError]:
    """A new schedule's required fields left blank (said together with the other mistakes,
    where the service would stop at the first)."""
    missing = []
    if not str(config.get("title", "")).strip():
        missing.append(FieldError("title", "Title: give the schedule a title"))
    if not (config.get("profile") or {}).get("command"):
        missing.append(FieldError("command", "Command: give the program to run"))
    return missing


def _timing_errors(
    who: Viewer,
    ws: Workspace,
    config: dict[str, Any],
    fields: Mapping[str, Any],
    known: list[FieldError],
) -> list[FieldError]:
    """The service's error on the rest of a draft that already has mistakes (its title or
    command stood in for), unless one of ``known`` is on the same field."""
    if any(e.field not in ("title", "command") for e in known):
        return []
    try:
        _schedules(who).preview_draft(who.actor, ws.id, _for_preview(config, edit=False), 1)
    except InvalidInput as exc:
        found = _errors_of(exc, fields)
        return [e for e in found if e.field not in {k.field for k in known}]
    return []


# --- edit --------------------------------------------------------------------------------------


def _saved_fields(detail: Mapping[str, Any]) -> dict[str, Any]:
    return from_config(detail, zone=DEFAULT_ZONE)


def _merged(fields: dict[str, Any], detail: Mapping[str, Any]) -> dict[str, Any]:
    """The posted fields, with what the form showed read-only (and so did not post) taken
    from the saved schedule."""
    locks = _locks(detail)
    if locks["all"] is None and locks["structure"] is None:
        return fields
    saved = _saved_fields(detail)
    if locks["all"] is not None:
        return saved
    return {**saved, "objective": fields["objective"], "notes": fields["notes"]}


@router.get("/w/{workspace}/schedules/{schedule}/edit")
def edit_schedule(request: Request, workspace: UUID, schedule: UUID) -> Response:
    """The editor of a saved schedule: its values, the revision they are of, and a request
    ID minted now."""
    who = viewer(request)
    ws = _workspace(who, workspace)
    detail = _schedules(who).detail(who.actor, schedule, workspace=ws.id)
    if detail.get("kind") == "tombstone":
        raise NotFound(f"schedule: {schedule} is deleted", field="schedule")
    return _page(
        request,
        who,
        ws,
        _saved_fields(detail),
        request_id=mint_request_id(),
        detail=detail,
        revision=int(detail["revision"]),
    )


@router.post("/w/{workspace}/schedules/{schedule}/edit")
async def save_schedule(request: Request, workspace: UUID, schedule: UUID) -> Response:
    """Save the edit at the revision the form showed (Save), or render the form again."""
    posted, control = await _posted(request)
    return await run_in_threadpool(_save, request, workspace, schedule, posted, control)


def _save(
    request: Request,
    workspace: UUID,
    schedule: UUID,
    posted: dict[str, Any],
    control: dict[str, str],
) -> Response:
    who = viewer(request)
    check_csrf(request, who, control.get(CSRF_FIELD))
    ws = who.context.services.workspaces.get(who.actor, workspace)
    schedules = _schedules(who)
    detail = schedules.detail(who.actor, schedule, workspace=ws.id)
    if detail.get("kind") == "tombstone":
        raise NotFound(f"schedule: {schedule} is deleted", field="schedule")
    fields = _merged(posted, detail)
    request_id = control.get("request_id") or mint_request_id()
    revision_text = control.get("revision", "")
    revision = int(revision_text) if revision_text.isdigit() else int(detail["revision"])
    op = _op(control)

    def again(**kw: Any) -> Response:
        kw.setdefault("request_id", request_id)
        kw.setdefault("revision", revision)
        return _page(request, who, ws, fields, detail=detail, **kw)

    if op != "save":
        _calendar_op(op, fields)
        return again()
    config, errors = to_config(fields)
    if errors:
        return again(errors=errors, status=422)
    changes = _changes(config, fields, detail)
    if not changes:
        return again(extra={"notice": "Nothing changed: there is nothing to save."})
    try:
        schedules.configure(
            who.actor,
            schedule,
            changes,
            request_id=request_id,
            expected_revision=revision,
            workspace=ws.id,
        )
    except RevisionConflict as exc:
        current = schedules.detail(who.actor, schedule, workspace=ws.id)
        conflict = {
            "message": exc.message,
            "revision": revision,
            "current": current.get("revision"),
            "rows": _comparison(config, current),
        }
        # The refused request is settled (its revision is gone): the next save is a new
        # request, at the revision now shown.
        return _page(
            request,
            who,
            ws,
            fields,
            detail=current,
            request_id=mint_request_id(),
            revision=int(current["revision"]),
            status=409,
            extra={"conflict": conflict},
        )
    except ControlConflict as exc:
        # A refusal is recorded under its request ID: the next save is a new request.
        return again(
            errors=[FieldError(None, exc.message)], status=409, request_id=mint_request_id()
        )
    except (InvalidInput, RunPrivilegeRequired) as exc:
        return again(errors=_errors_of(exc, fields), status=status_of(exc))
    return RedirectResponse(
        f"/w/{ws.id}/schedules/{schedule}?request={request_id}", status_code=303
    )


# --- the preview fragment ----------------------------------------------------------------------


@router.post("/w/{workspace}/schedules/preview")
async def preview_fragment(request: Request, workspace: UUID) -> Response:
    """The preview region for the posted draft (an edit's when it names ``schedule``), with
    the draft's sequence number echoed."""
    fields, control = await _posted(request)
    return await run_in_threadpool(_preview_fragment, request, workspace, fields, control)


def _preview_fragment(
    request: Request, workspace: UUID, fields: dict[str, Any], control: dict[str, str]
) -> Response:
    who = viewer(request)
    check_csrf(request, who, control.get(CSRF_FIELD))
    ws = _workspace(who, workspace)
    detail = None
    schedule = control.get("schedule", "")
    if schedule:
        detail = _schedules(who).detail(who.actor, schedule, workspace=ws.id)
        fields = _merged(fields, detail)
    shown = _preview(who, ws, fields, seq=_seq(control), detail=detail)
    return render(request, "parts/preview.html", {"p": shown}, who=who)
