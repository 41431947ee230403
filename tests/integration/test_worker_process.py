"""`kalends worker` as a real process on a SQLite file, on the real clock.

Reminders fall due a few seconds after real now; the worker, started as
``python -m kalends worker``, sleeps until then and delivers them through Apprise
to a real HTTP server on 127.0.0.1 (json:// and ntfy:// destinations). SIGTERM
stops it gracefully: exit 0 within seconds, no lease left behind, and a send in
progress is finished and acknowledged while the rest of its batch is released.

The HTTP receiver here is a small one of this module's own: the fixtures of
``tests/reminders/conftest.py`` are not visible from ``tests/integration``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from kalends.auth.grants import Privilege
from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.cli.worker import default_owner
from kalends.reminders.destinations import Destinations
from kalends.reminders.outbox import MAX_ATTEMPTS, Intent, Outbox
from kalends.storage.task_tables import reminder_intents
from kalends.storage.testing import StorageTarget
from kalends.tasks import Task, parse_schedule

HOST = "127.0.0.1"
# How long the worker may take to stop after SIGTERM.
STOP_WITHIN = 10.0
# How long a test waits for deliveries (process start-up included).
DELIVERY_WITHIN = 30.0
# How soon a sleeping worker must see a reminder written meanwhile (it would otherwise
# sleep up to a minute).
WOKEN_WITHIN = 10.0
ENV_ACTOR, ENV_DATABASE = "KALENDS_ACTOR", "KALENDS_DATABASE_URL"


# --------------------------------------------------------------------------- a receiver


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that records every request and answers ``200 {}``.

    Each answer waits ``delay`` seconds; ``arrived`` is set when a request comes in.
    """

    port: int = 0
    delay: float = 0.0
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Event = field(default_factory=threading.Event)

    def received(self) -> list[Received]:
        with self.lock:
            return list(self.requests)

    def url(self, scheme: str, path: str) -> str:
        return f"{scheme}://{HOST}:{self.port}/{path}"


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with receiver.lock:
                receiver.requests.append(Received(self.path, dict(self.headers.items()), body))
                delay = receiver.delay
            receiver.arrived.set()
            if delay:
                time.sleep(delay)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            """Keeps the test output quiet."""

    return Handler


class _Server(ThreadingHTTPServer):
    # server_close() waits for the request threads, so none outlives its test and
    # writes into the next test's captured output.
    daemon_threads = False
    block_on_close = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A worker that gave up on a slow answer closed the connection: expected here."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    server = _Server((HOST, 0), _handler(found))
    found.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="receiver"
    )
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# --------------------------------------------------------------------------- the database


@dataclass
class Db:
    url: str
    services: Services

    def intents(self) -> list[Intent]:
        return Outbox(self.services.store).list("alice")

    def remind(self, title: str, at: datetime, *channels: str) -> Task:
        """A task of alice's with reminders at ``at`` (whole seconds, UTC) on ``channels``."""
        local = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        task = self.services.tasks.create("alice", "Home", title)
        schedule = parse_schedule(
            {
                "due": {"local": local, "zone": "UTC"},
                "reminders": [{"channel": c, "local": local, "zone": "UTC"} for c in channels],
            },
            lambda value, field: self.services.directory.actor("alice").id,
        )
        return self.services.tasks.set_schedule("alice", task.id, task.revision, schedule)


@pytest.fixture
def db(tmp_path: Path, receiver: Receiver) -> Iterator[Db]:
    """A SQLite file where alice owns Home; her push reminders go to the receiver
    as json:// and ntfy://."""
    with _database(f"sqlite:///{tmp_path / 'kalends.sqlite3'}", receiver) as found:
        yield found


@pytest.fixture
def any_db(storage_target: StorageTarget, receiver: Receiver) -> Iterator[Db]:
    """The same on every backend: a SQLite file, and PostgreSQL when reachable."""
    with _database(storage_target.url, receiver) as found:
        yield found


@contextmanager
def _database(url: str, receiver: Receiver) -> Iterator[Db]:
    services = open_services(url)
    services.directory.add_actor("alice", "Alice")
    services.directory.create_list("alice", "Home")
    Destinations(services.store).set(
        "alice",
        "alice",
        "push",
        [receiver.url("json", "hooks/alice"), receiver.url("ntfy", "alice-reminders")],
    )
    try:
        yield Db(url=url, services=services)
    finally:
        services.store.close()


