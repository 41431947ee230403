"""The checks of ``kalends doctor`` that read the database: its schema, supervision, the
worker nodes' and the loops' heartbeats, the agent programs schedules name and the
reminder destinations.

Everything here reads; nothing is written. The loops' heartbeats are the leases the
database already holds: a running schedule's wake held by a live scheduler, a reminder
held by a live delivery loop. A loop that holds nothing leaves no trace, so an idle
system reads "no live holder seen" as a warning, never a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from kalends.bootstrap import Services, database_revision, head_revision, open_services
from kalends.cli.doctor_checks import Check, fail, ok, skipped, warn
from kalends.cli.local_reminders import LocalReminders
from kalends.cli.session import report_error
from kalends.config import mask_password
from kalends.errors import KalendsError
from kalends.missions.agents import PRESETS, refuse_missing_agent
from kalends.missions.config_profile import Profile
from kalends.missions.limits import MAX_PAGE
from kalends.supervision import Status as SupervisionStatus

__all__ = [
    "agent_checks",
    "database_check",
    "database_checks",
    "delivery_check",
    "destination_checks",
    "nodes_check",
    "scheduler_check",
    "supervision_check",
]

MAX_SCHEDULES = 2000
"""The most schedules the doctor reads (so that it stays quick on a large database)."""

_START_LOOPS = "run `kalends serve` or `kalends worker` (or `kalends service on --now`)"
_IDLE = "no live holder seen (idle or not running)"
_NEEDS_ACTOR = "not checked: pass --as HANDLE to read your schedules and reminders"


def database_check(url: str) -> Check:
    """Whether the database answers and is at this kalends' schema revision."""
    shown = mask_password(url)
    upgrade = f"kalends db upgrade --database '{shown}'"
    try:
        revision = database_revision(url)
    except (KalendsError, SQLAlchemyError) as exc:
        reason = (
            exc.message if isinstance(exc, KalendsError) else str(getattr(exc, "orig", None) or exc)
        )
        first = reason.strip().splitlines()[0] if reason.strip() else type(exc).__name__
        return fail(
            "database",
            f"cannot reach {shown}: {first}",
            "check --database or KALENDS_DATABASE_URL, and that the database server runs",
            database=shown,
        )
    head = head_revision()
    if revision is None:
        return fail("database", f"{shown} is not migrated", upgrade, database=shown)
    if revision != head:
        return fail(
            "database",
            f"{shown} is at revision {revision}, this kalends needs {head}",
            f"{upgrade} (a revision it does not know: upgrade kalends)",
            database=shown,
            revision=revision,
        )
    return ok("database", f"{shown} at revision {revision}", database=shown, revision=revision)


def supervision_check(services: Services) -> Check:
    """What ``kalends service status`` says; never needed (a server may be kept running
    by other means). Supervision turned off (``kalends service off``) is a choice, fine."""
    if services.supervisor is None:  # pragma: no cover - open_services always wires one
        return skipped("supervision", "not checked: this kalends has no supervision support")
    status: SupervisionStatus = services.supervisor.status()
    facts = status.to_json()
    preference = status.preference.describe()
    if not status.preference.on:
        return ok("supervision", f"off: preference {preference}", supervision=facts)
    if not status.available:
        return warn(
            "supervision",
            "not available: no systemd user manager answers here",
            "keep `kalends serve` running under your own supervisor, or run `kalends "
            "service on` where a systemd user manager runs",
            supervision=facts,
        )
    if not status.installed:
        return warn(
            "supervision",
            f"not installed; preference {preference}",
            "kalends service install --now",
            supervision=facts,
        )
    enabled = status.enabled or "enabled state unknown"
    if status.active != "active":
        last = f"; last exit: {status.last_exit}" if status.last_exit else ""
        return warn(
            "supervision",
            f"installed, {enabled}, {status.active or 'inactive'}{last}",
            "kalends service on --now (then `kalends service status`)",
            supervision=facts,
        )
    return ok("supervision", f"installed, {enabled}, active", supervision=facts)


