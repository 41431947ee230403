"""Two worker nodes on one database (issue 23 §3): passages observed from any node.

Each node is a real process runtime in a temporary directory of its own, with its
identity, a :class:`NodeRuntime` and a scheduler that runs in-process on the fake clock;
the passages are real commands (``passage.py`` of the journeys). A node "dies" when the
test stops calling its scheduler and its loop; it "returns" when a new runtime and loop
are opened on its directory. Both databases.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from kalends.cli.main import app
from kalends.cli.schedule_views import NODE_SILENT, pending_reason_text
from kalends.errors import InvalidInput
from kalends.missions.document import PassageStatus, Pending
from kalends.missions.node_runtime import NOT_STARTED, NodeLoop, NodeRuntime, open_node
from kalends.missions.nodes import forget_node
from kalends.missions.passage_beats import (
    SILENT_AFTER,
    BeatRow,
    BeatState,
    publish,
    read_beat,
    record_admitted,
)
from kalends.missions.runtime.base import (
    Observation,
    PassageStart,
    Presence,
    Report,
    RuntimeUnavailable,
)
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.scheduler import Scheduler, scheduled_identity
from kalends.missions.views import iso
from kalends.missions.wakes import WAKE_LEASE
from kalends.storage.node_tables import passage_beats, worker_nodes
from missions.condition_support import decide_next
from missions.conftest import MissionWorld, daily_config
from missions.journey_support import (
    install_commands,
    kill_families,
    open_gate,
    passage_command,
    sessions,
    wait_until,
)

SLOT = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
"""The first 09:00 Europe/Berlin after the fake clock's start (2025-03-01 12:00 UTC)."""
PAST_LEASE = WAKE_LEASE + timedelta(seconds=1)
PAST_SILENCE = SILENT_AFTER + timedelta(seconds=1)
NEXT_LOOK = timedelta(minutes=6)
"""Past every pending-fallback step: the wake of a pending passage is due again."""


class Died(BaseException):
    """A node's scheduler dying between a reservation and its start (a BaseException,
    so no guard of the scheduler catches it)."""


class DiesAtStart(MemoryRuntime):
    """A runtime whose process dies as it is about to start a passage."""

    def start(self, start: PassageStart) -> Presence:
        raise Died


@dataclass
class Node:
    """One worker node: its runtime directory, runtime, scheduler and loop."""

    root: Path
    runtime: NodeRuntime
    scheduler: Scheduler
    loop: NodeLoop

    @property
    def node_id(self) -> str:
        return self.runtime.node_id


@dataclass
class Two:
    mw: MissionWorld
    a: Node
    b: Node
    workspace: Path
    serial: int = 0

    def node(self, root: Path, name: str) -> Node:
        """A node on ``root`` (a returning one when the directory was used before)."""
        return open_test_node(self.mw, root, name)

    def create(self, command: list[str], *, by: Scheduler | None = None, **overrides: Any) -> UUID:
        """A schedule running ``command`` daily, played, its wake armed by node A's
        scheduler (or ``by``)."""
        self.serial += 1
        receipt = self.mw.schedules.create(
            self.mw.bob.id,
            self.mw.home.id,
            daily_config(profile={"command": command, "cwd": "."}, **overrides),
            request_id=f"create-{self.serial:04d}",
        )
        assert receipt.mission_id is not None
        self.act(receipt.mission_id, "play")
        assert (by or self.a.scheduler).run_once().claimed == 1
        return receipt.mission_id

    def act(self, sid: UUID, action: str) -> None:
        self.serial += 1
        self.mw.schedules.control(
            self.mw.bob.id,
            sid,
            action,
            request_id=f"{action}-{self.serial:04d}",
            expected_revision=self.detail(sid)["revision"],
        )

    def detail(self, sid: UUID) -> dict[str, Any]:
        return self.mw.schedules.detail(self.mw.bob.id, sid)

    def pending(self, sid: UUID) -> dict[str, Any]:
        pending = self.detail(sid)["pending"]
        assert isinstance(pending, dict), "no passage is pending"
        return pending

    def latest(self, sid: UUID) -> dict[str, Any]:
        detail = self.detail(sid)
        assert detail["pending"] is None, detail["pending"]
        return dict(detail["latestResult"])

    def beat(self, session: str) -> BeatRow:
        row = self.mw.store.run(lambda conn: read_beat(conn, session), write=False)
        assert row is not None, f"no beat row for {session}"
        return row

    def started_on_a(self, sid: UUID) -> dict[str, Any]:
        """The slot arrives: node A reserves, starts and admits the passage."""
        self.mw.clock.set(SLOT)
        round_ = self.a.scheduler.run_once()
        assert (round_.reserved, round_.admitted) == (1, 1)
        return self.pending(sid)

    def b_takes_over(self) -> None:
        """A stopped being run: after its lease, B takes over A's wakes."""
        self.mw.clock.advance(PAST_LEASE)
        assert self.b.scheduler.run_once().claimed >= 1

    def settled_locally(self, node: Node, session: str) -> Observation:
        def probe() -> Observation | None:
            seen = node.runtime.local.observe(session)
            return seen if seen.settled else None

        return wait_until(probe, what=f"session {session} to settle")


