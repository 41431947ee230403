"""Simulation (issue 24 §2): the real scheduler and controls on a fake clock in a private
database, with outages, pauses, drawn durations and failures; the ledger it returns."""

from __future__ import annotations

import random
import re
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from kalends.errors import InvalidInput
from kalends.missions import simulation as simulation_module
from kalends.missions.simulation import (
    Progress,
    Simulation,
    SimulationTooLong,
    policy_zone,
    simulate,
)
from kalends.missions.simulation_options import (
    MAX_SIMULATION_WINDOW,
    DurationKind,
    Interval,
    SimulationOptions,
    parse_durations,
    parse_interval,
    parse_span,
)

BERLIN = "Europe/Berlin"
NEW_YORK = "America/New_York"
DAILY = {"kind": "daily", "time": "09:00", "zone": BERLIN}
JAN = datetime(2027, 1, 1, tzinfo=UTC)
FEB = datetime(2027, 2, 1, tzinfo=UTC)


def _at(y: int, m: int, d: int, hh: int = 0, mm: int = 0, zone: str = BERLIN) -> datetime:
    return datetime(y, m, d, hh, mm, tzinfo=ZoneInfo(zone)).astimezone(UTC)


def _config(policy: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"title": "Simulated", "policy": policy, **more}


def _run(policy: dict[str, Any], start: datetime, end: datetime, **options: Any) -> Simulation:
    config = options.pop("config", {})
    return simulate(_config(policy, **config), SimulationOptions(start=start, end=end, **options))


def _said(sim: Simulation) -> list[tuple[str, str, str | None]]:
    return [(r["local"], r["outcome"], r["reason"]) for r in sim.rows]


def _portable(sim: Simulation) -> list[tuple[Any, ...]]:
    """The rows without what depends on the random schedule ID (passage IDs)."""
    strip = re.compile(r"psg_[0-9a-z]+")
    ids = {r["passageId"]: f"p{i}" for i, r in enumerate(sim.rows) if r["outcome"] == "launched"}
    return [
        (
            r["slot"],
            r["local"],
            r["outcome"],
            r["reason"],
            r["note"],
            r["slots"],
            r["decidedAt"],
            ids.get(r["passageId"]),
            strip.sub("psg", r["detail"] or ""),
        )
        for r in sim.rows
    ]


