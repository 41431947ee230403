"""Every ceiling of a schedule document (seed 002 "Daily schedule document and
revision" and "Daily document controls"): refused with nothing written, never truncated."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from kalends.errors import CorruptDocument, LimitReached, RevisionConflict, TooLarge
from kalends.missions import Body
from kalends.missions.config import config_from_json, dump_config
from kalends.missions.document import archive
from kalends.missions.limits import (
    MAX_CONFIG_BYTES,
    MAX_CONTROL_RECORDS,
    MAX_DOCUMENT_BYTES,
    MAX_RESULTS,
    MAX_SCHEDULES,
)
from kalends.storage.mission_tables import schedule_controls
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld, daily_config
from missions.surgery import control, create, edit_body, result, revision

# --- 64 schedules per workspace ------------------------------------------------------------


def test_sixty_fifth_schedule_is_refused_and_tombstones_do_not_count(mw: MissionWorld) -> None:
    ids = [create(mw, f"create-{i:04d}", title=f"Schedule {i}") for i in range(MAX_SCHEDULES)]
    with nothing_written(mw.store), pytest.raises(LimitReached) as caught:
        create(mw, "create-0064", title="One too many")
    assert caught.value.details["field"] == "workspace"
    # Another workspace has its own count.
    mw.schedules.create(mw.dave.id, mw.away.id, daily_config(), request_id="create-away")
    # A schedule being deleted (pending passage) still counts; a tombstone does not.
    control(mw, ids[0], "run-now", "run-now-0001")
    control(mw, ids[0], "delete", "delete-0000")
    with pytest.raises(LimitReached):
        create(mw, "create-0064", title="One too many")
    control(mw, ids[1], "delete", "delete-0001")
    assert mw.schedules.detail(mw.alice.id, ids[1])["kind"] == "tombstone"
    create(mw, "create-0064", title="Fits again")
    with pytest.raises(LimitReached):
        create(mw, "create-0065", title="Full again")
    # The repeat of an accepted creation still answers once the workspace is full.
    again = mw.schedules.create(
        mw.bob.id, mw.home.id, daily_config(title="Schedule 5"), request_id="create-0005"
    )
    assert again.repeated and again.mission_id == ids[5]


# --- the 64 KiB configuration ---------------------------------------------------------------


def _stored_size(data: dict[str, Any]) -> int:
    try:
        return len(dump_config(config_from_json(data)).encode())
    except TooLarge as exc:
        size = exc.details["size"]
        assert isinstance(size, int)
        return size


def _config_of_size(size: int) -> dict[str, Any]:
    """A valid configuration whose stored text is exactly ``size`` bytes, filled through
    the profile's environment (objective and notes are capped at 16,384 characters)."""
    env: dict[str, str] = {}
    config = daily_config(profile={"command": ["true"], "env": env, "cwd": "."})
    for i in range(64):
        name = f"FILL_{i:02d}"
        env[name] = ""
        room = size - _stored_size(config)
        env[name] = "x" * min(room, 8192)
        if room <= 8192:
            break
    assert _stored_size(config) == size
    return config


def test_configuration_over_64_kib_is_refused(mw: MissionWorld) -> None:
    with nothing_written(mw.store), pytest.raises(TooLarge) as caught:
        mw.schedules.create(
            mw.bob.id,
            mw.home.id,
            _config_of_size(MAX_CONFIG_BYTES + 1),
            request_id="create-big",
        )
    assert caught.value.details == {
        "field": "config",
        "size": MAX_CONFIG_BYTES + 1,
        "limit": MAX_CONFIG_BYTES,
    }
    exact = mw.schedules.create(
        mw.bob.id, mw.home.id, _config_of_size(MAX_CONFIG_BYTES), request_id="create-full"
    )
    assert exact.mission_id is not None and exact.schedule is not None
    # A configure that grows a small configuration past the ceiling is refused as well.
    sid = create(mw, "create-small")
    grown = _config_of_size(MAX_CONFIG_BYTES + 1)
    with nothing_written(mw.store), pytest.raises(TooLarge):
        mw.schedules.configure(
            mw.bob.id,
            sid,
            {"profile": grown["profile"]},
            request_id="grow-0001",
            expected_revision=1,
        )