def in_seconds(seconds: int) -> datetime:
    """Real now plus ``seconds``, on a whole second."""
    return (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0)


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {ENV_ACTOR, ENV_DATABASE}}
    env["COLUMNS"] = "120"
    return env


def start_worker(db: Db, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kalends", "worker", "--database", db.url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**environment(), **(env or {})},
    )


def wait_for(
    condition: Callable[[], bool],
    within: float,
    what: str,
    process: subprocess.Popen[str] | None = None,
) -> None:
    """Waits until ``condition()``; fails on time-out or when ``process`` exits meanwhile."""
    deadline = time.monotonic() + within
    while not condition():
        if process is not None and process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"the worker exited ({process.returncode}) before {what}:\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def stop(process: subprocess.Popen[str]) -> tuple[int, str, str, float]:
    """Sends SIGTERM; returns the exit code, stdout, stderr and seconds it took to exit."""
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        out, err = process.communicate(timeout=STOP_WITHIN + 5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"the worker did not exit within {STOP_WITHIN + 5} s of SIGTERM")
    return process.returncode, out, err, time.monotonic() - started


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Worker processes a test started: killed if the test left them running."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()  # closes its pipes


def keys(received: list[Received]) -> list[str]:
    """The idempotency key of every request: the json:// header or ntfy's body line."""
    found = []
    for request in received:
        key = request.header("Idempotency-Key")
        if key is None:
            key = request.json()["message"].splitlines()[-1].removeprefix("Reminder ID: ")
        found.append(key)
    return found


# --------------------------------------------------------------------------- the tests


