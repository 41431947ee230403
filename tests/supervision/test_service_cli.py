"""``kalends service install|uninstall|status|on|off`` as their own processes, against
stand-in ``systemctl`` and ``loginctl`` on PATH (a user manager that answers, one that
is missing, one that refuses, and no systemd at all), on both databases.

Each command is checked by what systemd was asked (the stand-ins record every call), the
unit file it left in the temporary home, and the preference row; a refusal leaves no
unit, asks systemd nothing that changes it, and writes no row.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from kalends.storage.testing import StorageTarget, nothing_written, snapshot
from kalends.storage.unit_of_work import Store
from kalends.supervision import Setting, read_preference
from kalends.supervision.unit import systemd_quote
from supervision.conftest import kalends
from supervision.fake_systemd import FakeSystemd, install_fake
from supervision.test_unit import exec_start, needs_systemd_analyze, verify


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def ok_json(done: Any) -> Any:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return json.loads(done.stdout)


class TestInstallAndStatus:
    @needs_systemd_analyze
    def test_install_writes_a_unit_systemd_accepts_reloads_and_enables_it(
        self, systemd: FakeSystemd, store: Store, storage_target: StorageTarget, tmp_path: Path
    ) -> None:
        port = free_port()
        with nothing_written(store):  # (the preference is left as it is)
            answer = ok_json(
                kalends(
                    systemd,
                    "service",
                    "install",
                    "--database",
                    storage_target.url,
                    "--runtime-dir",
                    str(tmp_path / "runtime"),
                    "--port",
                    str(port),
                    "--json",
                )
            )
        assert answer["state"] == "enabled"
        assert answer["unit"] == str(systemd.unit)
        assert "starts at your next login" in answer["message"]
        assert "loginctl enable-linger olivia" in answer["message"]
        assert systemd.systemctl_calls() == [["daemon-reload"], ["enable", "kalends.service"]]
        unit = systemd.unit.read_text()
        done = verify(unit, tmp_path)
        assert (done.returncode, done.stderr) == (0, "")
        assert "Restart=on-failure" in unit.splitlines()
        command = exec_start(unit)
        assert f" serve --database {systemd_quote(storage_target.url)} " in command
        assert f"--runtime-dir {tmp_path / 'runtime'} --host 127.0.0.1 --port {port}" in command

    def test_status_says_installed_enabled_active_last_exit_preference_and_linger(
        self, systemd: FakeSystemd, storage_target: StorageTarget
    ) -> None:
        before = ok_json(
            kalends(systemd, "service", "status", "--database", storage_target.url, "--json")
        )
        assert (before["installed"], before["available"], before["enabled"]) == (False, True, None)
        assert before["preference"] == {
            "setting": None, "on": True, "explicit": False, "updatedAt": None, "updatedBy": None
        }  # fmt: skip
        kalends(
            systemd,
            "service",
            "install",
            "--database",
            storage_target.url,
            "--port",
            str(free_port()),
        )
        systemd.set_last_exit(1, 1, "Sun 2026-12-06 10:00:00 UTC")
        after = ok_json(
            kalends(systemd, "service", "status", "--database", storage_target.url, "--json")
        )
        assert (after["installed"], after["enabled"], after["active"]) == (
            True,
            "enabled",
            "inactive",
        )
        assert after["lastExit"] == "exited with status 1 at Sun 2026-12-06 10:00:00 UTC"
        assert after["linger"].startswith("run `loginctl enable-linger olivia`")
        text = kalends(systemd, "service", "status", "--database", storage_target.url)
        assert text.returncode == 0, text.stderr
        lines = text.stdout.splitlines()
        assert f"unit: {systemd.unit}" in lines
        assert "installed: yes" in lines
        assert "enabled: enabled" in lines
        assert "active: inactive" in lines
        assert "last exit: exited with status 1 at Sun 2026-12-06 10:00:00 UTC" in lines
        assert "preference: on (the default: the first Play turns supervision on)" in lines


class TestOnOffUninstall:
    def test_off_keeps_the_preference_off_and_disables_on_turns_it_back_and_starts(
        self, systemd: FakeSystemd, store: Store, storage_target: StorageTarget
    ) -> None:
        url = storage_target.url
        port = str(free_port())
        kalends(systemd, "service", "install", "--database", url, "--port", port)
        systemd.forget_calls()
        off = ok_json(kalends(systemd, "service", "off", "--now", "--database", url, "--json"))
        assert off["state"] == "off"
        assert "disabled and stopped" in off["message"]
        assert systemd.systemctl_calls() == [["disable", "--now", "kalends.service"]]
        assert read_preference(store).setting is Setting.OFF
        assert systemd.unit.is_file()  # (off keeps the unit; uninstall removes it)
        assert not systemd.enabled

        systemd.forget_calls()
        on = ok_json(
            kalends(systemd, "service", "on", "--now", "--database", url, "--port", port, "--json")
        )
        assert (on["state"], on["unit"]) == ("enabled", str(systemd.unit))
        assert on["message"].startswith("kalends.service is installed and enabled: started now")
        assert systemd.systemctl_calls() == [
            ["daemon-reload"],
            ["enable", "--now", "kalends.service"],
        ]
        assert read_preference(store).setting is Setting.ON
        assert (systemd.enabled, systemd.active) == (True, True)

    def test_on_now_does_not_start_it_when_a_server_already_listens_on_its_port(
        self, systemd: FakeSystemd, storage_target: StorageTarget
    ) -> None:
        with socket.socket() as listening:
            listening.bind(("127.0.0.1", 0))
            listening.listen()
            port = str(listening.getsockname()[1])
            on = ok_json(
                kalends(
                    systemd,
                    "service",
                    "on",
                    "--now",
                    "--database",
                    storage_target.url,
                    "--port",
                    port,
                    "--json",
                )
            )
        assert (
            f"a server already listens on 127.0.0.1:{port}, so it was not started" in on["message"]
        )
        assert systemd.systemctl_calls() == [["daemon-reload"], ["enable", "kalends.service"]]

    def test_uninstall_stops_disables_and_removes_the_unit_and_keeps_the_preference(
        self, systemd: FakeSystemd, store: Store, storage_target: StorageTarget
    ) -> None:
        url = storage_target.url
        kalends(systemd, "service", "install", "--database", url, "--port", str(free_port()))
        systemd.forget_calls()
        with nothing_written(store):
            gone = ok_json(kalends(systemd, "service", "uninstall", "--database", url, "--json"))
        assert "stopped, disabled and removed; the next Play installs it again" in gone["message"]
        assert systemd.systemctl_calls() == [
            ["disable", "--now", "kalends.service"],
            ["daemon-reload"],
        ]
        assert not systemd.unit.exists()


class TestWithoutAUserManager:
    @pytest.mark.parametrize(
        ("behaviour", "why"),
        [
            # A container: systemctl is there, no user manager answers.
            ("no-manager", "no systemd user manager answers here (Failed to connect to bus"),
            # No systemd at all.
            ("absent", "systemd is not installed here (no systemctl on PATH)"),
        ],
    )
    @pytest.mark.parametrize("command", ["install", "on", "uninstall"])
    def test_the_command_is_refused_with_what_to_run_instead_and_nothing_is_written(
        self, tmp_path: Path, behaviour: str, why: str, command: str
    ) -> None:
        fake = install_fake(tmp_path / behaviour, behaviour)
        database = tmp_path / "never.sqlite3"
        done = kalends(fake, "service", command, "--database", f"sqlite:///{database}", "--json")
        assert done.returncode == 1, (done.stdout, done.stderr)
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "supervision-unavailable"
        assert error["message"].startswith(why)
        assert "keep `kalends serve` running under your own supervisor" in error["message"]
        assert done.stderr.strip() == f"error: {error['message']}"
        assert not fake.unit.exists()
        assert not database.exists()  # (refused before the database is opened)
        assert fake.systemctl_calls() == []

    def test_off_is_kept_without_a_user_manager_and_status_says_why(
        self, tmp_path: Path, store: Store, storage_target: StorageTarget
    ) -> None:
        fake = install_fake(tmp_path / "container", "no-manager")
        off = ok_json(kalends(fake, "service", "off", "--database", storage_target.url, "--json"))
        assert off["state"] == "off"
        assert "nothing to disable: no systemd user manager answers here" in off["message"]
        assert read_preference(store).setting is Setting.OFF
        status = kalends(fake, "service", "status", "--database", storage_target.url)
        assert status.returncode == 0, status.stderr
        assert any(
            line.startswith("systemd: unavailable — no systemd user manager answers here")
            for line in status.stdout.splitlines()
        )
        assert any(
            line.startswith("preference: off (set explicitly")
            for line in status.stdout.splitlines()
        )
        assert fake.systemctl_calls() == []


class TestNoPasswordInTheUnit:
    @pytest.mark.parametrize("command", ["install", "on"])
    def test_a_database_url_with_a_password_is_refused_before_anything_is_opened(
        self, systemd: FakeSystemd, command: str
    ) -> None:
        # (nothing listens on port 1: the database is never reached, only named)
        url = "postgresql://kal:s3cret@127.0.0.1:1/kalends"
        done = kalends(systemd, "service", command, "--database", url, "--json")
        assert done.returncode == 2, (done.stdout, done.stderr)
        error = json.loads(done.stdout)["error"]
        assert "s3cret" not in done.stdout + done.stderr
        assert (
            "the URL carries a password, and kalends does not write a password"
            in (error["message"])
        )
        assert (
            f"KALENDS_DATABASE_URL=<the URL> in {systemd.config / 'kalends' / 'service.env'}"
            in (error["message"])
        )
        assert not systemd.unit.exists()
        assert systemd.systemctl_calls() == []


class TestAFailingSystemctl:
    def test_install_says_what_systemctl_said_and_exits_1(
        self, tmp_path: Path, store: Store, storage_target: StorageTarget
    ) -> None:
        fake = install_fake(tmp_path / "failing", "failing")
        with nothing_written(store):
            done = kalends(
                fake, "service", "install", "--database", storage_target.url, "--port",
                str(free_port()), "--json",
            )  # fmt: skip
        assert done.returncode == 1, (done.stdout, done.stderr)
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "supervision-failed"
        assert (
            error["message"]
            == "systemctl --user enable failed: Failed to enable unit: Access denied"
        )


class TestBadInput:
    @pytest.mark.parametrize(
        "args",
        [
            ["service", "restart"],  # an unknown subcommand
            ["service", "install", "--port", "0"],  # the unit needs a fixed port
            ["service", "install", "--port", "70000"],  # out of range
            ["service", "on", "--port", "eighty"],  # not a number
            ["service", "install", "--host", ""],  # no address
            ["service", "install", "--runtime-dir", " "],  # an empty directory
            ["service", "status", "--now"],  # a flag status does not take
            ["service", "off", "--port", "8000"],  # nor off
            ["service", "install", "--bogus"],  # an unknown flag
        ],
    )
    def test_bad_input_exits_2_and_writes_nothing(
        self, systemd: FakeSystemd, tmp_path: Path, args: list[str]
    ) -> None:
        database = tmp_path / "never.sqlite3"
        done = kalends(systemd, *args, "--database", f"sqlite:///{database}")
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert done.stderr.strip()
        assert not database.exists()
        assert not systemd.unit.exists()
        assert systemd.systemctl_calls() == []

    def test_a_refused_on_writes_no_preference(
        self, systemd: FakeSystemd, store: Store, storage_target: StorageTarget
    ) -> None:
        before = snapshot(store)
        done = kalends(systemd, "service", "on", "--database", storage_target.url, "--port", "0")
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert snapshot(store) == before