class TestKnownCases:
    def test_a_year_of_daily_nine_o_clock_in_berlin_launches_365_passages(self) -> None:
        sim = _run(DAILY, _at(2027, 1, 1), _at(2028, 1, 1))
        assert sim.counts["launched"] == 365
        assert sim.counts["coalesced"] == sim.counts["skipped"] == sim.counts["moved"] == 0
        assert sim.counts["reasons"] == {}
        assert sim.passages == {
            "launched": 365,
            "completed": 365,
            "failed": 0,
            "interrupted": 0,
            "running": 0,
        }
        assert sim.first is not None and sim.first["local"] == "2027-01-01T09:00:00"
        assert sim.last is not None and sim.last["local"] == "2027-12-31T09:00:00"
        assert sim.dst == []
        assert sim.zone == BERLIN
        # Every launch is on time: the ledger's slot is the decision's instant.
        assert all(r["decidedAt"] == r["slot"] for r in sim.rows)

    def test_new_york_at_half_past_two_under_skip_loses_one_slot_to_the_dst_gap(self) -> None:
        policy = {"kind": "daily", "time": "02:30", "zone": NEW_YORK, "gap": "skip"}
        sim = _run(policy, _at(2027, 3, 12, zone=NEW_YORK), _at(2027, 3, 17, zone=NEW_YORK))
        assert _said(sim) == [
            ("2027-03-12T02:30:00", "launched", None),
            ("2027-03-13T02:30:00", "launched", None),
            ("2027-03-14T02:30:00", "skipped", "dst-gap"),
            ("2027-03-15T02:30:00", "launched", None),
            ("2027-03-16T02:30:00", "launched", None),
        ]
        assert [r["local"] for r in sim.dst] == ["2027-03-14T02:30:00"]
        assert sim.counts["reasons"] == {"dst-gap": 1}

    def test_the_shift_policy_launches_at_three_and_the_repeated_hour_takes_the_earlier(
        self,
    ) -> None:
        policy = {"kind": "daily", "time": "01:30", "zone": NEW_YORK}
        autumn = _run(policy, _at(2027, 11, 6, zone=NEW_YORK), _at(2027, 11, 8, zone=NEW_YORK))
        assert [(r["local"], r["note"]) for r in autumn.dst] == [
            ("2027-11-07T01:30:00", "earlier-of-two")
        ]
        policy = {"kind": "daily", "time": "02:30", "zone": NEW_YORK}
        spring = _run(policy, _at(2027, 3, 14, zone=NEW_YORK), _at(2027, 3, 15, zone=NEW_YORK))
        assert [(r["local"], r["outcome"], r["reason"], r["note"]) for r in spring.dst] == [
            ("2027-03-14T03:00:00", "launched", "dst-shifted", "shifted")
        ]

    def test_an_outage_coalesces_its_slots_into_the_catch_up_passage(self) -> None:
        outage = Interval(_at(2027, 5, 3, 10), _at(2027, 5, 6, 11, 30))
        sim = _run(DAILY, _at(2027, 5, 1), _at(2027, 5, 8), outages=(outage,))
        assert _said(sim) == [
            ("2027-05-01T09:00:00", "launched", None),
            ("2027-05-02T09:00:00", "launched", None),
            ("2027-05-03T09:00:00", "launched", None),
            ("2027-05-04T09:00:00", "coalesced", "no-scheduler"),
            ("2027-05-05T09:00:00", "coalesced", "no-scheduler"),
            ("2027-05-06T09:00:00", "launched", None),
            ("2027-05-07T09:00:00", "launched", None),
        ]
        catch_up = sim.rows[5]
        # The heir takes the wake over the moment the outage ends (its lease ran out).
        assert catch_up["decidedAt"] == "2027-05-06T09:30:00Z"
        assert {r["passageId"] for r in sim.rows[3:5]} == {catch_up["passageId"]}
        assert sim.counts["reasons"] == {"no-scheduler": 2}

    def test_an_outage_shorter_than_the_lease_launches_when_the_dead_lease_runs_out(
        self,
    ) -> None:
        # The scheduler dies at 08:59:50, 10 s after its last round renewed the lease for
        # 60 s; its heir starts at 09:00:10 but may take the wake only at 09:00:40.
        start = _at(2027, 5, 3, 8, 59) + timedelta(seconds=40)
        outage = Interval(_at(2027, 5, 3, 8, 59) + timedelta(seconds=50), _at(2027, 5, 3, 9) +
                          timedelta(seconds=10))  # fmt: skip
        sim = _run(DAILY, start, _at(2027, 5, 4), outages=(outage,))
        assert _said(sim) == [("2027-05-03T09:00:00", "launched", None)]
        assert sim.rows[0]["decidedAt"] == "2027-05-03T07:00:40Z"

    def test_a_pause_skips_the_slots_it_spans(self) -> None:
        pause = Interval(_at(2027, 5, 3, 12), _at(2027, 5, 6, 12))
        sim = _run(DAILY, _at(2027, 5, 1), _at(2027, 5, 8), pauses=(pause,))
        assert _said(sim)[2:6] == [
            ("2027-05-03T09:00:00", "launched", None),
            ("2027-05-04T09:00:00", "skipped", "paused"),
            ("2027-05-05T09:00:00", "skipped", "paused"),
            ("2027-05-06T09:00:00", "skipped", "paused"),
        ]
        assert sim.counts == {
            "launched": 4,
            "coalesced": 0,
            "skipped": 3,
            "moved": 0,
            "reasons": {"paused": 3},
        }

    def test_a_fail_rate_of_one_fails_every_passage(self) -> None:
        sim = _run(DAILY, _at(2027, 5, 1), _at(2027, 5, 11), fail_rate=1.0)
        assert sim.passages == {
            "launched": 10,
            "completed": 0,
            "failed": 10,
            "interrupted": 0,
            "running": 0,
        }
        assert sim.counts["launched"] == 10

    def test_a_quota_of_five_launches_five_and_skips_the_next_for_the_quota(self) -> None:
        sim = _run(DAILY, _at(2027, 5, 1), _at(2027, 6, 1), max_passages=5)
        assert [o for _, o, _ in _said(sim)] == ["launched"] * 5 + ["skipped"]
        assert sim.rows[-1]["reason"] == "quota"
        assert sim.passages["launched"] == 5

    def test_the_configuration_s_own_end_bound_ends_it_and_an_option_replaces_it(
        self,
    ) -> None:
        end = {"until": {"local": "2027-05-03T12:00:00", "zone": BERLIN}}
        sim = _run(DAILY, _at(2027, 5, 1), _at(2027, 6, 1), config={"end": end})
        assert _said(sim)[-1] == ("2027-05-04T09:00:00", "skipped", "end-bound")
        sim = _run(
            DAILY, _at(2027, 5, 1), _at(2027, 6, 1), config={"end": end}, within={"days": 5},
            zone=BERLIN,
        )  # fmt: skip
        assert sim.counts["launched"] == 3  # the configuration's until still holds

    def test_long_passages_coalesce_the_slots_they_overlap(self) -> None:
        sim = _run(
            {"kind": "every", "hours": 1},
            _at(2027, 5, 1),
            _at(2027, 5, 2),
            durations=parse_durations("90m"),
        )
        reasons = sim.counts["reasons"]
        assert reasons == {"pending-passage": sim.counts["coalesced"]}
        # Every hour from an hour after Play: 01:00 to 23:00.
        assert sim.counts["launched"] + sim.counts["coalesced"] == 23
        assert sim.counts["coalesced"] >= 5

    def test_a_condition_is_left_out_with_a_note(self) -> None:
        condition = {"source": {"kind": "file", "path": "x.txt"}, "when": "changed"}
        sim = _run(DAILY, _at(2027, 5, 1), _at(2027, 5, 3), config={"condition": condition})
        assert sim.counts["launched"] == 2
        assert sim.notes == ["the condition is not simulated: every slot's condition holds"]


