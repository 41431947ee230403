"""Reminder outbox benchmark: due intents delivered per second by kalends' DeliveryWorker,
with one and with four worker processes, on SQLite and PostgreSQL, beside huey and the
bare-sqlite3 limit of the same statements.

The fixture: a kalends database migrated by ``open_store`` holding one actor, one list
with the actor as its owner, the actor's notification destinations (one ``mailto://``
e-mail URL and one ``ntfys://`` push URL, set through ``Destinations.set``),
``--intents`` / 100 open tasks (default 1,000; schedule revision 1, a timed due) and
``--intents`` reminder intents (default 100,000), 100 per task, half e-mail and half
push, all for that actor. Tasks and intents are written with SQLAlchemy Core bulk
inserts in one transaction (no ``task_reminders`` rows: the worker never reads them).
Every intent is ``pending``, schedule revision 1, due a few minutes before the fixed
instant ``NOW`` (``at`` = ``next_attempt_at``, spread over NOW-5 min .. NOW-1 min): all
are due, none has expired. Every kalends process runs on a ``FakeClock`` standing at
that instant, so no lease runs out during a run. 400 more intents, due earlier, serve
for warm-up.

What is timed, each on its own copy of that fixture:

kalends: ``DeliveryWorker(store, NullTransport(), owner=...).drain()`` in 1
    and in 4 separate processes (``multiprocessing``, spawn), each with its own engine
    and ``Store`` on the same database. ``drain`` runs batches until a claim finds
    nothing; a batch claims up to 100 intents, checks their eligibility, reads the
    recipients' destinations, composes each message and hands it to the no-op
    transport, then acknowledges the batch (the statements and transactions of one
    batch are counted on the warm-up batch and printed). The clock starts when every
    process has started, warmed up and waited at a barrier, and stops when the last
    one has reported back: intents delivered / that time. Each process also reports
    its CPU time and, on a PostgreSQL server of this machine, its server backend's (from
    ``/proc``), and the busy share of all the machine's CPUs over the run is read from
    ``/proc/stat``: whether a run was short of CPU shows there.
    Warm-up, untimed: each process runs one batch (``run_once``) of the earlier
    intents with its clock set back to before the main ones; the surplus (300 for one
    worker) is marked ``cancelled`` before the run.
    SQLite: a temporary file, URL ``sqlite:///...?synchronous=full`` (WAL, fsync at every
    commit). PostgreSQL, when a server answers at ``--postgres``: for each run a private
    schema (``create_engine_for(url, schema=...)``), migrated, filled the same way,
    analyzed (``ANALYZE``), dropped afterwards; the server's durability settings are printed.
huey: ``SqliteHuey(filename=..., fsync=True, journal_mode="wal")``, which huey turns into
    ``PRAGMA journal_mode=wal`` and ``PRAGMA synchronous=2`` (FULL) on its connection
    (read back, printed and checked). ``--huey`` no-op tasks (default 100,000, as many
    as intents; 5,000 with ``--quick``) are enqueued (one insert transaction each, as
    huey does), then consumed in this process by ``huey.dequeue()`` +
    ``huey.execute(task)`` until the queue is empty: a consumer worker's work without
    its polling sleeps. Figure: tasks / (enqueue + consume time), end to end; both
    phases are shown. huey deletes a task when it dequeues it and keeps no lease, so it
    promises less: a consumer that dies mid-task loses the task. Warm-up: 100 tasks.
bare sqlite3, the physical limit: kalends' own claim and acknowledgement statements
    (``Outbox``'s ``_CLAIM`` and ``_ACK``, compiled for SQLite by SQLAlchemy, the bound
    values rendered once as kalends stores them) sent with the stdlib ``sqlite3`` module
    on a copy of the same database, the connection configured as kalends configures
    its own (WAL, ``synchronous=FULL``, foreign keys, page cache): ``BEGIN IMMEDIATE``,
    the claim ``UPDATE ... WHERE id IN (SELECT id ... ORDER BY next_attempt_at LIMIT n)
    RETURNING ...``, ``COMMIT``, then ``BEGIN IMMEDIATE``, ``UPDATE ... SET
    status='delivered' ... WHERE lease_token IN (...) ... RETURNING lease_token``,
    ``COMMIT``. Batched: n = 100 until a claim returns nothing. Single-row: n = 1, two
    transactions per intent, for the first ``--single-row`` intents (default 20,000;
    2,000 with ``--quick``; the others stay pending in the table). No eligibility
    check, no message, no SQLAlchemy in the loop. Warm-up: the 400 earlier intents.

Rounds: the kalends runs (1 and 4 workers, SQLite then PostgreSQL) and the bare batched
loop are repeated ``--rounds`` times (default 2), interleaved, each on a fresh copy; the
best round of each counts, so a burst of other load on the machine spoils at most one.
huey and the bare single-row loop run once.

Every run is checked afterwards: each main intent ``delivered`` with ``attempts`` = 1
(claimed once), as many sends, acknowledgements or executed huey tasks as items, no
closed, retried or released claim; otherwise the run fails (exit status 1). Garbage
collection stays on everywhere (throughput runs, not latency samples).

Targets, on SQLite for kalends with one worker (like-for-like with one huey consumer
and one bare connection): at least 3x huey's end-to-end tasks/s and at least 50% of the
bare batched claim+ack rows/s. On PostgreSQL: four workers at least 2.5x one worker.

``--profile DIR`` writes a cProfile file of each worker process's timed drain into DIR
(the profiler slows the workers down: those runs' figures are not comparable).

Run from the repository root: ``python bench/outbox.py [--json] [--quick]``.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import importlib.metadata
import importlib.util
import json
import math
import multiprocessing
import os
import platform
import queue
import secrets
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from sqlalchemy import Dialect, Engine, func, insert, select, text, update  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench.common import StatementCounter, grid, log, positive  # noqa: E402
from kalends.bootstrap import build  # noqa: E402
from kalends.clock import FakeClock  # noqa: E402
from kalends.config import mask_password, normalize_database_url  # noqa: E402
from kalends.reminders.outbox import _ACK, _CLAIM, CLAIM_BATCH, EXPIRY, LEASE  # noqa: E402
from kalends.reminders.transports import NullTransport  # noqa: E402
from kalends.reminders.worker import FIRST_BATCH, WORKER_BATCH, DeliveryWorker  # noqa: E402
from kalends.storage.engine import SQLITE_CACHE_KIB, create_engine_for  # noqa: E402
from kalends.storage.migrate import open_store  # noqa: E402
from kalends.storage.schema import UTCDateTime  # noqa: E402
from kalends.storage.task_tables import reminder_intents, tasks  # noqa: E402
from kalends.storage.unit_of_work import Store  # noqa: E402

ri = reminder_intents

# The fixed instant of every run, and where the intents lie around it.
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
BUILT_AT = NOW - timedelta(hours=1)
MAIN_FROM = NOW - timedelta(minutes=5)
MAIN_SPAN = timedelta(minutes=4)
WARMUP_FROM = NOW - timedelta(minutes=10)
# The warm-up clock: the warm-up intents are due, the main ones not yet.
WARMUP_NOW = NOW - timedelta(minutes=6)
WARMUP_STEP = timedelta(milliseconds=1)

WORKER_COUNTS = (1, 4)
PER_TASK = 100
CHANNELS = ("email", "push")
DESTINATIONS = {
    "email": "mailto://bench:secret@example.com",
    "push": "ntfys://ntfy.example.com/kalends-bench",
}
REF_ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
POSTGRES_SETTINGS = ("server_version", "fsync", "synchronous_commit", "wal_sync_method")
HUEY_WARMUP = 100
BARRIER_TIMEOUT_S = 600.0
INSERT_CHUNK = 10_000

TARGET_VS_HUEY = 3.0
TARGET_VS_BARE = 0.5
TARGET_FOUR_VS_ONE = 2.5


@dataclass(frozen=True)
class Sizes:
    intents: int
    """Due intents in the fixture, all drained by each kalends run and the bare batched run."""
    huey: int
    """No-op tasks enqueued and consumed by huey."""
    single_row: int
    """Intents claimed and acknowledged one by one by the bare single-row run."""
    batch: int = CLAIM_BATCH

    @property
    def tasks(self) -> int:
        return math.ceil(self.intents / PER_TASK)

    @property
    def warmup(self) -> int:
        """Warm-up intents in the fixture: one batch for each of the most workers."""
        return max(WORKER_COUNTS) * FIRST_BATCH


DEFAULT = Sizes(intents=100_000, huey=100_000, single_row=20_000)
QUICK = Sizes(intents=10_000, huey=5_000, single_row=2_000)


def _per(amount: float, over: float) -> float:
    """``amount / over``, 0 when nothing was measured."""
    return amount / over if over > 0 else 0.0


# --------------------------------------------------------------------------- fixture


def _ref(n: int) -> str:
    out = ""
    for _ in range(6):
        n, digit = divmod(n, len(REF_ALPHABET))
        out += REF_ALPHABET[digit]
    return out


def build_fixture(store: Store, sizes: Sizes) -> None:
    """The actor, list, destinations, tasks and intents described in the module docstring."""
    services = build(store)
    actor = services.directory.add_actor("bench", "Bench", "bench@example.com").id
    list_id = services.directory.create_list(actor, "Reminders").id
    for channel, url in DESTINATIONS.items():
        services.destinations.set(actor, actor, channel, [url])
    task_ids = [uuid.uuid4() for _ in range(sizes.tasks)]
    task_rows = [
        {
            "id": task_id,
            "ref": _ref(n),
            "list_id": list_id,
            "position": (n + 1) * 1024,
            "title": f"Task {n + 1} with reminders",
            "description": "",
            "status": "open",
            "trashed": False,
            "revision": 1,
            "schedule_revision": 1,
            "due_local": "2026-03-02T10:00:00",
            "due_zone": "Europe/Berlin",
            "due_at": NOW,
            "created_by": actor,
            "created_at": BUILT_AT,
            "updated_at": BUILT_AT,
        }
        for n, task_id in enumerate(task_ids)
    ]
    step = MAIN_SPAN / sizes.intents
    instants = [WARMUP_FROM + k * WARMUP_STEP for k in range(sizes.warmup)]
    instants += [MAIN_FROM + j * step for j in range(sizes.intents)]
    intent_rows = [
        {
            "id": uuid.uuid4(),
            "task_id": task_ids[j % len(task_ids)],
            "schedule_revision": 1,
            "channel": CHANNELS[j % len(CHANNELS)],
            "at": at,
            "recipient_id": actor,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": at,
            "created_at": BUILT_AT,
            "updated_at": BUILT_AT,
        }
        for j, at in enumerate(instants)
    ]
    with store.transaction() as conn:
        conn.execute(insert(tasks), task_rows)
        for start in range(0, len(intent_rows), INSERT_CHUNK):
            conn.execute(insert(ri), intent_rows[start : start + INSERT_CHUNK])


def keep_warmup(engine: Engine, keep: int) -> None:
    """Leaves ``keep`` warm-up intents pending (the earliest) and cancels the others."""
    earliest = select(ri.c.id).where(ri.c.at < MAIN_FROM).order_by(ri.c.at).limit(keep)
    with engine.begin() as conn:
        conn.execute(
            update(ri)
            .where(ri.c.at < MAIN_FROM, ri.c.id.not_in(earliest))
            .values(status="cancelled")
        )


def copy_sqlite(source: Path, target: Path) -> None:
    """A page-for-page copy through SQLite's backup API."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}?synchronous=full"


