"""``kalends report``: a passage records its report; forged, foreign or late reports are
refused with nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kalends.cli import report as report_cli
from kalends.cli.main import app
from kalends.errors import InvalidInput
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime import process
from kalends.missions.runtime.process import PassageSettled, record_report
from kalends.missions.runtime.token import InvalidToken, sign

from .support import Lab

runner = CliRunner()


def passage_env(lab: Lab, session: str = "ses_1", passage: str = "psg_1") -> dict[str, str]:
    """The environment the runtime gives a passage (only what ``kalends report`` reads)."""
    return {
        process.ENV_PASSAGE_TOKEN: lab.runtime.token(passage, session),
        process.ENV_RUNTIME_ROOT: str(lab.runtime.root),
        process.ENV_PASSAGE_DIR: str(lab.dir(session)),
    }


def report(env: dict[str, str], *args: str) -> Result:
    base: dict[str, str | None] = {
        process.ENV_PASSAGE_TOKEN: None,
        process.ENV_RUNTIME_ROOT: None,
        process.ENV_PASSAGE_DIR: None,
    }
    return runner.invoke(app, ["report", *args], env={**base, **env})


@pytest.fixture
def admitted(lab: Lab) -> Lab:
    """Two admitted passages that never launched: nothing has settled."""
    lab.runtime.admit(lab.passage("true"))
    lab.runtime.admit(lab.passage("true", session="ses_2", passage="psg_2", message="msg_2"))
    return lab


def report_file(lab: Lab, session: str = "ses_1") -> Path:
    return lab.dir(session) / "report.json"


class TestRecording:
    def test_a_report_is_recorded_and_observed(self, admitted: Lab) -> None:
        result = report(passage_env(admitted), "completed", "--summary", "all green")

        assert result.exit_code == 0, result.output
        assert "Recorded report: completed." in result.stdout
        seen = admitted.runtime.observe("ses_1").report
        assert seen is not None and (seen.outcome, seen.summary) == ("completed", "all green")
        doc = json.loads(report_file(admitted).read_text())
        assert (doc["passageId"], doc["sessionId"], doc["version"]) == ("psg_1", "ses_1", 1)

    def test_the_last_report_wins(self, admitted: Lab) -> None:
        env = passage_env(admitted)
        assert report(env, "completed", "--summary", "first").exit_code == 0
        assert report(env, "failed", "--summary", "second thoughts").exit_code == 0

        seen = admitted.runtime.observe("ses_1").report
        assert seen is not None and (seen.outcome, seen.summary) == ("failed", "second thoughts")

    def test_json_prints_the_recorded_report(self, admitted: Lab) -> None:
        result = report(passage_env(admitted), "failed", "--summary", "no disk", "--json")

        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert (doc["outcome"], doc["summary"]) == ("failed", "no disk")

    def test_the_passage_directory_alone_locates_the_runtime(self, admitted: Lab) -> None:
        env = passage_env(admitted)
        del env[process.ENV_RUNTIME_ROOT]

        assert report(env, "completed", "--summary", "ok").exit_code == 0
        assert report_file(admitted).exists()

    @pytest.mark.parametrize(
        "summary",
        [
            "x" * MAX_SUMMARY_BYTES,  # one byte a character
            "😀" * (MAX_SUMMARY_BYTES // 4),  # four bytes a character
            "\n" * (MAX_SUMMARY_BYTES // 2),  # a newline is stored as two bytes, ``\n``
        ],
    )
    def test_a_summary_of_exactly_the_byte_bound_is_accepted(
        self, admitted: Lab, summary: str
    ) -> None:
        result = report(passage_env(admitted), "completed", "--summary", summary)

        assert result.exit_code == 0, result.output
        seen = admitted.runtime.observe("ses_1").report
        assert seen is not None and seen.summary == summary


class TestRefusals:
    def assert_refused(self, lab: Lab, result: Result, code: int, message: str) -> None:
        assert result.exit_code == code, result.output
        assert message in result.stderr
        assert not report_file(lab).exists() and not report_file(lab, "ses_2").exists()

    def test_without_a_token_nothing_is_written(self, admitted: Lab) -> None:
        env = passage_env(admitted)
        del env[process.ENV_PASSAGE_TOKEN]

        result = report(env, "completed", "--summary", "x")

        self.assert_refused(admitted, result, 2, "no passage token")

    def test_without_a_runtime_nothing_is_written(self, admitted: Lab) -> None:
        env = passage_env(admitted)
        del env[process.ENV_RUNTIME_ROOT], env[process.ENV_PASSAGE_DIR]

        result = report(env, "completed", "--summary", "x")

        self.assert_refused(admitted, result, 2, "no runtime")

    @pytest.mark.parametrize(
        "forge",
        [
            lambda token: token[:-2] + ("AA" if not token.endswith("AA") else "BB"),  # signature
            lambda token: "e30" + token[3:],  # payload
            lambda token: sign(b"another secret, another runtime", "psg_1", "ses_1"),  # key
        ],
    )
    def test_a_forged_token_is_refused(self, admitted: Lab, forge: Callable[[str], str]) -> None:
        env = passage_env(admitted)
        env[process.ENV_PASSAGE_TOKEN] = forge(env[process.ENV_PASSAGE_TOKEN])

        result = report(env, "completed", "--summary", "x", "--json")

        self.assert_refused(admitted, result, 2, "error:")
        assert json.loads(result.stdout)["error"]["code"] == "invalid-token"

    def test_a_token_of_another_passage_is_refused_in_this_passage(self, admitted: Lab) -> None:
        env = passage_env(admitted)
        env[process.ENV_PASSAGE_TOKEN] = admitted.runtime.token("psg_2", "ses_2")

        result = report(env, "completed", "--summary", "x")

        self.assert_refused(admitted, result, 2, "another passage")

    def test_a_token_naming_no_admitted_passage_is_refused(self, admitted: Lab) -> None:
        env = passage_env(admitted)
        del env[process.ENV_PASSAGE_DIR]
        env[process.ENV_PASSAGE_TOKEN] = admitted.runtime.token("psg_1", "ses_9")

        result = report(env, "completed", "--summary", "x")

        self.assert_refused(admitted, result, 2, "names no passage")

    def test_a_token_with_the_wrong_passage_for_its_session_is_refused(self, admitted: Lab) -> None:
        env = passage_env(admitted)
        env[process.ENV_PASSAGE_TOKEN] = admitted.runtime.token("psg_2", "ses_1")

        result = report(env, "completed", "--summary", "x")

        self.assert_refused(admitted, result, 2, "names no passage")

    @pytest.mark.parametrize(
        "summary",
        [
            "x" * (MAX_SUMMARY_BYTES + 1),  # one byte over, in ASCII
            "😀" * (MAX_SUMMARY_BYTES // 4) + "x",  # one byte over, in four-byte characters
            "😀" * (MAX_SUMMARY_BYTES // 2),  # half as many characters as bytes allowed
            "\n" * (MAX_SUMMARY_BYTES // 2 + 1),  # escapes count as stored
        ],
    )
    def test_a_summary_over_the_byte_bound_is_refused(self, admitted: Lab, summary: str) -> None:
        result = report(passage_env(admitted), "completed", "--summary", summary, "--json")

        self.assert_refused(admitted, result, 2, f"bound of {MAX_SUMMARY_BYTES} bytes")
        assert json.loads(result.stdout)["error"]["code"] == "invalid-input"

    def test_a_summary_that_is_not_valid_unicode_is_refused(self, admitted: Lab) -> None:
        # Undecodable bytes on a command line arrive as lone surrogates, which no stored
        # document can hold.
        result = report(passage_env(admitted), "completed", "--summary", "bad \udcff byte")

        self.assert_refused(admitted, result, 2, "valid Unicode")

    def test_an_unknown_outcome_is_refused(self, admitted: Lab) -> None:
        result = report(passage_env(admitted), "done", "--summary", "x")

        assert result.exit_code == 2
        assert not report_file(admitted).exists()

    def test_a_settled_passage_takes_no_more_reports(self, lab: Lab) -> None:
        lab.runtime.start(lab.passage("true"))
        lab.settled()

        result = report(passage_env(lab), "completed", "--summary", "too late")

        assert result.exit_code == 1, result.output
        assert "has settled" in result.stderr
        assert not report_file(lab).exists()
        with pytest.raises(PassageSettled):
            lab.runtime.report(lab.runtime.token("psg_1", "ses_1"), "completed", "late")


def test_the_command_and_the_runtime_name_the_same_environment() -> None:
    names = ("ENV_PASSAGE_TOKEN", "ENV_RUNTIME_ROOT", "ENV_PASSAGE_DIR")

    assert [getattr(report_cli, n) for n in names] == [getattr(process, n) for n in names]


def test_a_runtime_with_its_own_secret_takes_reports_through_its_method(tmp_path: Path) -> None:
    runtime = process.ProcessRuntime(tmp_path / "root", secret=b"s" * 32)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lab = Lab(runtime, workspace, tmp_path)
    runtime.admit(lab.passage("true"))
    token = runtime.token("psg_1", "ses_1")

    recorded = runtime.report(token, "completed", "via the API")

    assert runtime.observe("ses_1").report == recorded
    with pytest.raises(InvalidToken, match="no runtime secret"):
        record_report(runtime.root, token, "completed", "x", at=recorded.at)


def test_record_report_refuses_a_summary_over_the_byte_bound_and_writes_nothing(
    admitted: Lab,
) -> None:
    token = admitted.runtime.token("psg_1", "ses_1")
    at = admitted.runtime.clock.now()

    with pytest.raises(InvalidInput, match=f"bound of {MAX_SUMMARY_BYTES} bytes") as caught:
        record_report(admitted.runtime.root, token, "completed", "😀" * 897, at=at)

    assert caught.value.details == {
        "field": "summary",
        "size": 897 * 4,
        "limit": MAX_SUMMARY_BYTES,
    }
    assert not report_file(admitted).exists()
    # The same summary one character shorter is the largest that fits.
    record_report(admitted.runtime.root, token, "completed", "😀" * 896, at=at)
    assert report_file(admitted).exists()


def test_the_help_names_the_byte_bound() -> None:
    result = runner.invoke(app, ["report", "--help"], env={"COLUMNS": "200"})

    assert f"{MAX_SUMMARY_BYTES:,} bytes" in result.stdout
    assert f"{MAX_SUMMARY_BYTES // 4} four-byte" in result.stdout
