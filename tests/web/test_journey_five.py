"""Seed 002's acceptance journey 5, "Human gate", end to end: real passages (shell scripts
that ask with ``kalends ask``, wait, and report), a real ``kalends serve``, and Debian's
chromium driven through Playwright.

One schedule's passage asks four questions in turn, each with the same fields, and is
given the same answer four ways:

1. a person answers on the question page with a real click: the passage reads the answer
   and acknowledges it, the hand-over mark is confirmed and the page says a person
   decided (the human gate is met);
2. the same answer posted through the HTTP API is recorded with no mark: the gate stays
   unmet;
3. the same answer "clicked" by a script in the page (``element.click()``, an untrusted
   event) gets no one-use token: it is recorded through the interface with no mark, and
   the gate stays unmet;
4. the passage decides its own question with ``kalends decide``: the decision is the
   coordinator's, shown as the passage's own on the page, never as a person's.

A second schedule's passage reaches the server through a loopback proxy that holds its
acknowledgement (``POST …/received``): a real click answers, the passage reads the
answer, and is killed (SIGKILL to its process group) while its acknowledgement is held.
The hand-over is then uncertain: the mark stays pending after the passage settled and
was archived, the page says the hand-over is unconfirmed, and the gate stays unmet.

axe runs on the question page in each decided state (light and dark); the confirmed and
the pending pages are captured at 1280 and 390 px.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from playwright.sync_api import Page, Request, expect

from kalends.cli.decide import DECIDED_WORDS
from kalends.questions import (
    CAUSE_API,
    CAUSE_NO_MARK,
    HUMAN_DECISION_REQUIRED,
    AnswerVia,
    MarkState,
    Question,
    Questions,
    QuestionState,
)
from kalends.storage.migrate import open_store

from .browser_support import HOST, Server, check_axe_both, screenshot, shifted_clock

SEND = "Send the answer"
FORM_BUTTON = "form[data-question-form] button[type=submit]"
# The one answer every question gets, whichever way it is given.
ANSWER = {"go": "later", "ok": True}
ANSWER_LINES = "go=later ok=true"
FIELDS = '--choice go=yes,later --confirm ok --label "ok=I checked the disk"'
PROMPTS = {
    "clicked": "Deploy the mirror now?",
    "posted": "Rotate the signing keys?",
    "scripted": "Prune the caches?",
    "decided": "Restart the worker?",
    "held": "Switch the mirror over?",
}
HUMAN = "✓ Decided by a person in the kalends interface (confirmed)"
NOT_A_PERSON = "! Not a person's decision: "
# The decision's cause for an interface answer the passage read but never acknowledged.
UNCONFIRMED = re.compile(r"hand-over is unconfirmed \(pending\)")
# How long a passage takes to read an answer: `kalends ask` polls every 2 s.
READ_WITHIN = 20.0

# The first schedule's passage (its first argument: the kalends executable): asks three
# questions in turn, waiting for each answer; asks a fourth and decides it itself; then
# reports what it was given and which question it decided.
ASKING = f"""\
set -e
k=$1
clicked=$("$k" ask "{PROMPTS["clicked"]}" {FIELDS})
posted=$("$k" ask "{PROMPTS["posted"]}" {FIELDS})
scripted=$("$k" ask "{PROMPTS["scripted"]}" {FIELDS})
decided=$("$k" ask "{PROMPTS["decided"]}" {FIELDS} --no-wait)
"$k" decide "$decided" --answer '{json.dumps(ANSWER)}'
flat() {{ echo "$1" | tr '\\n' ' ' | sed 's/ $//'; }}
"$k" report completed --summary "clicked: $(flat "$clicked"); posted: $(flat "$posted"); \
scripted: $(flat "$scripted"); decided: $decided"
"""

# The second schedule's passage (its arguments: the kalends executable and the proxy's
# address): asks through the proxy and waits; it is killed before it can report.
HANDING_OVER = f"""\
set -e
held=$(KALENDS_API_URL="$2" "$1" ask "{PROMPTS["held"]}" {FIELDS})
"$1" report completed --summary "held: $held"
"""


# --------------------------------------------------------------------- the holding proxy


class HoldingProxy(ThreadingHTTPServer):
    """A loopback HTTP proxy in front of the server for one passage: it passes every
    request on and its answer back, except a passage's acknowledgement of an interface
    answer (``POST …/received``), which it holds unanswered and never passes on, until
    :meth:`release` (then it closes the connection without an answer)."""

    daemon_threads = True

    def __init__(self, upstream_port: int) -> None:
        super().__init__((HOST, 0), _ProxyHandler)
        self.upstream_port = upstream_port
        self.held = threading.Event()
        self.held_body: dict[str, Any] = {}
        self.released = threading.Event()
        self.passed: list[tuple[str, str]] = []

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}"

    def release(self) -> None:
        self.released.set()


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HoldingProxy

    def do_GET(self) -> None:
        self._pass_on(None)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.endswith("/received"):
            self.server.held_body = json.loads(body)
            self.server.held.set()
            self.server.released.wait(60.0)
            self.close_connection = True
            return
        self._pass_on(body)

    def _pass_on(self, body: bytes | None) -> None:
        self.server.passed.append((self.command, self.path))
        upstream = HTTPConnection(HOST, self.server.upstream_port, timeout=30.0)
        try:
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")
            }
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def holding_proxy(server: Server) -> Iterator[HoldingProxy]:
    proxy = HoldingProxy(server.port)
    thread = threading.Thread(target=proxy.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.release()
        proxy.shutdown()
        proxy.server_close()
        thread.join(10)


# ------------------------------------------------------------------------------ helpers


@contextmanager
def questions_of(server: Server) -> Iterator[Questions]:
    """The questions service on the server's own database, on its clock."""
    with shifted_clock(server.offset):
        store = open_store(server.database)
        try:
            yield Questions(store)
        finally:
            store.engine.dispose()


