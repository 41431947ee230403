"""Worker nodes on both databases: identity in the runtime directory, registration,
heartbeat, stop, the listing and ``forget`` (issue 23 §3)."""

from __future__ import annotations

import json
import os
import stat
import threading
from datetime import timedelta
from functools import partial
from pathlib import Path
from uuid import UUID

import pytest

from kalends.clock import FakeClock
from kalends.errors import CorruptRecord, InvalidInput, NotFound
from kalends.missions.nodes import (
    NODE_BEAT,
    NODE_FILE,
    PASSAGE_BEAT,
    SILENT_AFTER,
    NodeAlive,
    NodeIdentity,
    beat_key,
    beat_node,
    beat_token,
    check_beat_token,
    forget_node,
    list_nodes,
    node_identity,
    register_node,
    stop_node,
)
from kalends.missions.passage_beats import publish, read_beat, record_admitted
from kalends.missions.runtime.base import Observation
from kalends.missions.runtime.shim import write_json_atomic
from kalends.storage.unit_of_work import Store


class TestConstants:
    def test_a_node_beats_as_often_as_a_passage(self) -> None:
        assert NODE_BEAT == timedelta(seconds=PASSAGE_BEAT) == timedelta(seconds=15)

    def test_silence_is_three_missed_beats(self) -> None:
        assert SILENT_AFTER == 3 * NODE_BEAT == timedelta(seconds=45)


