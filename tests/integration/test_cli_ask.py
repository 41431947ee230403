"""`kalends ask` as a passage runs it: a real ``kalends`` process with only the passage's
token and its server's address in its environment, against a real HTTP server (the API
of the test's world, served on a loopback port) on SQLite and (when reachable)
PostgreSQL.

Answered in the kalends interface (a token minted for bob's live session, then the
answer with its pending mark), the command prints the answer and acknowledges its
attempt: the mark is confirmed and the answer counts as bob's decision. Answered through
the API, it prints the answer and no mark ever exists. Without a token or a server it
exits 2 and asks nothing; with no answer within --timeout it exits 3 printing the
question's ID.

The hand-over's crash points run a passage the scheduler launched, settled by a
scheduler round: killed before it read its answer, the pending mark is removed (the
hand-over definitely failed); killed after reading it, its acknowledgement held by a
loopback proxy, the mark stays pending for good. A session signed out between the
answer and its acknowledgement leaves the answer printed but not counted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import ProxyHandler, Request, build_opener

import pytest
from passage_world import HOST, free_port, passage_env, run, run_counting_heavy, served_world

from api.conftest import ApiWorld
from api.questions_support import (
    ANSWER,
    Asker,
    admit,
    bob_session,
    ui_answer,
)
from e2e.conftest import kalends_executable
from kalends.cli.ask import EXIT_TIMEOUT, NOT_COUNTED, POLL_SECONDS
from kalends.clock import FakeClock
from kalends.errors import Conflict
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ENV_API_URL, ProcessRuntime
from kalends.missions.scheduler import Scheduler
from kalends.questions import (
    CAUSE_API,
    CAUSE_NEVER_DELIVERED,
    CAUSE_UNCONFIRMED,
    Question,
)
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store
from missions.conftest import daily_config

ASK = ("ask", "Ship the release?", "--choice", "go=yes,later", "--text", "why:20")
ASK_ALL = (*ASK, "--confirm", "ok", "--label", "ok=Checked the logs")
# A question is read back every POLL_SECONDS: an answer shows within a few polls.
ANSWERED_WITHIN = 6 * POLL_SECONDS + 10


class World:
    def __init__(
        self, api: ApiWorld, base: str, runtime: ProcessRuntime, asker: Asker, schedule: str
    ) -> None:
        self.api, self.base, self.runtime, self.asker = api, base, runtime, asker
        self.schedule = schedule

    def env(self, **extra: str) -> dict[str, str]:
        return passage_env(self.base, self.asker.token, **extra)

    def open_questions(self) -> list[Question]:
        return self.api.services.questions.open_for_passage(self.asker.passage_id)

    def asked(self, process: subprocess.Popen[str]) -> Question:
        """The question the running command asked, once it is there."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = self.open_questions()
            if found:
                [question] = found
                return question
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        raise AssertionError("the command asked nothing")


@pytest.fixture
def world(store: Store, fake_clock: FakeClock, tmp_path: Path) -> Iterator[World]:
    with served_world(store, fake_clock, tmp_path) as (api, base, runtime, schedule):
        yield World(api, base, runtime, admit(runtime, api, "a", schedule), schedule)