def open_test_node(mw: MissionWorld, root: Path, name: str) -> Node:
    """A worker node on ``root``: a process runtime there, registered as a node, with
    its scheduler and loop."""
    runtime = open_node(mw.store, ProcessRuntime(root, grace=1.0), name=name)
    scheduler = Scheduler(mw.store, runtime, owner=name)
    return Node(root, runtime, scheduler, NodeLoop(runtime))


@pytest.fixture(name="two")
def two_fixture(mw: MissionWorld, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Two]:
    workspace = Path(mw.home.path)
    install_commands(workspace)
    roots = [tmp_path_factory.mktemp("node-a"), tmp_path_factory.mktemp("node-b")]
    a, b = open_test_node(mw, roots[0], "node-a"), open_test_node(mw, roots[1], "node-b")
    try:
        yield Two(mw, a, b, workspace)
    finally:
        for root in roots:
            kill_families(root)


# --------------------------------------------------------------------------- takeover


class TestTakeover:
    def test_b_settles_a_passage_of_dead_node_a_from_what_a_published(self, two: Two) -> None:
        sid = two.create(passage_command("t1", "gate"))
        pending = two.started_on_a(sid)
        session = pending["sessionId"]
        # Reserved in the set-based round in A's name, admitted there and recorded so.
        assert pending["node"] == two.a.node_id
        assert sessions(two.a.root) == [session] and sessions(two.b.root) == []
        row = two.beat(session)
        assert (row.node_id, row.state) == (two.a.node_id, BeatState.ADMITTED)

        open_gate(two.workspace, "t1")
        two.settled_locally(two.a, session)
        # A's loop publishes its last round; then A is no longer run.
        assert two.a.loop.round().published == 1
        two.b_takes_over()

        result = two.latest(sid)
        assert (result["outcome"], result["reason"]) == ("completed", None)
        assert result["summary"] == "t1: Summarise yesterday's commits."
        assert sessions(two.b.root) == []  # observed, never started again on B
        assert two.detail(sid)["counters"]["admitted"] == 1

    def test_shim_beats_published_directly_settle_a_passage_of_a_dead_node(self, two: Two) -> None:
        sid = two.create(passage_command("t2", "gate"))
        session = two.started_on_a(sid)["sessionId"]
        two.b_takes_over()
        assert two.pending(sid)["status"] == "uncertain"  # A silent, nothing reported

        now = two.mw.clock.now()
        ended = Observation(
            launched=True,
            running=False,
            exited=True,
            exit_status=0,
            report=Report(outcome="failed", summary="the tests are red", at=now),
        )
        two.mw.store.run(
            lambda conn: publish(
                conn, session_id=session, node_id=two.a.node_id, observation=ended,
                source="shim", now=now,
            )
        )  # fmt: skip
        two.mw.clock.advance(NEXT_LOOK)
        two.b.scheduler.run_once()

        result = two.latest(sid)
        assert (result["outcome"], result["reason"], result["summary"]) == (
            "failed",
            "reported",
            "the tests are red",
        )

    def test_a_fresh_shim_beat_keeps_a_passage_of_a_dead_node_running(self, two: Two) -> None:
        sid = two.create(passage_command("t3", "gate"))
        started = two.started_on_a(sid)
        session = started["sessionId"]
        # Nothing observed yet: no output recorded to show.
        assert "logTail" not in started and "recordedAt" not in started
        two.mw.clock.advance(PAST_LEASE)
        now = two.mw.clock.now()
        running = Observation(launched=True, running=True, exited=False, log_tail="working\n")
        two.mw.store.run(
            lambda conn: publish(
                conn, session_id=session, node_id=two.a.node_id, observation=running,
                source="shim", now=now,
            )
        )  # fmt: skip
        assert two.b.scheduler.run_once().claimed == 1

        pending = two.pending(sid)
        assert (pending["status"], pending["reason"]) == ("running", None)
        # Its output, as the shim recorded it, in the detail people read anywhere.
        assert (pending["logTail"], pending["recordedAt"]) == ("working\n", iso(now))


