"""`kalends doctor`: one check a line, each with a fix when it is not fine; the exit code
0 only when no needed check failed. Run on real databases of both backends, a real
loopback HTTP receiver, a real `kalends worker` and real programs on a passage's PATH;
every run writes nothing, and which confinement passages get is still proven by trying
to read the server's files as a passage would."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from typer.testing import CliRunner, Result

from kalends.auth.grants import Privilege
from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.missions import nodes, passage_beats
from kalends.missions.runtime.token import ensure_secret
from kalends.storage.testing import StorageTarget, migrated, nothing_written
from kalends.tasks import parse_schedule
from reminders import conftest as receivers
from reminders.conftest import HttpReceiver
from supervision.fake_systemd import install_fake

runner = CliRunner()
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_RUNTIME_DIR": None,
    "COLUMNS": "80",
}
# The reminder tests' loopback HTTP receiver and a port nothing listens on.
http_receiver = receivers.http_receiver
closed_port = receivers.closed_port
# Confinement that holds on this machine as root or not: passages in the sandbox.
SANDBOXED = ("--passage-user", "root", "--sandbox", "on")
# An agent program no machine has: a schedule's own command for the claude preset.
PROBE = "kalends-doctor-probe-agent"
# How long a spawned `kalends` may take to answer, or a worker to claim its work.
WITHIN = 60.0


def by_name(result: Result | subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    """The JSON checks by name."""
    found = json.loads(result.stdout)
    return {check["name"]: check for check in found["checks"]}


# --- confinement (kept from the first doctor) -----------------------------------------------


def confinement(tmp_path: Path, *args: str) -> Result:
    """The doctor on a migrated SQLite file and a runtime secret, both private."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700, exist_ok=True)
    database = data / "kalends.sqlite3"
    migrated(StorageTarget("sqlite", f"sqlite:///{database}"))
    database.chmod(0o600)
    ensure_secret(data / "runtime")
    return runner.invoke(
        app,
        [
            *("doctor", "--database", str(database), "--json"),
            *("--runtime-dir", str(data / "runtime"), *args),
        ],
        env=CLEAN_ENV,
    )


def held(result: Result) -> dict[str, bool]:
    """The confinement proofs, by their sentence, and whether each held."""
    found = json.loads(result.stdout)
    return {c["check"]: c["held"] for c in found["checks"] if "held" in c}


@needs_root
def test_as_root_with_a_passage_user_the_database_and_secret_are_out_of_reach(
    tmp_path: Path,
) -> None:
    result = confinement(tmp_path, "--passage-user", "nobody", "--sandbox", "off")
    proofs = held(result)
    assert proofs["a passage cannot read the database"] is True
    assert proofs["a passage cannot read the runtime secret"] is True
    assert by_name(result)["confinement"]["isolation"]["user"]["name"] == "nobody"


def test_in_the_sandbox_the_database_and_secret_are_out_of_reach(tmp_path: Path) -> None:
    result = confinement(tmp_path, *SANDBOXED)
    proofs = held(result)
    assert proofs["a passage cannot read the database"] is True
    assert proofs["a passage cannot read the runtime secret"] is True
    assert by_name(result)["confinement"]["isolation"]["sandbox"]


