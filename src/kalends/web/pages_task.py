"""A task's page: checklist, schedule, reminders, comments, attachments, history and
series timeline.

Thin callers, as the other pages: each read goes through the protocols the CLI uses
(:class:`~kalends.cli.task_client.TaskClient`, :class:`~kalends.cli.task_client.SeriesClient`,
:class:`~kalends.cli.task_client.TaskChanges`) with the signed-in person as the acting
actor, and each post calls one service method after the CSRF check; the services check
the role, so a viewer's page offers no write and a viewer's forged post is refused (403)
with nothing written.

Every write of the task carries the task revision the page showed, and a series' pause,
resume and stop the series revision. A conflict (409) renders the page again with what
holds now, and a schedule form keeps the values typed beside the saved ones. Without
script every form posts and lands on the page again (303).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import quote
from uuid import UUID

from fastapi import APIRouter, File, Form, Path, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from kalends.api.errors import status_of
from kalends.api.uploads import read_upload, upload_media_type, upload_name
from kalends.civil import parse_date
from kalends.cli.series import series_rule
from kalends.cli.task_views import WEEKDAY_NAMES, payload_lines, rule_text
from kalends.errors import InvalidInput, KalendsError, RevisionConflict
from kalends.identity import Role
from kalends.tasks import Task, TimedValue, TreeNode
from kalends.tasks.series import SeriesView
from kalends.tasks.series_views import today_in
from kalends.tasks.values import MAX_ATTACHMENT_BYTES, MAX_COMMENT_BYTES
from kalends.web import series_timeline, task_services
from kalends.web.pages_editor import zone_names
from kalends.web.render import WebRoute, instant_text, render, viewer_zone
from kalends.web.schedule_display import Badge
from kalends.web.session import CSRF_FIELD, Viewer, check_csrf, viewer
from kalends.web.task_schedule_form import (
    DUE_KINDS,
    UNITS,
    FieldError,
    fields_from_form,
    fields_of,
    plain,
    row_of,
    schedule_json,
    without_rows,
)

__all__ = ["router"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# A task by its ID or its short reference.
TaskRefPath = Annotated[str, Path(min_length=1, max_length=64)]
SERIES_KINDS = (
    ("daily", "Every N days"),
    ("weekdays", "On weekdays"),
    ("completion_relative", "N days after each completion"),
)
WEEKDAYS = tuple(enumerate((n.title() for n in WEEKDAY_NAMES), start=1))
# A state as the page shows it: a word, a symbol (the word says it) and a tone.
STATE_BADGES = {
    "open": Badge("Open", "○", "idle"),
    "completed": Badge("Done", "✓", "ok"),
    "done": Badge("Done", "✓", "ok"),
    "skipped": Badge("Skipped", "↷", "idle"),
    "reopened": Badge("Reopened", "↺", "warn"),
    "released": Badge("Open, series ended", "○", "idle"),
    "outstanding": Badge("Outstanding", "●", "warn"),
    "missed": Badge("Missed", "✕", "bad"),
    "no-time": Badge("No occurrence", "⚠", "warn"),
    "active": Badge("Active", "▶", "ok"),
    "paused": Badge("Paused", "‖", "warn"),
    "stopped": Badge("Stopped", "■", "idle"),
    "ended": Badge("Ended", "■", "idle"),
}


def _page_url(ref: str) -> str:
    return f"/tasks/{quote(ref, safe='')}"


# --- reading the page --------------------------------------------------------------------


def _find(
    nodes: list[TreeNode] | tuple[TreeNode, ...], task: Task
) -> tuple[TreeNode | None, Task | None]:
    """The task's node in the list's trees, and its parent's task."""
    stack: list[tuple[TreeNode, Task | None]] = [(n, None) for n in nodes]
    while stack:
        node, parent = stack.pop()
        if node.task.id == task.id:
            return node, parent
        stack.extend((kid, node.task) for kid in node.children)
    return None, None


def _blank_series_form(task: Task, zone: str) -> dict[str, str | list[str]]:
    """The "make it a series" form as first shown: daily, at the task's own due wall time
    and zone when it has one."""
    due = task.due
    return {
        "kind": "daily",
        "every": "1",
        "days": [],
        "after": "1",
        "time": due.local.strftime("%H:%M") if isinstance(due, TimedValue) else "",
        "zone": due.zone if isinstance(due, TimedValue) else zone,
        "until": "",
        "count": "",
    }