# --- 30 results --------------------------------------------------------------------------------


def test_thirty_first_result_keeps_the_newest_thirty_and_counts_all() -> None:
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    body = Body(admitted=31)
    for n in range(1, MAX_RESULTS + 2):
        outcome = "completed" if n % 3 else "failed"
        body = archive(body, result(n, t0 + timedelta(hours=n), outcome=outcome))
        assert len(body.results) == min(n, MAX_RESULTS)
    assert [r.passage_id for r in body.results] == [f"psg_{n:04d}" for n in range(2, 32)]
    assert body.results[-1].passage_id == "psg_0031"  # newest last
    assert (body.settled, body.successful, body.admitted) == (31, 21, 31)
    assert body.pending is None


def test_results_beyond_thirty_in_storage_are_read_as_corrupt(mw: MissionWorld) -> None:
    sid = create(mw)
    t0 = mw.clock.now()
    body_results = tuple(result(n, t0 + timedelta(minutes=n)) for n in range(1, 31))
    edit_body(mw, sid, lambda b: replace(b, results=body_results, settled=40, successful=40))
    detail = mw.schedules.detail(mw.alice.id, sid)
    assert len(detail["results"]) == 30
    assert detail["results"][0]["passageId"] == "psg_0030"  # newest first in reads
    assert detail["latestResult"]["passageId"] == "psg_0030"
    assert detail["counters"]["settled"] == 40
    edit_body(mw, sid, lambda b: replace(b, results=(*b.results, result(31, t0))))
    with pytest.raises(CorruptDocument):
        mw.schedules.detail(mw.alice.id, sid)


# --- 64 control records ---------------------------------------------------------------------


def test_sixty_fifth_control_evicts_the_oldest_completed_record(mw: MissionWorld) -> None:
    sid = create(mw)
    for i in range(MAX_CONTROL_RECORDS):
        control(mw, sid, "configure", f"edit-{i:04d}", {"notes": f"edit {i}"})
    assert revision(mw, sid) == MAX_CONTROL_RECORDS + 1
    first = mw.schedules.control_status(mw.alice.id, sid, "edit-0000", expected_revision=1)
    assert (first.status, first.revision) == ("applied", 2)
    assert mw.schedules.detail(mw.alice.id, sid)["evictedControlRevision"] == 0

    control(mw, sid, "configure", "edit-0064", {"notes": "edit 64"})
    evicted = mw.schedules.control_status(
        mw.alice.id, sid, "edit-0000", expected_revision=1, action="configure"
    )
    assert evicted.status == "unknown"  # never "rejected": its record may have been evicted
    assert mw.schedules.detail(mw.alice.id, sid)["evictedControlRevision"] == 2
    second = mw.schedules.control_status(mw.alice.id, sid, "edit-0001")
    assert (second.status, second.revision) == ("applied", 3)
    # A stale request the bound cannot cover is still provably rejected.
    with pytest.raises(RevisionConflict):
        mw.schedules.pause(mw.bob.id, sid, request_id="pause-stale", expected_revision=2)
    stale = mw.schedules.control_status(mw.alice.id, sid, "pause-stale", expected_revision=2)
    assert (stale.status, stale.code) == ("rejected", "revision-conflict")
    covered = mw.schedules.control_status(mw.alice.id, sid, "pause-stale", expected_revision=1)
    assert covered.status == "unknown"

    control(mw, sid, "configure", "edit-0065", {"notes": "edit 65"})
    assert mw.schedules.detail(mw.alice.id, sid)["evictedControlRevision"] == 3
    assert mw.schedules.control_status(mw.alice.id, sid, "edit-0001").status == "unknown"


