"""Agent profiles in a schedule's configuration (kalends.missions.agents): a preset named
by ``profile.agent`` fills the command, placeholders are checked when configured (a typo
is refused naming the known ones, nothing written), an edit keeps the preset unless it
names another or ``null``, reads show it; substitution, the start text and the final
message readers as pure functions. Both databases where a schedule is written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kalends.errors import InvalidInput
from kalends.missions.agents import (
    FINAL_LINES,
    MAX_ARG_BYTES,
    MAX_PROMPT_CHARS,
    PLACEHOLDERS,
    PRESETS,
    FinalMessage,
    check_placeholders,
    final_message,
    prompt_text,
    substitute,
)
from kalends.missions.config import config_from_json, config_to_json, dump_config, load_config
from kalends.missions.limits import MAX_INSTRUCTION_CHARS, MAX_SUMMARY_BYTES
from kalends.missions.stored_text import stored_size
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld, daily_config
from missions.scheduler_support import create

PRESET_COMMANDS = {
    "claude": ["claude", "-p", "{prompt}", "--output-format", "json"],
    "codex": ["codex", "exec", "{prompt}"],
    "opencode": ["opencode", "run", "{prompt}"],
    "gemini": ["gemini", "-p", "{prompt}"],
    "aider": ["aider", "--yes-always", "--message", "{prompt}"],
    "shell": ["sh", "-c", "{objective}"],
}
DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}


def _config(profile: dict[str, Any]) -> dict[str, Any]:
    return daily_config(profile=profile)


class TestPresets:
    def test_the_presets_and_their_argument_lists_are_the_documented_ones(self) -> None:
        assert {name: list(p.command) for name, p in PRESETS.items()} == PRESET_COMMANDS
        readers = {name: p.final for name, p in PRESETS.items()}
        assert readers["claude"] is FinalMessage.JSON_RESULT
        assert readers["shell"] is FinalMessage.NONE
        assert {readers[n] for n in ("codex", "opencode", "gemini", "aider")} == {
            FinalMessage.LAST_LINES
        }
        assert all(p.reports for p in PRESETS.values())

    @pytest.mark.parametrize("name", list(PRESET_COMMANDS))
    def test_a_profile_naming_a_preset_and_no_command_runs_the_presets(self, name: str) -> None:
        config = config_from_json(_config({"agent": name}))
        assert config.profile.agent == name
        assert list(config.profile.command) == PRESET_COMMANDS[name]
        # The stored form names the preset and keeps the command it runs.
        assert load_config(dump_config(config)) == config
        assert config_to_json(config)["profile"]["agent"] == name

    def test_a_preset_with_a_command_of_its_own_keeps_that_command(self) -> None:
        given = ["claude", "-p", "{prompt}", "--model", "opus", "--output-format", "json"]
        config = config_from_json(_config({"agent": "claude", "command": given}))
        assert list(config.profile.command) == given and config.profile.agent == "claude"

    @pytest.mark.parametrize(
        "agent",
        [
            "nope",  # an unknown name
            "Claude",  # names are exact
            "",  # empty
            7,  # not a string
        ],
    )
    def test_an_unknown_preset_is_refused_naming_the_known_ones(self, agent: object) -> None:
        with pytest.raises(InvalidInput) as caught:
            config_from_json(_config({"agent": agent}))
        assert caught.value.field == "profile.agent"
        assert "claude, codex, opencode, gemini, aider, shell" in caught.value.message

    def test_without_agent_and_command_the_command_is_required(self) -> None:
        with pytest.raises(InvalidInput) as caught:
            config_from_json(_config({"agent": None}))
        assert caught.value.field == "profile.command"


class TestPlaceholders:
    def test_every_placeholder_is_accepted_anywhere_in_an_argument(self) -> None:
        command = ["run", *("{" + p + "}" for p in PLACEHOLDERS), "--in={input_file}.bak"]
        config = config_from_json(_config({"command": command}))
        assert list(config.profile.command) == command and config.profile.agent is None

    @pytest.mark.parametrize(
        ("arg", "typo"),
        [
            ("{objectve}", "objectve"),  # a letter missing
            ("--file={inputfile}", "inputfile"),  # inside an argument
            ("{Prompt}", "Prompt"),  # names are lower case
        ],
    )
    def test_a_placeholder_typo_is_refused_naming_the_known_ones(self, arg: str, typo: str) -> None:
        with pytest.raises(InvalidInput) as caught:
            config_from_json(_config({"command": ["tool", arg]}))
        assert caught.value.field == "profile.command[1]"
        message = caught.value.message
        assert f"unknown placeholder {{{typo}}}" in message
        assert all("{" + p + "}" in message for p in PLACEHOLDERS)

    @pytest.mark.parametrize(
        "arg",
        [
            "awk '{print $1}'",  # a script's braces
            "{}",  # find -exec's
            "echo ${HOME}",  # a shell's parameter
            '{"a": {"b": 1}}',  # JSON
            "{{objectve}}",  # an escaped name
            "{a,b}",  # brace expansion
        ],
    )
    def test_other_braces_are_literal_and_accepted(self, arg: str) -> None:
        config_from_json(_config({"command": ["tool", arg]}))
        assert substitute(["tool", arg], {"objective": "X"})[1] == arg.replace(
            "{{objectve}}", "{objectve}"
        )

    def test_a_stored_profile_is_read_as_stored_and_unknown_names_stay_literal(self) -> None:
        config = config_from_json(_config({"command": ["echo", "ok"]}))
        text = dump_config(config).replace('"ok"', '"{old_name}"')
        assert list(load_config(text).profile.command) == ["echo", "{old_name}"]
        assert substitute(["echo", "{old_name}"], {"objective": "x"}) == ("echo", "{old_name}")

    def test_substitution_keeps_each_argument_whole_without_a_shell(self) -> None:
        values = {"objective": "a b; rm -rf / 'q' \"d\"\nline", "passage_id": "psg_1"}
        got = substitute(["x", "{objective}", "id={passage_id}!", "{{objective}}"], values)
        assert got == ("x", values["objective"], "id=psg_1!", "{objective}")
        # A value is never substituted again, whatever braces it holds.
        again = substitute(["{notes}"], {"notes": "{objective} {{notes}}", "objective": "X"})
        assert again == ("{objective} {{notes}}",)

    def test_an_argument_that_could_pass_the_systems_bound_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as caught:
            check_placeholders(["x", "{prompt}{prompt}"])
        assert caught.value.field == "profile.command[1]"
        assert f"{MAX_ARG_BYTES:,}" in caught.value.message
        # objective and notes share their bound: both in one argument fit.
        check_placeholders(["x", "{objective}\n\n{notes}", "{prompt}"])

    def test_a_command_that_could_pass_a_mebibyte_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as caught:
            check_placeholders(["x", *["{prompt}"] * 17])
        assert caught.value.field == "profile.command"


class TestStartText:
    def test_the_prompt_says_title_instructions_launch_proof_and_watched_messages(self) -> None:
        given = {
            "title": "Nightly",
            "objective": "Fix it.",
            "notes": "Be brief.",
            "trigger": "scheduled",
            "slot": "2025-03-02T08:00:00+00:00",
            "proof": {"kind": "files", "change": ["a.txt"]},
            "watched": [
                {
                    "conversationId": "c1",
                    "messages": [{"text": "hello"}],
                    "needsDecision": None,
                    "failure": None,
                },
                {"conversationId": "c2", "messages": [], "failure": "moved"},
            ],
        }
        assert prompt_text(given) == (
            "Nightly\nObjective: Fix it.\nNotes: Be brief.\n"
            "Launched for the slot 2025-03-02T08:00:00Z.\n"
            'Condition proof: {"kind":"files","change":["a.txt"]}\n\n'
            "Watched conversation c1: 1 new message(s).\n"
            '{"text":"hello"}\n\n'
            "Watched conversation c2: not read (moved)."
        )

    def test_the_prompt_stays_within_the_start_text_budget(self) -> None:
        given = {
            "title": "T",
            "objective": "o" * (MAX_INSTRUCTION_CHARS - 2000),
            "trigger": "manual",
            "proof": {"change": ["p" * 20_000]},
        }
        said = prompt_text(given)
        # The proof takes the room left, cut and marked.
        assert len(said) == MAX_PROMPT_CHARS and said.endswith("p…")
        assert said.startswith("T\nObjective: ooo") and "Launched by Run now." in said
        # Instructions at their bound with their labels: the text is cut at the budget.
        given["objective"] = "o" * MAX_INSTRUCTION_CHARS
        assert len(prompt_text(given)) == MAX_PROMPT_CHARS


class TestFinalMessage:
    def test_json_result_is_the_result_of_the_last_json_object(self) -> None:
        out = (
            b'{"result": "early"}\nnoise on stderr\n'
            + json.dumps({"type": "result", "result": "All done.", "cost": 1}).encode()
            + b"\n[kalends] a note\n"
        )
        assert final_message(FinalMessage.JSON_RESULT, out, MAX_SUMMARY_BYTES) == "All done."
        pretty = json.dumps({"result": "Pretty."}, indent=2).encode()
        assert final_message(FinalMessage.JSON_RESULT, pretty, MAX_SUMMARY_BYTES) == "Pretty."

    def test_json_result_marked_as_an_error_or_missing_is_none(self) -> None:
        error = json.dumps({"result": "boom", "is_error": True}).encode()
        assert final_message(FinalMessage.JSON_RESULT, error, MAX_SUMMARY_BYTES) is None
        assert final_message(FinalMessage.JSON_RESULT, b"plain text\n", MAX_SUMMARY_BYTES) is None

    def test_last_lines_are_the_last_paragraph_bounded(self) -> None:
        out = b"progress\n\n" + "\n".join(f"line {n}" for n in range(100)).encode()
        out += b"\n\x1b[1mbold\x1b[0m\n\n[kalends] a note\n"
        found = final_message(FinalMessage.LAST_LINES, out, MAX_SUMMARY_BYTES)
        assert found is not None
        lines = found.split("\n")
        assert len(lines) == FINAL_LINES and lines[-1] == "bold" and lines[-2] == "line 99"
        said = b"working\nstill working\n\nDone: fixed the test.\nAll green.\n"
        found = final_message(FinalMessage.LAST_LINES, said, MAX_SUMMARY_BYTES)
        assert found == "Done: fixed the test.\nAll green."
        long = ("é" * 10_000).encode()
        cut = final_message(FinalMessage.LAST_LINES, long, MAX_SUMMARY_BYTES)
        assert cut is not None and stored_size(cut) <= MAX_SUMMARY_BYTES and set(cut) == {"é"}

    def test_none_reads_nothing_and_empty_output_has_no_message(self) -> None:
        assert final_message(FinalMessage.NONE, b"done\n", MAX_SUMMARY_BYTES) is None
        assert final_message(FinalMessage.LAST_LINES, b"\n \n", MAX_SUMMARY_BYTES) is None


class TestSchedules:
    def test_reads_show_the_preset_and_the_command_it_runs(self, mw: MissionWorld) -> None:
        sid = create(mw, DAILY, "create-agent-1", profile={"agent": "codex"})
        profile = mw.schedules.detail(mw.bob.id, sid)["profile"]
        assert profile == {
            "command": ["codex", "exec", "{prompt}"],
            "envNames": [],
            "cwd": ".",
            "agent": "codex",
        }

    @pytest.mark.parametrize(
        ("profile", "field"),
        [
            ({"agent": "nope"}, "profile.agent"),  # an unknown preset
            ({"command": ["tool", "{objectve}"]}, "profile.command[1]"),  # a typo
            ({"agent": "shell", "command": ["sh", "-c", "{notez}"]}, "profile.command[2]"),
        ],
    )
    def test_bad_profiles_are_refused_and_nothing_is_written(
        self, mw: MissionWorld, profile: dict[str, Any], field: str
    ) -> None:
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.create(mw.bob.id, mw.home.id, _config(profile), request_id="create-bad-01")
        assert caught.value.field == field
        sid = create(mw, DAILY, "create-agent-2", profile={"agent": "codex"})
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.configure(
                mw.bob.id, sid, {"profile": profile}, request_id="edit-bad-01", expected_revision=1
            )
        assert caught.value.field == field

    def test_an_edit_keeps_the_preset_unless_it_names_another_or_null(
        self, mw: MissionWorld
    ) -> None:
        sid = create(mw, DAILY, "create-agent-3", profile={"agent": "claude"})

        def edit(profile: dict[str, Any], n: int) -> dict[str, Any]:
            rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
            mw.schedules.configure(
                mw.bob.id, sid, {"profile": profile}, request_id=f"edit-agent-{n:02d}",
                expected_revision=rev,
            )  # fmt: skip
            shown: dict[str, Any] = mw.schedules.detail(mw.bob.id, sid)["profile"]
            return shown

        kept = edit({"command": ["claude", "-p", "{prompt}", "--output-format", "json"]}, 1)
        assert kept["agent"] == "claude"
        other = edit({"agent": "gemini"}, 2)
        assert (other["agent"], other["command"]) == ("gemini", ["gemini", "-p", "{prompt}"])
        plain = edit({"command": ["make"], "agent": None}, 3)
        assert "agent" not in plain and plain["command"] == ["make"]
