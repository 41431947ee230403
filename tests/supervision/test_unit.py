"""The unit's text, checked by Debian's real ``systemd-analyze verify``: what it runs,
how systemd reads each word of its command line, and that a password never lands in it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kalends.errors import InvalidInput
from kalends.supervision import Launch, kalends_command, render_unit
from kalends.supervision.unit import systemd_quote

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze (Debian's systemd package) is missing"
)


def verify(unit: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze verify`` on ``unit`` written as kalends.service in ``directory``."""
    assert SYSTEMD_ANALYZE is not None
    path = directory / "kalends.service"
    path.write_text(unit)
    return subprocess.run(
        [SYSTEMD_ANALYZE, "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def exec_start(unit: str) -> str:
    [line] = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    return line.removeprefix("ExecStart=")


class TestTheUnitSystemdReads:
    @needs_systemd_analyze
    def test_a_unit_for_a_sqlite_server_passes_systemd_analyze_verify(self, tmp_path: Path) -> None:
        launch = Launch(
            command=kalends_command(),
            database_url=f"sqlite:///{tmp_path / 'kalends.sqlite3'}",
            runtime_dir=tmp_path / "runtime",
            host="127.0.0.1",
            port=8123,
        )
        unit = render_unit(launch, env_file=tmp_path / "service.env")
        done = verify(unit, tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert "Restart=on-failure" in unit.splitlines()
        assert "WantedBy=default.target" in unit.splitlines()
        assert exec_start(unit) == (
            f"{kalends_command()[0]} serve --database sqlite:///{tmp_path / 'kalends.sqlite3'} "
            f"--runtime-dir {tmp_path / 'runtime'} --host 127.0.0.1 --port 8123"
        )

    @needs_systemd_analyze
    def test_words_with_spaces_percent_and_dollar_are_quoted_as_systemd_reads_them(
        self, tmp_path: Path
    ) -> None:
        launch = Launch(
            command=kalends_command(),
            database_url="sqlite:////srv/my data/100%$HOME.sqlite3",
            runtime_dir=Path("/srv/run dir"),
        )
        unit = render_unit(launch, env_file=tmp_path / "a%b" / "service.env")
        done = verify(unit, tmp_path)
        assert (done.returncode, done.stderr) == (0, "")
        assert '"sqlite:////srv/my data/100%%$$HOME.sqlite3"' in exec_start(unit)
        assert f"EnvironmentFile=-{tmp_path}/a%%b/service.env" in unit.splitlines()

    @needs_systemd_analyze
    def test_verify_fails_a_unit_whose_command_does_not_exist(self, tmp_path: Path) -> None:
        # The check can fail: the same verify refuses a command that is not there.
        launch = Launch(command=(str(tmp_path / "no-such-kalends"),))
        done = verify(render_unit(launch, env_file=tmp_path / "service.env"), tmp_path)
        assert done.returncode != 0
        assert "no-such-kalends" in done.stderr

    def test_options_left_out_are_left_to_the_served_process(self, tmp_path: Path) -> None:
        unit = render_unit(Launch(command=("/opt/kalends",)), env_file=tmp_path / "e")
        assert exec_start(unit) == "/opt/kalends serve"


class TestNoSecretInTheUnit:
    def test_a_database_url_with_a_password_is_refused_and_the_refusal_says_what_to_do(
        self, tmp_path: Path
    ) -> None:
        launch = Launch(
            command=("/opt/kalends",),
            database_url="postgresql+psycopg://kal:s3cret@db.example/kalends",
        )
        env_file = tmp_path / "service.env"
        with pytest.raises(InvalidInput) as refused:
            render_unit(launch, env_file=env_file)
        assert "s3cret" not in refused.value.message
        assert f"KALENDS_DATABASE_URL=<the URL> in {env_file}" in refused.value.message

    def test_with_the_url_in_the_environment_file_the_unit_names_no_database(
        self, tmp_path: Path
    ) -> None:
        env_file = tmp_path / "service.env"
        env_file.write_text("KALENDS_DATABASE_URL=postgresql://kal:s3cret@db.example/kalends\n")
        launch = Launch(
            command=("/opt/kalends",),
            database_url="postgresql+psycopg://kal:s3cret@db.example/kalends",
            port=8000,
        )
        unit = render_unit(launch, env_file=env_file)
        assert "s3cret" not in unit
        assert exec_start(unit) == "/opt/kalends serve --port 8000"
        assert f"EnvironmentFile=-{env_file}" in unit.splitlines()

    def test_a_control_character_in_a_word_is_refused(self) -> None:
        with pytest.raises(InvalidInput):
            systemd_quote("/srv/a\nExecStartPre=/bin/evil")
