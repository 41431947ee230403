"""How schedules look to a person: the state that really holds, the detail, the list.

Times are shown in the schedule's zone (its policy's). The list and the history are
laid out for the terminal (:mod:`kalends.cli.tables`): every column where they fit, a
compact layout of fewer, wider columns at 80 columns, IDs whole. User text is always
wrapped in :class:`Text`, never parsed as Rich markup.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kalends.civil import get_zone
from kalends.civil.zones import to_naive_datetime
from kalends.cli.tables import Cell, Column, Fitted, table
from kalends.errors import UnknownZone

__all__ = [
    "NODE_SILENT",
    "detail_view",
    "display_zone",
    "end_text",
    "list_view",
    "pending_reason_text",
    "local_text",
    "policy_text",
    "policy_zone",
    "sentence_text",
    "state_text",
]


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def wall_text(iso: str, zone: str) -> str | None:
    """An instant as the wall time in ``zone``, not naming it: ``2026-03-02 09:00 Mon``
    (``None`` for a zone this machine does not know)."""
    seconds = int(_instant(iso).timestamp())
    try:
        tz = get_zone(zone)
    except UnknownZone:
        return None
    tz.cover(seconds)
    local = to_naive_datetime(seconds + tz.offset_at(seconds))
    return local.strftime("%Y-%m-%d %H:%M:%S %a" if local.second else "%Y-%m-%d %H:%M %a")


def local_text(iso: str | None, zone: str) -> str:
    """An instant as the wall time in ``zone``: ``2026-03-02 09:00 Mon Europe/Berlin``."""
    if iso is None:
        return "—"
    wall = wall_text(iso, zone)
    return iso if wall is None else f"{wall} {zone}"


def _local_lines(iso: str | None, zone: str) -> str:
    """:func:`local_text` on two lines, the zone on the second (compact layouts)."""
    if iso is None:
        return "—"
    wall = wall_text(iso, zone)
    return iso if wall is None else f"{wall}\n{zone}"


def policy_zone(policy: object) -> str | None:
    if not isinstance(policy, Mapping):
        return None
    zone = policy.get("zone")
    if isinstance(zone, str):
        return zone
    for calendar in policy.get("calendars") or ():
        found = policy_zone(calendar)
        if found is not None:
            return found
    return None


def display_zone(doc: Mapping[str, Any]) -> str:
    """The zone a schedule's times are shown in: its policy's, else its end bound's, else UTC."""
    zone = policy_zone(doc.get("policy"))
    until = (doc.get("end") or {}).get("until")
    if zone is None and isinstance(until, Mapping):
        zone = until.get("zone")
    return zone or "UTC"


def _duration_text(d: Mapping[str, Any]) -> str:
    for unit in ("days", "hours", "minutes"):
        if d.get(unit) is not None:
            n = d[unit]
            return f"{n} {unit[:-1] if n == 1 else unit}"
    return json.dumps(d)


_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def policy_text(p: Mapping[str, Any]) -> str:
    kind = p.get("kind")
    zone = p.get("zone", "")
    match kind:
        case "immediate":
            text = "once, right at the first Play"
        case "at":
            text = f"once at {str(p['local']).replace('T', ' ')} {zone}"
        case "after":
            text = f"once, {_duration_text(p)} after the first Play"
        case "every":
            text = f"every {_duration_text(p)}"
        case "daily":
            step = p.get("interval_days")
            days = "every day" if step in (None, 1) else f"every {step} days"
            text = f"{days} at {p['time']} {zone}"
        case "weekdays":
            days = ", ".join(_DAY_NAMES[d - 1] for d in p["days"])
            text = f"{days} at {p['time']} {zone}"
        case "times":
            text = f"every day at {', '.join(p['times'])} {zone}"
        case "monthly":
            text = f"monthly on day {p['day']} at {p['time']} {zone}"
        case "cron":
            text = f"cron '{p['expression']}' {zone}"
        case "calendars":
            text = "; ".join(policy_text(c) for c in p["calendars"])
        case "on-change":
            text = "when the condition holds (checked every 15 minutes)"
        case _:
            text = json.dumps(p)
    if p.get("gap"):
        text += f" (DST gap: {p['gap']})"
    return text


def sentence_text(doc: Mapping[str, Any]) -> str:
    """The policy in words: the document's ``sentence`` (a server before it: a short
    form of the policy's JSON)."""
    sentence = doc.get("sentence")
    return sentence if isinstance(sentence, str) else policy_text(doc["policy"])


