"""Agent presets through real processes (kalends.missions.agents).

Each preset runs against a small executable of the same name that this module writes
into a temporary directory placed first on the passage's ``PATH`` (the real CLIs need
accounts): it records its argument list and standard input, and prints a final message
as its CLI would (claude's as the ``result`` of a JSON object). A real passage runs
through the real scheduler and process runtime on both databases: the argument list it
received is exactly the preset's with ``{prompt}`` replaced by the passage's start text;
exit 0 settles ``completed`` with the final message as the summary; the agent's own
report wins; a non-zero exit fails; Play is refused, nothing written, when the program
is not on ``PATH``. Last, one passage of the ``shell`` preset runs end to end under
``kalends worker``, a real process.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from typer.testing import CliRunner, Result

from kalends.auth.grants import Privilege
from kalends.bootstrap import build, open_services
from kalends.cli.main import app
from kalends.clock import FakeClock
from kalends.errors import InvalidInput
from kalends.missions.agents import MAX_PROMPT_CHARS
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.isolation import Isolation, default_path, find_bwrap
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store
from missions.conftest import MissionWorld, daily_config, make_mission_world
from runtime.support import GRACE, kill_families, wait_until

DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}
# Past every pending-fallback step (30 s, 2 min, 5 min): the scheduler looks again.
NEXT_LOOK = timedelta(minutes=6)
OBJECTIVE = "Fix the flaky test in tests/test_io.py; keep the 'public' API."
NOTES = 'Run "make check" first.\nNever push.'
START_TEXT = f"Morning report\nObjective: {OBJECTIVE}\nNotes: {NOTES}\nLaunched by Run now."
"""The start text of a Run now passage of :func:`agent_config`'s schedule."""
AGENTS = ("claude", "codex", "opencode", "gemini", "aider")
ARGS = {
    "claude": ["-p", START_TEXT, "--output-format", "json"],
    "codex": ["exec", START_TEXT],
    "opencode": ["run", START_TEXT],
    "gemini": ["-p", START_TEXT],
    "aider": ["--yes-always", "--message", START_TEXT],
}
"""What each preset's program is given after its name: the exact argument list."""

FAKE_AGENT = """\
import json, os, subprocess, sys
name = os.path.basename(sys.argv[0])
with open(os.path.join(os.getcwd(), ".agent-" + name + ".json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "stdin": sys.stdin.read()}, f)
if os.environ.get("AGENT_REPORT"):
    subprocess.run(
        ["kalends", "report", "completed", "--summary", os.environ["AGENT_REPORT"]], check=True
    )
print("reading the repository", file=sys.stderr, flush=True)
final = name + " is done: 3 files changed"
if name == "claude":
    print(json.dumps({"type": "result", "is_error": False, "result": final}), flush=True)
else:
    print("thinking", flush=True)
    print("", flush=True)
    print(final, flush=True)
sys.exit(int(os.environ.get("AGENT_EXIT", "0")))
"""


def write_fake_agents(directory: Path) -> None:
    """An executable per agent preset in ``directory``, named as its CLI."""
    directory.mkdir()
    for name in AGENTS:
        path = directory / name
        path.write_text(f"#!{sys.executable}\n{FAKE_AGENT}")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def agent_config(agent: str, path: str, **env: str) -> dict[str, Any]:
    """A daily schedule of the preset ``agent`` whose passages find ``path`` first."""
    return daily_config(
        objective=OBJECTIVE,
        notes=NOTES,
        profile={"agent": agent, "env": {"PATH": path, **env}},
        policy=DAILY,
    )


