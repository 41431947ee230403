"""The task pages: the viewer's lists, a list's checklist tree and its controls.

Each route is a thin caller: it reads the viewer's session, checks the form's CSRF token
on a post, calls one service method through the protocols the CLI uses
(:class:`~kalends.cli.task_client.DirectoryClient`,
:class:`~kalends.cli.task_client.TaskClient`, :class:`~kalends.cli.task_client.SeriesClient`,
:class:`~kalends.cli.task_client.TaskChanges`), which check the viewer's role on the
list, and renders or redirects (303) back to the list. A viewer's page shows no write
control, and a forged post from a viewer is refused by the service.

A list's page reads its tree once (every task, any status) and builds each row from that
read: no service call per row. Only a series' sentence takes a read of its own, one per
series whose occurrence root the list holds.

Every write carries the revision the page showed. A revision conflict (409) renders the
list as it is now with a notice that says what the user sent beside what holds, and the
values the user typed kept in their form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode
from uuid import UUID

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from kalends.api.errors import status_of
from kalends.civil import wall_of
from kalends.cli.task_views import rule_text
from kalends.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    KalendsError,
    NotFound,
    RevisionConflict,
)
from kalends.identity import Role
from kalends.tasks import Task, TaskList, TaskStatus, TimedValue, TreeNode
from kalends.tasks.series import SeriesStatus, SeriesView
from kalends.web import task_services
from kalends.web.render import WebRoute, instant_text, render, viewer_zone
from kalends.web.session import CSRF_FIELD, Viewer, check_csrf, viewer

__all__ = ["due_chip", "due_today", "router"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# Priority 1 is the most urgent (as the CLI marks it); a word and a symbol, never colour alone.
PRIORITIES = {1: ("high", "!!!"), 2: ("medium", "!!"), 3: ("low", "!")}
# What a redirect after a write says on the list page (``?said=``).
SAID = {
    "created": "Added",
    "completed": "Completed",
    "reopened": "Reopened",
    "skipped": "Skipped",
    "moved": "Moved",
    "shared": "Members changed",
    "archived": "The list is archived",
    "unarchived": "The list is active again",
}
ROLES = ("viewer", "editor", "owner")
# How these pages name the services' terms in an error's message.
WORDS = {"complete_subtree": "tick “with its open items” (“the whole occurrence”) beside Done"}
LIVE_SERIES = (SeriesStatus.ACTIVE, SeriesStatus.PAUSED)

Csrf = Annotated[str, Form(alias=CSRF_FIELD, max_length=128)]
Revision = Annotated[int, Form(ge=1)]


# --- what a row shows ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chip:
    """A due value as a row shows it: ``text`` (a date, or a wall time with its zone),
    ``iso`` for ``<time datetime>``, and ``state``: ``overdue``, ``today``, ``tomorrow``
    or empty, said in words beside the date."""

    text: str
    iso: str
    state: str


def due_chip(due: object, now: datetime, today: date, zone: str) -> Chip | None:
    """A due value's chip; ``today`` is the day in ``zone``, the viewer's."""
    if isinstance(due, TimedValue):
        day = wall_of(due.at, zone).date()
        text = f"{due.local:%Y-%m-%d %H:%M} {due.zone}"
        overdue = due.at < now
        iso = instant_text(due.at)
    elif isinstance(due, date):
        day, text, overdue, iso = due, due.isoformat(), due < today, due.isoformat()
    else:
        return None
    if overdue:
        state = "overdue"
    elif day == today:
        state = "today"
    elif day == today + timedelta(days=1):
        state = "tomorrow"
    else:
        state = ""
    return Chip(text=text, iso=iso, state=state)


@dataclass(slots=True, kw_only=True)
class Row:
    """One task of the tree as its row shows it (attributes, which templates read fastest)."""

    task: Task
    id: str
    status: str
    open: bool
    depth: int
    children: list[Row]
    open_below: int
    needs_subtree: bool
    can_skip: bool
    series: str
    due: Chip | None
    priority: tuple[str, str] | None
    section: str | None
    prev: str
    next: str


@dataclass(frozen=True, slots=True)
class Clockface:
    """The page's now and the viewer's day (in their zone, else UTC)."""

    now: datetime
    today: date
    zone: str

    @classmethod
    def of(cls, request: Request, who: Viewer) -> Clockface:
        now = who.context.services.store.clock.now()
        zone = viewer_zone(request) or "UTC"
        return cls(now=now, today=wall_of(now, zone).date(), zone=zone)


def _series_of(who: Viewer, nodes: Sequence[TreeNode]) -> dict[UUID, SeriesView]:
    """The series whose occurrence roots the tree holds, one read each."""
    found: dict[UUID, SeriesView] = {}
    for node in nodes:
        series_id = node.task.series_id
        if series_id is not None and series_id not in found:
            found[series_id] = task_services.series(who).get(who.actor, series_id)
    return found


def _tree_rows(
    nodes: Sequence[TreeNode],
    series: Mapping[UUID, SeriesView],
    sections: Mapping[UUID, str],
    clock: Clockface,
) -> tuple[list[Row], dict[UUID, Row]]:
    """The rows of the tree (each with its children) and every row by task ID."""
    by_id: dict[UUID, Row] = {}

    def rows(level: Sequence[TreeNode], depth: int) -> tuple[list[Row], int]:
        made: list[Row] = []
        open_below = 0
        for i, node in enumerate(level):
            task = node.task
            children, open_under = rows(node.children, depth + 1)
            is_open = task.status is TaskStatus.OPEN
            open_below += open_under + (1 if is_open else 0)
            view = series.get(task.series_id) if task.series_id and depth == 0 else None
            outstanding = (
                view is not None
                and view.outstanding_task_id == task.id
                and view.status in LIVE_SERIES
            )
            chip = due_chip(task.due, clock.now, clock.today, clock.zone)
            if chip is not None and not is_open:
                chip = Chip(text=chip.text, iso=chip.iso, state="")
            row = Row(
                task=task,
                id=str(task.id),
                status=task.shown_status,
                open=is_open,
                depth=depth,
                children=children,
                open_below=open_under,
                needs_subtree=is_open and (open_under > 0 or outstanding),
                can_skip=is_open and outstanding,
                series=_series_text(view, task) if view is not None else "",
                due=chip,
                priority=PRIORITIES.get(task.priority or 0),
                section=sections.get(task.section_id) if task.section_id else None,
                prev=str(level[i - 1].task.id) if i > 0 else "",
                next=str(level[i + 1].task.id) if i + 1 < len(level) else "",
            )
            by_id[task.id] = row
            made.append(row)
        return made, open_below

    return rows(nodes, 0)[0], by_id


def _series_text(view: SeriesView, task: Task) -> str:
    """The series' rule in words, and where it stands when not simply running."""
    said = rule_text(view)
    if view.status != SeriesStatus.ACTIVE:
        said += f" · series {view.status}"
    if task.occurrence is not None:
        said += f" · occurrence {task.occurrence}"
    return said


