"""Scheduler scale benchmark: many running schedules all due at one slot, drained by 1, 2
and 4 scheduler processes on PostgreSQL and by 1 and 2 on SQLite, with the CPU of each
admission split between the schedulers and the database server, lock waits, a SIGKILL
mid-burst that must lose nothing and admit nothing twice, a projection for N machines,
and APScheduler 3 and 4 on SQLite beside it.

The fixture: ``--schedules`` (default 100,000; 10,000 with ``--quick``) running schedules
on PostgreSQL, in a database of their own (``kalends_scale`` on the server the tests use:
``KALENDS_TEST_DATABASE_URL``, else 127.0.0.1:5432 as ``postgres`` or this user), and
``--sqlite-schedules`` (10,000; 3,000) on a SQLite file (WAL, ``synchronous=NORMAL``).
One actor, workspaces of 64 schedules (temporary directories). The first
``--through-services`` schedules (default 2,048: 32 workspaces; 0: all) are built through
the services, each created (``ScheduleService.create``) and Played, on a clock standing
at START = 2026-03-02T09:00Z, in ``--build-processes`` processes (default 2 on
PostgreSQL, 1 on SQLite); the rest are copies of those, workspace by workspace, written
set-based through SQLAlchemy Core into every table a create and a Play write (the
workspace, its member, its task list and the list's member, the schedule documents,
their control records and wakes) with new IDs (UUIDv7 at START) and a new directory each,
the documents as they are (they hold no ID); through the services it takes 15-30 ms a
schedule on this machine, so 100,000 would take most of an hour. Progress is printed every
10 s. The configurations are
``bench/missions.py``'s (a profile, a checklist template every 4th, end bounds every
3rd/5th/7th) with its condition dropped, ``restart: resume`` (a scheduler that takes a
schedule over goes on with it) and one of ``bench/scheduler.py``'s six burst rules in
turn, each of whose next slot is SLOT = START + 30 min: all N are due at that one slot.
Then every wake is set as a scheduler's look leaves it (due at SLOT, that slot computed
under this zone data) and free, in one statement, and on PostgreSQL the tables written
get ``VACUUM ANALYZE``; the others (``tasks`` among them) are left as a new database has
them, never analyzed: analyzed while empty, ``tasks`` makes the planner check each new
checklist task's parent (its foreign key) by a sequential scan of the table, which in a
run of 5,000 due nearly tripled the database server's CPU. Each PostgreSQL run starts from a
copy (``CREATE DATABASE kalends_scale_run TEMPLATE kalends_scale``), each SQLite run
from a copy of the file; both are dropped at the end.

A run: ``k`` scheduler processes (``multiprocessing`` spawn), each ``open_store`` on the
database, ``Scheduler(store, runtime, owner=...)`` with a ``MemoryRuntime(instant=False)``
(a start is recorded and its passage stays running: each admission is a reservation, a
start and an admission write) wrapped to record when each start was asked, the waker
``kalends worker`` opens, in a thread, as ``bench/scheduler.py`` runs it, the garbage
collector set as ``kalends worker`` sets it (``kalends.collector.tune_collector``). Once all are up,
this process fixes the real instant at which SLOT falls (``--lead`` seconds later,
default 10 s + 1 s per 2,500 schedules) and every process sets its clock to it: one shifted
clock, flowing at the real rate, the same in every process. Before the slot the
schedulers claim the free wakes between them (rounds of 500, ``SKIP LOCKED``); this
process checks that none is left free at the slot. At SLOT all N are due together. The
delay of each admission is measured as ``bench/scheduler.py`` measures it: from SLOT to the
end of the first write transaction of that process's engine that committed after the
runtime was asked to start the passage. Rate = admissions / (last admission - SLOT).
CPU: each scheduler process's ``time.process_time`` from SLOT until the last admission
of the run (the machine's is shared: the run ends when the admissions counted by all
processes reach N), and of it the time the scheduler's thread spent in the cyclic garbage
collector (timed by a ``gc`` callback) with the number of its full collections; the
database server's from ``/proc/PID/stat`` of its processes (it
runs on this machine), as ``bench/outbox.py`` reads a backend's, sampled every 0.25 s
from ``pg_stat_activity`` over a connection to another database: the client backends
of the run's database, and the server's background processes (checkpointer, WAL
writer, background writer, autovacuum: shared with other databases of the server,
counted in full). Lock waits: the backend-samples of the run's database whose
``wait_event_type`` is ``Lock`` (x 0.25 s is an estimate of the time spent waiting),
and the most at once; kalends' own warnings (a round retried after a database error, a
failed look) are counted too. Checked, every run: every schedule admitted once (the
processes' admissions, no duplicate and none missing), no schedule started by two
processes, and the slot ledger holds exactly one ``launched`` row for SLOT per schedule,
each with a passage of its own.

The SIGKILL phase (``--no-kill`` skips it): the PostgreSQL fixture again, 2 schedulers
with a runtime whose passages outlive the process that started them (as the process
runtime's do: a start creates a file per session, exclusively, and every start call is
journaled to a file); when a third of the slots are admitted, the second process gets
SIGKILL. The first takes its wakes over once their lease ran out (60 s) and finishes.
Counted, once every schedule's document shows its passage admitted: each schedule's
document holds one pending passage for SLOT, admitted; the ledger one ``launched`` row for
each; one session launched per schedule (none twice, none missing), every document's
session among those launched. PASS or FAIL.

Peers, on SQLite at ``--sqlite-schedules`` jobs, with ``bench/scheduler.py``'s runners:
APScheduler 3 (``SQLAlchemyJobStore``, WAL + NORMAL, ``ThreadPoolExecutor(10)``) and
APScheduler 4.0.0a6 (``SQLAlchemyDataStore``, WAL + NORMAL, in ``.venv-aps4``), all jobs
due at once. Due processed per CPU-second = due / (CPU of the process; for kalends on
PostgreSQL, the schedulers' and the server's).

The projection for N machines (printed with its formula and inputs): scheduler machines of
``--cores`` cores each (default 2) and one database server of ``--db-cores`` cores (2),
CPU-bound, no other limit: rate(N) = min(N x cores / s, db_cores / d), where s and d are
the CPU seconds per admission of the schedulers and of the server measured in the run with
the most processes; p99(N) = w + 0.99 x due / rate(N), w the measured delay of the first
admission (admissions spread evenly over the drain).

Targets (issue 25): on SQLite at least 10x APScheduler 3 (WAL + NORMAL) in
due processed per CPU-second and at least 3x in wall-clock rate (the 1-scheduler run);
on PostgreSQL 100,000 slots admitted with p99 under 30 s by 4 schedulers on this machine,
and the projection for 4 machines of 2 cores under 5 s; the SIGKILL phase's count. Each
is printed with PASS or FAIL; the exit status is 1 when one is missed or a check fails.
``--quick`` judges the same targets on its smaller sizes.

Run from the repository root: ``python bench/scale.py [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import json
import logging
import multiprocessing
import os
import queue
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))

from sqlalchemy import func, select, text  # noqa: E402

from bench.common import grid, log, positive  # noqa: E402
from bench.outbox import CpuBusy  # noqa: E402
from bench.scale_support import (  # noqa: E402
    Projection,
    ServerSampler,
    SettableClock,
    SharedRuntime,
    WarningCount,
    build_fixture,
    create_database,
    drop_database,
    ledger_counts,
    ledger_gaps,
    pg_admin_url,
    project,
    read_journals,
    schedule_ids,
    url_with_database,
)
from bench.scheduler import (  # noqa: E402
    APS4_CHILD,
    APS4_WINDOW_S,
    SLOT,
    ApsJob,
    Commits,
    Rounds,
    TimedRuntime,
    _pct,
    aps4_python,
    aps_main,
    check_policies,
    populate_aps,
    run_aps4,
    run_child,
    thread_cpu,
)
from kalends.collector import tune_collector  # noqa: E402
from kalends.missions.passages import scheduled_identity  # noqa: E402
from kalends.missions.runtime.memory import MemoryRuntime  # noqa: E402
from kalends.missions.scheduler import LookResult, Scheduler  # noqa: E402
from kalends.missions.scheduler_rows import read_schedules  # noqa: E402
from kalends.missions.wakes import MISSIONS_CHANNEL, WAKE_LEASE  # noqa: E402
from kalends.storage.engine import create_engine_for  # noqa: E402
from kalends.storage.migrate import open_store  # noqa: E402
from kalends.storage.mission_tables import schedule_wakes  # noqa: E402
from kalends.storage.wake import open_waker  # noqa: E402

TEMPLATE_DB = "kalends_scale"
RUN_DB = "kalends_scale_run"
READY_TIMEOUT_S = 180.0
THROUGH_SERVICES = 2_048  # 32 workspaces of 64
KILL_SHARE = 3  # the SIGKILL lands when a third of the slots are admitted

TARGET_CPU_RATIO = 10.0
TARGET_WALL_RATIO = 3.0
TARGET_PG_P99_S = 30.0
TARGET_PROJECTED_P99_S = 5.0
TARGET_MACHINES = 4


@dataclass(frozen=True)
class Sizes:
    schedules: int
    sqlite_schedules: int


DEFAULT = Sizes(schedules=100_000, sqlite_schedules=10_000)
QUICK = Sizes(schedules=10_000, sqlite_schedules=3_000)


# --------------------------------------------------------------------------- scheduler child


@dataclass(frozen=True)
class SchedJob:
    url: str
    index: int
    shared_dir: str | None
    """A :class:`SharedRuntime` in this directory (the SIGKILL phase), else the memory one."""
    profile: str | None


@dataclass(frozen=True)
class Control:
    """What the scheduler processes and this one share."""

    ready: Any
    results: Any
    slot_at: Any
    """The real instant (``time.time()``) at which SLOT falls."""
    flags: Any
    """GO, DONE, STOP: set by this process, polled by the schedulers (a multiprocessing
    ``Event`` would hang its setter once a waiting process is killed)."""
    admitted: Any
    """Each scheduler's admissions so far, one slot each, no lock (one may be killed)."""


