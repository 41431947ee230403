"""What ``bench/scale.py`` builds on: the PostgreSQL databases it makes and drops, the
fixture of schedules all due at one slot, the sampler of the database server's processes
(CPU from ``/proc``, lock waits from ``pg_stat_activity``), the runtime whose passages
outlive the scheduler process that started them (the SIGKILL phase), and the projection.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.engine import make_url

from bench.common import log
from bench.outbox import _process_cpu
from bench.scheduler import BURST_POLICIES, SLOT, START, ShiftedClock
from kalends.bootstrap import build
from kalends.civil.zone_data import zone_data_version
from kalends.clock import FakeClock
from kalends.errors import NotFound
from kalends.missions.limits import MAX_SCHEDULES
from kalends.missions.runtime.base import Observation, PassageStart, Presence
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.storage.engine import create_engine_for
from kalends.storage.ids import ids_at
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.migrate import open_store
from kalends.storage.mission_tables import (
    schedule_controls,
    schedule_wakes,
    workspace_lists,
    workspace_members,
    workspaces,
)
from kalends.storage.mission_tables import schedules as schedule_table
from kalends.storage.task_tables import list_members, lists

__all__ = [
    "BuildJob",
    "Projection",
    "ServerSampler",
    "SettableClock",
    "SharedRuntime",
    "WarningCount",
    "build_fixture",
    "create_database",
    "drop_database",
    "ledger_counts",
    "ledger_gaps",
    "pg_admin_url",
    "project",
    "schedule_ids",
    "url_with_database",
]

# --------------------------------------------------------------------------- PostgreSQL


def pg_admin_url() -> tuple[str | None, str]:
    """The PostgreSQL server the tests use (``KALENDS_TEST_DATABASE_URL``, else a local one
    that answers as ``postgres`` or this user): its URL, or ``None`` and why not."""
    from kalends.storage.testing import discover_postgresql  # noqa: PLC0415 (pytest)

    found = discover_postgresql()
    return found.url, found.reason


def url_with_database(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(_conninfo(admin_url), autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def create_database(admin_url: str, name: str, template: str | None = None) -> float:
    """A fresh database ``name`` (dropped first if left over), copied from ``template``
    when given; the seconds it took."""
    t0 = time.perf_counter()
    drop_database(admin_url, name)
    with psycopg.connect(_conninfo(admin_url), autocommit=True) as admin:
        if template is None:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        else:
            admin.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(template)
                )
            )
    return time.perf_counter() - t0


def _stat_cpu(pid: int) -> float | None:
    return _process_cpu(pid)


class ServerSampler:
    """Samples the server's processes every ``interval`` seconds (from a connection to the
    admin database, so its own backend is not among those measured): the client backends
    connected to ``database`` (their CPU, and how many wait on a lock: ``wait_event_type``
    ``Lock``) and the server's background processes (checkpointer, WAL writer, background
    writer, autovacuum; shared with every database of the server). CPU is read from
    ``/proc/PID/stat`` (the server runs on this machine); a backend first seen after
    :meth:`mark` counts from 0, one gone before the next mark keeps its last reading."""

    def __init__(self, admin_url: str, database: str, interval: float = 0.25) -> None:
        self.admin_url = admin_url
        self.database = database
        self.interval = interval
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conn = psycopg.connect(_conninfo(admin_url), autocommit=True)
        self._backends: dict[int, float] = {}  # pid -> last CPU seen
        self._background: dict[int, float] = {}
        self._base_backends: dict[int, float] = {}
        self._base_background: dict[int, float] = {}
        self._counting = False
        self.samples = 0
        self.waiting_samples = 0  # backend-samples waiting on a lock
        self.max_waiting = 0
        self.max_backends = 0
        self._thread = threading.Thread(target=self._loop, name="pg-sampler", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        rows = self._conn.execute(
            "SELECT pid, datname, backend_type, wait_event_type FROM pg_stat_activity"
        ).fetchall()
        waiting = 0
        backends = background = 0
        with self._lock:
            for pid, datname, kind, wait in rows:
                if pid is None:
                    continue
                cpu = _stat_cpu(int(pid))
                if cpu is None:
                    continue
                if kind == "client backend":
                    if datname != self.database:
                        continue
                    self._backends[int(pid)] = cpu
                    backends += 1
                    if wait == "Lock":
                        waiting += 1
                elif kind != "walsender":
                    self._background[int(pid)] = cpu
                    background += 1
            if self._counting:
                self.samples += 1
                self.waiting_samples += waiting
                self.max_waiting = max(self.max_waiting, waiting)
                self.max_backends = max(self.max_backends, backends)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._sample()
            except psycopg.Error:
                continue

    def mark(self) -> None:
        """Start counting: the CPU readings from here on count."""
        self._sample()
        with self._lock:
            self._base_backends = dict(self._backends)
            self._base_background = dict(self._background)
            self.samples = self.waiting_samples = self.max_waiting = self.max_backends = 0
            self._counting = True

    def finish(self) -> dict[str, Any]:
        """Stop counting; the CPU seconds since :meth:`mark` and the lock-wait samples."""
        self._sample()
        with self._lock:
            self._counting = False
            backends = sum(
                cpu - self._base_backends.get(pid, 0.0) for pid, cpu in self._backends.items()
            )
            background = sum(
                cpu - self._base_background.get(pid, 0.0) for pid, cpu in self._background.items()
            )
            return {
                "backend_cpu_s": backends,
                "background_cpu_s": background,
                "samples": self.samples,
                "interval_s": self.interval,
                "waiting_samples": self.waiting_samples,
                "lock_wait_s": self.waiting_samples * self.interval,
                "max_waiting": self.max_waiting,
                "max_backends": self.max_backends,
            }

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._conn.close()


# --------------------------------------------------------------------------- clock, logs


class SettableClock(ShiftedClock):
    """The shifted clock whose offset is set once the run's instants are known: every
    scheduler process sets the same one, so at one real instant all read the same time."""

    def set_slot_at(self, real: float) -> None:
        """The clock reads SLOT at the real (``time.time()``) instant ``real``."""
        self._offset = SLOT - datetime.fromtimestamp(real, tz=SLOT.tzinfo)


class WarningCount(logging.Handler):
    """Counts kalends' warnings (failed rounds, failed looks) by their first words."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: dict[str, int] = {}
        self.lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        words = message.split(":", 1)[0]
        key = " ".join(w for w in words.split() if not w.startswith("scheduler-"))[:60]
        if "database error" in message:
            key = "database error"
        elif "round failed" in message:
            key = "round failed"
        elif "wake failed" in message:
            key = "wake failed"
        with self.lock_:
            self.counts[key] = self.counts.get(key, 0) + 1