def read_schedules(services: Services, actor: str) -> list[dict[str, Any]]:
    """The live schedules of every workspace ``actor`` belongs to, as ``kalends schedule
    ls`` reads them (at most :data:`MAX_SCHEDULES`)."""
    return list(_schedules(services, actor))


def _schedules(services: Services, actor: str) -> Iterator[dict[str, Any]]:
    count = 0
    for workspace in services.workspaces.list(actor):
        cursor: str | None = None
        while True:
            page = services.schedules.page(actor, workspace.id, after=cursor, limit=MAX_PAGE)
            for item in page.items:
                if item.get("desiredState") is not None:  # (not a tombstone)
                    yield item
                    count += 1
                    if count >= MAX_SCHEDULES:
                        return
            if page.next_after is None:
                break
            cursor = page.next_after


def scheduler_check(schedules: list[dict[str, Any]]) -> Check:
    """The scheduler's heartbeat: running schedules whose wake a live scheduler holds."""
    running = [s for s in schedules if s["desiredState"] == "running"]
    held = [s for s in running if s.get("displayState") == "running"]
    loose = [s for s in running if s.get("displayReason") == "no-scheduler"]
    if loose and not held:
        return fail(
            "scheduler",
            f"{len(loose)} running schedule(s) have work no live scheduler holds",
            _START_LOOPS,
        )
    if loose:
        return warn(
            "scheduler",
            f"a live scheduler holds {len(held)} schedule(s); {len(loose)} not held yet",
            "wait a few seconds; if it stays, restart the server",
        )
    if held:
        return ok("scheduler", f"a live scheduler holds {len(held)} running schedule(s)")
    return warn("scheduler", _IDLE, f"if schedules should run: {_START_LOOPS}")


def nodes_check(services: Services) -> Check:
    """The worker nodes' heartbeats (issue 23 §3): every node that runs passages beats every
    15 s, idle or not. A node that went silent with passages it never reported settled
    leaves them uncertain until it returns or a person forgets it."""
    from kalends.missions.nodes import list_nodes  # noqa: PLC0415

    now = services.store.clock.now()
    views = services.store.run(lambda conn: list_nodes(conn, now), write=False)
    live = [v for v in views if v.alive]
    lost = [v for v in views if not v.alive and v.forgotten_at is None and v.stopped_at is None]
    stranded = [v for v in lost if v.unsettled]
    if stranded:
        node = stranded[0]
        return warn(
            "nodes",
            f"node {node.name} ({node.node_id[:8]}) stopped beating "
            f"{_ago(now - node.beat_at)} ago with {node.unsettled} passage(s) it never "
            f"reported settled (uncertain)"
            + (f"; {len(stranded) - 1} more such node(s)" if len(stranded) > 1 else ""),
            f"start it again on {node.runtime_dir}, or if that machine is gone for good: "
            f"kalends node forget {node.node_id}",
            live=len(live),
            stranded=[v.node_id for v in stranded],
        )
    if live:
        names = ", ".join(f"{v.name} ({v.node_id[:8]})" for v in live[:3])
        more = f" and {len(live) - 3} more" if len(live) > 3 else ""
        return ok("nodes", f"{len(live)} live node(s): {names}{more}", live=len(live))
    return warn("nodes", "no live worker node", f"if passages should run: {_START_LOOPS}", live=0)