# --- the pages ----------------------------------------------------------------------------


def _nav(who: Viewer) -> list[Any]:
    return list(who.context.services.workspaces.list(who.actor))


def _lists_values(who: Viewer) -> dict[str, Any]:
    lists = task_services.directory(who).lists(who.actor)
    rows = [(lst, len(task_services.directory(who).members(who.actor, lst.id))) for lst in lists]
    return {
        "title": "Task lists",
        "nav_workspaces": _nav(who),
        "active": [{"list": lst, "members": n} for lst, n in rows if lst.status.value == "active"],
        "archived": [
            {"list": lst, "members": n} for lst, n in rows if lst.status.value != "active"
        ],
        "form": {"name": ""},
        "error": None,
    }


@router.get("/lists")
def lists_page(request: Request) -> Response:
    """The viewer's lists, active and archived, with their role and member count, and the
    form that creates a list."""
    who = viewer(request)
    return render(request, "lists.html", _lists_values(who), who=who)


@router.post("/lists")
def create_list(
    request: Request,
    name: Annotated[str, Form(max_length=500)] = "",
    csrf: Csrf = "",
) -> Response:
    """Creates a list the viewer owns; its page next."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        made = task_services.directory(who).create_list(who.actor, name)
    except InvalidInput as exc:
        values = _lists_values(who)
        values["form"] = {"name": name}
        values["error"] = _said(exc)
        return render(request, "lists.html", values, who=who, status=status_of(exc))
    return _back(made.id, "created")


def _said(exc: KalendsError) -> str:
    """An error's message without the service's name of the field it is about."""
    said = exc.named(WORDS)
    field = said.details.get("field")
    message = said.message
    return message.removeprefix(f"{field}: ") if isinstance(field, str) else message


@dataclass(frozen=True, slots=True)
class ListPage:
    """What a list's page shows besides the notices."""

    task_list: TaskList
    values: dict[str, Any]
    by_id: dict[UUID, Row]


