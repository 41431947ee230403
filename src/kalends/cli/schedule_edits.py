"""``kalends schedule create``, ``edit`` and ``receipt``: a schedule's configuration
written, from the same field flags (:mod:`kalends.cli.schedule_options`), and the
receipt a lost creation reply is checked with.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.text import Text

from kalends.cli.output import console, emit_json
from kalends.cli.remote import Remote
from kalends.cli.schedule_controls import (
    OneSchedule,
    control_note,
    expected,
    note,
    report_outcome,
    request_id_of,
    revision_of,
)
from kalends.cli.schedule_fields import FieldFlags, parse_json, read_file, read_json
from kalends.cli.schedule_options import (
    CREATE_FLAGS,
    EDIT_FLAGS,
    NO_FLAGS,
    ExpectedRevisionOption,
    RequestIdOption,
    ScheduleArgument,
    field_flags,
)
from kalends.cli.schedule_views import state_text
from kalends.cli.session import Reporter, Session
from kalends.cli.workspaces import WorkspaceArgument
from kalends.errors import ControlConflict, InvalidInput
from kalends.missions import Action, Receipt, check_request_id, config_from_json

__all__ = ["create_command", "edit_command", "receipt_command"]


@field_flags(CREATE_FLAGS)
def create_command(
    s: Session | Remote,
    workspace: WorkspaceArgument,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            metavar="FILE|-",
            help="The whole configuration as JSON (see `kalends.missions.config`); "
            "'-' reads standard input. Field flags override its fields.",
            show_default=False,
        ),
    ] = None,
    flags: FieldFlags = NO_FLAGS,
    request_id: RequestIdOption = None,
) -> None:
    """Create a paused schedule in WORKSPACE (editors and owners); Play starts it.

    Needs a title, a command (or an --agent preset) and one policy: --policy JSON, or
    --daily HH:MM, --every 90m, --at LOCAL, --after 2h, --cron EXPR (with --zone), or
    --immediate. With --json: the creation receipt. A repeated --request-id returns the
    first receipt.

    Defining what runs needs the run privilege too, in local mode as on a server: whoever
    holds it can run anything the passage user can. `kalends actor grant run ACTOR` gives
    it (locally anyone who may open the database; on a server its owner account). --env
    names starting with LD_ or PYTHON are refused.
    """
    rid, generated = request_id_of(request_id)
    base: dict[str, Any] = {}
    if config is not None:
        text = sys.stdin.read() if config == "-" else read_file(config, "config")
        loaded = parse_json(text, "config")
        if not isinstance(loaded, dict):
            raise InvalidInput("config: must be a JSON object", field="config")
        base = loaded
    merged = {**base, **flags.changes(base)}
    config_from_json(merged, new=True)  # bad input fails here, before the note
    if generated:
        note(
            f"request ID {rid} (generated); if the reply is lost: "
            f"kalends schedule receipt {workspace} {rid}"
        )
    receipt = s.schedules.create(s.actor, workspace, merged, request_id=rid)
    report_receipt(s, receipt, "created")


def report_receipt(s: Reporter, receipt: Receipt, verb: str) -> None:
    if s.json_output:
        emit_json(receipt.to_json())
        return
    doc = receipt.schedule
    if receipt.status == "unknown" or doc is None:
        console.print(
            Text(f"request {receipt.request_id}: unknown, no schedule was created with it"),
            soft_wrap=True,
        )
        return
    what = "created" if receipt.status == "created" else "created, since deleted:"
    heading = (
        f"{what} {doc['title']!r} ({state_text(doc)})"
        if verb == "receipt"
        else (
            f"{verb} {doc['title']!r}, paused: "
            f"`kalends schedule play {receipt.mission_id}` starts it"
        )
    )
    console.print(Text(heading), soft_wrap=True)
    console.print(Text(f"id {receipt.mission_id}, revision {doc['revision']}"), soft_wrap=True)
    console.print(Text(f"request {receipt.request_id}", style="dim"), soft_wrap=True)
    if receipt.repeated:
        console.print(Text("a repeated request: nothing was created again", style="yellow"))
    s.local_note()


def _current_config(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A schedule's configuration in the JSON form edits use (environment values unknown)."""
    profile = doc.get("profile") or {}
    return {
        "title": doc["title"],
        "objective": doc["objective"],
        "notes": doc["notes"],
        "profile": {"command": profile.get("command", []), "cwd": profile.get("cwd", ".")},
        "template": doc.get("template"),
        "policy": doc["policy"],
        "condition": doc.get("condition"),
        "end": doc.get("end"),
        "restart": doc.get("restart"),
    }


