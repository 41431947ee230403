"""`kalends db`, driven as a user drives it: a real process, its output and exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kalends.config import ENV_DATABASE_URL, mask_password
from kalends.storage.migrate import current_revision, head_revision
from kalends.storage.testing import StorageTarget

# These tests are about the migrations themselves: run them, not the test template.
pytestmark = pytest.mark.usefixtures("real_migrations")


def kalends(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != ENV_DATABASE_URL}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "kalends", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
    )


def json_of(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class TestUpgrade:
    def test_upgrade_migrates_the_database_and_prints_the_revision_as_json(
        self, storage_target: StorageTarget
    ) -> None:
        result = json_of(kalends("db", "upgrade", "--database", storage_target.url, "--json"))
        assert result == {
            "database": mask_password(storage_target.url),
            "revision": head_revision(),
        }
        assert current_revision(storage_target.engine()) == head_revision()

    def test_upgrading_again_changes_nothing_and_reports_the_same_revision(
        self, storage_target: StorageTarget
    ) -> None:
        first = json_of(kalends("db", "upgrade", "--database", storage_target.url, "--json"))
        second = json_of(kalends("db", "upgrade", "--database", storage_target.url, "--json"))
        assert first == second

    def test_upgrade_uses_the_environment_variable_without_database(self, tmp_path: Path) -> None:
        path = tmp_path / "from-env.sqlite3"
        result = json_of(kalends("db", "upgrade", "--json", env={ENV_DATABASE_URL: str(path)}))
        assert result == {"database": f"sqlite:///{path}", "revision": head_revision()}
        assert path.exists()

    def test_the_database_option_wins_over_the_environment_variable(self, tmp_path: Path) -> None:
        chosen, ignored = tmp_path / "chosen.sqlite3", tmp_path / "ignored.sqlite3"
        done = kalends(
            "db", "upgrade", "--database", str(chosen), env={ENV_DATABASE_URL: str(ignored)}
        )
        assert done.returncode == 0, done.stderr
        assert f"revision: {head_revision()}" in done.stdout
        assert chosen.exists()
        assert not ignored.exists()


class TestCurrent:
    def test_current_reports_a_missing_database_as_unmigrated_without_creating_it(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "absent.sqlite3"
        result = json_of(kalends("db", "current", "--database", str(path), "--json"))
        assert result == {
            "database": f"sqlite:///{path}",
            "revision": None,
            "head": head_revision(),
            "up_to_date": False,
        }
        assert not path.exists()

    def test_current_reports_an_upgraded_database_as_up_to_date(
        self, storage_target: StorageTarget
    ) -> None:
        json_of(kalends("db", "upgrade", "--database", storage_target.url, "--json"))
        result = json_of(kalends("db", "current", "--database", storage_target.url, "--json"))
        assert (result["revision"], result["up_to_date"]) == (head_revision(), True)


class TestBadDatabase:
    def test_an_unknown_scheme_exits_2_with_one_line_naming_the_database(self) -> None:
        done = kalends("db", "upgrade", "--database", "mysql://db.example/kalends", "--json")
        assert done.returncode == 2
        assert done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1
        assert "database URL scheme 'mysql' is not supported" in done.stderr

    def test_an_unreachable_server_exits_1_without_showing_the_password(self) -> None:
        done = kalends(
            "db", "upgrade", "--database", "postgresql://kal:s3cret@127.0.0.1:1/kalends", "--json"
        )
        assert done.returncode == 1
        assert done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1
        assert "s3cret" not in done.stderr

    def test_a_sqlite_file_in_a_missing_directory_exits_1_and_creates_nothing(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "missing" / "kalends.sqlite3"
        done = kalends("db", "upgrade", "--database", str(path))
        assert done.returncode == 1
        assert "unable to open database file" in done.stderr
        assert not path.parent.exists()
