"""``next_slot`` called once per slot, as a scheduler calls it, agrees with ``next_slots``.

A scheduler computes one slot per wake, from the instant it stored: the slot it
admitted last. Walking a rule that way, each call from the previous call's slot,
must give the slots one batch call gives, whatever the rule, zone, origin and
starting instant (aimed at DST transitions by the oracle suite's strategies).
Each single call must also be the first slot of ``next_slots(rule, after, 1)``,
which ``next_slot`` finds by its own path (a kept plan, one slot sought).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from kalends.civil import Slot, next_slot, next_slots, parse_rule
from kalends.civil.days import DayFilter
from kalends.civil.rules import Rule

from .test_oracle_agreement import Scenario, any_kind, scenarios

CHAIN = 40


def walk(rule: Rule, after: datetime, origin: datetime | None, count: int) -> list[Slot]:
    """``count`` calls of ``next_slot``, each from the previous call's slot."""
    out: list[Slot] = []
    for _ in range(count):
        found = next_slot(rule, after, origin=origin)
        one = next_slots(rule, after, 1, origin=origin)
        assert found == (one[0] if one else None), f"next_slots(..., 1) differs after {after}"
        if found is None:
            break
        out.append(found)
        after = found.at
    return out


def same_slots(chain: list[Slot], batch: list[Slot]) -> None:
    """Equal slots, except that a batch may drop a DST note from a slot it coalesced.

    When a wall time shifted out of a gap lands on the instant of another, exact time
    of the same rule, the batch keeps one slot with no note; a single-slot query stops
    at the first of the two and keeps its note, as ``next_slots(rule, after, 1)`` does.
    """
    assert [(s.at, s.local, s.zone) for s in chain] == [(s.at, s.local, s.zone) for s in batch]
    for one, many in zip(chain, batch, strict=True):
        if one.dst != many.dst:
            assert many.dst is None, (one, many)


class TestOneSlotPerCallAgreesWithTheBatch:
    @given(any_kind.flatmap(scenarios), st.booleans())
    def test_walking_one_slot_per_call_gives_the_batch_slots(
        self, s: Scenario, with_origin: bool
    ) -> None:
        rule = parse_rule(s.rule)
        origin = s.origin if with_origin else s.after
        chain = walk(rule, s.after, origin, CHAIN)
        same_slots(chain, next_slots(rule, s.after, CHAIN, origin=origin))

    @given(any_kind.flatmap(scenarios), st.integers(-3 * 3600, 3 * 3600))
    def test_a_stored_instant_between_slots_gives_the_next_one(
        self, s: Scenario, shift: int
    ) -> None:
        rule = parse_rule(s.rule)
        after = s.after + timedelta(seconds=shift)
        batch = next_slots(rule, after, 3, origin=s.origin)
        one = next_slot(rule, after, origin=s.origin)
        assert one == (batch[0] if batch else None) or (
            one is not None and batch[0].dst is None and one._replace(dst=None) == batch[0]
        )

    @given(any_kind.flatmap(scenarios))
    def test_the_same_rule_with_another_origin_is_not_answered_from_the_first(
        self, s: Scenario
    ) -> None:
        rule = parse_rule(s.rule)
        for origin in (s.origin, s.origin - timedelta(days=1, seconds=7), s.after):
            one = next_slots(rule, s.after, 1, origin=origin)
            assert next_slot(rule, s.after, origin=origin) == (one[0] if one else None)

    @given(any_kind.flatmap(scenarios))
    def test_an_equal_rule_parsed_again_gives_the_same_slot(self, s: Scenario) -> None:
        first, second = parse_rule(s.rule), parse_rule(s.rule)
        after = s.after.astimezone(UTC)
        assert next_slot(first, after, origin=s.origin) == next_slot(second, after, origin=s.origin)


day_filters = st.builds(
    DayFilter,
    days=st.frozensets(st.integers(1, 31), min_size=1),
    weekdays=st.frozensets(st.integers(1, 7), min_size=1),
    months=st.frozensets(st.integers(1, 12), min_size=1),
    either=st.booleans(),
    last_day=st.booleans(),
    last_workday=st.booleans(),
    last_weekdays=st.frozensets(st.integers(1, 7), max_size=2),
    nth_weekdays=st.frozensets(st.tuples(st.integers(1, 7), st.integers(1, 5)), max_size=2),
)
# Day numbers from 1 AD to 9999 (the engine's whole range), around 1970-2100 mostly.
day_numbers = st.integers(-719_162, 2_932_896) | st.integers(0, 47_500)


class TestDayFiltersOneDayAtATime:
    @given(day_filters, st.lists(st.tuples(day_numbers, st.integers(0, 800)), max_size=6))
    def test_first_from_is_the_first_day_the_scan_gives(
        self, days: DayFilter, queries: list[tuple[int, int]]
    ) -> None:
        # Several queries on one filter, so its remembered month is read as well as set.
        for first, span in queries:
            scanned = next(iter(days.between(first, first + span)), None)
            assert days.first_from(first, first + span) == scanned

    @given(day_filters, day_numbers, st.integers(0, 3))
    def test_walking_from_each_day_found_gives_the_scans_days(
        self, days: DayFilter, first: int, gap: int
    ) -> None:
        # As a scheduler walks: each query starts just after (or a little after) the last
        # day found, across month ends, where the remembered month stops answering.
        last = first + 400
        scanned = list(days.between(first, last))
        start = first
        while True:
            found = days.first_from(start, last)
            assert found == next((d for d in scanned if d >= start), None)
            if found is None:
                break
            start = found + 1 + gap
