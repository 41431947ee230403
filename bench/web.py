"""Web pages benchmark: a schedule's page, a workspace's schedules page and the Now page,
timed server-side in-process beside the HTTP API's detail read of the same schedules.

The fixture (``open_services`` on a temporary SQLite file, URL ``sqlite:///...``: WAL,
``synchronous=NORMAL``, kalends' default), all on a ``FakeClock`` that starts at
2026-03-02T09:00:00Z: the instance's owner account (``Accounts.bootstrap_owner``, then
``set_password``), one workspace (a temporary directory, ``Workspaces.add``) holding
``--schedules`` schedules (default 64, the most a workspace may hold), created through
``ScheduleService.create`` with ``bench/missions.py``'s configurations of its workspace 0
(eleven policies in ten zones, end bounds, checklist templates on every 4th, ``files``
conditions on every 6th) and each Played. One change to those configurations: a passage
quota (``maxPassages``, every 7th) is raised by 30, so that no schedule runs out of
passages before it holds its 30 results.

The results are made by kalends' own scheduling and settlement path, as the scheduler
tests make theirs (``tests/missions/test_scheduler_dst.py``): a ``Scheduler`` over an
in-process ``MemoryRuntime`` (``instant=False``) on the same fake clock, no document
written by hand. Rounds follow one another until every schedule keeps ``MAX_RESULTS``
(30) results. In a round every schedule without a pending passage gets a Run now
(``ScheduleService.run_now`` at its revision); the scheduler runs once (it admits those
passages and any scheduled slot due by then; a schedule with a checklist template gets
its checklist); each passage just started ends (``MemoryRuntime.report`` and
``finish``: every 11th exits 0 without a report, every 13th exits 1 without one, every
7th of the others reports ``failed``, the rest ``completed``, each report with a
one-sentence summary); the clock moves 30 s and the scheduler runs again (it observes
the passages and settles them, archiving each result in its document; a slot due by
then is admitted and ends the same way); the clock moves 30 minutes, so scheduled slots
fall due between rounds and the results mix ``manual`` and ``scheduled`` triggers.
Passages still pending after the last round settle in further 30 s steps. 30 rounds,
about 1,950 passages for 64 schedules: 40-60 s on a loaded 2-core machine. Afterwards
the clock stands still.

The application: ``create_app(ApiContext(services, accounts, ApiSettings(runtime_dir=...)),
access_log_enabled=False)``, the one ``kalends serve`` serves (the HTTP API and the web
pages), run in this process with its lifespan (as a server starts it) and driven through
``httpx.ASGITransport`` by an ``httpx.AsyncClient`` on one event loop. Every request
carries the owner's login session (``Accounts.login``: the ``kalends_session`` cookie),
the API's detail read included, so both sides authenticate the same way. The heap is
frozen (``gc.freeze()``) once the fixture is built, as ``kalends serve`` freezes it when
it serves; the garbage collector stays on, as in a server.

The endpoints, in this order, each warmed up (``WARMUP`` requests) and then timed over
``--samples`` requests (default 200; ``--quick``: 50 on 24 schedules, three pages, whose
fixture takes a third of the time), one at a time:

API detail      ``GET /api/workspaces/{id}/missions/{missionID}/schedule``: the schedules
                in turn;
schedule page   ``GET /w/{id}/schedules/{missionID}``: the schedules in turn (state and
                controls, policy card, 10 upcoming slots, the 30 results);
schedules page  ``GET /w/{id}/schedules`` and ``?after=<last ID of the previous page>``:
                the pages of eight in turn (the cursors read through
                ``ScheduleService.page`` beforehand);
Now page        ``GET /``: passages running, recent failures and the next 24 hours' launches
                over every schedule of the viewer's workspaces;
list page       ``GET /lists/{id}``: a list of the owner's holding a 500-task checklist
                (see below), the whole tree with its controls;
calendar feed   ``GET /feeds/{secret}.ics`` of a second person (see below), whole;
feed, 304       the same with ``If-None-Match`` naming the feed's ETag: a calendar app's
                poll while nothing changed.

The feed's fixture, built after the results are filled: a second person, ``feeder``,
who owns a list holding ``FEED_TASKS`` (2,000) open tasks, each with a due value: every
other one a date (the next 120 days in turn; every third of those with a reminder at
08:00 in its zone), the others a time (09:30 on those days, in four zones in turn, each
with a reminder 30 minutes before), written through ``TaskService.create`` and
``set_schedule``; and a viewer of a second workspace of the owner's holding
``FEED_SCHEDULES`` (50) schedules (``bench/missions.py``'s configurations of its
workspace 1, each Played), so that the feed holds 2,000 tasks and the next 30 days'
passages of 50 schedules. Its address comes from ``Feeds.create``. Before the feed's
warm-up, one request is timed alone: the first render, which writes every event's text
(kept by value afterwards); the table shows it as the cold feed.

The list page's fixture, built last: a list of the owner's holding ``TREE_ROOTS`` (50)
roots, each with ``TREE_CHILDREN`` (3) items, each of those with ``TREE_GRANDCHILDREN``
(2): 500 open tasks, three levels deep, written through ``TaskService.create``; every
fifth root has a due day (some past, so the page says "overdue") and a priority
(``set_schedule``), every third item a tag.

Each request is timed with ``time.perf_counter_ns`` from the client's call to the
complete answer in memory: the application's whole work (routing, session check,
services, rendering) plus the in-process transport's (no socket, no HTTP parsing). Each
answer is checked after its timing: status 200; the API detail is the schedule asked for
with 30 results; a schedule page holds its schedule's title (HTML-escaped); a schedules
page holds the titles of its eight; the Now page holds its heading; the list page holds
its first and last task; the feed is 200 with the first task's title and a passage, the
conditional request 304 with no body. Targets (on the median): a schedule page < 30 ms,
the schedules page < 20 ms, the list page < 40 ms, the calendar feed and its 304
< 150 ms; the Now page, the cold feed and the API detail
have none. The ratio column is each endpoint's median over the API detail's.

``--profile DIR``: afterwards, ``--samples`` more requests of each page under
``cProfile`` (the event loop's thread and the request worker thread, which runs the
pages: the pool is narrowed to that one thread while profiling); writes
``schedule.prof``, ``schedules.prof``, ``now.prof`` and ``tree.prof`` (the list page)
into DIR and prints each one's top entries in the worker thread (the page's own work)
to stderr. The timed series are not
profiled.

Run from the repository root: ``python bench/web.py [--json] [--quick] [--profile DIR]``.
The exit status is 1 when a target is missed or a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import html
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as wall
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))

import httpx  # noqa: E402
from anyio import to_thread  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from bench.common import grid, log, positive  # noqa: E402
from bench.missions import schedule_config  # noqa: E402
from kalends.api import ApiContext, ApiSettings, create_app  # noqa: E402
from kalends.api.context import SESSION_COOKIE  # noqa: E402
from kalends.auth import Accounts  # noqa: E402
from kalends.bootstrap import Services, open_services  # noqa: E402
from kalends.clock import FakeClock  # noqa: E402
from kalends.missions.limits import MAX_PAGE, MAX_RESULTS, MAX_SCHEDULES  # noqa: E402
from kalends.missions.runtime.memory import MemoryRuntime  # noqa: E402
from kalends.missions.scheduler import Scheduler  # noqa: E402
from kalends.reminders import Channel  # noqa: E402
from kalends.tasks import Reminder, Role, Schedule, TimedValue  # noqa: E402

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday
SETTLE = timedelta(seconds=30)  # when an admitted passage's wake is due again
BETWEEN_ROUNDS = timedelta(minutes=30)
QUOTA_LIFT = 30  # added to every passage quota of the configurations
MAX_ROUNDS = 200
WARMUP = 20
PROFILE_TOP = 15
HANDLE = "owner"
PASSWORD = "bench password, long enough"
BASE_URL = "http://127.0.0.1:8000"

FEED_TASKS = 2_000
FEED_SCHEDULES = 50
FEED_DAYS = 120
FEED_ZONES = ("Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney")
FEEDER = "feeder"
# The tree page's checklist: TREE_ROOTS roots, each with TREE_CHILDREN items, each of
# those with TREE_GRANDCHILDREN: 50 x (1 + 3 x (1 + 2)) = 500 tasks.
TREE_ROOTS = 50
TREE_CHILDREN = 3
TREE_GRANDCHILDREN = 2

KEYS = ("api", "schedule", "schedules", "now", "tree", "feed", "feed_304")
LABELS = {
    "api": "API detail (JSON)",
    "schedule": "schedule page",
    "schedules": "schedules page (8)",
    "now": "Now page",
    "tree": "list page (500 tasks)",
    "feed_cold": "calendar feed, first (cold)",
    "feed": "calendar feed",
    "feed_304": "calendar feed, 304",
}
TARGETS_MS = {
    "schedule": 30.0,
    "schedules": 20.0,
    "tree": 40.0,
    "feed": 150.0,
    "feed_304": 150.0,
}


@dataclass(frozen=True)
class Sizes:
    schedules: int
    samples: int


DEFAULT = Sizes(schedules=MAX_SCHEDULES, samples=200)
QUICK = Sizes(schedules=3 * MAX_PAGE, samples=50)


# --------------------------------------------------------------------------- fixture


@dataclass
class Fixture:
    services: Services
    accounts: Accounts
    clock: FakeClock
    actor: uuid.UUID
    workspace: uuid.UUID
    schedules: list[uuid.UUID]
    titles: dict[uuid.UUID, str]
    pages: list[tuple[str | None, list[uuid.UUID]]]
    """Each page of eight: the ``after`` cursor that reads it and its schedules."""
    rounds: int = 0
    passages: int = 0
    triggers: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    create_s: float = 0.0
    fill_s: float = 0.0
    feed_path: str = ""
    feed_wants: tuple[str, ...] = ()
    feed_s: float = 0.0
    tree_path: str = ""
    tree_wants: tuple[str, ...] = ()
    tree_s: float = 0.0


def _config(s: int) -> dict[str, Any]:
    config = schedule_config(0, s)
    end = config.get("end")
    if end and "maxPassages" in end:
        end["maxPassages"] += QUOTA_LIFT
    return config


def build_fixture(directory: Path, schedules: int) -> Fixture:
    clock = FakeClock(START)
    services = open_services(f"sqlite:///{directory / 'kalends.db'}", clock=clock)
    accounts = Accounts(services.store)
    actor, _link = accounts.bootstrap_owner(HANDLE, "Owner")
    accounts.set_password(actor, PASSWORD, current_password=None)
    (directory / "workspace").mkdir()
    ws = services.workspaces.add(actor, directory / "workspace", "workspace").id
    log(f"creating and playing {schedules} schedules ...")
    t0 = time.perf_counter()
    ids: list[uuid.UUID] = []
    titles: dict[uuid.UUID, str] = {}
    for s in range(schedules):
        config = _config(s)
        receipt = services.schedules.create(actor, ws, config, request_id=f"create-{s:04d}")
        if receipt.status != "created" or receipt.mission_id is None:
            raise RuntimeError(f"create returned {receipt!r}")
        sid = receipt.mission_id
        services.schedules.play(actor, sid, request_id=f"play-{s:04d}", expected_revision=1)
        ids.append(sid)
        titles[sid] = str(config["title"])
    fx = Fixture(services, accounts, clock, actor, ws, ids, titles, [])
    fx.create_s = time.perf_counter() - t0
    _fill(fx)
    after: str | None = None
    while True:
        page = services.schedules.page(actor, ws, after=after, limit=MAX_PAGE)
        fx.pages.append((after, [uuid.UUID(d["id"]) for d in page.items]))
        if page.next_after is None:
            break
        after = page.next_after
    _feed_fixture(fx, directory)
    _tree_fixture(fx)
    return fx


def _tree_fixture(fx: Fixture) -> None:
    """The owner's list of a 500-task checklist, three levels deep (see the module
    docstring): every 5th root due on a day with a priority, every 3rd item tagged."""
    services = fx.services
    t0 = time.perf_counter()
    total = TREE_ROOTS * (1 + TREE_CHILDREN * (1 + TREE_GRANDCHILDREN))
    log(f"creating the list page's {total}-task checklist ...")
    trip = services.directory.create_list(fx.actor, "checklist").id
    last = ""
    for r in range(TREE_ROOTS):
        root = services.tasks.create(fx.actor, trip, f"Step {r:02d}")
        if r % 5 == 0:
            day = START.date() + timedelta(days=r - 10)
            services.tasks.set_schedule(
                fx.actor, root.id, root.revision, Schedule(due=day, priority=1 + r % 3)
            )
        for c in range(TREE_CHILDREN):
            tags = ("errand",) if c % 3 == 0 else ()
            child = services.tasks.create(
                fx.actor, trip, f"Item {r:02d}.{c}", parent=root.id, tags=tags
            )
            for g in range(TREE_GRANDCHILDREN):
                last = f"Detail {r:02d}.{c}.{g}"
                services.tasks.create(fx.actor, trip, last, parent=child.id)
    fx.tree_path = f"/lists/{trip}"
    fx.tree_wants = ("Step 00", last)
    fx.tree_s = time.perf_counter() - t0
    log(f"  list fixture in {fx.tree_s:.1f} s")


def _feed_fixture(fx: Fixture, directory: Path) -> None:
    """The feeder's list of due tasks and a workspace of schedules they view (see the
    module docstring), and the address of their feed."""
    services = fx.services
    t0 = time.perf_counter()
    log(f"creating the feed's {FEED_TASKS} due tasks and {FEED_SCHEDULES} schedules ...")
    feeder = services.directory.add_actor(FEEDER, "Feeder").id
    chores = services.directory.create_list(feeder, "chores").id
    titles: list[str] = []
    for n in range(FEED_TASKS):
        day = START.date() + timedelta(days=1 + (n // 2) % FEED_DAYS)
        zone = FEED_ZONES[n % len(FEED_ZONES)]
        title = f"Chore {n:04d}"
        titles.append(title)
        task = services.tasks.create(feeder, chores, title)
        services.tasks.set_schedule(
            feeder, task.id, task.revision, _due_schedule(n, day, zone, feeder)
        )
    (directory / "feeds").mkdir()
    ws = services.workspaces.add(fx.actor, directory / "feeds", "feeds").id
    services.workspaces.set_member(fx.actor, ws, feeder, Role.VIEWER)
    for s in range(FEED_SCHEDULES):
        config = schedule_config(1, s)
        receipt = services.schedules.create(fx.actor, ws, config, request_id=f"feed-{s:04d}")
        if receipt.mission_id is None:
            raise RuntimeError(f"create returned {receipt!r}")
        services.schedules.play(
            fx.actor, receipt.mission_id, request_id=f"feed-play-{s:04d}", expected_revision=1
        )
    made = services.feeds.create(feeder, base_url=BASE_URL)
    fx.feed_path = made.url.removeprefix(BASE_URL)
    fx.feed_wants = (f"SUMMARY:{titles[0]}", "UID:passage-")
    fx.feed_s = time.perf_counter() - t0
    log(f"  feed fixture in {fx.feed_s:.1f} s")


def _due_schedule(n: int, day: date, zone: str, recipient: uuid.UUID) -> Schedule:
    """Task ``n``'s due value: a date (every third with a reminder at 08:00), or 09:30 in
    ``zone`` with a reminder 30 minutes before."""
    if n % 2:
        morning = TimedValue.parse(datetime.combine(day, wall(8)).isoformat(), zone, "due")
        reminders = (
            () if n % 3 else (Reminder(channel=Channel.PUSH, time=morning, recipient_id=recipient),)
        )
        return Schedule(due=day, reminders=reminders)
    due = TimedValue.parse(datetime.combine(day, wall(9, 30)).isoformat(), zone, "due")
    before = TimedValue.parse(datetime.combine(day, wall(9)).isoformat(), zone, "due")
    return Schedule(
        due=due, reminders=(Reminder(channel=Channel.PUSH, time=before, recipient_id=recipient),)
    )


def _fill(fx: Fixture) -> None:
    """Rounds of Run now, admission, report and settlement until every schedule keeps
    ``MAX_RESULTS`` results (see the module docstring)."""
    svc = fx.services.schedules
    runtime = MemoryRuntime(clock=fx.clock, instant=False)
    scheduler = Scheduler(fx.services.store, runtime, owner="bench-web")
    ended: set[str] = set()
    t0 = time.perf_counter()
    log(f"filling {MAX_RESULTS} results per schedule through the scheduler ...")
    while True:
        docs = {sid: svc.detail(fx.actor, sid) for sid in fx.schedules}
        short = [sid for sid, doc in docs.items() if len(doc["results"]) < MAX_RESULTS]
        if not short:
            break
        if fx.rounds >= MAX_ROUNDS:
            raise RuntimeError(f"{len(short)} schedules short of {MAX_RESULTS} results")
        fx.rounds += 1
        for sid in short:
            doc = docs[sid]
            if doc.get("pending"):
                continue
            svc.run_now(
                fx.actor,
                sid,
                request_id=f"run-now-{fx.rounds:04d}-{str(sid)[-12:]}",
                expected_revision=doc["revision"],
            )
        scheduler.run_once()
        _end_passages(runtime, ended)
        fx.clock.advance(SETTLE)
        scheduler.run_once()
        _end_passages(runtime, ended)
        fx.clock.advance(BETWEEN_ROUNDS)
        if fx.rounds % 10 == 0:
            took = time.perf_counter() - t0
            log(f"  round {fx.rounds}: {len(short)} schedules short ({took:.1f} s)")
    # Passages admitted in the last settling look settle too: no page shows one running.
    for _ in range(MAX_ROUNDS):
        docs = {sid: svc.detail(fx.actor, sid) for sid in fx.schedules}
        if not any(doc.get("pending") for doc in docs.values()):
            break
        fx.clock.advance(SETTLE)
        scheduler.run_once()
        _end_passages(runtime, ended)
    else:
        raise RuntimeError("a passage is still pending")
    for doc in docs.values():
        for r in doc["results"]:
            fx.triggers[r["trigger"]] = fx.triggers.get(r["trigger"], 0) + 1
            fx.outcomes[r["outcome"]] = fx.outcomes.get(r["outcome"], 0) + 1
    fx.passages = len(ended)
    fx.fill_s = time.perf_counter() - t0
    log(f"  {fx.rounds} rounds, {fx.passages} passages in {fx.fill_s:.1f} s")


def _end_passages(runtime: MemoryRuntime, ended: set[str]) -> None:
    """Each passage started since the last call ends: every 11th exits 0 without a report
    (``ended-without-report``), every 13th exits 1 without one (``failed``, ``exit status
    1``), every 7th of the others reports ``failed`` and exits 2, the rest report
    ``completed`` and exit 0."""
    for session in runtime.sessions():
        if session in ended:
            continue
        ended.add(session)
        n = len(ended)
        if n % 11 == 0 or n % 13 == 0:
            runtime.finish(session, status=0 if n % 11 == 0 else 1)
            continue
        failed = n % 7 == 0
        summary = (
            f"Passage {n}: the job stopped at step 2; the log names the cause."
            if failed
            else f"Passage {n}: built, checked and reported {n % 13} changed files."
        )
        runtime.report(session, "failed" if failed else "completed", summary)
        runtime.finish(session, status=2 if failed else 0)


# --------------------------------------------------------------------------- timing


@dataclass
class Series:
    key: str
    samples_ms: list[float] = field(default_factory=list)
    bytes: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p95(self) -> float:
        if len(self.samples_ms) < 2:
            return self.median
        return statistics.quantiles(self.samples_ms, n=20, method="inclusive")[-1]

    @property
    def per_second(self) -> float:
        return 1e3 * len(self.samples_ms) / sum(self.samples_ms)

    @property
    def target_ms(self) -> float | None:
        return TARGETS_MS.get(self.key)

    @property
    def met(self) -> bool | None:
        target = self.target_ms
        return None if target is None else self.median < target


@dataclass(frozen=True)
class Call:
    """One request and what its answer must hold."""

    path: str
    wants: tuple[str, ...] = ()
    schedule: uuid.UUID | None = None
    status: int = 200
    headers: dict[str, str] | None = None


def _calls(fx: Fixture) -> dict[str, list[Call]]:
    ws = fx.workspace
    pages: list[Call] = []
    for after, ids in fx.pages:
        path = f"/w/{ws}/schedules" + (f"?after={after}" if after else "")
        pages.append(Call(path, tuple(html.escape(fx.titles[s]) for s in ids)))
    return {
        "api": [
            Call(f"/api/workspaces/{ws}/missions/{s}/schedule", schedule=s) for s in fx.schedules
        ],
        "schedule": [
            Call(f"/w/{ws}/schedules/{s}", (html.escape(fx.titles[s]),)) for s in fx.schedules
        ],
        "schedules": pages,
        "now": [Call("/", ("<h1",))],
        "tree": [Call(fx.tree_path, fx.tree_wants)],
        "feed": [Call(fx.feed_path, fx.feed_wants)],
    }


class Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def check(self, key: str, call: Call, answer: httpx.Response) -> None:
        if answer.status_code != call.status:
            self._add(f"{key} {call.path}: status {answer.status_code}")
            return
        if call.status == 304:
            if answer.content:
                self._add(f"{key} {call.path}: a 304 with a body")
            return
        if call.schedule is not None:
            doc = answer.json()
            if doc.get("id") != str(call.schedule) or len(doc.get("results") or ()) != MAX_RESULTS:
                self._add(f"{key} {call.path}: {doc.get('id')}, {len(doc.get('results') or ())}")
            return
        text = answer.text
        missing = [w for w in call.wants if w not in text]
        if missing:
            self._add(f"{key} {call.path}: misses {missing[0]!r}")

    def _add(self, text: str) -> None:
        if len(self.problems) < 20 and text not in self.problems:
            self.problems.append(text)


async def _series(
    client: httpx.AsyncClient, key: str, calls: list[Call], n: int, checker: Checker
) -> Series:
    out = Series(key)
    for i in range(n):
        call = calls[i % len(calls)]
        t0 = time.perf_counter_ns()
        answer = await client.get(call.path, headers=call.headers)
        out.samples_ms.append((time.perf_counter_ns() - t0) / 1e6)
        out.bytes = max(out.bytes, len(answer.content))
        checker.check(key, call, answer)
    return out


async def _profile(
    client: httpx.AsyncClient, calls: dict[str, list[Call]], n: int, directory: Path
) -> dict[str, str]:
    """The pages again under cProfile, on the event loop's thread and the one worker."""
    directory.mkdir(parents=True, exist_ok=True)
    to_thread.current_default_thread_limiter().total_tokens = 1
    out: dict[str, str] = {}
    for key in ("schedule", "schedules", "now", "tree"):
        loop_prof, worker_prof = cProfile.Profile(), cProfile.Profile()
        await to_thread.run_sync(worker_prof.enable)
        loop_prof.enable()
        for i in range(n):
            await client.get(calls[key][i % len(calls[key])].path)
        loop_prof.disable()
        await to_thread.run_sync(worker_prof.disable)
        path = directory / f"{key}.prof"
        pstats.Stats(loop_prof).add(worker_prof).dump_stats(path)
        # The worker runs the page; the loop's thread mostly waits for it.
        for order in ("tottime", "cumulative"):
            text = io.StringIO()
            pstats.Stats(worker_prof, stream=text).sort_stats(order).print_stats(PROFILE_TOP)
            log(f"--- {LABELS[key]}, {n} requests, worker thread, by {order} ({path})")
            log(text.getvalue().split("\n", 4)[-1].rstrip())
        out[key] = str(path)
    return out


