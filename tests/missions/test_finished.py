"""A running schedule with nothing left to launch reads as finished, naming the bound that
ended it, alike in the service's detail and page and in the HTTP detail and list reads.
Interrupted (``no-scheduler``) is kept for a schedule that still has a slot or a pending
passage while no live scheduler holds it. On both backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from api.conftest import ApiWorld, make_api_world
from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.unit_of_work import Store
from missions.conftest import daily_config

# The wake of an admitted passage: the pending fallback (30 s), with room to spare.
SETTLE = timedelta(seconds=40)
DISPLAY = ("state", "desiredState", "displayState", "displayReason", "nextDueAt")


@pytest.fixture
def api(store: Store, fake_clock: FakeClock, tmp_path: Path) -> Iterator[ApiWorld]:
    world = make_api_world(build(store), fake_clock, tmp_path)
    with world.client:
        yield world


class Schedules:
    """bob's schedules in ``home``, a scheduler over an instant runtime, and every read."""

    def __init__(self, api: ApiWorld) -> None:
        self.api = api
        self.bob = api.actors["bob"].id
        self.runtime = MemoryRuntime(clock=api.clock, instant=True)
        self.scheduler = Scheduler(api.store, self.runtime, owner="s1")
        self.made = 0

    def played(self, **overrides: Any) -> str:
        self.made += 1
        service = self.api.services.schedules
        receipt = service.create(
            self.bob,
            self.api.home.id,
            daily_config(**overrides),
            request_id=f"create-{self.made:04d}",
        )
        sid = str(receipt.mission_id)
        service.play(self.bob, sid, request_id=f"play-{self.made:06d}", expected_revision=1)
        return sid

    def run(self, rounds: int, step: timedelta = SETTLE) -> None:
        """``rounds`` looks of the scheduler, the clock moving ``step`` after each."""
        for _ in range(rounds):
            self.scheduler.run_once()
            self.api.clock.advance(step)

    def detail(self, sid: str) -> dict[str, Any]:
        return self.api.services.schedules.detail(self.bob, sid)

    def reads(self, sid: str) -> list[dict[str, Any]]:
        """The schedule as the service's detail and page and the HTTP detail and list
        show it."""
        api, home = self.api, self.api.home.id
        page = api.services.schedules.page(self.bob, home).items
        headers = api.headers("bob")
        http_page = api.client.get(f"/api/workspaces/{home}/missions/scheduled", headers=headers)
        http_detail = api.client.get(
            f"/api/workspaces/{home}/missions/{sid}/schedule", headers=headers
        )
        assert http_page.status_code == http_detail.status_code == 200
        return [
            self.detail(sid),
            next(item for item in page if item["id"] == sid),
            next(item for item in http_page.json()["items"] if item["id"] == sid),
            http_detail.json(),
        ]

    def shown(self, sid: str) -> tuple[Any, ...]:
        """What every read shows of the state, once: all four agree."""
        seen = {tuple(doc[key] for key in DISPLAY) for doc in self.reads(sid)}
        assert len(seen) == 1, seen
        return seen.pop()


@pytest.fixture
def s(api: ApiWorld) -> Schedules:
    return Schedules(api)


EVERY_HOUR = {"kind": "every", "hours": 1}
EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *", "zone": "UTC"}
HOURLY_STEP = timedelta(minutes=35)

# (configuration, scheduler rounds and the clock's step after each, the reason, passages)
FINISHED: list[tuple[dict[str, Any], int, timedelta, str, int]] = [
    # `--immediate`: its single passage ran and settled
    ({"policy": {"kind": "immediate"}}, 3, SETTLE, "one-shot-done", 1),
    # once, an hour after the first Play
    ({"policy": {"kind": "after", "hours": 1}}, 4, HOURLY_STEP, "one-shot-done", 1),
    # every minute, at most two passages
    ({"policy": EVERY_MINUTE, "end": {"maxPassages": 2}}, 8, SETTLE, "quota-exhausted", 2),
    # hourly within 90 minutes of the first Play: the slot at +2 h is past it
    ({"policy": EVERY_HOUR, "end": {"within": {"minutes": 90}}}, 4, HOURLY_STEP,
     "within-reached", 1),
    # February 30th never comes
    ({"policy": {"kind": "cron", "expression": "0 0 30 2 *", "zone": "UTC"}}, 1, SETTLE,
     "no-more-slots", 0),
]  # fmt: skip


