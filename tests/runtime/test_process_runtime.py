"""The process runtime with real commands: start, lookup, observe, interrupt, crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kalends.errors import InvalidInput, NotFound
from kalends.missions.runtime import Presence, Runtime
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.runtime.token import verify

from .support import GRACE, Lab, python, wait_until

SLEEPER = python("print('ready', flush=True); import time; time.sleep(60)")


def counting(counter: Path, then: str = "") -> tuple[str, ...]:
    """A command that appends one line to ``counter`` per launch."""
    return python(
        f"""
        with open({str(counter)!r}, "a") as f:
            f.write("launched\\n")
        {then}
        """
    )


def launches(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


class TestAPassageRuns:
    def test_the_command_reads_its_input_and_environment_and_reports_through_the_cli(
        self, lab: Lab
    ) -> None:
        (lab.workspace / "sub").mkdir()
        command = python(
            """
            import json, os, subprocess, sys
            doc = json.load(open(os.environ["KALENDS_INPUT_FILE"]))
            assert doc["objective"] == "tidy up", doc
            assert doc["passageId"] == os.environ["KALENDS_PASSAGE_ID"] == "psg_1"
            assert doc["sessionId"] == "ses_1" and doc["messageId"] == "msg_1"
            assert os.environ["PROFILE_VAR"] == "on"
            print("cwd", os.getcwd(), flush=True)
            subprocess.run(
                [sys.executable, "-m", "kalends", "report", "completed",
                 "--summary", "tidied: " + doc["objective"]],
                check=True,
            )
            """
        )
        start = lab.passage(
            *command,
            cwd="sub",
            env=(("PROFILE_VAR", "on"),),
            input={"objective": "tidy up"},
        )
        assert lab.runtime.start(start) is Presence.PRESENT

        seen = lab.settled()

        assert (seen.launched, seen.exited, seen.exit_status, seen.signal) == (True, True, 0, None)
        assert seen.report is not None
        assert (seen.report.outcome, seen.report.summary) == (
            "completed",
            "tidied: tidy up",
        )
        assert seen.started_at is not None and seen.ended_at is not None
        assert seen.started_at <= seen.report.at <= seen.ended_at
        assert f"cwd {lab.workspace / 'sub'}" in seen.log_tail
        assert not seen.interrupted and not seen.running and not seen.descendants

    def test_the_passage_directory_holds_its_records(self, lab: Lab) -> None:
        lab.runtime.start(lab.passage("sh", "-c", "echo hello; echo oops >&2"))
        lab.settled()
        directory = lab.dir()

        start = json.loads((directory / "start.json").read_text())
        shim = json.loads((directory / "shim.json").read_text())
        ended = json.loads((directory / "exit.json").read_text())
        assert start["messageId"] == "msg_1" and start["scheduleId"] == "sch_1"
        assert start["command"] == ["sh", "-c", "echo hello; echo oops >&2"]
        assert shim["sid"] == shim["shimPid"] and shim["pgid"] == shim["commandPid"]
        assert (ended["status"], ended["signal"]) == (0, None)
        assert (directory / "output.log").read_text() == "hello\noops\n"
        assert not [p for p in lab.runtime.passages.iterdir() if p.name.startswith(".")]

    def test_the_token_in_the_environment_names_the_passage(self, lab: Lab) -> None:
        out = lab.tmp / "token"
        lab.runtime.start(lab.passage("sh", "-c", f'printf %s "$KALENDS_PASSAGE_TOKEN" > {out}'))
        lab.settled()

        assert verify(lab.runtime.secret, out.read_text()) == ("psg_1", "ses_1")

    def test_a_non_zero_exit_is_recorded(self, lab: Lab) -> None:
        lab.runtime.start(lab.passage("sh", "-c", "echo broke >&2; exit 3"))

        seen = lab.settled()

        assert (seen.exit_status, seen.signal, seen.report) == (3, None, None)
        assert "broke" in seen.log_tail

    def test_a_command_that_ends_between_the_observers_reads_reads_as_launched(
        self, lab: Lab, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # An observer reads the shim's record, then the exit record; a command that ends
        # at once can have both written in between. The shim's first read is made to
        # find nothing, as it did then (seen in a whole run: exited, never launched).
        lab.runtime.start(lab.passage("sh", "-c", "exit 4"))
        lab.settled()
        real = records.read_json
        missed: list[Path] = []

        def before_the_shim_wrote(path: Path) -> object:
            if path.name == records.SHIM and not missed:
                missed.append(path)
                return None
            return real(path)

        monkeypatch.setattr(records, "read_json", before_the_shim_wrote)

        seen = lab.runtime.observe("ses_1")

        assert missed, "the observer never read the shim's record"
        assert (seen.launched, seen.exited, seen.exit_status) == (True, True, 4)
        assert seen.started_at is not None and seen.ended_at is not None
        assert seen.started_at <= seen.ended_at

    def test_an_exit_by_signal_is_recorded(self, lab: Lab) -> None:
        lab.runtime.start(lab.passage(*python("import os, signal; os.kill(os.getpid(), 10)")))

        seen = lab.settled()

        assert (seen.exit_status, seen.signal) == (None, signal.SIGUSR1)
        assert not seen.interrupted

    @pytest.mark.parametrize(
        "program",
        [
            "kalends-no-such-program-anywhere",  # looked up in PATH
            "/nonexistent/kalends/program",  # an absolute path
        ],
    )
    def test_a_command_that_is_not_found_exits_127_with_the_error_in_the_log(
        self, lab: Lab, program: str
    ) -> None:
        lab.runtime.start(lab.passage(program, "--flag"))

        seen = lab.settled()

        assert (seen.exited, seen.exit_status, seen.launched) == (True, 127, False)
        assert f"cannot run {program!r}" in seen.log_tail

    def test_a_command_that_is_not_executable_exits_126(self, lab: Lab) -> None:
        script = lab.workspace / "script.sh"
        script.write_text("#!/bin/sh\necho never\n")

        lab.runtime.start(lab.passage("./script.sh"))

        seen = lab.settled()
        assert (seen.exit_status, seen.launched) == (126, False)
        assert "never" not in seen.log_tail

    def test_both_runtimes_satisfy_the_protocol(self, lab: Lab) -> None:
        runtime: Runtime = lab.runtime
        assert runtime.lookup("ses_1", "msg_1") is Presence.ABSENT


class TestIdempotentStart:
    def test_starting_the_same_message_again_launches_nothing(self, lab: Lab) -> None:
        counter = lab.tmp / "count"
        start = lab.passage(*counting(counter))

        results = [lab.runtime.start(start) for _ in range(3)]
        lab.settled()
        results.append(lab.runtime.start(start))  # after the end, too

        assert results == [Presence.PRESENT] * 4
        assert launches(counter) == 1

    def test_concurrent_starts_launch_once(self, lab: Lab) -> None:
        counter = lab.tmp / "count"
        start = lab.passage(*counting(counter))
        results: list[Presence] = []
        barrier = threading.Barrier(6)

        def go() -> None:
            barrier.wait()
            results.append(lab.runtime.start(start))

        threads = [threading.Thread(target=go) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lab.settled()

        assert results == [Presence.PRESENT] * 6
        assert launches(counter) == 1

    def test_another_message_for_an_admitted_session_is_unknown_and_not_launched(
        self, lab: Lab
    ) -> None:
        counter = lab.tmp / "count"
        lab.runtime.start(lab.passage(*counting(counter)))

        assert lab.runtime.start(lab.passage(*counting(counter), message="msg_2")) is (
            Presence.UNKNOWN
        )
        lab.settled()
        assert launches(counter) == 1
        assert json.loads((lab.dir() / "start.json").read_text())["messageId"] == "msg_1"


class TestLookup:
    def test_lookup_answers_present_absent_and_unknown_from_the_directory(self, lab: Lab) -> None:
        assert lab.runtime.lookup("ses_1", "msg_1") is Presence.ABSENT

        lab.runtime.start(lab.passage("true"))

        assert lab.runtime.lookup("ses_1", "msg_1") is Presence.PRESENT
        assert lab.runtime.lookup("ses_1", "msg_other") is Presence.UNKNOWN
        assert lab.runtime.lookup("ses_2", "msg_1") is Presence.ABSENT
        # A fresh runtime on the same root sees the same (nothing is kept in memory).
        again = ProcessRuntime(lab.runtime.root)
        assert again.lookup("ses_1", "msg_1") is Presence.PRESENT

    def test_a_stale_temporary_admission_is_ignored(self, lab: Lab) -> None:
        stale = lab.runtime.passages / ".admit-ses_2-crashed"
        stale.mkdir()
        (stale / "start.json").write_text(json.dumps({"sessionId": "ses_2", "messageId": "m"}))

        assert lab.runtime.lookup("ses_2", "m") is Presence.ABSENT
        assert lab.runtime.start(lab.passage("true", session="ses_2", message="m")) is (
            Presence.PRESENT
        )
        assert lab.settled("ses_2").exit_status == 0

    @pytest.mark.parametrize(
        "content",
        [
            None,  # a directory without start.json
            "{not json",  # a torn or foreign file
            json.dumps({"sessionId": "ses_other", "messageId": "m"}),  # another session's
        ],
    )
    def test_a_partial_or_foreign_directory_is_unknown_and_never_started(
        self, lab: Lab, content: str | None
    ) -> None:
        directory = lab.runtime.passages / "ses_3"
        directory.mkdir()
        if content is not None:
            (directory / "start.json").write_text(content)

        assert lab.runtime.lookup("ses_3", "m") is Presence.UNKNOWN
        assert lab.runtime.start(lab.passage("true", session="ses_3", message="m")) is (
            Presence.UNKNOWN
        )
        assert not (directory / "launch.lock").exists()

    def test_a_session_id_that_cannot_name_a_directory_is_absent_and_refused(
        self, lab: Lab
    ) -> None:
        assert lab.runtime.lookup("../ses_1", "m") is Presence.ABSENT
        assert lab.runtime.lookup(".admit-x", "m") is Presence.ABSENT
        with pytest.raises(InvalidInput):
            lab.runtime.start(lab.passage("true", session="a/b"))

    def test_observing_or_interrupting_an_unknown_session_is_not_found(self, lab: Lab) -> None:
        with pytest.raises(NotFound):
            lab.runtime.observe("ses_never")
        with pytest.raises(NotFound):
            lab.runtime.interrupt("ses_never")


class TestFamily:
    def test_a_background_grandchild_keeps_descendants_after_the_main_process_exits(
        self, lab: Lab
    ) -> None:
        lab.runtime.start(lab.passage("sh", "-c", "sleep 30 & echo started"))

        seen = lab.observe_until("ses_1", lambda o: o.exited, "the main process to exit")

        assert (seen.exit_status, seen.running, seen.descendants) == (0, False, True)
        assert not seen.settled
        lab.runtime.interrupt("ses_1")
        seen = lab.settled()
        assert seen.interrupted and seen.exit_status == 0

    def test_interrupt_stops_a_well_behaved_command_with_term(self, lab: Lab) -> None:
        lab.runtime.start(
            lab.passage(*python("print('ready', flush=True); import time; time.sleep(60)"))
        )
        assert lab.log_has("ses_1", "ready").running

        lab.runtime.interrupt("ses_1")

        seen = lab.settled()
        assert (seen.signal, seen.exit_status, seen.interrupted) == (signal.SIGTERM, None, True)

    def test_interrupt_kills_the_family_that_ignores_term_after_the_grace_period(
        self, lab: Lab
    ) -> None:
        mark = lab.tmp / "term-seen"
        child = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + (
            "print('child ready', flush=True); time.sleep(60)"
        )
        lab.runtime.start(
            lab.passage(
                *python(
                    f"""
                    import pathlib, signal, subprocess, sys, time
                    signal.signal(
                        signal.SIGTERM, lambda *a: pathlib.Path({str(mark)!r}).write_text("term")
                    )
                    subprocess.Popen([sys.executable, "-c", {child!r}])
                    print("parent ready", flush=True)
                    while True:
                        time.sleep(0.05)
                    """
                )
            )
        )
        lab.log_has("ses_1", "parent ready", "child ready")

        asked = time.monotonic()
        lab.runtime.interrupt("ses_1")
        wait_until(mark.exists, what="the command to receive TERM")
        seen = lab.settled()
        took = time.monotonic() - asked

        assert (seen.signal, seen.interrupted, seen.descendants) == (signal.SIGKILL, True, False)
        assert took >= GRACE  # KILL came only after the grace period
        lab.log_has("ses_1", "sent KILL after the 0.5 s grace period")
        assert json.loads((lab.dir() / "interrupt.json").read_text())["grace"] == GRACE

    def test_interrupting_before_the_launch_means_it_never_launches(self, lab: Lab) -> None:
        counter = lab.tmp / "count"
        start = lab.passage(*counting(counter))
        lab.runtime.admit(start)

        lab.runtime.interrupt("ses_1")
        assert lab.runtime.start(start) is Presence.PRESENT

        seen = lab.runtime.observe("ses_1")
        assert (seen.launched, seen.exited, seen.interrupted, seen.settled) == (
            False,
            True,
            True,
            True,
        )
        assert (seen.exit_status, seen.signal) == (None, None)
        assert launches(counter) == 0


class TestCrashes:
    def test_the_shim_survives_a_sigkill_of_the_process_that_started_it(self, lab: Lab) -> None:
        go = lab.tmp / "go"
        command = python(
            f"""
            import os, time
            while not os.path.exists({str(go)!r}):
                time.sleep(0.02)
            print("went", flush=True)
            """
        )
        starter = python(
            """
            import json, sys, time
            from kalends.missions.runtime import PassageStart
            from kalends.missions.runtime.process import ProcessRuntime
            start = PassageStart(**json.loads(sys.argv[2]))
            ProcessRuntime(sys.argv[1]).start(start)
            print("started", flush=True)
            time.sleep(120)
            """
        )
        spec = {
            "passage_id": "psg_1",
            "session_id": "ses_1",
            "message_id": "msg_1",
            "schedule_id": "sch_1",
            "workspace": str(lab.workspace),
            "command": list(command),
        }
        proc = subprocess.Popen(
            [*starter, str(lab.runtime.root), json.dumps(spec)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == "started\n"

        proc.kill()
        proc.wait()
        proc.stdout.close()
        assert lab.runtime.observe("ses_1").launched
        go.touch()

        seen = lab.settled()
        assert (seen.exit_status, seen.signal) == (0, None)
        assert "went" in seen.log_tail

    def test_a_start_completes_an_admission_that_crashed_before_launch_once(self, lab: Lab) -> None:
        counter = lab.tmp / "count"
        start = lab.passage(*counting(counter))
        assert lab.runtime.admit(start) is Presence.PRESENT

        seen = lab.runtime.observe("ses_1")
        assert (seen.launched, seen.running, seen.exited) == (False, False, False)
        assert lab.runtime.lookup("ses_1", "msg_1") is Presence.PRESENT

        threads = [threading.Thread(target=lab.runtime.start, args=(start,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        assert lab.settled().exit_status == 0
        assert launches(counter) == 1

    def test_a_shim_killed_outright_leaves_an_ended_passage_whose_family_still_counts(
        self, lab: Lab
    ) -> None:
        lab.runtime.start(
            lab.passage(*python("print('ready', flush=True); import time; time.sleep(60)"))
        )
        lab.log_has("ses_1", "ready")
        shim = json.loads((lab.dir() / "shim.json").read_text())

        os.kill(shim["shimPid"], signal.SIGKILL)

        seen = lab.observe_until("ses_1", lambda o: o.exited, "the lost shim to show")
        assert (seen.exit_status, seen.signal, seen.descendants, seen.settled) == (
            None,
            None,
            True,
            False,
        )
        assert "without recording" in seen.log_tail
        lab.runtime.interrupt("ses_1")
        assert not lab.settled().descendants


class TestWorkingDirectory:
    @pytest.mark.parametrize("cwd", ["../elsewhere", "/tmp", "sub/../../elsewhere"])
    def test_a_cwd_outside_the_workspace_is_refused_before_admission(
        self, lab: Lab, cwd: str
    ) -> None:
        with pytest.raises(InvalidInput, match="cwd"):
            lab.runtime.start(lab.passage("true", cwd=cwd))

        assert lab.runtime.lookup("ses_1", "msg_1") is Presence.ABSENT

    def test_a_symbolic_link_out_of_the_workspace_is_refused_at_launch(self, lab: Lab) -> None:
        outside = lab.tmp / "outside"
        outside.mkdir()
        (lab.workspace / "link").symlink_to(outside)
        counter = lab.tmp / "count"

        lab.runtime.start(lab.passage(*counting(counter), cwd="link"))

        seen = lab.settled()
        assert (seen.exit_status, seen.launched) == (126, False)
        assert "outside the workspace" in seen.log_tail
        assert launches(counter) == 0


class TestSecret:
    def test_the_secret_is_created_private_on_first_use_and_kept(self, tmp_path: Path) -> None:
        runtime = ProcessRuntime(tmp_path / "root")
        secret = runtime.secret

        path = tmp_path / "root" / "secret"
        assert path.stat().st_mode & 0o777 == 0o600
        assert len(secret) == 32
        assert ProcessRuntime(tmp_path / "root").secret == secret

    def test_start_refuses_a_profile_that_cannot_run(self, lab: Lab) -> None:
        with pytest.raises(InvalidInput, match="command"):
            lab.runtime.start(lab.passage())
        with pytest.raises(InvalidInput, match="env"):
            lab.runtime.start(lab.passage("true", env=(("A=B", "c"),)))
        assert lab.runtime.lookup("ses_1", "msg_1") is Presence.ABSENT


def test_the_shim_imports_nothing_but_the_standard_library() -> None:
    code = (
        "import runpy, sys; runpy.run_path(sys.argv[1]); "
        "print(sorted(m for m in sys.modules if m.startswith('kalends')))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, records.__file__],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_a_session_id_taken_by_another_leader_means_the_family_is_gone(lab: Lab) -> None:
    leader = subprocess.Popen(
        ["sh", "-c", "sleep 30 & echo up; wait"],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert leader.stdout is not None and leader.stdout.readline() == "up\n"
        stat = records.proc_stat(leader.pid)
        assert stat is not None

        ours = records.Family(leader.pid, stat.start_ticks).members()
        reused = records.Family(leader.pid, stat.start_ticks + 1).members()

        assert [p.pid for p in ours] != [] and reused == []
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
        if leader.stdout is not None:
            leader.stdout.close()
