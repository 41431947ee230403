"""Kill -9 mid-round leaves every slot with exactly one ledger row (issue 24 "Proof"), on
every backend.

Scheduler processes over a shared runtime directory SIGKILL themselves after a chosen
number of committed writes and runtime starts of a round, across outages and New York's
and Berlin's spring DST weekend; a fresh process takes over after the dead one's lease.
In the end each schedule's ledger holds exactly its rule's nominal slots up to its
high-water mark, each once (the slots that exist and those the rule does not produce),
its launched rows are its admissions, and no passage started twice.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select

from kalends.civil import parse_rule, slots_between
from kalends.civil.missing import missing_slots
from kalends.missions.scheduler import Scheduler
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.testing import StorageTarget
from missions.conftest import MissionWorld
from missions.scheduler_support import (
    DirRuntime,
    create,
    play,
    start_calls,
    stored_body,
    worker_main,
)

pytestmark = pytest.mark.slow

POLICIES: tuple[dict[str, Any], ...] = (
    {"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "skip"},
    {"kind": "daily", "time": "02:30", "zone": "Europe/Berlin"},
    {"kind": "times", "times": ["01:15", "02:15", "03:15"], "zone": "Europe/Berlin", "gap": "skip"},
    {"kind": "every", "hours": 5},
    {"kind": "cron", "expression": "*/30 2 * * *", "zone": "America/New_York"},
    {"kind": "weekdays", "days": [1, 3, 5, 7], "time": "02:30", "zone": "America/New_York"},
)
START = datetime(2027, 3, 10, 12, tzinfo=UTC)
LEASE_OVER = timedelta(seconds=61)
# Rounds: (the clock, writes before the SIGKILL): outages between them.
ROUNDS = (
    (datetime(2027, 3, 11, 9, tzinfo=UTC), 3),
    (datetime(2027, 3, 14, 8, tzinfo=UTC), 5),
    (datetime(2027, 3, 31, 6, 40, tzinfo=UTC), 6),
)


def _rounds(url: str, root: Path, owner: str, steps: list[tuple[datetime, int | None]]) -> bool:
    """One scheduler process, one round at each step's instant; a step with a number of
    writes dies after that many (and is the last). Whether it died so."""
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    process = ctx.Process(
        target=worker_main,
        args=(url, owner, str(root / "runtime"), str(root / f"starts-{owner}.log"), theirs),
        daemon=True,
    )
    process.start()
    theirs.close()
    try:
        for at, die_after in steps:
            mine.send(("step", at.isoformat(), die_after))
            if not mine.poll(120):
                raise AssertionError("the scheduler process did not answer")
            try:
                reply = mine.recv()
            except EOFError:
                reply = ("died",)
            if die_after is None:
                assert reply[0] == "ok", reply
        if steps[-1][1] is None:
            mine.send(("stop",))
        process.join(30)
        return process.exitcode == -signal.SIGKILL
    finally:
        if process.is_alive() and process.pid is not None:
            os.kill(process.pid, signal.SIGKILL)
        process.join(10)


def test_sigkill_mid_round_leaves_every_slot_with_exactly_one_row(
    mw: MissionWorld, storage_target: StorageTarget, tmp_path: Path
) -> None:
    mw.clock.set(START)
    sids: dict[UUID, dict[str, Any]] = {}
    for i, policy in enumerate(POLICIES * 3):
        sid = create(mw, policy, f"create-{i:05d}")
        play(mw, sid)
        sids[sid] = policy
    (tmp_path / "runtime").mkdir()
    rng = random.Random(24)
    url = storage_target.url
    died = 0
    for n, (at, writes) in enumerate(ROUNDS):
        died += _rounds(url, tmp_path, f"doomed-{n}", [(at, writes + rng.randrange(3))])
        _rounds(url, tmp_path, f"fresh-{n}", [(at + LEASE_OVER, None), (at + 2 * LEASE_OVER, None)])
    end = ROUNDS[-1][0] + 3 * LEASE_OVER
    mw.clock.set(end)
    runtime = DirRuntime(tmp_path / "runtime", log=tmp_path / "starts-last.log")
    last = Scheduler(mw.store, runtime, owner="last")
    for _ in range(4):
        last.run_once()
        mw.clock.advance(timedelta(seconds=31))

    assert died == len(ROUNDS), "a doomed scheduler finished its round"
    rows = mw.store.run(
        lambda conn: [dict(r._mapping) for r in conn.execute(select(slot_ledger))],
        write=False,
    )
    starts = start_calls(sorted(tmp_path.glob("starts-*.log")))
    assert starts, "no passage started"
    assert all(sum(c.values()) == 1 for c in starts.values()), starts
    for sid, policy in sids.items():
        body = stored_body(mw.store, sid)
        assert body.high_water is not None and body.first_play_at == START
        rule = parse_rule(policy)
        slots = slots_between(rule, START, body.high_water + timedelta(seconds=1), origin=START)
        missing = missing_slots(rule, START, body.high_water, origin=START)
        expected = sorted(
            [f"{s.at:%Y-%m-%dT%H:%M:%SZ}" for s in slots]
            + [f"missing:{m.local}@{m.zone}" for m in missing]
        )
        mine = [r for r in rows if r["schedule_id"] == sid]
        assert sorted(r["slot_key"] for r in mine) == expected, policy
        launched = [r for r in mine if r["outcome"] == "launched"]
        assert len(launched) == body.admitted, policy
        assert {r["passage_id"] for r in launched} == {r.passage_id for r in body.results}
