"""`kalends preview`, driven as a user drives it: a real process, its output and exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

NEW_YORK_DAILY = '{"kind":"daily","time":"02:30","zone":"America/New_York"}'
AFTER = "2026-01-01T00:00:00Z"
BAD_TIME = '{"kind":"daily","time":"24:00","zone":"UTC"}'
ABBREVIATION = '{"kind":"daily","time":"09:00","zone":"CET"}'
IN_GAP = '{"kind":"at","local":"2026-03-08T02:30:00","zone":"America/New_York"}'


def kalends(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kalends", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def preview_document(rule: str, after: str, count: int) -> Any:
    done = kalends("preview", "--rule", rule, "--after", after, "--count", str(count), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def preview_json(rule: str, after: str, count: int) -> Any:
    return preview_document(rule, after, count)["slots"]


class TestPreviewJson:
    def test_it_prints_each_slot_with_utc_local_zone_and_dst_note(self) -> None:
        slots = preview_json(NEW_YORK_DAILY, "2026-03-06T00:00:00Z", 4)
        assert slots == [
            {"at": "2026-03-06T07:30:00Z", "local": "2026-03-06T02:30:00",
             "zone": "America/New_York", "dst": None},
            {"at": "2026-03-07T07:30:00Z", "local": "2026-03-07T02:30:00",
             "zone": "America/New_York", "dst": None},
            {"at": "2026-03-08T07:00:00Z", "local": "2026-03-08T03:00:00",
             "zone": "America/New_York", "dst": "shifted"},
            {"at": "2026-03-09T06:30:00Z", "local": "2026-03-09T02:30:00",
             "zone": "America/New_York", "dst": None},
        ]  # fmt: skip

    def test_the_repeated_hour_is_marked_earlier_of_two(self) -> None:
        rule = '{"kind":"daily","time":"01:30","zone":"America/New_York"}'
        slots = preview_json(rule, "2026-11-01T00:00:00-04:00", 1)
        assert slots == [
            {"at": "2026-11-01T05:30:00Z", "local": "2026-11-01T01:30:00",
             "zone": "America/New_York", "dst": "earlier-of-two"}
        ]  # fmt: skip

    def test_the_after_instant_is_the_origin_of_elapsed_rules(self) -> None:
        slots = preview_json('{"kind":"every","minutes":15}', "2026-01-01T10:07:00+01:00", 2)
        assert [s["at"] for s in slots] == ["2026-01-01T09:22:00Z", "2026-01-01T09:37:00Z"]

    def test_it_says_the_rule_in_words_beside_the_slots(self) -> None:
        document = preview_document(NEW_YORK_DAILY, "2026-03-06T00:00:00Z", 1)
        assert document["sentence"] == "Every day at 02:30 (America/New_York)"
        assert len(document["slots"]) == 1

    def test_the_rule_can_come_from_a_file(self, tmp_path: Path) -> None:
        path = tmp_path / "rule.json"
        path.write_text(NEW_YORK_DAILY, encoding="utf-8")
        slots = preview_json(f"@{path}", "2026-03-06T00:00:00Z", 1)
        assert slots[0]["local"] == "2026-03-06T02:30:00"


class TestPreviewTable:
    def test_without_json_it_prints_a_readable_table_with_dst_notes(self) -> None:
        done = kalends("preview", "--rule", NEW_YORK_DAILY, "--after", "2026-03-07T12:00:00Z")
        assert done.returncode == 0, done.stderr
        assert "2026-03-08 03:00:00" in done.stdout
        assert "shifted" in done.stdout
        assert "America/New_York" in done.stdout

    def test_the_rule_in_words_comes_before_the_slots(self) -> None:
        rule = '{"kind":"cron","expression":"0 9 1,15 * 1","zone":"UTC"}'
        done = kalends("preview", "--rule", rule, "--after", AFTER, "--count", "2")
        assert done.returncode == 0, done.stderr
        sentence = "At 09:00 on day-of-month 1 and 15, or on Monday (UTC)"
        assert done.stdout.splitlines()[0] == sentence
        assert done.stdout.index(sentence) < done.stdout.index("2026-01-01 09:00:00")


class TestPreviewBadInput:
    @pytest.mark.parametrize(
        ("args", "expected"),
        [
            # malformed JSON
            (["--rule", "{nope", "--after", AFTER], "rule: not valid JSON"),
            # an unknown kind names the field
            (["--rule", '{"kind":"hourly"}', "--after", AFTER], "kind"),
            # a bad time names the field
            (["--rule", BAD_TIME, "--after", AFTER], "time"),
            # an abbreviation is not a zone
            (["--rule", ABBREVIATION, "--after", AFTER], "zone"),
            # an instant without offset is ambiguous
            (["--rule", NEW_YORK_DAILY, "--after", "2026-01-01T00:00:00"], "after"),
            # garbage instant
            (["--rule", NEW_YORK_DAILY, "--after", "yesterday"], "after"),
            # count out of range
            (["--rule", NEW_YORK_DAILY, "--after", AFTER, "--count", "0"], "count"),
            (["--rule", NEW_YORK_DAILY, "--after", AFTER, "--count", "10001"], "count"),
            # a user-given wall time inside a gap names the transition
            (
                ["--rule", IN_GAP, "--after", AFTER],
                "2026-03-08T02:30:00 does not exist in America/New_York: "
                "clocks jump from 02:00 to 03:00",
            ),
            # a missing file
            (["--rule", "@/nonexistent/rule.json", "--after", AFTER], "rule: cannot read"),
        ],
    )  # fmt: skip
    def test_bad_input_exits_2_with_a_one_line_error_naming_the_field(
        self, args: list[str], expected: str
    ) -> None:
        done = kalends("preview", *args)
        assert done.returncode == 2
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("error:")
        assert expected in lines[0]
