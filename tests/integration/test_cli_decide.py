"""`kalends decide` as a passage runs it: a real ``kalends`` process with only the
passage's token and its server's address in its environment, against a real HTTP server
(the API of the test's world, served on a loopback port) on SQLite and (when reachable)
PostgreSQL.

The passage decides its own open question: the answer is recorded as the coordinator's,
with no mark, and the decision readout says ``coordinator``, never a person. Bad input
(no token or server, a malformed question ID or answer, an answer the fields refuse)
exits 2 and writes nothing; another passage's question, a question no longer open, a
settled passage and an unreachable server exit 1 and write nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from passage_world import HOST, free_port, passage_env, run, run_counting_heavy, served_world

from api.conftest import ApiWorld
from api.questions_support import ANSWER, Asker, admit, ask
from kalends.cli.decide import DECIDED_WORDS
from kalends.clock import FakeClock
from kalends.missions.runtime.process import ProcessRuntime
from kalends.questions import CAUSE_COORDINATOR, AnswerVia, Question, QuestionState
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store

DECIDED = {"go": "later", "why": "no one answered", "ok": False}


class World:
    """The API served on a loopback port, and two admitted passages of one schedule: the
    deciding passage ``a`` and another, ``b``."""

    def __init__(
        self, api: ApiWorld, base: str, runtime: ProcessRuntime, asker: Asker, other: Asker
    ) -> None:
        self.api, self.base, self.runtime = api, base, runtime
        self.asker, self.other = asker, other

    def env(self, **extra: str) -> dict[str, str]:
        return passage_env(self.base, self.asker.token, **extra)

    def read(self, question: Question) -> Question:
        return self.api.services.questions.get(self.api.actors["bob"].id, question.id)


@pytest.fixture
def world(store: Store, fake_clock: FakeClock, tmp_path: Path) -> Iterator[World]:
    with served_world(store, fake_clock, tmp_path) as (api, base, runtime, schedule):
        asker, other = admit(runtime, api, "a", schedule), admit(runtime, api, "b", schedule)
        yield World(api, base, runtime, asker, other)


def decide(world: World, question: object, answer: object = DECIDED, *more: str, **env: str) -> Any:
    raw = answer if isinstance(answer, str) else json.dumps(answer)
    return run(world.env(**env), "decide", str(question), "--answer", raw, *more)


class TestDecided:
    def test_the_answer_is_the_coordinators_with_no_mark_and_says_so(self, world: World) -> None:
        asked = ask(world.api, world.asker)
        done = decide(world, asked.id)

        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout == (
            f"question {asked.id}: {DECIDED_WORDS}\ngo=later\nwhy=no one answered\nok=false\n"
        )
        found = world.read(asked)
        assert (found.state, found.answered_via, found.answer, found.answered_by) == (
            QuestionState.ANSWERED,
            AnswerVia.COORDINATOR,
            DECIDED,
            None,
        )
        bob = world.api.actors["bob"].id
        assert world.api.services.questions.marks(bob, asked.id) == []
        readout = world.api.services.questions.decision(bob, asked.id)
        assert (readout.decided_by, readout.human_gate, readout.cause) == (
            "coordinator",
            "unmet",
            CAUSE_COORDINATOR,
        )
        # The people's read of it says the same.
        shown = world.api.client.get(f"/api/questions/{asked.id}", headers=world.api.headers("bob"))
        assert shown.json()["decision"]["decidedBy"] == "coordinator", shown.text

    def test_json_prints_the_question_as_recorded(self, world: World) -> None:
        asked = ask(world.api, world.asker)
        done = decide(world, f"  {str(asked.id).upper()} ", ANSWER, "--json")

        assert (done.returncode, done.stderr) == (0, "")
        printed = json.loads(done.stdout)
        assert printed == {**world.read(asked).to_json(), "attemptId": None}
        assert (printed["answeredVia"], printed["answer"]) == ("coordinator", ANSWER)


def test_a_question_the_passage_asked_with_ask_is_decided_by_its_printed_id(
    world: World,
) -> None:
    """What a passage script does: `ask --no-wait` prints the ID, `decide` settles it."""
    asked = run(world.env(), "ask", "Restart the worker?", "--confirm", "ok", "--no-wait")
    assert asked.returncode == 0, asked.stderr
    done = run(world.env(), "decide", asked.stdout.strip(), "--answer", '{"ok": true}')
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[1:] == ["ok=true"]
    bob = world.api.actors["bob"].id
    readout = world.api.services.questions.decision(bob, asked.stdout.strip())
    assert readout.decided_by == "coordinator"


@pytest.mark.parametrize(
    ("question", "answer", "extra", "message"),
    [
        # The passage's environment.
        (None, DECIDED, {"KALENDS_PASSAGE_TOKEN": ""}, "no passage token: run `kalends decide`"),
        (None, DECIDED, {"KALENDS_API_URL": ""}, "no server: `kalends decide` needs the kalends"),
        (None, DECIDED, {"KALENDS_API_URL": "ftp://x"}, "KALENDS_API_URL: an http:// or https://"),
        (None, DECIDED, {"KALENDS_PASSAGE_TOKEN": "forged.token"}, "(401 invalid-passage-token)"),
        # The question's ID.
        ("not-a-question", DECIDED, {}, "question: not a question ID: 'not-a-question'"),
        ("", DECIDED, {}, "question: not a question ID: ''"),
        # The answer: no JSON, no object.
        (None, '{"go": "later"', {}, "--answer: not JSON:"),
        (None, "", {}, "--answer: not JSON:"),
        (None, '["later"]', {}, "--answer: expected a JSON object"),
        (None, "null", {}, "--answer: expected a JSON object"),
        # The answer does not fit the fields: the server names the field.
        (None, {**DECIDED, "go": "never"}, {}, "(422 invalid-input): answer.go"),
        (None, {"go": "later", "ok": True}, {}, "(422 invalid-input): answer.why"),
        (None, {**DECIDED, "ok": "yes"}, {}, "(422 invalid-input): answer.ok"),
        (None, {**DECIDED, "why": "x" * 21}, {}, "(422 invalid-input): answer.why"),
        (None, {**DECIDED, "extra": "1"}, {}, "answer.extra: the question has no such field"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    world: World, question: str | None, answer: object, extra: dict[str, str], message: str
) -> None:
    asked = ask(world.api, world.asker)
    with nothing_written(world.api.store):
        done = decide(world, asked.id if question is None else question, answer, **extra)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr, done.stderr
    assert world.read(asked).state is QuestionState.OPEN


def test_a_missing_answer_option_is_a_usage_error(world: World) -> None:
    asked = ask(world.api, world.asker)
    with nothing_written(world.api.store):
        done = run(world.env(), "decide", str(asked.id))
    assert (done.returncode, done.stdout) == (2, "")
    assert "Missing option '--answer'" in done.stderr


def test_another_passages_question_or_none_is_not_found_exit_1(world: World) -> None:
    theirs = ask(world.api, world.other)
    with nothing_written(world.api.store):
        done = decide(world, theirs.id, DECIDED, "--json")
    assert (done.returncode, json.loads(done.stdout)["error"]["code"]) == (1, "not-found")
    assert "(404 not-found)" in done.stderr, done.stderr
    assert world.read(theirs).state is QuestionState.OPEN

    with nothing_written(world.api.store):
        nowhere = decide(world, uuid.uuid4())
    assert (nowhere.returncode, nowhere.stdout) == (1, "")
    assert "(404 not-found)" in nowhere.stderr, nowhere.stderr


def test_a_question_no_longer_open_is_refused_exit_1(world: World) -> None:
    bob = world.api.actors["bob"].id
    answered = ask(world.api, world.asker)
    world.api.services.questions.answer_from_api(bob, answered.id, ANSWER, 1)
    before = world.read(answered)
    with nothing_written(world.api.store):
        done = decide(world, answered.id)
    assert (done.returncode, done.stdout) == (1, "")
    assert "(409 conflict)" in done.stderr, done.stderr
    after = world.read(answered)
    assert (after.answered_via, after.answer, after.revision) == (
        AnswerVia.API,
        ANSWER,
        before.revision,
    )
    readout = world.api.services.questions.decision(bob, answered.id)
    assert readout.decided_by is None

    # Decided once, it cannot be decided again.
    decided = ask(world.api, world.asker)
    assert decide(world, decided.id).returncode == 0
    with nothing_written(world.api.store):
        again = decide(world, decided.id, ANSWER)
    assert again.returncode == 1 and "(409 conflict)" in again.stderr, again.stderr
    assert world.read(decided).answer == DECIDED


def test_a_settled_passage_and_an_unreachable_server_exit_1(world: World) -> None:
    asked = ask(world.api, world.asker)
    with nothing_written(world.api.store):
        away = decide(world, asked.id, KALENDS_API_URL=f"http://{HOST}:{free_port()}")
    assert (away.returncode, away.stdout) == (1, "")
    assert away.stderr.startswith("error: cannot reach the kalends server at http://")

    world.runtime.interrupt(world.asker.session_id)  # never launched: settles at once
    with nothing_written(world.api.store):
        settled = decide(world, asked.id, DECIDED, "--json")
    assert settled.returncode == 1
    assert json.loads(settled.stdout)["error"]["code"] == "passage-settled"


def test_decide_loads_neither_httpx_nor_the_database_nor_missions(world: World) -> None:
    """It runs inside passages, often from scripts: the standard library's HTTP only."""
    asked = ask(world.api, world.asker)
    done = run_counting_heavy(world.env(), "decide", str(asked.id), "--answer", json.dumps(DECIDED))
    assert (done.returncode, done.stdout.splitlines()[-1], done.stderr) == (0, "[]", "")
    assert world.read(asked).answered_via is AnswerVia.COORDINATOR