GO, DONE, STOP = 0, 1, 2


def wait_flag(flags: Any, which: int, poll: float = 0.02) -> None:
    while not flags[which]:
        time.sleep(poll)


def scheduler_main(job: SchedJob, ctl: Control) -> None:
    """One scheduler process: claim before the slot, admit at it, report."""
    out: dict[str, Any] = {"index": job.index, "pid": os.getpid(), "problems": []}
    problems: list[str] = out["problems"]
    try:
        warnings = WarningCount()
        logging.getLogger("kalends").addHandler(warnings)
        clock = SettableClock(0.0)
        store = open_store(job.url, clock)
        inner = (
            SharedRuntime(Path(job.shared_dir), clock)
            if job.shared_dir
            else MemoryRuntime(clock=clock, instant=False)
        )
        runtime = TimedRuntime(inner, clock)
        commits = Commits(store.engine, clock)
        scheduler = Scheduler(store, runtime, owner=f"scale-{job.index}")
        rounds = Rounds()
        stop = threading.Event()
        tid: list[int] = []
        failure: list[str] = []
        waker = open_waker(store.engine, MISSIONS_CHANNEL)
        profiler = cProfile.Profile() if job.profile else None
        tune_collector()  # as kalends.cli.loops.start_scheduler does before its thread
        collector = CollectorMeter()
        gc.callbacks.append(collector.callback)

        def on_round(result: LookResult) -> None:
            rounds.on_round(result)
            if result.admitted:
                ctl.admitted[job.index] += result.admitted

        def target() -> None:
            tid.append(threading.get_native_id())
            if profiler is not None:
                profiler.enable()
            try:
                scheduler.run(stop, wait=waker.wait, on_round=on_round)
            except BaseException:
                failure.append(traceback.format_exc())
            finally:
                if profiler is not None:
                    profiler.disable()
                waker.close()

        thread = threading.Thread(target=target, name="scale-scheduler", daemon=True)
        ctl.ready.put(os.getpid())
        wait_flag(ctl.flags, GO)
        slot_real = float(ctl.slot_at.value)
        clock.set_slot_at(slot_real)
        t_go = time.time()
        thread.start()
        time.sleep(max(0.0, slot_real - time.time()))
        claim_rounds = rounds.since(0)
        out["claimed_before_slot"] = sum(r.claimed for r in claim_rounds)
        out["rounds_before_slot"] = len(claim_rounds)
        out["admitted_before_slot"] = sum(r.admitted for r in claim_rounds)
        out["go_to_slot_s"] = slot_real - t_go
        first = len(rounds.results)
        cpu0 = time.process_time()
        th0 = thread_cpu(tid[0]) if tid else 0.0
        collector.start(tid[0] if tid else None)
        wait_flag(ctl.flags, DONE)
        out["cpu_s"] = time.process_time() - cpu0
        out["collector"] = collector.stop()
        out["thread_cpu_s"] = (thread_cpu(tid[0]) - th0) if tid else 0.0
        wait_flag(ctl.flags, STOP)
        stop.set()
        thread.join(timeout=120)
        if failure:
            raise RuntimeError(failure[0])
        burst = rounds.since(first)
        admissions = [a for r in burst for a in r.admissions]
        started_at = dict(runtime.started.values())
        delays: list[float] = []
        admitted_ids: list[str] = []
        for sid, slot, _at in admissions:
            if slot != SLOT:
                problems.append(f"an admission at {slot}, not at the slot")
            schedule = str(sid)
            admitted_ids.append(schedule)
            start_at = started_at.get(schedule)
            if start_at is None:  # started by a process killed since, found by a look here
                start_at = runtime.found.get(scheduled_identity(schedule, SLOT)[1])
            done_at = None if start_at is None else commits.first_after(start_at)
            if start_at is None or done_at is None:
                problems.append(f"no start or no commit after it for {schedule}")
                continue
            delays.append((done_at - SLOT).total_seconds())
        out.update(
            {
                "claimed": sum(r.claimed for r in rounds.since(0)),
                "rounds": len(burst),
                "errors": sum(r.errors for r in burst),
                "reserved": sum(r.reserved for r in burst),
                "admitted_ids": admitted_ids,
                "delays_s": delays,
                "started": sorted(started_at),
                "warnings": dict(warnings.counts),
            }
        )
        store.close()
        if profiler is not None and job.profile:
            profiler.dump_stats(job.profile)
    except BaseException:
        out["error"] = traceback.format_exc()
    ctl.results.put(out)


