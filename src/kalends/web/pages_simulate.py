"""A schedule's simulation page (issue 24 §2): ``/w/{workspace}/schedules/{id}/simulate``.

A GET form (it works with script off) names a window in the schedule's zone, one outage,
one pause, how long passages run, how often they fail and a seed; submitting runs
:func:`~kalends.missions.simulation.simulate` on the schedule's saved configuration (read
through the detail service as the viewer: a viewer may simulate) and shows the counts
by outcome and reason, the timeline, the DST-affected slots, the first and last slots,
the notes and the time it took. The simulation runs in a database of its own: nothing
reaches the real one. The route is a plain ``def``, so it runs in the thread pool, off
the event loop.

The web bounds its cost (kalends decision): a window of at most :data:`WEB_MAX_WINDOW`
holding at most :data:`WEB_MAX_SLOTS` slots (estimated before it runs), and a run of at
most :data:`WEB_MAX_STEPS` steps of the simulation's loop and :data:`WEB_MAX_SECONDS`;
beyond any, the page says so at the "to" field and points to ``kalends simulate``, which
runs up to ten years.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from markupsafe import Markup

from kalends.civil import get_zone
from kalends.civil.zones import to_naive_datetime
from kalends.clock import SystemClock
from kalends.errors import InvalidInput
from kalends.missions import Workspace
from kalends.missions.limits import MAX_PREVIEW
from kalends.missions.simulation import PROGRESS_EVERY, Progress, Simulation, policy_zone, simulate
from kalends.missions.simulation_options import (
    DEFAULT_SEED,
    Durations,
    Interval,
    SimulationOptions,
    parse_durations,
    parse_local_or_date,
)
from kalends.missions.timeline import timeline_svg
from kalends.web.ledger_display import ledger_line, nominal_text, outcome_counts, reason_counts
from kalends.web.render import WebRoute, instant, render
from kalends.web.session import Viewer, viewer
from kalends.web.workspace_scope import find_workspace

__all__ = [
    "DEFAULT_SPAN",
    "WEB_MAX_SECONDS",
    "WEB_MAX_SLOTS",
    "WEB_MAX_STEPS",
    "WEB_MAX_WINDOW",
    "SimulateForm",
    "estimated_slots",
    "options_of",
    "router",
]

router = APIRouter(route_class=WebRoute, include_in_schema=False)

# The window the form offers: from today for 365 days, in the schedule's zone.
DEFAULT_SPAN = timedelta(days=365)
# kalends decision: the web simulates at most two years (731 days) at once.
WEB_MAX_WINDOW = timedelta(days=731)
# kalends decision: and at most 12,000 steps of the simulation's loop (a step takes a
# few milliseconds: a minute at most on a small machine; a daily schedule with 40-minute
# passages takes about 4,400 a year); the check comes with each progress report, every
# PROGRESS_EVERY (100) steps.
WEB_MAX_STEPS = 12_000
# kalends decision: and stops after the progress report that comes past 120 seconds of
# wall time (reports come every PROGRESS_EVERY steps, so a run may go on a little longer).
# A year of a daily schedule with 40-minute passages took 15 to 60 s on a busy two-core
# machine; the page's own default window must not be refused.
WEB_MAX_SECONDS = 120.0
# kalends decision: and refuses at once a window the schedule fills with more than 800
# slots (two years of a daily schedule, a month of an hourly one, eight days of one every
# 15 minutes), estimated from the spacing of its next SAMPLE_SLOTS slots, so nobody waits
# for a refusal: a simulated slot took 0.03 to 0.13 s on a busy two-core machine.
WEB_MAX_SLOTS = 800
SAMPLE_SLOTS = MAX_PREVIEW
# The longest text any field of the form takes.
MAX_FIELD = 64
# The form's fields, in the order the page shows them (and its errors).
FIELDS = (
    "from",
    "to",
    "outage-from",
    "outage-to",
    "pause-from",
    "pause-to",
    "duration",
    "fail-rate",
    "seed",
)
_CLI = "kalends simulate"


class WebCostExceeded(InvalidInput):
    """The simulation needs more steps than the web runs at once."""


@dataclass(slots=True)
class SimulateForm:
    """The form's texts as given (shown again), and the problem of each field."""

    texts: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)

    def text(self, name: str) -> str:
        return self.texts.get(name, "")

    def first_error(self) -> str | None:
        """The first refused field in the page's order (it takes the focus)."""
        return next((name for name in FIELDS if name in self.errors), None)


def _defaults(now: datetime, zone: str) -> dict[str, str]:
    tz = get_zone(zone)
    epoch = int(now.timestamp())
    tz.cover(epoch)
    today = to_naive_datetime(epoch + tz.offset_at(epoch)).date()
    return {
        "from": today.isoformat(),
        "to": (today + DEFAULT_SPAN).isoformat(),
        "duration": "0",
        "fail-rate": "0",
        "seed": str(DEFAULT_SEED),
    }


def _said(error: InvalidInput, name: str) -> str:
    """A refusal's message without the field's name (the field is labelled)."""
    return error.message.removeprefix(f"{name}: ")