def count_intents(url: str, schema: str | None) -> dict[str, dict[str, int]]:
    """Intents per part (``main``/``warmup``) and per "status/attempts"."""
    engine = create_engine_for(url, schema=schema)
    try:
        with engine.connect() as conn:
            main = (ri.c.at >= MAIN_FROM).label("main")
            rows = conn.execute(
                select(main, ri.c.status, ri.c.attempts, func.count()).group_by(
                    main, ri.c.status, ri.c.attempts
                )
            ).all()
    finally:
        engine.dispose()
    out: dict[str, dict[str, int]] = {"main": {}, "warmup": {}}
    for main, status, attempts, count in rows:
        out["main" if main else "warmup"][f"{status}/{attempts}"] = int(count)
    return out


def intent_problems(
    counts: dict[str, dict[str, int]],
    intents: int,
    warmup: int,
    label: str,
    *,
    left: int = 0,
) -> list[str]:
    """What differs from ``intents`` main intents delivered once (``left`` still pending)."""
    problems = []
    expected = {"delivered/1": intents} | ({"pending/0": left} if left else {})
    if counts["main"] != expected:
        problems.append(
            f"{label}: main intents by status/attempts {counts['main']}, expected {expected}"
        )
    if counts["warmup"].get("delivered/1", 0) != warmup:
        problems.append(
            f"{label}: warm-up intents by status/attempts {counts['warmup']},"
            f" expected {warmup} delivered once"
        )
    return problems