def _ago(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def delivery_check(services: Services, actor: str) -> Check:
    """The delivery loop's heartbeat: reminders of ``actor``'s lists a live delivery loop
    holds; reminders due that nobody holds are a warning."""
    reminders = LocalReminders(services)
    now = services.store.clock.now()
    leased = reminders.list(actor, status="leased")
    live = [i for i in leased if i.lease_expires_at is not None and i.lease_expires_at > now]
    if live:
        return ok("delivery", f"a live delivery loop holds {len(live)} reminder(s)")
    pending = reminders.list(actor, status="pending")
    overdue = [i for i in pending if i.next_attempt_at <= now]
    if overdue:
        return warn(
            "delivery", f"{len(overdue)} reminder(s) due and no live holder seen", _START_LOOPS
        )
    return warn("delivery", _IDLE, f"if reminders should go out: {_START_LOOPS}")


def agent_checks(schedules: list[dict[str, Any]]) -> list[Check]:
    """One check per agent program the running schedules name: whether it is on the
    passage's ``PATH``, as Play checks it."""
    programs: dict[str, list[str]] = {}
    refusals: dict[str, str] = {}
    # The programs of profiles that set their own PATH, whose value reads do not show.
    own_path: dict[str, list[str]] = {}
    for item in schedules:
        if item["desiredState"] != "running":
            continue
        profile = item.get("profile") or {}
        agent = profile.get("agent")
        if agent is None:
            continue
        command = tuple(profile.get("command") or ())
        if not command and agent in PRESETS:
            command = PRESETS[agent].command
        if not command:
            continue
        program = command[0]
        title = str(item.get("title") or item["id"])
        if "PATH" in profile.get("envNames", ()):
            own_path.setdefault(program, []).append(title)
            continue
        programs.setdefault(program, []).append(title)
        refused = refuse_missing_agent(Profile(command=command, agent=agent))
        if refused is not None:
            refusals[program] = refused.message
    checks = []
    for program, titles in sorted(programs.items()):
        shown = _titles(titles)
        name = f"agent {program}"
        if program in refusals:
            checks.append(
                fail(
                    name,
                    f"`{program}` (for {shown}) is not on the passages' PATH",
                    f"install `{program}` where passages find it, or pick another preset",
                    program=program,
                    reason=refusals[program],
                )
            )
        else:
            checks.append(ok(name, f"`{program}` found (for {shown})", program=program))
    for program, titles in sorted(own_path.items()):
        checks.append(
            skipped(
                f"agent {program}",
                f"`{program}` (for {_titles(titles)}): the profile sets its own PATH, "
                "which reads do not show; Play checked it",
                program=program,
            )
        )
    if not checks:
        return [skipped("agents", "no running schedule names an agent preset")]
    return checks


def _titles(titles: list[str]) -> str:
    """The first few schedules' titles, and how many more."""
    more = f" and {len(titles) - 3} more" if len(titles) > 3 else ""
    return ", ".join(titles[:3]) + more


def destination_checks(services: Services, actor: str, *, send_test: bool) -> list[Check]:
    """The actor's reminder destinations (URLs redacted); with ``send_test`` one test
    message to each, and what became of it."""
    destinations = services.destinations.list(actor, actor)
    if not destinations:
        return [skipped("destinations", "no reminder destination configured")]
    checks = []
    for found in destinations:
        name = f"{found.channel.value} {found.position}"
        facts = found.to_json()
        if not send_test:
            checks.append(
                ok(name, f"{found.display} (configured; --send-test sends)", destination=facts)
            )
            continue
        result = services.destinations.send_test(actor, actor, found.channel.value, found.position)
        if result.sent:
            checks.append(ok(name, f"{found.display}: test message sent", destination=facts))
        else:
            checks.append(
                fail(
                    name,
                    f"{found.display}: {result.error}",
                    "check the destination on the Settings page (or `kalends reminders`)",
                    destination=facts,
                )
            )
    return checks


def database_checks(
    url: str, actor: str | None, *, send_test: bool, json_output: bool
) -> list[Check]:
    """The checks that read the database (already known to be at this kalends' head, so
    opening it migrates nothing)."""
    services = open_services(url)
    try:
        checks = [supervision_check(services), nodes_check(services)]
        if actor is None:
            checks += [skipped(name, _NEEDS_ACTOR) for name in ("scheduler", "delivery", "agents")]
            return checks
        try:
            schedules = read_schedules(services, actor)
            checks.append(scheduler_check(schedules))
            checks.append(delivery_check(services, actor))
            checks += agent_checks(schedules)
            checks += destination_checks(services, actor, send_test=send_test)
        except KalendsError as exc:
            report_error(exc, json_output)
        return checks
    finally:
        services.store.close()
