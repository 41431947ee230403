"""``kalends login``, ``logout`` and ``whoami``: the API token the command line sends a server.

``login`` trades a handle and password for an API token (``POST
/api/auth/tokens/exchange``) and stores it for the server in the credentials file;
every command given ``--server URL`` (or ``KALENDS_SERVER``) then sends it.
``logout`` revokes the token on the server and forgets it. The secret is never
printed; the file is readable by its owner only.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from kalends.cli.credentials import Stored, forget, remember, stored_for
from kalends.cli.output import console, emit_json
from kalends.cli.remote import (
    ENV_SERVER,
    ENV_TOKEN,
    Client,
    ServerError,
    normalize_server,
    token_for,
)
from kalends.cli.session import JsonOption, report_error
from kalends.errors import InvalidInput, KalendsError, NotFound

__all__ = ["login_command", "logout_command", "read_password", "whoami_command"]

# The lifetime `kalends login` asks for, in days.
TOKEN_DAYS = 90

LoginServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        help=f"The server, e.g. http://127.0.0.1:8000 (default: ${ENV_SERVER}).",
        show_default=False,
    ),
]


def _server(server: str | None) -> str:
    given = server if server is not None else os.environ.get(ENV_SERVER)
    if not given:
        raise InvalidInput(
            f"server: give --server URL (or set {ENV_SERVER}), e.g. http://127.0.0.1:8000",
            field="server",
        )
    return normalize_server(given)


def read_password(from_stdin: bool) -> str:
    """The password: the first line of standard input, else asked (hidden, on stderr)."""
    if from_stdin:
        line = sys.stdin.readline()
        password = line.removesuffix("\n").removesuffix("\r")
    else:
        password = typer.prompt("password", hide_input=True, err=True)
    if not password:
        raise InvalidInput("password: empty", field="password")
    return password


def login_command(
    server: LoginServerOption = None,
    handle: Annotated[
        str | None,
        typer.Option("--handle", help="Your handle (default: asked).", show_default=False),
    ] = None,
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin",
            help="Read the password from the first line of standard input (needs --handle).",
        ),
    ] = False,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="The token's name, as `GET /api/tokens` lists it (default: cli@HOSTNAME).",
            show_default=False,
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Log in to a server: trade your handle and password for an API token (90 days).

    Commands given --server URL then act as you. The token is stored in the credentials
    file (readable by you only; KALENDS_CREDENTIALS names another); its secret is never
    printed. A token stored before for the server is revoked. With --json: {"server",
    "handle", "token", "credentials"}.

    Commands that take --server: workspace, schedule, passage, list, task, reminders,
    actor (and actor notify) and token. db, worker, serve, report, preview, login-link
    and password work on this machine only and take no --server.
    """
    try:
        url = _server(server)
        if password_stdin and handle is None:
            raise InvalidInput("handle: --password-stdin needs --handle", field="handle")
        who = handle if handle is not None else typer.prompt("handle", err=True)
        who = who.strip()
        if not who:
            raise InvalidInput("handle: empty", field="handle")
        password = read_password(password_stdin)
        label = name if name is not None else f"cli@{socket.gethostname() or 'localhost'}"
        body = {"handle": who, "password": password, "name": label, "expiresInDays": TOKEN_DAYS}
        previous = stored_for(url)
        with Client(url, None) as anonymous:
            made: dict[str, Any] = anonymous.post("/api/auth/tokens/exchange", body)
        token = made["token"]
        path = remember(url, Stored(token=made["secret"], token_id=token["id"], handle=who))
        if previous is not None and previous.token_id != token["id"]:
            _revoke_quietly(url, previous)
    except KalendsError as exc:
        report_error(exc, json_output)
    if json_output:
        emit_json({"server": url, "handle": who, "token": token, "credentials": str(path)})
        return
    expires = token.get("expiresAt") or "never"
    console.print(Text(f"logged in to {url} as {who}"), soft_wrap=True)
    console.print(
        Text(f"token {token['name']} ({token['id']}), expires {expires}, stored in {path}"),
        style="dim",
        soft_wrap=True,
    )


def _revoke_quietly(url: str, previous: Stored) -> None:
    """Revokes the token a new login replaces; a token already gone is no matter."""
    try:
        with Client(url, previous.token) as old:
            old.delete(f"/api/tokens/{previous.token_id}")
    except KalendsError:
        pass


def logout_command(server: LoginServerOption = None, json_output: JsonOption = False) -> None:
    """Revoke the token stored for the server and forget it.

    A token the server no longer accepts (expired, revoked) is forgotten all the same.
    With --json: {"server", "handle", "revoked": token or null}.
    """
    try:
        url = _server(server)
        found = stored_for(url)
        if found is None:
            raise NotFound(f"no token stored for {url}: nothing to log out of", server=url)
        revoked: dict[str, Any] | None = None
        try:
            with Client(url, found.token) as client:
                revoked = client.delete(f"/api/tokens/{found.token_id}")
        except ServerError as exc:
            if exc.status not in (401, 404):
                raise
        forget(url)
    except KalendsError as exc:
        report_error(exc, json_output)
    if json_output:
        emit_json({"server": url, "handle": found.handle, "revoked": revoked})
        return
    what = "token revoked" if revoked is not None else "the server no longer knew the token"
    console.print(Text(f"logged out of {url} ({found.handle}): {what}"), soft_wrap=True)


def whoami_command(server: LoginServerOption = None, json_output: JsonOption = False) -> None:
    """Who the server takes you for: the owner of the token sent.

    The token is the one `kalends login` stored, or KALENDS_TOKEN. With --json:
    {"server", "actor", "kind", "account"}.
    """
    try:
        url = _server(server)
        token, _ = token_for(url)
        with Client(url, token) as client:
            me: dict[str, Any] = client.get("/api/auth/me")
    except KalendsError as exc:
        report_error(exc, json_output)
    if json_output:
        emit_json({"server": url, **me})
        return
    account = me.get("account") or {}
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    actor = account.get("actor") or me["actor"]
    rows = (
        ("server", url),
        ("handle", str(me["actor"]["handle"])),
        ("name", str(actor.get("display_name") or "")),
        ("actor id", str(me["actor"]["id"])),
        ("via", "API token" + (f" (${ENV_TOKEN})" if os.environ.get(ENV_TOKEN) else "")),
        ("owner", "yes, the server's owner account" if account.get("isOwner") else "no"),
    )
    for label, value in rows:
        grid.add_row(label, Text(value))
    console.print(grid)