def test_unconfined_passages_fail_the_checks_and_the_exit_code_says_so(tmp_path: Path) -> None:
    result = confinement(tmp_path, "--passage-user", "root", "--sandbox", "off")
    proofs = held(result)
    assert proofs["a passage cannot read the database"] is False
    assert proofs["a passage cannot read the runtime secret"] is False
    assert result.exit_code == 1
    checks = by_name(result)
    assert checks["confinement"]["confined"] is False
    assert checks["confinement"]["status"] == "warn"
    assert checks["database hidden"]["status"] == "fail"
    assert "--passage-user" in checks["database hidden"]["fix"]
    assert json.loads(result.stdout)["ok"] is False


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--sandbox", "maybe"), "sandbox"),  # not auto, on or off
        (("--passage-user", "no-such-user-k"), "passage_user"),  # a user that does not exist
    ],
)
def test_bad_options_exit_2_naming_the_option(
    tmp_path: Path, args: tuple[str, ...], field: str
) -> None:
    if field == "passage_user" and os.geteuid() != 0:
        pytest.skip("only root may name a passage user")
    result = confinement(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert field.replace("_", " ") in result.output or field in result.output


# --- a database of each backend -------------------------------------------------------------


@dataclass
class Home:
    """A migrated database with alice (who may define what runs) and her workspace."""

    url: str
    services: Services
    workspace: str
    runtime: Path
    serial: int = 0

    def doctor(self, *args: str) -> Result:
        """``kalends doctor --json`` in this process, passages sandboxed."""
        full = ["doctor", "--database", self.url, "--runtime-dir", str(self.runtime)]
        return runner.invoke(app, [*full, *SANDBOXED, "--json", *args], env=CLEAN_ENV)

    def schedule(self, profile: dict[str, Any]) -> str:
        """A paused daily schedule of alice's running ``profile``."""
        self.serial += 1
        config = {
            "title": f"Nightly {self.serial}",
            "objective": "Look at the open bugs.",
            "profile": profile,
            "policy": {"kind": "daily", "time": "03:00", "zone": "Europe/Berlin"},
        }
        receipt = self.services.schedules.create(
            "alice", self.workspace, config, request_id=f"create-{self.serial:04d}"
        )
        assert receipt.mission_id is not None
        return str(receipt.mission_id)


@pytest.fixture
def home(storage_target: StorageTarget, tmp_path: Path) -> Iterator[Home]:
    migrated(storage_target)
    services = open_services(storage_target.url)
    try:
        services.directory.add_actor("alice", "Alice")
        services.grants.grant(services.directory.actor("alice").id, Privilege.RUN)
        (tmp_path / "ws").mkdir()
        workspace = services.workspaces.add("alice", tmp_path / "ws", "home")
        yield Home(storage_target.url, services, str(workspace.id), tmp_path / "runtime")
    finally:
        services.store.close()


def test_a_healthy_database_passes_and_the_doctor_writes_nothing(home: Home) -> None:
    with nothing_written(home.services.store):
        result = home.doctor("--as", "alice")
    assert result.exit_code == 0, result.stdout
    found = json.loads(result.stdout)
    assert found["ok"] is True
    assert set(found) == {"ok", "checks"}
    for check in found["checks"]:
        assert {"name", "status", "fact", "fix", "needed"} <= set(check)
        assert check["status"] in {"ok", "warn", "fail", "skipped"}
        # A fix for every warning and failure, none for the rest.
        assert (check["fix"] is not None) == (check["status"] in {"warn", "fail"})
    checks = by_name(result)
    assert checks["database"]["status"] == "ok"
    assert checks["database"]["revision"] == checks["database"]["fact"].split()[-1]
    # (a warning when the system's zone data is older than the tzdata package's)
    assert checks["zone data"]["status"] in {"ok", "warn"}
    assert checks["zone data"]["version"]
    assert checks["runtime directory"]["status"] == "ok"
    # Nothing holds work yet: idle or not running, a warning only.
    assert checks["scheduler"]["status"] == "warn"
    assert checks["scheduler"]["fact"] == "no live holder seen (idle or not running)"
    assert checks["delivery"]["status"] == "warn"
    assert (checks["nodes"]["status"], checks["nodes"]["fact"]) == ("warn", "no live worker node")
    assert checks["agents"]["status"] == "skipped"
    assert checks["destinations"]["status"] == "skipped"
    # No test reaches a systemd user manager (tests/conftest.py): a warning, not needed.
    assert checks["supervision"]["status"] == "warn"
    assert not (home.runtime).exists()


def test_the_table_reads_at_80_columns_with_a_fix_under_each_failure(home: Home) -> None:
    unreachable = "postgresql://nobody@127.0.0.1:1/kalends"
    result = runner.invoke(
        app,
        ["doctor", "--database", unreachable, "--runtime-dir", str(home.runtime), *SANDBOXED],
        env=CLEAN_ENV,
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), result.stdout
    [failed] = [i for i, line in enumerate(lines) if line.startswith("FAIL  database")]
    assert "cannot reach" in lines[failed]
    assert any(line.strip().startswith("fix: check --database") for line in lines[failed:])
    # The columns line up: every check's name starts at the same place.
    assert any(line.startswith(("ok    zone data", "warn  zone data")) for line in lines)
    assert any(line.startswith("ok    runtime directory") for line in lines)


def test_an_unmigrated_database_fails_with_the_upgrade_fix_and_stays_unmigrated(
    storage_target: StorageTarget, tmp_path: Path
) -> None:
    if storage_target.backend == "sqlite":
        Path(storage_target.url.removeprefix("sqlite:///")).write_bytes(b"")  # an empty file
    result = runner.invoke(
        app,
        [
            *("doctor", "--database", storage_target.url, "--json"),
            *("--runtime-dir", str(tmp_path / "rt"), *SANDBOXED),
        ],
        env=CLEAN_ENV,
    )
    assert result.exit_code == 1, result.stdout
    database = by_name(result)["database"]
    assert database["status"] == "fail"
    assert database["fact"].endswith("is not migrated")
    assert database["fix"].startswith("kalends db upgrade --database")
    assert by_name(result)["supervision"]["status"] == "skipped"
    engine = storage_target.engine()
    try:
        with engine.connect() as conn:
            assert engine.dialect.get_table_names(conn) == []
    finally:
        engine.dispose()


def test_an_unreachable_database_fails_with_a_fix(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            *("doctor", "--database", "postgresql://nobody@127.0.0.1:1/kalends", "--json"),
            *("--runtime-dir", str(tmp_path / "rt"), *SANDBOXED),
        ],
        env=CLEAN_ENV,
    )
    assert result.exit_code == 1
    database = by_name(result)["database"]
    assert database["status"] == "fail"
    assert "cannot reach" in database["fact"]
    assert "KALENDS_DATABASE_URL" in database["fix"]