def end_text(end: Mapping[str, Any] | None) -> str:
    end = end or {}
    parts = []
    until = end.get("until")
    if until:
        parts.append(f"until {str(until['local']).replace('T', ' ')} {until['zone']}")
    if end.get("within"):
        parts.append(f"within {_duration_text(end['within'])} of the first Play")
    if end.get("maxPassages") is not None:
        parts.append(f"at most {end['maxPassages']} passage(s)")
    return ", ".join(parts) or "none"


def state_text(doc: Mapping[str, Any], *, short: bool = False) -> str:
    if doc.get("kind") == "tombstone":
        return "deleted"
    if doc.get("phase") == "deleting":
        return "deleting" if short else "deleting (waiting on the runtime)"
    return str(doc["state"])


def _counters_text(doc: Mapping[str, Any]) -> str:
    c = doc.get("counters") or {}
    return f"{c.get('admitted', 0)} admitted, {c.get('settled', 0)} settled, " + (
        f"{c.get('successful', 0)} successful"
    )


def _quota_text(doc: Mapping[str, Any]) -> str:
    q = doc.get("quota") or {}
    if q.get("max") is None:
        return f"{q.get('used', 0)} used, no limit"
    return f"{q.get('used', 0)} of {q['max']} used, {q.get('remaining')} left"


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


# --- the state that really holds --------------------------------------------------------

_DISPLAY_REASONS = {
    "no-scheduler": "no scheduler holds it; start `kalends worker`",
    "restart": "its scheduler restarted; `kalends schedule resume {id}` goes on",
    "error": "a look at it failed for good (is its workspace gone? see last error); "
    "`kalends schedule resume {id}` after fixing it",
}
# The reasons in a list's few columns.
_SHORT_REASONS = {
    "no-scheduler": "no scheduler",
    "one-shot-done": "one-shot done",
    "quota-exhausted": "quota used up",
    "until-reached": "until reached",
    "within-reached": "within reached",
    "no-more-slots": "no more slots",
}


def _shown_state(doc: Mapping[str, Any]) -> tuple[str, str | None]:
    """What a list shows: the state that really holds and its reason in a few words."""
    if doc.get("kind") == "tombstone" or doc.get("phase") == "deleting":
        return state_text(doc, short=True), None
    shown = str(doc.get("displayState") or doc["state"])
    reason = doc.get("displayReason") or doc.get("interruptionReason")
    return shown, None if reason is None else _SHORT_REASONS.get(str(reason), str(reason))


def _finished_text(doc: Mapping[str, Any]) -> str:
    """Why a running schedule has nothing left to launch: the bound that ended it."""
    reason, sid = doc.get("displayReason"), doc["id"]
    end = doc.get("end") or {}
    edit = f"`kalends schedule edit {sid}"
    match reason:
        case "one-shot-done":
            return "one-shot done: its single passage is used"
        case "quota-exhausted":
            used = (doc.get("quota") or {}).get("max")
            return (
                f"quota used up: all {used} passage(s) launched; {edit} --max-passages N` "
                "with a larger N goes on"
            )
        case "until-reached":
            until = end.get("until") or {}
            local = str(until.get("local", "")).replace("T", " ")
            return (
                f"until reached: no slot is left before {local} {until.get('zone', '')}; "
                f"{edit} --until LOCAL` with a later end goes on"
            )
        case "within-reached":
            ends = local_text((doc.get("frozen") or {}).get("endAt"), display_zone(doc))
            return (
                f"within reached: no slot is left within {_duration_text(end.get('within') or {})} "
                f"of the first Play (up to {ends}); {edit} --within DURATION` with a longer "
                "one goes on"
            )
        case "no-more-slots":
            return "no more slots: its policy has no further slot"
    return str(reason)


def _display_state_text(doc: Mapping[str, Any]) -> str:
    """The state a person should see: the desired state, and what really holds when it
    differs (``running (desired) — Interrupted: no scheduler holds it; …``); a running
    schedule with nothing left to launch is finished, with the bound that ended it."""
    if doc.get("phase") == "deleting":
        return state_text(doc)
    desired = str(doc.get("desiredState") or doc["state"])
    shown = str(doc.get("displayState") or doc["state"])
    reason = doc.get("displayReason") or doc.get("interruptionReason")
    if shown == "finished":
        return f"finished — {_finished_text(doc)}"
    if shown == desired:
        return desired + (f" ({reason})" if reason else "")
    why = _DISPLAY_REASONS.get(str(reason), str(reason)) if reason else ""
    text = f"{desired} (desired) — {shown.capitalize()}"
    return text + (f": {why.format(id=doc['id'])}" if why else "")


# --- the detail -------------------------------------------------------------------------