def start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [kalends_executable(), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_an_interface_answer_is_printed_and_its_receipt_confirms_the_mark(
    world: World,
) -> None:
    process = start(world.env(), *ASK_ALL, "--tag", "ship", "--json")
    try:
        asked = world.asked(process)
        assert asked.to_json()["fields"] == [
            {"id": "go", "kind": "choice", "label": "go", "options": ["yes", "later"]},
            {"id": "why", "kind": "text", "label": "why", "maxLength": 20},
            {"id": "ok", "kind": "confirm", "label": "Checked the logs"},
        ]
        assert (asked.prompt, asked.tag, asked.workspace_id) == (
            "Ship the release?",
            "ship",
            world.api.home.id,
        )
        given = ui_answer(world.api, asked)
        out, err = process.communicate(timeout=ANSWERED_WITHIN)
    finally:
        process.kill()

    assert (process.returncode, err) == (0, "")
    assert json.loads(out) == {
        "questionId": str(asked.id),
        "answer": ANSWER,
        "answeredVia": "ui",
        "attemptId": given.attempt_id,
    }
    bob = world.api.actors["bob"].id
    [mark] = world.api.services.questions.marks(bob, asked.id)
    assert (mark.attempt_id, mark.state) == (given.attempt_id, "confirmed")
    decided = world.api.services.questions.decision(bob, asked.id)
    assert (decided.decided_by, decided.human_gate) == ("human", "met")


def test_an_api_answer_is_printed_and_no_mark_exists(world: World) -> None:
    process = start(world.env(), *ASK_ALL)
    try:
        asked = world.asked(process)
        bob = world.api.actors["bob"].id
        world.api.services.questions.answer_from_api(bob, asked.id, ANSWER, 1)
        out, err = process.communicate(timeout=ANSWERED_WITHIN)
    finally:
        process.kill()

    assert (process.returncode, out, err) == (0, "go=yes\nwhy=tests pass\nok=true\n", "")
    assert world.api.services.questions.marks(bob, asked.id) == []
    decided = world.api.services.questions.decision(bob, asked.id)
    assert (decided.decided_by, decided.cause) == (None, CAUSE_API)


def test_no_wait_prints_the_question_and_returns(world: World) -> None:
    done = run(world.env(), *ASK, "--no-wait")
    [asked] = world.open_questions()
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{asked.id}\n", "")

    as_json = run(world.env(), *ASK, "--no-wait", "--json")
    assert as_json.returncode == 0, as_json.stderr
    printed: dict[str, Any] = json.loads(as_json.stdout)
    second = world.api.services.questions.get(world.api.actors["bob"].id, printed["id"])
    assert printed == {**second.to_json(), "attemptId": None}


def test_no_answer_within_the_timeout_exits_3_with_the_question(world: World) -> None:
    done = run(world.env(), *ASK, "--timeout", "0.5")
    [asked] = world.open_questions()
    assert (done.returncode, done.stdout) == (EXIT_TIMEOUT, f"{asked.id}\n")
    assert done.stderr == f"note: no answer within 0.5 s; question {asked.id} stays open\n"

    as_json = run(world.env(), *ASK, "--timeout", "0.5", "--json")
    second = [q for q in world.open_questions() if q.id != asked.id]
    assert as_json.returncode == EXIT_TIMEOUT
    assert json.loads(as_json.stdout) == {
        "questionId": str(second[0].id),
        "state": "open",
        "timedOut": True,
    }


@pytest.mark.parametrize(
    ("args", "extra", "message"),
    [
        (ASK, {"KALENDS_PASSAGE_TOKEN": ""}, "no passage token: run `kalends ask` from inside"),
        (ASK, {"KALENDS_API_URL": ""}, "no server: `kalends ask` needs the kalends server"),
        (ASK, {"KALENDS_API_URL": "ftp://x"}, "KALENDS_API_URL: an http:// or https:// URL"),
        (ASK, {"KALENDS_PASSAGE_TOKEN": "forged.token"}, "(401 invalid-passage-token)"),
        (("ask", "Ship?"), {}, "no field: give at least one --choice, --text or --confirm"),
        (("ask", "Ship?", "--choice", "Go=a"), {}, "fields[0].id: must be 1 to 32"),
        (("ask", "Ship?", "--choice", "go"), {}, "--choice: expected FIELD=a,b,c"),
        (("ask", "Ship?", "--choice", "go=a,a"), {}, "fields[0].options[1]: 'a' is listed"),
        (("ask", "Ship?", "--text", "why:abc"), {}, "--text: MAXLEN must be a whole number"),
        (("ask", "Ship?", "--text", "why:0"), {}, "fields[0].maxLength: must be 1 to 4096"),
        (("ask", "Ship?", "--confirm", "ok", "--label", "no=x"), {}, "--label: no field 'no'"),
        (("ask", "Ship?", "--confirm", "ok", "--tag", "No Tag"), {}, "tag: must be 1 to 64"),
        (("ask", "", "--confirm", "ok"), {}, "prompt: is empty"),
    ],
)
def test_bad_input_exits_2_and_asks_nothing(
    world: World, args: tuple[str, ...], extra: dict[str, str], message: str
) -> None:
    with nothing_written(world.api.store):
        done = run(world.env(**extra), *args)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr, done.stderr


def test_a_settled_passage_and_an_unreachable_server_exit_1(world: World) -> None:
    with nothing_written(world.api.store):
        away = run(world.env(KALENDS_API_URL=f"http://{HOST}:{free_port()}"), *ASK)
    assert (away.returncode, away.stdout) == (1, "")
    assert away.stderr.startswith("error: cannot reach the kalends server at http://")

    world.runtime.interrupt(world.asker.session_id)  # never launched: settles at once
    with nothing_written(world.api.store):
        settled = run(world.env(), *ASK, "--json")
    assert settled.returncode == 1
    assert json.loads(settled.stdout)["error"]["code"] == "passage-settled"


def test_ask_loads_neither_httpx_nor_the_database_nor_missions(world: World) -> None:
    """It runs inside passages, often from scripts: the standard library's HTTP only."""
    done = run_counting_heavy(world.env(), "ask", "Light?", "--confirm", "ok", "--no-wait")
    [asked] = world.open_questions()
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (
        0,
        [str(asked.id), "[]"],
        "",
    )


def test_a_launched_passage_asks_receives_the_interface_answer_and_confirms_it(
    world: World,
) -> None:
    """The runtime launches the passage (its own process, its own clean environment with
    its token and its server's address); it asks, waits, prints the answer to its log,
    acknowledges it and exits 0."""
    runtime = ProcessRuntime(
        world.runtime.root, clock=world.api.clock, extra_env={ENV_API_URL: world.base}
    )
    start = PassageStart(
        passage_id="psg_live",
        session_id="ses_live",
        message_id="msg_live",
        schedule_id=world.schedule,
        workspace=world.api.home.path,
        command=(kalends_executable(), "ask", "Ship it?", "--choice", "go=yes,later", "--json"),
    )
    runtime.admit(start)
    runtime.start(start)
    deadline = time.monotonic() + 30
    while not (asked := world.api.services.questions.open_for_passage("psg_live")):
        observed = runtime.observe("ses_live")
        assert not observed.settled, observed
        assert time.monotonic() < deadline, "the passage asked nothing"
        time.sleep(0.05)
    [question] = asked
    assert (str(question.schedule_id), question.workspace_id) == (
        world.schedule,
        world.api.home.id,
    )

    given = ui_answer(world.api, question, {"go": "later"})

    deadline = time.monotonic() + ANSWERED_WITHIN
    while not (observed := runtime.observe("ses_live")).settled:
        assert time.monotonic() < deadline, "the passage did not end"
        time.sleep(0.1)
    assert (observed.exit_status, observed.error) == (0, None), observed
    printed = json.loads(observed.log_tail)
    assert printed == {
        "questionId": str(question.id),
        "answer": {"go": "later"},
        "answeredVia": "ui",
        "attemptId": given.attempt_id,
    }
    bob = world.api.actors["bob"].id
    [mark] = world.api.services.questions.marks(bob, question.id)
    assert (mark.attempt_id, mark.state) == (given.attempt_id, "confirmed")
    assert world.api.services.questions.decision(bob, question.id).decided_by == "human"


# --------------------------------------------------------------------------- the hand-over

# A passage's command: note its process ID in the workspace, then become `kalends ask`
# (the same process), so that the test can stop and kill exactly the asking command.
EXEC_ASK = (
    "import os, sys\n"
    "with open('ask.pid.tmp', 'w') as f:\n"
    "    f.write(str(os.getpid()))\n"
    "os.replace('ask.pid.tmp', 'ask.pid')\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)
# Past every pending-fallback step of the scheduler: it looks at the schedule again.
NEXT_LOOK = timedelta(minutes=6)


class HoldingProxy(ThreadingHTTPServer):
    """A loopback proxy in front of the server: it forwards every request and its answer
    as they are, except a passage's acknowledgement (``POST …/received``), which it holds
    unanswered and never forwards. The passage has read its answer; its receipt never
    arrives."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__((HOST, 0), Forward)
        self.upstream = upstream
        self.held = threading.Event()
        self.release = threading.Event()

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}"


class Forward(BaseHTTPRequestHandler):
    server: HoldingProxy

    def do_GET(self) -> None:
        self.forward(None)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.endswith("/received"):
            self.server.held.set()
            self.server.release.wait(ANSWERED_WITHIN)
            self.close_connection = True
            return  # never forwarded, never answered
        self.forward(body)

    def forward(self, body: bytes | None) -> None:
        wanted = ("Authorization", "Content-Type", "Accept")
        headers = {name: value for name in wanted if (value := self.headers.get(name))}
        request = Request(
            self.server.upstream + self.path, data=body, method=self.command, headers=headers
        )
        try:
            with build_opener(ProxyHandler({})).open(request, timeout=30) as answer:
                status, data, kind = answer.status, answer.read(), answer.headers["Content-Type"]
        except HTTPError as refused:
            status, data, kind = refused.code, refused.read(), refused.headers["Content-Type"]
        self.send_response(status)
        self.send_header("Content-Type", kind or "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def proxy(world: World) -> Iterator[HoldingProxy]:
    server = HoldingProxy(world.base)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


@dataclass
class Scheduled:
    """A schedule whose passage runs `kalends ask`, launched by a scheduler round."""

    world: World
    scheduler: Scheduler
    runtime: ProcessRuntime
    schedule: str
    passage_id: str
    session_id: str

    def question(self) -> Question:
        deadline = time.monotonic() + 30
        questions = self.world.api.services.questions
        while not (found := questions.open_for_passage(self.passage_id)):
            assert not self.runtime.observe(self.session_id).settled, "the passage ended"
            assert time.monotonic() < deadline, "the passage asked nothing"
            time.sleep(0.05)
        [asked] = found
        return asked

    def pid(self) -> int:
        noted = Path(self.world.api.home.path) / "ask.pid"
        return int(noted.read_text())

    def settle(self) -> dict[str, Any]:
        """Waits for the passage's family to be gone; a scheduler round archives it."""
        deadline = time.monotonic() + 30
        while not self.runtime.observe(self.session_id).settled:
            assert time.monotonic() < deadline, "the passage did not end"
            time.sleep(0.05)
        self.world.api.clock.advance(NEXT_LOOK)
        self.scheduler.run_once()
        detail = self.world.api.services.schedules.detail(
            self.world.api.actors["bob"].id, self.schedule
        )
        assert detail["pending"] is None, detail["pending"]
        latest: dict[str, Any] = detail["latestResult"]
        assert latest["passageId"] == self.passage_id
        return latest


def scheduled(world: World, api_url: str) -> Scheduled:
    """A schedule of bob's whose passage runs `kalends ask` (against ``api_url``),
    played, and its first slot launched by a scheduler round."""
    api, bob = world.api, world.api.actors["bob"].id
    command = [sys.executable, "-c", EXEC_ASK, kalends_executable(), *ASK_ALL]
    config = daily_config(profile={"command": command, "env": {}, "cwd": "."})
    schedules = api.services.schedules
    receipt = schedules.create(bob, api.home.id, config, request_id="ask-create")
    schedule = str(receipt.mission_id)
    schedules.play(bob, schedule, request_id="ask-play", expected_revision=1)
    runtime = ProcessRuntime(world.runtime.root, clock=api.clock, extra_env={ENV_API_URL: api_url})
    scheduler = Scheduler(api.store, runtime, owner="ask-tests")
    scheduler.run_once()
    due = schedules.detail(bob, schedule)["nextDueAt"]
    api.clock.set(datetime.fromisoformat(due))
    assert scheduler.run_once().admitted == 1
    pending = schedules.detail(bob, schedule)["pending"]
    return Scheduled(
        world, scheduler, runtime, schedule, pending["passageId"], pending["sessionId"]
    )


def test_a_passage_killed_before_it_read_its_answer_loses_the_mark_at_settlement(
    world: World,
) -> None:
    """The crash point before the hand-over: the passage is stopped before the answer is
    recorded (so it cannot read it in between), then killed with SIGKILL. The scheduler
    settles it: the answer never reached it, so its pending mark is removed (the
    hand-over definitely failed); the answer stands, and it is no person's decision."""
    passage = scheduled(world, world.base)
    asked = passage.question()
    pid = passage.pid()
    os.kill(pid, signal.SIGSTOP)
    given = ui_answer(world.api, asked)
    bob = world.api.actors["bob"].id
    [mark] = world.api.services.questions.marks(bob, asked.id)
    assert (mark.attempt_id, mark.state, mark.delivered_at) == (given.attempt_id, "pending", None)
    os.kill(pid, signal.SIGKILL)

    latest = passage.settle()

    assert latest["outcome"] != "completed"
    assert world.api.services.questions.marks(bob, asked.id) == []
    stands = world.api.services.questions.get(bob, asked.id)
    assert (stands.state.value, stands.answer, stands.attempt_id) == (
        "answered",
        ANSWER,
        given.attempt_id,
    )
    decided = world.api.services.questions.decision(bob, asked.id)
    assert (decided.decided_by, decided.human_gate, decided.cause) == (
        None,
        "unmet",
        CAUSE_NEVER_DELIVERED,
    )
    # Nothing may answer it again to borrow the interface attempt.
    with pytest.raises(Conflict):
        world.api.services.questions.answer_from_api(bob, asked.id, ANSWER, stands.revision)


def test_a_passage_killed_after_reading_its_answer_leaves_the_mark_pending_for_good(
    world: World, proxy: HoldingProxy
) -> None:
    """The crash point inside the hand-over: the passage reads its answer (through a
    proxy that holds its acknowledgement), then is killed with SIGKILL. Whether it
    received the answer is uncertain: after settlement the mark is still pending, and
    pending never counts as a person's decision."""
    passage = scheduled(world, proxy.base)
    asked = passage.question()
    given = ui_answer(world.api, asked)
    assert proxy.held.wait(ANSWERED_WITHIN), "the passage never acknowledged its answer"
    os.kill(passage.pid(), signal.SIGKILL)

    passage.settle()

    bob = world.api.actors["bob"].id
    [mark] = world.api.services.questions.marks(bob, asked.id)
    assert (mark.attempt_id, mark.state) == (given.attempt_id, "pending")
    assert mark.delivered_at is not None and mark.confirmed_at is None
    decided = world.api.services.questions.decision(bob, asked.id)
    assert (decided.decided_by, decided.human_gate, decided.cause) == (
        None,
        "unmet",
        CAUSE_UNCONFIRMED,
    )


def test_a_session_signed_out_before_the_acknowledgement_leaves_the_answer_uncounted(
    world: World,
) -> None:
    """bob answers, then signs out before the passage acknowledges the answer: the
    command prints the answer and exits 0, saying on stderr that it is not counted as a
    person's decision; the mark stays pending."""
    process = start(world.env(), *ASK_ALL)
    try:
        asked = world.asked(process)
        process.send_signal(signal.SIGSTOP)  # it reads nothing until bob has signed out
        session = bob_session(world.api)
        given = ui_answer(world.api, asked, session=session)
        world.api.accounts.logout(session.secret)
        process.send_signal(signal.SIGCONT)
        out, err = process.communicate(timeout=ANSWERED_WITHIN)
    finally:
        process.kill()

    assert (process.returncode, out) == (0, "go=yes\nwhy=tests pass\nok=true\n")
    assert err == NOT_COUNTED + "\n"
    bob = world.api.actors["bob"].id
    [mark] = world.api.services.questions.marks(bob, asked.id)
    assert (mark.attempt_id, mark.state) == (given.attempt_id, "pending")
    assert mark.delivered_at is not None
    decided = world.api.services.questions.decision(bob, asked.id)
    assert (decided.decided_by, decided.cause) == (None, CAUSE_UNCONFIRMED)