def _instant(form: SimulateForm, name: str, zone: str) -> datetime | None:
    text = form.text(name)
    if not text:
        return None
    try:
        return parse_local_or_date(text, zone, name)
    except InvalidInput as exc:
        form.errors[name] = _said(exc, name)
        return None


def _interval(form: SimulateForm, kind: str, zone: str) -> tuple[Interval, ...]:
    start, end = _instant(form, f"{kind}-from", zone), _instant(form, f"{kind}-to", zone)
    first, last = form.text(f"{kind}-from"), form.text(f"{kind}-to")
    if bool(first) != bool(last):
        missing = f"{kind}-to" if first else f"{kind}-from"
        form.errors.setdefault(missing, f"give both ends of the {kind}, or neither")
        return ()
    if start is None or end is None:
        return ()
    if end <= start:
        form.errors.setdefault(f"{kind}-to", f"the {kind} ends before it starts")
        return ()
    return (Interval(start, end),)


def _fail_rate(form: SimulateForm) -> float:
    text = form.text("fail-rate") or "0"
    try:
        rate = float(text)
    except ValueError:
        rate = -1.0
    if not 0 <= rate <= 1:  # (also NaN)
        form.errors["fail-rate"] = f"a number from 0 to 1, such as 0.05; got {text!r}"
        return 0.0
    return rate


def _seed(form: SimulateForm) -> int:
    text = form.text("seed") or str(DEFAULT_SEED)
    if not text.isdigit() or len(text) > 18:
        form.errors["seed"] = f"a whole number of at most 18 digits, such as 24; got {text!r}"
        return DEFAULT_SEED
    return int(text)


def _durations(form: SimulateForm) -> Durations:
    try:
        return parse_durations(form.text("duration") or "0", "duration")
    except InvalidInput as exc:
        form.errors["duration"] = _said(exc, "duration")
        return Durations()


def _window(form: SimulateForm, zone: str) -> tuple[datetime, datetime] | None:
    start, end = _instant(form, "from", zone), _instant(form, "to", zone)
    for name, value in (("from", start), ("to", end)):
        if value is None and name not in form.errors:
            form.errors[name] = "enter a date, such as 2027-01-01"
    if start is None or end is None:
        return None
    if end <= start:
        form.errors["to"] = "the window ends before it starts: choose a later date"
        return None
    if end - start > WEB_MAX_WINDOW:
        form.errors["to"] = (
            f"the page simulates at most {WEB_MAX_WINDOW.days:,} days at once, got "
            f"{(end - start).days:,}; run `{_CLI}` for a longer window (up to 10 years)"
        )
        return None
    return start, end


def options_of(form: SimulateForm, zone: str) -> SimulationOptions | None:
    """The options the form says, or ``None`` with ``form.errors`` filled."""
    for name, text in form.texts.items():
        if len(text) > MAX_FIELD:
            form.errors[name] = f"at most {MAX_FIELD} characters"
    if form.errors:
        return None
    window = _window(form, zone)
    outages = _interval(form, "outage", zone)
    pauses = _interval(form, "pause", zone)
    durations = _durations(form)
    rate = _fail_rate(form)
    seed = _seed(form)
    if window is None or form.errors:
        return None
    return SimulationOptions(
        start=window[0],
        end=window[1],
        zone=zone,
        outages=outages,
        pauses=pauses,
        durations=durations,
        fail_rate=rate,
        seed=seed,
    )


def _cap() -> Callable[[Progress], None]:
    """A progress callback that stops the simulation past :data:`WEB_MAX_STEPS` steps
    (each report comes after PROGRESS_EVERY more)."""
    steps = 0
    cap = WEB_MAX_STEPS  # (read when the run begins)
    wall = SystemClock()
    began = wall.monotonic()

    def check(progress: Progress) -> None:
        nonlocal steps
        steps += PROGRESS_EVERY
        if steps >= cap:
            reached = progress.at.astimezone(UTC).strftime("%Y-%m-%d")
            raise WebCostExceeded(
                f"this window needs more than the {cap:,} steps the page runs at "
                f"once (it reached {reached}, {progress.fraction:.0%} of the way): choose a "
                f"shorter window, or run `{_CLI}`",
                field="to",
            )
        if wall.monotonic() - began > WEB_MAX_SECONDS:
            raise WebCostExceeded(
                f"this window takes longer than the {WEB_MAX_SECONDS:.0f} seconds the page "
                f"runs at once (it reached {progress.at.astimezone(UTC):%Y-%m-%d}, "
                f"{progress.fraction:.0%} of the way): choose a shorter window, or run `{_CLI}`",
                field="to",
            )

    return check


