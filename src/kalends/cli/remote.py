"""Server mode: a command runs against a running ``kalends serve`` instead of a database.

``--server URL`` (or ``KALENDS_SERVER``, when no ``--database`` is given) sends the
command to the server's HTTP API with the API token ``kalends login`` stored for that
server (or ``KALENDS_TOKEN``). The server checks who may do what: the principal is
the token's owner, so ``--as`` does not apply. The server answers the domain's own
JSON, which the command prints as it does in local mode; an error answer
``{code, message, details}`` exits as local mode would: 2 for bad input, 1 for every
other refusal, with the same ``error: …`` line and, with ``--json``, the same
``{"error": …}`` object.

Where the tokens are stored: :mod:`kalends.cli.credentials`; the HTTP client:
:mod:`kalends.cli.http`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from urllib.parse import urlsplit
from uuid import UUID

import typer
from rich.text import Text

from kalends.cli.credentials import ENV_CREDENTIALS, stored_for
from kalends.cli.http import (
    EXCHANGE_ROUTE,
    UPLOAD_TIMEOUT_SECONDS,
    Client,
    NoAnswer,
    ServerError,
    ServerInvalid,
    Unreachable,
    path_part,
)
from kalends.cli.output import error_console
from kalends.cli.session import Session, report_error, session
from kalends.errors import InvalidInput, KalendsError, NotFound, Unauthenticated

if TYPE_CHECKING:
    from kalends.cli.http_accounts import HttpAccounts
    from kalends.cli.http_missions import HttpSchedules, HttpWorkspaces
    from kalends.cli.http_reminders import HttpDestinations, HttpReminders
    from kalends.cli.http_tasks import (
        HttpDirectory,
        HttpGrants,
        HttpSeries,
        HttpTaskChanges,
        HttpTasks,
    )

__all__ = [
    "ENV_CREDENTIALS",
    "ENV_SERVER",
    "EXCHANGE_ROUTE",
    "ENV_TOKEN",
    "SERVER_MODE_HELP",
    "Client",
    "NoAnswer",
    "Remote",
    "ServerError",
    "ServerInvalid",
    "ServerOption",
    "Unreachable",
    "local_or_remote",
    "normalize_server",
    "open_remote",
    "passage_server",
    "passage_session",
    "path_part",
    "remote_session",
    "server_url",
    "token_for",
]

T = TypeVar("T")

ENV_SERVER = "KALENDS_SERVER"
ENV_TOKEN = "KALENDS_TOKEN"
# What a passage's environment holds (kalends.cli.report names them too).
ENV_PASSAGE_TOKEN = "KALENDS_PASSAGE_TOKEN"
ENV_PASSAGE_API_URL = "KALENDS_API_URL"
# Who acts in a passage's session: the passage, which the server knows by its token.
PASSAGE_ACTOR = "passage"

SERVER_MODE_HELP = (
    "Server mode: --server URL (or KALENDS_SERVER, unless --database is given) runs the "
    "command against a running `kalends serve` as the account `kalends login` logged in; "
    "--as is then ignored."
)
ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        help=(
            "Run against a running `kalends serve` at URL (default: $KALENDS_SERVER unless "
            "--database is given) with the token `kalends login` stored, or $KALENDS_TOKEN; "
            "the token's owner acts, --as is ignored. Not with --database."
        ),
        show_default=False,
    ),
]


def server_url(server: str | None, database: str | None) -> str | None:
    """The server a command runs against, or ``None`` for local mode.

    ``--server`` always counts (and is refused beside ``--database``); the environment's
    ``KALENDS_SERVER`` only when no ``--database`` is given.
    """
    if server is not None:
        return server
    if database is not None:
        return None
    return os.environ.get(ENV_SERVER) or None


def normalize_server(url: str) -> str:
    """``url`` as the key it is stored under: scheme and host lowercase, no trailing slash."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise InvalidInput(
            f"server: an http:// or https:// URL such as http://127.0.0.1:8000, got {url!r}",
            field="server",
        )
    if parts.query or parts.fragment:
        raise InvalidInput(f"server: a URL without query or fragment, got {url!r}", field="server")
    path = parts.path.rstrip("/")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}"


