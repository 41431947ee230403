"""The shim's heartbeats over HTTP (issue 23 §3): real passages of the process runtime
report their start, beats and end to a real loopback receiver; the local records stay
the truth whatever the receiver does."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kalends.errors import InvalidInput
from kalends.missions import agents
from kalends.missions.beat_service import MAX_BEAT_BODY_BYTES
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.beats import (
    BEAT_FILE,
    BEATS_PATH,
    BeatTarget,
    beat_token,
    new_beat_key,
)
from kalends.missions.runtime.exchange import MAX_SPOOL_BYTES
from kalends.missions.runtime.observation import LOG_TAIL_BYTES
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.runtime.reports import OUTCOMES
from runtime.support import GRACE, Lab, kill_families, python, wait_until

HOST = "127.0.0.1"
EVERY = 0.2
NODE = "0123456789abcdef0123456789abcdef"
KEY = new_beat_key()
OBSERVATION_FIELDS = {
    "launched",
    "running",
    "exited",
    "exitStatus",
    "signal",
    "descendants",
    "interrupted",
    "error",
    "startedAt",
    "endedAt",
    "logTail",
    "report",
}
CALM = b'{"interrupt": false, "grace": 10.0}'


@dataclass(frozen=True, slots=True)
class Posted:
    """One POST the receiver took: when (epoch seconds), where, and its JSON body."""

    at: float
    path: str
    body: dict[str, Any]

    @property
    def event(self) -> str:
        return str(self.body["event"])

    @property
    def observation(self) -> dict[str, Any]:
        obs = self.body["observation"]
        assert isinstance(obs, dict)
        return obs


@dataclass
class Receiver:
    """A loopback HTTP server that records every POST and answers ``status`` with
    ``reply`` after ``delay`` seconds; all three may change while it runs."""

    port: int = 0
    status: int = 200
    reply: bytes = CALM
    delay: float = 0.0
    posts: list[Posted] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def taken(self) -> list[Posted]:
        with self.lock:
            return list(self.posts)

    def events(self) -> list[str]:
        return [p.event for p in self.taken()]

    def first(self, event: str) -> Posted:
        found = wait_until(
            lambda: [p for p in self.taken() if p.event == event], what=f"a {event} event"
        )
        return found[0]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with receiver.lock:
                receiver.posts.append(Posted(time.time(), self.path, json.loads(raw)))
                status, reply, delay = receiver.status, receiver.reply, receiver.delay
            if delay:
                time.sleep(delay)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            """Keeps the test output quiet."""

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A shim that gave up waiting is no error of the test's."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    taking = Receiver()
    server = _QuietServer((HOST, 0), _handler(taking))
    taking.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="beat-receiver"
    )
    thread.start()
    try:
        yield taking
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _lab(tmp_path: Path, beats: BeatTarget | None) -> Lab:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return Lab(ProcessRuntime(tmp_path / "runtime", grace=GRACE, beats=beats), workspace, tmp_path)


@pytest.fixture
def lab(tmp_path: Path, receiver: Receiver) -> Iterator[Lab]:
    """A process runtime whose shims beat to ``receiver`` every :data:`EVERY` seconds."""
    try:
        yield _lab(tmp_path, BeatTarget(url=receiver.url, node_id=NODE, key=KEY, every=EVERY))
    finally:
        kill_families(tmp_path / "runtime")


@pytest.fixture
def silent_lab(tmp_path: Path) -> Iterator[Lab]:
    """A process runtime without heartbeats."""
    try:
        yield _lab(tmp_path, None)
    finally:
        kill_families(tmp_path / "runtime")


def shim_ended(lab: Lab, session: str = "ses_1") -> None:
    """Waits until the passage's shim has exited (it sent everything it ever will)."""
    shim = records.read_json(lab.dir(session) / records.SHIM)
    record = shim or records.read_json(lab.dir(session) / records.LAUNCH_LOCK)
    assert record is not None
    keys = ("shimPid", "shimStartTicks") if shim else ("pid", "startTicks")
    wait_until(lambda: not records.is_alive(record, *keys), what="the shim to exit")


def log_of(lab: Lab, session: str = "ses_1") -> str:
    return (lab.dir(session) / records.OUTPUT).read_text()


def record(lab: Lab, name: str, session: str = "ses_1") -> dict[str, Any]:
    doc = records.read_json(lab.dir(session) / name)
    assert doc is not None, name
    return doc


