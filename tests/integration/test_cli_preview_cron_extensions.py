"""`kalends preview` with cron's extensions (issue 24 §4), run as a user runs it: a real
process, its JSON and its exit code."""

from __future__ import annotations

import json
import subprocess
import sys


def kalends(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kalends", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_last_friday_of_each_month_is_previewed_with_its_sentence() -> None:
    rule = '{"kind":"cron","expression":"0 18 * * 5L","zone":"Asia/Kathmandu"}'
    done = kalends("preview", "--rule", rule, "--after", "2026-01-01T00:00:00Z", "--count", "3",
                   "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["sentence"] == "At 18:00 on the last Friday of the month (Asia/Kathmandu)"
    assert [(s["local"], s["at"]) for s in document["slots"]] == [
        ("2026-01-30T18:00:00", "2026-01-30T12:15:00Z"),
        ("2026-02-27T18:00:00", "2026-02-27T12:15:00Z"),
        ("2026-03-27T18:00:00", "2026-03-27T12:15:00Z"),
    ]


def test_a_sixth_monday_is_refused_naming_the_field_and_the_limit() -> None:
    rule = '{"kind":"cron","expression":"0 9 * * 1#6","zone":"UTC"}'
    done = kalends("preview", "--rule", rule, "--after", "2026-01-01T00:00:00Z")
    assert done.returncode == 2
    assert "day of week field '1#6'" in done.stderr
    assert "1-5" in done.stderr
    assert done.stdout == ""
