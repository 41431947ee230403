"""A report kept in the exchange directory (``kalends report`` while the server is down)
is taken under the passage directory's lock: an observer never sees the spool already
taken and ``report.json`` not yet written, so two observers at once (a node's scheduler
and its loop) both see the report."""

from __future__ import annotations

import fcntl
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

from kalends.missions.runtime.base import Observation
from kalends.missions.runtime.process import spool_report
from kalends.missions.runtime.shim import read_json

from .support import Lab, python

SUMMARY = "kept while the server was down"


def _a_passage_with_a_spooled_report(lab: Lab) -> None:
    """An ended passage whose report waits in its exchange directory."""
    lab.runtime.start(lab.passage(*python("pass")))
    lab.settled()
    directory = lab.dir()
    spool = read_json(directory / "exchange.json")
    assert spool is not None
    token = lab.runtime.token("psg_1", "ses_1")
    spool_report(
        Path(spool["path"]),
        token,
        "completed",
        SUMMARY,
        at=datetime.now(UTC),
    )


def test_an_observer_waits_while_another_holds_the_passage_directory(lab: Lab) -> None:
    _a_passage_with_a_spooled_report(lab)
    fd = os.open(lab.dir(), os.O_RDONLY | os.O_DIRECTORY)
    seen: list[Observation] = []
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        observer = threading.Thread(target=lambda: seen.append(lab.runtime.observe("ses_1")))
        observer.start()
        observer.join(0.5)
        assert observer.is_alive(), "it read the report without the directory's lock"
    finally:
        os.close(fd)
    observer.join(10)
    [obs] = seen
    assert obs.report is not None and obs.report.summary == SUMMARY


def _observe(lab: Lab, session: str, start: threading.Barrier, into: list[str | None]) -> None:
    start.wait()
    found = lab.runtime.observe(session).report
    into.append(None if found is None else found.summary)


def test_observers_at_once_all_see_the_kept_report(lab: Lab) -> None:
    for round_ in range(20):
        session = f"ses_{round_}"
        lab.runtime.start(lab.passage(*python("pass"), session=session))
        lab.settled(session)
        directory = lab.dir(session)
        exchange = read_json(directory / "exchange.json")
        assert exchange is not None
        spool_report(
            Path(exchange["path"]),
            lab.runtime.token("psg_1", session),
            "completed",
            SUMMARY,
            at=datetime.now(UTC),
        )
        start = threading.Barrier(4)
        reports: list[str | None] = []
        threads = [
            threading.Thread(target=_observe, args=(lab, session, start, reports)) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert reports == [SUMMARY] * 4, f"round {round_}: {reports}"
