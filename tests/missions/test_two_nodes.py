"""Two worker nodes share PostgreSQL (issue 23 §3), with real processes on the real clock.

Node A is ``kalends worker`` with a runtime directory of its own, run inside a PID
namespace of its own (``unshare --pid --fork --mount-proc``, as the namespace's second
process: a shell is its init); its passages' shims report to node B over HTTP
(``--api-url``). Node B is ``kalends serve`` with its own runtime directory and its
scheduler on. A holds the wakes first; B takes them over once A's wake leases run out
(60 s: neither command lets a test shorten them, so the test waits for them).

- A's worker alone is SIGKILLed: its passage lives on in the namespace, its shim reports
  the end (status 0) to B, and B settles the passage from that record (ended without a
  report), exactly once.
- A's namespace is SIGKILLed, its init first: the passage dies with the node. B marks it
  ``uncertain`` (``not-observed``) and does not settle it; A restarted on the same
  runtime directory reconciles it (``lost``), and B settles it as failed.

Where the machine refuses a new PID namespace, A runs unwrapped (the test says so) and
dies with its passages by SIGKILL to its worker, then to their families.

Both cases run side by side (one node A each) to keep the wall time near its floor: the
second node's lease (60 s after its claim) and B's pending fallback (30 s) after the
``not-observed`` look.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import pytest
from sqlalchemy import select

from e2e.conftest import Server, finish, launch
from kalends.bootstrap import build
from kalends.clock import FakeClock, SystemClock
from kalends.missions.nodes import NODE_FILE
from kalends.missions.passage_beats import BeatRow, read_beat
from kalends.storage.migrate import open_store
from kalends.storage.mission_tables import schedule_wakes
from kalends.storage.node_tables import worker_nodes
from kalends.storage.testing import FAKE_CLOCK_START, discover_postgresql, provision
from kalends.storage.unit_of_work import Store
from missions.conftest import MissionWorld, daily_config, make_mission_world
from missions.journey_support import kill_families

pytestmark = pytest.mark.slow

T = TypeVar("T")

HOST = "127.0.0.1"
# How long a process may take to start, or a loop to act on what changed.
START_WITHIN = 45.0
# A's lease (60 s after its last renewal), B's look and a loaded machine's slack.
TAKEOVER_WITHIN = 90.0
# B's next look at a passage it left uncertain: the pending fallback's first step (30 s),
# which a taken-over wake starts afresh; and slack.
FALLBACK_WITHIN = 60.0
# The passage of the first case waits for this file in its workspace, then prints and
# exits 0; at most two minutes.
RELEASE = "release-the-passage"
# A new PID namespace whose init is a shell that starts the worker and outlives it.
NAMESPACE = ("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", '"$@" & wait; exec sleep 1d')
GATED = (
    f"i=0; while [ ! -e {RELEASE} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; "
    "echo 'the work is done'"
)


def wait_for(
    probe: Callable[[], T | None],
    within: float,
    what: str,
    explain: Callable[[], str] = lambda: "",
) -> T:
    """The first truthy value of ``probe()``; fails the test after ``within`` seconds,
    saying what ``explain()`` says then."""
    deadline = time.monotonic() + within
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {within} s waiting for {what}\n{explain()}")
        time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def namespaces_permitted() -> bool:
    """Whether this machine lets the test run a process in a new PID namespace."""
    try:
        done = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", "true"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def log_events(path: Path, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of ``path`` whose event is ``event``."""
    found = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == event:
            found.append(entry)
    return found


