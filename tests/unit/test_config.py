"""Resolving the database URL: explicit, then the environment, then the default file."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kalends.config import (
    DEFAULT_DATABASE_FILENAME,
    DEFAULT_RUNTIME_DIRNAME,
    ENV_DATABASE_URL,
    default_database_url,
    mask_password,
    normalize_database_url,
    resolve_database_url,
    resolve_runtime_dir,
)
from kalends.errors import InvalidInput
from kalends.storage.engine import create_engine_for
from kalends.storage.migrate import open_store


class TestPrecedence:
    def test_an_explicit_database_wins_over_the_environment(self, tmp_path: Path) -> None:
        url = resolve_database_url(
            "postgresql://db.example/kalends",
            environ={ENV_DATABASE_URL: "sqlite:///env.db"},
            data_dir=tmp_path,
        )
        assert url == "postgresql+psycopg://db.example/kalends"

    def test_the_environment_wins_over_the_default(self, tmp_path: Path) -> None:
        url = resolve_database_url(
            environ={ENV_DATABASE_URL: "postgresql://db.example/kalends"}, data_dir=tmp_path
        )
        assert url == "postgresql+psycopg://db.example/kalends"

    @pytest.mark.parametrize(
        "environ",
        [
            {},  # unset
            {ENV_DATABASE_URL: ""},  # set but empty
            {ENV_DATABASE_URL: "   "},  # set to blanks
        ],
    )
    def test_without_either_the_default_file_is_used_and_its_directory_created(
        self, tmp_path: Path, environ: dict[str, str]
    ) -> None:
        data_dir = tmp_path / "data" / "kalends"
        url = resolve_database_url(environ=environ, data_dir=data_dir)
        assert url == f"sqlite:///{data_dir / DEFAULT_DATABASE_FILENAME}"
        assert data_dir.is_dir()

    def test_the_default_lives_in_the_user_data_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
        monkeypatch.setenv("HOME", str(tmp_path))
        url = default_database_url()
        assert url.startswith(f"sqlite:///{tmp_path}")
        assert url.endswith(f"/kalends/{DEFAULT_DATABASE_FILENAME}")

    def test_the_process_environment_is_read_when_none_is_given(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(ENV_DATABASE_URL, "postgresql://db.example/kalends")
        assert resolve_database_url() == "postgresql+psycopg://db.example/kalends"


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The umask most systems give a login: files 0644 and directories 0755 by default."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("umask_022")
class TestPrivateDataDirectory:
    def test_a_fresh_default_database_lives_in_a_0700_directory_in_0600_files(
        self, tmp_path: Path
    ) -> None:
        data_dir = tmp_path / "share" / "kalends"
        store = open_store(create_engine_for(default_database_url(data_dir)))
        try:
            store.run(lambda conn: None)  # a write: SQLite creates the -wal and -shm files
            with store.transaction(write=False):
                modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in data_dir.iterdir()}
        finally:
            store.close()
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        assert modes == {
            DEFAULT_DATABASE_FILENAME: 0o600,
            f"{DEFAULT_DATABASE_FILENAME}-wal": 0o600,
            f"{DEFAULT_DATABASE_FILENAME}-shm": 0o600,
        }

    def test_the_default_runtime_directory_is_inside_a_0700_data_directory(
        self, tmp_path: Path
    ) -> None:
        data_dir = tmp_path / "share" / "kalends"
        root = resolve_runtime_dir(environ={}, data_dir=data_dir)
        assert root == data_dir / DEFAULT_RUNTIME_DIRNAME
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700

    def test_an_existing_data_directory_and_database_keep_their_modes(self, tmp_path: Path) -> None:
        data_dir = tmp_path / "kalends"
        data_dir.mkdir(mode=0o750)
        (data_dir / DEFAULT_DATABASE_FILENAME).touch(mode=0o640)
        store = open_store(create_engine_for(default_database_url(data_dir)))
        store.close()
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o750
        assert stat.S_IMODE((data_dir / DEFAULT_DATABASE_FILENAME).stat().st_mode) == 0o640


class TestNormalize:
    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            # PostgreSQL URLs are served by psycopg 3
            (
                "postgresql://kal@db.example:5433/kalends",
                "postgresql+psycopg://kal@db.example:5433/kalends",
            ),
            (
                "postgres://db.example/kalends",
                "postgresql+psycopg://db.example/kalends",
            ),  # short form
            ("postgresql+psycopg://db.example/k", "postgresql+psycopg://db.example/k"),  # as is
            ("  postgresql://db.example/k  ", "postgresql+psycopg://db.example/k"),  # blanks
            ("sqlite:////var/lib/kalends.db", "sqlite:////var/lib/kalends.db"),  # absolute file
            ("sqlite+pysqlite:////var/k.db", "sqlite:////var/k.db"),  # explicit driver
            ("/var/lib/kalends.db", "sqlite:////var/lib/kalends.db"),  # a plain path
        ],
    )
    def test_supported_urls_are_normalised(self, raw: str, expected: str) -> None:
        assert normalize_database_url(raw) == expected

    def test_a_relative_path_becomes_an_absolute_sqlite_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        assert normalize_database_url("data/k.db") == f"sqlite:///{tmp_path / 'data' / 'k.db'}"

    def test_a_home_relative_path_is_expanded(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HOME", str(tmp_path))
        assert normalize_database_url("~/k.db") == f"sqlite:///{tmp_path / 'k.db'}"

    def test_a_password_is_kept_in_the_url_but_masked_for_display(self) -> None:
        url = normalize_database_url("postgresql://kal:s3cret@db.example/kalends")
        assert url == "postgresql+psycopg://kal:s3cret@db.example/kalends"
        assert mask_password(url) == "postgresql+psycopg://kal:***@db.example/kalends"


class TestBadInput:
    @pytest.mark.parametrize(
        ("raw", "message"),
        [
            ("mysql://db.example/kalends", "scheme 'mysql' is not supported"),  # other database
            ("http://db.example/", "scheme 'http' is not supported"),  # not a database
            (
                "postgresql+psycopg2://h/k",
                r"'postgresql\+psycopg2' is not supported",
            ),  # other driver
            ("postgresql://db.example", "must name a PostgreSQL database"),  # no database name
            ("", "must not be empty"),  # empty
            ("   ", "must not be empty"),  # blanks
            ("not a url://x", "is not a valid URL"),  # unparseable
        ],
    )
    def test_bad_urls_are_refused_naming_the_database_field(self, raw: str, message: str) -> None:
        with pytest.raises(InvalidInput, match=message) as caught:
            normalize_database_url(raw)
        assert caught.value.field == "database"

    def test_a_bad_url_in_the_environment_is_refused_too(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput) as caught:
            resolve_database_url(environ={ENV_DATABASE_URL: "mysql://h/k"}, data_dir=tmp_path)
        assert caught.value.field == "database"

    def test_an_unparseable_url_does_not_show_its_password_in_the_error(self) -> None:
        with pytest.raises(InvalidInput) as caught:
            normalize_database_url("not a url://kal:s3cret@host/k")
        assert "s3cret" not in str(caught.value)
