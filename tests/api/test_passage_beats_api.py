"""``POST /api/passages/beats``: a passage's shim reports its start, heartbeats and end
with its node's token (issue 23 §3), recorded in ``passage_beats`` in one transaction;
refusals write nothing. On both databases, in-process over HTTP."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx2
import pytest
from sqlalchemy.engine import Connection

from api.conftest import ApiWorld
from kalends.missions import nodes, passage_beats
from kalends.missions.agents import FINAL_OUTPUT_BYTES
from kalends.missions.beat_service import DEFAULT_INTERRUPT_GRACE, MAX_BEAT_BODY_BYTES
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.passage_beats import BeatRow, BeatState
from kalends.missions.runtime.base import Observation, Report
from kalends.missions.runtime.beats import BEATS_PATH, beat_token
from kalends.storage.testing import nothing_written

JSON_TYPE = {"Content-Type": "application/json"}
STARTED = "2026-03-01T09:00:00+00:00"
ENDED = "2026-03-01T09:00:20+00:00"


@dataclass
class Node:
    node_id: str
    key: str

    def token(self, session: str) -> str:
        return beat_token(self.key, session)


@dataclass
class Beats:
    """Two registered nodes, A and B; A admitted ``ses_a``, B admitted ``ses_b``."""

    api: ApiWorld
    a: Node
    b: Node
    schedule_id: UUID

    def post(self, body: Any) -> httpx2.Response:
        # (JSON escapes, as the shim sends: a body may then carry a lone surrogate)
        content = json.dumps(body).encode()
        return self.api.client.post(BEATS_PATH, content=content, headers=JSON_TYPE)

    def row(self, session: str) -> BeatRow | None:
        with self.api.store.transaction(write=False) as conn:
            return passage_beats.read_beat(conn, session)

    def admit(self, node: Node, session: str) -> None:
        with self.api.store.transaction() as conn:
            assert passage_beats.record_admitted(
                conn,
                session_id=session,
                passage_id=f"psg_{session}",
                message_id=f"msg_{session}",
                schedule_id=self.schedule_id,
                node_id=node.node_id,
                now=self.api.clock.now(),
            )


def register(api: ApiWorld, root: Path) -> Node:
    now = api.clock.now()
    identity = nodes.node_identity(root, now)
    with api.store.transaction() as conn:
        key = nodes.register_node(conn, identity, name="host", runtime_dir=str(root), now=now)
    return Node(node_id=identity.node_id, key=key)


@pytest.fixture
def beats(api: ApiWorld) -> Beats:
    world = Beats(
        api=api,
        a=register(api, api.root / "node-a"),
        b=register(api, api.root / "node-b"),
        schedule_id=uuid4(),
    )
    world.admit(world.a, "ses_a")
    world.admit(world.b, "ses_b")
    return world


RUNNING: dict[str, Any] = {
    "launched": True,
    "running": True,
    "exited": False,
    "exitStatus": None,
    "signal": None,
    "descendants": False,
    "interrupted": False,
    "error": None,
    "startedAt": STARTED,
    "endedAt": None,
    "logTail": "working…\n",
    "report": None,
}
EXITED: dict[str, Any] = {
    **RUNNING,
    "running": False,
    "exited": True,
    "exitStatus": 0,
    "endedAt": ENDED,
    "logTail": "working…\ndone\n",
}


def beat(
    node: Node, session: str, event: str = "beat", observation: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "version": 1,
        "node": node.node_id,
        "session": session,
        "token": node.token(session),
        "event": event,
        "observation": copy.deepcopy(RUNNING if observation is None else observation),
    }


def error(reply: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert body["code"] == code, body
    return body


QUIET = {"interrupt": False, "grace": DEFAULT_INTERRUPT_GRACE}


class TestRecorded:
    def test_a_start_a_heartbeat_and_an_exit_are_recorded_as_the_shim_reported_them(
        self, beats: Beats
    ) -> None:
        clock = beats.api.clock
        reply = beats.post(beat(beats.a, "ses_a", "start"))
        assert reply.status_code == 200, reply.text
        assert reply.json() == QUIET
        row = beats.row("ses_a")
        assert row is not None
        assert (row.state, row.source, row.node_id) == (BeatState.ADMITTED, "shim", beats.a.node_id)
        assert row.beat_at == clock.now()
        assert row.observation == Observation(
            launched=True,
            running=True,
            exited=False,
            started_at=datetime.fromisoformat(STARTED),
            log_tail="working…\n",
        )
        assert not row.observation.settled

        clock.advance(timedelta(seconds=15))
        assert beats.post(beat(beats.a, "ses_a")).json() == QUIET
        row = beats.row("ses_a")
        assert row is not None and row.beat_at == clock.now()

        clock.advance(timedelta(seconds=5))
        reply = beats.post(beat(beats.a, "ses_a", "exit", EXITED))
        assert reply.status_code == 200, reply.text
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None
        assert row.observation.settled and row.observation.exit_status == 0
        assert row.observation.ended_at == datetime.fromisoformat(ENDED)
        assert row.observation.final_message is None  # no agent
        assert row.beat_at == clock.now()
        # B's passage was not touched.
        other = beats.row("ses_b")
        assert other is not None and other.observation is None and other.source is None

    def test_a_report_a_signal_and_the_other_fields_round_trip(self, beats: Beats) -> None:
        killed = {
            **EXITED,
            "exitStatus": None,
            "signal": 9,
            "interrupted": True,
            "error": None,
            "report": {"outcome": "failed", "summary": "Tests broke: é", "at": ENDED},
        }
        assert beats.post(beat(beats.a, "ses_a", "exit", killed)).status_code == 200
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None
        found = row.observation
        assert (found.signal, found.exit_status, found.interrupted) == (9, None, True)
        assert found.report == Report(
            outcome="failed", summary="Tests broke: é", at=datetime.fromisoformat(ENDED)
        )

    def test_the_end_of_a_command_that_could_not_run_is_recorded_with_its_reason(
        self, beats: Beats
    ) -> None:
        # What the shim records when the profile's program is missing (exit 127).
        reason = "cannot run 'kalends-no-such-program-anywhere': No such file or directory"
        missing = {**EXITED, "launched": False, "exitStatus": 127, "error": reason}
        assert beats.post(beat(beats.a, "ses_a", "exit", missing)).status_code == 200
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None
        assert (row.observation.exit_status, row.observation.error) == (127, reason)

    def test_the_beats_of_processes_left_after_the_command_keep_it_unsettled(
        self, beats: Beats
    ) -> None:
        lingering = {**EXITED, "descendants": True}
        assert beats.post(beat(beats.a, "ses_a", "beat", lingering)).status_code == 200
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None
        assert row.observation.exited and not row.observation.settled

    def test_a_late_beat_does_not_undo_a_recorded_end(self, beats: Beats) -> None:
        assert beats.post(beat(beats.a, "ses_a", "exit", EXITED)).status_code == 200
        beats.api.clock.advance(timedelta(seconds=1))
        late = beats.post(beat(beats.a, "ses_a", "beat", RUNNING))
        assert late.status_code == 200, late.text
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None and row.observation.settled

    def test_the_reply_asks_for_an_interrupt_once_a_scheduler_requested_it(
        self, beats: Beats
    ) -> None:
        assert beats.post(beat(beats.a, "ses_a", "start")).json() == QUIET
        with beats.api.store.transaction() as conn:
            passage_beats.request_interrupt(conn, "ses_a", beats.api.clock.now())
        reply = beats.post(beat(beats.a, "ses_a"))
        assert reply.json() == {"interrupt": True, "grace": DEFAULT_INTERRUPT_GRACE}
        # Only that passage's shim is told.
        assert beats.post(beat(beats.b, "ses_b")).json() == QUIET


# --- an agent preset's final message ------------------------------------------------------------

CODEX_OUTPUT = "thinking…\n\nI summarised 12 commits.\nAll tests pass.\n"
CLAUDE_OUTPUT = 'noise\n{"type":"result","result":"Summarised 12 commits.","is_error":false}\n'


def final_beat(
    beats: Beats,
    *,
    agent: str | None,
    output: str,
    changes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body = beat(beats.a, "ses_a", "exit", {**EXITED, **(changes or {})})
    body["agent"] = agent
    body["finalOutput"] = output
    return body


class TestFinalMessage:
    @pytest.mark.parametrize(
        ("agent", "output", "expected"),
        [
            # The last paragraph, for an agent read by its last lines.
            ("codex", CODEX_OUTPUT, "I summarised 12 commits.\nAll tests pass."),
            # The last JSON result, for one that prints JSON.
            ("claude", CLAUDE_OUTPUT, "Summarised 12 commits."),
            # A plain shell command has no final message.
            ("shell", CODEX_OUTPUT, None),
            # Nor has a command of no agent, or of one this kalends does not know.
            (None, CODEX_OUTPUT, None),
            ("nobody", CODEX_OUTPUT, None),
        ],
    )
    def test_an_exit_of_status_0_without_a_report_carries_the_agents_final_message(
        self, beats: Beats, agent: str | None, output: str, expected: str | None
    ) -> None:
        reply = beats.post(final_beat(beats, agent=agent, output=output))
        assert reply.status_code == 200, reply.text
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None
        assert row.observation.final_message == expected

    @pytest.mark.parametrize(
        "changes",
        [
            # A failed command.
            {"exitStatus": 1},
            # A passage that reported: its report is its message.
            {"report": {"outcome": "completed", "summary": "Mine.", "at": ENDED}},
            # An interrupted one.
            {"interrupted": True},
        ],
    )
    def test_no_final_message_is_read_otherwise(
        self, beats: Beats, changes: dict[str, Any]
    ) -> None:
        reply = beats.post(final_beat(beats, agent="codex", output=CODEX_OUTPUT, changes=changes))
        assert reply.status_code == 200, reply.text
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None
        assert row.observation.exited and row.observation.final_message is None

    def test_the_final_message_keeps_within_a_summarys_bound(self, beats: Beats) -> None:
        output = "x" * (FINAL_OUTPUT_BYTES - 1) + "\n"
        reply = beats.post(final_beat(beats, agent="codex", output=output))
        assert reply.status_code == 200, reply.text
        row = beats.row("ses_a")
        assert row is not None and row.observation is not None
        found = row.observation.final_message
        assert found is not None and 0 < len(found.encode()) <= MAX_SUMMARY_BYTES


# --- refusals -------------------------------------------------------------------------------


def test_a_wrong_token_an_unknown_node_and_a_forgotten_node_are_refused(beats: Beats) -> None:
    good = beat(beats.a, "ses_a")
    unknown = "0" * 32
    bodies = [
        {**good, "token": beats.a.token("ses_b")},  # A's token of another session
        {**good, "token": beats.b.token("ses_a")},  # the session under B's key
        {**good, "token": "f" * 64},
        {**good, "token": good["token"][:-1]},
        {**good, "token": good["token"].upper()},
        {**good, "node": unknown},
        {**good, "node": unknown, "token": beat_token("00" * 32, "ses_a")},
        {**good, "node": beats.b.node_id},  # A's token presented as B's
    ]
    with nothing_written(beats.api.store):
        for body in bodies:
            error(beats.post(body), 401, "invalid-beat-token")
    # A forgotten node's shims are refused until it returns.
    clock = beats.api.clock
    clock.advance(nodes.SILENT_AFTER + timedelta(seconds=1))
    with beats.api.store.transaction() as conn:
        nodes.forget_node(conn, beats.a.node_id, clock.now())
    with nothing_written(beats.api.store):
        error(beats.post(good), 401, "invalid-beat-token")
    assert (beats.row("ses_a") or pytest.fail("no row")).observation is None


def test_a_session_not_admitted_on_the_node_is_not_found(beats: Beats) -> None:
    def ask(conn: Connection, session: str) -> None:
        passage_beats.ask(
            conn,
            session_id=session,
            passage_id=f"psg_{session}",
            message_id=f"msg_{session}",
            schedule_id=beats.schedule_id,
            node_id=beats.a.node_id,
            now=beats.api.clock.now(),
        )

    with beats.api.store.transaction() as conn:
        # Asked of A and answered absent (A does not hold it); then another asked of A.
        ask(conn, "ses_absent")
        passage_beats.answer_asked(
            conn, beats.a.node_id, lambda _s, _m: False, beats.api.clock.now()
        )
        ask(conn, "ses_asked")
    states = {s: (beats.row(s) or pytest.fail(s)).state for s in ("ses_absent", "ses_asked")}
    assert states == {"ses_absent": BeatState.ABSENT, "ses_asked": BeatState.ASKED}
    with nothing_written(beats.api.store):
        for session in ("ses_b", "ses_absent", "ses_asked", "ses_none"):
            # The token is right (A signs for the session); the row is not A's admission.
            error(beats.post(beat(beats.a, session)), 404, "passage-not-admitted")


def _without(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda body: body.pop(key)


def _observation(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda body: body["observation"].update(changes)


def _set(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda body: body.update(changes)


MALFORMED: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    # (what, how the body is spoiled, the field named)
    ("no version", _without("version"), "version"),
    ("a later version", _set(version=2), "version"),
    ("no node", _without("node"), "node"),
    ("a node that is not text", _set(node=42), "node"),
    ("a node too long", _set(node="a" * 33), "node"),
    ("an empty session", _set(session=""), "session"),
    ("no token", _without("token"), "token"),
    ("an unknown event", _set(event="pause"), "event"),
    ("no observation", _without("observation"), "observation"),
    ("an observation that is a list", _set(observation=[]), "observation"),
    ("a flag as text", _observation(running="true"), "observation.running"),
    ("a flag as a number", _observation(launched=1), "observation.launched"),
    ("a status as text", _observation(exitStatus="0"), "observation.exitStatus"),
    ("a status past 255", _observation(exitStatus=256), "observation.exitStatus"),
    ("a status as a flag", _observation(exitStatus=True), "observation.exitStatus"),
    ("signal 0", _observation(signal=0), "observation.signal"),
    ("a naive start", _observation(startedAt="2026-03-01T09:00:00"), "observation.startedAt"),
    ("a start that is no time", _observation(startedAt="soon"), "observation.startedAt"),
    ("an unknown field", _observation(pid=7), "observation.pid"),
    ("an unknown body field", _set(extra=1), "extra"),
    ("a log tail too long", _observation(logTail="x" * 4097), "observation.logTail"),
    (
        "a report of no outcome",
        _observation(report={"outcome": "done", "summary": "s", "at": ENDED}),
        "observation.report.outcome",
    ),
    (
        "a summary over its bytes",
        _observation(report={"outcome": "failed", "summary": "é" * 3000, "at": ENDED}),
        "observation.report.summary",
    ),
    ("a lone surrogate", _observation(logTail="\ud800"), "observation.logTail"),
    ("a final output with a beat", _set(finalOutput="out"), "finalOutput"),
    ("a final output too long", _set(finalOutput="x" * (FINAL_OUTPUT_BYTES + 1)), "finalOutput"),
    ("an agent too long", _set(agent="a" * 65), "agent"),
    ("an error too long", _observation(error="e" * 1025), "observation.error"),
]


def test_a_malformed_beat_is_refused_naming_its_field(beats: Beats) -> None:
    # (one request per case on one database: the cases share the fixture's setup)
    failures: list[str] = []
    for what, spoil, field in MALFORMED:
        body = beat(beats.a, "ses_a")
        spoil(body)
        with nothing_written(beats.api.store):
            reply = beats.post(body)
        found = reply.json()
        if (reply.status_code, found.get("code")) != (422, "invalid-input"):
            failures.append(f"{what}: {reply.status_code} {reply.text}")
        elif found["details"].get("field") != field:
            failures.append(f"{what}: not about {field}: {reply.text}")
    assert failures == [], "\n".join(failures)


def test_an_exit_that_has_not_exited_is_refused(beats: Beats) -> None:
    with nothing_written(beats.api.store):
        refused = error(beats.post(beat(beats.a, "ses_a", "exit")), 422, "invalid-input")
    assert refused["details"]["field"] == "observation.exited"


NOT_A_BEAT = [
    b"",  # no body
    b"{not json",
    b"[1, 2]",
    b'"a beat"',
    b"null",
    "\xe9t\xe9".encode("latin-1"),  # not UTF-8
    b"[" * 100 + b"]" * 100,  # nested past every body's bound
]


def test_a_body_that_is_no_beat_object_is_refused(beats: Beats) -> None:
    with nothing_written(beats.api.store):
        for content in NOT_A_BEAT:
            reply = beats.api.client.post(BEATS_PATH, content=content, headers=JSON_TYPE)
            assert (reply.status_code, reply.json()["code"]) == (422, "invalid-input"), content


@pytest.mark.parametrize(
    "size",
    [
        MAX_BEAT_BODY_BYTES + 1,  # this route's bound
        2 * 1024 * 1024,  # past every body's bound
    ],
)
def test_a_beat_over_its_size_is_refused(beats: Beats, size: int) -> None:
    body = beat(beats.a, "ses_a")
    padding = size - len(json.dumps(body | {"agent": ""}).encode())
    body["agent"] = " " * padding  # too long anyway: the size is refused first
    content = json.dumps(body).encode()
    assert len(content) == size
    with nothing_written(beats.api.store):
        reply = beats.api.client.post(BEATS_PATH, content=content, headers=JSON_TYPE)
    error(reply, 413, "too-large")
    # Without its length declared, streamed: refused alike.
    with nothing_written(beats.api.store):
        streamed = beats.api.client.post(
            BEATS_PATH,
            content=iter([content[: size // 2], content[size // 2 :]]),
            headers=JSON_TYPE,
        )
    error(streamed, 413, "too-large")


def test_a_beat_at_its_size_is_taken(beats: Beats) -> None:
    body = final_beat(beats, agent="codex", output="")
    body["finalOutput"] = "é" * (FINAL_OUTPUT_BYTES // 2) + "\n"  # 2 bytes each: 256 KiB
    content = json.dumps(body, ensure_ascii=False).encode()
    assert MAX_BEAT_BODY_BYTES // 2 < len(content) <= MAX_BEAT_BODY_BYTES
    reply = beats.api.client.post(BEATS_PATH, content=content, headers=JSON_TYPE)
    assert reply.status_code == 200, reply.text


def test_a_persons_credentials_do_not_stand_for_a_beat_token(beats: Beats) -> None:
    body = {**beat(beats.a, "ses_a"), "token": "x"}
    with nothing_written(beats.api.store):
        reply = beats.api.client.post(BEATS_PATH, json=body, headers=beats.api.headers("alice"))
    error(reply, 401, "invalid-beat-token")


def test_the_openapi_document_describes_the_beats_route(beats: Beats) -> None:
    spec = beats.api.client.get("/openapi.json").json()
    operation = spec["paths"][BEATS_PATH]["post"]
    assert operation["summary"]
    assert {"200", "401", "404", "413", "422"} <= set(operation["responses"])
    assert "security" not in operation  # the body carries the token
    schemas = spec["components"]["schemas"]
    assert schemas["BeatBody"]["properties"]["event"]["enum"] == ["start", "beat", "exit"]