class CollectorMeter:
    """The CPU the scheduler's thread spends in the cyclic garbage collector between
    :meth:`start` and :meth:`stop`, and its collections by generation (a ``gc`` callback)."""

    def __init__(self) -> None:
        self.thread: int | None = None
        self.began = 0.0
        self.cpu_s = 0.0
        self.collections = [0, 0, 0]
        self.on = False

    def start(self, thread: int | None) -> None:
        self.thread, self.on = thread, True

    def stop(self) -> dict[str, Any]:
        self.on = False
        return {"cpu_s": self.cpu_s, "collections": list(self.collections)}

    def callback(self, phase: str, info: dict[str, int]) -> None:
        if not self.on or threading.get_native_id() != self.thread:
            return
        if phase == "start":
            self.began = time.thread_time()
            return
        self.cpu_s += time.thread_time() - self.began
        self.collections[info["generation"]] += 1


# --------------------------------------------------------------------------- a run


@dataclass
class Run:
    backend: str
    processes: int
    due: int
    kill: bool = False
    outs: list[dict[str, Any]] = field(default_factory=list)
    server: dict[str, Any] | None = None
    busy: float | None = None
    drain_s: float = 0.0
    claimed_free_at_slot: int | None = None
    claim_s: float | None = None
    killed: dict[str, Any] | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def delays(self) -> list[float]:
        return [d for o in self.outs for d in o.get("delays_s", [])]

    @property
    def admitted(self) -> int:
        return len(self.delays)

    @property
    def rate(self) -> float | None:
        d = self.delays
        return len(d) / max(d) if d and max(d) > 0 else None

    @property
    def sched_cpu(self) -> float:
        return sum(float(o.get("cpu_s", 0.0)) for o in self.outs)

    @property
    def db_cpu(self) -> float:
        if self.server is None:
            return 0.0
        return float(self.server["backend_cpu_s"] + self.server["background_cpu_s"])

    def per_cpu_second(self) -> float | None:
        cpu = self.sched_cpu + self.db_cpu
        return self.admitted / cpu if cpu > 0 and self.admitted else None

    @property
    def label(self) -> str:
        name = "PostgreSQL" if self.backend == "postgresql" else "SQLite"
        return f"{name}, {self.processes} sched." + (" + SIGKILL" if self.kill else "")


def _free_wakes(url: str) -> int:
    engine = create_engine_for(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(schedule_wakes.c.owner.is_(None))
                ).scalar_one()
            )
    finally:
        engine.dispose()


def _admitted_in_db(url: str) -> int:
    """Schedules whose document shows its passage admitted (PostgreSQL)."""
    engine = create_engine_for(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text(
                        "SELECT count(*) FROM schedules"
                        " WHERE (body::jsonb #>> '{pending,admitted}') = 'true'"
                    )
                ).scalar_one()
            )
    finally:
        engine.dispose()