class TestIdentity:
    def test_a_fresh_runtime_directory_gets_a_private_identity(
        self, tmp_path: Path, fake_clock: FakeClock
    ) -> None:
        root = tmp_path / "runtime"
        identity = node_identity(root, fake_clock.now())
        assert len(identity.node_id) == 32
        int(identity.node_id, 16)
        assert identity.created_at == fake_clock.now()
        path = root / NODE_FILE
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
        assert json.loads(path.read_text()) == {
            "version": 1,
            "nodeId": identity.node_id,
            "createdAt": fake_clock.now().isoformat(),
        }

    def test_the_identity_survives_a_reopen(self, tmp_path: Path, fake_clock: FakeClock) -> None:
        first = node_identity(tmp_path, fake_clock.now())
        again = node_identity(tmp_path, fake_clock.advance(3600))
        assert again == first

    def test_two_runtime_directories_are_two_nodes(
        self, tmp_path: Path, fake_clock: FakeClock
    ) -> None:
        one = node_identity(tmp_path / "one", fake_clock.now())
        two = node_identity(tmp_path / "two", fake_clock.now())
        assert one.node_id != two.node_id

    def test_concurrent_first_uses_agree_on_one_identity(
        self, tmp_path: Path, fake_clock: FakeClock
    ) -> None:
        found: list[NodeIdentity] = []
        barrier = threading.Barrier(8)

        def first_use() -> None:
            barrier.wait(5)
            found.append(node_identity(tmp_path, fake_clock.now()))

        threads = [threading.Thread(target=first_use) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(found) == 8 and len(set(found)) == 1
        assert [p.name for p in tmp_path.iterdir()] == [NODE_FILE]

    @pytest.mark.parametrize(
        "content",
        [
            "not json",  # unreadable
            '{"version": 1, "nodeId": "short", "createdAt": "2025-03-01T12:00:00+00:00"}',
            '{"version": 2, "nodeId": "'
            + "a" * 32
            + '", "createdAt": "2025-03-01T12:00:00+00:00"}',
            '{"version": 1, "nodeId": "' + "a" * 32 + '", "createdAt": "2025-03-01T12:00:00"}',
            '{"version": 1, "nodeId": "' + "a" * 32 + '"}',  # no creation time
        ],
    )
    def test_a_record_without_an_identity_is_refused_and_left_alone(
        self, tmp_path: Path, fake_clock: FakeClock, content: str
    ) -> None:
        path = tmp_path / NODE_FILE
        path.write_text(content)
        with pytest.raises(CorruptRecord, match=NODE_FILE):
            node_identity(tmp_path, fake_clock.now())
        assert path.read_text() == content

    def test_a_record_written_by_the_shims_helpers_reads_back(
        self, tmp_path: Path, fake_clock: FakeClock
    ) -> None:
        record = {"version": 1, "nodeId": "0" * 32, "createdAt": "2025-03-01T12:00:00+00:00"}
        write_json_atomic(tmp_path / NODE_FILE, record)
        assert node_identity(tmp_path, fake_clock.now()).node_id == "0" * 32


@pytest.fixture
def alpha(tmp_path: Path, fake_clock: FakeClock) -> NodeIdentity:
    return node_identity(tmp_path / "alpha", fake_clock.now())


def register(store: Store, identity: NodeIdentity, fake_clock: FakeClock) -> str:
    key: str = store.run(
        lambda conn: register_node(
            conn, identity, name="host-a", runtime_dir="/srv/a", now=fake_clock.now()
        )
    )
    return key


def admit(store: Store, node_id: str, session: str, fake_clock: FakeClock) -> None:
    assert store.run(
        lambda conn: record_admitted(
            conn,
            session_id=session,
            passage_id=f"psg_{session}",
            message_id="msg",
            schedule_id=UUID(int=1),
            node_id=node_id,
            now=fake_clock.now(),
        )
    )


class TestRegistration:
    def test_registering_keeps_the_beat_key_and_clears_stop_and_forget(
        self, store: Store, fake_clock: FakeClock, alpha: NodeIdentity
    ) -> None:
        key = register(store, alpha, fake_clock)
        assert len(key) == 64
        assert store.run(lambda conn: beat_key(conn, alpha.node_id), write=False) == key
        store.run(lambda conn: stop_node(conn, alpha.node_id, fake_clock.now()))
        later = fake_clock.advance(SILENT_AFTER * 2)
        store.run(lambda conn: forget_node(conn, alpha.node_id, later))
        assert store.run(lambda conn: beat_key(conn, alpha.node_id), write=False) is None
        assert register(store, alpha, fake_clock) == key
        [view] = store.run(lambda conn: list_nodes(conn, later), write=False)
        assert (view.started_at, view.beat_at, view.stopped_at, view.forgotten_at) == (
            later,
            later,
            None,
            None,
        )
        assert view.alive
        assert store.run(lambda conn: beat_key(conn, alpha.node_id), write=False) == key

    def test_two_nodes_get_different_keys(
        self, store: Store, fake_clock: FakeClock, tmp_path: Path, alpha: NodeIdentity
    ) -> None:
        beta = node_identity(tmp_path / "beta", fake_clock.now())
        assert register(store, alpha, fake_clock) != register(store, beta, fake_clock)

    def test_a_shims_token_checks_under_its_nodes_key_only(
        self, store: Store, fake_clock: FakeClock, tmp_path: Path, alpha: NodeIdentity
    ) -> None:
        key = register(store, alpha, fake_clock)
        other = register(store, node_identity(tmp_path / "beta", fake_clock.now()), fake_clock)
        token = beat_token(key, "ses_1")
        assert check_beat_token(key, "ses_1", token)
        assert not check_beat_token(key, "ses_2", token)
        assert not check_beat_token(other, "ses_1", token)

    def test_a_malformed_identity_is_refused(self, store: Store, fake_clock: FakeClock) -> None:
        identity = NodeIdentity(node_id="../etc", created_at=fake_clock.now())
        with pytest.raises(InvalidInput, match="hex digits"):
            register(store, identity, fake_clock)
        assert store.run(lambda conn: list_nodes(conn, fake_clock.now()), write=False) == []

    def test_a_heartbeat_moves_the_beat_only(
        self, store: Store, fake_clock: FakeClock, alpha: NodeIdentity
    ) -> None:
        register(store, alpha, fake_clock)
        started = fake_clock.now()
        later = fake_clock.advance(NODE_BEAT)
        store.run(lambda conn: beat_node(conn, alpha.node_id, later))
        [view] = store.run(lambda conn: list_nodes(conn, later), write=False)
        assert (view.started_at, view.beat_at, view.stopped_at) == (started, later, None)

    @pytest.mark.parametrize("act", [beat_node, stop_node])
    def test_an_unregistered_node_can_neither_beat_nor_stop(
        self, store: Store, fake_clock: FakeClock, act: object
    ) -> None:
        with pytest.raises(NotFound, match="c" * 32):
            store.run(lambda conn: act(conn, "c" * 32, fake_clock.now()))  # type: ignore[operator]

    def test_an_unknown_node_has_no_key(self, store: Store) -> None:
        assert store.run(lambda conn: beat_key(conn, "c" * 32), write=False) is None


class TestListing:
    def test_nodes_are_listed_alive_silent_or_stopped_with_their_unsettled_passages(
        self, store: Store, fake_clock: FakeClock, tmp_path: Path
    ) -> None:
        ids = {}
        for name in ("gamma", "alpha", "beta"):
            identity = node_identity(tmp_path / name, fake_clock.now())
            ids[name] = identity.node_id
            store.run(
                partial(
                    register_node,
                    identity=identity,
                    name=name,
                    runtime_dir=f"/srv/{name}",
                    now=fake_clock.now(),
                )
            )
        admit(store, ids["alpha"], "ses_1", fake_clock)
        admit(store, ids["alpha"], "ses_2", fake_clock)
        store.run(
            lambda conn: publish(
                conn,
                session_id="ses_2",
                node_id=ids["alpha"],
                observation=Observation(launched=True, running=False, exited=True, exit_status=0),
                source="node",
                now=fake_clock.now(),
            )
        )
        store.run(lambda conn: stop_node(conn, ids["gamma"], fake_clock.now()))
        later = fake_clock.advance(SILENT_AFTER)
        store.run(lambda conn: beat_node(conn, ids["beta"], later))
        views = store.run(lambda conn: list_nodes(conn, later), write=False)
        assert [(v.name, v.alive, v.unsettled) for v in views] == [
            ("alpha", True, 1),  # beat exactly SILENT_AFTER ago: still alive
            ("beta", True, 0),
            ("gamma", False, 0),  # stopped
        ]
        views = store.run(
            lambda conn: list_nodes(conn, later + timedelta(microseconds=1)), write=False
        )
        assert [v.alive for v in views] == [False, True, False]
        assert views[0].runtime_dir == "/srv/alpha" and views[0].node_id == ids["alpha"]


class TestForget:
    def test_a_live_node_is_refused_and_nothing_is_written(
        self, store: Store, fake_clock: FakeClock, alpha: NodeIdentity
    ) -> None:
        register(store, alpha, fake_clock)
        later = fake_clock.advance(SILENT_AFTER)
        with pytest.raises(NodeAlive, match="alive") as caught:
            store.run(lambda conn: forget_node(conn, alpha.node_id, later))
        assert caught.value.code == "node-alive"
        [view] = store.run(lambda conn: list_nodes(conn, later), write=False)
        assert view.forgotten_at is None

    def test_an_unknown_node_is_not_found(self, store: Store, fake_clock: FakeClock) -> None:
        with pytest.raises(NotFound, match="c" * 32):
            store.run(lambda conn: forget_node(conn, "c" * 32, fake_clock.now()))

    @pytest.mark.parametrize(
        "text",
        [
            "",  # nothing
            "abc",  # too short
            "g" * 32,  # not hex
            "a" * 33,  # too long
        ],
    )
    def test_a_malformed_id_is_bad_input(
        self, store: Store, fake_clock: FakeClock, text: str
    ) -> None:
        with pytest.raises(InvalidInput, match="hex digits"):
            store.run(lambda conn: forget_node(conn, text, fake_clock.now()))

    def test_a_silent_node_is_forgotten_and_its_unsettled_passages_counted(
        self, store: Store, fake_clock: FakeClock, alpha: NodeIdentity
    ) -> None:
        register(store, alpha, fake_clock)
        admit(store, alpha.node_id, "ses_1", fake_clock)
        admit(store, alpha.node_id, "ses_2", fake_clock)
        later = fake_clock.advance(SILENT_AFTER + timedelta(seconds=1))
        # (typed in capitals, with spaces: the same node)
        typed = f" {alpha.node_id.upper()} "
        assert store.run(lambda conn: forget_node(conn, typed, later)) == 2
        row = store.run(lambda conn: read_beat(conn, "ses_1"), write=False)
        assert row is not None and row.node_forgotten_at == later
        # Forgetting again keeps the first time.
        store.run(lambda conn: forget_node(conn, alpha.node_id, fake_clock.advance(60)))
        [view] = store.run(lambda conn: list_nodes(conn, fake_clock.now()), write=False)
        assert (view.forgotten_at, view.alive) == (later, False)

    def test_a_stopped_node_is_forgotten_at_once(
        self, store: Store, fake_clock: FakeClock, alpha: NodeIdentity
    ) -> None:
        register(store, alpha, fake_clock)
        store.run(lambda conn: stop_node(conn, alpha.node_id, fake_clock.now()))
        assert store.run(lambda conn: forget_node(conn, alpha.node_id, fake_clock.now())) == 0


def test_the_identity_file_is_private_whatever_the_umask(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    old = os.umask(0)
    try:
        node_identity(tmp_path / "open", fake_clock.now())
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "open" / NODE_FILE).stat().st_mode) == 0o600