@dataclass
class Node:
    """One ``kalends worker`` (node A of a case): in a PID namespace of its own when the
    machine permits, with its own runtime directory, its log in ``log``."""

    name: str
    runtime_dir: Path
    log: Path
    process: subprocess.Popen[bytes]
    namespaced: bool

    @property
    def node_id(self) -> str | None:
        try:
            found = json.loads((self.runtime_dir / NODE_FILE).read_text())
        except (OSError, ValueError):
            return None
        node_id = found.get("nodeId")
        return node_id if isinstance(node_id, str) else None

    @property
    def init(self) -> int | None:
        """The namespace's init (its pid on this side), while it lives."""
        if not self.namespaced:
            return None
        found = children(self.process.pid)
        return found[0] if found else None

    @property
    def worker(self) -> int | None:
        """The worker's pid on this side, while it lives."""
        if not self.namespaced:
            return self.process.pid if self.process.poll() is None else None
        init = self.init
        if init is None:
            return None
        for pid in children(init):  # (the passages' shims are the init's children too)
            try:
                if b"-m\0kalends\0worker\0" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
            except OSError:
                continue
        return None

    def kill_worker(self) -> None:
        """SIGKILL to the worker alone: its passages live on."""
        pid = self.worker
        assert pid is not None, f"node {self.name}'s worker is not running:\n{self.text()}"
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: self.worker is None, START_WITHIN, f"{self.name}'s worker to die")

    def kill_with_passages(self) -> None:
        """SIGKILL to the namespace's init: the kernel kills every process in it, the
        passages with the worker. (Without a namespace: the worker, then its passages.)"""
        init = self.init
        if init is None:
            assert not self.namespaced, f"node {self.name}'s namespace is gone"
            self.process.kill()
            kill_families(self.runtime_dir)
        else:
            os.kill(init, signal.SIGKILL)
        self.process.wait(timeout=START_WITHIN)

    def close(self) -> None:
        """Ends whatever of this node still runs, by the pids it started."""
        init = self.init
        if init is not None:
            os.kill(init, signal.SIGKILL)
        elif self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=START_WITHIN)
        except subprocess.TimeoutExpired:
            self.process.kill()
        if not self.namespaced:
            # (in a namespace, pids recorded there mean other processes here)
            kill_families(self.runtime_dir)

    def text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@dataclass
