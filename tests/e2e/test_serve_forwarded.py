"""`kalends serve --forwarded-allow-ips`: whose X-Forwarded-For a real server believes, seen
through the login throttle, which counts failures per client address."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from kalends.cli.main import app

from .conftest import Server, owner_session, start_server

PASSWORD = "a long enough password"


def _with_password(server: Server) -> None:
    """Give the owner a password, through the first start's login link."""
    with owner_session(server) as client:
        reply = client.post("/api/auth/password", json={"newPassword": PASSWORD})
        assert reply.status_code == 204, reply.text


def _login(client: httpx.Client, password: str, forwarded_for: str | None) -> httpx.Response:
    headers = {} if forwarded_for is None else {"X-Forwarded-For": forwarded_for}
    return client.post(
        "/api/auth/login", json={"handle": "olivia", "password": password}, headers=headers
    )


def test_x_forwarded_for_is_ignored_by_default(tmp_path: Path, servers: list[Server]) -> None:
    server = start_server(f"sqlite:///{tmp_path / 'kalends.sqlite3'}", tmp_path)
    servers.append(server)
    _with_password(server)
    with server.client() as client:
        # Five failures, each claiming another client: all are the loopback peer's.
        for n in range(5):
            assert _login(client, "wrong guess", f"203.0.113.{n}").status_code == 401
        limited = _login(client, PASSWORD, "198.51.100.7")
    assert limited.status_code == 429, limited.text
    assert int(limited.headers["Retry-After"]) >= 1


def test_x_forwarded_for_is_honoured_from_the_proxies_named_by_forwarded_allow_ips(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = start_server(
        f"sqlite:///{tmp_path / 'kalends.sqlite3'}",
        tmp_path,
        "--forwarded-allow-ips",
        "127.0.0.1",
    )
    servers.append(server)
    _with_password(server)
    with server.client() as client:
        for _ in range(5):
            assert _login(client, "wrong guess", "203.0.113.9").status_code == 401
        # The forwarded client waits; another one, and the proxy itself, do not.
        assert _login(client, PASSWORD, "203.0.113.9").status_code == 429
        assert _login(client, PASSWORD, "198.51.100.7").status_code == 200
        assert _login(client, PASSWORD, None).status_code == 200


@pytest.mark.parametrize(
    "value",
    [
        "localhost",  # a name, not an address
        "127.0.0.1,10.0.0.300",  # one bad address among good ones
        "10.0.0.1/8",  # host bits set in a network
    ],
)
def test_forwarded_allow_ips_refuses_what_is_not_an_address_or_network(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "never.sqlite3"
    result = CliRunner().invoke(
        app,
        ["serve", "--database", str(path), "--forwarded-allow-ips", value],
        env={"KALENDS_FORWARDED_ALLOW_IPS": None, "KALENDS_RUNTIME_DIR": str(tmp_path / "rt")},
    )
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: forwarded-allow-ips: "), result.stderr
    assert not path.exists()


def test_the_help_documents_forwarded_allow_ips() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--forwarded-allow-ips" in result.stdout
    assert "X-Forwarded-For" in result.stdout
