"""`kalends passage …`: a passage's records and output log, read from the runtime directory.

Real commands run under a real :class:`ProcessRuntime` in a temporary directory; the CLI
runs in-process (CliRunner). Every command started here ends before its test does.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner, Result

from kalends.cli.main import app
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime

runner = CliRunner()
ENV: dict[str, str | None] = {"KALENDS_RUNTIME_DIR": None, "COLUMNS": "200"}

HELLO = (
    "print('hello', flush=True); import sys; "
    "print('oops', file=sys.stderr, flush=True); sys.exit(3)"
)
# Prints, waits (at most a minute) for a file named "go" in its directory, prints again.
WAITS = (
    "import os, sys, time\n"
    "print('first', flush=True)\n"
    "deadline = time.time() + 60\n"
    "while not os.path.exists('go') and time.time() < deadline:\n"
    "    time.sleep(0.02)\n"
    "print('second', flush=True)\n"
)
REPORTS = (
    "import subprocess, sys\n"
    "print('hello', flush=True)\n"
    "subprocess.run([sys.executable, '-m', 'kalends', 'report', 'completed', '--summary',"
    " 'said hello'], check=True, stdout=subprocess.DEVNULL)\n"
)


@dataclass
class Passages:
    root: Path
    workspace: Path
    runtime: ProcessRuntime
    started: list[str] = field(default_factory=list)

    def start(self, name: str, code: str, *, env: tuple[tuple[str, str], ...] = ()) -> str:
        session = f"ses_{name}"
        self.runtime.start(
            PassageStart(
                passage_id=f"psg_{name}",
                session_id=session,
                message_id=f"msg_{name}",
                schedule_id="00000000-0000-7000-8000-000000000001",
                workspace=str(self.workspace),
                command=(sys.executable, "-c", code),
                env=env,
            )
        )
        self.started.append(session)
        return session

    def settled(self, session: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.runtime.observe(session).settled:
            assert time.monotonic() < deadline, f"{session} did not settle"
            time.sleep(0.05)

    def printed(self, session: str, text: str, timeout: float = 30.0) -> None:
        """Waits until the command printed ``text`` and its shim recorded the launch (the
        command can print before the shim writes its record: until then the passage
        reads as admitted)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.runtime.observe(session)
            if text in seen.log_tail and seen.launched:
                return
            assert time.monotonic() < deadline, f"{session} never printed {text!r}"
            time.sleep(0.02)

    def go(self) -> None:
        (self.workspace / "go").touch()

    def invoke(self, *args: str) -> Result:
        return runner.invoke(app, ["passage", *args, "--runtime-dir", str(self.root)], env=ENV)

    def ok(self, *args: str) -> str:
        result = self.invoke(*args)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))


@pytest.fixture
def passages(tmp_path: Path) -> Iterator[Passages]:
    (tmp_path / "ws").mkdir()
    found = Passages(
        root=tmp_path / "runtime",
        workspace=tmp_path / "ws",
        runtime=ProcessRuntime(tmp_path / "runtime", grace=1.0),
    )
    try:
        yield found
    finally:
        found.go()
        for session in found.started:
            found.settled(session)


def test_log_prints_the_records_and_the_whole_output(passages: Passages) -> None:
    session = passages.start("hello", HELLO, env=(("SECRET_TOKEN", "hunter2"),))
    passages.settled(session)
    for ident in ("psg_hello", session):
        text = passages.ok("log", ident)
        assert re.search(r"passage\s+psg_hello *\n", text)
        assert re.search(r"session\s+ses_hello *\n", text)
        assert re.search(r"status\s+exited 3 *\n", text)
        assert re.search(r"environment\s+SECRET_TOKEN \(values hidden\)", text)
        assert "hunter2" not in text
        assert re.search(r"report\s+none", text)
        assert "── output.log ──\nhello\noops\n" in text
    doc = passages.json("log", "psg_hello")
    assert (doc["passageId"], doc["sessionId"], doc["status"]) == ("psg_hello", session, "exited")
    assert (doc["exitStatus"], doc["signal"], doc["report"], doc["interrupted"]) == (
        3,
        None,
        None,
        None,
    )
    assert doc["log"] == "hello\noops\n"
    assert doc["envNames"] == ["SECRET_TOKEN"] and "hunter2" not in json.dumps(doc)
    assert doc["command"][1:] == ["-c", HELLO]
    assert doc["startedAt"] and doc["endedAt"] and doc["createdAt"]


def test_log_shows_the_report(passages: Passages) -> None:
    session = passages.start("reports", REPORTS)
    passages.settled(session)
    text = passages.ok("log", "psg_reports")
    assert re.search(r"status\s+exited 0 *\n", text)
    assert re.search(r"report\s+completed at \d{4}-\d\d-\d\d [0-9:]+.*: said hello", text)
    report = passages.json("log", session)["report"]
    assert (report["outcome"], report["summary"]) == ("completed", "said hello")


