"""``kalends node ls`` and ``kalends node forget`` as a person runs them: real processes on
a migrated database of each backend, at 80 columns and as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from cli_support import snapshot_of
from rich.cells import cell_len

from kalends.missions.nodes import (
    SILENT_AFTER,
    NodeIdentity,
    beat_node,
    register_node,
    stop_node,
)
from kalends.missions.passage_beats import publish, record_admitted
from kalends.missions.runtime.base import Observation
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import Store

LIVE = "1" * 32
SILENT = "2" * 32
STOPPED = "3" * 32
UNKNOWN = "4" * 32


def kalends(url: str, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    env |= {"COLUMNS": str(columns), "KALENDS_DATABASE_URL": "sqlite:///nowhere/not-this.db"}
    return subprocess.run(
        [sys.executable, "-m", "kalends", "node", *args, "--database", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


@dataclass(frozen=True, slots=True)
class Cluster:
    """Three nodes on the database at ``url``: LIVE beat just now with one running
    passage, SILENT beat two minutes ago with two passages (one settled), STOPPED ended
    cleanly an hour ago."""

    url: str


def admit(store: Store, node_id: str, session: str, now: datetime) -> None:
    assert store.run(
        lambda conn: record_admitted(
            conn,
            session_id=session,
            passage_id=f"psg_{session}",
            message_id="msg",
            schedule_id=UUID(int=7),
            node_id=node_id,
            now=now,
        )
    )


@pytest.fixture
def cluster(store: Store, storage_target: StorageTarget) -> Cluster:
    # The command reads the real clock: the nodes beat relative to it.
    now = datetime.now(UTC)
    for node_id, name, started in (
        (LIVE, "live-host", now),
        (SILENT, "silent-host", now - timedelta(minutes=2)),
        (STOPPED, "stopped-host", now - timedelta(hours=1)),
    ):
        identity = NodeIdentity(node_id=node_id, created_at=started)
        store.run(
            partial(
                register_node,
                identity=identity,
                name=name,
                runtime_dir=f"/srv/kalends/{name}",
                now=started,
            )
        )
    store.run(lambda conn: stop_node(conn, STOPPED, now - timedelta(hours=1)))
    admit(store, LIVE, "ses_live", now)
    admit(store, SILENT, "ses_a", now - timedelta(minutes=2))
    admit(store, SILENT, "ses_b", now - timedelta(minutes=2))
    store.run(
        lambda conn: publish(
            conn,
            session_id="ses_b",
            node_id=SILENT,
            observation=Observation(launched=True, running=False, exited=True, exit_status=0),
            source="node",
            now=now - timedelta(minutes=2),
        )
    )
    store.run(lambda conn: beat_node(conn, LIVE, now))
    store.close()
    return Cluster(url=storage_target.url)


def error_of(done: subprocess.CompletedProcess[str], code: int) -> dict[str, Any]:
    assert done.returncode == code, (done.stdout, done.stderr)
    error: dict[str, Any] = json.loads(done.stdout)["error"]
    assert done.stderr.strip() == f"error: {error['message']}"
    return error


class TestList:
    def test_the_json_listing_gives_each_nodes_state_and_unsettled_passages(
        self, cluster: Cluster
    ) -> None:
        done = kalends(cluster.url, "ls", "--json")
        assert done.returncode == 0, done.stderr
        listing = json.loads(done.stdout)
        items = {item["nodeId"]: item for item in listing["items"]}
        assert [item["name"] for item in listing["items"]] == [
            "live-host",
            "silent-host",
            "stopped-host",
        ]
        assert {k: (v["state"], v["alive"], v["unsettled"]) for k, v in items.items()} == {
            LIVE: ("alive", True, 1),
            SILENT: ("silent", False, 1),
            STOPPED: ("stopped", False, 0),
        }
        stopped = items[STOPPED]
        assert stopped["stoppedAt"] is not None and stopped["stoppedAt"].endswith("Z")
        assert stopped["forgottenAt"] is None
        assert stopped["runtimeDir"] == "/srv/kalends/stopped-host"
        assert listing["now"].endswith("Z")

    def test_the_table_fits_80_columns_with_every_node_id_whole(self, cluster: Cluster) -> None:
        done = kalends(cluster.url, "ls")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert max(cell_len(line) for line in lines) <= 80
        for node_id in (LIVE, SILENT, STOPPED):
            assert any(node_id in line for line in lines), done.stdout
        assert "silent, beat 2 min ago" in done.stdout
        assert "--wide: runtime directories too" in done.stdout

    def test_wide_shows_the_runtime_directories(self, cluster: Cluster) -> None:
        done = kalends(cluster.url, "ls", "--wide", columns=200)
        assert done.returncode == 0, done.stderr
        assert "/srv/kalends/live-host" in done.stdout
        assert "runtime directory" in done.stdout

    def test_a_database_without_nodes_says_so(
        self, store: Store, storage_target: StorageTarget
    ) -> None:
        store.close()
        done = kalends(storage_target.url, "ls")
        assert (done.returncode, done.stdout.strip()) == (0, "no worker nodes yet")
        assert json.loads(kalends(storage_target.url, "ls", "--json").stdout)["items"] == []


class TestForget:
    def test_a_silent_node_is_forgotten_and_its_unsettled_passages_counted(
        self, cluster: Cluster
    ) -> None:
        done = kalends(cluster.url, "forget", SILENT, "--json")
        assert done.returncode == 0, done.stderr
        forgot = json.loads(done.stdout)
        assert (forgot["nodeId"], forgot["name"], forgot["unsettled"]) == (
            SILENT,
            "silent-host",
            1,
        )
        assert forgot["forgottenAt"].endswith("Z")
        listing = json.loads(kalends(cluster.url, "ls", "--json").stdout)
        states = {item["nodeId"]: item["state"] for item in listing["items"]}
        assert states[SILENT] == "forgotten"

    def test_the_human_sentence_names_the_node_and_its_passages(self, cluster: Cluster) -> None:
        done = kalends(cluster.url, "forget", STOPPED)
        assert done.returncode == 0, done.stderr
        assert " ".join(done.stdout.split()) == (
            f"forgot node {STOPPED} (stopped-host): 0 unsettled passages now end node-lost"
        )

    def test_a_live_node_is_refused_and_nothing_is_written(self, cluster: Cluster) -> None:
        before = snapshot_of(cluster.url)
        error = error_of(kalends(cluster.url, "forget", LIVE, "--json"), 1)
        assert error["code"] == "node-alive"
        assert "is alive" in error["message"]
        assert f"{int(SILENT_AFTER.total_seconds())} s" in error["message"]
        assert snapshot_of(cluster.url) == before

    def test_an_unknown_node_is_refused_and_nothing_is_written(self, cluster: Cluster) -> None:
        before = snapshot_of(cluster.url)
        error = error_of(kalends(cluster.url, "forget", UNKNOWN, "--json"), 1)
        assert error["code"] == "not-found"
        assert UNKNOWN in error["message"] and "kalends node ls" in error["message"]
        assert snapshot_of(cluster.url) == before

    @pytest.mark.parametrize(
        "typed",
        [
            "abc",  # too short
            "z" * 32,  # not hex
            " ",  # blank
        ],
    )
    def test_a_malformed_node_id_is_bad_input_before_the_database_is_opened(
        self, tmp_path: Path, typed: str
    ) -> None:
        database = tmp_path / "never.sqlite3"
        error = error_of(kalends(str(database), "forget", typed, "--json"), 2)
        assert error["code"] == "invalid-input"
        assert error["details"] == {"field": "node"}
        assert "32 hex digits" in error["message"]
        assert not database.exists()

    def test_forget_without_a_node_is_a_usage_error(self, tmp_path: Path) -> None:
        done = kalends(str(tmp_path / "never.sqlite3"), "forget")
        assert done.returncode == 2
        assert "Missing argument 'NODE'" in done.stderr
