"""A passage's page: what the schedule's document and this server's runtime know of one
passage — trigger, slot, start and end, outcome, report, checklist — and its log, which
follows while the passage runs.

The passage is found as the API finds it: the schedule's detail through the schedule
service (which checks the viewer's role) and the runtime's records through
:class:`~kalends.missions.runtime.server_passages.ServerPassages` (which checks it again).
A server that runs no passages shows what the document holds and says that the log lives
on the machine that ran it.

The log follows by polling its fragment every :data:`POLL_SECONDS` while the passage
runs; the fragment of an ended passage carries no trigger, so the polling stops by
itself, and one page load polls at most :data:`MAX_POLLS` times (an hour), after which
the fragment asks for a reload. Without script, a Refresh link reloads the page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from kalends.api.routes.mission_paths import PASSAGE_ID_PATTERN
from kalends.api.routes.passages import server_passages
from kalends.errors import InvalidInput, KalendsError, NotFound
from kalends.missions import Workspace
from kalends.missions.runtime.passages import Passage, status_text
from kalends.missions.runtime.server_passages import RuntimeDown
from kalends.tasks.values import TaskStatus
from kalends.web.pages_questions import passage_questions
from kalends.web.render import WebRoute, instant, instant_text, render
from kalends.web.schedule_display import Badge, display_zone, outcome_badge, sentence
from kalends.web.session import SignInRequired, Viewer, viewer

__all__ = ["MAX_POLLS", "POLL_SECONDS", "router"]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# How often a running passage's log is read again, and for how long one page load keeps
# reading it (an hour of polls); past that the reader reloads to keep following.
POLL_SECONDS = 2
MAX_POLLS = 3600 // POLL_SECONDS

_PASSAGE_ID = re.compile(PASSAGE_ID_PATTERN)
# Runtime statuses of a passage whose output may still grow.
_LIVE = ("admitted", "running")

# Why a page shows no log, by what :func:`_runtime_passage` said.
_PROBLEMS = {
    "no-runtime": "This server runs no passages: the log lives on the machine that ran it.",
    "runtime-down": "The runtime directory cannot be read now: reload to try again.",
}

_PENDING_BADGES = {
    "starting": Badge("Starting", "…", "ok"),
    "running": Badge("Running", "▶", "ok"),
    "settling": Badge("Settling", "…", "ok"),
    "uncertain": Badge("Uncertain", "⚠", "warn"),
}


def _ident(passage: str) -> str:
    """The passage ID or session ID of the path; :class:`InvalidInput` for anything else."""
    if not _PASSAGE_ID.fullmatch(passage):
        raise InvalidInput(
            "passage: not a passage ID (psg_…) or session ID (ses_…): use the link on the "
            "schedule's page",
            field="passage",
        )
    return passage


def _unknown(ident: str) -> NotFound:
    return NotFound(f"passage: no passage {ident} of this schedule", field="passage")


def _record(doc: Mapping[str, Any], ident: str) -> dict[str, Any] | None:
    """The document's record of the passage: its pending record, else its result."""
    pending = doc.get("pending")
    if isinstance(pending, dict) and ident in (pending.get("passageId"), pending.get("sessionId")):
        return {**pending, "kind": "pending"}
    for result in doc.get("results") or ():
        if isinstance(result, dict) and result.get("passageId") == ident:
            return {**result, "kind": "result"}
    return None


def _live(found: Passage | None) -> bool:
    """Whether the passage's output may still grow: not launched yet, running, or ended
    with processes of its session still running."""
    if found is None:
        return False
    obs = found.observation
    return found.status in _LIVE or (obs is not None and obs.exited and obs.descendants)


