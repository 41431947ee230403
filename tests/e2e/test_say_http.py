"""`kalends say` over HTTP: a passage of a server says something in its own conversation.

The command posts to ``/api/passages/say`` with ``Authorization: Passage <token>``; the
server writes the message in the passage's conversation only. Refusals come back as the
server's error with a non-zero exit (2 for a token or a message refused, 1 for a
settled passage or a server out of reach); without a token or a server the command says
what it needs and writes nothing.

The passages here are admitted by a runtime of the test on the server's own runtime
directory (the same secret signs their tokens), and their conversations opened in the
server's database as a reservation opens them.
"""

from __future__ import annotations

import json
import socket
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from kalends.bootstrap import Services, build
from kalends.clock import SystemClock
from kalends.conversations import open_passage_conversation, settle_passage_conversation
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.storage.engine import create_engine_for
from kalends.storage.migrate import open_store

from .conftest import (
    HOST,
    OWNER,
    Server,
    environment,
    finish,
    kalends_executable,
    start_server,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server on a fresh SQLite file; no loops: the test's runtime admits passages."""
    directory = tmp_path_factory.mktemp("say-http")
    found = start_server(
        f"sqlite:///{directory / 'kalends.sqlite3'}",
        directory,
        "--no-schedules",
        "--no-reminders",
    )
    try:
        yield found
    finally:
        finish(found)


@pytest.fixture(scope="module")
def services(server: Server) -> Iterator[Services]:
    """The server's database, from this process, and a schedule the passages belong to."""
    engine = create_engine_for(server.database)
    try:
        yield build(open_store(engine, SystemClock()))
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def schedule(services: Services, server: Server) -> tuple[uuid.UUID, uuid.UUID]:
    """(workspace, schedule) of the server's owner."""
    owner = services.directory.actor(OWNER).id
    folder = server.directory / "workspace"
    folder.mkdir(exist_ok=True)
    workspace = services.workspaces.add(owner, folder, "say")
    receipt = services.schedules.create(
        owner,
        workspace.id,
        {
            "title": "Nightly",
            "policy": {"kind": "daily", "time": "02:30", "zone": "UTC"},
            "profile": {"command": ["true"]},
        },
        request_id="say-http-create",
    )
    assert receipt.mission_id is not None
    return workspace.id, receipt.mission_id


class Passage:
    """An admitted passage with its conversation open, and its token."""

    def __init__(
        self, server: Server, services: Services, schedule: tuple[uuid.UUID, uuid.UUID]
    ) -> None:
        tag = uuid.uuid4().hex[:12]
        runtime = ProcessRuntime(server.directory / "runtime")
        self.passage_id, self.session_id = f"psg_{tag}", f"ses_{tag}"
        runtime.admit(
            PassageStart(
                passage_id=self.passage_id,
                session_id=self.session_id,
                message_id=f"msg_{tag}",
                schedule_id=str(schedule[1]),
                workspace=str(server.directory),
                command=("true",),
            )
        )
        self.token = runtime.token(self.passage_id, self.session_id)
        self.services = services
        store = services.store
        with store.transaction() as conn:
            self.conversation = open_passage_conversation(
                conn,
                store.clock.now(),
                workspace_id=schedule[0],
                schedule_id=schedule[1],
                passage_id=self.passage_id,
                title="Nightly passage",
                input_text="Count the files",
            ).id

    def texts(self) -> list[tuple[int, str, str, bool]]:
        owner = self.services.directory.actor(OWNER).id
        found = self.services.conversations.messages(owner, self.conversation)
        return [(m.seq, m.role.value, m.text, m.complete) for m in found]


def say(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The real `kalends say ARGS` executable with only ``env`` of the passage's variables."""
    return subprocess.run(
        [kalends_executable(), "say", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        input=stdin,
        env=environment(**env),
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_passage_says_things_in_its_own_conversation(
    server: Server, services: Services, schedule: tuple[uuid.UUID, uuid.UUID]
) -> None:
    mine = Passage(server, services, schedule)
    other = Passage(server, services, schedule)
    env = {"KALENDS_API_URL": server.base, "KALENDS_PASSAGE_TOKEN": mine.token}

    done = say(env, "Found 12 files.")
    assert (done.returncode, done.stdout, done.stderr) == (0, "Said (message #2).\n", "")
    piped = say(env, "-", "--note", "--json", stdin="a note\nover two lines")
    assert piped.returncode == 0, piped.stderr
    printed = json.loads(piped.stdout)
    assert (printed["seq"], printed["role"], printed["text"]) == (
        3,
        "system",
        "a note\nover two lines",
    )
    half = say(env, "still thinking", "--unfinished")
    assert half.returncode == 0, half.stderr

    assert mine.texts() == [
        (1, "user", "Count the files", True),
        (2, "assistant", "Found 12 files.", True),
        (3, "system", "a note\nover two lines", True),
        (4, "assistant", "still thinking", False),
    ]
    assert [t[0] for t in other.texts()] == [1]  # the token spoke for its own passage only


def test_each_refusal_exits_non_zero_and_writes_nothing(
    server: Server, services: Services, schedule: tuple[uuid.UUID, uuid.UUID]
) -> None:
    mine = Passage(server, services, schedule)
    token, base = mine.token, server.base
    cases = [
        ({"KALENDS_API_URL": base}, ("hi",), 2, "no passage token"),
        ({"KALENDS_PASSAGE_TOKEN": token}, ("hi",), 2, "needs the kalends server"),
        ({"KALENDS_API_URL": base, "KALENDS_PASSAGE_TOKEN": "forged.x"}, ("hi",), 2, "401"),
        ({"KALENDS_API_URL": base, "KALENDS_PASSAGE_TOKEN": token}, ("",), 2, "422"),
        ({"KALENDS_API_URL": "ftp://x", "KALENDS_PASSAGE_TOKEN": token}, ("hi",), 2, "http://"),
        (
            {"KALENDS_API_URL": f"http://{HOST}:{closed_port()}", "KALENDS_PASSAGE_TOKEN": token},
            ("hi",),
            1,
            "cannot reach the kalends server",
        ),
    ]
    seen = []
    for env, args, code, said in cases:
        done = say(env, *args)
        if done.returncode != code or said not in done.stderr:
            seen.append(f"{env} {args}: {done.returncode} {done.stderr!r}")
    assert seen == []
    json_error = say({"KALENDS_API_URL": base}, "hi", "--json")
    assert json.loads(json_error.stdout)["error"]["message"].startswith("no passage token")
    assert mine.texts() == [(1, "user", "Count the files", True)]

    # Settled: its conversation takes nothing more (exit 1).
    store = services.store
    with store.transaction() as conn:
        settle_passage_conversation(conn, store.clock.now(), mine.passage_id)
    late = say({"KALENDS_API_URL": base, "KALENDS_PASSAGE_TOKEN": token}, "late")
    assert late.returncode == 1 and "409" in late.stderr, late.stderr
    assert mine.texts() == [(1, "user", "Count the files", True)]


def test_the_command_is_in_the_help() -> None:
    done = subprocess.run(
        [kalends_executable(), "say", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=environment(COLUMNS="80"),
    )
    assert done.returncode == 0
    assert "Say something in this passage's own conversation." in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