# --------------------------------------------------------------------------- silence


class TestSilence:
    @pytest.mark.parametrize(
        ("ends", "outcome", "reason"),
        [
            ("exit", "completed", None),  # A returns and reports the exit it recorded
            ("lost", "failed", "lost"),  # A died with its passage: its shim is gone too
        ],
    )
    def test_a_silent_node_leaves_its_passage_uncertain_until_it_returns(
        self, two: Two, ends: str, outcome: str, reason: str | None
    ) -> None:
        sid = two.create(passage_command("t4", "gate"))
        session = two.started_on_a(sid)["sessionId"]
        if ends == "exit":
            open_gate(two.workspace, "t4")
            two.settled_locally(two.a, session)
        else:
            wait_until(
                lambda: two.a.runtime.local.observe(session).running, what="the passage to run"
            )
            kill_families(two.a.root)
        two.b_takes_over()
        for _ in range(3):  # however long: never guessed finished
            pending = two.pending(sid)
            assert (pending["status"], pending["reason"]) == ("uncertain", "not-observed")
            assert pending["admitted"] is True and pending["node"] == two.a.node_id
            two.mw.clock.advance(NEXT_LOOK)
            two.b.scheduler.run_once()
        assert two.detail(sid)["counters"]["settled"] == 0

        # A returns on its directory, as itself, and reconciles in its first round.
        back = two.node(two.a.root, "node-a")
        assert back.node_id == two.a.node_id
        assert back.loop.round().published == 1
        two.mw.clock.advance(NEXT_LOOK)
        two.b.scheduler.run_once()

        result = two.latest(sid)
        assert (result["outcome"], result["reason"]) == (outcome, reason)
        assert sessions(two.b.root) == []

    def test_forgetting_a_silent_node_fails_its_passage_with_node_lost(self, two: Two) -> None:
        sid = two.create(passage_command("t5", "gate"))
        two.started_on_a(sid)
        two.b_takes_over()
        assert two.pending(sid)["status"] == "uncertain"

        now = two.mw.clock.now()
        assert two.mw.store.run(lambda conn: forget_node(conn, two.a.node_id, now)) == 1
        two.mw.clock.advance(NEXT_LOOK)
        two.b.scheduler.run_once()

        result = two.latest(sid)
        assert (result["outcome"], result["reason"]) == ("failed", "node-lost")
        assert sessions(two.b.root) == []


# --------------------------------------------------------------------------- not admitted