@dataclass
class Agents:
    """A mission world, a process runtime, an in-process scheduler on the fake clock, and
    the fake agents' directory first on ``path``."""

    mw: MissionWorld
    runtime: ProcessRuntime
    scheduler: Scheduler
    path: str
    serial: int = 0

    @property
    def workspace(self) -> Path:
        return Path(self.mw.home.path)

    def create(self, config: dict[str, Any]) -> UUID:
        self.serial += 1
        receipt = self.mw.schedules.create(
            self.mw.bob.id, self.mw.home.id, config, request_id=f"create-{self.serial:04d}"
        )
        assert receipt.mission_id is not None
        return receipt.mission_id

    def act(self, sid: UUID, action: str) -> None:
        self.serial += 1
        self.mw.schedules.control(
            self.mw.bob.id,
            sid,
            action,
            request_id=f"{action}-{self.serial:04d}",
            expected_revision=self.detail(sid)["revision"],
        )

    def detail(self, sid: UUID) -> dict[str, Any]:
        return self.mw.schedules.detail(self.mw.bob.id, sid)

    def passage(self, sid: UUID) -> dict[str, Any]:
        """Play, Run now, the passage started and settled: the archived result."""
        self.act(sid, "play")
        self.act(sid, "run-now")
        pending = self.detail(sid)["pending"]
        assert pending is not None, "Run now reserved no passage"
        self.scheduler.run_once()  # starts it (and settles it, when it was that quick)

        def settled() -> bool:
            return self.runtime.observe(pending["sessionId"]).settled

        wait_until(settled, what="the passage to settle")
        self.mw.clock.advance(NEXT_LOOK)
        self.scheduler.run_once()
        detail = self.detail(sid)
        assert detail["pending"] is None, detail["pending"]
        latest: dict[str, Any] = detail["latestResult"]
        assert latest["passageId"] == pending["passageId"]
        return latest

    def received(self, name: str) -> dict[str, Any]:
        """What the fake ``name`` recorded: its argument list and standard input."""
        found: dict[str, Any] = json.loads((self.workspace / f".agent-{name}.json").read_text())
        return found

    def opening(self, passage_id: str) -> str:
        """The first message of the passage's conversation: its start text."""
        [conversation] = [
            c
            for c in self.mw.services.conversations.list(self.mw.bob.id, self.mw.home.id)
            if c.passage_id == passage_id
        ]
        first = self.mw.services.conversations.messages(self.mw.bob.id, conversation.id, limit=1)
        return first[0].text


@pytest.fixture
def ag(store: Store, fake_clock: FakeClock, tmp_path: Path) -> Iterator[Agents]:
    mw = make_mission_world(build(store), fake_clock, tmp_path)
    write_fake_agents(tmp_path / "bin")
    runtime = ProcessRuntime(tmp_path / "runtime", grace=GRACE)
    path = f"{tmp_path / 'bin'}:{default_path()}"
    try:
        yield Agents(mw, runtime, Scheduler(mw.store, runtime, owner="agents"), path)
    finally:
        kill_families(runtime.root)