# --------------------------------------------------------------------------- runtime


class SharedRuntime(MemoryRuntime):
    """The memory runtime whose passages outlive the scheduler process that started them,
    as the process runtime's do: a start creates ``DIR/sessions/SESSION`` (exclusively;
    it holds the message ID) before it launches, so another scheduler process finds the
    passage present and running; every start call is appended to
    ``DIR/journal-PID.log`` (``SESSION SCHEDULE new|existing``), which survives a SIGKILL."""

    def __init__(self, directory: Path, clock: Any) -> None:
        super().__init__(clock=clock, instant=False)
        self.sessions_dir = directory / "sessions"
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        self._journal = os.open(
            directory / f"journal-{os.getpid()}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
        )

    def _marker(self, session_id: str) -> Path:
        return self.sessions_dir / session_id

    def _note(self, start: PassageStart, how: str) -> None:
        os.write(self._journal, f"{start.session_id} {start.schedule_id} {how}\n".encode())

    def start(self, start: PassageStart) -> Presence:
        path = self._marker(start.session_id)
        # The marker appears whole or not at all, as a real runtime's admission does: a
        # process killed between creating it and writing the message ID left an empty
        # one, which every other process then read as UNKNOWN (one passage of a quick
        # SIGKILL run stayed uncertain past the run's end).
        draft = path.with_name(f"{path.name}.{os.getpid()}.draft")
        draft.write_text(start.message_id)
        try:
            os.link(draft, path)
        except FileExistsError:
            self._note(start, "existing")
            if path.read_text() != start.message_id:
                return Presence.UNKNOWN
            if start.session_id in self.sessions():
                return super().start(start)
            return Presence.PRESENT  # started by another scheduler process: running
        finally:
            draft.unlink()
        self._note(start, "new")
        return super().start(start)

    def lookup(self, session_id: str, message_id: str) -> Presence:
        if session_id in self.sessions():
            return super().lookup(session_id, message_id)
        path = self._marker(session_id)
        if not path.exists():
            return Presence.ABSENT
        return Presence.PRESENT if path.read_text() == message_id else Presence.UNKNOWN

    def observe(self, session_id: str) -> Observation:
        try:
            return super().observe(session_id)
        except NotFound:
            if not self._marker(session_id).exists():
                raise
            return Observation(launched=True, running=True, exited=False)


