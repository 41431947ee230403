"""The source gate's pure rules (kalends.missions.gate): what a reading makes of a
conditioned slot, the gate records it leaves (one per slot, a repeated block replacing
the last, at most MAX_GATE_RECORDS), and the body's source state through its stored
JSON. No database, no clock: documents and readings are built here."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kalends.missions import Body, Result
from kalends.missions.config import Config, config_from_json
from kalends.missions.config_condition import parse_condition
from kalends.missions.controls import DocState
from kalends.missions.document import (
    PassageStatus,
    Pending,
    Phase,
    State,
    archive,
    dump_body,
    load_body,
    with_checkpoint,
)
from kalends.missions.gate import Blocked, Observed, gate, holds
from kalends.missions.gate_records import (
    COMPLETED,
    NOT_COMPLETED,
    Checkpoint,
    GateOutcome,
    GateRecord,
    source_key,
)
from kalends.missions.limits import MAX_GATE_RECORDS, MAX_SOURCE_CHECKPOINTS
from missions.conftest import daily_config

GIT = {"kind": "git-branch", "branch": "main", "path": "app"}
KEY = "git-branch:app:main"
SLOT = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
NOW = SLOT + timedelta(seconds=1)
BASE = "a" * 40
MOVED = "b" * 40


def _config(condition: dict[str, Any] = GIT) -> Config:
    return config_from_json(daily_config(condition=condition))


def _doc(body: Body, condition: dict[str, Any] = GIT) -> DocState:
    return DocState("0190d6a8-0000-7000-8000-000000000001", Phase.LIVE, State.RUNNING,
                    _config(condition), body)  # fmt: skip


def _played(*, baseline: str | None = BASE) -> Body:
    body = Body(first_play_at=SLOT - timedelta(days=1), high_water=SLOT - timedelta(days=1))
    if baseline is None:
        return body
    return with_checkpoint(body, KEY, Checkpoint(checkpoint=baseline, at=SLOT - timedelta(days=1)))


def _observed(checkpoint: str, *, baseline: str | None = BASE, kind: str = "git-branch",
              key: str = KEY) -> Observed:  # fmt: skip
    change = None
    if baseline is not None and checkpoint != baseline:
        change = {"version": 1, "commits": [{"sha": checkpoint, "subject": "x"}],
                  "truncated": False}  # fmt: skip
    return Observed(
        key=key, kind=kind, at=NOW, checkpoint=checkpoint,
        observation={"version": 1, "kind": kind, "checkpoint": checkpoint,
                     "observedAt": "2025-03-02T08:00:01Z"},
        baseline=baseline, change=change,
    )  # fmt: skip


def _blocked(reason: str = "source-missing", at: datetime = NOW) -> Blocked:
    return Blocked(key=KEY, kind="git-branch", at=at, reason=reason, detail="gone")


# --- holds -------------------------------------------------------------------------------


class TestHolds:
    def test_without_a_baseline_it_cannot_say(self) -> None:
        assert holds(_played(baseline=None), _observed(MOVED, baseline=None)) is None

    def test_the_baseline_seen_again_does_not_hold(self) -> None:
        assert holds(_played(), _observed(BASE)) is False

    def test_another_checkpoint_holds(self) -> None:
        assert holds(_played(), _observed(MOVED)) is True

    def test_another_sources_checkpoint_is_no_baseline(self) -> None:
        other = _observed(MOVED, key="git-branch:lib:main")
        assert holds(_played(), other) is None

    @pytest.mark.parametrize(("state", "expected"), [(COMPLETED, True), (NOT_COMPLETED, False)])
    def test_a_completion_needs_no_baseline(self, state: str, expected: bool) -> None:
        reading = _observed(state, baseline=None, kind="mission-completed",
                            key="mission-completed:x")  # fmt: skip
        assert holds(_played(baseline=None), reading) is expected

    def test_a_consumed_completion_does_not_hold_again(self) -> None:
        key = "mission-completed:x"
        body = with_checkpoint(Body(), key, Checkpoint(checkpoint=COMPLETED, at=SLOT))
        reading = _observed(COMPLETED, baseline=COMPLETED, kind="mission-completed", key=key)
        assert holds(body, reading) is False


# --- gate: the four rows of the table ----------------------------------------------------


class TestGate:
    def test_a_blocked_read_keeps_the_slot_and_counts_nothing(self) -> None:
        before = replace(_played(), checks_count=4)
        body, outcome = gate(_doc(before), SLOT, NOW, _blocked("source-unreadable"))
        assert outcome is GateOutcome.BLOCKED
        assert body.high_water == before.high_water and body.checks_count == 4
        assert body.pending is None and body.sources == before.sources
        (record,) = body.gates
        assert (record.slot, record.at, record.outcome, record.reason) == (
            SLOT, NOW, GateOutcome.BLOCKED, "source-unreadable",
        )  # fmt: skip
        assert body.observed is not None
        assert body.observed["blockReason"] == "source-unreadable"
        assert body.observed["key"] == KEY

    def test_a_first_read_is_the_baseline_and_consumes_the_slot_uncounted(self) -> None:
        before = _played(baseline=None)
        body, outcome = gate(_doc(before), SLOT, NOW, _observed(MOVED, baseline=None))
        assert outcome is GateOutcome.SKIPPED
        taken = body.checkpoint(KEY)
        assert taken is not None and (taken.checkpoint, taken.at) == (MOVED, NOW)
        assert body.high_water == SLOT and body.checks_count == 0 and body.pending is None
        assert body.gates[-1].reason == "baseline"

    def test_an_unchanged_read_skips_the_slot_and_counts_once(self) -> None:
        before = _played()
        body, outcome = gate(_doc(before), SLOT, NOW, _observed(BASE))
        assert outcome is GateOutcome.SKIPPED
        assert body.high_water == SLOT and body.checks_count == 1 and body.pending is None
        assert body.sources == before.sources  # the baseline stays
        assert (body.gates[-1].outcome, body.gates[-1].reason) == (GateOutcome.SKIPPED,
                                                                   "unchanged")  # fmt: skip

    def test_a_changed_read_reserves_the_slot_with_the_proof_frozen(self) -> None:
        before = _played()
        reading = _observed(MOVED)
        body, outcome = gate(_doc(before), SLOT, NOW, reading)
        assert outcome is GateOutcome.LAUNCHED
        assert body.high_water == SLOT and body.checks_count == 1
        pending = body.pending
        assert pending is not None
        assert (pending.slot, pending.trigger, pending.admitted) == (SLOT, "scheduled", False)
        assert pending.proof == reading.proof()
        assert pending.proof["checkpoint"] == MOVED and pending.proof["baseline"] == BASE
        assert body.sources == before.sources  # consumed only by a completed settlement
        assert body.gates[-1].reason == "changed"
        assert "1 new commit(s)" in body.gates[-1].detail

    def test_the_read_is_kept_as_the_last_observation(self) -> None:
        body, _ = gate(_doc(_played()), SLOT, NOW, _observed(BASE))
        assert body.observed is not None
        assert (body.observed["key"], body.observed["checkpoint"]) == (KEY, BASE)


class TestGateRecords:
    def test_a_repeated_block_of_the_same_slot_replaces_the_last_record(self) -> None:
        doc = _doc(_played())
        body, _ = gate(doc, SLOT, NOW, _blocked("source-missing"))
        later = NOW + timedelta(minutes=1)
        body, _ = gate(replace(doc, body=body), SLOT, later, _blocked("source-unreadable", later))
        (record,) = body.gates
        assert (record.at, record.reason) == (later, "source-unreadable")

    def test_the_slot_decided_after_its_block_is_recorded_beside_it(self) -> None:
        doc = _doc(_played())
        body, _ = gate(doc, SLOT, NOW, _blocked())
        body, _ = gate(replace(doc, body=body), SLOT, NOW, _observed(BASE))
        assert [(g.slot, g.outcome) for g in body.gates] == [
            (SLOT, GateOutcome.BLOCKED), (SLOT, GateOutcome.SKIPPED),
        ]  # fmt: skip

    def test_records_are_bounded_newest_kept(self) -> None:
        doc = _doc(_played())
        slots = [SLOT + timedelta(days=i) for i in range(MAX_GATE_RECORDS + 5)]
        for slot in slots:
            body, _ = gate(doc, slot, slot, _blocked(at=slot))
            doc = replace(doc, body=body)
            body, _ = gate(doc, slot, slot + timedelta(minutes=1), _blocked(at=slot))
            doc = replace(doc, body=body)
        assert len(doc.body.gates) == MAX_GATE_RECORDS
        assert [g.slot for g in doc.body.gates] == slots[-MAX_GATE_RECORDS:]


# --- values through JSON -----------------------------------------------------------------


class TestJson:
    def test_a_gate_record_round_trips(self) -> None:
        record = GateRecord(slot=SLOT, at=NOW, outcome=GateOutcome.BLOCKED,
                            reason="source-cycle", detail="leads back")  # fmt: skip
        assert GateRecord.from_json(record.to_json()) == record
        assert record.to_json()["slot"] == "2025-03-02T08:00:00Z"

    @pytest.mark.parametrize("observation", [None, {"files": {"a.txt": None}}])
    def test_a_checkpoint_round_trips(self, observation: dict[str, Any] | None) -> None:
        checkpoint = Checkpoint(checkpoint="7", at=NOW, observation=observation)
        assert Checkpoint.from_json(checkpoint.to_json()) == checkpoint

    def test_a_body_keeps_its_sources_observation_gates_and_proof(self) -> None:
        files = Checkpoint(checkpoint="f" * 64, at=SLOT, observation={"files": {"a.txt": None}})
        doc = _doc(with_checkpoint(_played(), 'files:["a.txt"]', files))
        body, _ = gate(doc, SLOT - timedelta(hours=1), NOW, _blocked())
        body, _ = gate(replace(doc, body=body), SLOT, NOW, _observed(MOVED))
        assert body.pending is not None and body.pending.proof is not None
        assert len(body.sources) == 2 and len(body.gates) == 2 and body.observed is not None
        assert load_body(dump_body(body)) == body

    def test_a_proof_without_its_source_key_does_not_load(self) -> None:
        body, _ = gate(_doc(_played()), SLOT, NOW, _observed(MOVED))
        stored = body.to_json()
        del stored["pending"]["proof"]["key"]
        with pytest.raises(ValueError, match="source key"):
            load_body(json.dumps(stored))


# --- source keys and consumption ---------------------------------------------------------


class TestSourceKey:
    def test_each_kind_is_keyed_by_what_it_reads(self) -> None:
        def key(condition: dict[str, Any]) -> str:
            parsed = parse_condition(condition)
            assert parsed is not None
            return source_key(parsed)

        assert key(GIT) == KEY
        assert key({"kind": "files", "paths": ["b", "a"]}) == key(
            {"kind": "files", "paths": ["a", "b"]}
        ) == 'files:["a","b"]'  # fmt: skip
        assert key({"kind": "schedule-succeeded", "missionId": "m1"}) == "schedule-succeeded:m1"
        assert key({"kind": "mission-completed", "missionId": "m1"}) == "mission-completed:m1"


class TestConsumption:
    def _launched(self) -> Body:
        body, outcome = gate(_doc(_played()), SLOT, NOW, _observed(MOVED))
        assert outcome is GateOutcome.LAUNCHED
        pending = body.pending
        assert pending is not None
        return replace(body, pending=replace(pending, admitted=True,
                                             status=PassageStatus.RUNNING))  # fmt: skip

    def _result(self, pending: Pending | None, outcome: str) -> Result:
        assert pending is not None
        return Result(passage_id=pending.passage_id, trigger="scheduled", slot=SLOT,
                      outcome=outcome, reason=None, summary="", admitted_at=NOW,
                      settled_at=NOW + timedelta(minutes=5))  # fmt: skip

    def test_a_completed_settlement_consumes_the_proof(self) -> None:
        body = self._launched()
        done = archive(body, self._result(body.pending, "completed"))
        taken = done.checkpoint(KEY)
        assert taken is not None and taken.checkpoint == MOVED
        assert taken.at == NOW + timedelta(minutes=5)

    @pytest.mark.parametrize("outcome", ["failed", "ended-without-report"])
    def test_any_other_settlement_leaves_the_baseline(self, outcome: str) -> None:
        body = self._launched()
        done = archive(body, self._result(body.pending, outcome))
        taken = done.checkpoint(KEY)
        assert taken is not None and taken.checkpoint == BASE
        assert done.pending is None


def test_a_document_keeps_the_newest_source_checkpoints_only() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    body = Body()
    for i in range(MAX_SOURCE_CHECKPOINTS + 3):
        body = with_checkpoint(body, f'files:["f{i}"]', Checkpoint(checkpoint=str(i), at=at))
    keys = [k for k, _ in body.sources]
    assert len(keys) == MAX_SOURCE_CHECKPOINTS
    assert keys[-1] == f'files:["f{MAX_SOURCE_CHECKPOINTS + 2}"]'
    assert keys[0] == 'files:["f3"]'
    # Re-taking a kept source's checkpoint moves it to the newest place, dropping nothing.
    body = with_checkpoint(body, 'files:["f3"]', Checkpoint(checkpoint="again", at=at))
    assert [k for k, _ in body.sources][-1] == 'files:["f3"]'
    assert len(body.sources) == MAX_SOURCE_CHECKPOINTS
