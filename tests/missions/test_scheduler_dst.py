"""The scheduler across DST transition weekends (SPEC §2, seed 002 "Daily scheduler and
civil time"), with the fake clock and the in-process runtime, on every backend.

The clock steps every 15 minutes from Saturday 18:00 to Sunday 12:00 local time, the
scheduler looks at each step and every passage settles at once, so each slot is admitted
at its own instant. Generated mission slots: a daily clock in a gap shifts to the first
existing instant; an overlap takes the earlier instant and never fires twice; elapsed
intervals and cron with a stepped minute field follow real elapsed time (a repeated hour
matches in both passes); a wall-clock roll-back never re-admits a processed slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest

from kalends.missions.limits import MAX_RESULTS
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import LookResult, Scheduler
from missions.conftest import MissionWorld
from missions.scheduler_support import Driver, create, play, stored_body

HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Transition:
    """One zone's transition weekend of 2025."""

    zone: str
    saturday: tuple[int, int, int]
    repeated: str  # a wall time inside the repeated hour (fall) / the gap (spring)

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    def local(self, day: int, hh: int, mm: int = 0, fold: int = 0) -> datetime:
        """The instant of a local wall time on the Saturday (day 0) or the Sunday (day 1)."""
        day_ = date(*self.saturday) + timedelta(days=day)
        wall = datetime.combine(day_, time(hh, mm), tzinfo=self.tz).replace(fold=fold)
        return wall.astimezone(UTC)

    def wall(self, instant: datetime) -> tuple[str, int]:
        """The local wall time of an instant on its day, and which pass of it (fold)."""
        local = instant.astimezone(self.tz)
        return local.strftime("%a %H:%M"), local.fold


SPRING = {
    "America/New_York": Transition("America/New_York", (2025, 3, 8), "02:30"),
    "Europe/Berlin": Transition("Europe/Berlin", (2025, 3, 29), "02:30"),
}
FALL = {
    "America/New_York": Transition("America/New_York", (2025, 11, 1), "01:30"),
    "Europe/Berlin": Transition("Europe/Berlin", (2025, 10, 25), "02:30"),
}
ZONES = sorted(SPRING)


def _cron_fixed(hhmm: str) -> str:
    hh, mm = hhmm.split(":")
    return f"{int(mm)} {int(hh)} * * *"


def _world(
    mw: MissionWorld, t: Transition, *, instant: bool = True, hour: int = 0
) -> tuple[Driver, Any]:
    """A scheduler over the in-process runtime, the clock at ``hour`` on the Saturday."""
    mw.clock.set(t.local(0, hour))
    runtime = MemoryRuntime(clock=mw.clock, instant=instant)
    return Driver(mw, Scheduler(mw.store, runtime, owner="dst")), runtime


def _schedules(mw: MissionWorld, t: Transition) -> dict[str, UUID]:
    policies: dict[str, dict[str, Any]] = {
        "daily": {"kind": "daily", "time": t.repeated, "zone": t.zone},
        "times": {"kind": "times", "times": ["01:30", "02:30"], "zone": t.zone},
        "every": {"kind": "every", "minutes": 60},
        "cron-fixed": {"kind": "cron", "expression": _cron_fixed(t.repeated), "zone": t.zone},
        "cron-step": {"kind": "cron", "expression": "*/30 * * * *", "zone": t.zone},
    }
    ids = {}
    for n, (name, policy) in enumerate(policies.items()):
        sid = create(mw, policy, f"create-{n:04d}", title=name)
        play(mw, sid)
        ids[name] = sid
    return ids


def _drive_weekend(mw: MissionWorld, t: Transition) -> tuple[Driver, dict[str, UUID]]:
    driver, _ = _world(mw, t)
    ids = _schedules(mw, t)
    driver.until(t.local(2, 0))
    for sid in ids.values():
        body = stored_body(mw.store, sid)
        assert body.pending is None
        assert body.admitted == body.settled == body.successful == len(driver.slots(sid))
        kept = min(MAX_RESULTS, len(driver.slots(sid)))  # the result window
        assert [r.slot for r in body.results] == driver.slots(sid)[-kept:]
        assert len({r.passage_id for r in body.results}) == len(body.results)
    # Every slot was admitted at its own instant, never late and never early.
    assert all(a.at == a.slot for a in driver.admissions)
    return driver, ids