def read_journals(directory: Path) -> list[tuple[str, str, str]]:
    """Every start call of every scheduler process: (session, schedule, new|existing)."""
    out: list[tuple[str, str, str]] = []
    for path in sorted(directory.glob("journal-*.log")):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                out.append((parts[0], parts[1], parts[2]))
    return out


# --------------------------------------------------------------------------- fixture


@dataclass(frozen=True)
class BuildJob:
    url: str
    directory: str
    actor: str
    schedules: int
    workspaces: list[int]
    """The workspaces (by number) this process fills."""
    checklists: bool = True
    """Whether every 4th schedule keeps its checklist template."""


def scale_config(n: int, w: int, s: int, *, checklists: bool = True) -> dict[str, Any]:
    """Schedule ``n`` (schedule ``s`` of workspace ``w``): ``bench/missions.py``'s
    configuration without its condition, one of the burst rules, ``restart: resume``;
    without its checklist template unless ``checklists``."""
    from bench.missions import schedule_config  # noqa: PLC0415

    config = schedule_config(w, s)
    config.pop("condition", None)
    if not checklists:
        config.pop("template", None)
    config["policy"] = BURST_POLICIES[n % len(BURST_POLICIES)]
    config["restart"] = "resume"
    return config


def build_worker(job: BuildJob, counter: Any, results: Any) -> None:
    """One build process: its workspaces' schedules, created and Played."""
    out: dict[str, Any] = {"made": 0}
    try:
        store = open_store(job.url, FakeClock(START))
        services = build(store)
        made = 0
        for w in job.workspaces:
            path = Path(job.directory) / f"workspace-{w:04d}"
            path.mkdir(exist_ok=True)
            ws = services.workspaces.add(job.actor, path, f"workspace-{w:04d}").id
            first = w * MAX_SCHEDULES
            for s in range(min(MAX_SCHEDULES, job.schedules - first)):
                n = first + s
                config = scale_config(n, w, s, checklists=job.checklists)
                receipt = services.schedules.create(
                    job.actor, ws, config, request_id=f"create-{n:06d}"
                )
                if receipt.status != "created" or receipt.mission_id is None:
                    raise RuntimeError(f"create returned {receipt!r}")
                played = services.schedules.play(
                    job.actor, receipt.mission_id, request_id=f"play-{n:06d}", expected_revision=1
                )
                if played.revision != 2 or played.schedule["state"] != "running":
                    raise RuntimeError(f"play returned {played!r}")
                made += 1
                with counter.get_lock():
                    counter.value += 1
        out["made"] = made
        store.close()
    except BaseException:
        out["error"] = traceback.format_exc()
    results.put(out)


MULTIPLIED = (
    workspaces,
    workspace_members,
    lists,
    list_members,
    workspace_lists,
    schedule_table,
    schedule_controls,
    schedule_wakes,
)
"""Every table a schedule's create and Play writes rows to (a workspace's own included)."""


