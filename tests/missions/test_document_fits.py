"""Settling always fits (issue 16, "Long report summaries wedge a schedule for good").

Every text a result keeps is bounded in the bytes the 256 KiB ceiling counts, so 30
results beside the largest configuration and the largest pending passage fit; a summary
over its bound is refused when reported, and settlement cuts whatever it is handed; a
document over its ceiling anyway (written before the bounds) drops its oldest results
rather than leave its passage pending, and Stop and Delete waiting, for good.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest

from kalends.errors import InvalidInput, TooLarge
from kalends.missions import Body, Result
from kalends.missions.config import config_from_json, dump_config
from kalends.missions.document import PassageStatus, Pending, archive, dump_body, manual_identity
from kalends.missions.limits import (
    MAX_CONFIG_BYTES,
    MAX_DOCUMENT_BYTES,
    MAX_REASON_BYTES,
    MAX_REQUEST_ID,
    MAX_RESULTS,
    MAX_SUMMARY_BYTES,
)
from kalends.missions.runtime.base import Observation
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.missions.stored_text import TRUNCATED, check_summary, fit_stored, stored_size
from missions.conftest import MissionWorld, daily_config
from missions.scheduler_support import SETTLE, stored_body
from missions.surgery import control, edit_body, result

EMOJI = "😀"  # four bytes in UTF-8
LARGEST = EMOJI * (MAX_SUMMARY_BYTES // 4)
# The summaries the old bound allowed: 4,096 characters, 16 KiB in four-byte ones.
OLD_LARGEST = EMOJI * 4096
EVERY_HOUR = {"kind": "every", "minutes": 60}


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


# --- the arithmetic ------------------------------------------------------------------------


def test_the_largest_document_fits_under_its_ceiling() -> None:
    """Every part at its bound, as the comment in ``missions/limits.py`` counts it: the
    largest configuration, 30 results with the largest summary and reason, and a pending
    passage whose frozen profile is as large as a whole configuration; every counter at
    19 digits, every instant with microseconds, every code and request ID at 64 bytes."""
    latest = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    huge = 2**63 - 1
    code = "c" * 64
    passage, session, message = manual_identity("0" * 36, "r" * MAX_REQUEST_ID)
    profile: dict[str, Any] = {"command": [""], "env": {}, "cwd": "."}
    profile["command"] = ["x" * (MAX_CONFIG_BYTES - _json_size(profile))]
    assert _json_size(profile) == MAX_CONFIG_BYTES
    body = Body(
        config_generation=huge,
        temporal_generation=huge,
        first_play_at=latest,
        last_play_at=latest,
        last_pause_at=latest,
        high_water=latest,
        admitted=huge,
        settled=huge,
        successful=huge,
        checks_count=huge,
        checks_since=latest,
        interruption=code,
        interrupted_at=latest,
        task_created=True,
        deleted_at=latest,
    )
    for _ in range(MAX_RESULTS):
        largest = Result(
            passage_id=passage,
            trigger="scheduled",
            slot=latest,
            outcome="ended-without-report",
            reason="r" * MAX_REASON_BYTES,
            summary=LARGEST,
            admitted_at=latest,
            settled_at=latest,
        )
        body = archive(body, largest)
    pending = Pending(
        passage_id=passage,
        session_id=session,
        message_id=message,
        trigger="scheduled",
        slot=latest,
        request_id="r" * MAX_REQUEST_ID,
        status=PassageStatus.UNCERTAIN,
        admitted=True,
        reserved_at=latest,
        admitted_at=latest,
        reason=code,
        profile=profile,
        config_generation=huge,
        temporal_generation=huge,
    )
    body = replace(body, pending=pending)
    # archive() kept every text whole: each is at its bound, not over it.
    assert len(body.results) == MAX_RESULTS
    assert {(stored_size(r.summary), stored_size(r.reason or "")) for r in body.results} == {
        (MAX_SUMMARY_BYTES, MAX_REASON_BYTES)
    }

    size = MAX_CONFIG_BYTES + len(dump_body(body).encode())

    assert size <= MAX_DOCUMENT_BYTES
    # The figures of the comment in missions/limits.py: change them with the document.
    assert (size, MAX_DOCUMENT_BYTES - size) == (254_962, 7_182)


# --- measuring, refusing and cutting text --------------------------------------------------


class TestStoredText:
    @pytest.mark.parametrize(
        ("text", "size"),
        [
            ("plain", 5),  # one byte a character
            ("é", 2),  # two
            ("€", 3),  # three
            (EMOJI, 4),  # four
            ('"\\', 4),  # a quote and a backslash are escaped: two bytes each
            ("\n", 2),  # \n
            ("\x01", 6),  # \u0001
        ],
    )
    def test_text_is_measured_as_the_document_stores_it(self, text: str, size: int) -> None:
        assert stored_size(text) == size

    def test_a_summary_at_its_bound_passes_and_one_byte_more_is_refused(self) -> None:
        check_summary(LARGEST)
        check_summary("x" * MAX_SUMMARY_BYTES)
        with pytest.raises(InvalidInput) as caught:
            check_summary(LARGEST + "x")
        assert caught.value.details == {
            "field": "summary",
            "size": MAX_SUMMARY_BYTES + 1,
            "limit": MAX_SUMMARY_BYTES,
        }
        assert f"bound of {MAX_SUMMARY_BYTES} bytes" in caught.value.message

    def test_a_summary_with_a_lone_surrogate_is_refused(self) -> None:
        with pytest.raises(InvalidInput, match="valid Unicode"):
            check_summary("bad \udcff byte")

    def test_text_that_fits_is_kept_whole(self) -> None:
        assert fit_stored(LARGEST, MAX_SUMMARY_BYTES) is LARGEST

    @pytest.mark.parametrize(
        "text",
        [
            "x" * 10_000,  # ASCII
            EMOJI * 4096,  # the old bound's largest, in four-byte characters
            "ab" + EMOJI * 4096,  # four-byte characters that do not start on a multiple of 4
            "\x01" * 2000,  # six bytes a character as stored
            '"' * 5000,  # two
        ],
    )
    def test_longer_text_is_cut_at_a_character_and_marked(self, text: str) -> None:
        cut = fit_stored(text, MAX_SUMMARY_BYTES)

        assert cut.endswith(TRUNCATED)
        kept = cut.removesuffix(TRUNCATED)
        assert text.startswith(kept)
        assert stored_size(cut) <= MAX_SUMMARY_BYTES
        # The longest prefix: one more character would not fit beside the marker.
        assert stored_size(text[: len(kept) + 1] + TRUNCATED) > MAX_SUMMARY_BYTES

    def test_a_lone_surrogate_is_stored_as_the_replacement_character(self) -> None:
        assert fit_stored("bad \udcff byte", MAX_SUMMARY_BYTES) == "bad \ufffd byte"

    def test_archive_cuts_the_summary_and_the_reason_it_is_handed(self) -> None:
        at = datetime(2026, 1, 1, tzinfo=UTC)
        long = replace(result(1, at), summary=OLD_LARGEST, reason="r" * 5000)

        kept = archive(Body(), long).results[-1]

        assert stored_size(kept.summary) <= MAX_SUMMARY_BYTES
        assert stored_size(kept.reason or "") <= MAX_REASON_BYTES
        assert kept.summary.endswith(TRUNCATED) and kept.reason is not None
        assert kept.reason.endswith(TRUNCATED)


# --- through the scheduler, on both databases ----------------------------------------------


def _config_of_size(size: int) -> dict[str, Any]:
    """A valid hourly configuration whose stored text is exactly ``size`` bytes, filled
    through the profile's environment (so the pending passage freezes it all)."""
    env: dict[str, str] = {}
    config = daily_config(policy=EVERY_HOUR, profile={"command": ["true"], "env": env})

    def stored() -> int:
        try:
            return len(dump_config(config_from_json(config)).encode())
        except TooLarge as exc:
            grown = exc.details["size"]
            assert isinstance(grown, int)
            return grown

    for i in range(64):
        name = f"FILL_{i:02d}"
        env[name] = ""
        room = size - stored()
        env[name] = "x" * min(room, 8192)
        if room <= 8192:
            break
    assert stored() == size
    return config