def drain(
    url: str,
    backend: str,
    processes: int,
    expected: Sequence[str],
    lead_s: float,
    *,
    admin_url: str | None = None,
    database: str | None = None,
    shared_dir: Path | None = None,
    profile_dir: Path | None = None,
) -> Run:
    """``processes`` schedulers on the prepared database; SIGKILL to the last one after a
    third of the admissions when ``shared_dir`` is given."""
    due = len(expected)
    kill = shared_dir is not None
    run = Run(backend=backend, processes=processes, due=due, kill=kill)
    ctx = multiprocessing.get_context("spawn")
    ctl = Control(
        ready=ctx.Queue(),
        results=ctx.Queue(),
        slot_at=ctx.Value("d", 0.0),
        flags=ctx.Array("b", 3, lock=False),
        admitted=ctx.Array("q", processes, lock=False),
    )
    jobs = [
        SchedJob(
            url=url,
            index=i,
            shared_dir=str(shared_dir) if shared_dir else None,
            profile=(
                str(profile_dir / f"{backend}-{processes}-{i}{'-kill' if kill else ''}.prof")
                if profile_dir
                else None
            ),
        )
        for i in range(processes)
    ]
    procs = [
        ctx.Process(target=scheduler_main, args=(job, ctl), name=f"scale-scheduler-{job.index}")
        for job in jobs
    ]
    sampler: ServerSampler | None = None
    try:
        for p in procs:
            p.start()
        for _ in procs:
            ctl.ready.get(timeout=READY_TIMEOUT_S)
        if admin_url and database:
            sampler = ServerSampler(admin_url, database)
        slot_real = time.time() + lead_s
        ctl.slot_at.value = slot_real
        ctl.flags[GO] = 1
        log(f"  {run.label}: {processes} process(es) up; the slot in {lead_s:.0f} s ...")
        t_go = time.time()
        while time.time() < slot_real - 1.0:
            free = _free_wakes(url)
            if free == 0:
                run.claim_s = time.time() - t_go
                break
            time.sleep(0.5)
        run.claimed_free_at_slot = _free_wakes(url) if run.claim_s is None else 0
        if run.claimed_free_at_slot:
            run.problems.append(f"{run.claimed_free_at_slot:,} wakes still free at the slot")
        time.sleep(max(0.0, slot_real - time.time()))
        if sampler is not None:
            sampler.mark()
        busy = CpuBusy()
        busy.start()
        timeout = 600.0 + due / 100.0
        last_log = time.time()
        killed_pid: int | None = None
        next_poll = 0.0
        while True:
            now = time.time()
            count = int(sum(ctl.admitted))
            if kill and killed_pid is None and count >= due // KILL_SHARE:
                killed_pid = procs[-1].pid
                assert killed_pid is not None
                os.kill(killed_pid, signal.SIGKILL)
                run.killed = {"pid": killed_pid, "at_s": now - slot_real, "admitted": count}
                log(f"  SIGKILL to pid {killed_pid} at {now - slot_real:.1f} s, {count:,} admitted")
            if killed_pid is None:
                if count >= due:
                    break
            elif now >= next_poll:
                next_poll = now + 2.0
                if _admitted_in_db(url) >= due:
                    break
            if now - slot_real > timeout or not any(
                p.is_alive() for p in procs if p.pid != killed_pid
            ):
                run.problems.append(f"{count:,} of {due:,} admitted when the run stopped")
                break
            if now - last_log >= 10.0:
                last_log = now
                log(f"    {count:,} of {due:,} admitted ({now - slot_real:.0f} s after the slot)")
            time.sleep(0.05)
        run.drain_s = time.time() - slot_real
        ctl.flags[DONE] = 1
        busy.stop()
        run.busy = busy.fraction()
        if sampler is not None:
            run.server = sampler.finish()
        time.sleep(0.5)
        ctl.flags[STOP] = 1
        wanted = processes - (1 if killed_pid is not None else 0)
        while len(run.outs) < wanted:
            try:
                run.outs.append(ctl.results.get(timeout=300))
            except queue.Empty:
                run.problems.append("a scheduler process sent no result")
                break
    finally:
        for flag in (GO, DONE, STOP):
            ctl.flags[flag] = 1
        if sampler is not None:
            sampler.close()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():  # pragma: no cover - a stuck process
                p.terminate()
                p.join()
    for o in run.outs:
        if "error" in o:
            run.problems.append(f"scheduler {o['index']}: {o['error']}")
        run.problems += [f"scheduler {o['index']}: {p}" for p in o.get("problems", [])]
        if o.get("admitted_before_slot"):
            run.problems.append(f"scheduler {o['index']}: admitted before the slot")
    check_run(run, url, expected)
    rate = run.rate or 0.0
    d = run.delays
    log(
        f"  {run.label}: {run.admitted:,} admitted, {rate:,.0f}/s,"
        f" p99 {_pct(d, 0.99) if d else 0:.2f} s, schedulers {run.sched_cpu:.1f} s CPU,"
        f" server {run.db_cpu:.1f} s"
    )
    return run


def check_run(run: Run, url: str, expected: Sequence[str]) -> None:
    """Every schedule admitted once, none started by two processes, one ledger row each."""
    want = set(expected)
    admitted = Counter(s for o in run.outs for s in o.get("admitted_ids", []))
    started = Counter(s for o in run.outs for s in o.get("started", []))
    twice = sum(1 for n in admitted.values() if n > 1)
    started_twice = sum(1 for n in started.values() if n > 1)
    ledger = ledger_counts(url)
    run.checks.update(
        {
            "admissions": sum(admitted.values()),
            "admitted_schedules": len(admitted),
            "admitted_twice": twice,
            "started_by_two": started_twice,
            "ledger": ledger,
        }
    )
    if not run.kill:
        missing = len(want - set(admitted))
        run.checks["missing"] = missing
        if twice or missing or set(admitted) - want:
            run.problems.append(
                f"{sum(admitted.values()):,} admissions of {len(admitted):,} schedules:"
                f" {twice} twice, {missing} missing"
            )
    if started_twice:
        run.problems.append(f"{started_twice} schedules started by two processes")
    n = len(want)
    if (ledger["launched"], ledger["schedules"], ledger["passages"], ledger["other"]) != (
        n,
        n,
        n,
        0,
    ):
        run.problems.append(f"slot ledger at the slot: {ledger}, not {n:,} launched")
        run.checks["ledger_gaps"] = ledger_gaps(url)
        run.problems += [f"  without a launched ledger row: {g}" for g in run.checks["ledger_gaps"]]


def _read(chunk: list[UUID], conn: Any) -> dict[UUID, Any]:
    return read_schedules(conn, chunk)