def multiply(url: str, directory: Path, total: int) -> int:
    """Copies the workspaces built through the services, with their members, task list
    and schedules (documents, control records, wakes), each copy a workspace of its own
    (new IDs, a new directory, the same configurations and documents), until ``total``
    schedules; returns how many workspaces it added."""
    engine = create_engine_for(url)
    try:
        with engine.connect() as conn:
            rows = {
                t.name: [dict(r) for r in conn.execute(select(t)).mappings()] for t in MULTIPLIED
            }
    finally:
        engine.dispose()
    by_ws: dict[Any, list[dict[str, Any]]] = {}
    for r in sorted(rows["schedules"], key=lambda r: r["creation_request_id"]):
        by_ws.setdefault(r["workspace_id"], []).append(r)
    members = {r["workspace_id"]: r for r in rows["workspace_members"]}
    ws_list = {r["workspace_id"]: r for r in rows["workspace_lists"]}
    list_rows = {r["id"]: r for r in rows["lists"]}
    list_members_rows: dict[Any, list[dict[str, Any]]] = {}
    for r in rows["list_members"]:
        list_members_rows.setdefault(r["list_id"], []).append(r)
    controls: dict[Any, list[dict[str, Any]]] = {}
    for r in rows["schedule_controls"]:
        controls.setdefault(r["schedule_id"], []).append(r)
    wakes = {r["schedule_id"]: r for r in rows["schedule_wakes"]}
    template = sorted(rows["workspaces"], key=lambda r: r["name"])
    have = len(rows["schedules"])
    number = len(template)
    added = 0
    t0 = time.perf_counter()
    last = t0
    engine = create_engine_for(url)
    try:
        while have < total:
            out: dict[str, list[dict[str, Any]]] = {t.name: [] for t in MULTIPLIED}
            for ws in template:
                if have >= total or len(out["schedules"]) >= 5000:
                    break
                docs = by_ws.get(ws["id"], [])[: total - have]
                if not docs:
                    continue
                new_ws, new_list = ids_at(START, 2)
                name = f"workspace-{number:04d}"
                path = directory / name
                path.mkdir(exist_ok=True)
                out["workspaces"].append({**ws, "id": new_ws, "name": name, "path": str(path)})
                out["workspace_members"].append({**members[ws["id"]], "workspace_id": new_ws})
                held = ws_list.get(ws["id"])
                if held is not None:
                    old_list = held["list_id"]
                    out["lists"].append({**list_rows[old_list], "id": new_list, "name": name})
                    out["list_members"] += [
                        {**m, "list_id": new_list} for m in list_members_rows.get(old_list, [])
                    ]
                    out["workspace_lists"].append(
                        {**held, "workspace_id": new_ws, "list_id": new_list}
                    )
                for doc, sid in zip(docs, ids_at(START, len(docs)), strict=True):
                    out["schedules"].append({**doc, "id": sid, "workspace_id": new_ws})
                    out["schedule_controls"] += [
                        {**c, "schedule_id": sid} for c in controls.get(doc["id"], [])
                    ]
                    out["schedule_wakes"].append({**wakes[doc["id"]], "schedule_id": sid})
                have += len(docs)
                number += 1
                added += 1
            with engine.begin() as conn:
                for t in MULTIPLIED:
                    if out[t.name]:
                        conn.execute(insert(t), out[t.name])
            if time.perf_counter() - last >= 10.0 or have >= total:
                last = time.perf_counter()
                log(f"  copied: {have:,} of {total:,} ({last - t0:.0f} s)")
    finally:
        engine.dispose()
    return added