def estimated_slots(
    upcoming: Sequence[Mapping[str, Any]], start: datetime, end: datetime
) -> int | None:
    """About how many slots ``[start, end)`` holds, from the spacing of the ``upcoming``
    slots (the preview's, ``at`` instants); ``None`` when fewer than SAMPLE_SLOTS come
    (a schedule that ends or runs out of quota soon: the steps and seconds bound it)."""
    ats = [instant(str(slot.get("at") or "")) for slot in upcoming]
    known = [at for at in ats if at is not None]
    if len(known) < SAMPLE_SLOTS:
        return None
    span = (known[-1] - known[0]) / (len(known) - 1)
    if span <= timedelta(0):
        return None
    return int((end - start) / span)


def _too_many(who: Viewer, ws: Workspace, schedule: UUID, options: SimulationOptions) -> str | None:
    """The refusal of a window with more slots than the page simulates, or ``None``."""
    try:
        upcoming = who.context.services.schedules.preview(
            who.actor, schedule, SAMPLE_SLOTS, workspace=ws.id
        )
    except InvalidInput:
        return None
    estimate = estimated_slots(upcoming, options.start, options.end)
    if estimate is None or estimate <= WEB_MAX_SLOTS:
        return None
    return (
        f"this window holds about {estimate:,} slots of this schedule; the page simulates "
        f"at most {WEB_MAX_SLOTS:,} at once: choose a shorter window, or run `{_CLI}`"
    )


def config_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration a schedule's detail projection holds (its profile is replaced
    by the simulation; a condition is noted and left out there)."""
    config: dict[str, Any] = {
        key: doc[key]
        for key in ("title", "objective", "notes", "policy", "end", "restart")
        if doc.get(key) is not None
    }
    if doc.get("condition") is not None:
        config["condition"] = doc["condition"]
    return config


def _result_values(result: Simulation, title: str) -> dict[str, Any]:
    svg = timeline_svg(
        result.rows,
        start=result.start,
        end=result.end,
        zone=result.zone,
        title=f"{title} (simulated)",
        ident="sim",
    )
    return {
        "result": result,
        "svg": Markup(svg),  # (built by the timeline module, every text escaped there)
        "outcome_counts": outcome_counts(result.counts),
        "reason_counts": reason_counts(result.counts),
        "dst_lines": [ledger_line(r) for r in result.dst],
        "first_line": None if result.first is None else ledger_line(result.first),
        "last_line": None if result.last is None else ledger_line(result.last),
        "from_iso": result.start.isoformat().replace("+00:00", "Z"),
        "to_iso": result.end.isoformat().replace("+00:00", "Z"),
    }


def simulate_values(
    who: Viewer, ws: Workspace, schedule: UUID, query: Mapping[str, str] | None
) -> tuple[dict[str, Any], int]:
    """The page's values and status: the form (with ``query``'s texts, else the
    defaults), and when a query was sent, the simulation's result or the problems at
    their fields (status 422)."""
    reads = who.context.services.schedules
    doc = reads.detail(who.actor, schedule, workspace=ws.id)
    title = str(doc.get("title") or "Schedule")
    values: dict[str, Any] = {
        "title": f"Simulate — {title}",
        "workspace": ws,
        "doc": doc,
        "fields": FIELDS,
        "problem": None,
        "result": None,
        "max_days": WEB_MAX_WINDOW.days,
        "max_steps": WEB_MAX_STEPS,
        "nominal_text": nominal_text,
    }
    zone = "UTC"
    config: dict[str, Any] = {}
    if doc.get("kind") == "tombstone":
        values["problem"] = "This schedule was deleted: there is nothing to simulate."
    else:
        config = config_of(doc)
        try:
            zone = policy_zone(config)
        except InvalidInput as exc:
            values["problem"] = exc.message
    values["can_simulate"] = values["problem"] is None
    now = who.context.services.store.clock.now()
    asked = query is not None and values["problem"] is None
    texts = {k: v.strip() for k, v in (query or {}).items() if k in FIELDS}
    form = SimulateForm(texts=texts if asked else _defaults(now, zone))
    values.update(form=form, zone=zone)
    if not asked:
        return values, 200
    options = options_of(form, zone)
    if options is None:
        return values, 422
    refusal = _too_many(who, ws, schedule, options)
    if refusal is not None:
        form.errors["to"] = refusal
        return values, 422
    try:
        result = simulate(config, options, progress=_cap())
    except InvalidInput as exc:
        name = exc.field if exc.field in FIELDS else None
        if name is not None:
            form.errors[name] = _said(exc, name)
        else:
            values["problem"] = exc.message
        return values, 422
    values.update(_result_values(result, title))
    return values, 200


@router.get("/w/{workspace}/schedules/{schedule}/simulate")
def simulate_page(
    request: Request,
    workspace: UUID,
    schedule: UUID,
    run: Annotated[str | None, Query(max_length=8)] = None,
) -> Response:
    """The simulation form; with ``?run=1`` and the form's fields, the simulation of the
    schedule's saved configuration over that window (nothing is written anywhere), or
    the refused fields with status 422."""
    who = viewer(request)
    ws, nav = find_workspace(who, workspace)
    query = dict(request.query_params) if run is not None else None
    values, status = simulate_values(who, ws, schedule, query)
    values["nav_workspaces"] = nav
    return render(request, "simulate.html", values, who=who, status=status)
