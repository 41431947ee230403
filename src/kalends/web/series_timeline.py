"""A series' timeline as its task page shows it: the occurrences so far (done, skipped,
reopened, the outstanding one), the calendar dates missed between them, and the next
dates the rule gives, each with what a DST change does to it.

Pure functions of what the services return (the series' view and the occurrences' root
tasks, read from the list's tree) and of the series' own rule functions
(:mod:`kalends.tasks.series_rules`): the dates are the ones completing or skipping would
create, a wall time the zone skips has no occurrence that day, and a wall time it repeats
is due at the first of the two (seed 000, "Recurrence").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from kalends.civil import get_zone
from kalends.civil.zones import Resolution, local_seconds
from kalends.tasks import Task, TimedValue
from kalends.tasks.series import SeriesStatus, SeriesView
from kalends.tasks.series_rules import SeriesKind, matches, next_date
from kalends.tasks.successors import day_exists, wall_instant

__all__ = ["Occurrence", "Upcoming", "occurrences", "upcoming"]

# How many upcoming dates a task page shows (issue 21: the next 5).
UPCOMING = 5
# Missed dates listed one by one up to this many; more are said as a count.
MAX_MISSED_LISTED = 3


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One row of the timeline: an occurrence (``task`` set), dates missed, or a rule
    date whose wall time the zone skips (``no-time``, with its ``note``)."""

    ordinal: int | None
    day: date | None
    state: str  # done | skipped | reopened | released | outstanding | missed | no-time
    task: Task | None = None
    missed: tuple[date, ...] = ()
    overdue: bool = False
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Upcoming:
    """A date the rule gives next: its instant when timed, and any DST note."""

    day: date
    at: str | None
    note: str | None


def _day_of(task: Task) -> date | None:
    due = task.due
    if isinstance(due, TimedValue):
        return due.local.date()
    if due is not None:
        return due
    return task.planned


def _state(task: Task, view: SeriesView, last: int) -> str:
    if task.occurrence is not None and task.occurrence == view.outstanding_ordinal:
        return "outstanding"
    if task.skipped:
        return "skipped"
    if task.status.value == "completed":
        return "done"
    if task.occurrence == last and view.status in (SeriesStatus.STOPPED, SeriesStatus.ENDED):
        # The series ended while this one was outstanding: an ordinary task now.
        return "released"
    return "reopened"


def _missed(view: SeriesView, after: date, before: date) -> tuple[date, ...]:
    """Rule dates strictly between two occurrences that got none (catch-up skipped them)."""
    if view.rule.kind is SeriesKind.COMPLETION_RELATIVE:
        return ()
    found: list[date] = []
    day = after + timedelta(days=1)
    while day < before and len(found) < 1000:
        if matches(view.rule, view.anchor_date, day) and day_exists(
            day, view.local_time, view.zone
        ):
            found.append(day)
        day += timedelta(days=1)
    return tuple(found)


def _skipped(view: SeriesView, after: date, before: date) -> list[date]:
    """Rule dates strictly between two occurrences whose wall time the zone skips."""
    if view.rule.kind is SeriesKind.COMPLETION_RELATIVE or view.local_time is None:
        return []
    found: list[date] = []
    day = after + timedelta(days=1)
    while day < before and len(found) < 100:
        if matches(view.rule, view.anchor_date, day) and not day_exists(
            day, view.local_time, view.zone
        ):
            found.append(day)
        day += timedelta(days=1)
    return found


def occurrences(view: SeriesView, roots: list[Task], today: date) -> list[Occurrence]:
    """The timeline so far, oldest first: each occurrence of ``roots`` (the series' root
    tasks) and, between two, the rule dates that were missed."""
    rows: list[Occurrence] = []
    previous: date | None = None
    ordered = sorted(roots, key=lambda t: t.occurrence or 0)
    last = ordered[-1].occurrence if ordered else None
    for task in ordered:
        day = _day_of(task)
        if previous is not None and day is not None:
            missed = _missed(view, previous, day)
            if missed:
                rows.append(Occurrence(None, None, "missed", missed=missed))
            rows += [
                Occurrence(None, gap, "no-time", note=_note(view, gap))
                for gap in _skipped(view, previous, day)
            ]
        state = _state(task, view, last or 0)
        overdue = state == "outstanding" and day is not None and day < today
        rows.append(Occurrence(task.occurrence, day, state, task, overdue=overdue))
        previous = day or previous
    return rows


def _note(view: SeriesView, day: date) -> str | None:
    """What the zone's DST change does to the series' wall time on ``day``."""
    if view.local_time is None or view.zone is None:
        return None
    tz = get_zone(view.zone)
    wall = local_seconds(datetime.combine(day, time.fromisoformat(view.local_time)))
    tz.cover(wall)
    kind, _, _ = tz.resolve(wall)
    clock = view.local_time[:5]
    said = f"{day:%a} {day.day} {day:%b}"
    if kind is Resolution.GAP:
        return f"{clock} does not exist on {said} (clocks go forward) — no occurrence that day"
    if kind is Resolution.FOLD:
        return f"{clock} happens twice on {said} (clocks go back) — due at the first"
    return None


def upcoming(view: SeriesView, start: date | None, count: int = UPCOMING) -> list[Upcoming]:
    """The next ``count`` dates from ``start`` (the date the next occurrence would get),
    and, among them in order, each date the rule names whose wall time does not exist
    (it has no occurrence: the rule goes on to the next). Nothing for a completion-relative
    rule (its dates count from a completion) or a series that makes no more."""
    if start is None or view.status not in (SeriesStatus.ACTIVE, SeriesStatus.PAUSED):
        return []
    left = None if view.count is None else max(view.count - view.emitted, 0)
    found: list[Upcoming] = []
    day: date | None = start
    made = 0
    probe = start
    while day is not None and made < count and (left is None or made < left):
        if view.end_date is not None and day > view.end_date:
            break
        # The rule's dates before ``day`` that its wall time skips, said in their place.
        while probe < day:
            if matches(view.rule, view.anchor_date, probe) and not day_exists(
                probe, view.local_time, view.zone
            ):
                found.append(Upcoming(probe, None, _note(view, probe)))
            probe += timedelta(days=1)
        at = None
        if view.local_time is not None and view.zone is not None:
            instant = wall_instant(
                datetime.combine(day, time.fromisoformat(view.local_time)), view.zone
            )
            at = instant.astimezone(UTC).isoformat().replace("+00:00", "Z")
        found.append(Upcoming(day, at, _note(view, day)))
        made += 1
        probe = day + timedelta(days=1)
        day = next_date(
            view.rule,
            view.anchor_date,
            day,
            lambda d: day_exists(d, view.local_time, view.zone),
        )
    return found