@pytest.mark.parametrize(
    "unwritable",
    [
        "proc",  # a directory nobody, root included, may create files in
        "file",  # a runtime directory to be made under a regular file
    ],
)
def test_an_unwritable_runtime_directory_fails(home: Home, tmp_path: Path, unwritable: str) -> None:
    if unwritable == "proc":
        runtime = Path("/proc/kalends-runtime")
    else:
        (tmp_path / "plain").write_text("")
        runtime = tmp_path / "plain" / "runtime"
    home.runtime = runtime
    result = home.doctor()
    assert result.exit_code == 1
    check = by_name(result)["runtime directory"]
    assert check["status"] == "fail"
    assert "--runtime-dir" in check["fix"]
    assert not runtime.exists()


# --- zone data ------------------------------------------------------------------------------


def test_zone_data_says_where_it_comes_from_its_version_and_when_it_is_older(
    home: Home, tmp_path: Path
) -> None:
    tzdata = pytest.importorskip("tzdata")
    python = Path(sys.executable)
    database = ["--database", home.url, "--runtime-dir", str(home.runtime), *SANDBOXED]
    # No system zone files: the tzdata package's.
    package = kalends(python, "doctor", *database, "--json", PYTHONTZPATH="")
    zone = by_name(package)["zone data"]
    assert (zone["status"], zone["source"]) == ("ok", "the tzdata package")
    assert zone["version"] == tzdata.IANA_VERSION
    # System zone files of an older release, read first: a warning, not a failure.
    old = tmp_path / "zoneinfo"
    (old / "Europe").mkdir(parents=True)
    shipped = Path(tzdata.__file__).parent / "zoneinfo" / "Europe" / "Amsterdam"
    shutil.copyfile(shipped, old / "Europe" / "Amsterdam")
    (old / "tzdata.zi").write_text("# version 1999a\n")
    older = kalends(python, "doctor", *database, "--json", PYTHONTZPATH=str(old))
    zone = by_name(older)["zone data"]
    assert (zone["status"], zone["source"], zone["version"]) == ("warn", str(old), "1999a")
    assert f"newer {tzdata.IANA_VERSION}" in zone["fact"]
    assert zone["fix"].startswith("update the system's tzdata")
    assert older.returncode == 0, older.stdout


