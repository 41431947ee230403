"""How the schedule pages say the slot ledger (``kalends.web.ledger_display``): each
row's outcome and reason in words, the History's merge of settled passages and ledger
rows, the counts, and the lenient bounds of the ledger page's filter."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kalends.web.ledger_display import (
    history_rows,
    ledger_line,
    lenient_instant,
    nominal_text,
    outcome_counts,
    reason_counts,
)


def row(slot: str, outcome: str, reason: str | None = None, **kw: Any) -> dict[str, Any]:
    """A ledger row as the reads return it."""
    return {
        "slot": slot,
        "local": kw.pop("local", slot[:19]),
        "zone": "America/New_York",
        "outcome": outcome,
        "reason": reason,
        "note": kw.pop("note", None),
        "passageId": kw.pop("passageId", None),
        "detail": kw.pop("detail", None),
        "slots": kw.pop("slots", 1),
        "through": kw.pop("through", None),
        "otherAt": kw.pop("otherAt", None),
        "decidedAt": kw.pop("decidedAt", slot),
        **kw,
    }


def result(passage: str, slot: str | None, admitted: str, settled: str) -> dict[str, Any]:
    return {
        "passageId": passage,
        "trigger": "scheduled" if slot else "run-now",
        "slot": slot,
        "outcome": "completed",
        "reason": None,
        "summary": "",
        "admittedAt": admitted,
        "settledAt": settled,
    }


class TestLedgerLine:
    @pytest.mark.parametrize(
        ("outcome", "reason", "word", "why"),
        [
            # each reason a skipped slot can have, in the words of the History
            ("skipped", "paused", "Skipped", "paused"),
            ("skipped", "stopped", "Skipped", "stopped"),
            ("skipped", "quota", "Skipped", "quota used up"),
            ("skipped", "end-bound", "Skipped", "end bound reached"),
            ("skipped", "condition-false", "Skipped", "condition unchanged"),
            (
                "skipped",
                "pending-passage",
                "Skipped",
                "passage pending (at most one passage is pending at a time)",
            ),
            ("skipped", "no-scheduler", "Skipped", "no scheduler was running"),
            # a coalesced slot: why it was missed
            ("coalesced", "no-scheduler", "Coalesced", "no scheduler was running"),
            ("coalesced", "pending-passage", "Coalesced", "a passage was still pending"),
            ("coalesced", "paused", "Coalesced", "paused"),
            # a reason kalends does not know yet is said as its words
            ("skipped", "brand-new-reason", "Skipped", "brand new reason"),
        ],
    )
    def test_each_outcome_and_reason_is_a_badge_word_and_a_clause(
        self, outcome: str, reason: str, word: str, why: str
    ) -> None:
        line = ledger_line(row("2027-03-16T06:30:00Z", outcome, reason, passageId="psg_x"))
        assert line.badge.word == word
        assert line.badge.symbol  # decorative, beside the word
        assert line.why == why
        assert (line.into == "psg_x") is (outcome == "coalesced")

    def test_a_dst_gap_and_a_missing_day_say_the_engines_sentence(self) -> None:
        gap = ledger_line(
            row(
                "2027-03-14T07:00:00Z",
                "skipped",
                "dst-gap",
                local="2027-03-14T02:30:00",
                detail="02:30 does not exist in America/New_York on 2027-03-14",
            )
        )
        assert gap.why == "DST gap: 02:30 does not exist in America/New_York on 2027-03-14"
        assert gap.nominal and gap.detail is None
        day = ledger_line(
            row("2027-03-01T05:00:00Z", "skipped", "day-missing", local="2027-02-31T09:00:00")
        )
        assert day.why.startswith("day missing: ") and day.nominal

    def test_a_launch_moved_out_of_the_gap_or_on_the_first_of_two_carries_a_dst_note(
        self,
    ) -> None:
        shifted = ledger_line(
            row(
                "2027-03-14T07:00:00Z",
                "launched",
                "dst-shifted",
                note="shifted",
                local="2027-03-14T03:00:00",
                detail="moved out of a DST gap: launched at 2027-03-14T03:00:00",
            )
        )
        assert shifted.dst is not None and "ran at 03:00" in shifted.dst
        assert "2027-03-14" in shifted.dst
        assert shifted.detail is None  # (the note says it)
        first = ledger_line(
            row(
                "2027-11-07T05:30:00Z",
                "launched",
                note="earlier-of-two",
                local="2027-11-07T01:30:00",
            )
        )
        assert (
            first.dst == "01:30 happened twice on 2027-11-07 (clocks went back) — ran at the first"
        )
        plain = ledger_line(row("2027-03-15T06:30:00Z", "launched"))
        assert plain.dst is None and plain.why == "" and plain.detail is None

    def test_a_catch_up_launch_says_how_late_it_came_from_its_instants(self) -> None:
        late = ledger_line(
            row(
                "2027-03-18T06:30:00Z",
                "launched",
                decidedAt="2027-03-18T12:00:04.996549Z",
                detail="launched 5 h after its slot (caught up at 2027-03-18T12:00:04.996549Z)",
            )
        )
        assert late.detail == "launched 5 h 30 min after its slot (caught up)"
        # within a minute of its slot a launch is on time
        on_time = row("2027-03-18T06:30:00Z", "launched", decidedAt="2027-03-18T06:30:59Z")
        assert ledger_line(on_time).detail is None

    def test_a_moved_slot_keeps_the_instant_it_had(self) -> None:
        moved = ledger_line(
            row(
                "2027-03-23T17:00:00Z",
                "moved",
                "zone-rules-changed",
                otherAt="2027-03-23T16:00:00Z",
            )
        )
        assert moved.badge.word == "Moved"
        assert moved.was == "2027-03-23T16:00:00Z"
        assert moved.why == "moved by new zone rules"

    def test_a_summary_row_leaves_its_count_to_the_slot_column(self) -> None:
        summary = ledger_line(
            row(
                "2027-03-01T00:00:00Z",
                "skipped",
                "paused",
                slots=1500,
                through="2027-03-02T00:59:00Z",
                detail="1500 slots from … (paused 1500)",
            )
        )
        assert summary.summary and summary.detail is None

    def test_a_detail_that_repeats_the_reason_is_not_said_twice(self) -> None:
        outage = ledger_line(
            row("2027-03-16T06:30:00Z", "coalesced", "no-scheduler", detail="(an outage)")
        )
        assert outage.detail is None
        pending = ledger_line(
            row("2027-03-16T06:30:00Z", "skipped", "pending-passage", detail="passage psg_1 …")
        )
        assert pending.detail == "passage psg_1 …"


class TestHistoryRows:
    def test_rows_stand_between_passages_and_a_launch_is_shown_with_its_passage_once(
        self,
    ) -> None:
        results = [
            result("psg_c", "2027-03-18T06:30:00Z", "2027-03-18T12:00:00Z", "2027-03-18T12:01:00Z"),
            result("psg_a", "2027-03-15T06:30:00Z", "2027-03-15T06:30:00Z", "2027-03-15T06:31:00Z"),
            result("psg_r", None, "2027-03-15T09:00:00Z", "2027-03-15T09:01:00Z"),
        ]
        rows = [
            row("2027-03-14T07:00:00Z", "skipped", "dst-gap"),
            row("2027-03-15T06:30:00Z", "launched", passageId="psg_a"),
            row("2027-03-16T06:30:00Z", "coalesced", "no-scheduler", passageId="psg_c"),
            row("2027-03-18T06:30:00Z", "launched", passageId="psg_c"),
            # a launch whose passage has not settled yet stands alone
            row("2027-03-19T06:30:00Z", "launched", passageId="psg_p"),
        ]
        merged = history_rows(results, rows)
        said = [
            h.result["passageId"] if h.result else h.line.row["outcome"] if h.line else "?"
            for h in merged
        ]
        # The run-now passage (no slot) sorts by when it started: after Monday's slot.
        assert said == ["launched", "psg_c", "coalesced", "psg_r", "psg_a", "skipped"]
        catch_up = merged[1]
        assert catch_up.line is not None and catch_up.line.row["passageId"] == "psg_c"
        assert catch_up.late == "started 5 h 30 min after its slot (caught up)"
        assert merged[3].late is None and merged[4].late is None

    def test_a_summary_row_sorts_by_its_last_slot(self) -> None:
        results = [
            result("psg_b", "2027-03-10T12:00:00Z", "2027-03-10T12:00:00Z", "2027-03-10T12:01:00Z")
        ]
        summary = row(
            "2027-03-01T00:00:00Z",
            "skipped",
            "paused",
            slots=9000,
            through="2027-03-11T00:00:00Z",
        )
        merged = history_rows(results, [summary])
        assert merged[0].line is not None and merged[0].line.summary
        assert merged[1].result is not None


class TestCountsAndBounds:
    def test_counts_list_every_outcome_and_the_reasons_most_frequent_first(self) -> None:
        counts = {
            "launched": 3,
            "coalesced": 2,
            "skipped": 1,
            "moved": 0,
            "reasons": {"dst-gap": 1, "no-scheduler": 2, "quota": 0},
        }
        assert [(b.word, n) for b, n in outcome_counts(counts)] == [
            ("Launched", 3),
            ("Coalesced", 2),
            ("Skipped", 1),
            ("Moved", 0),
        ]
        assert reason_counts(counts) == [("no scheduler running", 2), ("DST gap", 1)]
        assert [n for _, n in outcome_counts({})] == [0, 0, 0, 0]

    @pytest.mark.parametrize(
        ("local", "zone", "instant"),
        [
            # an ordinary wall time
            ("2027-03-02T00:00:00", "America/New_York", "2027-03-02T05:00:00+00:00"),
            # in New York's gap: the end of the gap
            ("2027-03-14T02:30:00", "America/New_York", "2027-03-14T07:00:00+00:00"),
            # repeated in New York's fall back: the first pass
            ("2027-11-07T01:30:00", "America/New_York", "2027-11-07T05:30:00+00:00"),
            # a midnight Asuncion skips: the end of the gap
            ("2017-10-01T00:00:00", "America/Asuncion", "2017-10-01T04:00:00+00:00"),
        ],
    )
    def test_a_filter_bound_is_never_refused(self, local: str, zone: str, instant: str) -> None:
        found = lenient_instant(datetime.fromisoformat(local), zone)
        assert found == datetime.fromisoformat(instant).astimezone(UTC)

    def test_a_nominal_wall_time_is_text_even_when_it_never_existed(self) -> None:
        assert nominal_text("2027-02-31T09:00:00") == "2027-02-31 09:00"
        assert nominal_text("2027-03-14T02:30:15") == "2027-03-14 02:30:15"
        assert nominal_text(None) == "—"