def check_kill(run: Run, url: str, expected: Sequence[str], shared: Path) -> None:
    """The SIGKILL phase's count: every document's passage for SLOT admitted, one session
    launched per schedule, none twice, none missing."""
    store = open_store(url, SettableClock(0.0))
    ids = [UUID(x) for x in expected]
    sessions: dict[str, str] = {}
    not_admitted = 0
    try:
        for i in range(0, len(ids), 2000):
            chunk = ids[i : i + 2000]
            rows = store.run(partial(_read, chunk), write=False)
            for sid, row in rows.items():
                doc = row.document()
                pending = None if doc is None else doc.body.pending
                if pending is None or pending.slot != SLOT or not pending.admitted:
                    not_admitted += 1
                    continue
                sessions[str(sid)] = pending.session_id
    finally:
        store.close()
    journal = read_journals(shared)
    launched = [s for s, _, how in journal if how == "new"]
    markers = {p.name for p in (shared / "sessions").iterdir() if p.suffix != ".draft"}
    per_schedule = Counter(sch for _, sch, how in journal if how == "new")
    repeated = Counter(launched)
    doc_sessions = set(sessions.values())
    counts = {
        "schedules": len(expected),
        "documents_admitted": len(sessions),
        "documents_not_admitted": not_admitted + (len(expected) - len(sessions) - not_admitted),
        "sessions_launched": len(set(launched)),
        "session_files": len(markers),
        "launched_twice": sum(1 for n in repeated.values() if n > 1),
        "schedules_with_two_sessions": sum(1 for n in per_schedule.values() if n > 1),
        "documents_without_launch": len(doc_sessions - markers),
        "launches_without_document": len(markers - doc_sessions),
        "start_calls_on_a_running_session": sum(1 for *_, how in journal if how == "existing"),
    }
    run.checks["kill"] = counts
    ok = (
        counts["documents_admitted"] == len(expected)
        and counts["sessions_launched"] == len(expected)
        and counts["session_files"] == len(expected)
        and counts["launched_twice"] == 0
        and counts["schedules_with_two_sessions"] == 0
        and counts["documents_without_launch"] == 0
        and counts["launches_without_document"] == 0
    )
    run.checks["kill_pass"] = ok and not run.problems and run.killed is not None
    if not ok:
        run.problems.append(f"SIGKILL count: {counts}")
    if run.killed is None:
        run.problems.append("SIGKILL: the process was not killed")


# --------------------------------------------------------------------------- peers


def aps_peers(directory: Path, jobs: int, skip4: bool) -> tuple[list[dict[str, Any]], str | None]:
    """APScheduler 3 and 4.0 (WAL + NORMAL) on SQLite, with ``bench/scheduler.py``'s
    runners; the results and, when 4.0 could not run, why."""
    out: list[dict[str, Any]] = []
    path = directory / "apscheduler-wal.db"
    add_s = populate_aps(path, jobs)
    a3 = run_child(aps_main, ApsJob(url=f"sqlite:///{path}", jobs=jobs, wal=True), "aps3")
    a3["add_s"] = add_s
    out.append(a3)
    if "delays_s" in a3:
        log(f"APScheduler 3, WAL+NORMAL: {a3['executed']:,} ran in {a3['seconds']:.2f} s")
    if skip4:
        return out, "--no-aps4"
    python, note = aps4_python()
    if python is None:
        log(f"APScheduler 4.0 skipped: {note}")
        return out, note
    script = directory / "aps4_child.py"
    script.write_text(APS4_CHILD)
    filled = directory / "aps4-wal.db"
    log(f"APScheduler 4: adding {jobs:,} schedules ...")
    fill = run_aps4(python, script, "fill", str(filled), str(jobs))
    if "error" in fill:
        out.append({"v4": True, "wal": True, "error": fill["error"], "problems": []})
        return out, None
    log(f"APScheduler 4 (WAL+NORMAL): {jobs:,} due, start ...")
    a4 = run_aps4(python, script, "run-wal", str(filled), str(jobs), f"{APS4_WINDOW_S:g}")
    a4.setdefault("problems", [])
    a4.update({"v4": True, "wal": True, "add_s": fill["add_s"], "versions": fill["versions"]})
    out.append(a4)
    if "delays_s" in a4:
        log(f"APScheduler 4, WAL+NORMAL: {a4['executed']:,} ran in {a4['seconds']:.2f} s")
    return out, None


def peer_rate(a: dict[str, Any]) -> float | None:
    if not a.get("delays_s") or a.get("crashed"):
        return None
    return len(a["delays_s"]) / float(a["seconds"])


def peer_per_cpu(a: dict[str, Any]) -> float | None:
    if not a.get("delays_s") or a.get("crashed") or not a.get("cpu_s"):
        return None
    return len(a["delays_s"]) / float(a["cpu_s"])


def peer_label(a: dict[str, Any]) -> str:
    return "APScheduler 4.0a6" if a.get("v4") else "APScheduler 3"


# --------------------------------------------------------------------------- report


@dataclass
class Verdict:
    label: str
    value: str
    target: str
    met: bool | None


@dataclass
class Report:
    sizes: Sizes
    args: dict[str, Any]
    fixtures: dict[str, Any] = field(default_factory=dict)
    pg: list[Run] = field(default_factory=list)
    sqlite: list[Run] = field(default_factory=list)
    kill: Run | None = None
    aps: list[dict[str, Any]] = field(default_factory=list)
    aps4_note: str | None = None
    pg_skipped: str | None = None
    projections: list[Projection] = field(default_factory=list)
    projection_run: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    elapsed_s: float = 0.0
    load: list[tuple[float, float, float]] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        out = []
        for r in [*self.pg, *self.sqlite, *([self.kill] if self.kill else [])]:
            out += [f"{r.label}: {p}" for p in r.problems]
        for a in self.aps:
            if "error" in a:
                out.append(f"{peer_label(a)}: {a['error']}")
            out += [f"{peer_label(a)}: {p}" for p in a.get("problems", [])]
        return out


def _dist(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} / {_pct(values, 0.99):.2f} / {max(values):.2f}"


def _ms(cpu: float, n: int) -> str:
    return f"{cpu:.1f} s ({cpu / n * 1e3:.2f} ms)" if n else f"{cpu:.1f} s"