def _values(
    request: Request,
    who: Viewer,
    ref: str,
    *,
    form: dict[str, Any] | None = None,
    series_form: dict[str, Any] | None = None,
    errors: list[FieldError] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the task page shows, read for ``who``."""
    services = who.context.services
    tasks = task_services.tasks(who)
    detail = tasks.get(who.actor, ref)
    task = detail.task
    role = detail.list.role
    can_write = role is not None and role.rank >= Role.EDITOR.rank and not task.trashed
    nodes = tasks.tree(who.actor, task.list_id)
    node, parent = _find(nodes, task)
    history = tasks.history(who.actor, task.id)
    handles = {
        a.id: a.display_name or a.handle
        for a, _ in services.directory.members(who.actor, task.list_id)
    }
    default_zone = viewer_zone(request) or "UTC"
    view: SeriesView | None = None
    timeline: list[series_timeline.Occurrence] = []
    upcoming: list[series_timeline.Upcoming] = []
    outstanding: Task | None = None
    if task.series_id is not None and task.parent_id is None:
        view = task_services.series(who).get(who.actor, task.id)
        roots = [n.task for n in nodes if n.task.series_id == view.id]
        today = today_in(services.store.clock.now(), view.zone)
        timeline = series_timeline.occurrences(view, roots, today)
        upcoming = series_timeline.upcoming(view, view.next_date)
        outstanding = next((t for t in roots if t.id == view.outstanding_task_id), None)
    move_parents = _move_choices(nodes, task) if can_write else []
    move_lists = _list_choices(who, task) if can_write else []
    errors = errors or []
    field_errors: dict[str, str] = {}
    for e in errors:
        if e.field is not None:
            field_errors.setdefault(e.field, e.message)
    return {
        "title": task.title,
        "nav_workspaces": services.workspaces.list(who.actor),
        "detail": detail,
        "task": task,
        "node": node,
        "parent": parent,
        "history": history,
        "handles": handles,
        "can_write": can_write,
        "role": role.value if role is not None else "",
        "f": form if form is not None else fields_of(task, default_zone),
        "sf": series_form if series_form is not None else _blank_series_form(task, default_zone),
        "errors": errors,
        "field_errors": field_errors,
        "first_error": next((e.field for e in errors if e.field is not None), None),
        "view": view,
        "rule_text": rule_text(view) if view is not None else "",
        "timeline": timeline,
        "upcoming": upcoming,
        "outstanding": outstanding,
        "move_parents": move_parents,
        "move_lists": move_lists,
        "due_kinds": DUE_KINDS,
        "units": UNITS,
        "series_kinds": SERIES_KINDS,
        "weekdays": WEEKDAYS,
        "zones": zone_names(),
        "badges": STATE_BADGES,
        "max_attachment": MAX_ATTACHMENT_BYTES,
        "conflict": None,
        "problem": None,
        "notice": request.query_params.get("done", "")[:32],
        "preview": False,
        "iso": instant_text,
        "shown_zone": default_zone,
        "event_words": lambda e: "; ".join(
            line for k, v in e.payload.items() for line in payload_lines(k, v, handles)
        ),
        **(extra or {}),
    }


@router.get("/tasks/{task}")
def task_page(request: Request, task: TaskRefPath) -> Response:
    """A task: its state, checklist, schedule, reminders, comments, attachments, history,
    and, for a series, its timeline and next dates."""
    who = viewer(request)
    return render(request, "task.html", _values(request, who, task), who=who)


# --- the writes ----------------------------------------------------------------------------


def _refused(
    request: Request,
    who: Viewer,
    ref: str,
    exc: KalendsError,
    what: str,
    series_form: dict[str, Any] | None = None,
    beside: tuple[str, ...] = (),
) -> Response:
    """The page again, saying why ``what`` was refused; a conflict says what holds now
    (a series form keeps the values typed); a mistake in one of the ``beside`` fields is
    said beside it too."""
    status = status_of(exc)
    message = plain(exc.message)
    key = "conflict" if isinstance(exc, RevisionConflict) else "problem"
    said = {key: {"what": what, "message": message}}
    field = getattr(exc, "field", None)
    errors = [FieldError(field, message)] if field in beside else None
    values = _values(request, who, ref, series_form=series_form, errors=errors, extra=said)
    return render(request, "task.html", values, who=who, status=status)


def _done(ref: str, what: str, anchor: str) -> RedirectResponse:
    return RedirectResponse(f"{_page_url(ref)}?done={quote(what)}#{anchor}", status_code=303)


Csrf = Annotated[str, Form(alias=CSRF_FIELD, max_length=128)]
Revision = Annotated[int, Form(ge=1)]


@router.post("/tasks/{task}/page/schedule")
async def post_schedule(request: Request, task: TaskRefPath) -> Response:
    """Saves the schedule form at the task revision it showed; mistakes are said beside
    their fields (422), a conflict keeps the typed values beside the saved ones (409)."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    return await run_in_threadpool(_save_schedule, request, task, fields)


def _save_schedule(request: Request, ref: str, posted: dict[str, str]) -> Response:
    who = viewer(request)
    check_csrf(request, who, posted.get(CSRF_FIELD))
    fields = fields_from_form(posted)
    revision_text = posted.get("revision", "")
    if not revision_text.isdigit():
        raise InvalidInput("revision: the task revision the form showed", field="revision")
    data, errors = schedule_json(fields)

    def again(status: int, errs: list[FieldError], **extra: Any) -> Response:
        values = _values(request, who, ref, form=fields, errors=errs, extra=extra)
        return render(request, "task.html", values, who=who, status=status)

    if errors:
        return again(422, errors)
    if posted.get("op") == "preview":
        return again(200, [], preview=True)
    try:
        task_services.changes(who).schedule(
            who.actor,
            ref,
            int(revision_text),
            lambda _current: without_rows(data),
            from_current=False,
        )
    except RevisionConflict as exc:
        current = task_services.tasks(who).get(who.actor, ref).task
        saved = fields_of(current, fields["due_zone"] or "UTC")
        rows = _comparison(fields, saved)
        conflict = {"what": "Schedule", "message": plain(exc.message), "rows": rows}
        return again(409, [], conflict=conflict)
    except KalendsError as exc:
        if status_of(exc) not in (409, 413, 422):
            raise
        field = row_of(data, exc.details.get("field"))
        return again(status_of(exc), [FieldError(field, plain(exc.message))])
    return _done(ref, "schedule", "schedule-h")


def _said(f: Mapping[str, Any], key: str) -> str:
    if key == "due":
        if f["due_kind"] == "date":
            return f["due_date"] or "—"
        if f["due_kind"] == "datetime":
            return f"{f['due_local'].replace('T', ' ')} {f['due_zone']}"
        return "none"
    if key == "reminders":
        said = []
        for r in f["reminders"]:
            if r["fixed"] and not r["remove"]:
                said.append(f"{r['channel']} at {r['local'].replace('T', ' ')} {r['zone']}")
            elif not r["fixed"] and r["amount"]:
                said.append(f"{r['channel']} {r['amount']} {r['unit']} before")
        return "; ".join(said) or "none"
    return str(f[key] or "—")


def _comparison(mine: Mapping[str, Any], saved: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, label in (
        ("planned", "Planned"),
        ("due", "Due"),
        ("priority", "Priority"),
        ("reminders", "Reminders"),
    ):
        a, b = _said(mine, key), _said(saved, key)
        rows.append({"label": label, "mine": a, "saved": b, "differs": a != b})
    return rows


@router.post("/tasks/{task}/page/comment")
def post_comment(
    request: Request,
    task: TaskRefPath,
    body: Annotated[str, Form(max_length=MAX_COMMENT_BYTES)] = "",
    csrf: Csrf = "",
) -> Response:
    """Adds a comment as the viewer."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    if not body.strip():
        error = FieldError("comment", "Comment: write something first")
        values = _values(request, who, task, errors=[error], extra={"comment_text": body})
        return render(request, "task.html", values, who=who, status=422)
    try:
        task_services.tasks(who).comment(who.actor, task, body)
    except InvalidInput as exc:
        error = FieldError("comment", plain(exc.message))
        values = _values(request, who, task, errors=[error], extra={"comment_text": body})
        return render(request, "task.html", values, who=who, status=422)
    return _done(task, "comment", "comments-h")


@router.post("/tasks/{task}/page/attachments")
def post_attachment(
    request: Request,
    task: TaskRefPath,
    file: Annotated[UploadFile, File()],
    csrf: Csrf = "",
) -> Response:
    """Uploads a file as an attachment (at most :data:`MAX_ATTACHMENT_BYTES`)."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        name = upload_name(None, file.filename)
        media = upload_media_type(None, file.content_type, name)
        data = read_upload(file)
        task_services.tasks(who).attach(who.actor, task, name, media, data)
    except InvalidInput as exc:
        error = FieldError("file", plain(exc.message))
        values = _values(request, who, task, errors=[error])
        return render(request, "task.html", values, who=who, status=status_of(exc))
    return _done(task, "attachment", "attachments-h")


@router.post("/tasks/{task}/page/complete")
def post_complete(
    request: Request,
    task: TaskRefPath,
    revision: Revision,
    subtree: Annotated[str, Form(max_length=8)] = "",
    csrf: Csrf = "",
) -> Response:
    """Completes the task (with its open checklist when ``subtree`` is ticked)."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        task_services.tasks(who).complete(
            who.actor, task, revision, complete_subtree=subtree == "1"
        )
    except KalendsError as exc:
        if status_of(exc) not in (409, 422):
            raise
        return _refused(request, who, task, exc, "Done")
    return _done(task, "completed", "task-state")


@router.post("/tasks/{task}/page/reopen")
def post_reopen(
    request: Request, task: TaskRefPath, revision: Revision, csrf: Csrf = ""
) -> Response:
    """Reopens the settled task (and its settled ancestors); a series' successor stays."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        task_services.tasks(who).reopen(who.actor, task, revision)
    except KalendsError as exc:
        if status_of(exc) not in (409, 422):
            raise
        return _refused(request, who, task, exc, "Reopen")
    return _done(task, "reopened", "task-state")


@router.post("/tasks/{task}/page/skip")
def post_skip(request: Request, task: TaskRefPath, revision: Revision, csrf: Csrf = "") -> Response:
    """Skips the series' outstanding occurrence whole; the next one is created."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        task_services.changes(who).skip(who.actor, task, revision)
    except KalendsError as exc:
        if status_of(exc) not in (409, 422):
            raise
        return _refused(request, who, task, exc, "Skip")
    return _done(task, "skipped", "series-h")


@router.post("/tasks/{task}/page/series/start")
async def post_series_start(request: Request, task: TaskRefPath) -> Response:
    """Makes the task (a root, unfinished) the first occurrence of a series."""
    form = await request.form()
    days = [v for v in form.getlist("days") if isinstance(v, str)]
    fields = {k: v for k, v in form.items() if isinstance(v, str) and k != "days"}
    return await run_in_threadpool(_start_series, request, task, fields, days)


# The series form's field of a service error's ``field``.
_SERIES_FIELDS = {
    "rule.interval_days": "s_every",
    "every": "s_every",
    "weekdays": "s_days",
    "after-completion": "s_after",
    "rule.kind": "s_kind",
    "rule": "s_kind",
    "time": "s_time",
    "time_of_day": "s_time",
    "zone": "s_zone",
    "end_date": "s_until",
    "until": "s_until",
    "count": "s_count",
}


def _series_field(field: str, kind: str) -> str | None:
    if field.startswith("rule.days"):
        return "s_after" if kind == "completion_relative" else "s_days"
    return _SERIES_FIELDS.get(field)


def _start_series(request: Request, ref: str, posted: dict[str, str], days: list[str]) -> Response:
    who = viewer(request)
    check_csrf(request, who, posted.get(CSRF_FIELD))
    sf: dict[str, Any] = {
        "kind": posted.get("kind", "daily"),
        "every": posted.get("every", "").strip(),
        "days": days,
        "after": posted.get("after", "").strip(),
        "time": posted.get("time", "").strip(),
        "zone": posted.get("zone", "").strip(),
        "until": posted.get("until", "").strip(),
        "count": posted.get("count", "").strip(),
    }
    revision_text = posted.get("revision", "")
    if not revision_text.isdigit():
        raise InvalidInput("revision: the task revision the form showed", field="revision")
    try:
        kind = sf["kind"]
        rule = series_rule(
            kind == "daily",
            (sf["every"] or "1") if kind == "daily" else None,
            ",".join(days) if kind == "weekdays" else None,
            (sf["after"] or "0") if kind == "completion_relative" else None,
        )
        until = parse_date(sf["until"], "until") if sf["until"] else None
        count = None
        if sf["count"]:
            if not sf["count"].isdigit():
                raise InvalidInput(f"count: a whole number ≥ 1, got {sf['count']!r}", field="count")
            count = int(sf["count"])
        task_services.changes(who).repeat(
            who.actor,
            ref,
            int(revision_text),
            rule,
            time_of_day=sf["time"] or None,
            zone=sf["zone"] or None,
            end_date=until,
            count=count,
        )
    except KalendsError as exc:
        if status_of(exc) not in (409, 422):
            raise
        if isinstance(exc, RevisionConflict):
            return _refused(request, who, ref, exc, "Make it a series", series_form=sf)
        name = _series_field(str(exc.details.get("field") or ""), sf["kind"])
        values = _values(
            request, who, ref, series_form=sf, errors=[FieldError(name, plain(exc.message))]
        )
        return render(request, "task.html", values, who=who, status=status_of(exc))
    return _done(ref, "series", "series-h")


def _series_change(name: str) -> None:
    """Registers ``POST /tasks/{task}/page/series/NAME``: the series service's change of
    that name at the series revision the page showed."""

    def change(
        request: Request, task: TaskRefPath, series_revision: Revision, csrf: Csrf = ""
    ) -> Response:
        who = viewer(request)
        check_csrf(request, who, csrf)
        series = task_services.series(who)
        view = series.get(who.actor, task)
        try:
            getattr(series, name)(who.actor, view.id, series_revision)
        except KalendsError as exc:
            if status_of(exc) not in (409, 422):
                raise
            return _refused(request, who, task, exc, name.title())
        return _done(task, f"series-{name}", "series-h")

    change.__name__ = f"post_series_{name}"
    change.__doc__ = f"{name.title()}s the task's series at the series revision the page showed."
    router.post(f"/tasks/{{task}}/page/series/{name}")(change)


for _name in ("pause", "resume", "stop"):
    _series_change(_name)


# --- moving the task -------------------------------------------------------------------------


def _move_refused(request: Request, who: Viewer, ref: str, exc: KalendsError) -> Response:
    if status_of(exc) not in (409, 422):
        raise exc
    return _refused(request, who, ref, exc, "Move", beside=("parent", "list"))


@router.post("/tasks/{task}/page/move")
def post_move(
    request: Request,
    task: TaskRefPath,
    revision: Revision,
    parent: Annotated[str, Form(max_length=64)] = "",
    csrf: Csrf = "",
) -> Response:
    """Puts the task under another task of its list (``parent``, an ID), or at the top of
    the list (``parent`` empty); its checklist goes with it. (Another list: the CLI's
    ``kalends task move`` and the API.)"""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        if parent:
            task_services.changes(who).relocate(
                who.actor, task, revision, parent=_id(parent, "parent")
            )
        else:
            task_services.changes(who).relocate(who.actor, task, revision, root=True)
    except KalendsError as exc:
        return _move_refused(request, who, task, exc)
    return _done(task, "moved", "move-h")


@router.post("/tasks/{task}/page/move-list")
def post_move_list(
    request: Request,
    task: TaskRefPath,
    revision: Revision,
    target: Annotated[str, Form(alias="list", max_length=64)] = "",
    csrf: Csrf = "",
) -> Response:
    """Moves a top-level task, with its checklist, to another list the viewer edits
    (``list``, an ID), as ``kalends task move --list`` does: the service checks the
    viewer is an editor of both lists."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        if not target:
            raise InvalidInput("list: choose the list to move it to", field="list")
        task_services.tasks(who).move_to_list(who.actor, task, revision, _id(target, "list"))
    except KalendsError as exc:
        return _move_refused(request, who, task, exc)
    return _done(task, "moved-list", "move-h")


def _list_choices(who: Viewer, task: Task) -> list[tuple[str, str]]:
    """The other active lists the viewer edits, where a top-level task that is no series'
    occurrence may go (an item moves with its task; a series stays with its list)."""
    if task.parent_id is not None or task.series_id is not None:
        return []
    return [
        (str(found.id), found.name)
        for found in task_services.directory(who).lists(who.actor, include_archived=False)
        if found.id != task.list_id
        and found.role is not None
        and found.role.rank >= Role.EDITOR.rank
    ]


def _id(value: str, field: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise InvalidInput(f"{field}: not an ID: {value[:40]!r}", field=field) from None


def _move_choices(
    nodes: list[TreeNode] | tuple[TreeNode, ...], task: Task
) -> list[tuple[str, str]]:
    """Where the task may go in its list: every other task outside its own checklist, the
    title indented by its depth."""
    parents: list[tuple[str, str]] = []
    stack: list[tuple[TreeNode, int]] = [(n, 0) for n in reversed(nodes)]
    while stack:
        node, depth = stack.pop()
        if node.task.id == task.id:
            continue  # neither itself nor its own checklist
        parents.append((str(node.task.id), "— " * depth + node.task.title))
        stack.extend((kid, depth + 1) for kid in reversed(node.children))
    return parents