# --------------------------------------------------------------------------- kalends


@dataclass(frozen=True)
class WorkerJob:
    url: str
    schema: str | None
    owner: str
    batch: int
    profile: str | None


class CpuBusy:
    """The busy share of all CPUs between ``start`` and ``stop`` (Linux ``/proc/stat``)."""

    def __init__(self) -> None:
        self._start: tuple[int, int] | None = None
        self._stop: tuple[int, int] | None = None

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        except OSError:
            return None
        ticks = [int(f) for f in fields]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
        return sum(ticks[:8]), idle

    def start(self) -> None:
        self._start = self._read()

    def stop(self) -> None:
        self._stop = self._read()

    def fraction(self) -> float | None:
        if self._start is None or self._stop is None:
            return None
        total = self._stop[0] - self._start[0]
        idle = self._stop[1] - self._start[1]
        return (total - idle) / total if total > 0 else None


def _backend_pid(engine: Engine) -> int | None:
    """The PostgreSQL server process of the engine's (single) pooled connection."""
    if engine.dialect.name != "postgresql":
        return None
    with engine.connect() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    return int(pid) if pid is not None else None


def _process_cpu(pid: int | None) -> float | None:
    """CPU seconds used so far by a process of this machine (Linux), if it can be read."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_main(job: WorkerJob, ready: Any, results: Any) -> None:
    """One worker process: warm up on one batch, wait for the others, then drain."""
    out: dict[str, Any] = {"owner": job.owner}
    store: Store | None = None
    profiler: cProfile.Profile | None = None
    try:
        clock = FakeClock(WARMUP_NOW)
        store = open_store(create_engine_for(job.url, schema=job.schema), clock)
        transport = NullTransport()
        # The worker as shipped: its first claim takes FIRST_BATCH intents, later ones as
        # many as the transport's pace sends in half a lease (at most WORKER_BATCH).
        worker = DeliveryWorker(store, transport, owner=job.owner)
        with StatementCounter(store.engine) as counter:
            warm = worker.run_once()
        out["warmup"] = warm.to_json()
        out["statements_per_batch"] = counter.statements
        out["commits_per_batch"] = counter.commits
        clock.set(NOW)
        sent_before = transport.sent
        backend = _backend_pid(store.engine)
        ready.wait()
        profiler = cProfile.Profile() if job.profile else None
        start, cpu = time.perf_counter(), time.process_time()
        server = _process_cpu(backend)
        if profiler is not None:
            profiler.enable()
        report = worker.drain()
        if profiler is not None:
            profiler.disable()
        out["elapsed_s"] = time.perf_counter() - start
        out["cpu_s"] = time.process_time() - cpu
        server_after = _process_cpu(backend)
        same = backend is not None and _backend_pid(store.engine) == backend
        out["server_cpu_s"] = (
            server_after - server
            if same and server is not None and server_after is not None
            else None
        )
        out["report"] = report.to_json()
        out["sent"] = transport.sent - sent_before
    except BaseException as exc:
        ready.abort()
        out["error"] = "".join(traceback.format_exception(exc)).strip()
    results.put(out)
    if store is not None:
        store.close()
    if profiler is not None and job.profile:
        profiler.dump_stats(job.profile)


@dataclass
class KalendsRun:
    backend: str
    workers: int
    intents: int
    seconds: float
    per_worker: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    machine_busy: float | None = None
    round: int = 1
    """The share of the machine's CPU time that was busy (all processes) during the run."""

    @property
    def per_second(self) -> float:
        return _per(self.intents, self.seconds)

    @property
    def worker_cpu(self) -> float:
        """Worker processes' CPU time over the run's wall time, summed (1.0 = one core)."""
        return _per(sum(float(w["cpu_s"]) for w in self.per_worker), self.seconds)

    @property
    def server_cpu(self) -> float | None:
        """The PostgreSQL backends' CPU time over the wall time, when this machine runs them."""
        times = [w["server_cpu_s"] for w in self.per_worker]
        if not times or any(t is None for t in times):
            return None
        return _per(sum(float(t) for t in times), self.seconds)

    def to_json(self) -> dict[str, Any]:
        return {
            "system": "kalends DeliveryWorker.drain",
            "round": self.round,
            "backend": self.backend,
            "workers": self.workers,
            "intents": self.intents,
            "seconds": round(self.seconds, 4),
            "per_second": round(self.per_second, 1),
            "per_worker": self.per_worker,
            "worker_cpu_cores": round(self.worker_cpu, 3),
            "server_cpu_cores": None if self.server_cpu is None else round(self.server_cpu, 3),
            "machine_cpu_busy": None if self.machine_busy is None else round(self.machine_busy, 3),
            "problems": self.problems,
        }


