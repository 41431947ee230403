"""The first human Play turns service supervision on: a real ``kalends serve`` (both
databases) with stand-in ``systemctl`` and ``loginctl`` on its PATH and a temporary
home, driven over HTTP, from the web page, and by ``kalends schedule play`` and
``kalends service off`` as their own processes.

The preference rules: the first applied Play installs and enables the unit (a server
never starts its own unit); a second Play, or a repeated request, does nothing more; an
explicit OFF stays OFF through Play; create, configure, pause, stop and delete neither
ask systemd anything nor write the preference. A Play is never refused for supervision:
without a user manager it answers ``unavailable`` with what to run instead, and with a
failing ``systemctl`` it answers ``failed`` with systemd's words.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, select

from e2e.conftest import Server, finish, owner_session, poll, start_server
from kalends.storage.service_tables import service_preferences
from kalends.storage.testing import discover_postgresql, provision
from supervision.conftest import kalends
from supervision.fake_systemd import FakeSystemd, install_fake

FAR = {"kind": "at", "local": "2099-01-01T09:00:00", "zone": "UTC"}
BACKENDS = ["sqlite", "postgresql"] if discover_postgresql().url is not None else ["sqlite"]


@dataclass
class World:
    """A server on a fresh database, its owner logged in, a workspace, the stand-ins."""

    server: Server
    client: httpx.Client
    workspace_id: str
    systemd: FakeSystemd

    @property
    def scheduled(self) -> str:
        return f"/api/workspaces/{self.workspace_id}/missions/scheduled"

    def route(self, mission: str) -> str:
        return f"/api/workspaces/{self.workspace_id}/missions/{mission}/schedule"

    def create(self, title: str) -> str:
        body = {
            "requestID": f"create-{uuid.uuid4().hex}",
            "config": {
                "title": title,
                "objective": f"{title} objective",
                "profile": {"command": [sys.executable, "-c", "pass"], "cwd": "."},
                "policy": FAR,
            },
        }
        answer = self.client.post(self.scheduled, json=body)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["missionId"])

    def revision(self, mission: str) -> int:
        return int(self.client.get(self.route(mission)).json()["revision"])

    def control(
        self, mission: str, action: str, request_id: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        answer = self.client.post(
            self.route(mission),
            json={
                "action": action,
                "requestID": request_id or f"{action}-{uuid.uuid4().hex}",
                "expectedRevision": self.revision(mission),
                **extra,
            },
        )
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        assert found["status"] == "applied"
        return found

    def delete(self, mission: str) -> None:
        self.control(mission, "delete")

    def preference_rows(self) -> list[tuple[Any, ...]]:
        engine = create_engine(self.server.database)
        try:
            with engine.connect() as conn:
                return [tuple(r) for r in conn.execute(select(service_preferences))]
        finally:
            engine.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    found: str = request.param
    return found


@contextmanager
def world_with(behaviour: str, backend: str, directory: Path) -> Iterator[World]:
    fake = install_fake(directory / "systemd", behaviour)
    workspace = directory / "workspace"
    workspace.mkdir()
    with provision(backend, directory) as target:
        server = start_server(target.url, directory, env=fake.env())
        try:
            with owner_session(server) as client:
                added = client.post("/api/workspaces", json={"path": str(workspace)})
                assert added.status_code == 201, added.text
                yield World(server, client, added.json()["id"], fake)
        finally:
            finish(server)


@pytest.fixture
def world(backend: str, tmp_path: Path) -> Iterator[World]:
    """A user manager that answers."""
    with world_with("manager", backend, tmp_path) as found:
        yield found


class TestTheFirstHumanPlay:
    def test_the_first_play_enables_the_unit_and_the_next_plays_do_nothing_more(
        self, world: World
    ) -> None:
        first, second = world.create("first"), world.create("second")
        world.control(first, "configure", changes={"objective": "another objective"})
        assert world.systemd.calls() == []  # create and configure ask systemd nothing
        assert world.preference_rows() == []

        played = world.control(first, "play", request_id="play-first")
        assert played["schedule"]["state"] == "running"
        supervision = played["supervision"]
        assert (supervision["state"], supervision["unit"]) == ("enabled", str(world.systemd.unit))
        # The server runs in the foreground: the unit is enabled, not started.
        assert "this server keeps running in the foreground" in supervision["message"]
        assert "loginctl enable-linger olivia" in supervision["message"]
        assert world.systemd.systemctl_calls() == [["daemon-reload"], ["enable", "kalends.service"]]
        assert (world.systemd.enabled, world.systemd.active) == (True, False)
        unit = world.systemd.unit.read_text()
        assert f"--port {world.server.port}" in unit  # (the port it bound, not 0)
        assert "Restart=on-failure" in unit.splitlines()
        assert world.preference_rows() == []  # (the default stays the default)

        # The same request again: its original outcome, nothing asked of systemd.
        world.systemd.forget_calls()
        again = world.client.post(
            world.route(first),
            json={"action": "play", "requestID": "play-first", "expectedRevision": 2},
        )
        assert again.status_code == 200, again.text
        assert again.json()["repeated"] is True
        assert "supervision" not in again.json()
        assert world.systemd.calls() == []

        # Another schedule's first Play: installed and enabled already, nothing more.
        other = world.control(second, "play")
        assert other["supervision"]["state"] == "already"
        assert world.systemd.systemctl_calls() == [["is-enabled", "kalends.service"]]

    def test_pause_stop_and_delete_never_ask_systemd_nor_change_the_preference(
        self, world: World
    ) -> None:
        mission = world.create("controlled")
        world.control(mission, "play")
        world.systemd.forget_calls()
        for action in ("pause", "stop"):
            answer = world.control(mission, action)
            assert "supervision" not in answer
        world.delete(mission)
        assert world.systemd.calls() == []
        assert world.preference_rows() == []

    def test_an_explicit_off_stays_off_through_play(self, world: World) -> None:
        off = kalends(world.systemd, "service", "off", "--database", world.server.database)
        assert off.returncode == 0, off.stderr
        [row] = world.preference_rows()
        mission = world.create("kept off")
        world.systemd.forget_calls()
        played = world.control(mission, "play")
        assert played["supervision"]["state"] == "off"
        assert "`kalends service on` turns it on" in played["supervision"]["message"]
        world.control(mission, "pause")
        # Played again after a pause: still off.
        assert world.control(mission, "play")["supervision"]["state"] == "off"
        assert world.systemd.calls() == []
        assert not world.systemd.unit.exists()
        assert world.preference_rows() == [row]

    def test_a_refused_play_asks_systemd_nothing(self, world: World) -> None:
        mission = world.create("refused")
        stale = world.client.post(
            world.route(mission),
            json={"action": "play", "requestID": "play-stale", "expectedRevision": 7},
        )
        assert stale.status_code == 409, stale.text
        past = world.create("past")
        world.control(
            past, "configure",
            changes={"policy": {"kind": "at", "local": "2001-01-01T09:00:00", "zone": "UTC"}},
        )  # fmt: skip
        refused = world.client.post(
            world.route(past),
            json={"action": "play", "requestID": "play-past", "expectedRevision": 2},
        )
        assert refused.status_code in (409, 422), refused.text
        assert world.systemd.calls() == []
        assert not world.systemd.unit.exists()

    def test_the_web_play_result_shows_the_supervision_sentence(self, world: World) -> None:
        mission = world.create("from the page")
        answer = world.client.post(
            f"/w/{world.workspace_id}/schedules/{mission}/control",
            data={"action": "play", "request_id": "web-play", "revision": "1"},
            headers={"hx-request": "true"},
        )
        assert answer.status_code == 200, answer.text
        assert 'class="supervision" data-state="enabled"' in answer.text
        assert "Service supervision: kalends.service is installed and enabled" in answer.text

    def test_kalends_schedule_play_in_local_mode_prints_the_supervision_line(
        self, world: World
    ) -> None:
        mission = world.create("from the command line")
        done = kalends(
            world.systemd, "schedule", "play", mission, "--database", world.server.database,
            "--as", "olivia",
        )  # fmt: skip
        assert done.returncode == 0, (done.stdout, done.stderr)
        [line] = [x for x in done.stdout.splitlines() if x.startswith("supervision: ")]
        assert line.startswith("supervision: enabled — kalends.service is installed and enabled")
        assert ["daemon-reload"] in world.systemd.systemctl_calls()


class TestSupervisionThatCannotBe:
    def test_without_a_user_manager_play_applies_and_says_what_to_run_instead(
        self, backend: str, tmp_path: Path
    ) -> None:
        with world_with("no-manager", backend, tmp_path) as world:
            first, second = world.create("first"), world.create("second")
            played = world.control(first, "play")
            assert played["schedule"]["state"] == "running"
            assert played["supervision"]["state"] == "unavailable"
            assert played["supervision"]["message"].startswith(
                "no systemd user manager answers here (Failed to connect to bus: No medium found)"
            )
            assert (
                "keep `kalends serve` running under your own supervisor"
                in (played["supervision"]["message"])
            )
            assert world.control(second, "play")["supervision"]["state"] == "unavailable"
            # The answer is kept: the second Play asked no systemctl.
            assert world.systemd.calls() == [["systemctl", "--user", "show-environment"]]
            assert not world.systemd.unit.exists()
            assert world.preference_rows() == []

    def test_the_machines_own_systemctl_without_a_user_manager_answers_unavailable(
        self, backend: str, tmp_path: Path
    ) -> None:
        # The wiring every other test's server has: this PATH's systemctl (or none), and
        # no user manager reachable (tests/conftest.py), so a Play writes nothing at home.
        home = tmp_path / "home"
        home.mkdir()
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
        with provision(backend, tmp_path) as target:
            server = start_server(target.url, tmp_path, env=env)
            try:
                with owner_session(server) as client:
                    added = client.post("/api/workspaces", json={"path": str(workspace)})
                    world = World(
                        server,
                        client,
                        added.json()["id"],
                        install_fake(tmp_path / "unused", "absent"),
                    )
                    played = world.control(world.create("plain"), "play")
            finally:
                finish(server)
        assert played["schedule"]["state"] == "running"
        assert played["supervision"]["state"] == "unavailable"
        assert (
            "keep `kalends serve` running under your own supervisor"
            in (played["supervision"]["message"])
        )
        assert not (home / ".config" / "systemd").exists()

    def test_a_play_waiting_on_systemd_holds_no_transaction(
        self, backend: str, tmp_path: Path
    ) -> None:
        with world_with("slow", backend, tmp_path) as world:
            mission, other = world.create("slow"), world.create("meanwhile")
            revision = world.revision(other)
            answers: list[dict[str, Any]] = []
            playing = threading.Thread(
                target=lambda: answers.append(world.control(mission, "play"))
            )
            playing.start()
            try:
                poll(lambda: ["daemon-reload"] in world.systemd.systemctl_calls(), 10.0, "reload")
                # While systemd reloads, another schedule is written at once.
                started = time.monotonic()
                with world.server.client(headers=dict(world.client.headers)) as second:
                    second.cookies = world.client.cookies
                    edited = second.post(
                        world.route(other),
                        json={
                            "action": "configure",
                            "requestID": "configure-meanwhile",
                            "expectedRevision": revision,
                            "changes": {"objective": "written while systemd reloads"},
                        },
                    )
                took = time.monotonic() - started
                assert edited.status_code == 200, edited.text
                assert took < 2.0
            finally:
                playing.join(30)
            [played] = answers
            assert played["supervision"]["state"] == "enabled"

    def test_a_failing_systemctl_is_reported_and_the_play_still_applies(
        self, backend: str, tmp_path: Path
    ) -> None:
        with world_with("failing", backend, tmp_path) as world:
            mission = world.create("failing")
            played = world.control(mission, "play")
            assert played["schedule"]["state"] == "running"
            assert played["supervision"] == {
                "state": "failed",
                "message": "systemctl --user enable failed: Failed to enable unit: Access denied",
                "unit": str(world.systemd.unit),
            }