class TestNotAdmitted:
    def test_b_asks_and_starts_a_reservation_of_a_once_a_answers_absent(self, two: Two) -> None:
        # A reserves the slot in its name and dies before starting it.
        dying = Scheduler(two.mw.store, DiesAtStart(), owner="node-a", node=two.a.node_id)
        sid = two.create(passage_command("t6", "report"), by=dying)
        two.mw.clock.set(SLOT)
        with pytest.raises(Died):
            dying.run_once()
        pending = two.pending(sid)
        passage, session, message = scheduled_identity(str(sid), SLOT)
        assert (pending["sessionId"], pending["admitted"], pending["node"]) == (
            session,
            False,
            two.a.node_id,
        )

        # B takes over and asks A; with no answer it stays uncertain and starts nothing.
        two.mw.clock.advance(PAST_LEASE)
        for _ in range(2):
            two.b.scheduler.run_once()
            pending = two.pending(sid)
            assert (pending["status"], pending["reason"]) == ("uncertain", "not-observed")
            assert two.beat(session).state is BeatState.ASKED
            two.mw.clock.advance(NEXT_LOOK)
        assert sessions(two.a.root) == [] and sessions(two.b.root) == []

        # A's loop answers: it never admitted it, and it never will.
        assert two.a.loop.round().answered == 1
        assert two.beat(session).state is BeatState.ABSENT
        admitted = two.b.scheduler.run_once().admitted
        assert admitted == 1
        pending = two.pending(sid)
        assert (pending["admitted"], pending["node"]) == (True, two.b.node_id)
        assert (pending["passageId"], pending["messageId"]) == (passage, message)
        assert sessions(two.b.root) == [session] and sessions(two.a.root) == []
        row = two.beat(session)
        assert (row.node_id, row.state) == (two.b.node_id, BeatState.ADMITTED)

        # A refuses to start it now, and B settles it once, from its own runtime.
        start = PassageStart(
            passage_id=passage, session_id=session, message_id=message,
            schedule_id=str(sid), workspace=str(two.workspace), command=("true",),
        )  # fmt: skip
        with pytest.raises(RuntimeUnavailable, match="will not start here"):
            two.a.runtime.start(start)
        assert sessions(two.a.root) == []
        two.settled_locally(two.b, session)
        two.mw.clock.advance(NEXT_LOOK)
        two.b.scheduler.run_once()
        assert two.latest(sid)["outcome"] == "completed"
        assert two.detail(sid)["counters"]["admitted"] == 1

    def test_a_start_a_recorded_but_never_admitted_locally_settles_not_started(
        self, two: Two
    ) -> None:
        dying = Scheduler(two.mw.store, DiesAtStart(), owner="node-a", node=two.a.node_id)
        sid = two.create(passage_command("t7", "report"), by=dying)
        two.mw.clock.set(SLOT)
        with pytest.raises(Died):
            dying.run_once()
        _, session, message = scheduled_identity(str(sid), SLOT)
        pending = two.pending(sid)
        # A recorded the admission, then died before its local admission.
        now = two.mw.clock.now()
        two.mw.store.run(
            lambda conn: record_admitted(
                conn, session_id=session, passage_id=pending["passageId"], message_id=message,
                schedule_id=sid, node_id=two.a.node_id, now=now,
            )
        )  # fmt: skip
        two.mw.clock.advance(PAST_LEASE)
        two.b.scheduler.run_once()  # the row says admitted: B records the admission
        pending = two.pending(sid)
        assert (pending["admitted"], pending["node"]) == (True, two.a.node_id)

        # A returns: nothing of it in its directory, so it never started.
        back = two.node(two.a.root, "node-a")
        assert back.loop.round().published == 1
        assert two.beat(session).observation == Observation(
            launched=False, running=False, exited=True, error=NOT_STARTED
        )
        two.mw.clock.advance(NEXT_LOOK)
        two.b.scheduler.run_once()
        assert (two.latest(sid)["outcome"], two.latest(sid)["reason"]) == (
            "failed",
            NOT_STARTED,
        )
        assert sessions(two.a.root) == [] and sessions(two.b.root) == []


# --------------------------------------------------------------------------- interrupt