class TestReproducible:
    def _drawn(self, seed: int) -> Simulation:
        return _run(
            DAILY,
            _at(2027, 5, 1),
            _at(2027, 5, 9),
            durations=parse_durations("exp:20h"),
            fail_rate=0.5,
            seed=seed,
        )

    def test_the_same_seed_gives_the_same_ledger_and_another_seed_another(self) -> None:
        one, again, other = self._drawn(7), self._drawn(7), self._drawn(8)
        assert _portable(one) == _portable(again)
        assert one.passages == again.passages
        assert _portable(one) != _portable(other)

    def test_the_hourly_rounds_a_running_scheduler_makes_change_nothing(self) -> None:
        policy = {"kind": "daily", "time": "02:30", "zone": NEW_YORK, "gap": "skip"}
        start, end = _at(2027, 3, 10, zone=NEW_YORK), _at(2027, 3, 20, zone=NEW_YORK)
        outages = (
            Interval(_at(2027, 3, 15, 1, zone=NEW_YORK), _at(2027, 3, 16, 8, zone=NEW_YORK)),
        )
        pauses = (Interval(_at(2027, 3, 18, zone=NEW_YORK), _at(2027, 3, 19, zone=NEW_YORK)),)
        kept = {"outages": outages, "pauses": pauses, "durations": parse_durations("1h-30h")}
        fast = _run(policy, start, end, **kept)
        exact = _run(policy, start, end, exact=True, **kept)
        assert _portable(fast) == _portable(exact)
        assert exact.rounds > fast.rounds + 100


