"""HTTP API benchmark: requests/s and latency of four kalends routes under load, beside a
bare FastAPI endpoint (the framework's limit) measured the same way in the same run.

The fixture, built before any server starts, in this process through the Python services
(``open_services`` on a temporary SQLite file, URL ``sqlite:///...``: WAL,
``synchronous=NORMAL``, kalends' default; the real clock): one actor ``bench``, the
instance's owner (``Accounts.bootstrap_owner``), with a non-expiring API token
(``Accounts.create_token``). ``--lists`` lists (default 10) holding ``--tasks`` tasks in all
(default 10,000: 1,000 per list), each created through ``TaskService.create``, one call
per task, in a real user's mix: per list 3 recurring checklists (a root and 3 items of 2
sub-items each, 10 tasks, the root due daily at 09:00 Europe/Berlin through
``SeriesService.start_series``), and then, cycling over top-level units, a checklist every
10th unit (shapes of 10, 5 and 11 tasks, up to 3 levels deep) and plain tasks otherwise.
Every 5th task (in creation order within its list) gets a timed due (local time and zone,
three zones) and a priority, every 15th also an e-mail and a push reminder, those numbered
2, 7, 12, ... a date-only due and a planned date (``set_schedule``); every 6th and 9th a
tag, every 4th a description; plain tasks numbered 3, 11, 19, ... are completed.
``--workspaces`` workspaces (default 8; temporary directories) hold ``--schedules``
mission schedules in all (default 500, spread evenly, at most 64 a workspace), created
through ``ScheduleService.create`` with ``bench/missions.py``'s configurations (eleven
policies in ten zones, end bounds, checklist templates, ``files`` conditions); every
other one is then Played (running, revision 2), the rest stay paused (revision 1).

The servers, each a process of its own on 127.0.0.1, both started after the fixture:

- kalends: ``kalends serve --port 0 --database sqlite:///... --no-schedules
  --no-reminders --log-level warning --runtime-dir DIR`` (uvicorn inside, one process,
  httptools and asyncio as ``kalends serve`` names them, its defaults otherwise; the
  access log off: uvicorn's is off in ``kalends serve`` and kalends' own logs at info,
  below the level; the heap frozen once it serves, the write-ahead log checkpointed by a
  thread of its own, as ``kalends serve`` does). Ready when it prints ``kalends serving
  on http://HOST:PORT``.
- bare: a minimal FastAPI application returning a constant JSON object from
  ``GET /bare``, a plain ``def`` (run in the thread pool, as a synchronous route is by
  default: the judged figure; kalends runs its short reads and controls on the event loop
  on SQLite, ``kalends.api.dispatch``), and from ``GET /bare-async``, an ``async def``
  (no thread pool hop: the framework's ceiling, shown), served by ``uvicorn.Server`` with
  the settings ``kalends serve`` gives uvicorn (no log config, no access log, lifespan on,
  its HTTP parser and event loop: ``kalends.cli.serve.SERVER_HTTP``, ``SERVER_LOOP``)
  on a socket bound to port 0 as ``kalends serve`` binds its own (``IPPROTO_TCP``, so
  asyncio sets ``TCP_NODELAY`` on each connection: without it every answer waits ~40 ms,
  Nagle's algorithm against wrk's delayed ACK).

The load: ``wrk`` (``/usr/bin/wrk``, Debian package ``wrk``; missing, the bench says how
to install it and exits 2), a separate process, ``--threads`` threads (default 2) and
``--connections`` connections (default 50, kept alive), every request with the same
``Authorization: Bearer <token>`` header (the bare server ignores it), ``--timeout 10s``
(wrk leaves latencies above its timeout out of its histogram: none may be). Each endpoint
gets an untimed ``--warmup`` run (default 2 s) and then a ``--duration`` run (default
20 s; ``--quick``: 5 s, 1 s warm-up, 2 lists of 1,000 tasks, 2 workspaces of 64
schedules), one endpoint at a time, in this order:

bare (1)         ``GET /bare`` on the bare server;
bare async       ``GET /bare-async`` on the bare server;
list tasks, pages  ``GET /api/lists/{list}/tasks?limit=10[&after=CURSOR]``: every page of
                 10 top-level tasks (each with its checklist) of every list, in order,
                 the cursors read through ``TaskService.tree_page`` beforehand (what the
                 ``Link`` headers give a client scrolling the list): judged;
list tasks, whole  ``GET /api/lists/{list}/tasks``: the whole list of 1,000 tasks as trees
                 in one answer, the lists in turn: shown, not judged;
task detail      ``GET /api/tasks/{id}``: every task of the fixture in a shuffled order;
schedule detail  ``GET /api/workspaces/{id}/missions/{missionID}/schedule``: every
                 schedule in a shuffled order;
control          ``POST /api/workspaces/{id}/missions/{missionID}/schedule`` with
                 ``{"action": "pause"|"play", "requestID": <unique>, "expectedRevision":
                 <current>}``: ``bench/api_wrk/control.lua`` gives each wrk thread a
                 disjoint share of the schedules (read with their revision and state just
                 before the run), takes them round-robin with at most one control in
                 flight per schedule, toggles running/paused and keeps the revision each
                 answer records: no conflict can come from the bench itself;
framework paths  the four kalends endpoints above again, on a second kalends server
                 started the same way with ``KALENDS_FAST_PATHS=0``: the framework's
                 own routing and dependency solving instead of kalends' route index and
                 planned handlers (``kalends.api.fast``); shown, not judged, beside
                 the first server's figures (the ratios under the table);
bare (2)         ``GET /bare`` again, so machine noise shows in its two figures.

The reads use ``bench/api_wrk/paths.lua`` (the requests built once, taken in turn); the
bare endpoint is driven by the same script, so wrk does the same work per request.
Requests/s, latency percentiles (wrk's own histogram, 1 us resolution, closed loop: each
connection sends its next request when the answer came) and error counts come from a
``done()`` hook (``bench/api_wrk/report.lua``) printing JSON. Non-2xx: for the reads, wrk's
count of answers with a status >= 400; for the control, counted by status in the script.
Server CPU: the server process's user + system time from ``/proc/PID/stat`` around each
timed run; wrk's from this process's children's ``getrusage``; the machine's busy share
from ``/proc/stat``. The machine has few CPUs (2 here), shared by the server, wrk and
anything else running: the figures say what one server process does while the load
generator takes its share, not what a dedicated host would.

Checked: before the runs, one request each (list tasks: the whole tree of the list, every
task once, and every page of the first list, which together are its tasks in order; task
detail: the task asked for; schedule detail: the revision the service
reads; bare: the constant); after each run no socket error, timeout or non-2xx answer;
after each control run, every schedule read back through the service: its revision went
up by as many controls as were applied to it (the sum equal to the 2xx answers counted,
plus at most one per connection for answers wrk stopped waiting for at the end), its
state flipped by their parity.

Targets (issue 8): p99 under 50 ms for each kalends endpoint; each read endpoint (list
tasks in pages, task detail, schedule detail) at least 40% of the bare ``def`` endpoint's
requests/s (the better of its two runs). Beside the ratio of requests/s, the table gives
the ratio of server CPU time per request (bare's over the endpoint's), which does not
move with the share of the machine a server got while others used it. ``--quick`` is
judged the same, though the targets are stated for the full size. The exit status is 1
when a target is missed or a check fails.

Run from the repository root: ``python bench/api.py [--json] [--quick] [--only page,task]``
(``--only``: those kalends endpoints beside the bare ones, for a quicker look at a few).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))

from bench.common import grid, log, positive  # noqa: E402
from bench.missions import schedule_config  # noqa: E402
from kalends.auth import Accounts  # noqa: E402
from kalends.bootstrap import Services, open_services  # noqa: E402
from kalends.civil import format_local  # noqa: E402
from kalends.cli.serve import SERVER_HTTP, SERVER_LOOP  # noqa: E402
from kalends.missions.limits import MAX_SCHEDULES  # noqa: E402
from kalends.tasks import Task, TreeNode, parse_schedule  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Set to 0, kalends serves through the framework's own routing and dependency solving.
FAST_PATHS_ENV = "KALENDS_FAST_PATHS"
WRK_DIR = Path(__file__).resolve().parent / "api_wrk"
PATHS_SCRIPT = WRK_DIR / "paths.lua"
CONTROL_SCRIPT = WRK_DIR / "control.lua"
KALENDS = Path(sys.executable).parent / "kalends"
WRK_INSTALL = "apt-get install wrk"
EXIT_NO_WRK = 2
EXIT_INTERRUPTED = 130

HOST = "127.0.0.1"
WRK_TIMEOUT_S = 10
START_TIMEOUT_S = 120.0
QUIET_S = 0.3  # a server is quiet when its CPU time grows by less than QUIET_CPU_S in QUIET_S
QUIET_CPU_S = 0.015
QUIESCE_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
SEED = 2026
BARE_BODY: dict[str, str] = {"service": "bare", "status": "ok"}

# The fixture's lists.
RECURRING_PER_LIST = 3
RECURRING_SHAPE: tuple[int, ...] = (3, 2)  # a root, 3 items, 2 sub-items each: 10 tasks
CHECKLIST_SHAPES: tuple[tuple[int, ...], ...] = ((3, 2), (4,), (2, 2, 1))  # 10, 5, 11 tasks
CHECKLIST_EVERY = 10  # every 10th top-level unit is a checklist
SERIES_TIME = "09:00"
SERIES_ZONE = "Europe/Berlin"
ITEM_ZONES: tuple[str, ...] = ("America/New_York", "Europe/Berlin", "Asia/Tokyo")

# Top-level tasks (each with its checklist) per page of the paged listing.
TREE_PAGE = 10

TARGET_P99_MS = 50.0
TARGET_SHARE = 0.40

# The kalends endpoints measured again on a server without its fast paths.
PLAIN_KEYS = ("plain-page", "plain-task", "plain-schedule", "plain-control")
KEYS = (
    "bare1",
    "async",
    "page",
    "tree",
    "task",
    "schedule",
    "control",
    *PLAIN_KEYS,
    "bare2",
)
BARE_KEYS = ("bare1", "async", "bare2")
JUDGED_BARE = ("bare1", "bare2")
LABELS = {
    "bare1": "bare FastAPI, def (1)",
    "async": "bare FastAPI, async def",
    "page": f"list tasks, pages of {TREE_PAGE}",
    "tree": "list tasks, whole list",
    "task": "task detail",
    "schedule": "schedule detail",
    "control": "control (pause/play)",
    "plain-page": "pages, framework paths",
    "plain-task": "task detail, framework paths",
    "plain-schedule": "schedule detail, framework paths",
    "plain-control": "control, framework paths",
    "bare2": "bare FastAPI, def (2)",
}
ROUTES = {
    "bare1": "GET /bare",
    "async": "GET /bare-async",
    "page": f"GET /api/lists/{{id}}/tasks?limit={TREE_PAGE}&after=",
    "tree": "GET /api/lists/{id}/tasks",
    "task": "GET /api/tasks/{id}",
    "schedule": "GET /api/workspaces/{id}/missions/{missionID}/schedule",
    "control": "POST /api/workspaces/{id}/missions/{missionID}/schedule",
    "bare2": "GET /bare",
}
ROUTES.update({key: ROUTES[key.removeprefix("plain-")] for key in PLAIN_KEYS})
# Judged: the paged listing (what a client scrolling a list asks for); the whole list
# of 1,000 tasks in one answer is measured and shown, not judged.
READS = ("page", "task", "schedule")
KALENDS_KEYS = ("page", "task", "schedule", "control")
SHOWN = ("tree",)


@dataclass(frozen=True)
class Sizes:
    lists: int
    tasks: int
    workspaces: int
    schedules: int
    duration_s: int
    warmup_s: int
    threads: int
    connections: int


DEFAULT = Sizes(
    lists=10,
    tasks=10_000,
    workspaces=8,
    schedules=500,
    duration_s=20,
    warmup_s=2,
    threads=2,
    connections=50,
)
QUICK = Sizes(
    lists=2,
    tasks=2_000,
    workspaces=2,
    schedules=128,
    duration_s=5,
    warmup_s=1,
    threads=2,
    connections=50,
)


# --------------------------------------------------------------------------- the fixture


@dataclass
class Fixture:
    services: Services
    url: str
    actor: uuid.UUID
    token: str
    lists: list[uuid.UUID]
    list_sizes: list[int]
    tasks: list[uuid.UUID]
    schedules: list[tuple[uuid.UUID, uuid.UUID]]
    """(workspace, mission) of every schedule."""
    counts: dict[str, int] = field(default_factory=dict)
    build_s: float = 0.0


class Seeder:
    """Builds the lists of one actor, counting what it made."""

    def __init__(self, services: Services, actor: uuid.UUID, today: date) -> None:
        self.services = services
        self.actor = actor
        self.today = today
        self.counts = {"scheduled": 0, "reminded": 0, "completed": 0, "series": 0}
        self.created: list[uuid.UUID] = []

    def _recipient(self, _value: object, _field: str) -> uuid.UUID:
        return self.actor

    def _schedule(self, k: int) -> dict[str, Any] | None:
        """The schedule of the ``k``-th task of a list (1-based, creation order)."""
        day = self.today + timedelta(days=k % 30)
        if k % 5 == 0:
            zone = ITEM_ZONES[(k // 5) % len(ITEM_ZONES)]
            due = datetime.combine(day, datetime.min.time()) + timedelta(hours=8 + k % 10)
            out: dict[str, Any] = {
                "due": {"local": format_local(due), "zone": zone},
                "priority": 1 + k % 3,
            }
            if k % 15 == 0:
                out["reminders"] = [
                    {
                        "channel": "email",
                        "local": format_local(due - timedelta(hours=1)),
                        "zone": zone,
                    },
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

    def task(self, list_id: uuid.UUID, k: int, title: str, parent: uuid.UUID | None = None) -> Task:
        svc = self.services.tasks
        tags = [name for name, every in (("home", 6), ("errand", 9)) if k % every == 0]
        task = svc.create(
            self.actor,
            list_id,
            title,
            parent=parent,
            description=f"Notes on task {k}." if k % 4 == 0 else "",
            tags=tags,
        )
        schedule = self._schedule(k)
        if schedule is not None:
            task = svc.set_schedule(
                self.actor, task.id, task.revision, parse_schedule(schedule, self._recipient)
            )
            self.counts["scheduled"] += 1
            self.counts["reminded"] += "reminders" in schedule
        self.created.append(task.id)
        return task

    def checklist(
        self, list_id: uuid.UUID, k: int, shape: tuple[int, ...], title: str
    ) -> tuple[Task, int]:
        """A root and its items, level by level; the root and the next ``k``."""
        root = self.task(list_id, k, title)
        level, n = [root], 1
        for depth, children in enumerate(shape, 1):
            below: list[Task] = []
            for parent in level:
                for _ in range(children):
                    item = f"{title}: step {depth}.{len(below) + 1}"
                    below.append(self.task(list_id, k + n, item, parent=parent.id))
                    n += 1
            level = below
        return root, k + n

    def recurring(self, list_id: uuid.UUID, k: int, n: int) -> int:
        svc = self.services.tasks
        root, after = self.checklist(list_id, k, RECURRING_SHAPE, f"Routine {n}")
        due = {
            "local": f"{(self.today + timedelta(days=1)).isoformat()}T{SERIES_TIME}:00",
            "zone": SERIES_ZONE,
        }
        fresh = svc.get(self.actor, root.id).task
        fresh = svc.set_schedule(
            self.actor,
            root.id,
            fresh.revision,
            parse_schedule({"due": due, "priority": 1}, self._recipient),
        )
        self.services.series.start_series(
            self.actor,
            root.id,
            fresh.revision,
            {"kind": "daily", "interval_days": 1},
            time_of_day=SERIES_TIME,
            zone=SERIES_ZONE,
        )
        self.counts["series"] += 1
        return after

    def fill(self, list_id: uuid.UUID, name: str, size: int) -> None:
        """``size`` tasks in the list: recurring checklists, checklists and plain tasks."""
        k, unit = 1, 0
        while k <= size:
            left = size - k + 1
            rec = tree_size(RECURRING_SHAPE)
            shape = CHECKLIST_SHAPES[(unit // CHECKLIST_EVERY) % len(CHECKLIST_SHAPES)]
            if unit < RECURRING_PER_LIST and left >= rec:
                k = self.recurring(list_id, k, unit + 1)
            elif unit % CHECKLIST_EVERY == CHECKLIST_EVERY - 1 and left >= tree_size(shape):
                _, k = self.checklist(list_id, k, shape, f"{name}: checklist {unit}")
            else:
                task = self.task(list_id, k, f"{name}: task {k}")
                if k % 8 == 3:
                    self.services.tasks.complete(self.actor, task.id, task.revision)
                    self.counts["completed"] += 1
                k += 1
            unit += 1


def tree_size(shape: Sequence[int]) -> int:
    total, width = 1, 1
    for children in shape:
        width *= children
        total += width
    return total


def build_fixture(url: str, directory: Path, sizes: Sizes) -> Fixture:
    services = open_services(url)
    try:
        return _build(services, url, directory, sizes)
    except BaseException:
        services.store.close()
        raise


def _build(services: Services, url: str, directory: Path, sizes: Sizes) -> Fixture:
    t0 = time.perf_counter()
    actor = services.directory.add_actor("bench", "Bench", "bench@example.com").id
    accounts = Accounts(services.store)
    accounts.bootstrap_owner("bench", "Bench", "bench@example.com")
    _, token = accounts.create_token(actor, "bench", expires_in=None)
    seeder = Seeder(services, actor, datetime.now(UTC).date())
    lists: list[uuid.UUID] = []
    list_sizes = [
        sizes.tasks // sizes.lists + (1 if i < sizes.tasks % sizes.lists else 0)
        for i in range(sizes.lists)
    ]
    log(f"seeding {sizes.tasks:,} tasks in {sizes.lists} lists through the task services ...")
    for i, size in enumerate(list_sizes):
        name = f"List {i + 1:02d}"
        list_id = services.directory.create_list(actor, name).id
        seeder.fill(list_id, name, size)
        lists.append(list_id)
        log(
            f"  {len(seeder.created):,} of {sizes.tasks:,} tasks ({time.perf_counter() - t0:.1f} s)"
        )
    tasks_s = time.perf_counter() - t0

    per = [
        sizes.schedules // sizes.workspaces + (1 if w < sizes.schedules % sizes.workspaces else 0)
        for w in range(sizes.workspaces)
    ]
    log(
        f"seeding {sizes.schedules:,} schedules in {sizes.workspaces} workspaces"
        " through ScheduleService.create, every other one Played ..."
    )
    t1 = time.perf_counter()
    found: list[tuple[uuid.UUID, uuid.UUID]] = []
    played = 0
    for w, count in enumerate(per):
        path = directory / f"workspace-{w:02d}"
        path.mkdir()
        ws = services.workspaces.add(actor, path, f"workspace-{w:02d}").id
        for s in range(count):
            receipt = services.schedules.create(
                actor, ws, schedule_config(w, s), request_id=f"create-{w:02d}-{s:02d}"
            )
            if receipt.status != "created" or receipt.mission_id is None:
                raise RuntimeError(f"create returned {receipt!r}")
            if s % 2 == 0:
                services.schedules.play(
                    actor,
                    receipt.mission_id,
                    request_id=f"play-{w:02d}-{s:02d}",
                    expected_revision=1,
                )
                played += 1
            found.append((ws, receipt.mission_id))
        log(f"  {len(found):,} of {sizes.schedules:,} schedules ({time.perf_counter() - t1:.1f} s)")
    schedules_s = time.perf_counter() - t1
    counts = dict(seeder.counts)
    counts.update(
        tasks=len(seeder.created),
        played=played,
        tasks_ms=round(tasks_s * 1e3),
        schedules_ms=round(schedules_s * 1e3),
    )
    fx = Fixture(
        services, url, actor, token, lists, list_sizes, list(seeder.created), found, counts
    )
    fx.build_s = time.perf_counter() - t0
    log(f"  seeded in {fx.build_s:.1f} s (tasks {tasks_s:.1f} s, schedules {schedules_s:.1f} s)")
    return fx


# --------------------------------------------------------------------------- processes

BARE_SERVER = '''\
"""The bare endpoint of bench/api.py: one constant JSON object, served like kalends."""

import socket
import sys

import uvicorn
from fastapi import FastAPI

BODY = {body!r}

app = FastAPI()


@app.get("/bare")
def bare() -> dict[str, str]:
    return BODY


@app.get("/bare-async")
async def bare_async() -> dict[str, str]:
    return BODY


class Server(uvicorn.Server):
    async def startup(self, sockets=None):
        await super().startup(sockets)
        if self.started:
            print(f"bare serving on http://{host}:{{port}}", flush=True)


# IPPROTO_TCP as kalends serve's socket has it (from getaddrinfo): asyncio sets TCP_NODELAY
# only on connections of such a socket; without it each answer waits ~40 ms (Nagle against
# the client's delayed ACK).
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("{host}", 0))
sock.listen(socket.SOMAXCONN)
port = sock.getsockname()[1]
config = uvicorn.Config(
    app,
    host="{host}",
    port=port,
    log_config=None,
    log_level="warning",
    access_log=False,
    lifespan="on",
    timeout_graceful_shutdown=10,
    http={http!r},
    loop={loop!r},
)
Server(config).run(sockets=[sock])
sys.exit(0)
'''


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path
    base: str = ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu_s(self) -> float:
        """User + system CPU seconds of the process so far (all its threads)."""
        text = Path(f"/proc/{self.pid}/stat").read_text()
        fields = text[text.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def tail(self) -> str:
        lines = []
        for path in (self.stdout, self.stderr):
            with suppress(OSError):
                lines += path.read_text(errors="replace").splitlines()[-15:]
        return "\n".join(lines)


def start(
    name: str,
    argv: list[str],
    directory: Path,
    ready: re.Pattern[str],
    env: Mapping[str, str] | None = None,
) -> Server:
    """Starts ``argv`` (with ``env`` added to this environment), stdout and stderr to files;
    waits until stdout matches ``ready``."""
    out, err = directory / f"{name}.stdout", directory / f"{name}.stderr"
    environ = {**os.environ, **(env or {})}
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(
            argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL, cwd=ROOT, env=environ
        )
    server = Server(name, proc, out, err)
    log(f"starting {name} (pid {proc.pid}): {' '.join(argv)}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        found = ready.search(out.read_text(errors="replace"))
        if found:
            server.base = found.group(1)
            log(f"  {name} ready on {server.base}")
            return server
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}:\n{server.tail()}")
        time.sleep(0.05)
    stop(server)
    raise RuntimeError(f"{name} not ready within {START_TIMEOUT_S:g} s:\n{server.tail()}")


def stop(server: Server) -> int | None:
    """SIGTERM (a graceful stop), then SIGKILL after STOP_TIMEOUT_S; its exit status."""
    proc = server.proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log(f"{server.name} (pid {proc.pid}) did not stop within {STOP_TIMEOUT_S:g} s: killed")
            proc.kill()
            proc.wait()
    return proc.returncode


@contextmanager
def running(
    name: str,
    argv: list[str],
    directory: Path,
    ready: str,
    env: Mapping[str, str] | None = None,
) -> Iterator[Server]:
    server = start(name, argv, directory, re.compile(ready), env)
    try:
        yield server
    finally:
        code = stop(server)
        log(f"stopped {name} (pid {server.pid}): exit status {code}")


def kalends_argv(url: str, directory: Path, runtime: str = "runtime") -> list[str]:
    return [
        str(KALENDS),
        "serve",
        "--host",
        HOST,
        "--port",
        "0",
        "--database",
        url,
        "--no-schedules",
        "--no-reminders",
        "--log-level",
        "warning",
        "--runtime-dir",
        str(directory / runtime),
    ]


def bare_argv(directory: Path) -> list[str]:
    script = directory / "bare_server.py"
    script.write_text(
        BARE_SERVER.format(body=BARE_BODY, host=HOST, http=SERVER_HTTP, loop=SERVER_LOOP)
    )
    return [sys.executable, str(script)]


# --------------------------------------------------------------------------- wrk


@dataclass
class Measure:
    key: str
    requests: int
    duration_s: float
    latency_us: dict[str, float]
    errors: dict[str, int]
    codes: dict[str, int]
    non_2xx: int
    applied: int | None
    unmatched: int | None
    starved: int | None
    server_cpu_s: float
    wrk_cpu_s: float
    busy_share: float
    server_rss_mib: float
    tail_s: float
    """How long the server went on after wrk stopped (requests left in flight)."""

    @property
    def rate(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0

    def ms(self, key: str) -> float:
        return self.latency_us[key] / 1000

    @property
    def cpu_us(self) -> float:
        """The server's CPU time per request, microseconds."""
        return self.server_cpu_s / self.requests * 1e6 if self.requests else 0.0

    @property
    def socket_errors(self) -> int:
        return sum(v for k, v in self.errors.items() if k != "status")