def test_follow_prints_the_output_as_it_grows_until_the_exit(passages: Passages) -> None:
    session = passages.start("waits", WAITS)
    passages.printed(session, "first")
    threading.Timer(1.0, passages.go).start()
    text = passages.ok("log", "psg_waits", "--follow")
    assert re.search(r"status\s+running *\n", text)
    assert "── output.log ──\nfirst\nsecond\n── end ──\n" in text
    assert re.search(r"── end ──\nstatus\s+exited 0\s+report\s+none", text)


def test_follow_with_json_waits_for_the_exit(passages: Passages) -> None:
    session = passages.start("waits", WAITS)
    threading.Timer(1.0, passages.go).start()
    doc = passages.json("log", session, "--follow")
    assert (doc["status"], doc["exitStatus"], doc["log"]) == ("exited", 0, "first\nsecond\n")


def test_ls_lists_newest_first_with_their_status(passages: Passages) -> None:
    done = passages.start("done", HELLO)
    passages.settled(done)
    stopped = passages.start("stopped", WAITS)
    passages.printed(stopped, "first")
    passages.runtime.interrupt(stopped)
    passages.settled(stopped)
    running = passages.start("running", WAITS)
    passages.printed(running, "first")

    listing = passages.json("ls")
    assert (listing["runtimeDir"], listing["total"]) == (str(passages.root), 3)
    items = listing["items"]
    assert [i["sessionId"] for i in items] == [running, stopped, done]
    assert [i["status"] for i in items] == ["running", "exited", "exited"]
    assert (items[1]["signal"], items[1]["interrupted"]["grace"]) == (15, 1.0)
    assert items[2]["exitStatus"] == 3
    assert all("log" not in i for i in items)

    text = passages.ok("ls")
    assert re.search(r"psg_running\s+ses_running\s+running\s+—", text)
    assert re.search(r"psg_stopped\s+ses_stopped\s+killed by signal 15\s+—", text)
    assert re.search(r"psg_done\s+ses_done\s+exited 3\s+—", text)
    assert text.index("psg_running") < text.index("psg_stopped") < text.index("psg_done")
    interrupted = passages.ok("log", "psg_stopped")
    assert re.search(r"interrupted\s+by kalends at .+ \(KILL after 1.0 s\)", interrupted)

    short = passages.ok("ls", "--limit", "1")
    assert "psg_running" in short and "psg_done" not in short
    assert "2 older: --limit 3 (or 0) shows them" in short
    assert passages.json("ls", "--limit", "0")["total"] == 3


def test_unknown_ids_are_refused_with_a_clear_message(passages: Passages) -> None:
    passages.settled(passages.start("hello", HELLO))
    for ident in ("psg_nope", "ses_nope", "../passages", "nope"):
        result = passages.invoke("log", ident)
        assert (result.exit_code, result.stdout) == (1, ""), ident
        assert result.stderr.startswith(f"error: no passage {ident!r} in the runtime directory")
        assert "--runtime-dir" in result.stderr
        error = json.loads(passages.invoke("log", ident, "--json").stdout)["error"]
        assert error["code"] == "not-found"
    blank = passages.invoke("log", " ")
    assert blank.exit_code == 2 and blank.stderr.startswith("error: passage: give a passage ID")
    bad = passages.invoke("ls", "--limit", "many")
    assert bad.exit_code == 2 and "limit: a whole number" in bad.stderr


def test_an_empty_or_missing_runtime_directory_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, ["passage", "ls", "--runtime-dir", str(missing)], env=ENV)
    assert result.exit_code == 0 and f"no passages in {missing}" in result.stdout
    result = runner.invoke(
        app, ["passage", "log", "psg_x", "--json"], env={**ENV, "KALENDS_RUNTIME_DIR": str(missing)}
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["details"]["runtime_dir"] == str(missing)
    assert not missing.exists()
    empty = runner.invoke(app, ["passage", "ls", "--json", "--runtime-dir", str(missing)], env=ENV)
    assert json.loads(empty.stdout) == {"runtimeDir": str(missing), "total": 0, "items": []}


def test_every_passage_command_documents_itself() -> None:
    group: Any = get_command(app)
    commands = group.commands["passage"].commands
    assert sorted(commands) == ["log", "ls"]
    for name, command in commands.items():
        options = {o for p in command.params for o in getattr(p, "opts", [])}
        assert {"--json", "--runtime-dir"} <= options, name
        assert command.help, name
    assert "--follow" in {o for p in commands["log"].params for o in getattr(p, "opts", [])}