class TestPresetsRunForReal:
    @pytest.mark.parametrize("name", AGENTS)
    def test_the_preset_gets_its_exact_arguments_and_its_final_message_completes_it(
        self, ag: Agents, name: str
    ) -> None:
        sid = ag.create(agent_config(name, ag.path))
        result = ag.passage(sid)

        got = ag.received(name)
        assert got == {"argv": ARGS[name], "stdin": ""}
        # {prompt} is the start text the passage's conversation opens with.
        assert ag.opening(result["passageId"]) == START_TEXT
        assert (result["outcome"], result["reason"]) == ("completed", None)
        assert result["summary"] == f"{name} is done: 3 files changed"

    @pytest.mark.parametrize("name", ["claude", "codex"])
    def test_the_agents_own_report_wins_over_its_final_message(self, ag: Agents, name: str) -> None:
        sid = ag.create(agent_config(name, ag.path, AGENT_REPORT="reported: tests green"))
        result = ag.passage(sid)
        assert (result["outcome"], result["summary"]) == ("completed", "reported: tests green")

    @pytest.mark.parametrize("name", ["claude", "aider"])
    def test_a_non_zero_exit_fails_whatever_it_printed(self, ag: Agents, name: str) -> None:
        sid = ag.create(agent_config(name, ag.path, AGENT_EXIT="3"))
        result = ag.passage(sid)
        assert (result["outcome"], result["reason"]) == ("failed", "exit status 3")
        assert result["summary"] == ""

    def test_a_command_without_an_agent_keeps_ending_without_a_report(self, ag: Agents) -> None:
        # The same program, named by a command of its own and no preset: its final
        # message is not read, and every placeholder is the passage's.
        command = [
            "codex",
            "{input_file}",
            "{workspace}",
            "{passage_id}",
            "{{objective}}",
            "objective={objective}",
            "{notes}",
            "awk '{print $1}' ${HOME}",
        ]
        config = daily_config(
            objective=OBJECTIVE, notes=NOTES, profile={"command": command, "env": {"PATH": ag.path}}
        )
        sid = ag.create(config)
        result = ag.passage(sid)
        assert (result["outcome"], result["reason"], result["summary"]) == (
            "ended-without-report",
            None,
            "",
        )
        argv = ag.received("codex")["argv"]
        input_file = Path(argv[0])
        assert input_file.name == "input.json" and input_file.parent.parent.name == "passages"
        assert json.loads(input_file.read_text())["objective"] == OBJECTIVE
        assert argv[1:] == [
            str(ag.workspace),
            result["passageId"],
            "{objective}",
            f"objective={OBJECTIVE}",
            NOTES,
            "awk '{print $1}' ${HOME}",
        ]

    def test_the_prompt_holds_the_watched_messages_within_the_budget(self, ag: Agents) -> None:
        thread = ag.mw.services.conversations.create(ag.mw.bob.id, ag.mw.home.id, "inbox")
        for n in range(1, 4):
            ag.mw.services.conversations.post(ag.mw.bob.id, thread.id, f"please look at bug {n}")
        big = ag.mw.services.conversations.post(ag.mw.bob.id, thread.id, "x" * 15_000)
        assert big is not None
        config = agent_config("codex", ag.path)
        config["watch"] = [str(thread.id)]
        sid = ag.create(config)
        result = ag.passage(sid)

        [prompt] = ag.received("codex")["argv"][1:]
        assert len(prompt) <= MAX_PROMPT_CHARS
        assert prompt == ag.opening(result["passageId"])
        assert prompt.startswith(START_TEXT + "\n\n")
        assert f"Watched conversation {thread.id}: 3 new message(s)." in prompt
        for n in range(1, 4):
            assert f'"text":"please look at bug {n}"' in prompt
        # The message that did not fit is a reference, its text left out.
        assert "source-input-capacity" in prompt and "x" * 1000 not in prompt
        assert result["outcome"] == "completed"


class TestPlay:
    def test_play_is_refused_when_the_presets_program_is_not_on_path_nothing_written(
        self, ag: Agents, tmp_path: Path
    ) -> None:
        empty = tmp_path / "empty"
        empty.mkdir()
        sid = ag.create(agent_config("gemini", str(empty)))
        revision = ag.detail(sid)["revision"]
        with nothing_written(ag.mw.store), pytest.raises(InvalidInput) as caught:
            ag.mw.schedules.play(
                ag.mw.bob.id, sid, request_id="play-missing", expected_revision=revision
            )
        assert caught.value.field == "profile.agent"
        assert "the agent CLI `gemini` is not on PATH" in caught.value.message
        assert "install it or pick another preset" in caught.value.message
        assert not (ag.runtime.root / "passages").exists() or not any(
            (ag.runtime.root / "passages").iterdir()
        )
        # Installed, the same request plays: the refusal was not recorded.
        (empty / "gemini").symlink_to(Path(ag.path.split(":")[0]) / "gemini")
        ag.mw.schedules.play(ag.mw.bob.id, sid, request_id="play-missing", expected_revision=1)
        assert ag.detail(sid)["state"] == "running"

    def test_a_command_of_its_own_is_checked_by_its_program(self, ag: Agents) -> None:
        config = agent_config("claude", ag.path)
        config["profile"]["command"] = ["claude-nightly", "-p", "{prompt}"]
        sid = ag.create(config)
        with pytest.raises(InvalidInput) as caught:
            ag.act(sid, "play")
        assert "`claude-nightly` is not on PATH" in caught.value.message