class TestAPassageReports:
    def test_start_then_beats_then_the_exit_with_its_status(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        lab.runtime.start(lab.passage("sh", "-c", "echo working; sleep 1; exit 3"))

        ended = receiver.first("exit")
        shim_ended(lab)

        posts = receiver.taken()
        events = [p.event for p in posts]
        assert events[0] == "start" and events[-1] == "exit"
        assert events.count("start") == events.count("exit") == 1
        assert events.count("beat") >= 2  # (a second of running, a beat every 0.2 s)
        for post in posts:
            assert post.path == BEATS_PATH
            assert (post.body["version"], post.body["node"], post.body["session"]) == (
                1,
                NODE,
                "ses_1",
            )
            assert post.body["token"] == beat_token(KEY, "ses_1")
            assert set(post.observation) == OBSERVATION_FIELDS
            assert "finalOutput" not in post.body
            assert ("agent" in post.body) == (post.event == "exit")
        started = posts[0].observation
        assert (started["launched"], started["running"], started["exited"]) == (True, True, False)
        assert started["startedAt"] == record(lab, records.SHIM)["startedAt"]
        running = [p.observation for p in posts if p.event == "beat"]
        assert all(o["running"] and o["descendants"] and not o["exited"] for o in running)
        assert any("working" in o["logTail"] for o in running)
        exit_doc = record(lab, records.EXIT)
        assert ended.observation == {
            "launched": True,
            "running": False,
            "exited": True,
            "exitStatus": 3,
            "signal": None,
            "descendants": False,
            "interrupted": False,
            "error": None,
            "startedAt": started["startedAt"],
            "endedAt": exit_doc["endedAt"],  # (sent after exit.json was recorded)
            "logTail": "working\n",
            "report": None,
        }
        assert ended.body["agent"] is None
        assert (exit_doc["status"], exit_doc["signal"]) == (3, None)
        assert lab.settled().exit_status == 3

    @pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
    def test_an_end_by_signal_is_reported_with_the_signal(
        self, lab: Lab, receiver: Receiver, sig: signal.Signals
    ) -> None:
        lab.runtime.start(
            lab.passage(*python(f"import os, time; time.sleep(0.5); os.kill(os.getpid(), {sig})"))
        )

        ended = receiver.first("exit").observation

        assert (ended["exitStatus"], ended["signal"], ended["interrupted"]) == (None, sig, False)
        assert (ended["exited"], ended["running"], ended["descendants"]) == (True, False, False)
        assert record(lab, records.EXIT)["signal"] == sig

    def test_a_family_left_behind_keeps_beating_and_the_exit_waits_for_it(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        done = lab.tmp / "background-done"
        lab.runtime.start(
            lab.passage(
                "sh",
                "-c",
                f"(sleep 1.5; date +%s.%N > {done}; echo background done) & echo main done",
            )
        )

        ended = receiver.first("exit")

        background_at = float(done.read_text())
        exit_doc = record(lab, records.EXIT)
        ended_at = datetime.fromisoformat(exit_doc["endedAt"]).timestamp()
        # exit.json was recorded when the main command ended, not when its family did.
        assert ended_at < background_at - 1.0
        assert exit_doc["status"] == 0
        # The exit event came only once the background process had ended.
        assert ended.at >= background_at
        assert ended.observation["descendants"] is False
        assert "background done" in ended.observation["logTail"]
        lingering = [
            p.observation for p in receiver.taken() if p.event == "beat" and p.observation["exited"]
        ]
        assert len(lingering) >= 2
        assert all(o["descendants"] and not o["running"] for o in lingering)
        assert all(o["exitStatus"] == 0 and o["endedAt"] == exit_doc["endedAt"] for o in lingering)

    def test_a_report_of_the_passage_is_in_the_exit(self, lab: Lab, receiver: Receiver) -> None:
        command = python(
            """
            import subprocess, sys
            subprocess.run(
                [sys.executable, "-m", "kalends", "report", "completed", "--summary", "all done"],
                check=True,
            )
            """
        )
        lab.runtime.start(lab.passage(*command))

        ended = receiver.first("exit")

        doc = record(lab, records.REPORT)
        assert ended.observation["report"] == {
            "outcome": "completed",
            "summary": "all done",
            "at": doc["at"],
        }
        assert "finalOutput" not in ended.body

    def test_a_spooled_report_not_yet_taken_is_in_the_exit(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        # Without the runtime's directories, kalends report spools in the exchange directory.
        command = python(
            """
            import os, subprocess, sys
            env = dict(os.environ)
            del env["KALENDS_RUNTIME_ROOT"], env["KALENDS_PASSAGE_DIR"]
            subprocess.run(
                [sys.executable, "-m", "kalends", "report", "failed", "--summary", "no disk"],
                check=True,
                env=env,
            )
            """
        )
        lab.runtime.start(lab.passage(*command))

        ended = receiver.first("exit")

        assert not (lab.dir() / records.REPORT).exists()  # (nobody observed it yet)
        report = ended.observation["report"]
        assert (report["outcome"], report["summary"]) == ("failed", "no disk")
        seen = lab.settled()  # the runtime takes the spooled report: the same one
        assert seen.report is not None and seen.report.at.isoformat() == report["at"]

    def test_an_agent_passage_that_exits_0_without_a_report_sends_its_final_output(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        start = PassageStart(
            passage_id="psg_1",
            session_id="ses_1",
            message_id="msg_1",
            schedule_id="sch_1",
            workspace=str(lab.workspace),
            command=("sh", "-c", "echo thinking; echo the final words"),
            agent="codex",
        )
        lab.runtime.start(start)

        ended = receiver.first("exit")

        assert ended.body["agent"] == "codex"
        assert ended.body["finalOutput"] == "thinking\nthe final words\n"

    def test_a_command_that_never_ran_sends_its_exit_alone(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        lab.runtime.start(lab.passage("kalends-no-such-program-anywhere"))

        ended = receiver.first("exit")
        shim_ended(lab)

        assert receiver.events() == ["exit"]
        obs = ended.observation
        assert (obs["launched"], obs["exited"], obs["exitStatus"]) == (False, True, 127)
        assert obs["error"] == record(lab, records.EXIT)["error"]
        assert "cannot run 'kalends-no-such-program-anywhere'" in obs["logTail"]


class TestTheToken:
    def test_the_token_is_the_sessions_and_stays_out_of_the_commands_environment(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        dump = lab.tmp / "env-dump"
        lab.runtime.start(lab.passage("sh", "-c", f"env > {dump}"))

        ended = receiver.first("exit")

        token = beat_token(KEY, "ses_1")
        assert ended.body["token"] == token
        environment = dump.read_text()
        assert "KALENDS_PASSAGE_TOKEN=" in environment  # (the dump is the command's)
        assert token not in environment and KEY not in environment
        assert BEAT_FILE not in environment

    def test_beat_json_is_private_and_says_where_and_how_often(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        lab.runtime.start(lab.passage("true"))
        receiver.first("exit")

        path = lab.dir() / BEAT_FILE
        assert path.stat().st_mode & 0o777 == 0o600
        assert json.loads(path.read_text()) == {
            "version": 1,
            "url": receiver.url + BEATS_PATH,
            "node": NODE,
            "session": "ses_1",
            "token": beat_token(KEY, "ses_1"),
            "every": EVERY,
        }


class TestTheLocalRecordsStayTheTruth:
    @pytest.mark.parametrize(
        ("status", "reply"),
        [
            (401, b'{"code": "invalid-beat-token"}'),  # the service refuses the beat
            (200, b"<html>a proxy page</html>"),  # an answer that is not JSON
            (200, b'{"interrupt": "yes", "grace": 1}'),  # a reply that says nothing clear
            (200, b'{"interrupt": true}'),  # an interrupt without a grace period
        ],
    )
    def test_a_refusing_or_garbled_service_changes_nothing_but_one_line_in_the_log(
        self, lab: Lab, receiver: Receiver, status: int, reply: bytes
    ) -> None:
        receiver.status, receiver.reply = status, reply
        lab.runtime.start(lab.passage("sh", "-c", "echo hi; sleep 0.6; exit 5"))

        receiver.first("exit")
        shim_ended(lab)

        assert receiver.events().count("beat") >= 2  # (it kept trying)
        exit_doc = record(lab, records.EXIT)
        assert (exit_doc["status"], exit_doc["signal"], exit_doc["error"]) == (5, None, None)
        lines = log_of(lab).splitlines()
        assert lines[0] == "hi"
        assert len(lines) == 2
        assert lines[1].startswith(f"[kalends] heartbeats to {receiver.url}{BEATS_PATH} failing: ")
        assert not (lab.dir() / records.INTERRUPT).exists()
        seen = lab.settled()
        assert (seen.exit_status, seen.interrupted) == (5, False)

    def test_a_receiver_that_is_down_leaves_the_passage_to_end_normally(
        self, tmp_path: Path
    ) -> None:
        with _QuietServer((HOST, 0), BaseHTTPRequestHandler) as closed:
            port = closed.server_address[1]  # (closed on leaving: nothing listens there)
        url = f"http://{HOST}:{port}"
        lab = _lab(tmp_path, BeatTarget(url=url, node_id=NODE, key=KEY, every=EVERY))
        try:
            lab.runtime.start(lab.passage("sh", "-c", "echo hi; sleep 0.6"))
            seen = lab.settled()
            shim_ended(lab)
        finally:
            kill_families(tmp_path / "runtime")

        assert (seen.exit_status, seen.signal, seen.error) == (0, None, None)
        # The command's output and the shim's one warning, in either order (the shim's
        # first beat may fail before the command has written).
        lines = log_of(lab).splitlines()
        assert len(lines) == 2 and "hi" in lines
        [warning] = [line for line in lines if line != "hi"]
        assert warning.startswith(f"[kalends] heartbeats to {url}{BEATS_PATH} failing: ")
        assert "refused" in warning

    def test_a_service_that_answers_slowly_does_not_delay_the_exit_record(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        receiver.delay = 3.0
        lab.runtime.start(lab.passage("sh", "-c", "exit 4"))

        ended = lab.observe_until("ses_1", lambda o: o.exited, "the exit record")

        assert ended.exit_status == 4
        assert ended.started_at is not None and ended.ended_at is not None
        # (the start's POST is still waiting for its answer)
        assert (ended.ended_at - ended.started_at).total_seconds() < 2.0
        assert receiver.first("exit").observation["exitStatus"] == 4
        assert "failing" not in log_of(lab)  # (slow is not failing: 3 s < 5 s)

    def test_without_beat_json_the_shim_sends_nothing_and_runs_no_thread(
        self, silent_lab: Lab, receiver: Receiver
    ) -> None:
        lab = silent_lab
        lab.runtime.start(
            lab.passage(*python("print('ready', flush=True); import time; time.sleep(1)"))
        )
        lab.log_has("ses_1", "ready")
        shim_pid = record(lab, records.SHIM)["shimPid"]
        threads = len(list(Path(f"/proc/{shim_pid}/task").iterdir()))

        seen = lab.settled()

        assert threads == 1
        assert seen.exit_status == 0 and log_of(lab) == "ready\n"
        assert not (lab.dir() / BEAT_FILE).exists()
        assert receiver.taken() == []

    def test_a_beating_shim_runs_its_beats_in_a_thread_beside_the_command(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        lab.runtime.start(
            lab.passage(*python("print('ready', flush=True); import time; time.sleep(1)"))
        )
        lab.log_has("ses_1", "ready")
        shim_pid = record(lab, records.SHIM)["shimPid"]

        threads = len(list(Path(f"/proc/{shim_pid}/task").iterdir()))

        assert threads == 2
        receiver.first("exit")

    def test_an_unreadable_beat_json_means_no_heartbeats_and_a_normal_passage(
        self, silent_lab: Lab, receiver: Receiver
    ) -> None:
        lab = silent_lab
        start = lab.passage("sh", "-c", "echo hi")
        lab.runtime.admit(start)
        (lab.dir() / BEAT_FILE).write_text(
            json.dumps({"version": 1, "url": receiver.url, "node": NODE, "session": "ses_1"})
        )  # (no token, no period)
        lab.runtime.start(start)

        seen = lab.settled()
        shim_ended(lab)

        assert seen.exit_status == 0
        lines = log_of(lab).splitlines()
        assert lines[0].startswith("[kalends] no heartbeats: ") and "beat.json" in lines[0]
        assert lines[1:] == ["hi"]
        assert receiver.taken() == []


class TestAnInterruptAskedInTheReply:
    def test_the_family_gets_term_and_later_beats_say_interrupted(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        lab.runtime.start(
            lab.passage(*python("print('ready', flush=True); import time; time.sleep(60)"))
        )
        lab.log_has("ses_1", "ready")
        receiver.first("beat")

        receiver.reply = b'{"interrupt": true, "grace": 5}'
        ended = receiver.first("exit")

        assert ended.observation["signal"] == signal.SIGTERM
        assert ended.observation["interrupted"] is True
        noted = record(lab, records.INTERRUPT)
        assert noted["version"] == 1 and noted["grace"] == 5
        seen = lab.settled()
        assert (seen.signal, seen.interrupted) == (signal.SIGTERM, True)
        flags = [p.observation["interrupted"] for p in receiver.taken()]
        # Not interrupted until the reply asked, interrupted in every beat after.
        assert flags[0] is False and flags[-1] is True and flags == sorted(flags)

    def test_a_family_that_ignores_term_is_killed_after_the_grace_period_once(
        self, lab: Lab, receiver: Receiver
    ) -> None:
        lab.runtime.start(
            lab.passage(
                *python(
                    """
                    import signal, time
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    print('ready', flush=True)
                    time.sleep(60)
                    """
                )
            )
        )
        lab.log_has("ses_1", "ready")
        receiver.first("beat")

        receiver.reply = b'{"interrupt": true, "grace": 1.0}'
        ended = receiver.first("exit")
        shim_ended(lab)

        noted = record(lab, records.INTERRUPT)
        exit_doc = record(lab, records.EXIT)
        took = datetime.fromisoformat(exit_doc["endedAt"]) - datetime.fromisoformat(noted["at"])
        assert took.total_seconds() >= 1.0  # KILL only after the grace period
        assert (ended.observation["signal"], ended.observation["interrupted"]) == (
            signal.SIGKILL,
            True,
        )
        during = [
            p.observation
            for p in receiver.taken()
            if p.event == "beat" and p.observation["interrupted"]
        ]
        # Beats went on during the grace period, the command still running, interrupted.
        assert len([o for o in during if o["running"]]) >= 2
        # Asked again by every reply, the shim interrupted once.
        assert log_of(lab).count("sent KILL after the 1 s grace period") == 1
        assert lab.settled().interrupted


class TestBadInput:
    @pytest.mark.parametrize(
        ("change", "field_name"),
        [
            ({"url": "ftp://example.org"}, "beats.url"),  # not HTTP
            ({"url": "127.0.0.1:8000"}, "beats.url"),  # no scheme
            ({"node_id": ""}, "beats.node_id"),  # no node
            ({"key": "zz" * 32}, "beats.key"),  # not hex
            ({"key": "ab" * 16}, "beats.key"),  # too short
            ({"every": 0.0}, "beats.every"),  # never
            ({"every": -1.0}, "beats.every"),  # negative
            ({"every": math.nan}, "beats.every"),  # not a number
            ({"every": math.inf}, "beats.every"),  # never either
            ({"every": True}, "beats.every"),  # a flag, not seconds
        ],
    )
    def test_the_runtime_refuses_a_beat_target_no_shim_could_use(
        self, tmp_path: Path, change: dict[str, Any], field_name: str
    ) -> None:
        target: dict[str, Any] = {"url": "http://127.0.0.1:1", "node_id": NODE, "key": KEY}
        target.update(change)

        with pytest.raises(InvalidInput) as refused:
            ProcessRuntime(tmp_path / "runtime", beats=BeatTarget(**target))

        assert refused.value.field == field_name


def test_the_shims_copies_of_shared_figures_agree_with_the_runtimes() -> None:
    assert records.BEAT == BEAT_FILE
    assert records.LOG_TAIL_BYTES == LOG_TAIL_BYTES
    assert records.FINAL_OUTPUT_BYTES == agents.FINAL_OUTPUT_BYTES
    assert records.MAX_BEAT_BODY == MAX_BEAT_BODY_BYTES
    assert records.REPORT_OUTCOMES == OUTCOMES
    assert records.MAX_SPOOL_BYTES == MAX_SPOOL_BYTES


def test_a_beating_shim_imports_nothing_but_the_standard_library(tmp_path: Path) -> None:
    with _QuietServer((HOST, 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]
    (tmp_path / BEAT_FILE).write_text(
        json.dumps(
            {
                "version": 1,
                "url": f"http://{HOST}:{port}{BEATS_PATH}",
                "node": NODE,
                "session": "ses_1",
                "token": "t" * 64,
                "every": 1.0,
            }
        )
    )
    code = (
        "import runpy, sys; shim = runpy.run_path(sys.argv[1]); "
        "beats = shim['Beats'].of(shim['Path'](sys.argv[2])); beats.send('beat'); "
        "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)))"
    )

    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, records.__file__, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )

    assert out.stdout.strip() == "['__main__']"
    assert "heartbeats to" in out.stderr and "failing" in out.stderr  # (it did try)