class TestRemoteInterrupt:
    def test_stop_asks_the_node_of_a_remote_passage_and_its_loop_interrupts_it(
        self, two: Two
    ) -> None:
        sid = two.create(passage_command("t8", "trap"))
        session = two.started_on_a(sid)["sessionId"]
        wait_until(lambda: two.a.runtime.local.observe(session).running, what="the passage to run")
        two.mw.clock.advance(PAST_LEASE)
        two.a.loop.round()  # A beats (its scheduler is gone, its loop is not)
        assert two.b.scheduler.run_once().claimed == 1
        assert two.pending(sid)["status"] == "running"

        two.act(sid, "stop")
        assert two.b.scheduler.run_once().interrupted == 1
        row = two.beat(session)
        assert row.interrupt_at is not None
        assert two.b.scheduler.run_once().interrupted == 0  # asked once

        assert two.a.loop.round().interrupted == 1
        seen = two.settled_locally(two.a, session)
        assert seen.interrupted
        # The loop publishes the settlement in its next round, or already in the round
        # that interrupted when the command ended at once (its look after the signal).
        two.a.loop.round()
        published = two.beat(session).observation
        assert published is not None and published.settled and published.interrupted
        two.mw.clock.advance(NEXT_LOOK)
        two.b.scheduler.run_once()
        result = two.latest(sid)
        assert (result["outcome"], result["reason"]) == ("ended-without-report", "interrupted")
        assert two.detail(sid)["state"] == "stopped"


# --------------------------------------------------------------------------- no node


class TestNoNode:
    def test_a_scheduler_without_a_node_writes_nothing_of_nodes(self, mw: MissionWorld) -> None:
        receipt = mw.schedules.create(
            mw.bob.id, mw.home.id, daily_config(), request_id="create-0001"
        )
        sid = receipt.mission_id
        assert sid is not None
        rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
        mw.schedules.play(mw.bob.id, sid, request_id="play-0001", expected_revision=rev)
        scheduler = Scheduler(mw.store, MemoryRuntime())
        scheduler.run_once()
        mw.clock.set(SLOT)
        assert scheduler.run_once().admitted == 1

        pending = mw.schedules.detail(mw.bob.id, sid)["pending"]
        assert pending["admitted"] is True and "node" not in pending

        def counts(conn: Any) -> tuple[int, int]:
            beats = conn.execute(select(func.count()).select_from(passage_beats)).scalar_one()
            nodes = conn.execute(select(func.count()).select_from(worker_nodes)).scalar_one()
            return int(beats), int(nodes)

        assert mw.store.run(counts, write=False) == (0, 0)


# --------------------------------------------------------------------------- documents


class TestPendingNode:
    def test_the_node_is_written_only_when_set_and_old_documents_parse(self) -> None:
        at = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
        pending = Pending(
            passage_id="psg_1", session_id="ses_1", message_id="msg_1", trigger="scheduled",
            slot=at, request_id=None, status=PassageStatus.RUNNING, admitted=True,
            reserved_at=at,
        )  # fmt: skip
        old = pending.to_json()
        assert "node" not in old
        assert Pending.from_json(json.loads(json.dumps(old))) == pending
        mine = replace(pending, node="a" * 32)
        assert mine.to_json()["node"] == "a" * 32
        assert Pending.from_json(mine.to_json()) == mine

    @pytest.mark.parametrize("node", ["", 7, ["a"]])  # empty, a number, a list
    def test_a_stored_node_that_is_not_an_id_is_refused(self, node: object) -> None:
        at = "2025-03-02T08:00:00Z"
        doc = {
            "passageId": "psg_1", "sessionId": "ses_1", "messageId": "msg_1",
            "trigger": "manual", "slot": None, "requestId": "r", "status": "starting",
            "admitted": False, "reservedAt": at, "node": node,
        }  # fmt: skip
        with pytest.raises(ValueError, match="node"):
            Pending.from_json(doc)


# --------------------------------------------------------------------------- bad input


