"""Missions benchmark: Play, Pause, a detail read and a workspace's paged listing.

A temporary SQLite file (URL ``sqlite:///...``: WAL, ``synchronous=NORMAL``, kalends'
default, as ``bench/tasks.py`` uses) is migrated by ``open_store`` on a ``FakeClock``
that starts at 2026-03-02T09:00:00Z and moves forward one second before every write
(creation and control; reads leave it alone), so every run does the same thing. One
actor registers ``--workspaces`` (default 64) workspaces (temporary directories,
``Workspaces.add``) and creates ``--schedules`` (default 64, the most a workspace may
hold) paused schedules in each through ``ScheduleService.create``, one call each. Their
configurations cycle through eleven policies (daily, daily every 2 days in a DST gap hour,
weekdays, weekend days, three times a day, every 15 minutes, every 6 hours, two cron
expressions, a calendar of a daily rule and an hourly cron, a monthly 31st), in ten
zones; every 3rd has an absolute end (``until``), every 5th an elapsed end
(``within``), every 7th a passage quota (``maxPassages``), every 4th a checklist
template of 3 items with 2 children each, every 6th a ``files`` condition.

Then, on ``--samples`` schedules drawn (seeded) across all workspaces, each used once
per operation, in this order:

Play      ``play(actor, schedule, request_id=<fresh>, expected_revision=1)`` on each
          (paused, never played): revision 1 -> 2, state running;
detail    ``detail(actor, schedule)`` on each (now running: ``nextDueAt`` computed);
listing   the full paged listing of the first workspace, ``--listings`` times: 8 calls of
          ``page(actor, workspace, after=next_after, limit=8)`` until ``next_after`` is
          None, 64 documents (those of its schedules drawn above are running);
Pause     ``pause(actor, schedule, request_id=<fresh>, expected_revision=2)`` on each:
          revision 2 -> 3, state paused.

Before them, untimed warm-up calls of each operation on other schedules; the statements
sent (BEGIN and PRAGMA included, COMMIT not) per operation are counted on the last
warm-up call (for the listing: all 8 pages). Each call is timed with
``time.perf_counter_ns``, the garbage collector paused during a series (as ``timeit``
does). Every outcome is checked (revision, state, repeated, the document's ID, the
listing's 64 documents in mission-ID order, exactly 8 pages), and afterwards every
drawn schedule is read back at revision 3, paused.

Targets (SQLite, on the median): Play and Pause (a control) < 3 ms, detail < 2 ms. The
listing has none. The exit status is 1 when a target is missed or a check fails.

When a PostgreSQL server answers at ``--postgres`` (default
``postgresql://postgres@127.0.0.1:5432/test``), the same operations run there too in a
private schema (``create_engine_for(url, schema=...)``, dropped afterwards) on
``--pg-workspaces`` (default 4) workspaces of the same schedules, with at most
``--pg-samples`` samples each: printed, no target.

``--profile DIR``: afterwards, Play, detail and Pause on 200 more SQLite schedules and
20 full listings under ``cProfile``; writes ``play.prof``, ``detail.prof``,
``pause.prof`` and ``listing.prof`` into DIR and prints each one's top entries (own and
cumulative time) to stderr. The timed series are not profiled.

Run from the repository root: ``python bench/missions.py [--json] [--quick]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import pstats
import random
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench.common import StatementCounter, grid, log, positive  # noqa: E402
from kalends.bootstrap import Services, build  # noqa: E402
from kalends.clock import FakeClock  # noqa: E402
from kalends.config import mask_password, normalize_database_url  # noqa: E402
from kalends.missions.limits import MAX_PAGE, MAX_SCHEDULES  # noqa: E402
from kalends.storage.engine import create_engine_for  # noqa: E402
from kalends.storage.migrate import open_store  # noqa: E402

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday
STEP_S = 1.0  # the fake clock's step before every write
SEED = 2026
WARMUP = 10  # warm-up schedules (Play, detail, Pause) per backend
WARMUP_LISTINGS = 3
PROFILE_SAMPLES = 200
PROFILE_TOP = 12
PROFILE_LISTINGS = 20
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"

OPERATIONS = ("play", "detail", "listing", "pause")
LABELS = {
    "play": "Play (paused -> running)",
    "detail": "detail read (running)",
    "listing": "full listing, 8 pages of 8",
    "pause": "Pause (running -> paused)",
}
TARGETS_MS = {"play": 3.0, "pause": 3.0, "detail": 2.0}


@dataclass(frozen=True)
class Sizes:
    workspaces: int
    schedules: int
    samples: int
    listings: int


DEFAULT = Sizes(workspaces=64, schedules=64, samples=1000, listings=100)
QUICK = Sizes(workspaces=8, schedules=64, samples=200, listings=30)


# --------------------------------------------------------------------------- fixture

_POLICIES: tuple[dict[str, Any], ...] = (
    {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
    {"kind": "daily", "time": "02:30", "zone": "America/New_York", "interval_days": 2},
    {"kind": "weekdays", "days": [1, 2, 3, 4, 5], "time": "08:15", "zone": "Asia/Tokyo"},
    {"kind": "weekdays", "days": [6, 7], "time": "10:00", "zone": "UTC"},
    {"kind": "times", "times": ["06:00", "12:00", "18:00"], "zone": "Europe/London"},
    {"kind": "every", "minutes": 15},
    {"kind": "every", "hours": 6},
    {"kind": "cron", "expression": "0 */2 * * *", "zone": "America/Los_Angeles"},
    {"kind": "cron", "expression": "30 9 * * 1-5", "zone": "Europe/Paris"},
    {
        "kind": "calendars",
        "calendars": [
            {"kind": "daily", "time": "01:30", "zone": "America/New_York"},
            {"kind": "cron", "expression": "0 * * * *", "zone": "America/New_York"},
        ],
    },
    {"kind": "monthly", "day": 31, "time": "23:00", "zone": "Australia/Sydney"},
)
_UNTIL_ZONES = ("Europe/Berlin", "America/Sao_Paulo", "Asia/Kolkata")


def schedule_config(w: int, s: int) -> dict[str, Any]:
    """The configuration of schedule ``s`` of workspace ``w`` (both 0-based)."""
    n = w * MAX_SCHEDULES + s
    policy = _POLICIES[n % len(_POLICIES)]
    config: dict[str, Any] = {
        "title": f"Mission {w:02d}-{s:02d} ({policy['kind']})",
        "objective": f"Run the {policy['kind']} job of workspace {w} and report what changed.",
        "notes": "Benchmark fixture." if n % 2 else "",
        "profile": {
            "command": ["make", f"job-{s}"],
            "env": {"CI": "1", "API_TOKEN": f"token-{n}"},
            "cwd": "." if n % 3 else "src",
        },
        "policy": policy,
        "restart": "interrupt" if n % 8 == 0 else "resume",
    }
    end: dict[str, Any] = {}
    if n % 3 == 0:
        zone = _UNTIL_ZONES[n % len(_UNTIL_ZONES)]
        end["until"] = {"local": f"{2027 + n % 3}-06-30T23:59:00", "zone": zone}
    if n % 5 == 0:
        end["within"] = {"days": 90 + n % 30}
    if n % 7 == 0:
        end["maxPassages"] = 10 + n % 50
    if end:
        config["end"] = end
    if n % 4 == 0:
        config["template"] = [
            {"title": f"Step {i}", "children": [{"title": "Check"}, {"title": "Log"}]}
            for i in range(1, 4)
        ]
    if n % 6 == 0:
        config["condition"] = {"kind": "files", "paths": ["src", "docs"]}
    return config


@dataclass
class Fixture:
    services: Services
    clock: FakeClock
    actor: uuid.UUID
    workspaces: list[uuid.UUID]
    schedules: list[list[uuid.UUID]]
    """Per workspace, its schedules in creation order."""
    build_s: float

    def flat(self) -> list[uuid.UUID]:
        return [s for ws in self.schedules for s in ws]


def build_fixture(
    services: Services, clock: FakeClock, directory: Path, workspaces: int, per: int, label: str
) -> Fixture:
    actor = services.directory.add_actor("bench", "Bench", "bench@example.com").id
    services.grants.grant(actor, "run")  # creating schedules needs the run privilege
    total = workspaces * per
    log(f"{label}: creating {workspaces} workspaces x {per} schedules through create ...")
    t0 = time.perf_counter()
    ws_ids: list[uuid.UUID] = []
    found: list[list[uuid.UUID]] = []
    step = max(1, workspaces // 8)
    for w in range(workspaces):
        path = directory / f"workspace-{w:02d}"
        path.mkdir()
        clock.advance(STEP_S)
        ws = services.workspaces.add(actor, path, f"workspace-{w:02d}").id
        ids: list[uuid.UUID] = []
        for s in range(per):
            clock.advance(STEP_S)
            receipt = services.schedules.create(
                actor, ws, schedule_config(w, s), request_id=f"create-{w:02d}-{s:02d}"
            )
            if receipt.status != "created" or receipt.mission_id is None or receipt.repeated:
                raise RuntimeError(f"create returned {receipt!r}")
            ids.append(receipt.mission_id)
        ws_ids.append(ws)
        found.append(ids)
        if (w + 1) % step == 0 or w + 1 == workspaces:
            done = (w + 1) * per
            log(f"  {done:,} of {total:,} schedules ({time.perf_counter() - t0:.1f} s)")
    build_s = time.perf_counter() - t0
    log(f"  built in {build_s:.1f} s ({build_s / total * 1e3:.2f} ms per create)")
    return Fixture(services, clock, actor, ws_ids, found, build_s)


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
            "median_ms": round(self.median, 4),
            "p10_ms": round(p10, 4),
            "p90_ms": round(p90, 4),
            "min_ms": round(min(self.samples_ms), 4),
            "max_ms": round(max(self.samples_ms), 4),
            "samples_ms": [round(s, 4) for s in self.samples_ms],
        }


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
    backend: str
    key: str
    series: Series
    statements: int
    commits: int

    @property
    def target_ms(self) -> float | None:
        return TARGETS_MS.get(self.key) if self.backend == "sqlite" else None

    @property
    def met(self) -> bool | None:
        target = self.target_ms
        return None if target is None else self.series.median < target


@dataclass
class Run:
    backend: str
    fixture: Fixture
    results: list[Result] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    listed_running: int = 0


class Bench:
    """The four operations on one fixture, each call checked."""

    def __init__(self, fx: Fixture, backend: str) -> None:
        self.fx = fx
        self.svc = fx.services.schedules
        self.backend = backend
        self.problems: list[str] = []
        self._requests = 0

    def _request(self, action: str) -> str:
        self._requests += 1
        return f"bench-{action}-{self._requests:06d}"

    def _check(self, ok: bool, what: str) -> None:
        if not ok and len(self.problems) < 20:
            self.problems.append(f"{self.backend}: {what}")

    def play(self, schedule: uuid.UUID) -> None:
        self.fx.clock.advance(STEP_S)
        out = self.svc.play(
            self.fx.actor, schedule, request_id=self._request("play"), expected_revision=1
        )
        self._check(
            out.revision == 2 and not out.repeated and out.schedule["state"] == "running",
            f"play {schedule}: revision {out.revision}, state {out.schedule['state']}",
        )

    def pause(self, schedule: uuid.UUID) -> None:
        self.fx.clock.advance(STEP_S)
        out = self.svc.pause(
            self.fx.actor, schedule, request_id=self._request("pause"), expected_revision=2
        )
        self._check(
            out.revision == 3 and not out.repeated and out.schedule["state"] == "paused",
            f"pause {schedule}: revision {out.revision}, state {out.schedule['state']}",
        )

    def detail(self, schedule: uuid.UUID) -> None:
        out = self.svc.detail(self.fx.actor, schedule)
        self._check(
            out["id"] == str(schedule) and out["revision"] == 2 and out["state"] == "running",
            f"detail {schedule}: {out.get('id')} revision {out.get('revision')}",
        )

    def listing(self, workspace: int) -> int:
        """The whole listing of a workspace; returns how many of its documents run."""
        ws = self.fx.workspaces[workspace]
        items: list[dict[str, Any]] = []
        after: str | None = None
        pages = 0
        while True:
            page = self.svc.page(self.fx.actor, ws, after=after, limit=MAX_PAGE)
            pages += 1
            items += page.items
            if page.next_after is None or pages > MAX_SCHEDULES:
                break
            after = page.next_after
        ids = [i["id"] for i in items]
        wanted = sorted(str(s) for s in self.fx.schedules[workspace])
        expected_pages = -(-len(wanted) // MAX_PAGE)
        self._check(
            ids == sorted(ids, key=uuid.UUID) and sorted(ids) == wanted and pages == expected_pages,
            f"listing of workspace {workspace}: {len(ids)} documents in {pages} pages",
        )
        return sum(1 for i in items if i["state"] == "running")


def _series(calls: Sequence[Callable[[], object]]) -> Series:
    out = Series()
    with _gc_paused():
        for call in calls:
            t0 = time.perf_counter_ns()
            call()
            out.samples_ms.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def _warm(
    bench: Bench, calls: Sequence[Callable[[], object]]
) -> tuple[int, int]:  # statements, commits of the last call
    counter = StatementCounter(bench.fx.services.store.engine)
    for call in calls[:-1]:
        call()
    with counter:
        calls[-1]()
    return counter.statements, counter.commits


def measure(fx: Fixture, backend: str, samples: int, listings: int) -> Run:
    """Warm-up, then Play, detail, listing and Pause series; then every sample read back."""
    bench = Bench(fx, backend)
    flat = fx.flat()
    wanted = WARMUP + samples
    if len(flat) < wanted:
        raise SystemExit(f"{backend}: {len(flat)} schedules, {wanted} needed for --samples")
    drawn = [flat[i] for i in random.Random(SEED).sample(range(len(flat)), wanted)]
    warm, timed = drawn[:WARMUP], drawn[WARMUP:]
    run = Run(backend, fx)
    counts: dict[str, tuple[int, int]] = {}

    def calls(
        fn: Callable[[uuid.UUID], None], ids: Sequence[uuid.UUID]
    ) -> list[Callable[[], None]]:
        return [partial(fn, s) for s in ids]

    def list_first() -> None:
        run.listed_running = bench.listing(0)

    log(f"{backend}: warm-up on {WARMUP} other schedules ...")
    counts["play"] = _warm(bench, calls(bench.play, warm))
    counts["detail"] = _warm(bench, calls(bench.detail, warm))
    counts["listing"] = _warm(bench, [list_first] * WARMUP_LISTINGS)
    counts["pause"] = _warm(bench, calls(bench.pause, warm))

    series: dict[str, Series] = {}
    log(f"{backend}: Play on {samples} schedules ...")
    series["play"] = _series(calls(bench.play, timed))
    log(f"{backend}: detail on {samples} schedules ...")
    series["detail"] = _series(calls(bench.detail, timed))
    log(f"{backend}: {listings} full listings of one workspace ...")
    series["listing"] = _series([list_first] * listings)
    log(f"{backend}: Pause on {samples} schedules ...")
    series["pause"] = _series(calls(bench.pause, timed))

    for schedule in drawn:
        doc = bench.svc.detail(fx.actor, schedule)
        if doc["revision"] != 3 or doc["state"] != "paused":
            bench._check(False, f"{schedule} ends at revision {doc['revision']}, {doc['state']}")
    run.results = [Result(backend, k, series[k], *counts[k]) for k in OPERATIONS]
    run.problems = bench.problems
    for r in run.results:
        log(f"  {LABELS[r.key]}: median {r.series.median:.3f} ms")
    return run


def profile(fx: Fixture, skip: int, directory: Path) -> dict[str, str]:
    """Play, detail and Pause under cProfile on schedules the timed runs did not use, then
    listings of the first workspace."""
    flat = fx.flat()
    drawn = {flat[i] for i in random.Random(SEED).sample(range(len(flat)), skip)}
    rest = [s for s in flat if s not in drawn][:PROFILE_SAMPLES]
    if not rest:
        raise SystemExit("--profile: no schedule left for profiling")
    bench = Bench(fx, "sqlite (profiled)")
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    for key, fn in (("play", bench.play), ("detail", bench.detail), ("pause", bench.pause)):
        prof = cProfile.Profile()
        prof.enable()
        for s in rest:
            fn(s)
        prof.disable()
        out[key] = _dump(prof, directory / f"{key}.prof", f"{key} x {len(rest)}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(PROFILE_LISTINGS):
        bench.listing(0)
    prof.disable()
    out["listing"] = _dump(prof, directory / "listing.prof", f"listing x {PROFILE_LISTINGS}")
    if bench.problems:
        raise RuntimeError("; ".join(bench.problems))
    return out


def _dump(prof: cProfile.Profile, path: Path, what: str) -> str:
    """Writes the profile to ``path``; logs and returns its top entries."""
    prof.dump_stats(path)
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    stats.sort_stats("tottime").print_stats(PROFILE_TOP)
    stats.sort_stats("cumulative").print_stats(PROFILE_TOP * 2)
    log(f"--- cProfile, {what} ({path}) ---")
    log(text.getvalue())
    return text.getvalue()


# --------------------------------------------------------------------------- PostgreSQL


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def probe_postgres(url: str) -> tuple[str | None, str | None]:
    """The server's version, or why it cannot be used."""
    try:
        with psycopg.connect(_conninfo(url), connect_timeout=3, autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            return (str(row[0]) if row else "?"), None
    except psycopg.Error as exc:
        return None, f"{mask_password(url)}: {str(exc).strip().splitlines()[0]}"


@contextmanager
def postgres_schema(url: str) -> Iterator[str]:
    name = f"bench_missions_{secrets.token_hex(5)}"
    with psycopg.connect(_conninfo(url), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(_conninfo(url), autocommit=True) as admin:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def run_postgres(url: str, directory: Path, sizes: Sizes, samples: int) -> Run:
    with postgres_schema(url) as schema:
        engine = create_engine_for(url, schema=schema)
        try:
            clock = FakeClock(START)
            services = build(open_store(engine, clock))
            fx = build_fixture(
                services, clock, directory, sizes.workspaces, sizes.schedules, "PostgreSQL"
            )
            usable = min(samples, sizes.workspaces * sizes.schedules - WARMUP)
            return measure(fx, "postgresql", usable, min(sizes.listings, samples))
        finally:
            engine.dispose()


# --------------------------------------------------------------------------- output


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("kalends", "SQLAlchemy", "psycopg"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "?"
    out["platform"] = platform.platform()
    return out


@dataclass
class Report:
    sizes: Sizes
    runs: list[Run]
    postgres_version: str | None
    postgres_skipped: str | None
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    elapsed_s: float = 0.0

    @property
    def problems(self) -> list[str]:
        return [p for r in self.runs for p in r.problems]

    @property
    def missed(self) -> list[Result]:
        return [x for r in self.runs for x in r.results if x.met is False]


def print_table(rep: Report) -> None:
    v = _versions()
    server = f", PostgreSQL {rep.postgres_version}" if rep.postgres_version else ""
    print(
        f"kalends {v['kalends']}, SQLAlchemy {v['SQLAlchemy']}, psycopg {v['psycopg']},"
        f" SQLite {v['sqlite']}{server}, Python {v['python']}, {v['platform']}"
    )
    print(
        "SQLite: temporary file, WAL, synchronous=NORMAL. Clock: FakeClock from"
        f" {START.isoformat().replace('+00:00', 'Z')}, +{STEP_S:g} s before every write."
    )
    header = (
        "backend",
        "operation",
        "schedules",
        "samples",
        "median ms",
        "p10-p90 ms",
        "min-max ms",
        "SQL stmts",
        "target (median)",
        "verdict",
    )
    body: list[tuple[str, ...]] = []
    for run in rep.runs:
        fx = run.fixture
        shape = f"{len(fx.workspaces)}x{len(fx.schedules[0])}"
        for r in run.results:
            s = r.series
            p10, p90 = s.deciles()
            target = r.target_ms
            body.append(
                (
                    "SQLite" if run.backend == "sqlite" else "PostgreSQL",
                    LABELS[r.key],
                    shape,
                    str(len(s.samples_ms)),
                    f"{s.median:.3f}",
                    f"{p10:.3f}-{p90:.3f}",
                    f"{min(s.samples_ms):.3f}-{max(s.samples_ms):.3f}",
                    str(r.statements),
                    "-" if target is None else f"< {target:g} ms",
                    "-" if r.met is None else ("ok" if r.met else "MISS"),
                )
            )
    print()
    print("\n".join(grid(header, body, {2, 3, 4, 5, 6, 7})))
    print(
        "SQL stmts: per call (BEGIN and PRAGMA included, COMMIT not), on the last warm-up call;"
        " the listing's for all of its pages"
    )
    for run in rep.runs:
        fx = run.fixture
        print(
            f"{run.backend}: {len(fx.flat()):,} schedules created in {fx.build_s:.1f} s"
            f" ({fx.build_s / len(fx.flat()) * 1e3:.2f} ms each); the listed workspace had"
            f" {run.listed_running} running documents"
        )
    if rep.postgres_skipped:
        print(f"PostgreSQL skipped: {rep.postgres_skipped}")
    print()
    problems = rep.problems
    print("every outcome checked: ok" if not problems else "VERIFICATION FAILED:")
    for p in problems:
        print(f"  {p}")
    b, a = rep.load_before, rep.load_after
    print(
        f"total wall time {rep.elapsed_s:.1f}s; load average (1, 5, 15 min) at the start"
        f" {b[0]:.2f} {b[1]:.2f} {b[2]:.2f}, at the end {a[0]:.2f} {a[1]:.2f} {a[2]:.2f}"
        f" on {os.cpu_count()} CPUs"
    )


def to_json(rep: Report) -> str:
    doc: dict[str, Any] = {
        "versions": _versions(),
        "sizes": asdict(rep.sizes),
        "sqlite": "WAL, synchronous=NORMAL",
        "clock": {"start": START.isoformat(), "step_s_per_write": STEP_S},
        "postgresql": {"version": rep.postgres_version, "skipped": rep.postgres_skipped},
        "runs": [
            {
                "backend": run.backend,
                "workspaces": len(run.fixture.workspaces),
                "schedules": len(run.fixture.flat()),
                "build_s": round(run.fixture.build_s, 3),
                "listed_running": run.listed_running,
                "operations": {
                    r.key: {
                        **r.series.to_json(),
                        "statements": r.statements,
                        "commits": r.commits,
                        "target_ms": r.target_ms,
                        "met": r.met,
                    }
                    for r in run.results
                },
            }
            for run in rep.runs
        ],
        "verified": not rep.problems,
        "problems": rep.problems,
        "elapsed_s": round(rep.elapsed_s, 3),
        "load_average": {"start": rep.load_before, "end": rep.load_after, "cpus": os.cpu_count()},
    }
    return json.dumps(doc, indent=2)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smaller run: {QUICK.workspaces} workspaces, {QUICK.samples} samples,"
        f" {QUICK.listings} listings",
    )
    parser.add_argument(
        "--workspaces", type=positive, help=f"workspaces (default {DEFAULT.workspaces})"
    )
    parser.add_argument(
        "--schedules",
        type=positive,
        help=f"schedules per workspace (default and most {MAX_SCHEDULES})",
    )
    parser.add_argument(
        "--samples",
        type=positive,
        help=f"schedules played, read and paused (default {DEFAULT.samples})",
    )
    parser.add_argument(
        "--listings", type=positive, help=f"full listings timed (default {DEFAULT.listings})"
    )
    parser.add_argument(
        "--postgres",
        default=DEFAULT_POSTGRES,
        help=f"PostgreSQL server to use when it answers (default {DEFAULT_POSTGRES})",
    )
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--pg-workspaces", type=positive, default=4, help="workspaces on PostgreSQL (default 4)"
    )
    parser.add_argument(
        "--pg-samples", type=positive, default=200, help="samples on PostgreSQL (default 200)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help=f"afterwards profile Play, detail and Pause on {PROFILE_SAMPLES} more SQLite"
        f" schedules and {PROFILE_LISTINGS} listings; write DIR/{{play,detail,pause,listing}}.prof",
    )
    args = parser.parse_args(argv)
    base = QUICK if args.quick else DEFAULT
    sizes = Sizes(
        workspaces=args.workspaces or base.workspaces,
        schedules=args.schedules or base.schedules,
        samples=args.samples or base.samples,
        listings=args.listings or base.listings,
    )
    if sizes.schedules > MAX_SCHEDULES:
        parser.error(f"--schedules: a workspace holds at most {MAX_SCHEDULES}")
    needed = WARMUP + sizes.samples + (PROFILE_SAMPLES if args.profile else 0)
    if sizes.workspaces * sizes.schedules < needed:
        parser.error(
            f"{sizes.workspaces} x {sizes.schedules} schedules are fewer than the {needed}"
            " the samples (and the profile) need"
        )

    t0 = time.perf_counter()
    load_before = os.getloadavg()
    runs: list[Run] = []
    pg_version: str | None = None
    skipped: str | None = "--no-postgres"
    with tempfile.TemporaryDirectory(prefix="kalends-bench-missions-") as tmp:
        directory = Path(tmp)
        clock = FakeClock(START)
        store = open_store(f"sqlite:///{directory / 'kalends.db'}", clock)
        try:
            (directory / "sqlite").mkdir()
            fx = build_fixture(
                build(store),
                clock,
                directory / "sqlite",
                sizes.workspaces,
                sizes.schedules,
                "SQLite",
            )
            runs.append(measure(fx, "sqlite", sizes.samples, sizes.listings))
            if args.profile is not None:
                profile(fx, WARMUP + sizes.samples, args.profile)
        finally:
            store.close()

        if not args.no_postgres:
            url = normalize_database_url(args.postgres)
            pg_version, skipped = probe_postgres(url)
            if skipped is not None:
                log(f"PostgreSQL skipped: {skipped}")
            else:
                (directory / "postgresql").mkdir()
                pg_sizes = Sizes(
                    min(args.pg_workspaces, sizes.workspaces),
                    sizes.schedules,
                    sizes.samples,
                    sizes.listings,
                )
                runs.append(run_postgres(url, directory / "postgresql", pg_sizes, args.pg_samples))

    rep = Report(sizes, runs, pg_version, skipped, load_before)
    rep.elapsed_s = time.perf_counter() - t0
    rep.load_after = os.getloadavg()
    if args.json:
        print(to_json(rep))
    else:
        print_table(rep)
    return 1 if rep.problems or rep.missed else 0


if __name__ == "__main__":
    sys.exit(main())