# --- a command's remote session ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Remote:
    """One command's client, the principal's handle (when stored) and output mode."""

    client: Client
    actor: str
    json_output: bool
    # List IDs by the name a command gave: one command finds a list by name once.
    _list_ids: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def local_note(self) -> None:
        """Nothing to remind: the server knows who is acting."""

    # What a command asks for in either mode (kalends.cli.task_client.TaskSession): here
    # each call is a request to the server.

    @property
    def directory(self) -> HttpDirectory:
        from kalends.cli.http_tasks import HttpDirectory  # noqa: PLC0415

        return HttpDirectory(self)

    @property
    def grants(self) -> HttpGrants:
        from kalends.cli.http_tasks import HttpGrants  # noqa: PLC0415

        return HttpGrants(self)

    @property
    def tasks(self) -> HttpTasks:
        from kalends.cli.http_tasks import HttpTasks  # noqa: PLC0415

        return HttpTasks(self)

    @property
    def series(self) -> HttpSeries:
        from kalends.cli.http_tasks import HttpSeries  # noqa: PLC0415

        return HttpSeries(self)

    @property
    def changes(self) -> HttpTaskChanges:
        from kalends.cli.http_tasks import HttpTaskChanges  # noqa: PLC0415

        return HttpTaskChanges(self)

    # (kalends.cli.mission_client.MissionSession)

    @property
    def workspaces(self) -> HttpWorkspaces:
        from kalends.cli.http_missions import HttpWorkspaces  # noqa: PLC0415

        return HttpWorkspaces(self)

    @property
    def schedules(self) -> HttpSchedules:
        from kalends.cli.http_missions import HttpSchedules  # noqa: PLC0415

        return HttpSchedules(self)

    # (kalends.cli.reminder_client.ReminderSession)

    @property
    def reminders(self) -> HttpReminders:
        from kalends.cli.http_reminders import HttpReminders  # noqa: PLC0415

        return HttpReminders(self)

    @property
    def destinations(self) -> HttpDestinations:
        from kalends.cli.http_reminders import HttpDestinations  # noqa: PLC0415

        return HttpDestinations(self)

    # (kalends.cli.account_client.AccountSession)

    def accounts(self, *, password_stdin: bool = False) -> HttpAccounts:
        """The token routes; creating a token asks the password (or reads it from
        standard input with ``password_stdin``)."""
        from kalends.cli.http_accounts import HttpAccounts  # noqa: PLC0415

        return HttpAccounts(self, password_stdin=password_stdin)

    @property
    def server(self) -> str:
        return self.client.server

    def read_together(self, fn: Callable[[], T]) -> T:
        """Runs ``fn``: each of its reads is its own request (a server keeps no
        transaction across requests)."""
        return fn()

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(path, **params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.client.post(path, body)

    def put(self, path: str, body: Any = None) -> Any:
        return self.client.put(path, body)

    def patch(self, path: str, body: Any = None) -> Any:
        return self.client.patch(path, body)

    def delete(self, path: str, **params: Any) -> Any:
        return self.client.delete(path, **params)

    def upload(self, path: str, *, files: Mapping[str, Any], data: Mapping[str, Any]) -> Any:
        """A multipart POST (an attachment's bytes)."""
        return self.client.request(
            "POST", path, files=files, data=data, timeout=UPLOAD_TIMEOUT_SECONDS
        )

    # The API names lists, workspaces and actors by ID; the command line also by name.

    def list_id(self, ref: str) -> str:
        """A list by ID, or by exact name among the caller's lists (as local mode finds it)."""
        as_id = _as_uuid(ref)
        if as_id is not None:
            return as_id
        if ref in self._list_ids:
            return self._list_ids[ref]
        found = [d["id"] for d in self.get("/api/lists") if d["name"] == ref]
        if not found:
            raise NotFound(f"list: you have no list named {ref!r}", field="list")
        if len(found) > 1:
            raise InvalidInput(
                f"list: several of your lists are named {ref!r}; use its ID", field="list"
            )
        self._list_ids[ref] = str(found[0])
        return self._list_ids[ref]

    def workspace_id(self, ref: str) -> str:
        """A workspace by ID, or by exact name among the caller's workspaces."""
        as_id = _as_uuid(ref)
        if as_id is not None:
            return as_id
        found = [d["id"] for d in self.get("/api/workspaces") if d["name"] == ref]
        if not found:
            raise NotFound(f"workspace: no workspace {ref!r}", field="workspace")
        if len(found) > 1:
            raise InvalidInput(
                f"workspace: several workspaces are named {ref!r}; give its ID", field="workspace"
            )
        return str(found[0])

    def member_id(self, ref: str) -> str:
        """An actor by ID, or by handle in the server's directory of actors (``GET
        /api/actors``); an unknown handle is refused as local mode refuses it."""
        as_id = _as_uuid(ref)
        if as_id is not None:
            return as_id
        handle = ref.strip()
        for found in self.get("/api/actors"):
            if found["handle"] == handle:
                return str(found["id"])
        raise NotFound(f"member: no actor {ref!r}", field="member")


def _as_uuid(text: str) -> str | None:
    try:
        return str(UUID(text))
    except ValueError:
        return None


def token_for(server: str) -> tuple[str, str]:
    """The token to send to ``server`` and its owner's handle (``""`` when unknown)."""
    given = os.environ.get(ENV_TOKEN)
    if given:
        return given, ""
    found = stored_for(server)
    if found is None:
        raise Unauthenticated(
            f"no token stored for {server}: run `kalends login --server {server}` "
            f"(or set {ENV_TOKEN})",
            server=server,
        )
    return found.token, found.handle


def open_remote(
    server: str, json_output: bool, *, database: str | None, actor: str | None
) -> Remote:
    """A remote session on ``server``; refused beside ``--database``. A ``--as`` naming
    someone other than the token's owner is noted on stderr and ignored."""
    if database is not None:
        raise InvalidInput(
            "server: give --server URL or --database, not both (the server has its own database)",
            field="server",
        )
    url = normalize_server(server)
    token, handle = token_for(url)
    client = Client(url, token)
    try:
        if not handle:  # a token from the environment: ask whose it is
            handle = str(client.get("/api/auth/me")["actor"]["handle"])
    except BaseException:
        client.close()
        raise
    if actor is not None and actor.strip() and actor.strip() != handle:
        error_console.print(
            Text(f"server mode: acting as {handle}; --as {actor.strip()} is ignored", style="dim"),
            soft_wrap=True,
            highlight=False,
        )
    return Remote(client=client, actor=handle, json_output=json_output)


@contextmanager
def remote_session(
    server: str, json_output: bool, *, database: str | None = None, actor: str | None = None
) -> Iterator[Remote]:
    """The remote twin of :func:`kalends.cli.session.session`: a kalends error (the
    server's refusal included) becomes its exit code."""
    try:
        remote = open_remote(server, json_output, database=database, actor=actor)
        try:
            yield remote
        finally:
            remote.client.close()
    except KalendsError as exc:
        report_error(exc, json_output)


def passage_server(server: str | None, database: str | None) -> tuple[str, str] | None:
    """The server and token a command inside a passage sends with ``Authorization:
    Passage <token>``: the passage's own server (``KALENDS_API_URL``) and token
    (``KALENDS_PASSAGE_TOKEN``) when both are set and neither ``--server`` nor
    ``--database`` names another place; else ``None``."""
    if server is not None or database is not None:
        return None
    url = os.environ.get(ENV_PASSAGE_API_URL, "").strip()
    token = os.environ.get(ENV_PASSAGE_TOKEN, "").strip()
    if not url or not token:
        return None
    return url, token


@contextmanager
def passage_session(url: str, token: str, json_output: bool) -> Iterator[Remote]:
    """A remote session that speaks for the running passage: the server answers only what
    its token may do (tick and comment its own checklist's items)."""
    try:
        client = Client(normalize_server(url), token, scheme="Passage")
        try:
            yield Remote(client=client, actor=PASSAGE_ACTOR, json_output=json_output)
        finally:
            client.close()
    except KalendsError as exc:
        report_error(exc, json_output)


@contextmanager
def local_or_remote(
    database: str | None,
    server: str | None,
    json_output: bool,
    *,
    actor: str | None = None,
    anonymous: bool = False,
    passage: bool = False,
) -> Iterator[Session | Remote]:
    """The one seam of server mode: a :class:`Remote` when a server is in effect (see
    :func:`server_url`), else the local :class:`Session` on the database (``anonymous``:
    without an acting actor, as :func:`~kalends.cli.session.session` takes it).

    With ``passage`` (a command a passage may run with its own token), inside a passage
    (:func:`passage_server`) the command speaks for the passage instead."""
    inside = passage_server(server, database) if passage else None
    if inside is not None:
        with passage_session(*inside, json_output) as remote:
            yield remote
        return
    url = server_url(server, database)
    if url is not None:
        with remote_session(url, json_output, database=database, actor=actor) as remote:
            yield remote
        return
    with session(database, json_output, actor=actor, anonymous=anonymous) as local:
        yield local