def run_workers(
    backend: str,
    url: str,
    schema: str | None,
    workers: int,
    sizes: Sizes,
    profile_dir: Path | None,
    round_no: int,
) -> KalendsRun:
    """Starts ``workers`` processes on the prepared database and times their drain."""
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Barrier(workers + 1, timeout=BARRIER_TIMEOUT_S)
    results = ctx.Queue()
    jobs = [
        WorkerJob(
            url=url,
            schema=schema,
            owner=f"bench-{backend}-{n}",
            batch=sizes.batch,
            profile=str(profile_dir / f"{backend}-{workers}w-r{round_no}-{n}.prof")
            if profile_dir
            else None,
        )
        for n in range(1, workers + 1)
    ]
    procs = [ctx.Process(target=worker_main, args=(job, ready, results)) for job in jobs]
    for proc in procs:
        proc.start()
    problems: list[str] = []
    got: list[dict[str, Any]] = []
    start = end = time.perf_counter()
    busy = CpuBusy()
    try:
        ready.wait()
        start = time.perf_counter()
        busy.start()
    except threading.BrokenBarrierError:
        problems.append(f"{backend}, {workers} workers: a worker failed before the start")
    try:
        while len(got) < workers:
            got.append(results.get(timeout=BARRIER_TIMEOUT_S))
        end = time.perf_counter()
        busy.stop()
    except queue.Empty:
        problems.append(f"{backend}, {workers} workers: no result within {BARRIER_TIMEOUT_S} s")
    for proc in procs:
        proc.join(timeout=60)
        if proc.is_alive():  # pragma: no cover - a stuck worker
            proc.terminate()
            proc.join()
    per_worker: list[dict[str, Any]] = []
    delivered = 0
    for out in sorted(got, key=lambda o: str(o["owner"])):
        if "error" in out:
            problems.append(f"{out['owner']} failed:\n{out['error']}")
            continue
        report = out["report"]
        delivered += int(report["delivered"])
        others = {k: report[k] for k in ("closed", "retried", "released", "lost_acks") if report[k]}
        if others or report["delivered"] != out["sent"]:
            problems.append(
                f"{out['owner']}: delivered {report['delivered']}, sent {out['sent']}, {others}"
            )
        if out["warmup"]["delivered"] != FIRST_BATCH:
            problems.append(
                f"{out['owner']}: warm-up delivered {out['warmup']['delivered']},"
                f" expected {FIRST_BATCH}"
            )
        per_worker.append(
            {
                "owner": out["owner"],
                "delivered": report["delivered"],
                "elapsed_s": round(out["elapsed_s"], 4),
                "cpu_s": round(out["cpu_s"], 4),
                "server_cpu_s": None
                if out["server_cpu_s"] is None
                else round(out["server_cpu_s"], 4),
                "statements_per_batch": out["statements_per_batch"],
                "commits_per_batch": out["commits_per_batch"],
            }
        )
    if not problems and delivered != sizes.intents:
        problems.append(
            f"{backend}, {workers} workers: delivered {delivered}, expected {sizes.intents}"
        )
    return KalendsRun(
        backend, workers, delivered, end - start, per_worker, problems, busy.fraction(), round_no
    )


def kalends_sqlite(
    pristine: Path,
    directory: Path,
    workers: int,
    sizes: Sizes,
    profile_dir: Path | None,
    round_no: int,
) -> KalendsRun:
    path = directory / f"kalends-{workers}w.db"
    copy_sqlite(pristine, path)
    url = sqlite_url(path)
    engine = create_engine_for(url)
    try:
        keep_warmup(engine, workers * FIRST_BATCH)
    finally:
        engine.dispose()
    log(f"kalends on SQLite, {workers} worker(s): draining {sizes.intents:,} intents ...")
    run = run_workers("sqlite", url, None, workers, sizes, profile_dir, round_no)
    run.problems += intent_problems(
        count_intents(url, None), sizes.intents, workers * FIRST_BATCH, f"SQLite {workers}w"
    )
    log(f"  {run.per_second:,.0f} intents/s ({run.seconds:.2f} s)")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return run


# --------------------------------------------------------------------------- PostgreSQL


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def probe_postgres(url: str) -> tuple[dict[str, str], str | None]:
    """The server's settings, or why it cannot be used."""
    try:
        with psycopg.connect(_conninfo(url), connect_timeout=3, autocommit=True) as conn:
            settings: dict[str, str] = {}
            for name in POSTGRES_SETTINGS:
                row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
                settings[name] = str(row[0]) if row else "?"
            return settings, None
    except psycopg.Error as exc:
        return {}, f"{mask_password(url)}: {str(exc).strip().splitlines()[0]}"