def build_fixture(
    url: str,
    directory: Path,
    schedules: int,
    processes: int,
    label: str,
    services_count: int | None = None,
    *,
    checklists: bool = True,
) -> dict[str, Any]:
    """``schedules`` running schedules, all due at SLOT: ``services_count`` of them (all
    when ``None``) through the services (create + Play, on a clock standing at START) in
    ``processes`` processes (spawn), each filling every ``processes``-th workspace of 64,
    the rest copied from those (:func:`multiply`); then every wake is set as a
    scheduler's look would leave it (due at SLOT, that slot computed under this zone
    data) and free."""
    total = schedules
    schedules = min(total, services_count or total)
    t0 = time.perf_counter()
    store = open_store(url, FakeClock(START))
    services = build(store)
    actor = services.directory.add_actor("bench", "Bench", "bench@example.com").id
    services.grants.grant(actor, "run")
    store.close()
    count = -(-schedules // MAX_SCHEDULES)
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("q", 0)
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=build_worker,
            args=(
                BuildJob(
                    url=url,
                    directory=str(directory),
                    actor=str(actor),
                    schedules=schedules,
                    workspaces=list(range(i, count, processes)),
                    checklists=checklists,
                ),
                counter,
                results,
            ),
            name=f"scale-build-{i}",
        )
        for i in range(processes)
    ]
    log(
        f"{label}: creating and playing {schedules:,} schedules in {count:,} workspaces"
        f" ({processes} process(es)) ..."
    )
    for p in procs:
        p.start()
    outs: list[dict[str, Any]] = []
    last = time.perf_counter()
    while len(outs) < len(procs):
        try:
            outs.append(results.get(timeout=1.0))
        except Exception:  # queue.Empty
            if not any(p.is_alive() for p in procs):
                break
        if time.perf_counter() - last >= 10.0 or len(outs) == len(procs):
            last = time.perf_counter()
            done = int(counter.value)
            spent = last - t0
            rate = done / spent if spent > 0 else 0.0
            eta = (schedules - done) / rate if rate > 0 else 0.0
            log(f"  {done:,} of {schedules:,} ({spent:.0f} s, {rate:,.0f}/s, ~{eta:.0f} s left)")
    for p in procs:
        p.join(timeout=60)
    errors = [o["error"] for o in outs if "error" in o]
    if errors or len(outs) != len(procs):
        raise RuntimeError(errors[0] if errors else "a build process ended without a result")
    made_s = time.perf_counter() - t0
    copied_s = 0.0
    if total > schedules:
        log(f"{label}: copying them to {total:,} schedules (SQL, kalends' tables) ...")
        t1 = time.perf_counter()
        multiply(url, directory, total)
        copied_s = time.perf_counter() - t1
    built = schedules
    schedules = total
    store = open_store(url, FakeClock(START))
    try:

        def settle(conn: Any) -> int:
            done = conn.execute(
                update(schedule_wakes).values(
                    due_at=SLOT,
                    next_slot_at=SLOT,
                    zone_data=zone_data_version(),
                    owner=None,
                    lease_token=None,
                    orphaned=False,
                    polls=0,
                )
            )
            return int(done.rowcount)

        wakes = store.run(settle)
        running = store.run(
            lambda conn: conn.execute(
                select(func.count()).where(schedule_table.c.state == "running")
            ).scalar_one(),
            write=False,
        )
        if wakes != schedules or running != schedules:
            raise RuntimeError(f"{running} running schedules and {wakes} wakes, not {schedules}")
        engine = store.engine
        if engine.dialect.name == "postgresql":
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f"VACUUM ANALYZE {', '.join(t.name for t in MULTIPLIED)}"))
        else:
            with engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    build_s = time.perf_counter() - t0
    log(
        f"  built in {build_s:.1f} s ({built:,} through the services, {made_s / built * 1e3:.2f}"
        f" ms per create + Play over {processes} process(es); {total - built:,} copied in"
        f" {copied_s:.1f} s)"
    )
    return {
        "build_s": build_s,
        "services_s": made_s,
        "through_services": built,
        "copied": total - built,
        "copy_s": copied_s,
        "workspaces": -(-total // MAX_SCHEDULES),
        "processes": processes,
    }


def schedule_ids(url: str) -> list[str]:
    store = open_store(url, FakeClock(START))
    try:
        return store.run(
            lambda conn: [str(r) for r in conn.execute(select(schedule_table.c.id)).scalars()],
            write=False,
        )
    finally:
        store.close()


def ledger_counts(url: str) -> dict[str, int]:
    """The slot ledger's rows at SLOT: launched ones, their schedules, their passages."""
    store = open_store(url, FakeClock(START))
    L = slot_ledger
    try:

        def run(conn: Any) -> dict[str, int]:
            row = conn.execute(
                select(
                    func.count(),
                    func.count(L.c.schedule_id.distinct()),
                    func.count(L.c.passage_id.distinct()),
                ).where(L.c.slot_at == SLOT, L.c.outcome == "launched")
            ).one()
            other = conn.execute(
                select(func.count()).where(L.c.slot_at == SLOT, L.c.outcome != "launched")
            ).scalar_one()
            return {
                "launched": int(row[0]),
                "schedules": int(row[1]),
                "passages": int(row[2]),
                "other": int(other),
            }

        return store.run(run, write=False)
    finally:
        store.close()


def ledger_gaps(url: str, limit: int = 5) -> list[dict[str, Any]]:
    """Up to ``limit`` schedules without a ``launched`` ledger row at SLOT: their ledger
    rows, their wake and their pending passage, for the report."""
    store = open_store(url, FakeClock(START))
    L = slot_ledger
    try:

        def run(conn: Any) -> list[dict[str, Any]]:
            launched = select(L.c.schedule_id).where(L.c.slot_at == SLOT, L.c.outcome == "launched")
            rows = conn.execute(
                select(schedule_table.c.id, schedule_table.c.revision, schedule_table.c.body)
                .where(schedule_table.c.id.not_in(launched))
                .limit(limit)
            ).all()
            out = []
            for sid, revision, body in rows:
                ledger = conn.execute(
                    select(L.c.slot_at, L.c.outcome, L.c.reason, L.c.passage_id).where(
                        L.c.schedule_id == sid
                    )
                ).all()
                wake = conn.execute(
                    select(schedule_wakes).where(schedule_wakes.c.schedule_id == sid)
                ).first()
                pending = None
                if body:
                    pending = json.loads(body).get("pending") or {}
                    pending = {
                        k: pending.get(k) for k in ("passageId", "slot", "admitted", "status")
                    }
                out.append(
                    {
                        "schedule": str(sid),
                        "revision": revision,
                        "ledger": [tuple(map(str, r)) for r in ledger],
                        "wake": None
                        if wake is None
                        else {k: str(v) for k, v in wake._mapping.items()},
                        "pending": pending,
                    }
                )
            return out

        return store.run(run, write=False)
    finally:
        store.close()


# --------------------------------------------------------------------------- projection


@dataclass(frozen=True)
class Projection:
    """The drain of ``due`` slots on ``machines`` scheduler machines of ``cores`` cores
    each and one database server of ``db_cores`` cores, CPU-bound:
    rate = min(machines x cores / sched_cpu, db_cores / db_cpu);
    p99 = wake + 0.99 x due / rate (admissions spread evenly over the drain)."""

    machines: int
    cores: int
    db_cores: int
    sched_cpu: float
    """Scheduler CPU seconds per admission (all scheduler processes)."""
    db_cpu: float
    """Database server CPU seconds per admission (backends and background)."""
    wake_s: float
    """From the slot to the first admission (measured)."""
    due: int
    rate: float = 0.0
    p99_s: float = 0.0
    bound: str = ""
    notes: list[str] = field(default_factory=list)


def project(
    machines: int,
    cores: int,
    db_cores: int,
    sched_cpu: float,
    db_cpu: float,
    wake_s: float,
    due: int,
) -> Projection:
    sched_rate = machines * cores / sched_cpu if sched_cpu > 0 else float("inf")
    db_rate = db_cores / db_cpu if db_cpu > 0 else float("inf")
    rate = min(sched_rate, db_rate)
    return Projection(
        machines=machines,
        cores=cores,
        db_cores=db_cores,
        sched_cpu=sched_cpu,
        db_cpu=db_cpu,
        wake_s=wake_s,
        due=due,
        rate=rate,
        p99_s=wake_s + 0.99 * due / rate,
        bound="schedulers" if sched_rate <= db_rate else "database",
    )