def _elapsed(driver: Driver, sid: UUID, every: timedelta, start: datetime, end: datetime) -> None:
    """The slots are every ``every`` of real time from one interval after ``start``
    through ``end``: none missing, none twice."""
    slots = driver.slots(sid)
    count = (end - start) // every
    assert slots == [start + every * k for k in range(1, count + 1)]


@pytest.mark.parametrize("zone", ZONES)
def test_spring_forward_weekend(mw: MissionWorld, zone: str) -> None:
    t = SPRING[zone]
    driver, ids = _drive_weekend(mw, t)
    walls = {name: [t.wall(s) for s in driver.slots(sid)] for name, sid in ids.items()}
    # Daily at 02:30: Saturday at 02:30; Sunday's 02:30 falls in the gap (clocks jump
    # from 02:00 to 03:00): exactly one passage that day, at 03:00, the first instant.
    assert walls["daily"] == [("Sat 02:30", 0), ("Sun 03:00", 0)]
    assert driver.slots(ids["daily"])[1] == t.local(1, 3)
    # Cron with fixed minute and hour is a wall-clock rule, like daily.
    assert walls["cron-fixed"] == walls["daily"]
    # Times 01:30 and 02:30: 01:30 exists; 02:30 shifts to 03:00.
    assert walls["times"] == [
        ("Sat 01:30", 0),
        ("Sat 02:30", 0),
        ("Sun 01:30", 0),
        ("Sun 03:00", 0),
    ]
    # Every 60 minutes and cron */30 follow elapsed time: no missing, no extra slot.
    start, end = t.local(0, 0), t.local(2, 0)
    assert end - start == 47 * HOUR  # the lost hour
    _elapsed(driver, ids["every"], HOUR, start, end)
    _elapsed(driver, ids["cron-step"], HOUR / 2, start, end)
    sunday = [w for w, _ in walls["cron-step"] if w.startswith("Sun 0")]
    assert sunday[:6] == [
        "Sun 00:00",
        "Sun 00:30",
        "Sun 01:00",
        "Sun 01:30",
        "Sun 03:00",
        "Sun 03:30",
    ]


@pytest.mark.parametrize("zone", ZONES)
def test_fall_back_weekend(mw: MissionWorld, zone: str) -> None:
    t = FALL[zone]
    driver, ids = _drive_weekend(mw, t)
    walls = {name: [t.wall(s) for s in driver.slots(sid)] for name, sid in ids.items()}
    hh, mm = (int(x) for x in t.repeated.split(":"))
    earlier = t.local(1, hh, mm, fold=0)
    later = t.local(1, hh, mm, fold=1)
    assert later - earlier == HOUR  # the wall time exists twice
    # Daily in the repeated hour: exactly one passage that Sunday, at the earlier instant.
    assert walls["daily"] == [(f"Sat {t.repeated}", 0), (f"Sun {t.repeated}", 0)]
    assert driver.slots(ids["daily"])[1] == earlier
    wall_clock = [
        a.slot for a in driver.admissions if a.schedule not in (ids["every"], ids["cron-step"])
    ]
    assert later not in wall_clock
    # Cron with fixed fields behaves like daily.
    assert walls["cron-fixed"] == walls["daily"]
    # Times 01:30 and 02:30: each once a day, the repeated one at its earlier instant.
    assert walls["times"] == [
        ("Sat 01:30", 0),
        ("Sat 02:30", 0),
        ("Sun 01:30", 0),
        ("Sun 02:30", 0),
    ]
    # Elapsed time: every 60 minutes and cron */30 go straight through the extra hour;
    # the repeated hour matches cron */30 in both passes.
    start, end = t.local(0, 0), t.local(2, 0)
    assert end - start == 49 * HOUR  # the extra hour
    _elapsed(driver, ids["every"], HOUR, start, end)
    _elapsed(driver, ids["cron-step"], HOUR / 2, start, end)
    repeated = [w for w in walls["cron-step"] if w[0].startswith(f"Sun {hh:02d}:")]
    assert repeated == [
        (f"Sun {hh:02d}:00", 0),
        (f"Sun {hh:02d}:30", 0),
        (f"Sun {hh:02d}:00", 1),
        (f"Sun {hh:02d}:30", 1),
    ]