def wait_until(what: str, check: Callable[[], Any], within: float = 30.0) -> Any:
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen within {within} s"
        time.sleep(0.2)


def asked(server: Server, home: dict[str, Any], key: str) -> Question:
    """The open question of ``PROMPTS[key]``, once its passage asked it."""

    def find() -> Question | None:
        with questions_of(server) as service:
            found = service.list_open(server.owner, UUID(home["id"]))
        return next((q for q in found if q.prompt == PROMPTS[key]), None)

    question: Question = wait_until(f"the question {PROMPTS[key]!r}", find)
    return question


def marks_of(server: Server, question: UUID) -> list[MarkState]:
    with questions_of(server) as service:
        return [m.state for m in service.marks(server.owner, question)]


def shown(server: Server, question: UUID) -> dict[str, Any]:
    """What `kalends question show --json` prints: the question, its decision, its marks."""
    done = server.cli_here("question", "show", str(question), "--json", actor=server.owner)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def schedule(server: Server, title: str, command: str) -> str:
    """A schedule of ``home`` running ``command``, played and run now; its ID."""
    made = server.cli_here(
        "schedule", "create", "home", "--title", title, "--command", command,
        "--daily", "02:30", "--zone", "America/New_York", "--json",
        actor=server.owner,
    )  # fmt: skip
    assert made.exit_code == 0, (made.stdout, made.stderr)
    mission: str = json.loads(made.stdout)["missionId"]
    for action in ("play", "run-now"):
        done = server.cli_here("schedule", action, mission, actor=server.owner)
        assert done.exit_code == 0, (action, done.stdout, done.stderr)
    server.wake()
    return mission


def settled_result(server: Server, mission: str) -> dict[str, Any]:
    """The schedule's latest result once its passage has settled (nothing pending)."""

    def latest() -> dict[str, Any] | None:
        done = server.cli_here("schedule", "show", mission, "--json", actor=server.owner)
        assert done.exit_code == 0, (done.stdout, done.stderr)
        doc = json.loads(done.stdout)
        result: dict[str, Any] | None = doc.get("latestResult")
        return result if doc["pending"] is None and result else None

    found: dict[str, Any] = wait_until(f"the passage of {mission} to settle", latest)
    return found