def _cpu_times() -> tuple[int, int]:
    """All CPUs' (busy, total) jiffies from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wrk(
    sizes: Sizes,
    base: str,
    token: str,
    script: Path,
    args: Sequence[str],
    seconds: int,
) -> dict[str, Any]:
    """One wrk run; its WRK_JSON report."""
    argv = [
        "wrk",
        f"--threads={sizes.threads}",
        f"--connections={sizes.connections}",
        f"--duration={seconds}s",
        f"--timeout={WRK_TIMEOUT_S}s",
        f"--header=Authorization: Bearer {token}",
        f"--script={script}",
        base + "/",
        *args,
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=seconds + 60, check=False, cwd=ROOT
    )
    for line in done.stdout.splitlines():
        if line.startswith("WRK_JSON "):
            report: dict[str, Any] = json.loads(line.removeprefix("WRK_JSON "))
            return report
    raise RuntimeError(
        f"wrk exited with {done.returncode} and no report:\n{done.stdout}\n{done.stderr}"
    )


def measured(
    key: str,
    sizes: Sizes,
    server: Server,
    token: str,
    script: Path,
    args: Sequence[str],
) -> Measure:
    """The timed run of one endpoint, with the server's and wrk's CPU time around it."""
    log(f"{LABELS[key]}: {sizes.duration_s} s, {sizes.connections} connections ...")
    cpu0, child0, (busy0, total0) = server.cpu_s(), _children_cpu(), _cpu_times()
    report = wrk(sizes, server.base, token, script, args, sizes.duration_s)
    cpu1, child1, (busy1, total1) = server.cpu_s(), _children_cpu(), _cpu_times()
    tail_s = quiesce(server)
    codes: dict[str, int] = {}
    applied = unmatched = starved = None
    threads: list[dict[str, Any]] = report["threads"]
    if script == CONTROL_SCRIPT:
        applied = sum(int(t["applied"] or 0) for t in threads)
        unmatched = sum(int(t["unmatched"] or 0) for t in threads)
        starved = sum(int(t["starved"] or 0) for t in threads)
        for t in threads:
            for status, n in t["codes"].items():
                codes[status] = codes.get(status, 0) + int(n)
        non_2xx = sum(n for status, n in codes.items() if not 200 <= int(status) <= 299)
    else:
        non_2xx = int(report["errors"]["status"])
    m = Measure(
        key=key,
        requests=int(report["requests"]),
        duration_s=report["duration_us"] / 1e6,
        latency_us={k: float(v) for k, v in report["latency_us"].items()},
        errors={k: int(v) for k, v in report["errors"].items()},
        codes=codes,
        non_2xx=non_2xx,
        applied=applied,
        unmatched=unmatched,
        starved=starved,
        server_cpu_s=cpu1 - cpu0,
        wrk_cpu_s=child1 - child0,
        busy_share=(busy1 - busy0) / (total1 - total0) if total1 > total0 else 0.0,
        server_rss_mib=server.rss_mib(),
        tail_s=tail_s,
    )
    log(
        f"  {m.rate:,.0f} requests/s, p50 {m.ms('p50'):.1f} ms, p99 {m.ms('p99'):.1f} ms,"
        f" non-2xx {m.non_2xx}, server CPU {m.server_cpu_s:.1f} s"
    )
    return m


def warm(sizes: Sizes, server: Server, token: str, script: Path, args: Sequence[str]) -> None:
    if sizes.warmup_s > 0:
        wrk(sizes, server.base, token, script, args, sizes.warmup_s)
        quiesce(server)


def quiesce(server: Server) -> float:
    """Waits until the server has finished the requests wrk left in flight when it stopped
    (its CPU time stands still for QUIET_S); the seconds waited."""
    t0 = time.monotonic()
    last = server.cpu_s()
    while time.monotonic() - t0 < QUIESCE_TIMEOUT_S:
        time.sleep(QUIET_S)
        now = server.cpu_s()
        if now - last < QUIET_CPU_S:
            break
        last = now
    return time.monotonic() - t0


# --------------------------------------------------------------------------- checks


def http_get(url: str, token: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _count_nodes(nodes: Sequence[dict[str, Any]]) -> list[str]:
    ids: list[str] = []
    for node in nodes:
        ids.append(node["id"])
        ids += _count_nodes(node.get("children", []))
    return ids


def tree_pages(fx: Fixture) -> list[str]:
    """Every page of every list, in order: the first without a cursor, then each with the
    cursor the page before it gave (read through the service, as the Link header gives)."""
    paths: list[str] = []
    for list_id in fx.lists:
        after: str | None = None
        while True:
            page = fx.services.tasks.tree_page(fx.actor, list_id, limit=TREE_PAGE, after=after)
            query = f"limit={TREE_PAGE}" + (f"&after={after}" if after else "")
            paths.append(f"/api/lists/{list_id}/tasks?{query}")
            if page.next_after is None:
                break
            after = page.next_after
    return paths


def check_endpoints(fx: Fixture, kalends: Server, bare: Server) -> list[str]:
    """One request to each endpoint, its answer checked against the service's."""
    problems: list[str] = []
    for path in ("/bare", "/bare-async"):
        status, body = http_get(bare.base + path, fx.token)
        if status != 200 or body != BARE_BODY:
            problems.append(f"bare {path}: {status} {body!r}")
    base = kalends.base
    status, body = http_get(f"{base}/api/lists/{fx.lists[0]}/tasks", fx.token)
    if status != 200 or not isinstance(body, list):
        problems.append(f"list tasks: {status} {str(body)[:300]}")
    else:
        ids = _count_nodes(body)
        tree: list[TreeNode] = fx.services.tasks.tree(fx.actor, fx.lists[0])
        wanted = _count_nodes([n.to_json() for n in tree])
        if len(ids) != fx.list_sizes[0] or sorted(ids) != sorted(wanted):
            problems.append(
                f"list tasks: {len(ids)} tasks answered, {fx.list_sizes[0]} in the list"
            )
    pages: list[str] = []
    for path in tree_pages(fx)[: fx.list_sizes[0]]:
        if not path.startswith(f"/api/lists/{fx.lists[0]}/"):
            break
        status, body = http_get(base + path, fx.token)
        if status != 200 or not isinstance(body, list):
            problems.append(f"list tasks, a page: {status} {str(body)[:300]}")
            break
        pages += _count_nodes(body)
    tree = fx.services.tasks.tree(fx.actor, fx.lists[0])
    if pages != _count_nodes([n.to_json() for n in tree]):
        problems.append(f"list tasks, pages: {len(pages)} tasks answered in order, not the list's")
    task = fx.tasks[len(fx.tasks) // 2]
    status, body = http_get(f"{base}/api/tasks/{task}", fx.token)
    if status != 200 or not isinstance(body, dict) or body.get("id") != str(task):
        problems.append(f"task detail: {status} {str(body)[:300]}")
    ws, mission = fx.schedules[0]
    status, body = http_get(f"{base}/api/workspaces/{ws}/missions/{mission}/schedule", fx.token)
    doc = fx.services.schedules.detail(fx.actor, mission)
    if status != 200 or not isinstance(body, dict) or body.get("revision") != doc["revision"]:
        problems.append(f"schedule detail: {status} {str(body)[:300]}")
    return problems


def schedule_states(fx: Fixture) -> list[tuple[int, str]]:
    """(revision, state) of every schedule, read through the service until two reads in a
    row agree (a control wrk left in flight may still be landing)."""
    previous: list[tuple[int, str]] | None = None
    deadline = time.monotonic() + QUIESCE_TIMEOUT_S
    while True:
        out = []
        for _ws, mission in fx.schedules:
            doc = fx.services.schedules.detail(fx.actor, mission)
            out.append((int(doc["revision"]), str(doc["state"])))
        if out == previous or time.monotonic() > deadline:
            return out
        previous = out
        time.sleep(QUIET_S)


def write_schedules(fx: Fixture, path: Path) -> list[tuple[int, str]]:
    states = schedule_states(fx)
    for _revision, state in states:
        if state not in ("running", "paused"):
            raise RuntimeError(f"a schedule is {state}: the control run toggles running/paused")
    path.write_text(
        "".join(
            f"{ws} {mission} {revision} {state}\n"
            for (ws, mission), (revision, state) in zip(fx.schedules, states, strict=True)
        )
    )
    return states


def check_controls(
    fx: Fixture, before: list[tuple[int, str]], m: Measure, connections: int
) -> list[str]:
    """Every schedule's revision went up by the controls applied to it, its state flipped
    by their parity; in all, as many as the 2xx answers (plus those still in flight)."""
    problems: list[str] = []
    after = schedule_states(fx)
    total = 0
    for (ws, mission), (r0, s0), (r1, s1) in zip(fx.schedules, before, after, strict=True):
        delta = r1 - r0
        total += delta
        flipped = s0 != s1
        if delta < 0 or flipped != (delta % 2 == 1) or s1 not in ("running", "paused"):
            problems.append(
                f"control: schedule {mission} of {ws} went from revision {r0} {s0} to {r1} {s1}"
            )
    counted = m.applied or 0
    if not counted <= total <= counted + connections:
        problems.append(
            f"control: {total} controls recorded by the schedules, {counted} applied answers"
            f" counted (up to {connections} more may have been in flight at the end)"
        )
    return problems[:20]


# --------------------------------------------------------------------------- the run


@dataclass
class Verdict:
    label: str
    value: str
    target: str
    met: bool


@dataclass
class Report:
    sizes: Sizes
    fixture: dict[str, Any]
    load_before: tuple[float, float, float]
    measures: dict[str, Measure] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    server_exit: dict[str, int | None] = field(default_factory=dict)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    elapsed_s: float = 0.0
    control_recorded: int = 0

    @property
    def bare_rate(self) -> float:
        return max((self.measures[k].rate for k in JUDGED_BARE if k in self.measures), default=0)

    @property
    def bare_cpu_us(self) -> float:
        return min(
            (self.measures[k].cpu_us for k in JUDGED_BARE if k in self.measures),
            default=0,
        )

    def verdicts(self) -> list[Verdict]:
        out: list[Verdict] = []
        for key in KALENDS_KEYS:
            if key in self.measures:
                p99 = self.measures[key].ms("p99")
                out.append(
                    Verdict(
                        f"{LABELS[key]}: p99",
                        f"{p99:.1f} ms",
                        f"< {TARGET_P99_MS:g} ms",
                        p99 < TARGET_P99_MS,
                    )
                )
        bare = self.bare_rate
        for key in READS:
            if key in self.measures and bare > 0:
                share = self.measures[key].rate / bare
                out.append(
                    Verdict(
                        f"{LABELS[key]}: requests/s vs bare",
                        pct(share),
                        f">= {TARGET_SHARE:.0%}",
                        share >= TARGET_SHARE,
                    )
                )
        return out

    @property
    def missed(self) -> bool:
        return any(not v.met for v in self.verdicts())


def base_key(key: str) -> str:
    """The endpoint a key measures: ``plain-task`` measures ``task`` on the plain server."""
    return key.removeprefix("plain-")


def run(sizes: Sizes, directory: Path, rep: Report, only: Sequence[str]) -> None:
    url = f"sqlite:///{directory / 'kalends.db'}"
    fx = build_fixture(url, directory, sizes)
    rep.fixture = {
        "lists": len(fx.lists),
        "tasks": len(fx.tasks),
        "tasks_per_list": fx.list_sizes,
        "workspaces": sizes.workspaces,
        "schedules": len(fx.schedules),
        **fx.counts,
        "build_s": round(fx.build_s, 2),
    }
    owned_min = len(fx.schedules) // sizes.threads
    if owned_min <= sizes.connections // sizes.threads:
        raise SystemExit(
            f"{len(fx.schedules)} schedules over {sizes.threads} wrk threads leave fewer than"
            f" {sizes.connections // sizes.threads + 1} per thread, the connections each keeps"
        )
    rng = random.Random(SEED)

    def paths_file(key: str, lines: list[str]) -> list[str]:
        path = directory / f"{key}.paths"
        path.write_text("".join(line + "\n" for line in lines))
        return [str(path)]

    task_paths = [f"/api/tasks/{t}" for t in fx.tasks]
    rng.shuffle(task_paths)
    schedule_paths = [f"/api/workspaces/{w}/missions/{m}/schedule" for w, m in fx.schedules]
    rng.shuffle(schedule_paths)
    page_paths = tree_pages(fx)
    rep.fixture["pages"] = len(page_paths)
    args = {
        "bare1": paths_file("bare", ["/bare"]),
        "async": paths_file("async", ["/bare-async"]),
        "page": paths_file("page", page_paths),
        "tree": paths_file("tree", [f"/api/lists/{li}/tasks" for li in fx.lists]),
        "task": paths_file("task", task_paths),
        "schedule": paths_file("schedule", schedule_paths),
    }
    control_file = directory / "control.schedules"
    try:
        with ExitStack() as stack:
            kalends = stack.enter_context(
                running(
                    "kalends", kalends_argv(url, directory), directory, r"kalends serving on (\S+)"
                )
            )
            bare = stack.enter_context(
                running("bare", bare_argv(directory), directory, r"bare serving on (\S+)")
            )
            plain = stack.enter_context(
                running(
                    "plain",
                    kalends_argv(url, directory, "plain-runtime"),
                    directory,
                    r"kalends serving on (\S+)",
                    env={FAST_PATHS_ENV: "0"},
                )
            )
            servers = {"kalends": kalends, "bare": bare, "plain": plain}
            problems = check_endpoints(fx, kalends, bare) + check_endpoints(fx, plain, bare)
            rep.problems += problems
            if not problems:
                log("every endpoint answered as the services read: ok")
            wanted = [k for k in KEYS if k in BARE_KEYS or base_key(k) in only]
            for key in wanted if not problems else ():
                try:
                    if base_key(key) == "control":
                        target = plain if key in PLAIN_KEYS else kalends
                        # Each run's request IDs are its own: a second run must not repeat
                        # the first's.
                        tag = "p" if key in PLAIN_KEYS else ""
                        write_schedules(fx, control_file)
                        warm(
                            sizes,
                            target,
                            fx.token,
                            CONTROL_SCRIPT,
                            [str(control_file), str(sizes.threads), f"{tag}w"],
                        )
                        before = write_schedules(fx, control_file)
                        m = measured(
                            key,
                            sizes,
                            target,
                            fx.token,
                            CONTROL_SCRIPT,
                            [str(control_file), str(sizes.threads), f"{tag}m"],
                        )
                        rep.problems += check_controls(fx, before, m, sizes.connections)
                        if key == "control":
                            rep.control_recorded = sum(
                                r1 - r0
                                for (r0, _), (r1, _) in zip(
                                    before, schedule_states(fx), strict=True
                                )
                            )
                    else:
                        server = (
                            bare if key in BARE_KEYS else plain if key in PLAIN_KEYS else kalends
                        )
                        a = args["bare1" if key == "bare2" else base_key(key)]
                        warm(sizes, server, fx.token, PATHS_SCRIPT, a)
                        m = measured(key, sizes, server, fx.token, PATHS_SCRIPT, a)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    rep.problems.append(f"{LABELS[key]}: {exc}")
                    continue
                rep.measures[key] = m
                if m.non_2xx:
                    rep.problems.append(f"{LABELS[key]}: {m.non_2xx} non-2xx answers {m.codes}")
                if m.socket_errors:
                    rep.problems.append(f"{LABELS[key]}: socket errors {m.errors}")
                if m.starved:
                    rep.problems.append(f"{LABELS[key]}: {m.starved} requests had no free schedule")
            for name, server in servers.items():
                if server.proc.poll() is not None:
                    rep.problems.append(f"{name} exited early: {server.proc.returncode}")
            # Stopped here (ExitStack), before the exit statuses are read.
            stack.close()
            # uvicorn's own signal handling re-raises SIGTERM once it has shut down gracefully.
            clean = {"kalends": (0,), "bare": (0, -signal.SIGTERM), "plain": (0,)}
            for name, server in servers.items():
                code = server.proc.returncode
                rep.server_exit[name] = code
                if code not in clean[name]:
                    rep.problems.append(f"{name} stopped with exit status {code}:\n{server.tail()}")
    finally:
        fx.services.store.close()


# --------------------------------------------------------------------------- output


def pct(share: float) -> str:
    """A share as a percentage, with a decimal below 10%."""
    return f"{share:.1%}" if share < 0.1 else f"{share:.0%}"


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("kalends", "fastapi", "starlette", "uvicorn", "pydantic", "SQLAlchemy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "?"
    out["uvicorn_loop"], out["uvicorn_http"] = SERVER_LOOP, SERVER_HTTP
    for dist in ("httptools",):
        out[dist] = importlib.metadata.version(dist)
    out["wrk"] = _wrk_version()
    out["platform"] = platform.platform()
    return out


def _wrk_version() -> str:
    wrk_path = shutil.which("wrk")
    if wrk_path is None:
        return "?"
    done = subprocess.run([wrk_path, "-v"], capture_output=True, text=True, check=False)
    first = (done.stdout or done.stderr).splitlines()
    return first[0].split(" [")[0].removeprefix("wrk ") if first else "?"


def print_table(rep: Report) -> None:
    v = _versions()
    s = rep.sizes
    f = rep.fixture
    print(
        f"kalends {v['kalends']}, FastAPI {v['fastapi']}, Starlette {v['starlette']}, uvicorn"
        f" {v['uvicorn']} ({v['uvicorn_loop']}, {v['uvicorn_http']}), pydantic {v['pydantic']},"
        f" SQLAlchemy {v['SQLAlchemy']}, SQLite {v['sqlite']}, Python {v['python']},"
        f" wrk {v['wrk']}, {v['platform']}"
    )
    print(
        f"{os.cpu_count()} CPUs shared by the server under load, wrk ({s.threads} threads,"
        f" {s.connections} connections) and whatever else runs on the machine;"
        f" {s.duration_s} s per endpoint after a {s.warmup_s} s warm-up"
    )
    if f:
        print(
            f"fixture (SQLite file, WAL, synchronous=NORMAL): {f['tasks']:,} tasks in"
            f" {f['lists']} lists ({f['scheduled']:,} scheduled, {f['reminded']:,} with"
            f" reminders, {f['completed']:,} completed, {f['series']} recurring checklists),"
            f" {f['schedules']} schedules in {f['workspaces']} workspaces ({f['played']}"
            f" running); seeded through the services in {f['build_s']:.1f} s (tasks"
            f" {f['tasks_ms'] / 1e3:.1f} s, schedules {f['schedules_ms'] / 1e3:.1f} s)"
        )
    header = (
        "endpoint",
        "route",
        "requests",
        "requests/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "non-2xx",
        "server CPU",
        "CPU/request",
        "wrk CPU",
        "vs bare",
        "vs bare, CPU",
    )
    body: list[tuple[str, ...]] = []
    bare = rep.bare_rate
    for key in KEYS:
        m = rep.measures.get(key)
        if m is None:
            continue
        body.append(
            (
                LABELS[key],
                ROUTES[key],
                f"{m.requests:,}",
                f"{m.rate:,.0f}",
                f"{m.ms('p50'):.1f}",
                f"{m.ms('p90'):.1f}",
                f"{m.ms('p99'):.1f}",
                f"{m.ms('max'):.1f}",
                str(m.non_2xx),
                f"{m.server_cpu_s:.1f} s ({m.server_cpu_s / m.duration_s:.0%})",
                f"{m.cpu_us:,.0f} us" if m.requests else "-",
                f"{m.wrk_cpu_s:.2f} s",
                pct(m.rate / bare) if bare else "-",
                pct(rep.bare_cpu_us / m.cpu_us) if m.cpu_us and rep.bare_cpu_us else "-",
            )
        )
    print()
    print("\n".join(grid(header, body, set(range(2, len(header))))))
    print(
        "server CPU: the serving process's user + system time over the run (% of one CPU);"
        " vs bare: requests/s over the better bare run's; vs bare, CPU: the bare server's"
        " CPU time per request (the lower run's) over this endpoint's, a share that does not"
        " depend on how much of the machine the server got"
    )
    ceiling = rep.measures.get("async")
    if ceiling is not None and ceiling.rate:
        shares = ", ".join(
            f"{LABELS[k]} {pct(rep.measures[k].rate / ceiling.rate)}"
            for k in KALENDS_KEYS
            if k in rep.measures
        )
        print(
            "requests/s against the async def endpoint (no thread pool hop: the framework's"
            f" ceiling, not judged): {shares}"
        )
    fast = [
        (k, rep.measures[k], rep.measures[f"plain-{k}"])
        for k in KALENDS_KEYS
        if k in rep.measures and f"plain-{k}" in rep.measures
    ]
    if fast:
        said = "; ".join(
            f"{LABELS[k]} {m.rate / p.rate:.2f}x the requests/s,"
            f" {p.cpu_us / m.cpu_us:.2f}x less CPU a request, p99 {m.ms('p99'):.1f} ms"
            f" against {p.ms('p99'):.1f} ms"
            for k, m, p in fast
            if p.rate and m.cpu_us
        )
        print(f"kalends' fast paths against the framework's own ({FAST_PATHS_ENV}=0): {said}")
    busy = ", ".join(
        f"{LABELS[k]} {rep.measures[k].busy_share:.0%}" for k in KEYS if k in rep.measures
    )
    print(f"all CPUs busy over each run: {busy}")
    c = rep.measures.get("control")
    if c is not None:
        codes = ", ".join(f"{k}: {n:,}" for k, n in sorted(c.codes.items()))
        print(
            f"control: answers by status {codes}; {c.applied:,} applied; the schedules"
            f" recorded {rep.control_recorded:,} controls (answers wrk stopped waiting for at"
            " the end included)"
        )
    print()
    vs = rep.verdicts()
    vbody = [(x.label, x.value, x.target, "ok" if x.met else "MISS") for x in vs]
    print("\n".join(grid(("target (issue 8)", "measured", "target", "verdict"), vbody, {1})))
    if rep.sizes != DEFAULT:
        print("(the targets are stated for the full size; this run is smaller)")
    print()
    print("every check passed: ok" if not rep.problems else "CHECKS FAILED:")
    for p in rep.problems:
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
        "fixture": rep.fixture,
        "endpoints": {
            key: {
                "label": LABELS[key],
                "route": ROUTES[key],
                **{k: v for k, v in asdict(m).items() if k != "key"},
                "requests_per_s": round(m.rate, 1),
                "server_cpu_us_per_request": round(m.cpu_us, 1),
                "share_of_bare": round(m.rate / rep.bare_rate, 4) if rep.bare_rate else None,
            }
            for key, m in rep.measures.items()
        },
        "control_recorded": rep.control_recorded,
        "targets": [asdict(v) for v in rep.verdicts()],
        "verified": not rep.problems,
        "problems": rep.problems,
        "server_exit": rep.server_exit,
        "elapsed_s": round(rep.elapsed_s, 3),
        "load_average": {"start": rep.load_before, "end": rep.load_after, "cpus": os.cpu_count()},
    }
    return json.dumps(doc, indent=2)


# --------------------------------------------------------------------------- main


def _terminated(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smaller run: {QUICK.tasks:,} tasks in {QUICK.lists} lists, {QUICK.schedules}"
        f" schedules, {QUICK.duration_s} s per endpoint",
    )
    parser.add_argument("--lists", type=positive, help=f"lists (default {DEFAULT.lists})")
    parser.add_argument(
        "--tasks", type=positive, help=f"tasks in all the lists (default {DEFAULT.tasks:,})"
    )
    parser.add_argument(
        "--workspaces", type=positive, help=f"workspaces (default {DEFAULT.workspaces})"
    )
    parser.add_argument(
        "--schedules", type=positive, help=f"schedules in all (default {DEFAULT.schedules})"
    )
    parser.add_argument(
        "--duration", type=positive, help=f"seconds per endpoint (default {DEFAULT.duration_s})"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        help=f"untimed seconds per endpoint first (default {DEFAULT.warmup_s}; 0: none)",
    )
    parser.add_argument("--threads", type=positive, help=f"wrk threads (default {DEFAULT.threads})")
    parser.add_argument(
        "--connections", type=positive, help=f"wrk connections (default {DEFAULT.connections})"
    )
    parser.add_argument(
        "--only",
        help="measure only these kalends endpoints (comma-separated, of "
        f"{', '.join(KALENDS_KEYS + SHOWN)}) beside the bare ones; the targets of the others"
        " are then not judged",
    )
    args = parser.parse_args(argv)
    only: tuple[str, ...] = KALENDS_KEYS + SHOWN
    if args.only is not None:
        only = tuple(k.strip() for k in args.only.split(",") if k.strip())
        unknown = sorted(set(only) - set(KALENDS_KEYS + SHOWN))
        if unknown or not only:
            parser.error(f"--only: one or more of {', '.join(KALENDS_KEYS + SHOWN)}")
    base = QUICK if args.quick else DEFAULT
    sizes = Sizes(
        lists=args.lists or base.lists,
        tasks=args.tasks or base.tasks,
        workspaces=args.workspaces or base.workspaces,
        schedules=args.schedules or base.schedules,
        duration_s=args.duration or base.duration_s,
        warmup_s=base.warmup_s if args.warmup is None else max(0, args.warmup),
        threads=args.threads or base.threads,
        connections=args.connections or base.connections,
    )
    if sizes.schedules > sizes.workspaces * MAX_SCHEDULES:
        parser.error(
            f"--schedules: {sizes.workspaces} workspaces hold at most"
            f" {sizes.workspaces * MAX_SCHEDULES} ({MAX_SCHEDULES} each)"
        )
    if sizes.tasks < sizes.lists:
        parser.error("--tasks: at least one task per list")
    if sizes.connections < sizes.threads:
        parser.error("--connections: at least one per wrk thread")
    if shutil.which("wrk") is None:
        print(
            f"wrk is not installed: this benchmark drives the server with it ({WRK_INSTALL},"
            " Debian/Ubuntu package `wrk`)",
            file=sys.stderr,
        )
        return EXIT_NO_WRK
    if not KALENDS.exists():
        print(
            f"{KALENDS} is missing: install the project (`make run` or pip install -e .)",
            file=sys.stderr,
        )
        return EXIT_NO_WRK

    signal.signal(signal.SIGTERM, _terminated)
    t0 = time.perf_counter()
    rep = Report(sizes, {}, os.getloadavg())
    b = rep.load_before
    log(
        f"load average at the start {b[0]:.2f} {b[1]:.2f} {b[2]:.2f} on {os.cpu_count()} CPUs"
        " (shared by the server, wrk and anything else running)"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="kalends-bench-api-") as tmp:
            run(sizes, Path(tmp), rep, only)
    except KeyboardInterrupt as exc:
        log(f"interrupted ({str(exc) or 'Ctrl-C'}): the servers and wrk were stopped")
        return EXIT_INTERRUPTED
    rep.elapsed_s = time.perf_counter() - t0
    rep.load_after = os.getloadavg()
    a = rep.load_after
    log(f"load average at the end {a[0]:.2f} {a[1]:.2f} {a[2]:.2f}")
    if args.json:
        print(to_json(rep))
    else:
        print_table(rep)
    return 1 if rep.problems or rep.missed else 0


if __name__ == "__main__":
    sys.exit(main())