LOG_TAIL_LINES = 10
_PENDING_REASONS = {
    "admission-failing": "the runtime failed to start it; retrying",
    "not-observed": "the runtime cannot tell whether it started; retrying",
    "question-open": "it asked a question nobody has answered yet; it settles once answered",
}
NODE_SILENT = (
    "its node stopped reporting; kalends waits for it to return or for `kalends node forget`"
)
"""Why an admitted passage is ``uncertain (not-observed)``: the worker node that runs it
has gone quiet (issue 23 §3); kalends never guesses it finished."""


def pending_reason_text(pending: Mapping[str, Any]) -> str | None:
    """Why the pending passage is in its status, in words, or ``None`` for a reason
    without words (shown as its code alone)."""
    reason = str(pending.get("reason"))
    if reason == "not-observed" and pending.get("admitted") is True:
        return NODE_SILENT
    return _PENDING_REASONS.get(reason)


def _pending_status_text(pending: Mapping[str, Any]) -> str:
    status = str(pending.get("status"))
    reason = pending.get("reason")
    if not reason:
        return status
    why = pending_reason_text(pending)
    return f"{status} ({reason}: {why})" if why else f"{status} ({reason})"


def condition_text(condition: Mapping[str, Any]) -> str:
    """A source condition in a few words."""
    kind = condition.get("kind")
    if kind == "git-branch":
        return f"branch {condition.get('branch')} of {condition.get('path', '.')} moves"
    if kind == "files":
        paths = list(condition.get("paths") or [])
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        return f"files change: {shown}"
    if kind == "schedule-succeeded":
        return f"schedule {condition.get('missionId')} succeeds"
    if kind == "mission-completed":
        return f"one-time schedule {condition.get('missionId')} completes"
    if kind == "conversation":
        ids = [str(c) for c in condition.get("conversationIds") or []]
        shown = ", ".join(ids[:2]) + (f" and {len(ids) - 2} more" if len(ids) > 2 else "")
        return f"new messages in conversation{'s' if len(ids) != 1 else ''} {shown}"
    return json.dumps(condition)


def _checkpoint_text(kind: str, checkpoint: str) -> str:
    if kind == "git-branch":
        return f"commit {checkpoint[:12]}"
    if kind == "files":
        return f"digest {checkpoint[:12]}"
    if kind == "schedule-succeeded":
        return f"{checkpoint} successes"
    if kind == "conversation":
        try:
            positions = json.loads(checkpoint)
        except ValueError:
            return checkpoint
        if isinstance(positions, dict):
            return "read up to " + ", ".join(f"#{seq}" for seq in positions.values())
    return checkpoint


def _baseline_text(baseline: Mapping[str, Any] | None, zone: str) -> str:
    if not baseline:
        return "none yet (the first Play or the first slot takes it)"
    observation = baseline.get("observation") or {}
    kind = str(observation.get("kind", ""))
    return (
        f"{_checkpoint_text(kind, str(baseline['checkpoint']))}, "
        f"since {local_text(baseline.get('at'), zone)}"
    )


def _observation_text(observed: Mapping[str, Any] | None, zone: str) -> str:
    if not observed:
        return "none yet"
    if observed.get("blockReason"):
        return (
            f"blocked ({observed['blockReason']}) at {local_text(observed.get('at'), zone)}: "
            f"{observed.get('detail', '')}"
        )
    kind = str(observed.get("kind", ""))
    cursors = observed.get("cursors")
    if kind == "conversation" and isinstance(cursors, Mapping):
        seqs = ", ".join(f"#{c.get('seq')}" for c in cursors.values() if isinstance(c, Mapping))
        return f"up to {seqs} at {local_text(observed.get('observedAt'), zone)}"
    checkpoint = observed.get("checkpoint") or observed.get("state") or observed.get("successful")
    return (
        f"{_checkpoint_text(kind, str(checkpoint))} at "
        f"{local_text(observed.get('observedAt'), zone)}"
    )


def _gate_text(gate: Mapping[str, Any] | None, zone: str) -> str:
    if not gate:
        return "no slot read yet"
    said = {
        "launched": "launched",
        "skipped": "skipped",
        "blocked": "blocked, read again soon",
    }.get(str(gate.get("outcome")), str(gate.get("outcome")))
    detail = f": {gate['detail']}" if gate.get("detail") else ""
    return f"{local_text(gate.get('slot'), zone)} {said} ({gate.get('reason')}){detail}"