class TestProgressAndBounds:
    def test_progress_is_reported_as_the_window_passes(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(simulation_module, "PROGRESS_EVERY", 5)
        seen: list[Progress] = []
        simulate(
            _config(DAILY),
            SimulationOptions(start=_at(2027, 5, 1), end=_at(2027, 5, 31)),
            progress=seen.append,
        )
        assert len(seen) >= 5
        fractions = [p.fraction for p in seen]
        assert fractions == sorted(fractions) and fractions[0] > 0 and fractions[-1] <= 1
        assert seen[-1].launched >= 25

    def test_a_run_needing_too_many_rounds_stops_with_an_error(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(simulation_module, "MAX_SIMULATION_ROUNDS", 20)
        with pytest.raises(SimulationTooLong, match="more than 20 scheduler rounds"):
            _run(DAILY, _at(2027, 5, 1), _at(2027, 6, 1))

    @pytest.mark.parametrize(
        "policy",
        [
            {"kind": "cron", "expression": "* * * * *", "zone": "UTC"},  # 525,600 a year
            {"kind": "cron", "expression": "*/4 * * * *", "zone": "UTC"},  # 131,400
        ],
    )
    def test_a_window_with_too_many_slots_is_refused_before_it_starts(
        self, policy: dict[str, Any]
    ) -> None:
        with pytest.raises(SimulationTooLong, match="more than 110,000 slots"):
            _run(policy, _at(2027, 1, 1), _at(2028, 1, 1))

    def test_the_temporary_database_is_removed_afterwards(self) -> None:
        root = Path(tempfile.gettempdir())
        before = set(root.glob("kalends-simulation-*"))
        _run(DAILY, _at(2027, 5, 1), _at(2027, 5, 2))
        with pytest.raises(InvalidInput):
            _run({"kind": "daily", "time": "25:00", "zone": BERLIN}, _at(2027, 5, 1),
                 _at(2027, 5, 2))  # fmt: skip
        assert set(root.glob("kalends-simulation-*")) == before


class TestBadInput:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            # ten years and a day
            ({"end": JAN + MAX_SIMULATION_WINDOW + timedelta(days=1)}, "at most 10 years"),
            # the window backwards
            ({"start": FEB, "end": JAN}, "ends before it starts"),
            # an empty window
            ({"start": FEB, "end": FEB}, "ends before it starts"),
            # a fail rate above 1
            ({"fail_rate": 1.5}, "between 0 and 1"),
            # a negative fail rate
            ({"fail_rate": -0.1}, "between 0 and 1"),
            # not a number
            ({"fail_rate": float("nan")}, "between 0 and 1"),
        ],
    )
    def test_bad_options_are_refused_before_anything_runs(
        self, options: dict[str, Any], message: str
    ) -> None:
        window = {"start": JAN, "end": FEB} | options
        with pytest.raises(InvalidInput, match=message):
            simulate(_config(DAILY), SimulationOptions(**window))

    @pytest.mark.parametrize(
        ("policy", "message"),
        [
            # an hour that does not exist
            ({"kind": "daily", "time": "25:00", "zone": BERLIN}, "time"),
            # an unknown zone
            ({"kind": "daily", "time": "09:00", "zone": "Mars/Base"}, "Mars/Base"),
            # an unknown kind
            ({"kind": "sometimes"}, "sometimes"),
            # on-change needs a source to change
            ({"kind": "on-change"}, "cannot foresee"),
        ],
    )
    def test_a_policy_the_engine_refuses_is_refused_in_its_words(
        self, policy: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(InvalidInput, match=message):
            _run(policy, _at(2027, 1, 1), _at(2027, 2, 1))
        with pytest.raises(InvalidInput, match=message):
            policy_zone(_config(policy))

    def test_a_configuration_that_is_not_an_object_is_refused(self) -> None:
        options = SimulationOptions(start=_at(2027, 1, 1), end=_at(2027, 2, 1))
        with pytest.raises(InvalidInput, match="JSON object"):
            simulate([DAILY], options)  # type: ignore[arg-type]


class TestOptionTexts:
    @pytest.mark.parametrize(
        ("text", "seconds"),
        [("40m", 2400), ("1h30m", 5400), ("90s", 90), ("2d", 172_800), ("0", 0), (" 1H ", 3600)],
    )
    def test_spans(self, text: str, seconds: int) -> None:
        assert parse_span(text, "duration").total_seconds() == seconds

    def test_duration_distributions(self) -> None:
        rng = random.Random(1)
        fixed = parse_durations("40m")
        assert fixed.kind is DurationKind.FIXED and fixed.draw(rng) == timedelta(minutes=40)
        uniform = parse_durations("30m-2h")
        draws = [uniform.draw(rng) for _ in range(200)]
        assert all(timedelta(minutes=30) <= d <= timedelta(hours=2) for d in draws)
        exponential = parse_durations("exp:40m")
        mean = sum(exponential.draw(rng).total_seconds() for _ in range(2000)) / 2000
        assert 2000 < mean < 2800
        assert [d.text() for d in (fixed, uniform, exponential)] == ["40m", "30m-2h", "exp:40m"]

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("40", "expected 40m"),  # no unit
            ("forty minutes", "expected 40m"),  # words
            ("2h-30m", "ends before it starts"),  # a range backwards
            ("exp:0", "above 0"),  # an exponential without a mean
            ("8d", "at most 7 days"),  # beyond a week
            ("", "expected 40m"),  # nothing
        ],
    )
    def test_bad_durations(self, text: str, message: str) -> None:
        with pytest.raises(InvalidInput, match=message):
            parse_durations(text)

    def test_intervals_read_local_times_and_dates_in_the_zone(self) -> None:
        interval = parse_interval("2027-01-10T00:00/2027-01-12T08:00", NEW_YORK, "outage")
        assert interval == Interval(
            _at(2027, 1, 10, zone=NEW_YORK), _at(2027, 1, 12, 8, zone=NEW_YORK)
        )
        assert parse_interval("2027-01-10/2027-01-11", BERLIN, "pause").end == _at(2027, 1, 11)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("2027-01-10T00:00", "expected FROM/TO"),  # one end
            ("2027-01-10T00:00/2027-01-12T08:00/2027-01-13", "expected FROM/TO"),  # three
            ("2027-01-12T08:00/2027-01-10T00:00", "ends before it starts"),  # backwards
            ("2027-01-10T00:00/2027-01-10T00:00", "ends before it starts"),  # empty
            ("yesterday/today", "expected a local time"),  # words
            ("2027-02-30T00:00/2027-03-01T00:00", "not a valid date"),  # no such day
            ("2027-03-14T02:30/2027-03-15T00:00", "does not exist"),  # in the DST gap
        ],
    )
    def test_bad_intervals(self, text: str, message: str) -> None:
        with pytest.raises(InvalidInput, match=message):
            parse_interval(text, NEW_YORK, "outage")

    def test_intervals_are_clipped_to_the_window_merged_and_dropped_outside_it(self) -> None:
        start, end = _at(2027, 5, 1), _at(2027, 5, 10)
        options = SimulationOptions(
            start=start,
            end=end,
            outages=(
                Interval(_at(2027, 4, 1), _at(2027, 4, 2)),  # before: dropped
                Interval(_at(2027, 4, 30), _at(2027, 5, 2)),  # across the start: clipped
                Interval(_at(2027, 5, 4), _at(2027, 5, 6)),
                Interval(_at(2027, 5, 5), _at(2027, 5, 7)),  # overlapping: merged
                Interval(_at(2027, 5, 9), _at(2027, 5, 12)),  # across the end: clipped
            ),
        ).checked()
        assert options.outages == (
            Interval(start, _at(2027, 5, 2)),
            Interval(_at(2027, 5, 4), _at(2027, 5, 7)),
            Interval(_at(2027, 5, 9), end),
        )
