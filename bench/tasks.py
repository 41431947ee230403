"""Task-store benchmark: set_schedule, complete_subtree, checklist reads and recurring
checklists on SQLite.

One list of ``--tasks`` (default 10,000) tasks is built in a temporary SQLite file
(WAL, as kalends configures it) through the public API, one ``TaskService.create``
call per task. Its top-level tasks carry nested checklists of depth up to 5: most
are "500-item checklists", a root with 500 items below it (4, 16, 48, 144 and 288
items on levels 1-5: 501 rows in all); the rest of the list is 10-item checklists
(2 items on each of levels 1-5) and plain tasks. Then, through the public API:

(a) ``set_schedule(actor, task, expected_revision, schedule)``, once on each of
    ``--samples`` different tasks (all open, revision 1, drawn across the list), with
    a due local time + zone, priority 2 and two reminders (email + push);
(b) ``complete(actor, root, expected_revision, complete_subtree=True)`` on each of
    ``--subtrees`` separate 500-item checklists (501 rows completed each time);
(c) ``checklist(actor, root)`` on another 500-item checklist, ``--samples`` times;
(d) ``complete(actor, root, expected_revision, complete_subtree=True)`` on the
    outstanding occurrence of each of ``--series`` recurring checklists, which also
    generates its successor through the ``after_task_update`` hook of the series. The
    recurring checklists live in a second list: 500 tasks each, the most a series
    supports (a root with 499 items, the 500-item shape less its last leaf), built
    through the public API with tags on some items, descriptions on some, a timed due
    (local time + zone, three zones) and a planned date on every 5th item, two reminders
    on every 10th, a date-only due on others; the root is due at 09:00
    America/New_York on the eve of the next US spring-forward, and a series "daily at
    09:00 America/New_York" starts on it, so the successor's timed values move by 23
    elapsed hours.

The physical limit for (a), (b) and (d) is measured in the same run: right after the
build the database is copied (SQLite backup API) and the stdlib ``sqlite3`` module
writes the same rows on the same tasks of the copy, each sample in one
``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction on a connection configured like
kalends' (WAL, ``synchronous=NORMAL``, foreign keys on, the same page cache size):

(a) 1 UPDATE of the task, DELETE + 2 INSERTs into task_reminders, 1 UPDATE of
    reminder_intents (cancel live intents), 2 INSERTs into reminder_intents,
    1 INSERT into task_history;
(b) 1 UPDATE of the 501 task rows (``id IN (...)``), 1 UPDATE of reminder_intents,
    501 history rows (``executemany``);
(d) the completion as in (b) for 500 rows, then the successor: UPDATE of the settled
    series_occurrences row, 500 tasks, their task_tags, task_reminders,
    reminder_intents and 500 'created' history rows (one ``executemany`` each), INSERT
    of the new series_occurrences row, UPDATE of task_series.

The bare writes know the task IDs and revisions up front, and for (d) the successor's
rows too (read from the copy and computed before the timed call, with ``zoneinfo``; new
IDs time-ordered, as kalends gives new rows):
they do none of the reads kalends does (actor, role and revision checks, trash check,
finding the subtree, the series and the rows to copy, reference collision checks, the
returned task). At the end the rows each side wrote are compared (all columns but
generated IDs, short references and timestamps; successor rows are matched through the
task they were copied from); the run fails if they differ.

Timing: ``time.perf_counter_ns`` around each call, garbage collector paused during a
series (as ``timeit`` does), kalends and bare samples interleaved. Warm-up calls
(untimed) on other tasks first; SQL statements per operation are counted on the last
warm-up call. Targets (on the median): (a) < 2 ms, (b) < 50 ms and within 3x of the
bare-sqlite3 median, (c) < 20 ms, (d) < 60 ms and within 3x of the bare-sqlite3 median.

Run from the repository root: ``python bench/tasks.py [--json] [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import json
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as time_of_day
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))


from bench.common import StatementCounter, grid, log, positive  # noqa: E402
from kalends.bootstrap import Services, build  # noqa: E402
from kalends.civil import format_local  # noqa: E402
from kalends.storage.engine import SQLITE_CACHE_KIB  # noqa: E402
from kalends.storage.ids import ids_at  # noqa: E402
from kalends.storage.migrate import open_store  # noqa: E402
from kalends.tasks import Schedule, Task, TimedValue, TreeNode, parse_schedule  # noqa: E402
from kalends.tasks.models import reminder_to_json  # noqa: E402
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS  # noqa: E402
from kalends.tasks.values import due_to_json  # noqa: E402

# Children per node on checklist levels 1-5.
FULL_SHAPE: tuple[int, ...] = (4, 4, 3, 3, 2)  # 4 + 16 + 48 + 144 + 288 = 500 items
SMALL_SHAPE: tuple[int, ...] = (2, 1, 1, 1, 1)  # 2 + 2 + 2 + 2 + 2 = 10 items

SCHEDULE_JSON: dict[str, Any] = {
    "due": {"local": "2026-05-04T09:00:00", "zone": "Europe/Berlin"},
    "priority": 2,
    "reminders": [
        {"channel": "email", "local": "2026-05-04T08:00:00", "zone": "Europe/Berlin"},
        {"channel": "push", "local": "2026-05-04T08:45:00", "zone": "Europe/Berlin"},
    ],
}

# (d): the series, and the zones of the items' timed due values and reminders.
SERIES_RULE: dict[str, Any] = {"kind": "daily", "interval_days": 1}
SERIES_TIME = "09:00"
SERIES_ZONE = "America/New_York"
ITEM_ZONES: tuple[str, ...] = ("America/New_York", "Europe/Berlin", "Asia/Tokyo")
RECURRING_TASKS = MAX_CHECKLIST_TASKS  # 500: the root and 499 items

SEED = 2026
# The alphabet of short task references (the bare writer draws its own).
REF_ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
WARMUP_SCHEDULES = 10
WARMUP_READS = 10
WARMUP_COMPLETES = 2
WARMUP_SERIES = 2


@dataclass(frozen=True)
class Sizes:
    tasks: int
    subtrees: int
    samples: int
    series: int


DEFAULT = Sizes(tasks=10_000, subtrees=15, samples=200, series=12)
QUICK = Sizes(tasks=3_000, subtrees=3, samples=50, series=3)


@dataclass(frozen=True)
class Target:
    median_ms: float
    ratio: float | None = None

    def text(self) -> str:
        out = f"< {self.median_ms:g} ms"
        return out + (f", <= {self.ratio:g}x bare" if self.ratio is not None else "")


TARGETS = {"a": Target(2.0), "b": Target(50.0, 3.0), "c": Target(20.0), "d": Target(60.0, 3.0)}

# Statements run by the bare writes, counted like kalends' (BEGIN included, COMMIT not;
# an executemany counts once).
BARE_SCHEDULE_STATEMENTS = 7
BARE_COMPLETE_STATEMENTS = 4
BARE_RECURRING_STATEMENTS = 12


# --------------------------------------------------------------------------- the list


def tree_size(shape: Sequence[int]) -> int:
    total, width = 1, 1
    for children in shape:
        width *= children
        total += width
    return total


@dataclass
class Tree:
    shape: tuple[int, ...]
    tasks: list[Task]
    """The root first, then level by level."""

    @property
    def root(self) -> Task:
        return self.tasks[0]


def plan(total: int) -> list[tuple[int, ...]]:
    """Top-level shapes adding up to ``total`` tasks: full checklists, then small, then plain."""
    shapes: list[tuple[int, ...]] = []
    left = total
    for shape in (FULL_SHAPE, SMALL_SHAPE, ()):
        size = tree_size(shape)
        while left >= size:
            shapes.append(shape)
            left -= size
    return shapes


def create_tree(
    services: Services, actor: uuid.UUID, list_id: uuid.UUID, shape: tuple[int, ...], n: int
) -> Tree:
    create = services.tasks.create
    root = create(actor, list_id, f"Checklist {n}")
    found = [root]
    level = [root]
    for depth, children in enumerate(shape, 1):
        below: list[Task] = []
        for parent in level:
            for _ in range(children):
                title = f"Checklist {n} item {depth}.{len(below) + 1}"
                below.append(create(actor, list_id, title, parent=parent.id))
        found += below
        level = below
    return Tree(shape, found)


# --------------------------------------------------------------------------- recurring


@dataclass
class Recurring:
    """A recurring checklist (the root first, then level by level) and its series."""

    tree: Tree
    series_id: uuid.UUID
    root_revision: int


def spring_forward_eve(today: date) -> date:
    """The first day at least a week ahead whose next day's 09:00 in SERIES_ZONE is in DST."""
    zone = ZoneInfo(SERIES_ZONE)
    day = today + timedelta(days=7)
    for _ in range(400):
        before = datetime.combine(day, time_of_day(9), zone).utcoffset()
        after = datetime.combine(day + timedelta(days=1), time_of_day(9), zone).utcoffset()
        if before is not None and after is not None and after > before:
            return day
        day += timedelta(days=1)
    raise RuntimeError(f"{SERIES_ZONE} has no spring-forward within 400 days")  # pragma: no cover