class TwoNodes:
    """The database, the services the test acts through, the nodes and node B's server."""

    url: str
    directory: Path
    mw: MissionWorld
    store: Store
    b_port: int
    namespaced: bool
    nodes: list[Node] = field(default_factory=list)
    b: Server | None = None

    @property
    def api_url(self) -> str:
        return f"http://{HOST}:{self.b_port}"

    def start_a(self, name: str) -> Node:
        """Starts node A ``name`` on its runtime directory (again, if it ran before) and
        waits until its node is registered."""
        runtime_dir = self.directory / name
        log = self.directory / f"{name}-{len(self.nodes)}.log"
        worker = [
            sys.executable,
            "-m",
            "kalends",
            "worker",
            "--database",
            self.url,
            "--runtime-dir",
            str(runtime_dir),
            "--api-url",
            self.api_url,
            "--owner",
            name,
            "--transport",
            "null",
            "--log-format",
            "json",
        ]
        # The worker is the namespace's second process: its init is the shell, which
        # outlives it (the passages' shims live on in the namespace after the worker).
        wrapped = [*NAMESPACE, "sh", *worker] if self.namespaced else worker
        env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
        env["KALENDS_PASSAGE_USER"] = "root"  # behaviour, not confinement
        launched = datetime.now(UTC)
        with log.open("wb") as err:
            process = subprocess.Popen(
                wrapped, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env
            )
        node = Node(name, runtime_dir, log, process, self.namespaced)
        self.nodes.append(node)

        def registered() -> bool:
            if process.poll() is not None:
                pytest.fail(f"node {name} exited ({process.returncode}):\n{node.text()}")
            node_id = node.node_id
            return node_id is not None and self.started_since(node_id, launched)

        wait_for(registered, START_WITHIN, f"node {name} to register")
        return node

    def started_since(self, node_id: str, since: datetime) -> bool:
        """Whether the node registered (started or returned) at ``since`` or later."""
        query = select(worker_nodes.c.started_at).where(worker_nodes.c.node_id == node_id)
        found = self.store.run(lambda conn: conn.execute(query).scalar(), write=False)
        return found is not None and found >= since

    def start_b(self) -> Server:
        """``kalends serve`` on B's port, with its own runtime directory and its scheduler."""
        server = launch(self.url, self.directory / "b", "--port", str(self.b_port))
        server.port = self.b_port
        self.b = server

        def serving() -> bool:
            if server.process.poll() is not None:
                pytest.fail(f"kalends serve exited:\n{server.stderr()[-4000:]}")
            return server.accepts() and bool(log_events(server.stderr_path, "node-started"))

        wait_for(serving, START_WITHIN, "node B to serve")
        return server

    # --- schedules

    def schedule(self, title: str, command: list[str]) -> UUID:
        """A schedule of bob's, played: its passage is due at once."""
        config = daily_config(
            title=title,
            policy={"kind": "immediate"},
            restart="resume",
            profile={"command": command, "cwd": "."},
        )
        mw = self.mw
        receipt = mw.schedules.create(mw.bob.id, mw.home.id, config, request_id=f"create-{title}")
        sid = receipt.mission_id
        assert sid is not None
        revision = self.detail(sid)["revision"]
        mw.schedules.control(
            mw.bob.id, sid, "play", request_id=f"play-{title}", expected_revision=revision
        )
        return sid

    def detail(self, sid: UUID) -> dict[str, Any]:
        return self.mw.schedules.detail(self.mw.bob.id, sid)

    def pending(self, sid: UUID) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.detail(sid)["pending"]
        return found

    def row(self, session: str) -> BeatRow | None:
        return self.store.run(lambda conn: read_beat(conn, session), write=False)

    def wake_owner(self, sid: UUID) -> str | None:
        query = select(schedule_wakes.c.owner).where(schedule_wakes.c.schedule_id == sid)
        found = self.store.run(lambda conn: conn.execute(query).scalar(), write=False)
        return None if found is None else str(found)

    def running_on(self, sid: UUID, node: Node) -> dict[str, Any]:
        """Waits until ``node`` runs the schedule's passage: admitted by it and recorded
        as its own in ``passage_beats``."""

        def probe() -> dict[str, Any] | None:
            if node.process.poll() is not None:
                pytest.fail(f"node {node.name} exited:\n{node.text()}")
            pending = self.pending(sid)
            if pending is None or pending["status"] != "running":
                return None
            row = self.row(pending["sessionId"])
            return pending if row is not None and row.node_id == node.node_id else None

        return wait_for(probe, START_WITHIN, f"node {node.name} to run {sid}'s passage")

    def settled(self, sid: UUID, within: float, what: str) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            found = self.detail(sid)
            return found if found["pending"] is None else None

        return wait_for(probe, within, what, lambda: self.explain(sid))

    def explain(self, sid: UUID) -> str:
        """The schedule's pending passage, its record in ``passage_beats`` and its wake."""
        pending = self.pending(sid)
        row = None if pending is None else self.row(pending["sessionId"])
        query = select(schedule_wakes).where(schedule_wakes.c.schedule_id == sid)
        wake = self.store.run(lambda conn: conn.execute(query).first(), write=False)
        return f"pending: {pending}\nbeat row: {row}\nwake: {wake}"

    def close(self) -> None:
        for node in self.nodes:
            node.close()
        if self.b is not None:
            finish(self.b)


@pytest.fixture
def two(tmp_path: Path) -> Iterator[TwoNodes]:
    server = discover_postgresql()
    if server.url is None:
        if server.required:
            pytest.fail(f"PostgreSQL is {server.reason}")
        pytest.skip(f"two nodes share PostgreSQL, which is {server.reason}")
    with provision("postgresql", tmp_path) as target:
        store = open_store(target.engine(), SystemClock())  # the processes' clock
        mw = make_mission_world(build(store), FakeClock(FAKE_CLOCK_START), tmp_path)
        namespaced = namespaces_permitted()
        world = TwoNodes(target.url, tmp_path, mw, store, free_port(), namespaced)
        try:
            yield world
        finally:
            world.close()
            store.close()