def duration_text(seconds: float) -> str:
    """A span in words: ``under 1 s``, ``42 s``, ``3 min 5 s``, ``2 h 3 min``, ``1 d 2 h``."""
    span = int(seconds)
    if span < 1:
        return "under 1 s"
    days, rest = divmod(span, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def _between(start: str | None, end: str | None) -> float | None:
    begun, ended = instant(start), instant(end)
    if begun is None or ended is None:
        return None
    return max(0.0, (ended - begun).total_seconds())


def _checklist(who: Viewer, record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The checklist's progress: the counts the result kept at settlement, else the
    pending passage's checklist read now (as the viewer may read its list)."""
    if record is None:
        return None
    kept = record.get("checklist")
    if isinstance(kept, dict):
        done, still = int(kept.get("done") or 0), int(kept.get("open") or 0)
        return {"done": done, "total": done + still, "note": "at settlement"}
    checklist_id = record.get("checklistId")
    if not isinstance(checklist_id, str):
        return None
    try:
        tree = who.context.services.tasks.checklist(who.actor, UUID(checklist_id))
    except (KalendsError, ValueError):
        return {"done": None, "total": None, "note": "its task list is not shared with you"}
    items = tree.walk()[1:]
    done = sum(1 for t in items if t.status is TaskStatus.COMPLETED)
    return {"done": done, "total": len(items), "note": "now"}


def _outcome(record: Mapping[str, Any] | None, found: Passage | None) -> Badge:
    if record is not None and record["kind"] == "result":
        return outcome_badge(str(record.get("outcome")))
    if record is not None:
        status = str(record.get("status") or "")
        return _PENDING_BADGES.get(status, Badge(status.capitalize() or "Pending", "…", "idle"))
    if found is not None and found.report is not None:
        return outcome_badge(str(found.report.get("outcome")))
    if found is not None and _live(found):
        return _PENDING_BADGES["running"]
    return Badge("Not in the schedule's history", "?", "idle")


def log_url(workspace: UUID, schedule: UUID, ident: str, poll: int) -> str:
    return f"/w/{workspace}/schedules/{schedule}/passages/{ident}/log?poll={poll}"


def _log_view(
    workspace: UUID,
    schedule: UUID,
    ident: str,
    found: Passage | None,
    poll: int,
    *,
    waiting: bool = False,
) -> dict[str, Any]:
    """What the log fragment shows: the log's tail and whether (and where) to poll next.

    ``waiting`` is a passage the schedule holds as pending that this server's runtime has
    not started yet: its log is followed too, so that it appears as the passage starts."""
    live = _live(found) or (found is None and waiting)
    obs = found.observation if found is not None else None
    bound = live and poll >= MAX_POLLS
    return {
        "text": obs.log_tail if obs is not None else None,
        "waiting": found is None and waiting,
        "live": live,
        "follow": live and not bound,
        "bound": bound,
        # By session ID: the runtime finds its directory by name, without reading every
        # passage's start record at each poll.
        "next_url": log_url(
            workspace, schedule, found.session_id if found is not None else ident, poll + 1
        ),
        "page_url": f"/w/{workspace}/schedules/{schedule}/passages/{ident}",
        "status": status_text(found.to_json()) if found is not None else None,
        "problem": None,
    }


def _pending(who: Viewer, workspace: UUID, schedule: UUID, ident: str) -> bool:
    """Whether the schedule's document holds the passage as its pending one (reserved,
    and not yet started by this server's runtime)."""
    doc = who.context.services.schedules.detail(who.actor, schedule, workspace=workspace)
    record = _record(doc, ident)
    return record is not None and record["kind"] == "pending"


def _runtime_passage(
    who: Viewer, workspace: UUID, schedule: UUID, ident: str
) -> tuple[Passage | None, str | None]:
    """The runtime's passage (``None`` when this server's directory holds none of this
    schedule), and why it could not be read, if so. The role is checked first."""
    passages = server_passages(who.context)
    if not passages.keeps_passages:
        passages.schedules.within(who.actor, workspace, schedule)
        return None, "no-runtime"
    try:
        return passages.of_schedule(who.actor, workspace, schedule, ident), None
    except RuntimeDown:
        return None, "runtime-down"


def _page_values(who: Viewer, ws: Workspace, schedule: UUID, ident: str) -> dict[str, Any]:
    doc = who.context.services.schedules.detail(who.actor, schedule, workspace=ws.id)
    found, problem = _runtime_passage(who, ws.id, schedule, ident)
    record = _record(doc, ident)
    if record is None and found is not None:
        record = _record(doc, str(found.start.get("passageId") or ""))
    if record is None and found is None:
        raise _unknown(ident)
    tombstone = doc.get("kind") == "tombstone"
    zone = "UTC" if tombstone else display_zone(doc)
    rec = record or {}
    out = found.to_json() if found is not None else {}
    started = out.get("startedAt") or rec.get("admittedAt")
    ended = out.get("endedAt") or rec.get("settledAt")
    live = _live(found) or (found is None and rec.get("kind") == "pending")
    now_text = who.context.services.store.clock.now().isoformat()
    took = _between(started, now_text if live and not out.get("endedAt") else ended)
    report = out.get("report") or {}
    summary = rec.get("summary") if rec.get("kind") == "result" else report.get("summary")
    waiting = found is None and problem is None and rec.get("kind") == "pending"
    view = _log_view(ws.id, schedule, ident, found, 0, waiting=waiting)
    return {
        "title": f"Passage — {doc.get('title') or 'Schedule'}",
        "workspace": ws,
        "doc": doc,
        "tombstone": tombstone,
        "schedule_sentence": "" if tombstone else sentence(doc),
        "zone": zone,
        "ident": ident,
        "passage_id": rec.get("passageId") or out.get("passageId") or ident,
        "session_id": rec.get("sessionId") or out.get("sessionId"),
        "record": record,
        "trigger": rec.get("trigger"),
        "slot": rec.get("slot"),
        "started": started,
        "ended": ended,
        "settled": rec.get("settledAt"),
        "duration": None if took is None else duration_text(took),
        "live": live,
        "outcome": _outcome(record, found),
        "reason": rec.get("reason"),
        "summary": summary or None,
        "exit_text": status_text(out) if found is not None else None,
        "interrupted": out.get("interrupted"),
        "checklist": _checklist(who, record),
        "log_view": {**view, "problem": _PROBLEMS[problem] if problem is not None else None},
        "oob": False,
        "nav_workspaces": who.context.services.workspaces.list(who.actor),
    }


@router.get("/w/{workspace}/schedules/{schedule}/passages/{passage}")
def passage_page(request: Request, workspace: UUID, schedule: UUID, passage: str) -> Response:
    """One passage: trigger, slot, start and end, outcome and reason, report summary,
    checklist progress, and its log (following while it runs)."""
    who = viewer(request)
    ident = _ident(passage)
    ws = who.context.services.workspaces.get(who.actor, workspace)
    values = _page_values(who, ws, schedule, ident)
    values["questions"] = passage_questions(who, ws.id, str(values["passage_id"]))
    values["iso"] = instant_text
    return render(request, "passage.html", values, who=who)


@router.get("/w/{workspace}/schedules/{schedule}/passages/{passage}/log")
def passage_log(
    request: Request,
    workspace: UUID,
    schedule: UUID,
    passage: str,
    poll: Annotated[int, Query(description="How many times this page has polled.")] = 0,
) -> Response:
    """The log fragment: the tail of the passage's output, polling on while it runs (at
    most :data:`MAX_POLLS` per page load). To a script, a refusal is a fragment that
    says so and polls no more; to anyone else, an error page."""
    who = viewer(request)
    poll = max(0, poll)
    try:
        ident = _ident(passage)
        found, problem = _runtime_passage(who, workspace, schedule, ident)
        waiting = found is None and problem is None and _pending(who, workspace, schedule, ident)
        if found is None and problem is None and not waiting:
            raise _unknown(ident)
    except SignInRequired:
        raise
    except KalendsError as exc:
        if request.headers.get("hx-request") != "true":
            raise
        view = _log_view(workspace, schedule, passage, None, poll)
        view["problem"] = exc.message
        return render(request, "parts/passage_log.html", {"log_view": view, "oob": True}, who=who)
    view = _log_view(workspace, schedule, ident, found, poll, waiting=waiting)
    if problem is not None:
        view["problem"] = _PROBLEMS[problem]
    return render(request, "parts/passage_log.html", {"log_view": view, "oob": True}, who=who)