def item_schedule(k: int, day: date) -> dict[str, Any] | None:
    """The schedule of the ``k``-th item (1-based, creation order) of a recurring checklist."""
    if k % 5 == 0:
        zone = ITEM_ZONES[(k // 5) % len(ITEM_ZONES)]
        due = datetime.combine(day, time_of_day(10 + k % 9, 30))
        out: dict[str, Any] = {
            "planned": day.isoformat(),
            "due": {"local": format_local(due), "zone": zone},
            "priority": 1 + k % 3,
        }
        if k % 10 == 0:
            out["reminders"] = [
                {"channel": "email", "local": format_local(due - timedelta(hours=1)), "zone": zone},
                {
                    "channel": "push",
                    "local": format_local(due - timedelta(minutes=10)),
                    "zone": zone,
                },
            ]
        return out
    if k % 5 == 2:
        return {"planned": day.isoformat(), "due": (day + timedelta(days=1)).isoformat()}
    return None


def item_tags(k: int) -> list[str]:
    return [name for name, every in (("kitchen", 4), ("weekly", 6)) if k % every == 0]


def create_recurring(
    services: Services,
    actor: uuid.UUID,
    list_id: uuid.UUID,
    shape: tuple[int, ...],
    size: int,
    n: int,
    day: date,
) -> Recurring:
    """``size`` tasks on ``shape`` (cut at ``size``), scheduled, then a series started on it."""
    svc = services.tasks

    def recipient(_value: object, _field: str) -> uuid.UUID:
        return actor

    root = svc.create(actor, list_id, f"Routine {n}", description="Every morning.")
    due = {"local": f"{day.isoformat()}T{SERIES_TIME}:00", "zone": SERIES_ZONE}
    root = svc.set_schedule(
        actor, root.id, root.revision, parse_schedule({"due": due, "priority": 1}, recipient)
    )
    found, level, k = [root], [root], 0
    for depth, children in enumerate(shape, 1):
        below: list[Task] = []
        for parent in level:
            for _ in range(children):
                if len(found) + len(below) >= size:
                    break
                k += 1
                task = svc.create(
                    actor,
                    list_id,
                    f"Routine {n} step {depth}.{len(below) + 1}",
                    parent=parent.id,
                    description=f"Step {k} of the routine." if k % 3 == 0 else "",
                    tags=item_tags(k),
                )
                schedule = item_schedule(k, day)
                if schedule is not None:
                    task = svc.set_schedule(
                        actor, task.id, task.revision, parse_schedule(schedule, recipient)
                    )
                below.append(task)
        found += below
        level = below
    if len(found) != size:
        raise RuntimeError(f"recurring checklist of {len(found)} tasks, expected {size}")
    view = services.series.start_series(
        actor, root.id, root.revision, SERIES_RULE, time_of_day=SERIES_TIME, zone=SERIES_ZONE
    )
    revision = svc.get(actor, root.id).task.revision
    if view.anchor_date != day or view.outstanding_task_id != root.id:
        raise RuntimeError(f"start_series returned {view!r}")
    return Recurring(Tree(shape, found), view.id, revision)


@dataclass
class Fixture:
    services: Services
    path: Path
    copy_path: Path
    actor: uuid.UUID
    list_id: uuid.UUID
    trees: list[Tree]
    build_s: float
    complete_trees: list[Tree] = field(default_factory=list)
    warmup_trees: list[Tree] = field(default_factory=list)
    read_tree: Tree | None = None
    schedule_tasks: list[Task] = field(default_factory=list)
    warmup_tasks: list[Task] = field(default_factory=list)
    recurring: list[Recurring] = field(default_factory=list)
    warmup_recurring: list[Recurring] = field(default_factory=list)
    recurring_build_s: float = 0.0
    series_day: date | None = None


def build_fixture(directory: Path, sizes: Sizes) -> Fixture:
    shapes = plan(sizes.tasks)
    fulls = sum(1 for s in shapes if s == FULL_SHAPE)
    smalls = sum(1 for s in shapes if s == SMALL_SHAPE)
    if fulls < sizes.subtrees + 1 or smalls < WARMUP_COMPLETES:
        need = (sizes.subtrees + 1) * tree_size(FULL_SHAPE)
        need += WARMUP_COMPLETES * tree_size(SMALL_SHAPE)
        raise SystemExit(
            f"--tasks {sizes.tasks} is too small for --subtrees {sizes.subtrees}"
            f" (at least about {need:,} are needed)"
        )

    path = directory / "kalends.db"
    services = build(open_store(f"sqlite:///{path}"))
    actor = services.directory.add_actor("bench", "Bench", "bench@example.com").id
    list_id = services.directory.create_list(actor, "Benchmark").id
    log(f"building {sizes.tasks:,} tasks through TaskService.create ...")
    t0 = time.perf_counter()
    trees = [create_tree(services, actor, list_id, s, n) for n, s in enumerate(shapes, 1)]
    build_s = time.perf_counter() - t0
    log(f"  built in {build_s:.1f} s")

    day = spring_forward_eve(datetime.now(ZoneInfo(SERIES_ZONE)).date())
    routines = services.directory.create_list(actor, "Routines").id
    log(
        f"building {sizes.series} + {WARMUP_SERIES} recurring checklists of"
        f" {RECURRING_TASKS} + {tree_size(SMALL_SHAPE)} tasks, series from {day} ..."
    )
    t0 = time.perf_counter()
    warmup_recurring = [
        create_recurring(services, actor, routines, SMALL_SHAPE, tree_size(SMALL_SHAPE), n, day)
        for n in range(1, WARMUP_SERIES + 1)
    ]
    recurring = [
        create_recurring(services, actor, routines, FULL_SHAPE, RECURRING_TASKS, n, day)
        for n in range(WARMUP_SERIES + 1, WARMUP_SERIES + sizes.series + 1)
    ]
    recurring_build_s = time.perf_counter() - t0
    log(f"  built in {recurring_build_s:.1f} s")

    copy_path = directory / "bare.db"
    with _sqlite(path) as source, _sqlite(copy_path) as target:
        source.backup(target)

    fx = Fixture(services, path, copy_path, actor, list_id, trees, build_s)
    fx.recurring, fx.warmup_recurring = recurring, warmup_recurring
    fx.recurring_build_s, fx.series_day = recurring_build_s, day
    full = [t for t in trees if t.shape == FULL_SHAPE]
    small = [t for t in trees if t.shape == SMALL_SHAPE]
    fx.complete_trees = full[: sizes.subtrees]
    fx.read_tree = full[sizes.subtrees]
    fx.warmup_trees = small[:WARMUP_COMPLETES]
    used = {id(t) for t in [*fx.complete_trees, fx.read_tree, *fx.warmup_trees]}
    pool = [task for t in trees if id(t) not in used for task in t.tasks]
    wanted = WARMUP_SCHEDULES + sizes.samples
    if len(pool) < wanted:
        raise SystemExit(f"--tasks {sizes.tasks} leaves {len(pool)} tasks for (a); {wanted} needed")
    picked = random.Random(SEED).sample(pool, wanted)
    fx.warmup_tasks, fx.schedule_tasks = picked[:WARMUP_SCHEDULES], picked[WARMUP_SCHEDULES:]
    return fx


# --------------------------------------------------------------------------- bare sqlite3


@contextmanager
def _sqlite(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None, timeout=5.0)
    try:
        yield conn
    finally:
        conn.close()


def _instant(value: datetime) -> str:
    """An instant as kalends stores it on SQLite (UTCDateTime)."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _now() -> str:
    return _instant(datetime.now(UTC))


class Bare:
    """The same rows as kalends writes, with the stdlib sqlite3 module, one transaction each."""

    def __init__(self, conn: sqlite3.Connection, actor: uuid.UUID, schedule: Schedule) -> None:
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA journal_mode = WAL").fetchall()
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
        conn.execute("PRAGMA temp_store = MEMORY")
        self.conn = conn
        self.actor = actor.hex
        due = schedule.due
        if not isinstance(due, TimedValue):  # pragma: no cover - SCHEDULE_JSON has a timed due
            raise TypeError("the benchmark schedule needs a timed due value")
        self.due = (format_local(due.local), due.zone, _instant(due.at))
        self.priority = schedule.priority
        self.reminders = [
            (r.channel.value, format_local(r.time.local), r.time.zone, _instant(r.time.at))
            for r in schedule.reminders
        ]
        self.recipients = [r.recipient_id.hex for r in schedule.reminders]
        self.payload: dict[str, Any] = {
            "planned": None,
            "due": due_to_json(due),
            "priority": schedule.priority,
            "reminders": [reminder_to_json(r) for r in schedule.reminders],
        }

    def set_schedule(self, task: uuid.UUID, revision: int, schedule_revision: int) -> None:
        c = self.conn
        tid = task.hex
        now = _now()
        local, zone, at = self.due
        c.execute("BEGIN IMMEDIATE")
        try:
            cur = c.execute(
                "UPDATE tasks SET schedule_revision = ?, planned_date = NULL, priority = ?,"
                " due_date = NULL, due_local = ?, due_zone = ?, due_at = ?,"
                " revision = revision + 1, updated_at = ? WHERE id = ? AND revision = ?",
                (schedule_revision, self.priority, local, zone, at, now, tid, revision),
            )
            if cur.rowcount != 1:
                raise RuntimeError(f"bare set_schedule: task {task} not at revision {revision}")
            c.execute("DELETE FROM task_reminders WHERE task_id = ?", (tid,))
            c.executemany(
                "INSERT INTO task_reminders (task_id, position, channel, local, zone, at,"
                " recipient_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (tid, i, channel, r_local, r_zone, r_at, who)
                    for i, ((channel, r_local, r_zone, r_at), who) in enumerate(
                        zip(self.reminders, self.recipients, strict=True)
                    )
                ],
            )
            c.execute(
                "UPDATE reminder_intents SET status = 'cancelled', closed_reason = ?,"
                " lease_token = NULL, updated_at = ?"
                " WHERE task_id IN (?) AND status IN ('pending', 'leased')",
                ("schedule-changed", now, tid),
            )
            c.executemany(
                "INSERT INTO reminder_intents (id, task_id, schedule_revision, channel, at,"
                " recipient_id, status, attempts, next_attempt_at, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)",
                [
                    (uuid.uuid4().hex, tid, schedule_revision, channel, r_at, who, r_at, now, now)
                    for (channel, _, _, r_at), who in zip(
                        self.reminders, self.recipients, strict=True
                    )
                ],
            )
            payload = json.dumps({"schedule_revision": schedule_revision, **self.payload})
            c.execute(
                "INSERT INTO task_history (task_id, kind, actor_id, at, payload, series_id,"
                " occurrence) VALUES (?, 'schedule-set', ?, ?, ?, NULL, NULL)",
                (tid, self.actor, now, payload),
            )
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def complete_subtree(self, root: uuid.UUID, ids: Sequence[uuid.UUID]) -> None:
        """Completes ``ids`` (the root first, then its open descendants)."""
        c = self.conn
        hexes = [i.hex for i in ids]
        now = _now()
        c.execute("BEGIN IMMEDIATE")
        try:
            self._complete(hexes, json.dumps({"cascade_from": str(root)}), now)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def _complete(
        self,
        hexes: Sequence[str],
        cascade: str,
        now: str,
        series: str | None = None,
        occurrence: int | None = None,
    ) -> None:
        """Completes the rows; a series' occurrence's history rows carry its series and ordinal."""
        c = self.conn
        marks = ", ".join("?" * len(hexes))
        cur = c.execute(
            "UPDATE tasks SET status = 'completed', completed_at = ?,"
            f" revision = revision + 1, updated_at = ? WHERE id IN ({marks})",
            (now, now, *hexes),
        )
        if cur.rowcount != len(hexes):
            raise RuntimeError(f"bare complete: {cur.rowcount} of {len(hexes)} rows updated")
        c.execute(
            "UPDATE reminder_intents SET status = 'cancelled', closed_reason = ?,"
            f" lease_token = NULL, updated_at = ? WHERE task_id IN ({marks})"
            " AND status IN ('pending', 'leased')",
            ("task-completed", now, *hexes),
        )
        c.executemany(
            "INSERT INTO task_history (task_id, kind, actor_id, at, payload, series_id,"
            " occurrence) VALUES (?, 'completed', ?, ?, ?, ?, ?)",
            [
                (
                    h,
                    self.actor,
                    now,
                    cascade if n else '{"complete_subtree": true}',
                    series,
                    occurrence,
                )
                for n, h in enumerate(hexes)
            ],
        )

    def complete_recurring(self, plan: SuccessorPlan) -> None:
        """Completes the occurrence ``plan`` names and writes its successor's rows."""
        c = self.conn
        now = _now()
        stamps = (now, now)
        c.execute("BEGIN IMMEDIATE")
        try:
            self._complete(plan.old_ids, plan.cascade, now, plan.series, plan.ordinal - 1)
            cur = c.execute(
                "UPDATE series_occurrences SET status = 'completed', settled_at = ?"
                " WHERE series_id = ? AND ordinal = ? AND status = 'outstanding'",
                (now, plan.series, plan.ordinal - 1),
            )
            if cur.rowcount != 1:
                raise RuntimeError(f"bare complete: occurrence {plan.ordinal - 1} not outstanding")
            c.executemany(
                "INSERT INTO tasks (id, ref, list_id, section_id, parent_id, position, title,"
                " description, status, completed_at, trashed, trashed_at, revision,"
                " schedule_revision, priority, planned_date, due_date, due_local, due_zone,"
                " due_at, series_id, occurrence, created_by, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'open', NULL, 0, NULL, 1, ?, ?, ?, ?, ?, ?,"
                " ?, ?, ?, ?, ?, ?)",
                [row + stamps for row in plan.task_rows],
            )
            c.executemany("INSERT INTO task_tags (task_id, tag_id) VALUES (?, ?)", plan.tag_rows)
            c.executemany(
                "INSERT INTO task_reminders (task_id, position, channel, local, zone, at,"
                " recipient_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                plan.reminder_rows,
            )
            c.executemany(
                "INSERT INTO reminder_intents (id, task_id, schedule_revision, channel, at,"
                " recipient_id, status, attempts, next_attempt_at, created_at, updated_at)"
                " VALUES (?, ?, 1, ?, ?, ?, 'pending', 0, ?, ?, ?)",
                [row + stamps for row in plan.intent_rows],
            )
            c.executemany(
                "INSERT INTO task_history (task_id, kind, actor_id, payload, series_id,"
                " occurrence, at) VALUES (?, 'created', ?, ?, ?, ?, ?)",
                [(*row, now) for row in plan.history_rows],
            )
            c.execute(
                "INSERT INTO series_occurrences (series_id, ordinal, root_task_id,"
                " occurrence_date, status, settled_at) VALUES (?, ?, ?, ?, 'outstanding', NULL)",
                (plan.series, plan.ordinal, plan.task_rows[0][0], plan.day),
            )
            c.execute(
                "UPDATE task_series SET emitted = ?, updated_at = ? WHERE id = ?",
                (plan.ordinal, now, plan.series),
            )
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise


@dataclass
class SuccessorPlan:
    """What the bare writer writes for (d), known before the timed call (timestamps aside)."""

    series: str
    ordinal: int
    """The successor's ordinal."""
    day: str
    old_ids: list[str]
    """The occurrence's tasks, the root first."""
    cascade: str
    task_rows: list[tuple[Any, ...]]
    tag_rows: list[tuple[str, str]]
    reminder_rows: list[tuple[Any, ...]]
    intent_rows: list[tuple[Any, ...]]
    history_rows: list[tuple[Any, ...]]


def _parse_instant(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def plan_successor(
    conn: sqlite3.Connection, actor: uuid.UUID, rec: Recurring, taken_refs: set[str]
) -> SuccessorPlan:
    """The successor's rows, computed independently of kalends from the copy's rows.

    Rule daily at 09:00 in SERIES_ZONE, where 09:00 exists every day: the successor is
    dated the day after the occurrence, or today when that is later (catch-up). The
    root is due at 09:00 then; timed values keep their elapsed offset from the root's
    due instant, shown in their own zone; date-only values move by the days between.
    """
    old_ids = [t.id.hex for t in rec.tree.tasks]
    marks = ", ".join("?" * len(old_ids))
    series = rec.series_id.hex
    list_id, local_time, zone_name, emitted = conn.execute(
        "SELECT list_id, local_time, zone, emitted FROM task_series WHERE id = ?", (series,)
    ).fetchone()
    (previous_text,) = conn.execute(
        "SELECT occurrence_date FROM series_occurrences"
        " WHERE series_id = ? AND status = 'outstanding'",
        (series,),
    ).fetchone()
    previous = date.fromisoformat(previous_text)
    zone = ZoneInfo(zone_name)
    day = max(previous + timedelta(days=1), datetime.now(zone).date())
    offset = day - previous
    root_local = datetime.combine(day, time_of_day.fromisoformat(local_time))
    root_at = root_local.replace(tzinfo=zone).astimezone(UTC)

    columns = (
        "id, section_id, parent_id, position, title, description, priority, planned_date,"
        " due_date, due_local, due_zone, due_at"
    )
    rows = {
        r[0]: r for r in conn.execute(f"SELECT {columns} FROM tasks WHERE id IN ({marks})", old_ids)
    }
    tags = conn.execute(
        f"SELECT task_id, tag_id FROM task_tags WHERE task_id IN ({marks})", old_ids
    ).fetchall()
    reminders = conn.execute(
        "SELECT task_id, position, channel, local, zone, at, recipient_id FROM task_reminders"
        f" WHERE task_id IN ({marks})",
        old_ids,
    ).fetchall()
    shift = root_at - _parse_instant(rows[old_ids[0]][11])

    def moved(local_zone: str, at: str) -> tuple[str, str]:
        new_at = _parse_instant(at) + shift
        return format_local(new_at.astimezone(ZoneInfo(local_zone))), _instant(new_at)

    def later(value: str | None) -> str | None:
        return (date.fromisoformat(value) + offset).isoformat() if value else None

    # The same time-ordered IDs as kalends gives new rows (kalends.storage.ids).
    fresh = dict(zip(old_ids, ids_at(datetime.now(UTC), len(old_ids)), strict=True))
    intent_ids = iter(ids_at(datetime.now(UTC), len(reminders)))
    refs: list[str] = []
    while len(refs) < len(old_ids):
        ref = "".join(random.choices(REF_ALPHABET, k=6))
        if ref not in taken_refs:
            taken_refs.add(ref)
            refs.append(ref)
    with_reminders = {r[0] for r in reminders}
    ordinal = emitted + 1
    task_rows: list[tuple[Any, ...]] = []
    for old, ref in zip(old_ids, refs, strict=True):
        _, section, parent, position, title, text, priority, planned, due_date = rows[old][:9]
        due_local, due_zone, due_at = rows[old][9:]
        if old == old_ids[0]:
            due_local, due_zone, due_at = format_local(root_local), zone_name, _instant(root_at)
        elif due_local is not None:
            due_local, due_at = moved(due_zone, due_at)
        task_rows.append(
            (
                fresh[old].hex,
                ref,
                list_id,
                section,
                fresh[parent].hex if old != old_ids[0] else None,
                position,
                title,
                text,
                1 if old in with_reminders else 0,
                priority,
                later(planned),
                later(due_date),
                due_local,
                due_zone,
                due_at,
                series,
                ordinal,
                actor.hex,
            )
        )
    reminder_rows: list[tuple[Any, ...]] = []
    intent_rows: list[tuple[Any, ...]] = []
    for task_id, position, channel, _local, r_zone, at, who in reminders:
        local, new_at = moved(r_zone, at)
        new_id = fresh[task_id].hex
        reminder_rows.append((new_id, position, channel, local, r_zone, new_at, who))
        intent_rows.append((next(intent_ids).hex, new_id, channel, new_at, who, new_at))
    new_root = str(fresh[old_ids[0]])
    history_rows: list[tuple[Any, ...]] = [
        (
            fresh[old].hex,
            actor.hex,
            json.dumps(
                {
                    "occurrence_root": new_root,
                    "copied_from": str(uuid.UUID(hex=old)),
                }
            ),
            series,
            ordinal,
        )
        for old in old_ids
    ]
    return SuccessorPlan(
        series=series,
        ordinal=ordinal,
        day=day.isoformat(),
        old_ids=old_ids,
        cascade=json.dumps({"cascade_from": str(rec.tree.root.id)}),
        task_rows=task_rows,
        tag_rows=[(fresh[t].hex, g) for t, g in tags],
        reminder_rows=reminder_rows,
        intent_rows=intent_rows,
        history_rows=history_rows,
    )


# --------------------------------------------------------------------------- timing


@dataclass
class Series:
    samples_ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    def deciles(self) -> tuple[float, float]:
        if len(self.samples_ms) < 2:
            return self.median, self.median
        q = statistics.quantiles(self.samples_ms, n=10, method="inclusive")
        return q[0], q[-1]

    def to_json(self) -> dict[str, Any]:
        p10, p90 = self.deciles()
        return {
            "samples": len(self.samples_ms),
            "median_ms": self.median,
            "p10_ms": p10,
            "p90_ms": p90,
            "min_ms": min(self.samples_ms),
            "max_ms": max(self.samples_ms),
            "samples_ms": [round(s, 4) for s in self.samples_ms],
        }


def _ms(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter_ns()
    out = fn()
    return (time.perf_counter_ns() - t0) / 1e6, out


@contextmanager
def _gc_paused() -> Iterator[None]:
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class Result:
    key: str
    operation: str
    kalends: Series
    bare: Series | None
    statements: int
    bare_statements: int | None

    @property
    def target(self) -> Target:
        return TARGETS[self.key]

    @property
    def ratio(self) -> float | None:
        if self.bare is None or not self.bare.median:
            return None
        return self.kalends.median / self.bare.median

    def misses(self) -> list[str]:
        out: list[str] = []
        if not self.kalends.median < self.target.median_ms:
            out.append("time")
        if self.target.ratio is not None and (self.ratio is None or self.ratio > self.target.ratio):
            out.append("ratio")
        return out


def bench_schedule(fx: Fixture, bare: Bare, schedule: Schedule) -> Result:
    svc = fx.services.tasks
    actor = fx.actor

    def both(task: Task, counter: StatementCounter | None = None) -> tuple[float, float]:
        if counter is None:
            k_ms, out = _ms(lambda: svc.set_schedule(actor, task.id, task.revision, schedule))
        else:
            with counter:
                k_ms, out = _ms(lambda: svc.set_schedule(actor, task.id, task.revision, schedule))
        if not isinstance(out, Task) or out.revision != task.revision + 1:
            raise RuntimeError(f"set_schedule returned {out!r}")
        b_ms, _ = _ms(lambda: bare.set_schedule(task.id, task.revision, task.schedule_revision + 1))
        return k_ms, b_ms

    counter = StatementCounter(fx.services.store.engine)
    for n, task in enumerate(fx.warmup_tasks, 1):
        both(task, counter if n == len(fx.warmup_tasks) else None)
    k, b = Series(), Series()
    with _gc_paused():
        for task in fx.schedule_tasks:
            k_ms, b_ms = both(task)
            k.samples_ms.append(k_ms)
            b.samples_ms.append(b_ms)
    return Result(
        "a", "set_schedule, 2 reminders", k, b, counter.statements, BARE_SCHEDULE_STATEMENTS
    )


def bench_complete(fx: Fixture, bare: Bare) -> Result:
    svc = fx.services.tasks
    actor = fx.actor

    def both(tree: Tree, counter: StatementCounter | None = None) -> tuple[float, float]:
        root = tree.root

        def call() -> Task:
            return svc.complete(actor, root.id, root.revision, complete_subtree=True)

        if counter is None:
            k_ms, out = _ms(call)
        else:
            with counter:
                k_ms, out = _ms(call)
        if not isinstance(out, Task) or out.status.value != "completed":
            raise RuntimeError(f"complete returned {out!r}")
        b_ms, _ = _ms(lambda: bare.complete_subtree(root.id, [t.id for t in tree.tasks]))
        return k_ms, b_ms

    counter = StatementCounter(fx.services.store.engine)
    for n, tree in enumerate(fx.warmup_trees, 1):
        both(tree, counter if n == len(fx.warmup_trees) else None)
    k, b = Series(), Series()
    with _gc_paused():
        for tree in fx.complete_trees:
            k_ms, b_ms = both(tree)
            k.samples_ms.append(k_ms)
            b.samples_ms.append(b_ms)
    size = tree_size(FULL_SHAPE)
    return Result(
        "b",
        f"complete_subtree=True, {size} rows",
        k,
        b,
        counter.statements,
        BARE_COMPLETE_STATEMENTS,
    )


def bench_recurring(fx: Fixture, bare: Bare, plans: dict[uuid.UUID, SuccessorPlan]) -> Result:
    svc = fx.services.tasks
    actor = fx.actor

    def both(rec: Recurring, counter: StatementCounter | None = None) -> tuple[float, float]:
        root_id = rec.tree.root.id

        def call() -> Task:
            return svc.complete(actor, root_id, rec.root_revision, complete_subtree=True)

        if counter is None:
            k_ms, out = _ms(call)
        else:
            with counter:
                k_ms, out = _ms(call)
        if not isinstance(out, Task) or out.status.value != "completed":
            raise RuntimeError(f"complete returned {out!r}")
        plan = plans[rec.series_id]
        b_ms, _ = _ms(lambda: bare.complete_recurring(plan))
        return k_ms, b_ms

    counter = StatementCounter(fx.services.store.engine)
    for n, rec in enumerate(fx.warmup_recurring, 1):
        both(rec, counter if n == len(fx.warmup_recurring) else None)
    k, b = Series(), Series()
    with _gc_paused():
        for rec in fx.recurring:
            k_ms, b_ms = both(rec)
            k.samples_ms.append(k_ms)
            b.samples_ms.append(b_ms)
    return Result(
        "d",
        f"recurring: complete + successor, {RECURRING_TASKS} tasks",
        k,
        b,
        counter.statements,
        BARE_RECURRING_STATEMENTS,
    )


def bench_read(fx: Fixture, samples: int) -> Result:
    svc = fx.services.tasks
    actor = fx.actor
    tree = fx.read_tree
    assert tree is not None
    root_id = tree.root.id
    counter = StatementCounter(fx.services.store.engine)
    for n in range(1, WARMUP_READS + 1):
        if n == WARMUP_READS:
            with counter:
                out = svc.checklist(actor, root_id)
        else:
            out = svc.checklist(actor, root_id)
    if not isinstance(out, TreeNode) or len(out.walk()) != len(tree.tasks):
        raise RuntimeError("checklist did not return the whole checklist")
    if _depth(out) != len(tree.shape):
        raise RuntimeError(f"checklist depth {_depth(out)}, expected {len(tree.shape)}")
    k = Series()
    with _gc_paused():
        for _ in range(samples):
            k_ms, _out = _ms(lambda: svc.checklist(actor, root_id))
            k.samples_ms.append(k_ms)
    size = tree_size(FULL_SHAPE)
    return Result("c", f"checklist as a tree, {size} tasks", k, None, counter.statements, None)


def _depth(node: TreeNode) -> int:
    return 1 + max((_depth(c) for c in node.children), default=-1)


# --------------------------------------------------------------------------- same rows?


def _rows(
    conn: sqlite3.Connection,
    sql: str,
    skip: set[str],
    ids: Sequence[str],
    rename: dict[str, str] | None = None,
) -> list[Any]:
    """The rows, minus the ``skip`` columns, with every text value in ``rename`` renamed."""
    out: list[tuple[Any, ...]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        cur = conn.execute(sql.format(marks=marks), chunk)
        names = [d[0] for d in cur.description]
        for row in cur:
            values = [
                _renamed(json.loads(v) if name == "payload" else v, rename or {})
                for name, v in zip(names, row, strict=True)
                if name not in skip
            ]
            out.append(tuple(json.dumps(v, sort_keys=True) for v in values))
    return sorted(out)


def _renamed(value: Any, rename: dict[str, str]) -> Any:
    if isinstance(value, str):
        return rename.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, rename) for k, v in value.items()}
    return value


def snapshot(path: Path, ids: Sequence[str]) -> dict[str, list[Any]]:
    """What the benchmarked writes leave on these tasks, minus generated IDs and timestamps."""
    stamps = {"updated_at", "created_at", "completed_at", "at"}
    with _sqlite(path) as conn:
        return {
            "tasks": _rows(
                conn, "SELECT * FROM tasks WHERE id IN ({marks})", stamps - {"created_at"}, ids
            ),
            "completed_at set": _rows(
                conn,
                "SELECT id, completed_at IS NOT NULL AS done FROM tasks WHERE id IN ({marks})",
                set(),
                ids,
            ),
            "task_reminders": _rows(
                conn, "SELECT * FROM task_reminders WHERE task_id IN ({marks})", set(), ids
            ),
            "reminder_intents": _rows(
                conn,
                "SELECT * FROM reminder_intents WHERE task_id IN ({marks})",
                {"id", "created_at", "updated_at"},
                ids,
            ),
            "task_history": _rows(
                conn,
                "SELECT * FROM task_history WHERE task_id IN ({marks}) AND kind != 'created'",
                {"id", "at"},
                ids,
            ),
        }


def successor_snapshot(path: Path, series: Sequence[str]) -> dict[str, list[Any]]:
    """The successors' rows, each new task ID renamed after the task it was copied from."""
    new = "SELECT id FROM tasks WHERE series_id IN ({marks}) AND occurrence > 1"
    with _sqlite(path) as conn:
        rename: dict[str, str] = {}
        marks = ", ".join("?" * len(series))
        for task_id, payload in conn.execute(
            "SELECT task_id, payload FROM task_history WHERE kind = 'created'"
            f" AND occurrence > 1 AND series_id IN ({marks})",
            series,
        ):
            fresh, source = uuid.UUID(hex=task_id), uuid.UUID(json.loads(payload)["copied_from"])
            rename[fresh.hex] = f"copy of {source.hex}"
            rename[str(fresh)] = f"copy of {source}"

        def rows(sql: str, skip: set[str]) -> list[Any]:
            return _rows(conn, sql.replace("{new}", new), skip, series, rename)

        return {
            "successor tasks": rows(
                "SELECT * FROM tasks WHERE id IN ({new})", {"ref", "created_at", "updated_at"}
            ),
            "successor task_tags": rows("SELECT * FROM task_tags WHERE task_id IN ({new})", set()),
            "successor task_reminders": rows(
                "SELECT * FROM task_reminders WHERE task_id IN ({new})", set()
            ),
            "successor reminder_intents": rows(
                "SELECT * FROM reminder_intents WHERE task_id IN ({new})",
                {"id", "created_at", "updated_at"},
            ),
            "successor task_history": rows(
                "SELECT * FROM task_history WHERE task_id IN ({new})", {"id", "at"}
            ),
            "series_occurrences": rows(
                "SELECT *, settled_at IS NOT NULL AS settled FROM series_occurrences"
                " WHERE series_id IN ({marks})",
                {"settled_at"},
            ),
            "task_series": rows(
                "SELECT * FROM task_series WHERE id IN ({marks})", {"created_at", "updated_at"}
            ),
        }


def compare_rows(fx: Fixture) -> list[str]:
    touched = [t.id.hex for t in [*fx.warmup_tasks, *fx.schedule_tasks]]
    touched += [t.id.hex for tree in [*fx.warmup_trees, *fx.complete_trees] for t in tree.tasks]
    recurring = [*fx.warmup_recurring, *fx.recurring]
    touched += [t.id.hex for rec in recurring for t in rec.tree.tasks]
    mine, theirs = snapshot(fx.path, touched), snapshot(fx.copy_path, touched)
    series = [rec.series_id.hex for rec in recurring]
    mine |= successor_snapshot(fx.path, series)
    theirs |= successor_snapshot(fx.copy_path, series)
    return [
        f"{table}: kalends {len(mine[table])} rows, bare {len(theirs[table])} rows, not equal"
        for table in mine
        if mine[table] != theirs[table]
    ]


# --------------------------------------------------------------------------- output


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("kalends", "SQLAlchemy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "?"
    out["platform"] = platform.platform()
    return out


def _f(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def print_table(results: Sequence[Result], fx: Fixture, diffs: list[str], elapsed: float) -> None:
    v = _versions()
    print(
        f"kalends {v['kalends']}, SQLAlchemy {v['SQLAlchemy']}, SQLite {v['sqlite']}, "
        f"Python {v['python']}, {v['platform']}"
    )
    print(
        f"List of {sum(len(t.tasks) for t in fx.trees):,} tasks in {len(fx.trees)} top-level "
        f"tasks, checklists nested up to depth {len(FULL_SHAPE)}; built through "
        f"TaskService.create in {fx.build_s:.1f} s. Temporary SQLite file, WAL."
    )
    print(
        f"(d): a second list of {len(fx.recurring)} recurring checklists of {RECURRING_TASKS}"
        f" tasks (+ {len(fx.warmup_recurring)} of {tree_size(SMALL_SHAPE)} for warm-up), with"
        f" tags, timed dues and reminders, each the first occurrence of a series daily at"
        f" {SERIES_TIME} {SERIES_ZONE} from {fx.series_day}; built in"
        f" {fx.recurring_build_s:.1f} s."
    )
    header = (
        "operation",
        "samples",
        "median ms",
        "p10-p90 ms",
        "min-max ms",
        "target (median)",
        "verdict",
        "bare median ms",
        "ratio",
        "SQL stmts",
    )
    body: list[tuple[str, ...]] = []
    for r in results:
        p10, p90 = r.kalends.deciles()
        misses = r.misses()
        ratio = r.ratio
        body.append(
            (
                f"({r.key}) {r.operation}",
                str(len(r.kalends.samples_ms)),
                _f(r.kalends.median),
                f"{_f(p10)}-{_f(p90)}",
                f"{_f(min(r.kalends.samples_ms))}-{_f(max(r.kalends.samples_ms))}",
                r.target.text(),
                "ok" if not misses else "MISS (" + ", ".join(misses) + ")",
                _f(r.bare.median) if r.bare else "-",
                f"{ratio:.1f}x" if ratio is not None else "-",
                f"{r.statements}/{r.bare_statements}"
                if r.bare_statements is not None
                else str(r.statements),
            )
        )
    print()
    print("\n".join(grid(header, body, {1, 2, 3, 4, 7, 8, 9})))
    print(
        "bare: the same rows written with the stdlib sqlite3 module, one transaction per sample;"
        " ratio: kalends median / bare median; SQL stmts: kalends/bare per call"
        " (BEGIN and PRAGMA included, COMMIT not)"
    )
    print()
    for r in results:
        if r.bare is None:
            continue
        p10, p90 = r.bare.deciles()
        print(
            f"bare sqlite3 ({r.key}): median {_f(r.bare.median)} ms, p10-p90 {_f(p10)}-{_f(p90)},"
            f" min-max {_f(min(r.bare.samples_ms))}-{_f(max(r.bare.samples_ms))}"
        )
    print(
        "rows written by kalends and by bare sqlite3: "
        + ("identical (IDs, references and timestamps aside)" if not diffs else "DIFFERENT")
    )
    for d in diffs:
        print(f"  {d}")
    print(f"total wall time {elapsed:.1f}s")


def to_json(
    results: Sequence[Result], fx: Fixture, sizes: Sizes, diffs: list[str], elapsed: float
) -> str:
    doc: dict[str, Any] = {
        "versions": _versions(),
        "list": {
            "tasks": sum(len(t.tasks) for t in fx.trees),
            "top_level_tasks": len(fx.trees),
            "full_checklist_shape": list(FULL_SHAPE),
            "small_checklist_shape": list(SMALL_SHAPE),
            "build": "TaskService.create, one call per task",
            "build_s": round(fx.build_s, 3),
        },
        "recurring": {
            "checklists": len(fx.recurring),
            "warmup_checklists": len(fx.warmup_recurring),
            "tasks_each": RECURRING_TASKS,
            "shape": list(FULL_SHAPE),
            "rule": SERIES_RULE,
            "time": SERIES_TIME,
            "zone": SERIES_ZONE,
            "first_date": fx.series_day.isoformat() if fx.series_day else None,
            "build_s": round(fx.recurring_build_s, 3),
        },
        "sizes": {
            "tasks": sizes.tasks,
            "subtrees": sizes.subtrees,
            "samples": sizes.samples,
            "series": sizes.series,
        },
        "elapsed_s": round(elapsed, 3),
        "rows_identical": not diffs,
        "row_differences": diffs,
        "operations": [
            {
                "key": r.key,
                "operation": r.operation,
                "target_median_ms": r.target.median_ms,
                "target_ratio": r.target.ratio,
                "meets_target": not r.misses(),
                "misses": r.misses(),
                "kalends": r.kalends.to_json(),
                "bare_sqlite3": r.bare.to_json() if r.bare else None,
                "ratio": r.ratio,
                "statements": r.statements,
                "bare_statements": r.bare_statements,
            }
            for r in results
        ],
    }
    return json.dumps(doc, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smaller run: {QUICK.tasks:,} tasks, {QUICK.subtrees} subtrees, "
        f"{QUICK.samples} samples, {QUICK.series} series",
    )
    parser.add_argument(
        "--tasks", type=positive, help=f"tasks in the list (default {DEFAULT.tasks:,})"
    )
    parser.add_argument(
        "--subtrees",
        type=positive,
        help=f"500-item checklists completed in (b) (default {DEFAULT.subtrees})",
    )
    parser.add_argument(
        "--samples",
        type=positive,
        help=f"timed calls of (a) and of (c) (default {DEFAULT.samples})",
    )
    parser.add_argument(
        "--series",
        type=positive,
        help=f"recurring 500-task checklists completed in (d) (default {DEFAULT.series})",
    )
    args = parser.parse_args(argv)
    base = QUICK if args.quick else DEFAULT
    sizes = Sizes(
        tasks=args.tasks or base.tasks,
        subtrees=args.subtrees or base.subtrees,
        samples=args.samples or base.samples,
        series=args.series or base.series,
    )

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kalends-bench-") as tmp:
        fx = build_fixture(Path(tmp), sizes)
        schedule = parse_schedule(SCHEDULE_JSON, lambda _value, _field: fx.actor)
        try:
            with _sqlite(fx.copy_path) as conn:
                bare = Bare(conn, fx.actor, schedule)
                taken = {ref for (ref,) in conn.execute("SELECT ref FROM tasks")}
                plans = {
                    rec.series_id: plan_successor(conn, fx.actor, rec, taken)
                    for rec in [*fx.warmup_recurring, *fx.recurring]
                }
                log("timing (a) set_schedule ...")
                a = bench_schedule(fx, bare, schedule)
                log("timing (b) complete_subtree ...")
                b = bench_complete(fx, bare)
                log("timing (d) recurring completion + successor ...")
                d = bench_recurring(fx, bare, plans)
            log("timing (c) checklist ...")
            c = bench_read(fx, sizes.samples)
            diffs = compare_rows(fx)
        finally:
            fx.services.store.close()
    results = [a, b, c, d]
    elapsed = time.perf_counter() - t0
    if args.json:
        print(to_json(results, fx, sizes, diffs, elapsed))
    else:
        print_table(results, fx, diffs, elapsed)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