# --------------------------------------------------------------------------- the CLI


def _cli(url: str, *args: str) -> Result:
    """``kalends ARGS`` as alice on the database at ``url``."""
    env = {"KALENDS_DATABASE_URL": None, "KALENDS_ACTOR": None, "COLUMNS": "200"}
    return CliRunner().invoke(app, [*args, "--as", "alice", "--database", url], env=env)


def _presets(*args: str) -> Result:
    return CliRunner().invoke(app, ["profile", "presets", *args], env={"COLUMNS": "200"})


class TestCommandLine:
    @pytest.fixture
    def cli_db(self, tmp_path: Path) -> Iterator[tuple[str, UUID]]:
        url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
        services = open_services(url)
        try:
            services.directory.add_actor("alice", "Alice")
            (tmp_path / "ws").mkdir()
            home = services.workspaces.add("alice", tmp_path / "ws", "home")
            services.grants.grant(services.directory.actor("alice").id, Privilege.RUN)
            yield url, home.id
        finally:
            services.store.close()

    def test_presets_lists_every_preset_with_its_arguments_and_path(self) -> None:
        result = _presets("--json")
        assert result.exit_code == 0, result.output
        listed = json.loads(result.stdout)
        assert [p["name"] for p in listed["presets"]] == [*AGENTS[:4], "aider", "shell"]
        shell = listed["presets"][-1]
        assert (shell["command"], shell["executable"], shell["onPath"]) == (
            ["sh", "-c", "{objective}"],
            "sh",
            True,
        )
        assert all(p["reports"] for p in listed["presets"])
        text = _presets()
        assert text.exit_code == 0 and "claude -p {prompt} --output-format json" in text.stdout

    def test_create_with_agent_shows_it(self, cli_db: tuple[str, UUID]) -> None:
        url, _ = cli_db
        made = _cli(
            url, "schedule", "create", "home", "--title", "Fix", "--agent", "codex",
            "--daily", "09:00", "--zone", "UTC", "--json",
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        sid = json.loads(made.stdout)["missionId"]
        shown = _cli(url, "schedule", "show", sid, "--json")
        profile = json.loads(shown.stdout)["profile"]
        assert (profile["agent"], profile["command"]) == ("codex", ["codex", "exec", "{prompt}"])
        text = _cli(url, "schedule", "show", sid)
        assert "codex (`kalends profile presets`)" in text.stdout
        edited = _cli(url, "schedule", "edit", sid, "--agent", "none", "--json")
        assert edited.exit_code == 0, edited.output
        again = json.loads(_cli(url, "schedule", "show", sid, "--json").stdout)["profile"]
        assert "agent" not in again and again["command"] == ["codex", "exec", "{prompt}"]

    @pytest.mark.parametrize(
        ("flags", "said"),
        [
            (("--agent", "nope"), "unknown agent preset 'nope'; known: claude, codex"),
            (("--command", "tool {objectve}"), "unknown placeholder {objectve}"),
            (("--agent", "shell", "--arg", "sh", "--arg", "{notez}"), "{notez}"),
        ],
    )
    def test_bad_input_exits_2_and_writes_nothing(
        self, cli_db: tuple[str, UUID], flags: tuple[str, ...], said: str
    ) -> None:
        url, _ = cli_db
        services = open_services(url)
        try:
            with nothing_written(services.store):
                result = _cli(
                    url, "schedule", "create", "home", "--title", "Fix", *flags,
                    "--daily", "09:00", "--zone", "UTC",
                )  # fmt: skip
        finally:
            services.store.close()
        assert result.exit_code == 2, result.output
        assert said in " ".join(result.output.split())


# --------------------------------------------------------------------------- kalends worker

SCRIPT = (
    'printf "%s" "$KALENDS_PASSAGE_ID" > ran.txt && '
    "kalends report completed --summary 'the script ran'"
)
PASSAGES_AS_ME = {"KALENDS_PASSAGE_USER": "root"} if os.geteuid() == 0 else {}


def test_a_shell_preset_passage_runs_end_to_end_under_kalends_worker(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    services = open_services(url)
    worker = None
    try:
        services.directory.add_actor("alice", "Alice")
        home = services.workspaces.add("alice", workspace, "home")
        services.grants.grant(services.directory.actor("alice").id, Privilege.RUN)
        config = {
            "title": "Shell passage",
            "objective": SCRIPT,
            "profile": {"agent": "shell"},
            "policy": {"kind": "immediate"},
        }
        receipt = services.schedules.create("alice", home.id, config, request_id="create-0001")
        sid = receipt.mission_id
        assert sid is not None
        services.schedules.control(
            "alice", sid, "play", request_id="play-0001", expected_revision=1
        )
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"KALENDS_ACTOR", "KALENDS_DATABASE_URL"}
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "kalends", "worker", "--database", url,
             "--runtime-dir", str(tmp_path / "runtime"), "--transport", "null"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, **PASSAGES_AS_ME},
        )  # fmt: skip
        deadline = time.monotonic() + 60
        latest: dict[str, Any] | None = None
        while latest is None:
            detail = services.schedules.detail("alice", sid)
            if detail["pending"] is None and detail["latestResult"] is not None:
                latest = detail["latestResult"]
            elif worker.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no settlement: {worker.communicate(timeout=5)[1]}")
            time.sleep(0.1)
        assert (latest["outcome"], latest["summary"]) == ("completed", "the script ran")
        assert (workspace / "ran.txt").read_text() == latest["passageId"]
        assert services.schedules.detail("alice", sid)["profile"]["agent"] == "shell"
    finally:
        if worker is not None:
            worker.terminate()
            try:
                worker.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.communicate()
        services.store.close()
        kill_families(tmp_path / "runtime")