@contextmanager
def postgres_schema(url: str) -> Iterator[str]:
    name = f"bench_outbox_{secrets.token_hex(5)}"
    with psycopg.connect(_conninfo(url), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(_conninfo(url), autocommit=True) as admin:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def kalends_postgres(
    url: str, workers: int, sizes: Sizes, profile_dir: Path | None, round_no: int
) -> tuple[KalendsRun, float]:
    """A fresh schema, migrated and filled, then ``workers`` processes; returns the build time."""
    with postgres_schema(url) as schema:
        log(f"PostgreSQL: building the fixture in schema {schema} ...")
        t0 = time.perf_counter()
        engine = create_engine_for(url, schema=schema)
        try:
            build_fixture(open_store(engine, FakeClock(BUILT_AT)), sizes)
            keep_warmup(engine, workers * FIRST_BATCH)
            with engine.begin() as conn:
                conn.execute(text("ANALYZE tasks, reminder_intents, actor_destinations"))
        finally:
            engine.dispose()
        built = time.perf_counter() - t0
        log(f"  built in {built:.1f} s")
        log(f"kalends on PostgreSQL, {workers} worker(s): draining {sizes.intents:,} intents ...")
        run = run_workers("postgresql", url, schema, workers, sizes, profile_dir, round_no)
        run.problems += intent_problems(
            count_intents(url, schema),
            sizes.intents,
            workers * FIRST_BATCH,
            f"PostgreSQL {workers}w",
        )
        log(f"  {run.per_second:,.0f} intents/s ({run.seconds:.2f} s)")
    return run, built


# --------------------------------------------------------------------------- bare sqlite3


_INSTANT = UTCDateTime()


class BareOutbox:
    """kalends' claim and ack statements sent with the stdlib sqlite3 module."""

    def __init__(self, path: Path, dialect: Dialect, owner: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=5.0)
        self.conn.execute("PRAGMA busy_timeout = 5000")
        self.conn.execute("PRAGMA journal_mode = WAL").fetchall()
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
        self.conn.execute("PRAGMA temp_store = MEMORY")
        self.dialect = dialect
        self.owner = owner
        self._claim = _CLAIM.compile(dialect=dialect)
        self._ack = _ACK.compile(dialect=dialect)
        self._claims: dict[tuple[datetime, int], tuple[str, list[Any], list[int]]] = {}
        self._acks: dict[tuple[datetime, int], tuple[str, list[Any], list[int]]] = {}
        self._token_at = -1
        self._outcome_at = -1

    def _render(self, state: Any, marks: Sequence[str]) -> tuple[str, list[Any], list[int]]:
        values = [
            _INSTANT.process_bind_param(v, self.dialect) if isinstance(v, datetime) else v
            for v in state.positional_parameters
        ]
        at = [values.index(mark) for mark in marks]
        return str(state.statement), values, at

    def claim_plan(self, now: datetime, limit: int) -> tuple[str, list[Any], list[int]]:
        key = (now, limit)
        if key not in self._claims:
            mark = "\0nonce"
            state = self._claim.construct_expanded_state(
                {
                    "now": now,
                    "expires": now + LEASE,
                    "expired_before": now - EXPIRY,
                    "limit": limit,
                    "owner": self.owner,
                    "nonce": mark,
                }
            )
            statement, values, _ = self._render(state, [])
            self._claims[key] = (statement, values, [i for i, v in enumerate(values) if v == mark])
        return self._claims[key]

    def ack_plan(self, now: datetime, count: int) -> tuple[str, list[Any], list[int]]:
        key = (now, count)
        if key not in self._acks:
            marks = [f"\0token{i}" for i in range(count)]
            state = self._ack.construct_expanded_state({"tokens": marks, "now": now})
            self._acks[key] = self._render(state, marks)
        return self._acks[key]

    def claim(self, now: datetime, limit: int) -> tuple[int, list[str]]:
        """One claim transaction: the rows returned and the tokens of those leased."""
        statement, template, nonce_at = self.claim_plan(now, limit)
        values = list(template)
        nonce = secrets.token_hex(12)
        for i in nonce_at:
            values[i] = nonce
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        cursor = conn.execute(statement, values)
        rows = cursor.fetchall()
        conn.execute("COMMIT")
        if self._token_at < 0:
            names = [d[0] for d in cursor.description]
            self._token_at, self._outcome_at = names.index("lease_token"), names.index("outcome")
        token_at, outcome_at = self._token_at, self._outcome_at
        return len(rows), [r[token_at] for r in rows if r[outcome_at] == "leased"]

    def ack(self, now: datetime, tokens: Sequence[str]) -> int:
        """One acknowledgement transaction; returns the rows acknowledged."""
        statement, template, token_at = self.ack_plan(now, len(tokens))
        values = list(template)
        for i, token in zip(token_at, tokens, strict=True):
            values[i] = token
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        acked = len(conn.execute(statement, values).fetchall())
        conn.execute("COMMIT")
        return acked

    def drain(self, now: datetime, limit: int, most: int | None = None) -> tuple[int, int, int]:
        """Claims and acknowledges until nothing is due, or ``most`` intents were claimed:
        (claimed, acknowledged, transactions)."""
        claimed = acked = transactions = 0
        while most is None or claimed < most:
            returned, tokens = self.claim(now, limit)
            transactions += 1
            if not returned:
                return claimed, acked, transactions
            claimed += returned
            if tokens:
                acked += self.ack(now, tokens)
                transactions += 1
        return claimed, acked, transactions

    def close(self) -> None:
        self.conn.close()


@dataclass
class BareRun:
    batch: int
    intents: int
    seconds: float
    transactions: int
    problems: list[str] = field(default_factory=list)
    round: int = 1

    @property
    def per_second(self) -> float:
        return _per(self.intents, self.seconds)

    def to_json(self) -> dict[str, Any]:
        return {
            "system": "bare sqlite3 claim+ack",
            "round": self.round,
            "batch": self.batch,
            "intents": self.intents,
            "seconds": round(self.seconds, 4),
            "per_second": round(self.per_second, 1),
            "transactions": self.transactions,
            "problems": self.problems,
        }


def bare_sqlite(
    pristine: Path, directory: Path, dialect: Dialect, limit: int, sizes: Sizes, round_no: int
) -> BareRun:
    """The bare claim+ack loop, ``limit`` per claim, on a copy of the fixture.

    Batched it drains every intent; one by one it stops after ``sizes.single_row``.
    """
    path = directory / f"bare-{limit}.db"
    copy_sqlite(pristine, path)
    most = sizes.intents if limit == sizes.batch else min(sizes.single_row, sizes.intents)
    log(f"bare sqlite3, claim+ack of {limit} per transaction: {most:,} intents ...")
    bare = BareOutbox(path, dialect, "bench-bare")
    try:
        warm_claimed, warm_acked, _ = bare.drain(WARMUP_NOW, limit)
        start = time.perf_counter()
        claimed, acked, transactions = bare.drain(NOW, limit, most)
        seconds = time.perf_counter() - start
    finally:
        bare.close()
    run = BareRun(limit, acked, seconds, transactions, round=round_no)
    if claimed != most or acked != most:
        run.problems.append(
            f"bare {limit}: claimed {claimed}, acknowledged {acked}, expected {most}"
        )
    if warm_claimed != sizes.warmup or warm_acked != sizes.warmup:
        run.problems.append(f"bare {limit}: warm-up claimed {warm_claimed}, acked {warm_acked}")
    run.problems += intent_problems(
        count_intents(sqlite_url(path), None),
        most,
        sizes.warmup,
        f"bare {limit}",
        left=sizes.intents - most,
    )
    log(f"  {run.per_second:,.0f} intents/s ({seconds:.2f} s)")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return run


# --------------------------------------------------------------------------- huey


@dataclass
class HueyRun:
    tasks: int
    enqueue_s: float
    consume_s: float
    pragmas: dict[str, str]
    problems: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.enqueue_s + self.consume_s

    @property
    def per_second(self) -> float:
        return _per(self.tasks, self.seconds)

    def to_json(self) -> dict[str, Any]:
        return {
            "system": "huey SqliteHuey enqueue + dequeue/execute",
            "tasks": self.tasks,
            "enqueue_s": round(self.enqueue_s, 4),
            "consume_s": round(self.consume_s, 4),
            "seconds": round(self.seconds, 4),
            "per_second": round(self.per_second, 1),
            "enqueue_per_second": round(_per(self.tasks, self.enqueue_s), 1),
            "consume_per_second": round(_per(self.tasks, self.consume_s), 1),
            "pragmas": self.pragmas,
            "problems": self.problems,
        }


def bench_huey(directory: Path, count: int) -> HueyRun | str:
    """huey's enqueue + consume of ``count`` no-op tasks, or why it could not run."""
    try:
        huey_module = importlib.import_module("huey")
    except ImportError:
        return "huey is not installed (pip install -e '.[bench]')"
    path = directory / "huey.db"
    huey = huey_module.SqliteHuey("bench", filename=str(path), fsync=True, journal_mode="wal")
    executed = [0]

    def noop() -> None:
        executed[0] += 1

    task = huey.task(name="noop")(noop)
    conn = huey.storage.conn
    pragmas = {
        "journal_mode": str(conn.execute("PRAGMA journal_mode").fetchone()[0]),
        "synchronous": str(conn.execute("PRAGMA synchronous").fetchone()[0]),
    }

    def consume() -> int:
        done = 0
        while (found := huey.dequeue()) is not None:
            huey.execute(found)
            done += 1
        return done

    log(f"huey: enqueue + consume of {count:,} no-op tasks ...")
    for _ in range(HUEY_WARMUP):
        task()
    warm = consume()
    t0 = time.perf_counter()
    for _ in range(count):
        task()
    t1 = time.perf_counter()
    consumed = consume()
    t2 = time.perf_counter()
    left = int(huey.storage.queue_size())
    huey.storage.close()
    run = HueyRun(count, t1 - t0, t2 - t1, pragmas)
    if warm != HUEY_WARMUP or consumed != count or executed[0] != count + warm or left:
        run.problems.append(
            f"huey: consumed {consumed} (+{warm} warm-up), executed {executed[0]}, {left} left"
        )
    if pragmas != {"journal_mode": "wal", "synchronous": "2"}:
        run.problems.append(f"huey: connection not in WAL + synchronous=FULL: {pragmas}")
    log(f"  {run.per_second:,.0f} tasks/s ({run.seconds:.2f} s)")
    return run


# --------------------------------------------------------------------------- output


@dataclass(frozen=True)
class Verdict:
    name: str
    target: str
    measured: float | None
    minimum: float
    unit: str

    @property
    def met(self) -> bool | None:
        return None if self.measured is None else self.measured >= self.minimum

    def measured_text(self) -> str:
        if self.measured is None:
            return "-"
        return f"{self.measured:.0%}" if self.unit == "%" else f"{self.measured:.2f}x"

    def verdict_text(self) -> str:
        return {None: "n/a", True: "ok", False: "MISS"}[self.met]


@dataclass
class Results:
    sizes: Sizes
    build_s: float
    kalends: list[KalendsRun]
    huey: HueyRun | str
    bare: list[BareRun]
    postgres_settings: dict[str, str]
    postgres_skipped: str | None
    postgres_build_s: list[float]
    load_before: tuple[float, float, float]
    rounds: int
    elapsed_s: float = 0.0
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def runs(self, backend: str, workers: int) -> list[KalendsRun]:
        return [r for r in self.kalends if r.backend == backend and r.workers == workers]

    def run(self, backend: str, workers: int) -> KalendsRun | None:
        """The best round of this configuration."""
        return max(self.runs(backend, workers), key=lambda r: r.per_second, default=None)

    def bare_runs(self, batch: int) -> list[BareRun]:
        return [b for b in self.bare if b.batch == batch]

    def bare_run(self, batch: int) -> BareRun | None:
        """The best round of the bare loop with claims of ``batch``."""
        return max(self.bare_runs(batch), key=lambda b: b.per_second, default=None)

    def best(self) -> list[KalendsRun | HueyRun | BareRun]:
        """The best round of each configuration, in table order."""
        out: list[KalendsRun | HueyRun | BareRun] = []
        for backend in ("sqlite", "postgresql"):
            out += [r for n in WORKER_COUNTS if (r := self.run(backend, n)) is not None]
        if isinstance(self.huey, HueyRun):
            out.append(self.huey)
        out += [b for n in (self.sizes.batch, 1) if (b := self.bare_run(n)) is not None]
        return out

    @property
    def problems(self) -> list[str]:
        out = [p for r in self.kalends for p in r.problems]
        out += [p for b in self.bare for p in b.problems]
        if isinstance(self.huey, HueyRun):
            out += self.huey.problems
        return out

    def ratios(self) -> dict[str, float | None]:
        def ratio(a: float | None, b: float | None) -> float | None:
            return a / b if a is not None and b else None

        def rate(run: KalendsRun | BareRun | HueyRun | None) -> float | None:
            return run.per_second if run is not None else None

        huey = rate(self.huey) if isinstance(self.huey, HueyRun) else None
        one, four = rate(self.run("sqlite", 1)), rate(self.run("sqlite", 4))
        batched, single = rate(self.bare_run(self.sizes.batch)), rate(self.bare_run(1))
        pg_one, pg_four = rate(self.run("postgresql", 1)), rate(self.run("postgresql", 4))
        return {
            "sqlite_1w_vs_huey": ratio(one, huey),
            "sqlite_4w_vs_huey": ratio(four, huey),
            "sqlite_1w_vs_bare_batched": ratio(one, batched),
            "sqlite_4w_vs_bare_batched": ratio(four, batched),
            "sqlite_1w_vs_bare_single_row": ratio(one, single),
            "bare_batched_vs_single_row": ratio(batched, single),
            "sqlite_four_vs_one": ratio(four, one),
            "postgresql_four_vs_one": ratio(pg_four, pg_one),
            "postgresql_1w_vs_sqlite_1w": ratio(pg_one, one),
        }

    def verdicts(self) -> list[Verdict]:
        r = self.ratios()
        return [
            Verdict(
                "SQLite: kalends (1 worker) vs huey end-to-end",
                f">= {TARGET_VS_HUEY:g}x",
                r["sqlite_1w_vs_huey"],
                TARGET_VS_HUEY,
                "x",
            ),
            Verdict(
                f"SQLite: kalends (1 worker) vs bare sqlite3, {self.sizes.batch} per transaction",
                f">= {TARGET_VS_BARE:.0%}",
                r["sqlite_1w_vs_bare_batched"],
                TARGET_VS_BARE,
                "%",
            ),
            Verdict(
                "PostgreSQL: kalends 4 workers vs 1 worker",
                f">= {TARGET_FOUR_VS_ONE:g}x",
                r["postgresql_four_vs_one"],
                TARGET_FOUR_VS_ONE,
                "x",
            ),
        ]


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("kalends", "SQLAlchemy", "psycopg", "huey"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "?"
    out["platform"] = platform.platform()
    return out


def _us(cores: float, run: KalendsRun) -> str:
    """Cores busy over a run as CPU microseconds per intent."""
    return f"{_per(cores, run.per_second) * 1e6:.0f} us/intent"


def _rate(value: float) -> str:
    return f"{value:,.0f}"


def print_table(res: Results) -> None:
    v = _versions()
    pg = res.postgres_settings
    server = f", PostgreSQL {pg['server_version']}" if pg else ""
    print(
        f"kalends {v['kalends']}, SQLAlchemy {v['SQLAlchemy']}, psycopg {v['psycopg']},"
        f" huey {v['huey']}, SQLite {v['sqlite']}{server}, Python {v['python']}, {v['platform']}"
    )
    sizes = res.sizes
    print(
        f"{sizes.intents:,} due reminder intents on {sizes.tasks:,} tasks ({PER_TASK} each,"
        f" e-mail and push), one recipient, no-op transport; kalends claims as the worker"
        f" does (first {FIRST_BATCH}, then up to {WORKER_BATCH} as its pace allows),"
        f" bare sqlite3 {sizes.batch} at a time;"
        f" fixture built with Core bulk inserts in {res.build_s:.1f} s."
    )
    print(
        "SQLite: temporary file, WAL, synchronous=FULL (kalends, bare and huey alike)."
        + (
            f" PostgreSQL: private schema, fsync={pg['fsync']},"
            f" synchronous_commit={pg['synchronous_commit']},"
            f" wal_sync_method={pg['wal_sync_method']}."
            if pg
            else f" PostgreSQL skipped: {res.postgres_skipped}."
        )
    )
    header = (
        "system",
        "backend",
        "workers",
        "items",
        "seconds",
        "items/s",
        "per item us",
        "every round, items/s",
        "notes",
    )
    body: list[tuple[str, ...]] = []
    for run in res.best():
        if isinstance(run, KalendsRun):
            first = run.per_worker[0] if run.per_worker else {}
            system = "kalends DeliveryWorker.drain (claim, check, send, ack)"
            backend, workers, items = run.backend, run.workers, run.intents
            rounds = [r.per_second for r in res.runs(run.backend, run.workers)]
            notes = (
                f"{first.get('statements_per_batch', '?')} statements,"
                f" {first.get('commits_per_batch', '?')} transactions per batch"
            )
        elif isinstance(run, HueyRun):
            system, backend, workers, items = (
                "huey SqliteHuey enqueue + consume",
                "sqlite",
                1,
                run.tasks,
            )
            rounds = [run.per_second]
            notes = (
                f"enqueue {_rate(_per(run.tasks, run.enqueue_s))}/s ({run.enqueue_s:.2f} s),"
                f" consume {_rate(_per(run.tasks, run.consume_s))}/s ({run.consume_s:.2f} s)"
            )
        else:
            system = f"bare sqlite3 claim + ack, {run.batch} per transaction"
            backend, workers, items = "sqlite", 1, run.intents
            rounds = [b.per_second for b in res.bare_runs(run.batch)]
            notes = f"{run.transactions:,} transactions"
        body.append(
            (
                system,
                "SQLite" if backend == "sqlite" else "PostgreSQL",
                str(workers),
                f"{items:,}",
                f"{run.seconds:.2f}",
                _rate(run.per_second),
                f"{_per(1e6, run.per_second):.0f}",
                ", ".join(_rate(r) for r in rounds),
                notes,
            )
        )
    print()
    print("\n".join(grid(header, body, {2, 3, 4, 5, 6})))
    print(
        f"best of {res.rounds} round(s) for kalends and the bare batched loop (rounds"
        " interleaved); huey and the bare single-row loop run once"
    )
    if isinstance(res.huey, str):
        print(f"huey skipped: {res.huey}")
    print()
    print("kalends runs, CPU: cores kept busy on average over the run, and CPU time per intent")
    for k in res.kalends:
        line = f"  round {k.round}, {'SQLite' if k.backend == 'sqlite' else 'PostgreSQL'},"
        line += f" {k.workers} worker(s): workers {k.worker_cpu:.2f} ({_us(k.worker_cpu, k)})"
        if k.server_cpu is not None:
            line += f", their server backends {k.server_cpu:.2f} ({_us(k.server_cpu, k)})"
        if k.machine_busy is not None:
            line += f"; the whole machine {k.machine_busy:.0%} busy"
        if k.workers > 1:
            line += "; delivered per worker " + "/".join(
                f"{w['delivered']:,}" for w in k.per_worker
            )
        print(line)
    print()
    labels = {
        "sqlite_1w_vs_huey": "kalends SQLite 1 worker / huey end-to-end",
        "sqlite_4w_vs_huey": "kalends SQLite 4 workers / huey end-to-end",
        "sqlite_1w_vs_bare_batched": f"kalends SQLite 1 worker / bare batched ({sizes.batch})",
        "sqlite_4w_vs_bare_batched": f"kalends SQLite 4 workers / bare batched ({sizes.batch})",
        "sqlite_1w_vs_bare_single_row": "kalends SQLite 1 worker / bare single-row",
        "bare_batched_vs_single_row": "bare batched / bare single-row",
        "sqlite_four_vs_one": "kalends SQLite 4 workers / 1 worker",
        "postgresql_four_vs_one": "kalends PostgreSQL 4 workers / 1 worker",
        "postgresql_1w_vs_sqlite_1w": "kalends PostgreSQL 1 worker / SQLite 1 worker",
    }
    width = max(len(t) for t in labels.values())
    print("ratios:")
    for key, value in res.ratios().items():
        shown = "-" if value is None else f"{value:.2f}x"
        if value is not None and "_vs_bare_batched" in key:
            shown = f"{value:.0%}"
        print(f"  {labels[key].ljust(width)}  {shown}")
    print()
    rows = [(v.name, v.target, v.measured_text(), v.verdict_text()) for v in res.verdicts()]
    print("\n".join(grid(("target", "wanted", "measured", "verdict"), rows, {2})))
    print()
    problems = res.problems
    print(
        "every intent delivered exactly once in every run (delivered, attempts = 1, one send)"
        if not problems
        else "VERIFICATION FAILED:"
    )
    for p in problems:
        print(f"  {p}")
    before, after = res.load_before, res.load_after
    print(
        f"total wall time {res.elapsed_s:.1f}s; load average (1, 5, 15 min) at the start"
        f" {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, at the end"
        f" {after[0]:.2f} {after[1]:.2f} {after[2]:.2f} on {os.cpu_count()} CPUs"
    )


def to_json(res: Results) -> str:
    doc: dict[str, Any] = {
        "versions": _versions(),
        "fixture": {
            "intents": res.sizes.intents,
            "tasks": res.sizes.tasks,
            "intents_per_task": PER_TASK,
            "warmup_intents": res.sizes.warmup,
            "huey_tasks": res.sizes.huey,
            "single_row_intents": res.sizes.single_row,
            "batch": res.sizes.batch,
            "now": NOW.isoformat(),
            "build_s": round(res.build_s, 3),
            "sqlite": "WAL, synchronous=FULL",
        },
        "postgresql": {
            "settings": res.postgres_settings,
            "skipped": res.postgres_skipped,
            "build_s": [round(b, 3) for b in res.postgres_build_s],
        },
        "rounds": res.rounds,
        "best": [
            {
                k: doc[k]
                for k in ("system", "backend", "workers", "batch", "round", "per_second")
                if k in doc
            }
            for doc in (run.to_json() for run in res.best())
        ],
        "kalends": [k.to_json() for k in res.kalends],
        "huey": res.huey.to_json() if isinstance(res.huey, HueyRun) else {"skipped": res.huey},
        "bare_sqlite3": [b.to_json() for b in res.bare],
        "ratios": {k: None if v is None else round(v, 4) for k, v in res.ratios().items()},
        "targets": [
            {
                "name": v.name,
                "wanted": v.target,
                "measured": None if v.measured is None else round(v.measured, 4),
                "met": v.met,
            }
            for v in res.verdicts()
        ],
        "verified": not res.problems,
        "problems": res.problems,
        "elapsed_s": round(res.elapsed_s, 3),
        "load_average": {"start": res.load_before, "end": res.load_after, "cpus": os.cpu_count()},
    }
    return json.dumps(doc, indent=2)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smaller run: {QUICK.intents:,} intents, {QUICK.huey:,} huey tasks,"
        f" {QUICK.single_row:,} single-row bare claims",
    )
    parser.add_argument(
        "--intents", type=positive, help=f"due intents per run (default {DEFAULT.intents:,})"
    )
    parser.add_argument(
        "--huey",
        type=positive,
        help=f"no-op tasks through huey (default {DEFAULT.huey:,}, or --intents)",
    )
    parser.add_argument(
        "--single-row",
        type=positive,
        help="intents the bare single-row loop claims and acknowledges one by one"
        f" (default {DEFAULT.single_row:,})",
    )
    parser.add_argument(
        "--postgres",
        default=DEFAULT_POSTGRES,
        help=f"PostgreSQL server to use when it answers (default {DEFAULT_POSTGRES})",
    )
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--rounds",
        type=positive,
        default=2,
        help="rounds of the kalends runs and the bare batched loop, interleaved; the best"
        " round of each counts (default 2)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="write a cProfile file per worker process and run into DIR (slows the runs)",
    )
    args = parser.parse_args(argv)
    base = QUICK if args.quick else DEFAULT
    intents = args.intents or base.intents
    sizes = Sizes(
        intents=intents,
        huey=args.huey or (base.huey if args.intents is None else intents),
        single_row=args.single_row or min(base.single_row, intents),
    )
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kalends-bench-outbox-") as tmp:
        directory = Path(tmp)
        pristine = directory / "pristine.db"
        log(
            f"building {sizes.intents:,} + {sizes.warmup} warm-up intents on"
            f" {sizes.tasks:,} tasks (SQLite) ..."
        )
        started = time.perf_counter()
        store = open_store(create_engine_for(sqlite_url(pristine)), FakeClock(BUILT_AT))
        try:
            build_fixture(store, sizes)
            dialect = store.engine.dialect
        finally:
            store.close()
        build_s = time.perf_counter() - started
        log(f"  built in {build_s:.1f} s")

        settings: dict[str, str] = {}
        skipped: str | None = "--no-postgres"
        url = normalize_database_url(args.postgres)
        if not args.no_postgres:
            settings, skipped = probe_postgres(url)
            if skipped is not None:
                log(f"PostgreSQL skipped: {skipped}")
        kalends: list[KalendsRun] = []
        bare: list[BareRun] = []
        pg_build: list[float] = []
        for r in range(1, args.rounds + 1):
            log(f"round {r} of {args.rounds}")
            for n in WORKER_COUNTS:
                kalends.append(kalends_sqlite(pristine, directory, n, sizes, args.profile, r))
            bare.append(bare_sqlite(pristine, directory, dialect, sizes.batch, sizes, r))
            if skipped is None:
                for n in WORKER_COUNTS:
                    run, built = kalends_postgres(url, n, sizes, args.profile, r)
                    kalends.append(run)
                    pg_build.append(built)
        huey = bench_huey(directory, sizes.huey)
        bare.append(bare_sqlite(pristine, directory, dialect, 1, sizes, 1))

    res = Results(
        sizes, build_s, kalends, huey, bare, settings, skipped, pg_build, load_before, args.rounds
    )
    res.elapsed_s = time.perf_counter() - t0
    res.load_after = os.getloadavg()
    if args.json:
        print(to_json(res))
    else:
        print_table(res)
    return 1 if res.problems else 0


if __name__ == "__main__":
    sys.exit(main())
