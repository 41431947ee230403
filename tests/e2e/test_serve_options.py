"""`kalends serve` options: the refusals (bad input, a taken port, an unreachable
database) and what the options change (the public URL, the loops, the owner)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kalends.auth import Accounts
from kalends.cli.main import app
from kalends.cli.serve import default_owner_handle
from kalends.storage.migrate import open_store

from .conftest import (
    HOST,
    LINK,
    OWNER,
    START_WITHIN,
    Server,
    environment,
    run_cli,
    start_server,
)
from .test_serve_process import set_cookies

CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_RUNTIME_DIR": None,
    "KALENDS_BASE_URL": None,
    "KALENDS_HOST": None,
    "KALENDS_PORT": None,
    "COLUMNS": "200",
}


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs ``kalends serve`` as a process that is expected to refuse and exit."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kalends",
            "serve",
            "--runtime-dir",
            str(tmp_path / "runtime"),
            "--log-format",
            "json",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=START_WITHIN,
        check=False,
        env=environment(),
    )


class TestRefusals:
    @pytest.mark.parametrize(
        ("args", "field"),
        [
            (("--port", "70000"), "port"),  # past the last port
            (("--port", "-1"), "port"),  # negative
            (("--port", "http"), "port"),  # a service name is not a number
            (("--port", ""), "port"),  # empty
            (("--host", " "), "host"),  # blank
            (("--log-level", "loud"), "log-level"),  # no such level
            (("--log-format", "xml"), "log-format"),  # no such format
            (("--owner", "Not A Handle"), "owner"),  # uppercase and spaces
            (("--owner", "x" * 65), "owner"),  # one past the longest handle
            (("--base-url", "ftp://example.com"), "base-url"),  # not http(s)
            (("--base-url", "http://"), "base-url"),  # no host
            (("--base-url", "http://example.com/?q=1"), "base-url"),  # a query
            (("--base-url", "http://example.com:99999"), "base-url"),  # a bad port
        ],
    )
    def test_bad_input_exits_2_before_touching_the_database(
        self, tmp_path: Path, args: tuple[str, ...], field: str
    ) -> None:
        path = tmp_path / "never.sqlite3"
        result = CliRunner().invoke(
            app,
            ["serve", "--database", str(path), "--runtime-dir", str(tmp_path / "rt"), *args],
            env=CLEAN_ENV,
        )

        assert result.exit_code == 2, (result.stdout, result.stderr)
        assert result.stderr.startswith(f"error: {field}: "), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stdout == ""
        assert not path.exists()
        assert not (tmp_path / "rt").exists()

    def test_a_bad_port_as_a_process_says_so_and_exits_2(self, tmp_path: Path) -> None:
        path = tmp_path / "never.sqlite3"

        done = serve(tmp_path, "--database", str(path), "--port", "65536")

        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (
            "error: port: a whole number from 0 to 65535 (0 picks a free port), got '65536'"
        )
        assert done.stdout == ""
        assert not path.exists()

    def test_a_taken_port_exits_1_and_creates_no_owner(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
        with socket.socket() as taken:
            taken.bind((HOST, 0))
            taken.listen()
            port = taken.getsockname()[1]

            done = serve(tmp_path, "--database", url, "--port", str(port), "--owner", "olivia")

        assert done.returncode == 1, done.stderr
        assert f"error: cannot listen on {HOST}:{port}: " in done.stderr
        assert done.stdout == ""  # no link, no serving line
        store = open_store(url)
        try:
            assert not Accounts(store).has_owner()
        finally:
            store.close()

    def test_an_unreachable_database_exits_1_with_the_reason(self, tmp_path: Path) -> None:
        url = "postgresql://kalends:secret-pw@127.0.0.1:1/kalends"

        done = serve(tmp_path, "--database", url, "--port", "0")

        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert lines[-1].startswith("error: "), done.stderr
        assert "127.0.0.1" in lines[-1]
        assert "secret-pw" not in done.stderr
        logged = [json.loads(line) for line in lines[:-1]]
        assert [e["message"] for e in logged if e["level"] == "error"] == [
            "cannot open the database"
        ]
        assert done.stdout == ""


class TestWhatOptionsChange:
    def test_base_url_no_loops_and_the_owner_from_the_login_name(
        self, tmp_path: Path, servers: list[Server]
    ) -> None:
        server = start_server(
            f"sqlite:///{tmp_path / 'kalends.sqlite3'}",
            tmp_path,
            "--base-url",
            "https://kalends.example.org/",
            "--no-schedules",
            "--no-reminders",
            owner=None,
            env={"LOGNAME": "Jane Doe", "USER": "someone-else"},
        )
        servers.append(server)

        [link] = server.links()
        assert link.group(1) == "jane-doe"
        assert link.group(2).startswith("https://kalends.example.org/api/auth/link?token=")
        with server.client() as client:
            ready = client.get("/readyz")
            assert (ready.status_code, ready.json()["checks"]) == (200, {"database": True})
            # The link's path works on the local address; an https base makes cookies Secure.
            local = link.group(2).replace("https://kalends.example.org", server.base)
            redeemed = client.get(local, follow_redirects=False)
        assert redeemed.status_code == 303, redeemed.text
        cookie = set_cookies(redeemed)["kalends_session"]["kalends_session"]
        assert cookie["secure"] is True and cookie["httponly"] is True
        messages = {e["message"] for e in server.logs()}
        assert not messages & {"scheduler running", "reminders running"}
        # A fresh login link goes to the public URL too.
        printed = run_cli(server, "login-link", "--as", "jane-doe")
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout.startswith(
            "open this link once to log in as jane-doe: https://kalends.example.org/api/auth/"
        )
        code, _ = server.stop()
        assert code == 0, server.stderr()


class TestLoginLink:
    def test_it_prints_the_port_the_server_on_its_database_listens_on(
        self, tmp_path: Path, servers: list[Server]
    ) -> None:
        url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
        first = start_server(url, tmp_path)
        servers.append(first)
        assert first.port != 8000

        printed = run_cli(first, "login-link", "--as", OWNER)

        assert printed.returncode == 0, printed.stderr
        link = LINK.fullmatch(printed.stdout.splitlines()[0])
        assert link is not None, printed.stdout
        assert link.group(2).startswith(f"{first.base}/api/auth/link?token=")
        assert "the address `kalends serve` recorded on this database" in printed.stdout
        with first.client() as client:
            assert client.get(link.group(2), follow_redirects=False).status_code == 303
        # A later start (on whatever port it gets): the next link follows it.
        assert first.stop()[0] == 0
        second = start_server(url, tmp_path)
        servers.append(second)
        again = run_cli(second, "login-link", "--as", OWNER)
        assert f"{second.base}/api/auth/link?token=" in again.stdout, again.stdout


class TestDefaultOwner:
    @pytest.mark.parametrize(
        ("environ", "handle"),
        [
            ({"LOGNAME": "jane"}, "jane"),  # already a handle
            ({"LOGNAME": "", "USER": "Jane.Doe"}, "jane.doe"),  # empty counts as unset
            ({"USERNAME": "Jane Q. Public"}, "jane-q.-public"),  # spaces become dashes
            ({"LOGNAME": "__svc__"}, "svc"),  # a handle starts with a letter or digit
            ({"LOGNAME": "x" * 70}, "x" * 64),  # cut to the longest handle
            ({"LOGNAME": "Zoë"}, "zo"),  # letters outside a-z go
            ({"LOGNAME": "---"}, "owner"),  # nothing left
            ({"LOGNAME": "Ω"}, "owner"),  # nothing left
            ({}, "owner"),  # no login name at all
        ],
    )
    def test_the_login_name_as_a_handle_else_owner(
        self, environ: dict[str, str], handle: str
    ) -> None:
        assert default_owner_handle(environ) == handle


def test_the_help_names_every_option() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"], env=CLEAN_ENV)
    assert result.exit_code == 0
    for option in (
        "--host",
        "--port",
        "--database",
        "--runtime-dir",
        "--owner",
        "--log-level",
        "--no-schedules",
        "--no-reminders",
        "--base-url",
    ):
        assert option in result.stdout