class TestFinished:
    @pytest.mark.parametrize(("config", "rounds", "step", "reason", "launched"), FINISHED)
    def test_a_schedule_with_nothing_left_reads_finished_with_its_bound_everywhere(
        self,
        s: Schedules,
        config: dict[str, Any],
        rounds: int,
        step: timedelta,
        reason: str,
        launched: int,
    ) -> None:
        sid = s.played(**config)
        s.run(rounds, step)
        assert s.shown(sid) == ("running", "running", "finished", reason, None)
        doc = s.detail(sid)
        assert doc["counters"]["admitted"] == doc["counters"]["settled"] == launched
        assert doc["pending"] is None and len(s.runtime.sessions()) == launched
        # The scheduler let the wake go: no scheduler needs to hold a finished schedule.
        assert doc["technical"]["scheduler"]["live"] is False

    def test_an_until_bound_ends_a_schedule_once_no_slot_is_left_before_it(
        self, s: Schedules
    ) -> None:
        # Hourly from the first Play, until 90 minutes after it (a UTC wall time).
        until = s.api.clock.now() + timedelta(minutes=90)
        local = until.replace(tzinfo=None).isoformat(timespec="seconds")
        sid = s.played(policy=EVERY_HOUR, end={"until": {"local": local, "zone": "UTC"}})
        s.run(5, timedelta(minutes=15))  # the slot at +1 h is admitted in the fifth look
        s.scheduler.run_once()  # and archived here
        # The next slot (+2 h) is past the bound, which is itself still ahead.
        assert s.api.clock.now() < until
        assert s.shown(sid) == ("running", "running", "finished", "until-reached", None)
        assert s.detail(sid)["counters"]["settled"] == 1

    def test_the_block_reason_keeps_its_own_words(self, s: Schedules) -> None:
        sid = s.played(policy={"kind": "immediate"})
        s.run(3)
        doc = s.detail(sid)
        assert (doc["displayReason"], doc["blockReason"]) == ("one-shot-done", "quota-exhausted")

    @pytest.mark.parametrize("action", ["pause", "stop"])
    def test_a_paused_or_stopped_schedule_shows_its_own_state(
        self, s: Schedules, action: str
    ) -> None:
        sid = s.played(policy={"kind": "immediate"})
        s.run(3)
        rev = s.detail(sid)["revision"]
        s.api.services.schedules.control(
            s.bob, sid, action, request_id=f"{action}-0001", expected_revision=rev
        )
        assert s.shown(sid)[1:4] == (s.detail(sid)["desiredState"], s.detail(sid)["state"], None)

    def test_raising_the_quota_of_a_finished_schedule_lets_it_go_on(self, s: Schedules) -> None:
        sid = s.played(policy=EVERY_MINUTE, end={"maxPassages": 1})
        s.run(4)
        assert s.shown(sid)[2:4] == ("finished", "quota-exhausted")
        rev = s.detail(sid)["revision"]
        s.api.services.schedules.control(
            s.bob, sid, "configure", request_id="configure-01", expected_revision=rev,
            changes={"end": {"maxPassages": 10}},
        )  # fmt: skip
        # Work is left again; the edit armed its wake for a scheduler to take.
        assert s.shown(sid)[2:4] == ("interrupted", "no-scheduler")
        s.run(2)
        state, _, shown, reason, due = s.shown(sid)
        assert (state, shown, reason) == ("running", "running", None) and due is not None
        assert s.detail(sid)["counters"]["settled"] >= 2


class TestInterruptedOnlyWithWorkLeft:
    def test_a_schedule_with_slots_left_and_no_live_scheduler_is_interrupted(
        self, s: Schedules
    ) -> None:
        sid = s.played()  # daily at 09:00 in Berlin
        assert s.shown(sid)[2:4] == ("interrupted", "no-scheduler")
        s.scheduler.run_once()
        assert s.shown(sid)[2:4] == ("running", None)
        s.api.clock.advance(timedelta(minutes=2))  # the scheduler died: its lease ran out
        assert s.shown(sid)[2:4] == ("interrupted", "no-scheduler")

    def test_a_pending_passage_that_used_the_last_of_the_quota_is_still_work_left(
        self, s: Schedules
    ) -> None:
        # The runtime never ends the passage: it stays pending, and must be observed.
        s.runtime.instant = False
        sid = s.played(policy={"kind": "immediate"})
        s.scheduler.run_once()
        doc = s.detail(sid)
        assert doc["pending"]["admitted"] is True and doc["quota"]["remaining"] == 0
        assert s.shown(sid)[2:4] == ("running", None)
        s.api.clock.advance(timedelta(minutes=2))  # no live scheduler observes it now
        assert s.shown(sid)[2:4] == ("interrupted", "no-scheduler")
        s.runtime.finish(doc["pending"]["sessionId"])
        s.scheduler.run_once()
        assert s.shown(sid)[2:4] == ("finished", "one-shot-done")