def test_a_node_killed_alone_or_with_its_passages_is_observed_through_the_database(
    two: TwoNodes,
) -> None:
    if not two.namespaced:
        print(
            "note: this machine refuses a new PID namespace (unshare --pid --fork "
            "--mount-proc): node A runs unwrapped, and dies with its passages by SIGKILL to "
            "its worker and then to their families"
        )
    workspace = Path(two.mw.home.path)

    # Case 2's node first: its lease, then B's fallback, are the longest wait. Its
    # schedule is due before it starts, so that it claims the wake at once.
    lost = two.schedule("dies-with-its-node", ["sleep", "600"])
    gone = two.start_a("a-gone")
    lost_pending = two.running_on(lost, gone)
    assert two.wake_owner(lost) == "a-gone/scheduler"
    gone.kill_with_passages()  # its init: the kernel kills the worker and the passage
    killed_at = datetime.now(UTC)

    # Case 1's node: its worker alone is killed; the passage lives on in the namespace.
    alone = two.start_a("a-alone")
    done = two.schedule("outlives-its-worker", ["sh", "-c", GATED])
    done_pending = two.running_on(done, alone)
    session = done_pending["sessionId"]
    b = two.start_b()
    alone.kill_worker()
    assert alone.init is not None or not two.namespaced  # the namespace lives on
    (workspace / RELEASE).touch()

    def reported_ended() -> BeatRow | None:
        row = two.row(session)
        ended = row is not None and row.observation is not None and row.observation.settled
        return row if ended else None

    row = wait_for(reported_ended, START_WITHIN, "the shim to report the end to B")
    assert row.source == "shim" and row.node_id == alone.node_id
    assert row.observation is not None and row.observation.exit_status == 0
    assert "the work is done" in row.observation.log_tail
    # Nobody settled it yet: the wake is still A's, until its lease runs out.
    assert two.pending(done) is not None and two.wake_owner(done) == "a-alone/scheduler"

    # B takes the dead node's wake over and finds nothing fresh: not observed, not settled.
    def not_observed() -> dict[str, Any] | None:
        pending = two.pending(lost)
        assert pending is not None, "the passage of a dead node was settled"
        uncertain = (pending["status"], pending["reason"]) == ("uncertain", "not-observed")
        return pending if uncertain else None

    pending = wait_for(not_observed, TAKEOVER_WITHIN, "B to find the dead node's passage")
    owner_b = two.wake_owner(lost)
    assert owner_b is not None and owner_b.endswith("/scheduler") and not owner_b.startswith("a-")
    assert pending["sessionId"] == lost_pending["sessionId"]
    assert datetime.now(UTC) - killed_at >= timedelta(seconds=45)  # silent long enough
    assert two.detail(lost)["counters"]["settled"] == 0

    # Case 1: B settles the passage from the shim's record, once.
    detail = two.settled(done, TAKEOVER_WITHIN, "B to settle the passage that outlived A")
    # (exit status 0 without a report of its own)
    assert detail["latestResult"]["outcome"] == "ended-without-report", detail["latestResult"]
    assert detail["counters"]["settled"] == 1, detail["counters"]
    assert two.wake_owner(done) in (owner_b, None)

    # The node returns on its runtime directory (once B holds every wake): it finds the
    # passage lost and says so.
    back = two.start_a("a-gone")
    assert back.node_id == gone.node_id
    assert two.pending(lost) is not None

    # Case 2: B settles the lost passage as failed once its node reported it.
    detail = two.settled(lost, FALLBACK_WITHIN, "B to settle the passage its node found lost")
    assert detail["latestResult"]["outcome"] == "failed", detail["latestResult"]
    assert detail["counters"]["settled"] == 1, detail["counters"]
    final = two.row(lost_pending["sessionId"])
    assert final is not None and final.observation is not None
    assert final.observation.error == "lost" and final.source == "node"

    # Each passage was settled exactly once, by B; no node A settled anything.
    settled_by_b = log_events(b.stderr_path, "passage-settled")
    assert sorted(e["schedule_id"] for e in settled_by_b) == sorted([str(done), str(lost)])
    for node in two.nodes:
        assert log_events(node.log, "passage-settled") == [], node.name
