"""`kalends report` over HTTP: a passage of a server sends its report to that server.

A passage launched by `kalends serve` has ``KALENDS_API_URL``; `kalends report` then
posts to ``/api/passages/report`` with ``Authorization: Passage <token>``, and the server
records the report in its runtime directory. Refusals (a settled passage, a forged
token, a summary too long) come back as the server's error with a non-zero exit; a
server that cannot be reached is said so, and the report is never written locally
instead.

The passages here are admitted (and one launched) by a runtime of the test on the
server's own runtime directory, so that they share its secret.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kalends.cli.main import app
from kalends.cli.report import ReportNotSent, send_report
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import (
    ENV_API_URL,
    ENV_PASSAGE_DIR,
    ENV_PASSAGE_TOKEN,
    ENV_REPORT_SPOOL,
    ENV_RUNTIME_ROOT,
    ProcessRuntime,
)
from kalends.missions.runtime.token import sign

from .conftest import (
    HOST,
    Server,
    environment,
    finish,
    kalends_executable,
    poll,
    requests_logged,
    start_server,
)

REPORT = "/api/passages/report"
ENV_NAMES = (ENV_API_URL, ENV_PASSAGE_TOKEN, ENV_RUNTIME_ROOT, ENV_PASSAGE_DIR, ENV_REPORT_SPOOL)
runner = CliRunner()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server on a fresh SQLite file; no loops: the test's runtime starts passages."""
    directory = tmp_path_factory.mktemp("report-http")
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


@pytest.fixture
def runtime(server: Server, tmp_path: Path) -> ProcessRuntime:
    """A runtime on the server's runtime directory: the same secret signs the tokens."""
    return ProcessRuntime(server.directory / "runtime")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    found = tmp_path / "workspace"
    found.mkdir()
    return found


class Passage:
    """An admitted passage of the test: its IDs and the token its environment carries."""

    def __init__(self, runtime: ProcessRuntime, workspace: Path, *command: str) -> None:
        tag = uuid.uuid4().hex[:12]
        self.runtime = runtime
        self.passage_id, self.session_id = f"psg_{tag}", f"ses_{tag}"
        self.start = PassageStart(
            passage_id=self.passage_id,
            session_id=self.session_id,
            message_id=f"msg_{tag}",
            schedule_id="sch_report_http",
            workspace=str(workspace),
            command=command or ("true",),
        )
        runtime.admit(self.start)
        self.token = runtime.token(self.passage_id, self.session_id)

    @property
    def report_file(self) -> Path:
        return self.runtime.passage_dir(self.session_id) / "report.json"

    @property
    def spool(self) -> Path:
        """An exchange directory, as the runtime makes at launch (``io/``)."""
        found = self.runtime.passage_dir(self.session_id) / "io"
        found.mkdir(exist_ok=True)
        return found

    def local_env(self) -> dict[str, str]:
        """What the local path would need to write the report itself."""
        return {
            ENV_RUNTIME_ROOT: str(self.runtime.root),
            ENV_PASSAGE_DIR: str(self.runtime.passage_dir(self.session_id)),
        }


def report(env: dict[str, str], *args: str) -> Result:
    """`kalends report ARGS` in this process with only ``env`` of the passage variables."""
    cleared: dict[str, str | None] = dict.fromkeys(ENV_NAMES)
    return runner.invoke(app, ["report", *args], env={**cleared, **env})


def closed_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