# --- agent programs, on the passage's PATH --------------------------------------------------


def python_with_its_own_bin(root: Path) -> Path:
    """A Python whose own directory (first on a passage's default PATH) is ``root``/bin:
    this environment's packages, reached from a directory of the test's own."""
    (root / "bin").mkdir(parents=True)
    shutil.copyfile(Path(sys.prefix) / "pyvenv.cfg", root / "pyvenv.cfg")
    (root / "lib").symlink_to(Path(sys.prefix) / "lib")
    python = root / "bin" / "python3"
    python.symlink_to(os.path.realpath(sys.executable))
    return python


def kalends(python: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """``kalends ARGS`` as a process of ``python``, with ``extra`` in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    return subprocess.run(
        [str(python), "-m", "kalends", *args],
        capture_output=True,
        text=True,
        timeout=WITHIN,
        check=False,
        env={**env, "COLUMNS": "80", **extra},
        stdin=subprocess.DEVNULL,
    )


def test_an_agent_program_first_on_the_passage_path_passes_and_a_missing_one_fails(
    home: Home, tmp_path: Path
) -> None:
    python = python_with_its_own_bin(tmp_path / "env")
    program = python.parent / PROBE
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    sid = home.schedule({"agent": "claude", "command": [PROBE, "-p", "{prompt}"]})
    # Play checks the program as the doctor does: there it is found.
    played = kalends(python, "schedule", "play", sid, "--as", "alice", "--database", home.url)
    assert played.returncode == 0, played.stderr
    database = ["--database", home.url, "--runtime-dir", str(home.runtime), *SANDBOXED]
    with nothing_written(home.services.store):
        found = kalends(python, "doctor", *database, "--as", "alice", "--json")
    agent = by_name(found)[f"agent {PROBE}"]
    assert agent["status"] == "ok", agent
    assert "Nightly 1" in agent["fact"]
    # This process's Python lives elsewhere: its passages do not find the program.
    result = home.doctor("--as", "alice")
    assert result.exit_code == 1
    missing = by_name(result)[f"agent {PROBE}"]
    assert missing["status"] == "fail"
    assert f"install `{PROBE}`" in missing["fix"]
    assert f"`{PROBE}` (for Nightly 1) is not on the passages' PATH" == missing["fact"]
    # Nobody runs its scheduler either: a running schedule no live scheduler holds.
    scheduler = by_name(result)["scheduler"]
    assert scheduler["status"] == "fail"
    assert "kalends serve" in scheduler["fix"]


def test_a_profile_with_its_own_path_is_left_to_play(home: Home) -> None:
    sid = home.schedule({"agent": "shell", "env": {"PATH": "/usr/bin:/bin"}})
    home.services.schedules.control(
        "alice", sid, "play", request_id="play-0001", expected_revision=1
    )
    check = by_name(home.doctor("--as", "alice"))["agent sh"]
    assert check["status"] == "skipped"
    assert "sets its own PATH" in check["fact"]


def test_a_live_worker_is_the_schedulers_heartbeat(home: Home, tmp_path: Path) -> None:
    sid = home.schedule({"agent": "shell"})
    home.services.schedules.control(
        "alice", sid, "play", request_id="play-0001", expected_revision=1
    )
    assert by_name(home.doctor("--as", "alice"))["scheduler"]["status"] == "fail"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    worker = subprocess.Popen(
        [
            *(sys.executable, "-m", "kalends", "worker", "--database", home.url),
            *("--runtime-dir", str(tmp_path / "worker-runtime"), "--transport", "null"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**env, "KALENDS_PASSAGE_USER": "root"},
    )
    try:
        deadline = time.monotonic() + WITHIN
        while True:
            result = home.doctor("--as", "alice")
            scheduler = by_name(result)["scheduler"]
            if scheduler["status"] == "ok" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert scheduler["status"] == "ok", scheduler
        assert scheduler["fact"] == "a live scheduler holds 1 running schedule(s)"
        assert by_name(result)["agent sh"]["status"] == "ok"
        # The worker is a node: it beats whether or not it holds anything.
        nodes = by_name(result)["nodes"]
        assert (nodes["status"], nodes["live"]) == ("ok", 1), nodes
        assert nodes["fact"].startswith("1 live node(s): ")
        assert result.exit_code == 0, result.stdout
    finally:
        worker.terminate()
        worker.wait(timeout=WITHIN)


def test_a_silent_node_with_unsettled_passages_is_a_warning_naming_the_fix(
    home: Home, tmp_path: Path
) -> None:
    """A node that stopped beating with a passage it never reported settled: its passage
    is uncertain; the doctor says so, with the two ways out, and writes nothing."""
    store = home.services.store
    long_ago = store.clock.now() - timedelta(minutes=10)
    identity = nodes.node_identity(tmp_path / "gone", long_ago)
    with store.transaction() as conn:
        nodes.register_node(
            conn, identity, name="build-2", runtime_dir=str(tmp_path / "gone"), now=long_ago
        )
        passage_beats.record_admitted(
            conn, session_id="ses_1", passage_id="psg_1", message_id="msg_1",
            schedule_id=uuid4(), node_id=identity.node_id, now=long_ago,
        )  # fmt: skip
    with nothing_written(store):
        result = home.doctor()
    assert result.exit_code == 0, result.stdout
    found = by_name(result)["nodes"]
    assert found["status"] == "warn"
    assert found["fact"].startswith(f"node build-2 ({identity.node_id[:8]}) stopped beating ")
    assert "with 1 passage(s) it never reported settled (uncertain)" in found["fact"]
    assert found["fix"] == (
        f"start it again on {tmp_path / 'gone'}, or if that machine is gone for good: "
        f"kalends node forget {identity.node_id}"
    )
    assert found["stranded"] == [identity.node_id]


# --- supervision ----------------------------------------------------------------------------

# What systemctl may be asked while the doctor reads (never enable, start, reload...).
QUERIES = {"is-enabled", "is-active", "show"}


def test_supervision_reads_as_kalends_service_status_says_and_asks_systemd_nothing_else(
    home: Home, tmp_path: Path
) -> None:
    fake = install_fake(tmp_path / "systemd", "manager")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    env.update(fake.env(), COLUMNS="80")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        full = [sys.executable, "-m", "kalends", *args, "--database", home.url]
        return subprocess.run(
            full, capture_output=True, text=True, timeout=WITHIN, check=False, env=env
        )

    def supervision() -> dict[str, Any]:
        fake.forget_calls()
        with nothing_written(home.services.store):
            result = run("doctor", "--runtime-dir", str(home.runtime), *SANDBOXED, "--json")
        assert {call[0] for call in fake.systemctl_calls()} <= QUERIES, fake.systemctl_calls()
        return by_name(result)["supervision"]

    missing = supervision()
    assert (missing["status"], missing["fix"]) == ("warn", "kalends service install --now")
    assert missing["fact"].startswith("not installed; preference on")
    installed = run("service", "install", "--port", "18466")
    assert installed.returncode == 0, installed.stderr
    stopped = supervision()
    assert stopped["status"] == "warn"
    assert stopped["fact"] == "installed, enabled, inactive"
    assert stopped["fix"].startswith("kalends service on --now")
    (fake.bin / "active").touch()  # the stand-in's unit runs
    running = supervision()
    assert (running["status"], running["fact"]) == ("ok", "installed, enabled, active")
    assert run("service", "off").returncode == 0
    off = supervision()
    assert off["status"] == "ok"
    assert off["fact"].startswith("off: preference off (set explicitly")


# --- reminder destinations ------------------------------------------------------------------


def test_destinations_are_listed_redacted_and_sent_only_when_asked(
    home: Home, http_receiver: HttpReceiver
) -> None:
    secret = "hook-s3cret-token"
    home.services.destinations.add("alice", "alice", "push", http_receiver.json_url(secret))
    with nothing_written(home.services.store):
        listed = home.doctor("--as", "alice")
    assert listed.exit_code == 0, listed.stdout
    assert secret not in listed.stdout
    assert by_name(listed)["push 1"]["status"] == "ok"
    assert "configured" in by_name(listed)["push 1"]["fact"]
    assert http_receiver.received() == []
    with nothing_written(home.services.store):
        sent = home.doctor("--as", "alice", "--send-test")
    assert sent.exit_code == 0, sent.stdout
    assert by_name(sent)["push 1"]["fact"].endswith("test message sent")
    [request] = http_receiver.received()
    assert request.path == f"/{secret}"
    assert secret not in sent.stdout


def test_an_unreachable_destination_fails_the_test_send(home: Home, closed_port: int) -> None:
    home.services.destinations.add("alice", "alice", "push", f"json://127.0.0.1:{closed_port}/x")
    with nothing_written(home.services.store):
        result = home.doctor("--as", "alice", "--send-test")
    assert result.exit_code == 1
    check = by_name(result)["push 1"]
    assert check["status"] == "fail"
    assert check["fix"] is not None


def test_a_worker_holding_a_reminder_is_the_delivery_loops_heartbeat(
    home: Home, http_receiver: HttpReceiver, tmp_path: Path
) -> None:
    http_receiver.delay = 5.0  # the worker holds the reminder while the receiver answers
    services = home.services
    services.destinations.add("alice", "alice", "push", http_receiver.json_url("hook"))
    services.directory.create_list("alice", "Home")
    task = services.tasks.create("alice", "Home", "Water the plants")
    due = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
    schedule = parse_schedule(
        {
            "due": {"local": due, "zone": "UTC"},
            "reminders": [{"channel": "push", "local": due, "zone": "UTC"}],
        },
        lambda value, field: services.directory.actor("alice").id,
    )
    services.tasks.set_schedule("alice", task.id, task.revision, schedule)
    waiting = by_name(home.doctor("--as", "alice"))["delivery"]
    assert (waiting["status"], waiting["fact"]) == (
        "warn",
        "1 reminder(s) due and no live holder seen",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    worker = subprocess.Popen(
        [
            *(sys.executable, "-m", "kalends", "worker", "--database", home.url),
            *("--runtime-dir", str(tmp_path / "worker-runtime"), "--owner", "doctor-test"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**env, "KALENDS_PASSAGE_USER": "root"},
    )
    try:
        deadline = time.monotonic() + WITHIN
        while not http_receiver.received() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert http_receiver.received(), "the worker sent nothing"
        held = by_name(home.doctor("--as", "alice"))["delivery"]
        assert (held["status"], held["fact"]) == (
            "ok",
            "a live delivery loop holds 1 reminder(s)",
        )
    finally:
        worker.terminate()
        worker.wait(timeout=WITHIN)


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--send-test",), "--as HANDLE"),  # whose destinations: no actor named
        (("--no-such-flag",), "No such option"),  # an option the doctor does not have
        (("--sandbox", "maybe"), "sandbox"),  # not auto, on or off
        (("--database", "mysql://x/y"), "database"),  # a backend kalends does not use
    ],
)
def test_bad_input_exits_2_and_writes_nothing(home: Home, args: tuple[str, ...], says: str) -> None:
    with nothing_written(home.services.store):
        result = runner.invoke(
            app,
            ["doctor", "--database", home.url, "--runtime-dir", str(home.runtime), *args],
            env=CLEAN_ENV,
        )
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not home.runtime.exists()


def test_an_unknown_actor_is_refused_with_nothing_written(home: Home) -> None:
    with nothing_written(home.services.store):
        result = home.doctor("--as", "nobody-here")
    assert result.exit_code == 1, result.stdout
    error = json.loads(result.stdout)["error"]
    assert "nobody-here" in error["message"]
