"""The scheduler's decision for one due schedule (``kalends.missions.decide``): pure, so
every case is a document and an instant, with no database, clock or runtime."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kalends.civil import DstNote
from kalends.missions.config import config_from_json
from kalends.missions.controls import DocState
from kalends.missions.decide import (
    Attend,
    Compact,
    Dormant,
    Finished,
    Gone,
    Launch,
    Sleep,
    decide,
)
from kalends.missions.document import Body, EndReason, PassageStatus, Pending, Phase, State
from kalends.missions.passages import reservation

DAILY_NINE_BERLIN = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}
# 09:00 in Berlin in June (CEST, UTC+2) is 07:00 UTC.
PLAYED = datetime(2025, 6, 1, 6, 0, tzinfo=UTC)
FIRST_SLOT = datetime(2025, 6, 1, 7, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def doc(
    policy: dict[str, Any] = DAILY_NINE_BERLIN,
    *,
    state: State = State.RUNNING,
    phase: Phase = Phase.LIVE,
    end: dict[str, Any] | None = None,
    **body: Any,
) -> DocState:
    """A schedule document first played at ``PLAYED`` (unless ``body`` says otherwise),
    its high-water mark at that Play, as Play leaves it."""
    config = config_from_json(
        {
            "title": "Morning report",
            "profile": {"command": ["echo", "hello"]},
            "policy": policy,
            **({"end": end} if end is not None else {}),
        }
    )
    played = body.pop("first_play_at", PLAYED)
    fields = {"first_play_at": played, "last_play_at": played, "high_water": played, **body}
    return DocState("sch_1", phase, state, config, Body(**fields))


def pending_at(reserved_at: datetime) -> Pending:
    return Pending(
        passage_id="psg_1",
        session_id="ses_1",
        message_id="msg_1",
        trigger="scheduled",
        slot=FIRST_SLOT,
        request_id=None,
        status=PassageStatus.RUNNING,
        admitted=True,
        reserved_at=reserved_at,
    )


class TestDueSlots:
    def test_a_running_schedule_whose_slot_has_come_launches_that_slot(self) -> None:
        decision = decide(doc(), FIRST_SLOT + timedelta(minutes=5))
        assert isinstance(decision, Launch)
        assert decision.slot.at == FIRST_SLOT

    def test_a_slot_exactly_at_now_is_due(self) -> None:
        decision = decide(doc(), FIRST_SLOT)
        assert isinstance(decision, Launch)
        assert decision.slot.at == FIRST_SLOT

    def test_a_slot_one_microsecond_in_the_future_is_not_due(self) -> None:
        decision = decide(doc(), FIRST_SLOT - timedelta(microseconds=1))
        assert decision == Sleep(until=FIRST_SLOT, next_slot=FIRST_SLOT)

    def test_a_slot_at_or_before_the_high_water_mark_never_launches_again(self) -> None:
        now = FIRST_SLOT + timedelta(hours=3)
        decision = decide(doc(high_water=FIRST_SLOT), now)
        assert decision == Sleep(until=now + timedelta(hours=1), next_slot=FIRST_SLOT + DAY)

    def test_a_slot_before_the_first_play_is_never_caught_up(self) -> None:
        # The slot of May 31 (07:00 UTC) is before the Play of June 1, 06:00 UTC.
        decision = decide(doc(), PLAYED + timedelta(minutes=1))
        assert decision == Sleep(until=FIRST_SLOT, next_slot=FIRST_SLOT)

    def test_a_one_shot_after_policy_launches_once_its_delay_from_first_play_is_over(
        self,
    ) -> None:
        after = {"kind": "after", "hours": 1}
        decision = decide(doc(after), PLAYED + timedelta(hours=1))
        assert isinstance(decision, Launch)
        assert decision.slot.at == PLAYED + timedelta(hours=1)


class TestNotYetDue:
    def test_a_slot_within_the_hour_sets_the_wake_to_that_slot(self) -> None:
        now = FIRST_SLOT - timedelta(minutes=20)
        assert decide(doc(), now) == Sleep(until=FIRST_SLOT, next_slot=FIRST_SLOT)

    def test_a_slot_further_than_an_hour_away_wakes_after_one_hour_at_most(self) -> None:
        now = FIRST_SLOT - timedelta(hours=5)
        assert decide(doc(), now) == Sleep(until=now + timedelta(hours=1), next_slot=FIRST_SLOT)

    def test_the_decision_depends_on_the_instant_given_and_on_no_clock(self) -> None:
        document = doc()
        early = FIRST_SLOT - timedelta(minutes=1)
        assert decide(document, early) == decide(document, early)
        assert isinstance(decide(document, early), Sleep)
        assert isinstance(decide(document, FIRST_SLOT), Launch)


class TestNothingToLaunch:
    @pytest.mark.parametrize(
        "state",
        [
            State.PAUSED,  # paused: a Resume arms the wake again
            State.STOPPED,  # stopped for good
        ],
    )
    def test_a_schedule_not_running_is_dormant_even_with_a_slot_due(self, state: State) -> None:
        decision = decide(doc(state=state), FIRST_SLOT + DAY)
        assert decision == Dormant(state=state, interruption=None)

    def test_a_running_schedule_that_was_interrupted_is_dormant(self) -> None:
        document = doc(interruption="restart", interrupted_at=PLAYED)
        decision = decide(document, FIRST_SLOT + DAY)
        assert decision == Dormant(state=State.RUNNING, interruption="restart")

    def test_no_document_is_gone(self) -> None:
        assert decide(None, FIRST_SLOT) == Gone()

    def test_a_tombstone_is_gone(self) -> None:
        assert decide(doc(phase=Phase.TOMBSTONE), FIRST_SLOT) == Gone()

    def test_a_deleted_document_with_nothing_pending_is_compacted(self) -> None:
        assert decide(doc(phase=Phase.DELETING), FIRST_SLOT + DAY) == Compact()

    @pytest.mark.parametrize(
        ("state", "phase"),
        [
            (State.RUNNING, Phase.LIVE),  # its next slot is due, but it runs first
            (State.PAUSED, Phase.LIVE),  # paused after it was reserved: interrupt it
            (State.RUNNING, Phase.DELETING),  # deleted: settle it before compacting
        ],
    )
    def test_a_pending_passage_is_attended_before_anything_else(
        self, state: State, phase: Phase
    ) -> None:
        pending = pending_at(FIRST_SLOT)
        document = doc(state=state, phase=phase, pending=pending, high_water=FIRST_SLOT)
        assert decide(document, FIRST_SLOT + DAY) == Attend(pending=pending)


class TestEndBounds:
    def test_a_running_schedule_never_played_has_no_slot(self) -> None:
        document = doc(first_play_at=None, last_play_at=None)
        assert decide(document, FIRST_SLOT) == Finished(reason=None)

    def test_a_slot_after_the_until_bound_never_launches_and_the_schedule_finishes(
        self,
    ) -> None:
        # until 2025-06-02 08:00 Berlin (06:00 UTC): the slot of June 2 (07:00 UTC) is after it
        until = {"until": {"local": "2025-06-02T08:00:00", "zone": "Europe/Berlin"}}
        document = doc(end=until, high_water=FIRST_SLOT, admitted=1)
        assert decide(document, FIRST_SLOT + DAY) == Finished(reason=EndReason.UNTIL_REACHED)

    def test_the_last_slot_within_the_until_bound_still_launches(self) -> None:
        until = {"until": {"local": "2025-06-02T09:00:00", "zone": "Europe/Berlin"}}
        decision = decide(doc(end=until, high_water=FIRST_SLOT), FIRST_SLOT + DAY)
        assert isinstance(decision, Launch)
        assert decision.slot.at == FIRST_SLOT + DAY

    def test_a_slot_after_first_play_plus_within_ends_the_schedule(self) -> None:
        document = doc(end={"within": {"hours": 12}}, high_water=FIRST_SLOT)
        assert decide(document, FIRST_SLOT + DAY) == Finished(reason=EndReason.WITHIN_REACHED)

    def test_an_exhausted_quota_ends_the_schedule_though_a_slot_is_due(self) -> None:
        document = doc(end={"maxPassages": 2}, admitted=2, high_water=FIRST_SLOT + DAY)
        decision = decide(document, FIRST_SLOT + 3 * DAY)
        assert decision == Finished(reason=EndReason.QUOTA_EXHAUSTED)

    def test_a_quota_with_room_left_launches(self) -> None:
        document = doc(end={"maxPassages": 2}, admitted=1, high_water=FIRST_SLOT)
        assert isinstance(decide(document, FIRST_SLOT + DAY), Launch)

    def test_a_one_shot_whose_slot_was_processed_is_done(self) -> None:
        after = {"kind": "after", "hours": 1}
        slot = PLAYED + timedelta(hours=1)
        document = doc(after, high_water=slot, admitted=1)
        assert decide(document, slot + DAY) == Finished(reason=EndReason.ONE_SHOT_DONE)


class TestCatchUp:
    def test_after_an_outage_only_the_latest_missed_slot_launches(self) -> None:
        now = FIRST_SLOT + 3 * DAY + timedelta(hours=2)  # the slots of June 1 to 4 missed
        decision = decide(doc(), now)
        assert isinstance(decision, Launch)
        assert decision.slot.at == FIRST_SLOT + 3 * DAY

    def test_the_older_missed_slots_are_skipped_once_the_latest_is_reserved(self) -> None:
        now = FIRST_SLOT + 3 * DAY + timedelta(hours=2)
        document = doc(high_water=FIRST_SLOT)
        decision = decide(document, now)
        assert isinstance(decision, Launch)
        reserved = reservation(document, decision.slot.at, now)
        archived = replace(document, body=replace(reserved, pending=None, admitted=1))
        later = decide(archived, now + timedelta(minutes=1))
        assert later == Sleep(
            until=now + timedelta(minutes=1, hours=1), next_slot=FIRST_SLOT + 4 * DAY
        )

    def test_a_missed_slot_beyond_the_end_bound_is_not_caught_up(self) -> None:
        until = {"until": {"local": "2025-06-02T10:00:00", "zone": "Europe/Berlin"}}
        now = FIRST_SLOT + 3 * DAY
        decision = decide(doc(end=until, high_water=FIRST_SLOT + DAY), now)
        assert decision == Finished(reason=EndReason.UNTIL_REACHED)


class TestDaylightSavingTime:
    # New York, 2025: clocks spring forward on March 9 at 02:00 (02:30 does not exist)
    # and fall back on November 2 at 02:00 (01:30 happens twice).
    SPRING_PLAYED = datetime(2025, 3, 8, 12, 0, tzinfo=UTC)
    FALL_PLAYED = datetime(2025, 11, 1, 12, 0, tzinfo=UTC)

    def test_a_daily_time_in_the_spring_gap_launches_shifted_to_the_first_instant_after_it(
        self,
    ) -> None:
        policy = {"kind": "daily", "time": "02:30", "zone": "America/New_York"}
        document = doc(policy, first_play_at=self.SPRING_PLAYED)
        shifted = datetime(2025, 3, 9, 7, 0, tzinfo=UTC)  # 03:00 EDT
        before = decide(document, shifted - timedelta(minutes=1))
        assert before == Sleep(until=shifted, next_slot=shifted)
        decision = decide(document, shifted)
        assert isinstance(decision, Launch)
        assert decision.slot.at == shifted
        assert decision.slot.dst is DstNote.SHIFTED

    def test_a_daily_time_in_the_repeated_hour_launches_at_the_earlier_instant_only(
        self,
    ) -> None:
        policy = {"kind": "daily", "time": "01:30", "zone": "America/New_York"}
        document = doc(policy, first_play_at=self.FALL_PLAYED)
        earlier = datetime(2025, 11, 2, 5, 30, tzinfo=UTC)  # 01:30 EDT
        later = datetime(2025, 11, 2, 6, 30, tzinfo=UTC)  # 01:30 EST, the second pass
        decision = decide(document, earlier)
        assert isinstance(decision, Launch)
        assert decision.slot.at == earlier
        assert decision.slot.dst is DstNote.EARLIER
        after = replace(document, body=replace(document.body, high_water=earlier, admitted=1))
        next_day = datetime(2025, 11, 3, 6, 30, tzinfo=UTC)  # 01:30 EST
        assert decide(after, later) == Sleep(until=later + timedelta(hours=1), next_slot=next_day)


class TestDecisionValues:
    def test_decisions_are_frozen_values(self) -> None:
        decision = decide(doc(), FIRST_SLOT - timedelta(hours=2))
        with pytest.raises(dataclasses.FrozenInstanceError):
            decision.until = FIRST_SLOT  # type: ignore[misc, union-attr]

    def test_only_the_decisions_about_a_running_schedule_need_its_workspace(self) -> None:
        pending = pending_at(FIRST_SLOT)
        needing = {
            type(d).__name__: d.needs_workspace
            for d in (
                decide(None, FIRST_SLOT),
                decide(doc(pending=pending), FIRST_SLOT),
                decide(doc(phase=Phase.DELETING), FIRST_SLOT),
                decide(doc(state=State.PAUSED), FIRST_SLOT),
                decide(doc(), FIRST_SLOT),
                decide(doc(), PLAYED),
                decide(doc(first_play_at=None), FIRST_SLOT),
            )
        }
        assert needing == {
            "Gone": False,
            "Attend": False,
            "Compact": False,
            "Dormant": False,
            "Launch": True,
            "Sleep": True,
            "Finished": True,
        }