def _proof_text(proof: Mapping[str, Any]) -> str:
    change = proof.get("change") or {}
    if proof.get("kind") == "git-branch":
        commits = change.get("commits") or []
        more = " and more" if change.get("truncated") else ""
        subjects = "; ".join(str(c.get("subject")) for c in commits[:3])
        return f"{len(commits)} commit(s){more}: {subjects}"
    if proof.get("kind") == "files":
        parts = [
            f"{k} {', '.join(change.get(k) or [])}"
            for k in ("added", "modified", "removed")
            if change.get(k)
        ]
        return "; ".join(parts) or "the file set changed"
    if proof.get("kind") == "conversation":
        count = int(change.get("messages") or 0)
        sources = len(change.get("conversations") or [])
        more = " and more" if change.get("truncated") else ""
        return (
            f"{count} new message{'s' if count != 1 else ''}{more} in {sources} "
            f"conversation{'s' if sources != 1 else ''}"
        )
    return json.dumps(change)


def detail_view(doc: Mapping[str, Any], *, wide: bool = False) -> Group:
    """A schedule as a person reads it: state, next slot, counters, pending, history.
    ``wide``: the history with every column, however wide."""
    grid = _grid()

    def row(label: str, value: str | Text) -> None:
        grid.add_row(label, value if isinstance(value, Text) else Text(value))

    row("schedule", Text(str(doc["title"]), style="bold"))
    row("id", str(doc["id"]))
    row("workspace", str(doc["workspaceId"]))
    row("revision", Text(str(doc["revision"]), style="bold"))
    if doc.get("kind") == "tombstone":
        row("state", "deleted (tombstone)")
        row("deleted", str(doc.get("deletedAt")))
        return Group(grid)
    zone = display_zone(doc)
    row("state", _display_state_text(doc))
    last_error = doc.get("lastError")
    if last_error:
        row(
            "last error",
            f"{last_error.get('code')} at {local_text(last_error.get('at'), zone)}: "
            f"{last_error.get('message') or '(no message)'}",
        )
    row("kind", str(doc["kind"]))
    row("policy", sentence_text(doc))
    row("rule", Text(json.dumps(doc["policy"], ensure_ascii=False), style="dim"))
    row("ends", end_text(doc.get("end")))
    row("next slot", local_text(doc.get("nextDueAt"), zone))
    for change in doc.get("zoneChanges") or []:
        row("zone rules changed", str(change.get("detail")))
    if doc.get("firstPlayAt"):
        row("first Play", local_text(doc["firstPlayAt"], zone))
    row("counters", _counters_text(doc))
    row("quota", _quota_text(doc))
    checks = doc.get("checks") or {}
    row("checks", f"{checks.get('count', 0)} since {local_text(checks.get('since'), zone)}")
    watched = doc.get("watch") or []
    if watched:
        row("watching", ", ".join(str(w) for w in watched))
    source = doc.get("source")
    if source:
        row("condition", condition_text(doc.get("condition") or {}))
        row("baseline", _baseline_text(source.get("baseline"), zone))
        row("last read", _observation_text(source.get("lastObservation"), zone))
        row("last slot", _gate_text(source.get("lastSlot"), zone))
        proof = (doc.get("pending") or {}).get("proof")
        if proof:
            row("proof", _proof_text(proof))
    pending = doc.get("pending")
    if pending:
        slot = local_text(pending["slot"], zone) if pending.get("slot") else "none (run now)"
        row(
            "pending passage",
            f"{pending['passageId']}: {pending['trigger']}, {_pending_status_text(pending)}, "
            f"slot {slot}, reserved {local_text(pending.get('reservedAt'), zone)}",
        )
        if pending.get("admittedAt"):
            row("admitted", local_text(pending["admittedAt"], zone))
        if pending.get("sessionId"):
            row("session", f"{pending['sessionId']} (`kalends passage log {pending['passageId']}`)")
    else:
        row("pending passage", "none")
    checklist_id = (pending or {}).get("checklistId")
    if checklist_id:
        row("checklist", f"{checklist_id} (`kalends task show {checklist_id}`)")
    latest = doc.get("latestResult") or {}
    counted = latest.get("checklist")
    if counted:
        row(
            "last checklist",
            f"{counted['done']} done, {counted['open']} open at settlement ({counted['id']})",
        )
    row("actions", ", ".join(doc.get("availableActions") or []) or "none")
    row("blocked", doc.get("blockReason") or "no: the next slot may start a passage")
    profile = doc.get("profile") or {}
    if profile.get("agent"):
        row("agent", f"{profile['agent']} (`kalends profile presets`)")
    row("command", shlex.join(profile.get("command") or []))
    if profile.get("envNames"):
        row("environment", ", ".join(profile["envNames"]) + " (values hidden)")
    row("directory", str(profile.get("cwd", ".")))
    row("restart", str(doc.get("restart")))
    if doc.get("objective"):
        row("objective", str(doc["objective"]))
    if doc.get("notes"):
        row("notes", str(doc["notes"]))
    parts: list[Any] = [grid]
    tail = (pending or {}).get("logTail")
    if pending and tail:
        parts.append(
            Text(
                f"output of {pending['passageId']} (last {LOG_TAIL_LINES} lines; "
                f"`kalends passage log {pending['passageId']}` prints it all):",
                style="dim",
            )
        )
        lines = str(tail).rstrip("\n").splitlines()[-LOG_TAIL_LINES:]
        parts.append(Text("\n".join(f"  {line}" for line in lines)))
    results = doc.get("results") or []
    if results:
        parts.append(_history(results, zone, wide=wide))
    else:
        parts.append(Text("history: no passage settled yet", style="dim"))
    return Group(*parts)


