"""The coming passages a calendar feed shows (kalends.missions.coming_passages): the
slots kept between reads answer exactly as the rule asked afresh, as the clock moves
past slots and the horizon, and after a document changes."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kalends.missions import ComingPassage, coming, coming_passages
from missions.conftest import MissionWorld, daily_config

HORIZON = timedelta(days=30)
POLICIES: list[dict[str, Any]] = [
    {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},  # a few a month
    {"kind": "every", "minutes": 15},  # more than the most kept of a schedule
    {"kind": "cron", "expression": "0 */2 * * *", "zone": "America/Los_Angeles"},
    {"kind": "times", "times": ["06:00", "12:00", "18:00"], "zone": "Europe/London"},
    # Hourly on two days just inside the first horizon: its first slots reach past that
    # horizon, but not past the later ones.
    {"kind": "cron", "expression": "0 * 30,31 3 *", "zone": "UTC"},
    {"kind": "daily", "time": "01:30", "zone": "America/New_York", "interval_days": 2},
]


def read(mw: MissionWorld, now: datetime, most: int, *, fresh: bool) -> list[ComingPassage]:
    """The passages at ``now``; ``fresh``: asked of the rule afresh, the kept slots left
    as they were for the next read."""
    kept = dict(coming._kept)
    if fresh:
        coming._kept.clear()
    try:
        return mw.store.run(
            lambda conn: coming_passages(conn, mw.alice.id, now, now + HORIZON, most),
            write=False,
        )
    finally:
        if fresh:
            coming._kept.clear()
            coming._kept.update(kept)


def test_kept_slots_answer_as_the_rule_asked_afresh(mw: MissionWorld) -> None:
    made = []
    for n, policy in enumerate(POLICIES):
        # The last one may run five times only: its quota, not its rule, ends it.
        end = {"maxPassages": 5} if n == len(POLICIES) - 1 else None
        config = daily_config(title=f"Job {n}", policy=policy, **({"end": end} if end else {}))
        receipt = mw.schedules.create(mw.alice.id, mw.home.id, config, request_id=f"create-{n:04d}")
        assert receipt.mission_id is not None
        mw.schedules.play(
            mw.alice.id, receipt.mission_id, request_id=f"play-{n:04d}", expected_revision=1
        )
        made.append(receipt.mission_id)
    start = mw.clock.now()
    hits = 0
    for most in (200, 7):
        coming._kept.clear()
        # Steps of 47 minutes over four days: slots passing, new days at the horizon.
        for step in range(0, 4 * 24 * 60, 47):
            now = start + timedelta(minutes=step)
            before = {sid: kept[-1] for sid, kept in coming._kept.items()}
            kept = read(mw, now, most, fresh=False)
            hits += sum(1 for sid, slots in before.items() if coming._kept[sid][-1] is slots)
            assert kept == read(mw, now, most, fresh=True), (now, most)
            assert all(now < p.at <= now + HORIZON for p in kept)
    # Not vacuous: the kept slots answered many of those reads.
    assert hits > 100
    afresh = read(mw, now, 7, fresh=True)
    assert len([p for p in afresh if p.schedule_id == made[0]]) == 7  # `most` caps it
    full = read(mw, now, 200, fresh=True)
    assert len([p for p in full if p.schedule_id == made[1]]) == 200
    assert len([p for p in full if p.schedule_id == made[-1]]) == 5
    # An edit of the rule: the kept slots of the old one are not given again.
    kept = read(mw, now, 200, fresh=False)
    mw.schedules.configure(
        mw.alice.id,
        made[0],
        {"policy": {"kind": "daily", "time": "10:30", "zone": "Europe/Berlin"}},
        request_id="edit-0000",
        expected_revision=2,
    )
    edited = read(mw, now, 200, fresh=False)
    assert edited == read(mw, now, 200, fresh=True) != kept
    # A paused schedule shows nothing, kept slots or not.
    mw.schedules.pause(mw.alice.id, made[0], request_id="pause-0000", expected_revision=3)
    assert [p for p in read(mw, now, 200, fresh=False) if p.schedule_id == made[0]] == []