def _list_page(request: Request, who: Viewer, list_id: UUID) -> ListPage:
    directory = task_services.directory(who)
    task_list = directory.get_list(who.actor, list_id)
    nodes = task_services.tasks(who).tree(who.actor, task_list.id)
    members = directory.members(who.actor, task_list.id)
    sections = {s.id: s.name for s in directory.sections(who.actor, task_list.id)}
    clock = Clockface.of(request, who)
    rows, by_id = _tree_rows(nodes, _series_of(who, nodes), sections, clock)
    role = task_list.role or Role.VIEWER
    active = task_list.status.value == "active"
    values: dict[str, Any] = {
        "title": task_list.name,
        "nav_workspaces": _nav(who),
        "task_list": task_list,
        "rows": rows,
        "count": len(by_id),
        "open_count": sum(1 for r in by_id.values() if r.open),
        "members": members,
        "sections": sorted(sections.values()),
        "role": role.value,
        "can_write": active and role.rank >= Role.EDITOR.rank,
        "is_owner": role is Role.OWNER,
        "roles": ROLES,
        "parents": [r for r in _in_order(rows) if r.open],
        "add": {"title": "", "parent": request.query_params.get("parent", ""), "tags": ""},
        "add_error": None,
        "share": {"member": "", "role": "viewer"},
        "share_error": None,
        "said": None,
        "conflict": None,
        "error": None,
        "today": clock.today,
        "zone": clock.zone,
    }
    said = request.query_params.get("said")
    if said in SAID:
        shown = by_id.get(_uuid(request.query_params.get("task")) or UUID(int=0))
        values["said"] = SAID[str(said)] + (f": “{shown.task.title}”" if shown else ".")
    return ListPage(task_list, values, by_id)


def _in_order(rows: Sequence[Row]) -> list[Row]:
    out: list[Row] = []
    for row in rows:
        out.append(row)
        out.extend(_in_order(row.children))
    return out


def _uuid(text: str | None) -> UUID | None:
    try:
        return UUID(text) if text else None
    except ValueError:
        return None


@router.get("/lists/{list_id}")
def list_page(request: Request, list_id: UUID) -> Response:
    """A list: its checklist tree with each task's due, priority, tags, section and
    series; done, skip, reopen and reorder for editors; members and roles; the share form
    and archive for owners."""
    who = viewer(request)
    page = _list_page(request, who, list_id)
    return render(request, "list.html", page.values, who=who)


def _back(list_id: UUID, said: str, task: UUID | None = None) -> RedirectResponse:
    query = {"said": said, **({"task": str(task)} if task else {})}
    anchor = f"#task-{task}" if task else ""
    return RedirectResponse(f"/lists/{list_id}?{urlencode(query)}{anchor}", status_code=303)