_HISTORY = (
    Column("settled"),
    Column("trigger"),
    Column("slot"),
    Column("outcome"),
    Column("summary", wrap=True),
    Column("passage"),
)
_HISTORY_COMPACT = (
    Column("slot / settled"),
    Column("outcome"),
    Column("passage / summary", whole=True),
)


def _history(results: Sequence[Mapping[str, Any]], zone: str, *, wide: bool) -> Fitted:
    """The settled passages, newest first. Compact: the slot (``run now`` for a manual
    passage) over the settlement, and the passage ID over its summary, times in the
    schedule's zone named once in the title."""
    full: list[list[Cell]] = []
    compact: list[list[Cell]] = []
    for r in results:
        outcome = r["outcome"] + (f" ({r['reason']})" if r.get("reason") else "")
        summary = r.get("summary") or ""
        passage = r.get("passageId") or ""
        full.append(
            [
                local_text(r.get("settledAt"), zone),
                r.get("trigger", ""),
                local_text(r["slot"], zone) if r.get("slot") else "—",
                outcome,
                summary,
                passage,
            ]
        )
        slot = _day_time(r.get("slot"), zone) if r.get("slot") else "run now"
        compact.append(
            [
                f"{slot}\n{_day_time(r.get('settledAt'), zone)}",
                outcome,
                passage + (f"\n{summary}" if summary else ""),
            ]
        )
    title = "history (newest first)"
    small = table(_HISTORY_COMPACT, compact, compact=True, title=f"{title}, times in {zone}")
    return Fitted.of(_HISTORY, full, small, wide=wide, title=title)


def _day_time(iso: str | None, zone: str) -> str:
    """A wall time without its weekday, in the zone a compact table names once (the
    instant itself in a zone this machine does not know)."""
    if iso is None:
        return "—"
    wall = wall_text(iso, zone)
    return iso if wall is None else wall.rsplit(" ", 1)[0]


# --- the list ---------------------------------------------------------------------------

_LIST = (
    Column("id"),
    Column("title", wrap=True),
    Column("state"),
    Column("next slot"),
    Column("runs"),
    Column("rev", justify="right"),
)
_LIST_COMPACT = (Column("schedule", whole=True), Column("state"), Column("next slot"))
RUNS_CAPTION = "runs: admitted/settled/successful"
COMPACT_LIST_CAPTION = "--wide: runs and revisions too"


def list_view(items: Sequence[Mapping[str, Any]], *, wide: bool = False) -> RenderableType:
    """A page of schedules (tombstones as deleted). Compact: the title over the ID, the
    state over its reason, the next slot over its zone."""
    full: list[list[Cell]] = []
    compact: list[list[Cell]] = []
    for doc in items:
        shown, reason = _shown_state(doc)
        if doc.get("kind") == "tombstone":
            runs, rev, zone, due = "—", str(doc["revision"]), "UTC", None
        else:
            c = doc.get("counters") or {}
            runs = f"{c.get('admitted', 0)}/{c.get('settled', 0)}/{c.get('successful', 0)}"
            rev, zone, due = str(doc["revision"]), display_zone(doc), doc.get("nextDueAt")
        full.append(
            [
                doc["id"],
                doc["title"],
                shown + (f" ({reason})" if reason else ""),
                local_text(due, zone),
                runs,
                rev,
            ]
        )
        compact.append(
            [
                Text.assemble((str(doc["title"]), "bold"), "\n", str(doc["id"])),
                shown + (f"\n{reason}" if reason else ""),
                _local_lines(due, zone),
            ]
        )
    small = table(_LIST_COMPACT, compact, compact=True, caption=COMPACT_LIST_CAPTION)
    return Fitted.of(_LIST, full, small, wide=wide, caption=RUNS_CAPTION)