# --------------------------------------------------------------------------- confined


def test_a_sandboxed_passage_gets_the_input_file_it_can_read(tmp_path: Path) -> None:
    """Under bubblewrap the runtime's directory is hidden but for the passage's exchange
    directory: ``{input_file}`` names the copy there, as ``$KALENDS_INPUT_FILE`` does."""
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.skip("bubblewrap cannot start a sandbox here")
    root = tmp_path / "runtime"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    isolation = Isolation(bwrap=bwrap, path=default_path(), hidden=(str(root),))
    runtime = ProcessRuntime(root, grace=GRACE, isolation=isolation)
    script = 'cat "$1" > got.json && printf "%s|%s" "$1" "$KALENDS_INPUT_FILE" > paths.txt'
    start = PassageStart(
        passage_id="psg_confined",
        session_id="ses_confined",
        message_id="msg_confined",
        schedule_id="sch_confined",
        workspace=str(workspace),
        command=("sh", "-c", script, "sh", "{input_file}"),
        input={"objective": "read me"},
    )
    try:
        runtime.start(start)
        wait_until(lambda: runtime.observe("ses_confined").settled, what="the passage to end")
        seen = runtime.observe("ses_confined")
        assert seen.exit_status == 0, seen.log_tail
        given, named = (workspace / "paths.txt").read_text().split("|")
        # The exchange copy (the passage directory itself is hidden), not the runtime's own.
        assert given == named == str(runtime.passage_dir("ses_confined") / "io" / "input.json")
        assert json.loads((workspace / "got.json").read_text())["objective"] == "read me"
    finally:
        kill_families(root)