def _unchanged(name: str, value: Any, doc: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    if name == "profile":
        if (
            not isinstance(value, Mapping)
            or value.get("env")
            or (doc.get("profile") or {}).get("envNames")
            or "agent" in value
        ):
            return False
        shown = {"command": value.get("command"), "cwd": value.get("cwd", ".")}
        return bool(shown == current["profile"])
    if name == "end" and isinstance(value, Mapping):
        blank = {"until": None, "within": None, "maxPassages": None}
        return {**blank, **value} == {**blank, **(current.get("end") or {})}
    return bool(name in current and current[name] == value)


@field_flags(EDIT_FLAGS)
def edit_command(
    s: Session | Remote,
    schedule: ScheduleArgument,
    set_json: Annotated[
        str | None,
        typer.Option(
            "--set-json",
            metavar="JSON",
            help="Top-level fields to replace, as a JSON object (or @FILE), e.g. "
            '\'{"notes": "..."}\'; combines with the field flags.',
            show_default=False,
        ),
    ] = None,
    flags: FieldFlags = NO_FLAGS,
    request_id: RequestIdOption = None,
    expected_revision: ExpectedRevisionOption = None,
) -> None:
    """Change a schedule's configuration; only the top-level fields that change are sent.

    With a passage pending only --objective and --notes may change. Changing --command,
    --arg or --cwd keeps the environment (its values are never shown); --env replaces it
    and --clear-env removes it. Changing any of them needs the run privilege (`kalends
    actor grant run ACTOR`); the other fields are the editor role's. With --json: the
    control outcome.
    """
    rid, generated = request_id_of(request_id)
    revision = revision_of(expected_revision)
    given: dict[str, Any] = {}
    if set_json is not None:
        loaded = read_json(set_json, "set-json")
        if not isinstance(loaded, dict) or not loaded:
            raise InvalidInput(
                "set-json: must be a JSON object naming at least one field", field="set-json"
            )
        given = loaded
    one = OneSchedule(s.schedules, s.actor, schedule)
    doc = one.detail()
    if doc.get("kind") == "tombstone":
        raise ControlConflict(
            f"schedule {schedule} is deleted", action="configure", reason="deleted"
        )
    current = _current_config(doc)
    changes = flags.changes({**current, **given})
    both = sorted(set(given) & set(changes))
    if both:
        raise InvalidInput(f"{both[0]}: give it by flag or in --set-json, not both", field=both[0])
    if not given and not changes:
        raise InvalidInput(
            "edit: say what to change: a field flag (--title, --notes, --daily, …) or --set-json",
            field="edit",
        )
    wanted = {**given, **changes}
    sent = {k: v for k, v in wanted.items() if not _unchanged(k, v, doc, current)}
    if not sent:
        report_unchanged(s, one, doc, rid, None if generated else rid)
        return
    sending, how = expected(one, rid, generated, revision, int(doc["revision"]))
    control_note(schedule, Action.CONFIGURE, rid, generated, sending, how)
    outcome = one.control(Action.CONFIGURE, rid, sending, sent)
    report_outcome(s, outcome, schedule, f"changed: {', '.join(sorted(sent))}")


def report_unchanged(
    s: Reporter, one: OneSchedule, doc: Mapping[str, Any], rid: str, given_rid: str | None
) -> None:
    """Every field already has the value asked for: nothing is sent. With the user's own
    request ID, a configure it already applied is reported as a repeat."""
    status = one.status(given_rid) if given_rid is not None else None
    applied = status is not None and status.status == "applied" and status.action == "configure"
    out = {
        "requestId": given_rid,
        "action": "configure",
        "status": "applied" if applied else "unchanged",
        "expectedRevision": status.expected_revision if applied and status else None,
        "revision": status.revision if applied and status else doc["revision"],
        "complete": status.complete if applied and status else True,
        "repeated": applied,
        "schedule": dict(doc),
    }
    if s.json_output:
        emit_json(out)
        return
    if applied:
        console.print(Text(f"request {rid} already applied this edit: nothing sent again"))
    else:
        console.print(Text("nothing to change: every field already has that value"))


def receipt_command(
    s: Session | Remote,
    workspace: WorkspaceArgument,
    request_id: Annotated[
        str, typer.Argument(metavar="REQUEST_ID", help="The request ID `create` was sent with.")
    ],
) -> None:
    """Which schedule a `create` request made, if any (for a lost creation reply). A read."""
    rid = check_request_id(request_id.strip(), "request-id")
    receipt = s.schedules.receipt(s.actor, workspace, rid)
    report_receipt(s, receipt, "receipt")
