"""Passage beats on both databases: every admission state, published observations, and
the rule a scheduler on another node observes a passage by (issue 23 §3)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import update
from sqlalchemy.engine import Connection

from kalends.clock import FakeClock
from kalends.errors import InvalidInput, NotFound
from kalends.missions import passage_beats as beats
from kalends.missions.nodes import NodeIdentity, beat_node, forget_node, register_node
from kalends.missions.passage_beats import (
    NODE_LOST,
    SILENT_AFTER,
    BeatRow,
    BeatState,
    observation_from_json,
    observation_to_json,
)
from kalends.missions.runtime.base import Observation, Report
from kalends.storage.node_tables import passage_beats
from kalends.storage.unit_of_work import Store

A = "a" * 32
B = "b" * 32
SCHEDULE = UUID("00000000-0000-4000-8000-000000000001")

RUNNING = Observation(launched=True, running=True, exited=False, log_tail="working\n")
SETTLED = Observation(launched=True, running=False, exited=True, exit_status=0)
LINGERING = Observation(launched=True, running=False, exited=True, exit_status=0, descendants=True)


def start(session: str = "ses_1", message: str = "msg_1") -> dict[str, Any]:
    return {
        "session_id": session,
        "passage_id": f"psg_{session}",
        "message_id": message,
        "schedule_id": SCHEDULE,
    }


@pytest.fixture
def nodes(store: Store, fake_clock: FakeClock, tmp_path: Path) -> Store:
    """The store with nodes A and B registered."""
    now = fake_clock.now()
    for node_id, name in ((A, "alpha"), (B, "beta")):
        identity = NodeIdentity(node_id=node_id, created_at=now)
        store.run(
            partial(
                register_node,
                identity=identity,
                name=name,
                runtime_dir=str(tmp_path / name),
                now=now,
            )
        )
    return store


def row_of(store: Store, session: str = "ses_1") -> BeatRow:
    found = store.run(lambda conn: beats.read_beat(conn, session), write=False)
    assert found is not None
    return found


def admit(store: Store, node: str, now: datetime, session: str = "ses_1", **kw: Any) -> bool:
    values = {**start(session), **kw}
    return bool(
        store.run(lambda conn: beats.record_admitted(conn, node_id=node, now=now, **values))
    )


def ask(store: Store, node: str, now: datetime, session: str = "ses_1") -> BeatRow:
    result: BeatRow = store.run(
        lambda conn: beats.ask(conn, node_id=node, now=now, **start(session))
    )
    return result


def answer(store: Store, node: str, now: datetime, present: set[str]) -> int:
    answered: int = store.run(
        lambda conn: beats.answer_asked(conn, node, lambda s, _m: s in present, now)
    )
    return answered


def set_state(store: Store, state: BeatState, session: str = "ses_1") -> None:
    def change(conn: Connection) -> None:
        conn.execute(
            update(passage_beats)
            .where(passage_beats.c.session_id == session)
            .values(state=state.value)
        )

    store.run(change)


class TestRecordAdmitted:
    def test_a_new_session_is_admitted_by_its_node(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        now = fake_clock.now()
        assert admit(nodes, A, now)
        row = row_of(nodes)
        assert (row.node_id, row.state, row.observation, row.source) == (
            A,
            BeatState.ADMITTED,
            None,
            None,
        )
        assert (row.passage_id, row.message_id, row.schedule_id) == (
            "psg_ses_1",
            "msg_1",
            SCHEDULE,
        )
        assert row.beat_at == now
        assert row.node_beat_at == now

    def test_admitting_again_on_the_same_node_is_allowed_and_keeps_the_row(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        nodes.run(
            lambda conn: beats.publish(
                conn,
                session_id="ses_1",
                node_id=A,
                observation=RUNNING,
                source="node",
                now=fake_clock.now(),
            )
        )
        assert admit(nodes, A, fake_clock.advance(1))
        row = row_of(nodes)
        assert (row.state, row.observation) == (BeatState.ADMITTED, RUNNING)

    def test_a_row_asked_of_this_node_becomes_admitted(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        ask(nodes, A, fake_clock.now())
        later = fake_clock.advance(5)
        assert admit(nodes, A, later)
        row = row_of(nodes)
        assert (row.node_id, row.state, row.beat_at) == (A, BeatState.ADMITTED, later)

    def test_a_row_this_node_answered_absent_refuses_the_start(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        ask(nodes, A, fake_clock.now())
        answer(nodes, A, fake_clock.now(), present=set())
        before = row_of(nodes)
        assert not admit(nodes, A, fake_clock.advance(5))
        assert row_of(nodes) == before

    def test_another_nodes_absent_row_is_taken_over(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        ask(nodes, A, fake_clock.now())
        nodes.run(lambda conn: beats.request_interrupt(conn, "ses_1", fake_clock.now()))
        answer(nodes, A, fake_clock.now(), present=set())
        later = fake_clock.advance(5)
        assert admit(nodes, B, later, message_id="msg_2")
        row = row_of(nodes)
        assert (row.node_id, row.state, row.observation, row.source) == (
            B,
            BeatState.ADMITTED,
            None,
            None,
        )
        assert (row.message_id, row.beat_at, row.interrupt_at) == ("msg_2", later, None)

    def test_a_stored_observation_is_dropped_when_the_row_is_taken_over(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        nodes.run(
            lambda conn: beats.publish(
                conn,
                session_id="ses_1",
                node_id=A,
                observation=RUNNING,
                source="node",
                now=fake_clock.now(),
            )
        )
        set_state(nodes, BeatState.ABSENT)
        assert admit(nodes, B, fake_clock.advance(1))
        assert row_of(nodes).observation is None

    @pytest.mark.parametrize(
        "state",
        [
            BeatState.ASKED,  # the other node has not answered yet: it may hold it
            BeatState.ADMITTED,  # the other node holds it
        ],
    )
    def test_another_nodes_row_asked_or_admitted_refuses_the_start(
        self, nodes: Store, fake_clock: FakeClock, state: BeatState
    ) -> None:
        ask(nodes, A, fake_clock.now())
        set_state(nodes, state)
        before = row_of(nodes)
        assert not admit(nodes, B, fake_clock.advance(5))
        assert row_of(nodes) == before

    def test_an_unregistered_node_cannot_admit(self, nodes: Store, fake_clock: FakeClock) -> None:
        with pytest.raises(NotFound, match="c" * 32):
            admit(nodes, "c" * 32, fake_clock.now())
        assert nodes.run(lambda conn: beats.read_beat(conn, "ses_1"), write=False) is None

    def test_a_naive_now_is_refused(self, nodes: Store) -> None:
        with pytest.raises(InvalidInput, match="naive"):
            admit(nodes, A, datetime(2025, 3, 1, 12, 0))


class TestAsk:
    def test_asking_creates_an_asked_row_for_the_node(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        row = ask(nodes, A, fake_clock.now())
        assert (row.node_id, row.state, row.observation, row.beat_at) == (
            A,
            BeatState.ASKED,
            None,
            fake_clock.now(),
        )

    def test_asking_again_returns_the_row_as_stored(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        row = ask(nodes, B, fake_clock.advance(5))
        assert (row.node_id, row.state) == (A, BeatState.ADMITTED)

    def test_asked_rows_are_answered_admitted_when_present_else_absent(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        for session in ("ses_1", "ses_2"):
            ask(nodes, A, fake_clock.now(), session=session)
        ask(nodes, B, fake_clock.now(), session="ses_3")
        later = fake_clock.advance(5)
        assert answer(nodes, A, later, present={"ses_1"}) == 2
        assert row_of(nodes, "ses_1").state == BeatState.ADMITTED
        assert row_of(nodes, "ses_2").state == BeatState.ABSENT
        assert row_of(nodes, "ses_1").beat_at == later
        # B's question is B's to answer.
        assert row_of(nodes, "ses_3").state == BeatState.ASKED
        assert answer(nodes, A, later, present={"ses_1", "ses_2"}) == 0
        assert row_of(nodes, "ses_2").state == BeatState.ABSENT

    def test_the_presence_check_is_given_session_and_message(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        ask(nodes, A, fake_clock.now())
        seen: list[tuple[str, str]] = []

        def present(session: str, message: str) -> bool:
            seen.append((session, message))
            return True

        nodes.run(lambda conn: beats.answer_asked(conn, A, present, fake_clock.now()))
        assert seen == [("ses_1", "msg_1")]


class TestPublish:
    def test_publishing_records_the_observation_and_its_source(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        later = fake_clock.advance(15)
        assert nodes.run(
            lambda conn: beats.publish(
                conn, session_id="ses_1", node_id=A, observation=RUNNING, source="shim", now=later
            )
        )
        row = row_of(nodes)
        assert (row.observation, row.source, row.beat_at) == (RUNNING, "shim", later)

    def test_another_node_cannot_publish_and_nothing_is_written(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        before = row_of(nodes)
        assert not nodes.run(
            lambda conn: beats.publish(
                conn,
                session_id="ses_1",
                node_id=B,
                observation=SETTLED,
                source="node",
                now=fake_clock.advance(1),
            )
        )
        assert row_of(nodes) == before

    def test_publishing_for_an_unknown_session_writes_nothing(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert not nodes.run(
            lambda conn: beats.publish(
                conn,
                session_id="ses_9",
                node_id=A,
                observation=RUNNING,
                source="node",
                now=fake_clock.now(),
            )
        )
        assert nodes.run(lambda conn: beats.read_beat(conn, "ses_9"), write=False) is None

    def test_a_settled_observation_is_not_replaced_by_an_older_unsettled_one(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        for observation in (SETTLED, RUNNING):
            nodes.run(
                partial(
                    beats.publish,
                    session_id="ses_1",
                    node_id=A,
                    observation=observation,
                    source="node",
                    now=fake_clock.advance(1),
                )
            )
        row = row_of(nodes)
        assert (row.observation, row.beat_at) == (SETTLED, fake_clock.now())

    def test_an_unknown_source_is_refused(self, nodes: Store, fake_clock: FakeClock) -> None:
        assert admit(nodes, A, fake_clock.now())
        with pytest.raises(InvalidInput, match="source"):
            nodes.run(
                lambda conn: beats.publish(
                    conn,
                    session_id="ses_1",
                    node_id=A,
                    observation=RUNNING,
                    source="proc",
                    now=fake_clock.now(),
                )
            )
        assert row_of(nodes).observation is None


class TestUnsettledAndInterrupt:
    def test_unsettled_rows_are_the_nodes_admitted_rows_not_settled(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        now = fake_clock.now()
        for session, observation in (
            ("ses_1", None),  # admitted, not observed yet
            ("ses_2", RUNNING),
            ("ses_3", LINGERING),  # ended, but a process of its session lives
            ("ses_4", SETTLED),
        ):
            assert admit(nodes, A, now, session=session)
            if observation is not None:
                nodes.run(
                    partial(
                        beats.publish,
                        session_id=session,
                        node_id=A,
                        observation=observation,
                        source="node",
                        now=now,
                    )
                )
        ask(nodes, A, now, session="ses_5")  # asked, not admitted
        assert admit(nodes, B, now, session="ses_6")  # another node's
        found = nodes.run(lambda conn: beats.unsettled_of(conn, A), write=False)
        assert [r.session_id for r in found] == ["ses_1", "ses_2", "ses_3"]
        assert [r.observation for r in found] == [None, RUNNING, LINGERING]

    def test_an_interrupt_request_keeps_the_first_time(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        first = fake_clock.advance(1)
        nodes.run(lambda conn: beats.request_interrupt(conn, "ses_1", first))
        nodes.run(lambda conn: beats.request_interrupt(conn, "ses_1", fake_clock.advance(30)))
        assert row_of(nodes).interrupt_at == first

    def test_interrupting_an_unknown_session_is_not_found(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        with pytest.raises(NotFound, match="ses_9"):
            nodes.run(lambda conn: beats.request_interrupt(conn, "ses_9", fake_clock.now()))


FULL = Observation(
    launched=True,
    running=False,
    exited=True,
    exit_status=None,
    signal=9,
    descendants=False,
    interrupted=True,
    report=Report(
        outcome="failed",
        summary="Stopped — «half» done",
        at=datetime.fromisoformat("2025-03-01T12:00:07.250000+00:00"),
    ),
    started_at=datetime.fromisoformat("2025-03-01T12:00:00+00:00"),
    ended_at=datetime.fromisoformat("2025-03-01T12:00:09.5+00:00"),
    log_tail="line 1\nline ✓ 2\n",
    error="lost",
    final_message="the last words",
)

FULL_AT = "2025-03-01T12:00:07+00:00"


class TestObservationJson:
    @pytest.mark.parametrize(
        "observation",
        [
            FULL,  # every field set: report, signal, error, final message
            Observation(launched=False, running=False, exited=False),  # nothing yet
            SETTLED,  # an exit status, no report
        ],
    )
    def test_an_observation_round_trips_exactly_through_stored_json(
        self, observation: Observation
    ) -> None:
        text = json.dumps(observation_to_json(observation))
        assert observation_from_json(json.loads(text)) == observation

    def test_the_stored_json_speaks_the_shims_keys(self) -> None:
        stored = observation_to_json(FULL)
        assert stored["version"] == 1
        assert stored["exitStatus"] is None and stored["signal"] == 9
        assert stored["report"] == {
            "outcome": "failed",
            "summary": "Stopped — «half» done",
            "at": "2025-03-01T12:00:07.250000+00:00",
        }
        assert stored["finalMessage"] == "the last words"

    def test_the_observation_stored_in_a_row_reads_back_equal(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        assert admit(nodes, A, fake_clock.now())
        nodes.run(
            lambda conn: beats.publish(
                conn,
                session_id="ses_1",
                node_id=A,
                observation=FULL,
                source="shim",
                now=fake_clock.now(),
            )
        )
        assert row_of(nodes).observation == FULL

    def test_a_shims_observation_without_version_or_final_message_is_read(self) -> None:
        shim = {
            "launched": True,
            "running": True,
            "exited": False,
            "exitStatus": None,
            "signal": None,
            "descendants": False,
            "interrupted": False,
            "error": None,
            "startedAt": "2025-03-01T12:00:00+00:00",
            "endedAt": None,
            "logTail": "",
            "report": None,
        }
        assert observation_from_json(shim) == Observation(
            launched=True,
            running=True,
            exited=False,
            started_at=datetime.fromisoformat("2025-03-01T12:00:00+00:00"),
        )

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"launched": "yes"}, "launched"),  # a flag as text
            ({"running": None}, "running"),  # a missing flag
            ({"exitStatus": 256}, "exitStatus"),  # past an exit status
            ({"exitStatus": True}, "exitStatus"),  # a JSON true is no status
            ({"signal": 0}, "signal"),  # no signal is numbered 0
            ({"startedAt": "yesterday"}, "startedAt"),  # not an instant
            ({"endedAt": "2025-03-01T12:00:00"}, "endedAt"),  # an instant without offset
            ({"logTail": 3}, "logTail"),  # text expected
            ({"report": "done"}, "report"),  # an object expected
            ({"report": {"outcome": "ok", "summary": "", "at": FULL_AT}}, "report.outcome"),
            ({"report": {"outcome": "failed", "summary": 1, "at": FULL_AT}}, "report.summary"),
            ({"report": {"outcome": "failed", "summary": ""}}, "report.at"),
            ({"version": 2}, "version"),  # a newer record
        ],
    )
    def test_a_malformed_observation_is_refused_naming_its_field(
        self, change: dict[str, Any], field: str
    ) -> None:
        data = {**observation_to_json(SETTLED), **change}
        with pytest.raises(InvalidInput) as caught:
            observation_from_json(data)
        assert caught.value.field == f"observation.{field}"

    def test_an_observation_that_is_not_an_object_is_refused(self) -> None:
        with pytest.raises(InvalidInput, match="object"):
            observation_from_json([])  # type: ignore[arg-type]


class TestRemoteObservation:
    """The rule a scheduler on another node observes a passage by."""

    def beat_row(
        self, nodes: Store, fake_clock: FakeClock, observation: Observation | None
    ) -> BeatRow:
        assert admit(nodes, A, fake_clock.now())
        if observation is not None:
            nodes.run(
                lambda conn: beats.publish(
                    conn,
                    session_id="ses_1",
                    node_id=A,
                    observation=observation,
                    source="node",
                    now=fake_clock.now(),
                )
            )
        return row_of(nodes)

    def test_a_settled_observation_counts_however_old(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        row = self.beat_row(nodes, fake_clock, SETTLED)
        assert beats.remote_observation(row, fake_clock.now() + timedelta(days=30)) == SETTLED

    def test_a_settled_observation_stays_what_it_was_when_its_node_is_forgotten(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        self.beat_row(nodes, fake_clock, SETTLED)
        later = fake_clock.advance(SILENT_AFTER + timedelta(seconds=1))
        nodes.run(lambda conn: forget_node(conn, A, later))
        assert beats.remote_observation(row_of(nodes), later) == SETTLED

    def test_an_unsettled_passage_of_a_forgotten_node_ended_node_lost(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        self.beat_row(nodes, fake_clock, RUNNING)
        later = fake_clock.advance(SILENT_AFTER + timedelta(seconds=1))
        nodes.run(lambda conn: forget_node(conn, A, later))
        row = row_of(nodes)
        assert row.node_forgotten_at == later
        assert beats.remote_observation(row, later) == Observation(
            launched=True, running=False, exited=True, error=NODE_LOST
        )

    def test_a_fresh_row_beat_counts_while_its_node_is_silent(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        self.beat_row(nodes, fake_clock, None)
        later = fake_clock.advance(SILENT_AFTER * 2)
        # The shim reports over HTTP: the row is fresh, its node is not.
        nodes.run(
            lambda conn: beats.publish(
                conn, session_id="ses_1", node_id=A, observation=RUNNING, source="shim", now=later
            )
        )
        row = row_of(nodes)
        assert later - (row.node_beat_at or later) > SILENT_AFTER
        assert beats.remote_observation(row, later + SILENT_AFTER) == RUNNING

    def test_a_fresh_node_beat_counts_while_the_row_is_old(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        self.beat_row(nodes, fake_clock, RUNNING)
        later = fake_clock.advance(SILENT_AFTER * 3)
        nodes.run(lambda conn: beat_node(conn, A, later))
        row = row_of(nodes)
        assert later - row.beat_at > SILENT_AFTER
        assert beats.remote_observation(row, later) == RUNNING

    def test_a_fresh_row_not_observed_yet_reads_as_not_launched(
        self, nodes: Store, fake_clock: FakeClock
    ) -> None:
        row = self.beat_row(nodes, fake_clock, None)
        assert beats.remote_observation(row, fake_clock.now() + SILENT_AFTER) == Observation(
            launched=False, running=False, exited=False
        )

    @pytest.mark.parametrize(
        "observation",
        [
            None,  # never observed
            RUNNING,  # last seen running
            LINGERING,  # ended, but its family was still alive
        ],
    )
    def test_a_stale_row_of_a_silent_node_is_not_observed(
        self, nodes: Store, fake_clock: FakeClock, observation: Observation | None
    ) -> None:
        row = self.beat_row(nodes, fake_clock, observation)
        stale = fake_clock.now() + SILENT_AFTER + timedelta(microseconds=1)
        assert beats.remote_observation(row, stale) is None