class TestWorkerProcess:
    def test_it_delivers_what_falls_due_then_stops_on_sigterm_leaving_no_lease(
        self, db: Db, receiver: Receiver, processes: list[subprocess.Popen[str]]
    ) -> None:
        first = db.remind("Water the plants", in_seconds(3), "push")
        second = db.remind("Pay the rent", in_seconds(4), "push")
        worker = start_worker(db, "--json", "--owner", "proc-test")
        processes.append(worker)

        # Two reminders, two destinations each.
        wait_for(lambda: len(receiver.received()) == 4, DELIVERY_WITHIN, "4 requests", worker)
        wait_for(
            lambda: {i.status for i in db.intents()} == {"delivered"},
            DELIVERY_WITHIN,
            "the intents to be delivered",
            worker,
        )
        code, out, err, took = stop(worker)

        assert code == 0, err
        assert took < STOP_WITHIN
        intents = db.intents()
        assert [i.task_ref for i in intents] == [first.ref, second.ref]
        assert all(i.status == "delivered" and i.attempts == 1 for i in intents)
        assert not [i for i in intents if i.status == "leased"]
        assert sorted(keys(receiver.received())) == sorted(str(i.id) for i in intents for _ in "jn")
        titles = {r.json()["title"] for r in receiver.received()}
        assert titles == {"Reminder: Water the plants", "Reminder: Pay the rent"}
        # One JSON line per batch that claimed something, nothing else on stdout.
        reports = [json.loads(line) for line in out.splitlines()]
        assert reports and all(set(r) >= {"claimed", "delivered", "released"} for r in reports)
        assert sum(r["delivered"] for r in reports) == 2
        assert sum(r["claimed"] for r in reports) == 2

    def test_a_reminder_written_while_it_sleeps_wakes_it(
        self,
        request: pytest.FixtureRequest,
        storage_target: StorageTarget,
        any_db: Db,
        receiver: Receiver,
        processes: list[subprocess.Popen[str]],
    ) -> None:
        db = any_db
        db.remind("First", in_seconds(-1), "push")
        worker = start_worker(db, "--owner", "proc-test")
        processes.append(worker)
        wait_for(
            lambda: len(receiver.received()) == 2, DELIVERY_WITHIN, "the first reminder", worker
        )
        wait_for(
            lambda: {i.status for i in db.intents()} == {"delivered"},
            DELIVERY_WITHIN,
            "the first reminder to be acknowledged",
            worker,
        )
        time.sleep(1.0)  # nothing is due: the worker sleeps (up to a minute) until woken

        second = db.remind("Second", in_seconds(0), "push")
        started = time.monotonic()
        wait_for(lambda: len(receiver.received()) == 4, WOKEN_WITHIN, "the woken worker", worker)
        took = time.monotonic() - started
        code, _, err, _ = stop(worker)

        assert code == 0, err
        assert took < WOKEN_WITHIN
        assert {i.task_ref: i.status for i in db.intents()}[second.ref] == "delivered"

    def test_sigterm_during_a_send_finishes_it_acks_it_and_releases_the_rest(
        self, db: Db, receiver: Receiver, processes: list[subprocess.Popen[str]]
    ) -> None:
        receiver.delay = 2.0
        Destinations(db.services.store).set(
            "alice", "alice", "push", [receiver.url("json", "hooks/alice")]
        )
        for title in ("One", "Two", "Three"):
            db.remind(title, in_seconds(-1), "push")
        worker = start_worker(db, "--owner", "proc-test")
        processes.append(worker)

        assert receiver.arrived.wait(DELIVERY_WITHIN), "no request reached the receiver"
        code, _, err, took = stop(worker)

        assert code == 0, err
        assert took < STOP_WITHIN
        [request] = receiver.received()
        intents = {str(i.id): i for i in db.intents()}
        sent = intents[keys([request])[0]]
        assert (sent.status, sent.attempts) == ("delivered", 1)
        rest = [i for i in intents.values() if i.id != sent.id]
        assert [(i.status, i.attempts, i.lease_owner) for i in rest] == [("pending", 0, None)] * 2
        # The human progress line and the final summary go to stderr.
        assert "reminders claimed 3: delivered 1, retried 0, dead 0, closed 0, released 2" in err
        assert "stopped: claimed 3: delivered 1" in err

    def test_a_second_signal_stops_it_at_once_leaving_the_send_in_progress_leased(
        self, db: Db, receiver: Receiver, processes: list[subprocess.Popen[str]]
    ) -> None:
        receiver.delay = 8.0
        Destinations(db.services.store).set(
            "alice", "alice", "push", [receiver.url("json", "hooks/alice")]
        )
        db.remind("Slow", in_seconds(-1), "push")
        worker = start_worker(db, "--owner", "proc-test")
        processes.append(worker)
        assert receiver.arrived.wait(DELIVERY_WITHIN), "no request reached the receiver"

        worker.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        code, _, err, took = stop(worker)  # the second SIGTERM

        assert code == 130, err
        assert took < receiver.delay - 2  # it did not wait for the send
        assert "stopped at once" in err
        [intent] = db.intents()
        assert (intent.status, intent.lease_owner) == ("leased", "proc-test")

    def test_once_json_delivers_what_is_due_and_prints_the_report(
        self, db: Db, receiver: Receiver
    ) -> None:
        due = db.remind("Water the plants", in_seconds(-2), "push")
        later = db.remind("Later", in_seconds(3600), "push")

        done = subprocess.run(
            [sys.executable, "-m", "kalends", "worker", "--database", db.url, "--once", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=environment(),
        )

        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {
            "claimed": 1,
            "delivered": 1,
            "retried": 0,
            "dead": 0,
            "closed": 0,
            "closed_reasons": {},
            "released": 0,
            "lost_acks": 0,
        }
        statuses = {i.task_ref: i.status for i in db.intents()}
        assert statuses == {due.ref: "delivered", later.ref: "pending"}
        assert len(receiver.received()) == 2  # json:// and ntfy://

    def test_once_with_the_null_transport_accepts_and_drops(
        self, db: Db, receiver: Receiver
    ) -> None:
        for title in ("One", "Two", "Three"):
            db.remind(title, in_seconds(-1), "push")

        result = CliRunner().invoke(
            app,
            ["worker", "--database", db.url, "--once", "--transport", "null", "--batch", "2"],
            env={ENV_ACTOR: None, ENV_DATABASE: None},
        )

        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == (
            "claimed 3: delivered 3, retried 0, dead 0, closed 0, released 0"
        )
        assert receiver.received() == []
        assert {i.status for i in db.intents()} == {"delivered"}

    def test_once_reports_closed_reminders_with_their_reasons(
        self, db: Db, receiver: Receiver
    ) -> None:
        db.remind("Archived", in_seconds(-1), "push")
        db.services.directory.archive("alice", "Home")

        result = CliRunner().invoke(
            app,
            ["worker", "--database", db.url, "--once"],
            env={ENV_ACTOR: None, ENV_DATABASE: None},
        )

        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == (
            "claimed 1: delivered 0, retried 0, dead 0, closed 1 (list-archived 1), released 0"
        )
        assert receiver.received() == []
        [intent] = db.intents()
        assert (intent.status, intent.closed_reason) == ("closed", "list-archived")


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


def last_attempt_failing(db: Db) -> Intent:
    """A reminder of alice's due now at its last attempt, whose send fails (connection
    refused): the next batch leaves it dead."""
    Destinations(db.services.store).set(
        "alice", "alice", "push", [f"json://{HOST}:{closed_port()}/hooks/alice"]
    )
    db.remind("Renew the passport", in_seconds(-1), "push")
    with db.services.store.transaction() as conn:
        conn.execute(update(reminder_intents).values(attempts=MAX_ATTEMPTS - 1))
    [intent] = db.intents()
    return intent


TITLE = "Nightly\nbackup"
"""A schedule title with a newline: a text log line escapes it, staying one line."""


def running_schedule(db: Db, workspace: Path) -> UUID:
    """A schedule of alice's that admits one passage at once when played (``immediate``):
    ``sh -c 'sleep 0.3; exit 3'``, so it fails with exit status 3."""
    workspace.mkdir()
    services = db.services
    home = services.workspaces.add("alice", workspace, "home")
    services.grants.grant(services.directory.actor("alice").id, Privilege.RUN)
    config = {
        "title": TITLE,
        "objective": "Back everything up.",
        "profile": {"command": ["/bin/sh", "-c", "sleep 0.3; exit 3"], "cwd": "."},
        "policy": {"kind": "immediate"},
    }
    receipt = services.schedules.create("alice", home.id, config, request_id="create-0001")
    assert receipt.mission_id is not None
    revision = services.schedules.detail("alice", receipt.mission_id)["revision"]
    services.schedules.control(
        "alice", receipt.mission_id, "play", request_id="play-0001", expected_revision=revision
    )
    return receipt.mission_id


def settled_result(db: Db, schedule: UUID) -> dict[str, Any] | None:
    detail = db.services.schedules.detail("alice", schedule)
    latest: dict[str, Any] | None = detail["latestResult"]
    return latest if detail["pending"] is None and latest is not None else None


# The level a text log line names after its time: only those above info.
LOUD = {"warning:", "error:", "critical:"}
# Passages run as the worker's own user (the confinement has tests of its own).
PASSAGES_AS_ME = {"KALENDS_PASSAGE_USER": "root"} if os.geteuid() == 0 else {}


class TestWorkerLogs:
    def test_help_says_it_runs_the_mission_scheduler_too(self) -> None:
        result = CliRunner().invoke(app, ["worker", "--help"], env={"COLUMNS": "200"})

        assert result.exit_code == 0
        first = result.stdout.split("Run the", 1)[1].split("\n\n")[0]
        assert "mission scheduler" in first and "deliver due reminders" in first
        assert "--quiet" in result.stdout and "--log-format" in result.stdout

    # Text for people (the default); one JSON object per line; nothing below a warning.
    @pytest.mark.parametrize("style", ["text", "json", "quiet"])
    def test_it_logs_each_passage_admitted_started_and_settled(
        self,
        db: Db,
        tmp_path: Path,
        processes: list[subprocess.Popen[str]],
        style: str,
    ) -> None:
        schedule = running_schedule(db, tmp_path / "workspace")
        options = {"text": (), "json": ("--log-format", "json"), "quiet": ("--quiet",)}[style]
        worker = start_worker(
            db,
            "--runtime-dir",
            str(tmp_path / "runtime"),
            "--transport",
            "null",
            *options,
            env=PASSAGES_AS_ME,
        )
        processes.append(worker)

        result: dict[str, Any] = {}

        def settled() -> bool:
            result.update(settled_result(db, schedule) or {})
            return bool(result)

        wait_for(settled, DELIVERY_WITHIN, "the passage to settle", worker)
        code, _, err, _ = stop(worker)

        assert code == 0, err
        assert (result["outcome"], result["reason"]) == ("failed", "exit status 3")
        slot = result["slot"]
        lines = err.splitlines()
        if style == "quiet":  # warnings would still show, each after its time
            assert [line for line in lines if line.split(" ")[1] not in LOUD] == []
            return
        if style == "text":
            said = [
                told for _, told in (line.split(" ", 1) for line in lines)
                if told.startswith("passage ")
            ]  # fmt: skip
            where = f'"Nightly\\nbackup" slot {slot}'
            assert said[:2] == [f"passage admitted: {where}", f"passage started: {where}"]
            assert len(said) == 3, said
            assert said[2].startswith(f"passage settled: {where}: failed (exit status 3) after ")
            assert said[2].endswith(" s")
            assert any("running the mission scheduler and delivering" in line for line in lines)
            return
        entries = [json.loads(line) for line in lines]  # fails on a line that is not JSON
        passages = [e for e in entries if str(e.get("event", "")).startswith("passage-")]
        assert [e["event"] for e in passages] == [
            "passage-admitted",
            "passage-started",
            "passage-settled",
        ]
        assert {(e["title"], e["slot"], e["schedule_id"]) for e in passages} == {
            (TITLE, slot, str(schedule))
        }
        last = passages[-1]
        assert (last["outcome"], last["reason"]) == ("failed", "exit status 3")
        assert 0.3 <= last["duration_s"] < 30
        assert all({"at", "level", "logger", "message"} <= set(e) for e in entries)

    # Text for people (the default); one JSON object per line.
    @pytest.mark.parametrize("style", ["text", "json"])
    def test_a_batch_whose_reminder_dies_counts_it_dead_not_retried(
        self, db: Db, processes: list[subprocess.Popen[str]], style: str
    ) -> None:
        intent = last_attempt_failing(db)
        options = ("--log-format", "json") if style == "json" else ()
        worker = start_worker(db, "--no-schedules", "--owner", "proc-test", *options)
        processes.append(worker)

        wait_for(
            lambda: db.intents()[0].status == "dead", DELIVERY_WITHIN, "the reminder to die", worker
        )
        code, _, err, _ = stop(worker)

        assert code == 0, err
        assert db.intents()[0].id == intent.id
        if style == "text":
            assert "reminders claimed 1: delivered 0, retried 0, dead 1, closed 0" in err
            assert "stopped: claimed 1: delivered 0, retried 0, dead 1" in err
            return
        entries = [json.loads(line) for line in err.splitlines()]
        [batch] = [e for e in entries if e.get("event") == "reminder-batch"]
        counts = {k: batch[k] for k in ("claimed", "delivered", "retried", "dead", "closed")}
        assert counts == {"claimed": 1, "delivered": 0, "retried": 0, "dead": 1, "closed": 0}
        assert batch["logger"] == "kalends.reminders"

    def test_once_reports_the_reminder_that_died(self, db: Db) -> None:
        last_attempt_failing(db)

        result = CliRunner().invoke(
            app,
            ["worker", "--database", db.url, "--once", "--no-schedules", "--json"],
            env={ENV_ACTOR: None, ENV_DATABASE: None},
        )

        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert (report["retried"], report["dead"]) == (0, 1)
        assert db.intents()[0].status == "dead"


class TestBadOptions:
    @pytest.mark.parametrize(
        ("args", "field"),
        [
            (("--batch", "0"), "batch"),
            (("--batch", "1001"), "batch"),
            (("--batch", "many"), "batch"),
            (("--transport", "smtp"), "transport"),
            (("--owner", "  "), "owner"),
            (("--owner", "x" * 201), "owner"),
            (("--log-format", "xml"), "log_format"),
        ],
    )
    def test_bad_options_exit_2_and_create_no_database(
        self, tmp_path: Path, args: tuple[str, ...], field: str
    ) -> None:
        path = tmp_path / "never.sqlite3"
        result = CliRunner().invoke(
            app,
            ["worker", "--database", str(path), "--once", "--json", *args],
            env={ENV_ACTOR: None, ENV_DATABASE: None},
        )

        assert result.exit_code == 2, result.output
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["details"]["field"]) == ("invalid-input", field)
        assert result.stderr.startswith(f"error: {field.replace('_', '-')}: ")
        assert not path.exists()

    def test_the_default_owner_is_host_and_pid(self) -> None:
        host, _, pid = default_owner().rpartition(":")
        assert host and pid == str(os.getpid())