def token_requests(page: Page) -> list[str]:
    """The answer-token requests ``page`` makes from now on (their URLs)."""
    seen: list[str] = []

    def note(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/token"):
            seen.append(request.url)

    page.on("request", note)
    return seen


def click_the_answer(page: Page, server: Server, question: Question) -> None:
    """The person answers on the question page: every input and the send button with
    real pointer clicks."""
    page.goto(f"{server.base_url}/questions/{question.id}")
    page.get_by_role("radio", name="later").check()
    page.get_by_role("checkbox", name="I checked the disk").check()
    page.get_by_role("button", name=SEND).click()
    expect(page.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()


def passage_record(server: Server, passage_id: str, name: str) -> Path:
    """A record of the passage's directory in the server's runtime directory."""
    for start in (server.runtime_dir / "passages").glob("*/start.json"):
        if json.loads(start.read_text()).get("passageId") == passage_id:
            return start.with_name(name)
    raise AssertionError(f"no start record of passage {passage_id}")


def passage_log(server: Server, passage_id: str) -> str:
    """What the passage's command wrote (``output.log``)."""
    return passage_record(server, passage_id, "output.log").read_text(errors="replace")


def passage_group(server: Server, passage_id: str) -> int:
    """The process group the runtime launched the passage's command in (``shim.json``)."""
    shim = passage_record(server, passage_id, "shim.json")
    pgid: int = json.loads(shim.read_text())["pgid"]
    return pgid


# ------------------------------------------------------------------------------ journey


def test_only_a_confirmed_interface_answer_is_a_persons_decision(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    minted = token_requests(page)
    workspace = server.directory / "workspaces" / "home"
    (workspace / "asking.sh").write_text(ASKING)
    (workspace / "handing-over.sh").write_text(HANDING_OVER)
    kalends = str(Path(sys.executable).with_name("kalends"))
    made = server.cli_here("token", "create", "journey five", "--json", actor=server.owner)
    assert made.exit_code == 0, (made.stdout, made.stderr)
    bearer = {"Authorization": f"Bearer {json.loads(made.stdout)['secret']}"}
    asking = schedule(server, "Mirror upkeep", f"sh asking.sh {kalends}")

    # 1. A real click: the passage reads the answer and acknowledges it; the mark is
    #    confirmed and the answer is a person's decision.
    clicked = asked(server, home, "clicked")
    click_the_answer(page, server, clicked)
    assert len(minted) == 1, minted
    wait_until(
        "the passage's acknowledgement",
        lambda: marks_of(server, clicked.id) == [MarkState.CONFIRMED],
        READ_WITHIN,
    )
    readout = shown(server, clicked.id)
    assert (readout["answeredVia"], readout["answer"]) == ("ui", ANSWER)
    assert (readout["decision"]["decidedBy"], readout["decision"]["humanGate"]) == ("human", "met")
    # Read afresh, as a person coming back to it would (no "Answer recorded." banner).
    page.goto(f"{server.base_url}/questions/{clicked.id}")
    expect(page.locator("#decision")).to_have_text(HUMAN)
    expect(page.locator("#mark")).to_contain_text("Hand-over to the passage: confirmed")
    check_axe_both(page, "question decided by a person")
    screenshot(page, "journey-five-confirmed")

    # 2. The same answer through the HTTP API: recorded, with no mark; the gate is unmet.
    posted = asked(server, home, "posted")
    with server.client() as api:
        reply = api.post(
            f"/api/questions/{posted.id}/answer",
            json={"answer": ANSWER, "expectedRevision": posted.revision},
            headers=bearer,
        )
    assert reply.status_code == 200, reply.text
    readout = shown(server, posted.id)
    assert (readout["answeredVia"], readout["answer"], readout["marks"]) == ("api", ANSWER, [])
    decision = readout["decision"]
    assert (decision["decidedBy"], decision["humanGate"], decision["cause"]) == (
        None,
        "unmet",
        CAUSE_API,
    )
    assert decision["refusal"] == HUMAN_DECISION_REQUIRED
    page.goto(f"{server.base_url}/questions/{posted.id}")
    expect(page.locator("#decision")).to_have_text(NOT_A_PERSON + CAUSE_API)
    expect(page.locator("#mark")).to_have_count(0)
    check_axe_both(page, "question answered through the API")

    # 3. The same answer sent by a script's element.click(): no token, no mark.
    scripted = asked(server, home, "scripted")
    page.goto(f"{server.base_url}/questions/{scripted.id}")
    page.get_by_role("radio", name="later").check()
    page.get_by_role("checkbox", name="I checked the disk").check()
    page.evaluate(f"document.querySelector('{FORM_BUTTON}').click()")
    expect(page.get_by_role("status").filter(has_text="Answer recorded.")).to_be_visible()
    assert len(minted) == 1, minted
    readout = shown(server, scripted.id)
    assert (readout["answeredVia"], readout["answer"], readout["marks"]) == ("ui", ANSWER, [])
    assert (readout["decision"]["decidedBy"], readout["decision"]["humanGate"]) == (None, "unmet")
    assert readout["decision"]["cause"] == CAUSE_NO_MARK
    expect(page.locator("#decision")).to_have_text(NOT_A_PERSON + CAUSE_NO_MARK)
    check_axe_both(page, "question answered by a script's click")

    # 4. The passage decides its fourth question itself, then reports what it was given.
    result = settled_result(server, asking)
    assert result["outcome"] == "completed", result
    given, _, decided_id = result["summary"].rpartition("; decided: ")
    assert given == (
        f"clicked: {ANSWER_LINES}; posted: {ANSWER_LINES}; scripted: {ANSWER_LINES}"
    ), result
    readout = shown(server, UUID(decided_id))
    assert (readout["prompt"], readout["answeredVia"], readout["answer"]) == (
        PROMPTS["decided"],
        "coordinator",
        ANSWER,
    )
    assert (readout["answeredBy"], readout["marks"]) == (None, [])
    assert (readout["decision"]["decidedBy"], readout["decision"]["humanGate"]) == (
        "coordinator",
        "unmet",
    )
    page.goto(f"{server.base_url}/questions/{decided_id}")
    expect(page.locator("#decision")).to_have_text(
        "■ Decided by the passage itself (the coordinator), not by a person"
    )
    expect(page.locator("main")).to_contain_text("through the passage itself")
    expect(page.locator("main")).not_to_contain_text("Decided by a person")
    expect(page.locator("#mark")).to_have_count(0)
    check_axe_both(page, "question decided by the passage")
    screenshot(page, "journey-five-coordinator")
    assert DECIDED_WORDS in passage_log(server, readout["passageId"])
    # Nothing the passage was given since the click became a person's decision.
    assert marks_of(server, clicked.id) == [MarkState.CONFIRMED]

    # 5. The hand-over killed mid-way: the passage reads the answer, its acknowledgement
    #    is held by the proxy, and the passage is killed. The mark stays pending.
    with holding_proxy(server) as proxy:
        handing = schedule(
            server, "Mirror switch-over", f"sh handing-over.sh {kalends} {proxy.base_url}"
        )
        held = asked(server, home, "held")
        click_the_answer(page, server, held)
        if not proxy.held.wait(READ_WITHIN):
            pytest.fail(f"the passage did not acknowledge within {READ_WITHIN} s")
        with questions_of(server) as service:
            answered = service.get(server.owner, held.id)
        # The passage read the answer: it acknowledges the attempt it was given.
        assert (answered.state, answered.answered_via) == (QuestionState.ANSWERED, AnswerVia.UI)
        assert proxy.held_body == {"attemptId": answered.attempt_id}
        assert ("GET", f"/api/passages/questions/{held.id}") in proxy.passed
        os.killpg(passage_group(server, held.passage_id), signal.SIGKILL)
        result = settled_result(server, handing)
    assert result["outcome"] == "failed", result
    # Settled and archived: the answer was read, so the mark stays pending for good.
    assert marks_of(server, held.id) == [MarkState.PENDING]
    readout = shown(server, held.id)
    assert (readout["answeredVia"], readout["answer"]) == ("ui", ANSWER)
    assert [m["state"] for m in readout["marks"]] == ["pending"]
    assert (readout["decision"]["decidedBy"], readout["decision"]["humanGate"]) == (None, "unmet")
    assert UNCONFIRMED.search(readout["decision"]["cause"]), readout["decision"]
    page.goto(f"{server.base_url}/questions/{held.id}")
    expect(page.locator("#decision")).to_contain_text(NOT_A_PERSON)
    expect(page.locator("#decision")).to_contain_text(UNCONFIRMED)
    expect(page.locator("#mark")).to_contain_text("the passage read the answer")
    expect(page.locator("#mark")).to_contain_text("has not acknowledged it (pending: unconfirmed")
    check_axe_both(page, "question whose hand-over is unconfirmed")
    screenshot(page, "journey-five-pending")