def judge(rep: Report) -> None:
    one = next((r for r in rep.sqlite if r.processes == 1), None)
    a3 = next((a for a in rep.aps if not a.get("v4")), None)
    if one is not None and a3 is not None:
        ours, theirs = one.per_cpu_second(), peer_per_cpu(a3)
        if ours and theirs:
            ratio = ours / theirs
            rep.verdicts.append(
                Verdict(
                    "SQLite due/CPU-s vs APScheduler 3",
                    f"{ratio:.1f}x",
                    ">= 10x",
                    ratio >= TARGET_CPU_RATIO,
                )
            )
        ours, theirs = one.rate, peer_rate(a3)
        if ours and theirs:
            ratio = ours / theirs
            rep.verdicts.append(
                Verdict(
                    "SQLite wall rate vs APScheduler 3",
                    f"{ratio:.1f}x",
                    ">= 3x",
                    ratio >= TARGET_WALL_RATIO,
                )
            )
    a4 = next((a for a in rep.aps if a.get("v4")), None)
    if one is not None and a4 is not None:
        for label, ours, theirs in (
            ("SQLite due/CPU-s vs APScheduler 4", one.per_cpu_second(), peer_per_cpu(a4)),
            ("SQLite wall rate vs APScheduler 4", one.rate, peer_rate(a4)),
        ):
            if ours and theirs:
                rep.verdicts.append(Verdict(label, f"{ours / theirs:.1f}x", "(shown)", None))
    four = max(rep.pg, key=lambda r: r.processes, default=None)
    if four is not None and four.delays:
        p99 = _pct(four.delays, 0.99)
        rep.verdicts.append(
            Verdict(
                f"PostgreSQL p99, {four.due:,} due, {four.processes} sched.",
                f"{p99:.1f} s",
                "< 30 s",
                p99 < TARGET_PG_P99_S,
            )
        )
    target = next((p for p in rep.projections if p.machines == TARGET_MACHINES), None)
    if target is not None:
        rep.verdicts.append(
            Verdict(
                f"projected p99, {target.machines} machines x {target.cores} cores",
                f"{target.p99_s:.1f} s",
                "< 5 s",
                target.p99_s < TARGET_PROJECTED_P99_S,
            )
        )
    if rep.kill is not None:
        ok = bool(rep.kill.checks.get("kill_pass"))
        rep.verdicts.append(
            Verdict(
                "SIGKILL mid-burst: nothing lost or twice", "PASS" if ok else "FAIL", "PASS", ok
            )
        )


def make_projections(rep: Report, cores: int, db_cores: int) -> None:
    base = max(rep.pg, key=lambda r: r.processes, default=None)
    if base is None or not base.admitted:
        return
    n = base.admitted
    rep.projection_run = base.label
    for machines in (1, 2, 4, 8):
        rep.projections.append(
            project(
                machines,
                cores,
                db_cores,
                base.sched_cpu / n,
                base.db_cpu / n,
                min(base.delays),
                rep.sizes.schedules,
            )
        )


def _run_rows(runs: Sequence[Run]) -> list[list[str]]:
    def cells(fn: Callable[[Run], str]) -> list[str]:
        out = []
        for r in runs:
            try:
                out.append(fn(r))
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                out.append("-")
        return out

    def server(r: Run) -> str:
        if r.server is None:
            return "(in process)"
        s = r.server
        return f"{s['backend_cpu_s']:.1f} + {s['background_cpu_s']:.1f} s"

    def locks(r: Run) -> str:
        if r.server is None:
            return "-"
        s = r.server
        return f"{s['lock_wait_s']:.1f} s, max {s['max_waiting']}"

    def warned(r: Run) -> str:
        total: Counter[str] = Counter()
        for o in r.outs:
            total.update(o.get("warnings", {}))
        errors = sum(int(o.get("errors", 0)) for o in r.outs)
        return f"{sum(total.values())} / {errors}"

    def collector(r: Run) -> str:
        spent = sum(o["collector"]["cpu_s"] for o in r.outs)
        full = sum(o["collector"]["collections"][2] for o in r.outs)
        return f"{_ms(spent, r.admitted)}, {full}"

    def once(r: Run) -> str:
        c = r.checks
        if r.kill:
            return "PASS" if c.get("kill_pass") else "FAIL"
        ok = not c.get("admitted_twice") and not c.get("missing") and not c.get("started_by_two")
        return "ok" if ok and c.get("ledger", {}).get("launched") == r.due else "FAIL"

    return [
        ["due at the slot", *cells(lambda r: f"{r.due:,}")],
        [
            "claimed by (s after start)",
            *cells(lambda r: f"{r.claim_s:.1f} s" if r.claim_s else "-"),
        ],
        [
            "admitted per process",
            *cells(lambda r: "/".join(f"{len(o.get('admitted_ids', [])):,}" for o in r.outs)),
        ],
        ["admissions/s", *cells(lambda r: f"{r.rate or 0:,.0f}")],
        ["delay p50/p99/max s", *cells(lambda r: _dist(r.delays))],
        ["scheduler CPU (per adm.)", *cells(lambda r: _ms(r.sched_cpu, r.admitted))],
        ["  in the collector, full", *cells(collector)],
        ["server CPU backends+bg", *cells(server)],
        ["server CPU per adm.", *cells(lambda r: f"{r.db_cpu / r.admitted * 1e3:.2f} ms")],
        ["due per CPU-second", *cells(lambda r: f"{r.per_cpu_second() or 0:,.0f}")],
        ["lock waits (est.), most", *cells(locks)],
        ["warnings / failed looks", *cells(warned)],
        ["machine CPU busy", *cells(lambda r: f"{(r.busy or 0):.0%}")],
        ["once each, none lost", *cells(once)],
    ]