class TestBadInput:
    def test_a_node_runtime_needs_a_node_id(self, mw: MissionWorld, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput, match="node's ID"):
            NodeRuntime(ProcessRuntime(tmp_path / "r"), mw.store, "")

    @pytest.mark.parametrize("every", [timedelta(0), timedelta(seconds=-1)])  # zero, negative
    def test_a_node_loop_beats_at_a_positive_period(
        self, mw: MissionWorld, tmp_path: Path, every: timedelta
    ) -> None:
        node = open_node(mw.store, ProcessRuntime(tmp_path / "r"), name="n")
        with pytest.raises(InvalidInput, match="positive period"):
            NodeLoop(node, every=every)

    def test_a_scheduler_refuses_a_node_that_is_not_its_runtime_s(
        self, mw: MissionWorld, tmp_path: Path
    ) -> None:
        node = open_node(mw.store, ProcessRuntime(tmp_path / "r"), name="n")
        with pytest.raises(InvalidInput, match="runs as node"):
            Scheduler(mw.store, node, node="b" * 32)

    def test_a_start_whose_schedule_is_not_a_uuid_is_refused_before_any_record(
        self, mw: MissionWorld, tmp_path: Path
    ) -> None:
        node = open_node(mw.store, ProcessRuntime(tmp_path / "r"), name="n")
        start = PassageStart(
            passage_id="psg_1", session_id="ses_1", message_id="msg_1",
            schedule_id="not-a-uuid", workspace=str(tmp_path), command=("true",),
        )  # fmt: skip
        with pytest.raises(InvalidInput, match="not a UUID"):
            node.start(start)
        assert mw.store.run(lambda conn: read_beat(conn, "ses_1"), write=False) is None

    def test_a_beat_url_that_is_not_http_is_refused(self, mw: MissionWorld, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput, match=r"beats\.url"):
            open_node(mw.store, ProcessRuntime(tmp_path / "r"), name="n", api_url="ftp://x")


class TestWording:
    def test_an_admitted_passage_not_observed_says_its_node_stopped_reporting(self) -> None:
        said = pending_reason_text(
            {"status": "uncertain", "reason": "not-observed", "admitted": True}
        )
        assert said == NODE_SILENT
        assert "`kalends node forget`" in said

    def test_a_start_not_observed_before_its_admission_keeps_its_wording(self) -> None:
        said = pending_reason_text(
            {"status": "uncertain", "reason": "not-observed", "admitted": False}
        )
        assert said == "the runtime cannot tell whether it started; retrying"


class TestWorkerApiUrl:
    @pytest.mark.parametrize(
        "url",
        [
            "ftp://example.com",  # not http
            "http://",  # no host
            "http://example.com/?q=1",  # a query
            "example.com",  # no scheme
        ],
    )
    def test_a_bad_api_url_exits_2_and_creates_no_database(self, tmp_path: Path, url: str) -> None:
        path = tmp_path / "never.sqlite3"
        result = CliRunner().invoke(
            app,
            ["worker", "--database", str(path), "--once", "--json", "--api-url", url],
            env={"KALENDS_ACTOR": None, "KALENDS_DATABASE_URL": None},
        )
        assert result.exit_code == 2, result.output
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["details"]["field"]) == ("invalid-input", "api_url")
        assert not path.exists()


class TestReservations:
    def test_a_conditioned_slot_is_reserved_in_the_node_s_name(self, two: Two) -> None:
        (two.workspace / "a.txt").write_text("one\n")
        sid = two.create(
            passage_command("t9", "report"),
            condition={"kind": "files", "paths": ["a.txt", "b.txt"]},
        )
        (two.workspace / "b.txt").write_text("two\n")  # the change that opens the gate
        _slot, body = decide_next(two.mw, two.a.scheduler, sid)
        assert body.pending is not None and body.pending.proof is not None
        assert body.pending.node == two.a.node_id
        session = body.pending.session_id
        assert two.beat(session).node_id == two.a.node_id
        assert sessions(two.a.root) == [session] and sessions(two.b.root) == []


class TestNodeLoopThread:
    def test_the_loop_beats_at_once_and_records_its_stop(self, two: Two) -> None:
        stop = threading.Event()
        two.mw.clock.advance(timedelta(minutes=1))
        thread = two.a.loop.start(stop)

        def beat_at(conn: Any) -> tuple[datetime, datetime | None]:
            row = conn.execute(
                select(worker_nodes.c.beat_at, worker_nodes.c.stopped_at).where(
                    worker_nodes.c.node_id == two.a.node_id
                )
            ).one()
            return row.beat_at, row.stopped_at

        now = two.mw.clock.now()
        wait_until(lambda: two.mw.store.run(beat_at, write=False)[0] == now, what="a beat")
        stop.set()
        thread.join(10)
        assert not thread.is_alive()
        assert two.mw.store.run(beat_at, write=False)[1] == now
