"""The file clock (a testing and simulation aid): the instant another process writes,
read whole; a waiting loop woken when it changes; refused when the file holds none."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kalends.clock import ENV_CLOCK_FILE, FileClock, SystemClock, clock_from_environment
from kalends.errors import InvalidInput


def _write(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def test_it_reads_the_instant_the_file_holds_in_utc(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    _write(path, "2027-03-14T02:30:00-05:00")
    clock = FileClock(path)
    assert clock.now() == datetime(2027, 3, 14, 7, 30, tzinfo=UTC)
    _write(path, "2027-03-15T00:00:00Z\n")
    assert clock.now() == datetime(2027, 3, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "",  # nothing
        "tomorrow",  # words
        "2027-03-14T02:30:00",  # naive: no offset
    ],
)
def test_a_file_without_an_aware_instant_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "clock"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=ENV_CLOCK_FILE):
        FileClock(path).now()
    with pytest.raises(InvalidInput, match=ENV_CLOCK_FILE):
        clock_from_environment({ENV_CLOCK_FILE: str(path)})


def test_without_the_variable_the_clock_is_the_system_s() -> None:
    assert isinstance(clock_from_environment({}), SystemClock)


def test_a_wait_ends_when_the_file_changes_and_not_before(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    _write(path, "2027-01-01T00:00:00Z")
    stop = threading.Event()
    waiter = FileClock(path).waiting(lambda seconds, ev: ev.wait(seconds))
    started = time.monotonic()
    assert waiter(0.3, stop) is False  # nothing changed: the whole wait
    assert time.monotonic() - started >= 0.3
    timer = threading.Timer(0.2, _write, (path, "2027-01-01T01:00:00Z"))
    timer.start()
    started = time.monotonic()
    assert waiter(30, stop) is True
    assert time.monotonic() - started < 5
    timer.join()


def test_a_worker_with_a_clock_file_holding_no_instant_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    path.write_text("soon")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    done = subprocess.run(
        [sys.executable, "-m", "kalends", "worker", "--database",
         f"sqlite:///{tmp_path / 'k.sqlite3'}", "--once"],
        env=env | {ENV_CLOCK_FILE: str(path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert ENV_CLOCK_FILE in done.stderr and "holds no ISO 8601 instant" in done.stderr
    assert not (tmp_path / "k.sqlite3").exists()