def print_report(rep: Report, cores: int, db_cores: int) -> None:
    plain = rep.args.get("no_checklists") == "True"
    print(
        "\nschedules: no checklist templates (--no-checklists)"
        if plain
        else "\nschedules: a checklist template of 10 tasks on every 4th"
    )
    if rep.pg:
        print()
        print(f"PostgreSQL, {rep.sizes.schedules:,} running schedules all due at one slot")
        header = ["figure", *(f"{r.processes} sched." for r in rep.pg)]
        print("\n".join(grid(header, _run_rows(rep.pg), set())))
    elif rep.pg_skipped:
        print(f"\nPostgreSQL skipped: {rep.pg_skipped}")
    if rep.sqlite or rep.aps:
        print()
        print(f"SQLite, {rep.sizes.sqlite_schedules:,} due at once")
        header = ["figure", *(f"kalends {r.processes} sch." for r in rep.sqlite)]
        rows = _run_rows(rep.sqlite)
        print("\n".join(grid(header, rows, set())))
        for a in rep.aps:
            if "error" in a:
                print(f"{peer_label(a)}: error, see below")
                continue
            if a.get("crashed"):
                print(f"{peer_label(a)} (WAL+NORMAL): crashed: {a['crashed']}")
                continue
            d = a.get("delays_s") or []
            print(
                f"{peer_label(a)} (WAL+NORMAL): {a.get('executed', 0):,} ran,"
                f" {peer_rate(a) or 0:,.0f}/s, delay p50/p99 {_dist(d)} s,"
                f" CPU {a.get('cpu_s', 0):.2f} s, {peer_per_cpu(a) or 0:,.0f} due per CPU-second"
            )
        if rep.aps4_note:
            print(f"APScheduler 4.0 skipped: {rep.aps4_note}")
    if rep.kill is not None:
        k = rep.kill
        print()
        killed = k.killed or {}
        print(
            f"SIGKILL phase (PostgreSQL, {k.due:,} due, 2 schedulers): pid {killed.get('pid')}"
            f" killed {killed.get('at_s', 0):.1f} s after the slot at {killed.get('admitted', 0):,}"
            f" admitted; all admitted {k.drain_s:.1f} s after the slot (lease"
            f" {WAKE_LEASE.total_seconds():.0f} s)"
        )
        for key, value in k.checks.get("kill", {}).items():
            print(f"  {key.replace('_', ' ')}: {value:,}")
        print(f"  count: {'PASS' if k.checks.get('kill_pass') else 'FAIL'}")
    if rep.projections:
        p0 = rep.projections[0]
        print()
        print(
            f"Projection (from {rep.projection_run}), scheduler machines of {cores} cores,"
            f" one database server of {db_cores} cores, CPU-bound, nothing else limiting:"
        )
        print("  rate(N) = min(N x cores / s, db_cores / d);  p99(N) = w + 0.99 x due / rate(N)")
        print(
            f"  s = {p0.sched_cpu * 1e3:.3f} ms scheduler CPU per admission,"
            f" d = {p0.db_cpu * 1e3:.3f} ms server CPU per admission,"
        )
        print(f"  w = {p0.wake_s:.2f} s (slot to first admission), due = {p0.due:,}")
        body = [
            [
                f"{p.machines}",
                f"{p.machines * p.cores}",
                f"{p.rate:,.0f}/s",
                p.bound,
                f"{p.p99_s:.1f} s",
            ]
            for p in rep.projections
        ]
        print("\n".join(grid(["machines", "cores", "rate", "bound by", "p99"], body, {0, 1, 2, 4})))
    print()
    body = [
        [v.label, v.value, v.target, "-" if v.met is None else ("PASS" if v.met else "FAIL")]
        for v in rep.verdicts
    ]
    print("\n".join(grid(["target", "measured", "target", "verdict"], body, {1})))
    print()
    print(
        "CPU per admission: the schedulers' process CPU and the server's (its backends of the"
        " run's database + its background processes, from /proc) from the slot to the last"
        " admission; of the schedulers', the time their threads spent in the garbage"
        " collector, and its full collections. Lock waits: backend-samples every 0.25 s"
        " waiting on a lock, x 0.25 s."
    )
    problems = rep.problems
    print("every check: ok" if not problems else "VERIFICATION FAILED:")
    for p in problems:
        print(f"  {p[:2000]}")
    loads = ", ".join(f"{a:.2f}" for a, _, _ in rep.load)
    print(
        f"total wall time {rep.elapsed_s:.0f} s; load average (1 min) at the start and end"
        f" {loads} on {os.cpu_count()} CPUs"
    )


def _summary(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "p50_s": round(statistics.median(values), 4),
        "p99_s": round(_pct(values, 0.99), 4),
        "max_s": round(max(values), 4),
        "min_s": round(min(values), 4),
    }


def _run_json(r: Run) -> dict[str, Any]:
    return {
        "label": r.label,
        "processes": r.processes,
        "due": r.due,
        "admitted": r.admitted,
        "per_second": r.rate,
        "delay": _summary(r.delays),
        "scheduler_cpu_s": r.sched_cpu,
        "server": r.server,
        "due_per_cpu_second": r.per_cpu_second(),
        "claim_s": r.claim_s,
        "drain_s": r.drain_s,
        "machine_busy": r.busy,
        "killed": r.killed,
        "checks": r.checks,
        "processes_detail": [
            {k: v for k, v in o.items() if k not in ("admitted_ids", "delays_s", "started")}
            | {"admitted": len(o.get("admitted_ids", []))}
            for o in r.outs
        ],
        "problems": r.problems,
    }


def to_json(rep: Report) -> str:
    aps = []
    for a in rep.aps:
        b = {k: v for k, v in a.items() if k != "delays_s"}
        b["per_second"] = peer_rate(a)
        b["due_per_cpu_second"] = peer_per_cpu(a)
        b["delay"] = _summary(a.get("delays_s") or [])
        aps.append(b)
    doc = {
        "sizes": {"postgresql": rep.sizes.schedules, "sqlite": rep.sizes.sqlite_schedules},
        "options": rep.args,
        "fixtures": rep.fixtures,
        "postgresql": [_run_json(r) for r in rep.pg],
        "postgresql_skipped": rep.pg_skipped,
        "sqlite": [_run_json(r) for r in rep.sqlite],
        "kill": None if rep.kill is None else _run_json(rep.kill),
        "apscheduler": aps,
        "apscheduler4_skipped": rep.aps4_note,
        "projection": {
            "from": rep.projection_run,
            "formula": "rate(N) = min(N*cores/s, db_cores/d); p99(N) = w + 0.99*due/rate(N)",
            "rows": [p.__dict__ for p in rep.projections],
        },
        "targets": [v.__dict__ for v in rep.verdicts],
        "verified": not rep.problems,
        "problems": rep.problems,
        "elapsed_s": rep.elapsed_s,
        "load_average": rep.load,
    }
    return json.dumps(doc, indent=2, default=str)


# --------------------------------------------------------------------------- main