def _refused(
    request: Request,
    who: Viewer,
    list_id: UUID,
    exc: KalendsError,
    *,
    sent: dict[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Response:
    """The list as it is now with a notice of why the write was not applied: for a
    revision conflict, what the user sent beside what holds now; the user's typed values
    kept in their form (``values``). A refusal the page cannot show (not found, not
    allowed) is the error page."""
    if isinstance(exc, Forbidden | NotFound) and not (
        isinstance(exc, NotFound) and exc.details.get("field") == "member"
    ):
        raise exc
    page = _list_page(request, who, list_id)
    page.values.update(values or {})
    if isinstance(exc, RevisionConflict) and sent is not None:
        task_id = sent.get("task")
        current = page.by_id.get(task_id) if isinstance(task_id, UUID) else None
        page.values["conflict"] = {**sent, "current": current, "message": exc.message}
    elif values is None or not any(k.endswith("_error") for k in values):
        page.values["error"] = _said(exc)
    return render(request, "list.html", page.values, who=who, status=status_of(exc))


# --- list writes ---------------------------------------------------------------------------


@router.post("/lists/{list_id}/share")
def share_list(
    request: Request,
    list_id: UUID,
    revision: Revision,
    member: Annotated[str, Form(max_length=200)] = "",
    role: Annotated[str, Form(max_length=16)] = "viewer",
    csrf: Csrf = "",
) -> Response:
    """Gives a person a role on the list, or removes them (``role=remove``); owners only."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    chosen = None if role == "remove" else role
    kept = {"share": {"member": member, "role": role}}
    try:
        if not member.strip():
            raise InvalidInput("member: say whose role changes (a handle)", field="member")
        if chosen is not None and chosen not in ROLES:
            raise InvalidInput(f"role: no role {role!r}", field="role")
        task_services.directory(who).share(who.actor, list_id, member.strip(), chosen, revision)
    except RevisionConflict as exc:
        sent = {"action": f"give {member} the role {role}", "revision": revision, "list": True}
        return _refused(request, who, list_id, exc, sent=sent, values=kept)
    except (Conflict, InvalidInput, NotFound) as exc:
        kept_error = {**kept, "share_error": _said(exc)}
        return _refused(request, who, list_id, exc, values=kept_error)
    return _back(list_id, "shared")


@router.post("/lists/{list_id}/archive")
def archive_list(
    request: Request,
    list_id: UUID,
    revision: Revision,
    archived: Annotated[bool, Form()] = True,
    csrf: Csrf = "",
) -> Response:
    """Archives the list (read only from then on), or makes it active again; owners only."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    try:
        task_services.directory(who).archive(
            who.actor, list_id, archived=archived, expected_revision=revision
        )
    except (Conflict, InvalidInput) as exc:
        action = "archive the list" if archived else "make the list active"
        sent = {"action": action, "revision": revision, "list": True}
        return _refused(request, who, list_id, exc, sent=sent)
    return _back(list_id, "archived" if archived else "unarchived")


@router.post("/lists/{list_id}/tasks")
def create_task(
    request: Request,
    list_id: UUID,
    title: Annotated[str, Form(max_length=2000)] = "",
    parent: Annotated[str, Form(max_length=64)] = "",
    tags: Annotated[str, Form(max_length=2000)] = "",
    section: Annotated[str, Form(max_length=500)] = "",
    csrf: Csrf = "",
) -> Response:
    """Adds an open task at the end of the list's top level or of a task's checklist."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    names = [t.strip().lstrip("#") for t in tags.replace(",", " ").split() if t.strip("# ")]
    try:
        made = task_services.tasks(who).create(
            who.actor,
            list_id,
            title,
            parent=parent or None,
            tags=names,
            section=section or None,
        )
    except (Conflict, InvalidInput) as exc:
        kept = {
            "add": {"title": title, "parent": parent, "tags": tags},
            "add_error": _said(exc),
        }
        return _refused(request, who, list_id, exc, values=kept)
    return _back(made.list_id, "created", made.id)


# --- task writes ---------------------------------------------------------------------------

TaskList_ = Annotated[UUID, Form(alias="list")]


def _task_write(
    request: Request,
    who: Viewer,
    list_id: UUID,
    task: UUID,
    revision: int,
    action: str,
    write: Any,
    said: str,
) -> Response:
    """Runs one task write; back to the list, or the list with why it was not applied."""
    try:
        done = write()
    except (Conflict, InvalidInput) as exc:
        sent = {"action": action, "revision": revision, "task": task}
        return _refused(request, who, list_id, exc, sent=sent)
    shown: Task = done
    return _back(shown.list_id, said, shown.id)


@router.post("/tasks/{task}/complete")
def complete_task(
    request: Request,
    task: UUID,
    revision: Revision,
    list_id: TaskList_,
    complete_subtree: Annotated[bool, Form()] = False,
    csrf: Csrf = "",
) -> Response:
    """Completes a task; with ``complete_subtree`` its open checklist items too (which a
    task with open items, or a series' open occurrence, needs)."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    action = "Done with its open items" if complete_subtree else "Done"

    def write() -> Task:
        return task_services.tasks(who).complete(
            who.actor, task, revision, complete_subtree=complete_subtree
        )

    return _task_write(request, who, list_id, task, revision, action, write, "completed")


@router.post("/tasks/{task}/reopen")
def reopen_task(
    request: Request, task: UUID, revision: Revision, list_id: TaskList_, csrf: Csrf = ""
) -> Response:
    """Reopens a settled task and its settled ancestors."""
    who = viewer(request)
    check_csrf(request, who, csrf)

    def write() -> Task:
        return task_services.tasks(who).reopen(who.actor, task, revision)

    return _task_write(request, who, list_id, task, revision, "Reopen", write, "reopened")


@router.post("/tasks/{task}/skip")
def skip_task(
    request: Request, task: UUID, revision: Revision, list_id: TaskList_, csrf: Csrf = ""
) -> Response:
    """Skips a series' open occurrence whole; the list shows the next one."""
    who = viewer(request)
    check_csrf(request, who, csrf)

    def write() -> Task:
        skipped = task_services.changes(who).skip(who.actor, task, revision)
        return skipped.successor or skipped.skipped

    return _task_write(request, who, list_id, task, revision, "Skip", write, "skipped")


@router.post("/tasks/{task}/move")
def move_task(
    request: Request,
    task: UUID,
    revision: Revision,
    list_id: TaskList_,
    before: Annotated[UUID | None, Form()] = None,
    after: Annotated[UUID | None, Form()] = None,
    csrf: Csrf = "",
) -> Response:
    """Moves a task among its siblings: just before ``before`` or just after ``after``."""
    who = viewer(request)
    check_csrf(request, who, csrf)
    action = "Move up" if before is not None else "Move down"

    def write() -> Task:
        if before is None and after is None:
            raise InvalidInput("move: say where: before or after a sibling", field="move")
        return task_services.changes(who).relocate(
            who.actor, task, revision, before=before, after=after
        )

    return _task_write(request, who, list_id, task, revision, action, write, "moved")


# --- the Now page's tasks ------------------------------------------------------------------


def due_today(request: Request, who: Viewer) -> list[dict[str, Any]]:
    """The viewer's open tasks due at or before the end of their today, over their active
    lists, overdue first, then by due time: one read of the tasks due by tomorrow (a
    timed one up to two days ahead, as no zone's day is longer), kept if due today."""
    clock = Clockface.of(request, who)
    found: list[dict[str, Any]] = []
    for task in who.context.services.tasks.due(
        who.actor, through=clock.today, before=clock.now + timedelta(days=2)
    ):
        due: date | TimedValue | None = task.due_date
        if task.due_at is not None and task.due_local is not None and task.zone is not None:
            due = TimedValue(local=task.due_local, zone=task.zone, at=task.due_at)
        chip = due_chip(due, clock.now, clock.today, clock.zone)
        if chip is None or chip.state not in ("overdue", "today"):
            continue
        found.append(
            {"task": task, "list": {"id": task.list_id, "name": task.list_name}, "due": chip}
        )
    found.sort(key=lambda f: (f["due"].state != "overdue", f["due"].iso, f["task"].title))
    return found