class OldReports(MemoryRuntime):
    """Hands settlement summaries no report accepts today, as a report recorded by an
    older kalends, or spooled in a file, could be."""

    def __init__(self, summary: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.summary = summary

    def observe(self, session_id: str) -> Observation:
        seen = super().observe(session_id)
        if seen.report is None:
            return seen
        return replace(seen, report=replace(seen.report, summary=self.summary))


def _largest_schedule(mw: MissionWorld) -> UUID:
    receipt = mw.schedules.create(
        mw.bob.id, mw.home.id, _config_of_size(MAX_CONFIG_BYTES), request_id="create-0001"
    )
    assert receipt.mission_id is not None
    return receipt.mission_id


def _admit_next(mw: MissionWorld, scheduler: Scheduler, sid: UUID) -> str:
    """Run the scheduler at the next slot; the session of the passage it admitted."""
    due = mw.schedules.detail(mw.bob.id, sid)["nextDueAt"]
    mw.clock.set(datetime.fromisoformat(due))
    scheduler.run_once()
    pending = stored_body(mw.store, sid).pending
    assert pending is not None and pending.admitted, mw.schedules.detail(mw.bob.id, sid)
    return pending.session_id


def _size(mw: MissionWorld, sid: UUID) -> int:
    size = mw.schedules.detail(mw.bob.id, sid)["size"]
    assert isinstance(size, int)
    return size


@pytest.mark.parametrize(
    ("runtime_summary", "stored"),
    [
        # The largest summary a report accepts, in four-byte characters: kept whole.
        (None, LARGEST),
        # A summary the old bound accepted, handed to settlement: cut to fit, marked.
        (OLD_LARGEST, fit_stored(OLD_LARGEST, MAX_SUMMARY_BYTES)),
    ],
)
def test_a_hundred_settlements_of_the_largest_summaries_fit_and_stop_then_delete_complete(
    mw: MissionWorld, runtime_summary: str | None, stored: str
) -> None:
    sid = _largest_schedule(mw)
    control(mw, sid, "play", "play-00001")
    runtime = (
        MemoryRuntime(clock=mw.clock)
        if runtime_summary is None
        else OldReports(runtime_summary, clock=mw.clock)
    )
    scheduler = Scheduler(mw.store, runtime, owner="fits")
    largest_seen = 0
    for n in range(1, 101):
        session = _admit_next(mw, scheduler, sid)
        largest_seen = max(largest_seen, _size(mw, sid))  # the pending passage, frozen profile
        runtime.report(session, "completed", LARGEST)
        runtime.finish(session)
        mw.clock.advance(SETTLE)
        scheduler.run_once()
        detail = mw.schedules.detail(mw.bob.id, sid)
        assert detail["lastError"] is None, (n, detail["lastError"])
        assert detail["pending"] is None, n
        assert detail["counters"]["settled"] == n
        largest_seen = max(largest_seen, detail["size"])
    assert largest_seen <= MAX_DOCUMENT_BYTES
    body = stored_body(mw.store, sid)
    assert len(body.results) == MAX_RESULTS
    assert {r.summary for r in body.results} == {stored}
    assert (body.settled, body.successful) == (100, 100)

    # The 101st passage runs; Stop interrupts it, and completes once it is archived.
    session = _admit_next(mw, scheduler, sid)
    control(mw, sid, "stop", "stop-000001")
    scheduler.run_once()  # interrupts the passage
    mw.clock.advance(SETTLE)
    scheduler.run_once()  # archives it
    assert mw.schedules.control_status(mw.bob.id, sid, "stop-000001").complete is True
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["state"] == "stopped" and detail["pending"] is None
    assert detail["latestResult"]["reason"] == "interrupted"
    assert runtime.observe(session).interrupted

    control(mw, sid, "delete", "delete-0001")
    scheduler.run_once()
    assert mw.schedules.control_status(mw.bob.id, sid, "delete-0001").complete is True
    assert mw.schedules.detail(mw.bob.id, sid)["kind"] == "tombstone"


@pytest.mark.parametrize("action", ["stop", "delete"])
def test_a_document_over_its_ceiling_from_before_the_bounds_drops_its_oldest_results(
    mw: MissionWorld, action: str
) -> None:
    """Thirty results an older kalends kept (6,000-byte summaries) beside the largest
    configuration: the document fits, but not with a pending passage beside them. The
    scheduler drops the oldest results until the reservation fits, runs the passage, and
    the control that interrupts it completes."""
    sid = _largest_schedule(mw)
    at = mw.clock.now()
    old = tuple(result(n, at, summary=EMOJI * 1500) for n in range(1, MAX_RESULTS + 1))
    edit_body(mw, sid, lambda b: replace(b, results=old))
    # It fits, but a pending passage freezing its 64 KiB profile would not.
    assert MAX_DOCUMENT_BYTES - MAX_CONFIG_BYTES < _size(mw, sid) <= MAX_DOCUMENT_BYTES
    control(mw, sid, "play", "play-00001")
    runtime = MemoryRuntime(clock=mw.clock)
    scheduler = Scheduler(mw.store, runtime, owner="fits")

    session = _admit_next(mw, scheduler, sid)

    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["lastError"] is None and detail["size"] <= MAX_DOCUMENT_BYTES
    kept = stored_body(mw.store, sid).results
    assert 0 < len(kept) < MAX_RESULTS
    # The newest are kept, the oldest dropped.
    assert [r.passage_id for r in kept] == [r.passage_id for r in old[-len(kept) :]]

    request = f"{action}-000001"
    control(mw, sid, action, request)
    scheduler.run_once()  # interrupts the passage
    mw.clock.advance(SETTLE)
    scheduler.run_once()  # archives it (a Delete then compacts the document)
    assert runtime.observe(session).interrupted
    assert mw.schedules.control_status(mw.bob.id, sid, request).complete is True
    detail = mw.schedules.detail(mw.bob.id, sid)
    if action == "delete":
        assert detail["kind"] == "tombstone"
    else:
        assert detail["pending"] is None and detail["lastError"] is None
        assert detail["counters"]["settled"] == 1