async def measure(
    app: FastAPI, fx: Fixture, cookie: str, samples: int, profile: Path | None
) -> tuple[list[Series], list[str], dict[str, str]]:
    calls = _calls(fx)
    checker = Checker()
    results: list[Series] = []
    profiles: dict[str, str] = {}
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url=BASE_URL, cookies={SESSION_COOKIE: cookie}
        ) as client,
    ):
        for key in KEYS:
            if key == "feed":
                # The first render writes every event's text: timed alone, before warm-up.
                results.append(await _series(client, "feed_cold", calls["feed"], 1, checker))
            if key == "feed_304":
                answer = await client.get(fx.feed_path)
                etag = answer.headers.get("etag", "")
                calls[key] = [Call(fx.feed_path, status=304, headers={"If-None-Match": etag})]
            log(f"{LABELS[key]}: {WARMUP} warm-up requests, then {samples} timed ...")
            await _series(client, key, calls[key], WARMUP, checker)
            results.append(await _series(client, key, calls[key], samples, checker))
        if profile is not None:
            profiles = await _profile(client, calls, samples, profile)
    return results, checker.problems, profiles


# --------------------------------------------------------------------------- report


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("kalends", "fastapi", "starlette", "jinja2", "httpx", "SQLAlchemy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "?"
    out["platform"] = platform.platform()
    return out


@dataclass
class Report:
    sizes: Sizes
    fixture: Fixture
    series: list[Series]
    problems: list[str]
    profiles: dict[str, str]
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    elapsed_s: float = 0.0

    @property
    def api_median(self) -> float:
        return next(s.median for s in self.series if s.key == "api")

    @property
    def missed(self) -> list[Series]:
        return [s for s in self.series if s.met is False]


def print_table(rep: Report) -> None:
    v = _versions()
    fx = rep.fixture
    print(
        f"kalends {v['kalends']}, FastAPI {v['fastapi']}, Starlette {v['starlette']},"
        f" Jinja2 {v['jinja2']}, httpx {v['httpx']}, SQLAlchemy {v['SQLAlchemy']},"
        f" SQLite {v['sqlite']}, Python {v['python']}, {v['platform']}"
    )
    triggers = ", ".join(f"{k} {n}" for k, n in sorted(fx.triggers.items()))
    outcomes = ", ".join(f"{k} {n}" for k, n in sorted(fx.outcomes.items()))
    print(
        f"fixture: 1 workspace, {len(fx.schedules)} schedules played, {MAX_RESULTS} results each"
        f" ({triggers}; {outcomes}); {fx.passages} passages settled in {fx.rounds} rounds"
        f" ({fx.create_s:.1f} s to create, {fx.fill_s:.1f} s to fill)"
    )
    print(
        f"feed: {FEED_TASKS} open tasks with a due value (dates and times, with reminders)"
        f" and the next 30 days of {FEED_SCHEDULES} played schedules"
        f" ({fx.feed_s:.1f} s to create)"
    )
    print(
        "in-process: httpx.ASGITransport, one event loop, the owner's session cookie;"
        f" {WARMUP} warm-up requests, then {rep.sizes.samples} timed per endpoint"
    )
    header = (
        "endpoint",
        "requests",
        "median ms",
        "p95 ms",
        "req/s",
        "max KiB",
        "target (median)",
        "verdict",
        "ratio to API detail",
    )
    body: list[tuple[str, ...]] = []
    for s in rep.series:
        target = s.target_ms
        body.append(
            (
                LABELS[s.key],
                str(len(s.samples_ms)),
                f"{s.median:.2f}",
                f"{s.p95:.2f}",
                f"{s.per_second:,.0f}",
                f"{s.bytes / 1024:.1f}",
                "-" if target is None else f"< {target:g} ms",
                "-" if s.met is None else ("PASS" if s.met else "FAIL"),
                "1.0x" if s.key == "api" else f"{s.median / rep.api_median:.1f}x",
            )
        )
    print()
    print("\n".join(grid(header, body, {1, 2, 3, 4, 5, 8})))
    print("req/s: requests over the summed time of the series, one request at a time")
    print()
    print("every answer checked: ok" if not rep.problems else "VERIFICATION FAILED:")
    for p in rep.problems:
        print(f"  {p}")
    for key, path in rep.profiles.items():
        print(f"profile of the {LABELS[key]}: {path}")
    b, a = rep.load_before, rep.load_after
    print(
        f"total wall time {rep.elapsed_s:.1f}s; load average (1, 5, 15 min) at the start"
        f" {b[0]:.2f} {b[1]:.2f} {b[2]:.2f}, at the end {a[0]:.2f} {a[1]:.2f} {a[2]:.2f}"
        f" on {os.cpu_count()} CPUs"
    )


def to_json(rep: Report) -> str:
    fx = rep.fixture
    doc: dict[str, Any] = {
        "versions": _versions(),
        "sizes": {"schedules": len(fx.schedules), "results": MAX_RESULTS, **vars(rep.sizes)},
        "fixture": {
            "rounds": fx.rounds,
            "passages": fx.passages,
            "triggers": fx.triggers,
            "outcomes": fx.outcomes,
            "create_s": round(fx.create_s, 3),
            "fill_s": round(fx.fill_s, 3),
        },
        "warmup": WARMUP,
        "endpoints": {
            s.key: {
                "label": LABELS[s.key],
                "samples": len(s.samples_ms),
                "median_ms": round(s.median, 4),
                "p95_ms": round(s.p95, 4),
                "per_second": round(s.per_second, 1),
                "max_bytes": s.bytes,
                "target_ms": s.target_ms,
                "met": s.met,
                "ratio_to_api": round(s.median / rep.api_median, 3),
                "samples_ms": [round(x, 4) for x in s.samples_ms],
            }
            for s in rep.series
        },
        "verified": not rep.problems,
        "problems": rep.problems,
        "profiles": rep.profiles,
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
        help=f"{QUICK.schedules} schedules, {QUICK.samples} timed requests per endpoint",
    )
    parser.add_argument(
        "--schedules",
        type=positive,
        help=f"schedules in the workspace (default and most {MAX_SCHEDULES})",
    )
    parser.add_argument(
        "--samples", type=positive, help=f"timed requests per endpoint (default {DEFAULT.samples})"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="afterwards profile the four pages; write DIR/{schedule,schedules,now,tree}.prof",
    )
    args = parser.parse_args(argv)
    base = QUICK if args.quick else DEFAULT
    sizes = Sizes(schedules=args.schedules or base.schedules, samples=args.samples or base.samples)
    if sizes.schedules > MAX_SCHEDULES:
        parser.error(f"--schedules: a workspace holds at most {MAX_SCHEDULES}")

    t0 = time.perf_counter()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kalends-bench-web-") as tmp:
        directory = Path(tmp)
        fx = build_fixture(directory, sizes.schedules)
        try:
            grant = fx.accounts.login(HANDLE, PASSWORD)
            ctx = ApiContext(
                services=fx.services,
                accounts=fx.accounts,
                settings=ApiSettings(base_url=BASE_URL, runtime_dir=directory / "runtime"),
            )
            app = create_app(ctx, access_log_enabled=False)
            gc.collect()
            gc.freeze()
            series, problems, profiles = asyncio.run(
                measure(app, fx, grant.secret, sizes.samples, args.profile)
            )
        finally:
            fx.services.store.close()
    rep = Report(sizes, fx, series, problems, profiles, load_before)
    rep.elapsed_s = time.perf_counter() - t0
    rep.load_after = os.getloadavg()
    if args.json:
        print(to_json(rep))
    else:
        print_table(rep)
    return 1 if rep.problems or rep.missed else 0


if __name__ == "__main__":
    sys.exit(main())