def processes_list(text_: str) -> list[int]:
    try:
        values = [int(v) for v in text_.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError("a list like 1,2,4") from exc
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("a list of whole numbers >= 1, like 1,2,4")
    return values


def lead_for(schedules: int) -> float:
    return 10.0 + schedules / 2500.0


def postgres_phase(
    rep: Report, args: argparse.Namespace, directory: Path, profile: Path | None
) -> None:
    admin, reason = pg_admin_url()
    if admin is None:
        rep.pg_skipped = reason
        log(f"PostgreSQL skipped: {reason}")
        return
    n = rep.sizes.schedules
    template_url = url_with_database(admin, TEMPLATE_DB)
    run_url = url_with_database(admin, RUN_DB)
    lead = args.lead or lead_for(n)
    try:
        create_database(admin, TEMPLATE_DB)
        workspaces = directory / "pg-workspaces"
        workspaces.mkdir()
        rep.fixtures["postgresql"] = build_fixture(
            template_url,
            workspaces,
            n,
            args.build_processes,
            "PostgreSQL",
            args.through_services or None,
            checklists=not args.no_checklists,
        )
        expected = schedule_ids(template_url)
        for k in args.processes:
            copy_s = create_database(admin, RUN_DB, TEMPLATE_DB)
            log(f"PostgreSQL, {k} scheduler(s): database copied in {copy_s:.1f} s")
            run = drain(
                run_url,
                "postgresql",
                k,
                expected,
                lead,
                admin_url=admin,
                database=RUN_DB,
                profile_dir=profile,
            )
            rep.pg.append(run)
        if not args.no_kill:
            create_database(admin, RUN_DB, TEMPLATE_DB)
            shared = directory / "shared-runtime"
            shared.mkdir()
            log("PostgreSQL, SIGKILL phase: 2 schedulers, the second killed mid-burst ...")
            run = drain(
                run_url,
                "postgresql",
                2,
                expected,
                lead,
                admin_url=admin,
                database=RUN_DB,
                shared_dir=shared,
            )
            check_kill(run, run_url, expected, shared)
            rep.kill = run
    finally:
        drop_database(admin, RUN_DB)
        drop_database(admin, TEMPLATE_DB)


def sqlite_phase(
    rep: Report, args: argparse.Namespace, directory: Path, profile: Path | None
) -> None:
    n = rep.sizes.sqlite_schedules
    base = directory / "sqlite"
    (base / "workspaces").mkdir(parents=True)
    template = base / "template.db"
    rep.fixtures["sqlite"] = build_fixture(
        f"sqlite:///{template}",
        base / "workspaces",
        n,
        1,
        "SQLite",
        args.through_services or None,
        checklists=not args.no_checklists,
    )
    expected = schedule_ids(f"sqlite:///{template}")
    for k in args.sqlite_processes:
        path = base / f"run-{k}.db"
        shutil.copyfile(template, path)
        rep.sqlite.append(
            drain(
                f"sqlite:///{path}",
                "sqlite",
                k,
                expected,
                args.lead or lead_for(n),
                profile_dir=profile,
            )
        )
        path.unlink()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK.schedules:,} on PostgreSQL, {QUICK.sqlite_schedules:,} on SQLite",
    )
    parser.add_argument(
        "--schedules", type=positive, help=f"on PostgreSQL (default {DEFAULT.schedules:,})"
    )
    parser.add_argument(
        "--sqlite-schedules",
        type=positive,
        help=f"on SQLite, and APScheduler jobs (default {DEFAULT.sqlite_schedules:,})",
    )
    parser.add_argument(
        "--processes", type=processes_list, default=[1, 2, 4], help="PostgreSQL runs (1,2,4)"
    )
    parser.add_argument(
        "--sqlite-processes", type=processes_list, default=[1, 2], help="SQLite runs (1,2)"
    )
    parser.add_argument(
        "--build-processes", type=positive, default=2, help="PostgreSQL fixture build (2)"
    )
    parser.add_argument(
        "--through-services",
        type=int,
        default=THROUGH_SERVICES,
        help=f"schedules built through the services, the rest copied (default"
        f" {THROUGH_SERVICES:,}; 0: all through the services)",
    )
    parser.add_argument(
        "--lead", type=positive, help="seconds from the schedulers' start to the slot"
    )
    parser.add_argument("--cores", type=positive, default=2, help="cores per scheduler machine")
    parser.add_argument("--db-cores", type=positive, default=2, help="database server cores")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the kalends SQLite runs")
    parser.add_argument("--no-apscheduler", action="store_true", help="skip APScheduler 3 and 4")
    parser.add_argument("--no-aps4", action="store_true", help="skip APScheduler 4.0")
    parser.add_argument("--no-kill", action="store_true", help="skip the SIGKILL phase")
    parser.add_argument(
        "--no-checklists",
        action="store_true",
        help="no checklist templates (the scheduler's own work, as APScheduler's jobs)",
    )
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="cProfile each scheduler process into DIR"
    )
    args = parser.parse_args(argv)
    base = QUICK if args.quick else DEFAULT
    sizes = Sizes(
        schedules=args.schedules or base.schedules,
        sqlite_schedules=args.sqlite_schedules or base.sqlite_schedules,
    )
    check_policies()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    rep = Report(sizes=sizes, args={k: str(v) for k, v in vars(args).items()})
    t0 = time.perf_counter()
    rep.load.append(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="kalends-bench-scale-") as tmp:
        directory = Path(tmp)
        if not args.no_postgres:
            postgres_phase(rep, args, directory, args.profile)
        if not args.no_sqlite:
            sqlite_phase(rep, args, directory, args.profile)
        if not args.no_apscheduler:
            rep.aps, rep.aps4_note = aps_peers(directory, sizes.sqlite_schedules, args.no_aps4)
    make_projections(rep, args.cores, args.db_cores)
    judge(rep)
    rep.elapsed_s = time.perf_counter() - t0
    rep.load.append(os.getloadavg())
    if args.json:
        print(to_json(rep))
    else:
        print_report(rep, args.cores, args.db_cores)
    missed = any(v.met is False for v in rep.verdicts)
    return 1 if rep.problems or missed else 0


if __name__ == "__main__":
    sys.exit(main())