def _finish_all(runtime: MemoryRuntime) -> None:
    for session in runtime.sessions():
        if runtime.observe(session).running:
            runtime.finish(session)


@pytest.mark.parametrize("season", ["spring", "fall"])
def test_wall_clock_roll_back_never_readmits_a_slot(mw: MissionWorld, season: str) -> None:
    """After a passage the wall clock goes back an hour (an NTP correction); the scheduler
    sees the same slots come due again, and admits none of them twice."""
    t = (SPRING if season == "spring" else FALL)["America/New_York"]
    driver, runtime = _world(mw, t, instant=False, hour=18)
    driver.after_round = lambda _: _finish_all(runtime)
    daily = create(mw, {"kind": "daily", "time": t.repeated, "zone": t.zone}, "create-0001")
    every = create(mw, {"kind": "every", "minutes": 60}, "create-0002")
    step = create(mw, {"kind": "cron", "expression": "*/30 * * * *", "zone": t.zone}, "create-0003")
    for sid in (daily, every, step):
        play(mw, sid)
    hh, mm = (int(x) for x in t.repeated.split(":"))
    slot = t.local(1, hh, mm) if season == "fall" else t.local(1, 3)
    driver.until(slot + timedelta(minutes=15))  # admitted at the slot, settled 15 min later
    assert driver.slots(daily) == [slot]
    before = {sid: list(driver.slots(sid)) for sid in (daily, every, step)}
    mw.clock.set(mw.clock.now() - HOUR)  # the roll-back
    driver.until(slot + 2 * HOUR)
    assert driver.slots(daily) == [slot]
    for sid in (daily, every, step):
        slots = driver.slots(sid)
        assert slots[: len(before[sid])] == before[sid]
        assert slots == sorted(set(slots)), "a slot was admitted twice"
        assert all(s > before[sid][-1] for s in slots[len(before[sid]) :])
        body = stored_body(mw.store, sid)
        assert body.admitted == len(slots) and body.settled + (body.pending is not None) == len(
            slots
        )
        assert all(runtime.launches(s) == 1 for s in runtime.sessions())
    # The high-water marks never moved back (checked at every step by the driver).
    assert driver.high_water[daily][-1] == slot


def test_daily_in_a_gap_is_admitted_at_the_first_existing_instant_after_a_long_sleep(
    mw: MissionWorld,
) -> None:
    """The scheduler sleeps at most an hour: a look shortly before the gap and the next
    after it still admit the shifted slot at 03:00 local, not a later one."""
    t = SPRING["America/New_York"]
    driver, _ = _world(mw, t, hour=18)
    sid = create(mw, {"kind": "daily", "time": "02:30", "zone": t.zone}, "create-0001")
    play(mw, sid)
    driver.once()
    for at in (t.local(1, 1, 59), t.local(1, 3), t.local(1, 3, 1), t.local(2, 2, 30)):
        mw.clock.set(at)
        result: LookResult = driver.once()
        assert result.errors == 0
    assert driver.slots(sid) == [t.local(1, 3), t.local(2, 2, 30)]
    assert [a.at for a in driver.admissions] == [t.local(1, 3), t.local(2, 2, 30)]


def test_helper_walls_are_what_the_zone_says() -> None:
    """The test's own time arithmetic: the repeated hour and the gap where 2025 has them."""
    fall = FALL["America/New_York"]
    assert fall.local(1, 1, 30, fold=1) - fall.local(1, 1, 30, fold=0) == HOUR
    spring = SPRING["Europe/Berlin"]
    assert spring.local(1, 3) - spring.local(1, 1, 59) == timedelta(minutes=1)
    assert time(2, 30) == time.fromisoformat(spring.repeated)