class TestRecorded:
    def test_the_fast_path_executable_reports_to_the_server_with_the_token(
        self, server: Server, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        other = Passage(runtime, workspace)
        before = len(requests_logged(server, "POST", REPORT))

        # Only the URL and the token: no runtime directory to write into locally.
        done = subprocess.run(
            [kalends_executable(), "report", "completed", "--summary", "all green"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env=environment(KALENDS_API_URL=server.base, KALENDS_PASSAGE_TOKEN=mine.token),
        )

        assert (done.returncode, done.stdout, done.stderr) == (
            0,
            "Recorded report: completed.\n",
            "",
        )
        seen = runtime.observe(mine.session_id).report
        assert seen is not None and (seen.outcome, seen.summary) == ("completed", "all green")
        doc = json.loads(mine.report_file.read_text())
        assert (doc["passageId"], doc["sessionId"]) == (mine.passage_id, mine.session_id)
        # The token spoke for its own passage only; the server took one request.
        assert runtime.observe(other.session_id).report is None
        logged = poll(
            lambda: requests_logged(server, "POST", REPORT)[before:], 5.0, "the access log"
        )
        assert [e["status"] for e in logged] == [200]

    def test_json_prints_what_the_server_recorded_and_the_last_report_wins(
        self, server: Server, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        env = {ENV_API_URL: server.base + "/", ENV_PASSAGE_TOKEN: mine.token}
        assert report(env, "completed", "--summary", "first").exit_code == 0

        result = report(env, "failed", "--summary", "second thoughts", "--json")

        assert result.exit_code == 0, result.output
        printed = json.loads(result.stdout)
        assert (printed["outcome"], printed["summary"]) == ("failed", "second thoughts")
        seen = runtime.observe(mine.session_id).report
        assert seen is not None
        assert (seen.outcome, seen.summary) == ("failed", "second thoughts")
        assert printed["at"].replace("Z", "+00:00") == seen.at.isoformat()

    def test_a_summary_of_exactly_the_ceiling_is_recorded(
        self, server: Server, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        summary = "é" * (MAX_SUMMARY_BYTES // 2)  # two bytes a character

        result = report(
            {ENV_API_URL: server.base, ENV_PASSAGE_TOKEN: mine.token},
            "completed",
            "--summary",
            summary,
        )

        assert result.exit_code == 0, result.output
        seen = runtime.observe(mine.session_id).report
        assert seen is not None and seen.summary == summary

    def test_the_http_report_loads_neither_httpx_nor_the_database_nor_missions(
        self, server: Server, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        code = textwrap.dedent(
            """\
            import sys
            from kalends.cli.entry import main
            sys.argv = ["kalends", "report", "completed", "--summary", "light"]
            try:
                main()
            except SystemExit as exc:
                assert not exc.code, exc.code
            heavy = ("httpx", "sqlalchemy", "kalends.missions", "kalends.storage", "rich")
            print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or
                         m.startswith(heavy)))
            """
        )

        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env=environment(KALENDS_API_URL=server.base, KALENDS_PASSAGE_TOKEN=mine.token),
        )

        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["Recorded report: completed.", "[]"]
        assert mine.report_file.exists()


class TestRefused:
    def test_a_settled_passage_is_refused_with_the_servers_error_and_exit_1(
        self, server: Server, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        runtime.start(mine.start)
        poll(lambda: runtime.observe(mine.session_id).settled, 30.0, "the passage to settle")

        result = report(
            {ENV_API_URL: server.base, ENV_PASSAGE_TOKEN: mine.token, **mine.local_env()},
            "completed",
            "--summary",
            "too late",
            "--json",
        )

        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(
            "error: the kalends server refused the report (409 passage-settled): "
            f"passage {mine.passage_id} has settled"
        ), result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "passage-settled"
        assert not mine.report_file.exists()

    @pytest.mark.parametrize(
        "forge",
        [
            pytest.param(
                lambda p: sign(b"another runtime's secret", p.passage_id, p.session_id),
                id="another-secret",
            ),
            pytest.param(
                lambda p: p.token[:-2] + ("AA" if not p.token.endswith("AA") else "BB"),
                id="signature",
            ),
            pytest.param(
                lambda p: p.runtime.token(p.passage_id, "ses_never_admitted"), id="no-such-passage"
            ),
        ],
    )
    def test_a_token_the_server_did_not_sign_for_a_passage_is_refused_with_exit_2(
        self,
        server: Server,
        runtime: ProcessRuntime,
        workspace: Path,
        forge: Callable[[Passage], str],
    ) -> None:
        mine = Passage(runtime, workspace)

        result = report(
            {ENV_API_URL: server.base, ENV_PASSAGE_TOKEN: forge(mine)},
            "completed",
            "--summary",
            "forged",
        )

        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(
            "error: the kalends server refused the report (401 invalid-passage-token): "
        ), result.stderr
        assert not mine.report_file.exists()

    @pytest.mark.parametrize(
        "summary",
        [
            "x" * (MAX_SUMMARY_BYTES + 1),  # over by its length alone
            "😀" * (MAX_SUMMARY_BYTES // 4 + 1),  # few characters, over in bytes
        ],
    )
    def test_a_summary_over_the_byte_bound_is_refused_by_the_server_with_exit_2(
        self, server: Server, runtime: ProcessRuntime, workspace: Path, summary: str
    ) -> None:
        mine = Passage(runtime, workspace)

        result = report(
            {ENV_API_URL: server.base, ENV_PASSAGE_TOKEN: mine.token},
            "completed",
            "--summary",
            summary,
        )

        assert result.exit_code == 2, result.output
        assert "(422 invalid-input)" in result.stderr
        assert not mine.report_file.exists()

    def test_without_a_token_nothing_is_sent(self) -> None:
        with socket.socket() as listener:
            listener.bind((HOST, 0))
            listener.listen()
            listener.setblocking(False)
            url = f"http://{HOST}:{listener.getsockname()[1]}"

            result = report({ENV_API_URL: url}, "completed", "--summary", "x")

            assert result.exit_code == 2, result.output
            assert "no passage token" in result.stderr
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody connected

    def test_a_url_that_is_not_http_is_refused_with_exit_2(
        self, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)

        result = report(
            {ENV_API_URL: "ftp://127.0.0.1/", ENV_PASSAGE_TOKEN: mine.token},
            "completed",
            "--summary",
            "x",
        )

        assert result.exit_code == 2, result.output
        assert f"error: {ENV_API_URL}: an http:// or https:// URL" in result.stderr
        assert not mine.report_file.exists()


class TestServerDown:
    def test_an_unreachable_server_is_said_with_exit_1_and_no_local_fallback(
        self, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        down = f"http://{HOST}:{closed_port()}"

        # The local path's variables are there too: it must still not write the report.
        result = report(
            {ENV_API_URL: down, ENV_PASSAGE_TOKEN: mine.token, **mine.local_env()},
            "completed",
            "--summary",
            "nobody listens",
            "--json",
        )

        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(
            f"error: cannot send the report to the kalends server at {down}: "
        ), result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "server-unreachable"
        assert not mine.report_file.exists()

    def test_a_server_that_never_answers_times_out_and_says_the_outcome_is_unknown(
        self,
    ) -> None:
        with socket.socket() as silent:
            silent.bind((HOST, 0))
            silent.listen()  # accepts connections (the backlog) and never answers
            url = f"http://{HOST}:{silent.getsockname()[1]}"
            started = time.monotonic()

            with pytest.raises(ReportNotSent, match=r"did not answer within 0\.5 s") as caught:
                send_report(url, "token", "completed", "x", timeout=0.5)

        assert time.monotonic() - started < 5
        assert "may or may not be recorded" in caught.value.message

    def test_a_server_that_is_not_kalends_is_refused_clearly(self) -> None:
        # Something answers 200 with a body that is no report: not a success.
        def answer_once(listener: socket.socket) -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                    b"Content-Length: 5\r\nConnection: close\r\n\r\nhello"
                )

        with socket.socket() as listener:
            listener.bind((HOST, 0))
            listener.listen()
            url = f"http://{HOST}:{listener.getsockname()[1]}"
            thread = threading.Thread(target=answer_once, args=(listener,), daemon=True)
            thread.start()

            with pytest.raises(ReportNotSent, match="answered something that is no report"):
                send_report(url, "token", "completed", "x", timeout=5)

            thread.join(5)


class TestKeptFirst:
    """With an exchange directory (every passage the runtime launches has one) the report
    is kept there before it is sent, and removed once the server answered."""

    def test_a_sent_report_leaves_no_kept_copy(
        self, server: Server, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        env = {ENV_API_URL: server.base, ENV_PASSAGE_TOKEN: mine.token}

        result = report(
            {**env, ENV_REPORT_SPOOL: str(mine.spool)}, "completed", "--summary", "ok", "--json"
        )

        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["delivery"] == "sent"
        assert list(mine.spool.iterdir()) == []
        seen = runtime.observe(mine.session_id).report
        assert seen is not None and seen.outcome == "completed"

    def test_a_report_the_server_refuses_is_not_kept(
        self, server: Server, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        forged = sign(b"k" * 32, mine.passage_id, mine.session_id)

        result = report(
            {
                ENV_API_URL: server.base,
                ENV_PASSAGE_TOKEN: forged,
                ENV_REPORT_SPOOL: str(mine.spool),
            },
            "completed",
        )

        assert result.exit_code == 2, result.output
        assert list(mine.spool.iterdir()) == []
        assert runtime.observe(mine.session_id).report is None

    def test_a_server_down_defers_delivery_with_exit_0_and_the_runtime_takes_it(
        self, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        down = f"http://{HOST}:{closed_port()}"

        result = report(
            {ENV_API_URL: down, ENV_PASSAGE_TOKEN: mine.token, ENV_REPORT_SPOOL: str(mine.spool)},
            "failed",
            "--summary",
            "kept",
            "--json",
        )

        assert result.exit_code == 0, result.output
        printed = json.loads(result.stdout)
        assert (printed["outcome"], printed["summary"], printed["delivery"]) == (
            "failed",
            "kept",
            "deferred",
        )
        assert printed["reason"].startswith(
            f"cannot send the report to the kalends server at {down}"
        )
        assert "delivery is deferred" in result.stderr
        assert not mine.report_file.exists()
        # The runtime records where the exchange directory is at launch; here by hand.
        exchange = {"version": 1, "path": str(mine.spool)}
        (runtime.passage_dir(mine.session_id) / "exchange.json").write_text(json.dumps(exchange))
        seen = runtime.observe(mine.session_id).report
        assert seen is not None and (seen.outcome, seen.summary) == ("failed", "kept")
        assert list(mine.spool.iterdir()) == []

    def test_a_summary_too_long_is_refused_even_when_the_server_is_down(
        self, runtime: ProcessRuntime, workspace: Path
    ) -> None:
        mine = Passage(runtime, workspace)
        down = f"http://{HOST}:{closed_port()}"

        result = report(
            {ENV_API_URL: down, ENV_PASSAGE_TOKEN: mine.token, ENV_REPORT_SPOOL: str(mine.spool)},
            "completed",
            "--summary",
            "x" * (MAX_SUMMARY_BYTES + 1),
        )

        assert result.exit_code == 2, result.output
        assert list(mine.spool.iterdir()) == []