def test_unresolved_records_are_never_evicted(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "run-now", "run-now-0001")  # incomplete until its passage is admitted
    for i in range(MAX_CONTROL_RECORDS):
        control(mw, sid, "configure", f"edit-{i:04d}", {"notes": f"edit {i}"})
    kept = mw.schedules.control_status(mw.alice.id, sid, "run-now-0001")
    assert (kept.status, kept.complete, kept.revision) == ("applied", False, 2)
    assert mw.schedules.control_status(mw.alice.id, sid, "edit-0000").status == "unknown"
    assert mw.schedules.detail(mw.alice.id, sid)["evictedControlRevision"] == 3


def test_checks_complete_at_once_and_pauses_supersede(mw: MissionWorld) -> None:
    """Unresolved records stay few: a Check restarts a durable observer (complete at once)
    and a newer Pause/Stop completes the older unresolved one."""
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "run-now", "run-now-0001")

    def admit(body: Body) -> Body:  # the passage was admitted: a Pause has a family to stop
        assert body.pending is not None
        return replace(body, pending=replace(body.pending, admitted=True), admitted=1)

    edit_body(mw, sid, admit)
    control(mw, sid, "pause", "pause-0001")
    control(mw, sid, "check", "check-0001")
    assert mw.schedules.control_status(mw.alice.id, sid, "check-0001").complete is True
    assert mw.schedules.control_status(mw.alice.id, sid, "pause-0001").complete is False
    control(mw, sid, "stop", "stop-0001")
    assert mw.schedules.control_status(mw.alice.id, sid, "pause-0001").complete is True
    assert mw.schedules.control_status(mw.alice.id, sid, "stop-0001").complete is False


def test_sixty_four_unresolved_records_refuse_the_next_control(mw: MissionWorld) -> None:
    sid = create(mw)
    for i in range(MAX_CONTROL_RECORDS):
        control(mw, sid, "configure", f"edit-{i:04d}", {"notes": f"edit {i}"})
    # Controls alone leave at most a Run now, a Pause/Stop and a Delete unresolved; mark
    # every record unresolved directly to reach the bound.
    with mw.store.transaction() as conn:
        conn.execute(update(schedule_controls).values(complete=False))
    rev = revision(mw, sid)
    with nothing_written(mw.store), pytest.raises(LimitReached):
        mw.schedules.configure(
            mw.bob.id, sid, {"notes": "more"}, request_id="edit-more", expected_revision=rev
        )


# --- the 256 KiB document ------------------------------------------------------------------------


def test_document_over_256_kib_is_refused(mw: MissionWorld) -> None:
    """Through controls alone a document stays far below 256 KiB (a 64 KiB configuration
    plus at most one frozen profile); only result summaries, written by settlement, can
    fill it. So the body is filled directly and a control pushes the whole past the
    ceiling."""
    config = _config_of_size(40_000)
    receipt = mw.schedules.create(mw.bob.id, mw.home.id, config, request_id="create-big")
    sid = receipt.mission_id
    assert sid is not None
    t0 = mw.clock.now()
    summaries = tuple(result(n, t0, summary="s" * 7_000) for n in range(1, 31))
    edit_body(mw, sid, lambda b: replace(b, results=summaries))
    size = mw.schedules.detail(mw.alice.id, sid)["size"]
    assert MAX_DOCUMENT_BYTES - 20_000 < size <= MAX_DOCUMENT_BYTES
    more = _config_of_size(60_000)["profile"]
    with nothing_written(mw.store), pytest.raises(TooLarge) as caught:
        mw.schedules.configure(
            mw.bob.id, sid, {"profile": more}, request_id="grow-0001", expected_revision=1
        )
    assert caught.value.details["field"] == "document"
    assert caught.value.details["size"] > MAX_DOCUMENT_BYTES
    # A smaller edit still fits.
    mw.schedules.configure(
        mw.bob.id, sid, {"notes": "fits"}, request_id="edit-0001", expected_revision=1
    )
