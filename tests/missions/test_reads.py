"""Reads (seed 002 scheduleList, detail and preview): pages of at most eight in
mission-ID order, tombstones on the page, corrupt documents failing their page, and
reads that never write; on both backends."""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

import pytest

from kalends.errors import CorruptDocument, InvalidInput, NotFound
from kalends.missions.limits import MAX_DOCUMENT_BYTES, MAX_PAGE
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld
from missions.surgery import control, create, edit_body, result, write_columns


def _many(mw: MissionWorld, count: int) -> list[UUID]:
    return [create(mw, f"create-{i:04d}", title=f"Schedule {i}") for i in range(count)]


def _walk(mw: MissionWorld, limit: int = MAX_PAGE) -> list[list[dict[str, object]]]:
    pages = []
    after: str | None = None
    while True:
        page = mw.schedules.page(mw.carol.id, mw.home.id, after=after, limit=limit)
        pages.append(page.items)
        assert len(page.items) <= limit
        if page.next_after is None:
            return pages
        assert page.next_after == page.items[-1]["id"]
        after = page.next_after


def test_pages_are_key_ordered_and_tombstones_take_their_place(mw: MissionWorld) -> None:
    ids = _many(mw, 19)
    ordered = sorted(ids, key=lambda u: u.bytes)
    # Delete the 8th and 9th in key order: a tombstone ends page one, another starts page two.
    for sid in ordered[7:9]:
        control(mw, sid, "delete", "delete-0001")
    with nothing_written(mw.store):
        pages = _walk(mw)
    assert [len(p) for p in pages] == [8, 8, 3]
    assert [item["id"] for p in pages for item in p] == [str(u) for u in ordered]
    assert pages[0][7]["kind"] == "tombstone" and pages[1][0]["kind"] == "tombstone"
    assert sum(item["kind"] == "tombstone" for p in pages for item in p) == 2
    # A cursor at a tombstone moves past it.
    after_tomb = mw.schedules.page(mw.carol.id, mw.home.id, after=str(ordered[7]), limit=2)
    assert [i["id"] for i in after_tomb.items] == [str(ordered[8]), str(ordered[9])]
    assert after_tomb.next_after == str(ordered[9])


def test_next_after_is_none_when_the_last_page_is_full(mw: MissionWorld) -> None:
    ids = _many(mw, 2 * MAX_PAGE)
    pages = _walk(mw)
    assert [len(p) for p in pages] == [MAX_PAGE, MAX_PAGE]
    small = _walk(mw, limit=3)
    assert [len(p) for p in small] == [3, 3, 3, 3, 3, 1]
    assert [i["id"] for p in small for i in p] == [str(u) for u in sorted(ids, key=str)]
    last = mw.schedules.page(mw.carol.id, mw.home.id, after=small[-1][-1]["id"])  # type: ignore[arg-type]
    assert (last.items, last.next_after) == ([], None)


def test_empty_workspace_and_other_workspaces_stay_apart(mw: MissionWorld) -> None:
    empty = mw.schedules.page(mw.alice.id, mw.home.id)
    assert (empty.items, empty.next_after) == ([], None)
    mw.schedules.create(
        mw.dave.id,
        mw.away.id,
        {"title": "Away", "profile": {"command": ["true"]}, "policy": {"kind": "immediate"}},
        request_id="create-away",
    )
    assert mw.schedules.page(mw.alice.id, mw.home.id).items == []
    away = mw.schedules.page(mw.dave.id, mw.away.id).items
    assert [i["kind"] for i in away] == ["one-time"]


@pytest.mark.parametrize("limit", [0, MAX_PAGE + 1, -1, True, "8"])
def test_page_limit_outside_one_to_eight_is_refused(mw: MissionWorld, limit: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        mw.schedules.page(mw.alice.id, mw.home.id, limit=limit)  # type: ignore[arg-type]
    assert caught.value.field == "limit"


def test_bad_cursor_is_refused(mw: MissionWorld) -> None:
    with pytest.raises(InvalidInput) as caught:
        mw.schedules.page(mw.alice.id, mw.home.id, after="not-a-mission-id")
    assert caught.value.field == "after"


def test_corrupt_document_fails_its_page_only(mw: MissionWorld) -> None:
    ids = sorted(_many(mw, 10), key=str)
    write_columns(mw, ids[9], config="{this is not json")
    first = mw.schedules.page(mw.carol.id, mw.home.id)
    assert len(first.items) == 8
    with pytest.raises(CorruptDocument) as caught:
        mw.schedules.page(mw.carol.id, mw.home.id, after=first.next_after)
    assert caught.value.details["schedule"] == str(ids[9])
    with pytest.raises(CorruptDocument):
        mw.schedules.detail(mw.carol.id, ids[9])
    with pytest.raises(CorruptDocument):
        mw.schedules.play(mw.bob.id, ids[9], request_id="play-0001", expected_revision=1)


@pytest.mark.parametrize(
    "column",
    [
        {"config": '{"v": 1, "title": "No profile"}'},
        {"config": '{"v": 2, "title": "x"}'},
        {"body": "[]"},
        {"body": '{"v": 1}'},
        {"body": None},
    ],
)
def test_malformed_stored_parts_are_corrupt(mw: MissionWorld, column: dict[str, object]) -> None:
    sid = create(mw)
    write_columns(mw, sid, **column)
    with pytest.raises(CorruptDocument):
        mw.schedules.page(mw.carol.id, mw.home.id)


def test_stored_document_over_its_ceiling_is_corrupt(mw: MissionWorld) -> None:
    sid = create(mw)
    t0 = mw.clock.now()
    big = tuple(result(n, t0, summary="s" * 9_000) for n in range(1, 31))
    edit_body(mw, sid, lambda b: replace(b, results=big))
    with pytest.raises(CorruptDocument, match=str(MAX_DOCUMENT_BYTES)):
        mw.schedules.page(mw.carol.id, mw.home.id)


def test_reads_need_membership_and_write_nothing(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    with nothing_written(mw.store):
        detail = mw.schedules.detail(mw.carol.id, sid)
        listed = mw.schedules.page(mw.carol.id, mw.home.id).items
        mw.schedules.preview(mw.carol.id, sid, 3)
        mw.schedules.control_status(mw.carol.id, sid, "play-0001")
        mw.schedules.receipt(mw.carol.id, mw.home.id, "create-0001")
    assert listed == [detail]  # list and detail agree
    for read in (
        lambda: mw.schedules.detail(mw.dave.id, sid),
        lambda: mw.schedules.page(mw.dave.id, mw.home.id),
        lambda: mw.schedules.preview(mw.dave.id, sid),
        lambda: mw.schedules.control_status(mw.dave.id, sid, "play-0001"),
        lambda: mw.schedules.receipt(mw.dave.id, mw.home.id, "create-0001"),
    ):
        with pytest.raises(NotFound):  # as for IDs nobody uses
            read()


def test_detail_projection_hides_the_environment(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "run-now", "run-now-1")
    detail = mw.schedules.detail(mw.carol.id, sid)
    assert "s3cret" not in str(detail)
    assert detail["profile"]["envNames"] == ["API_TOKEN"]
    assert detail["pending"]["profile"]["envNames"] == ["API_TOKEN"]
    assert detail["kind"] == "schedule"
    assert detail["observation"] == {
        "status": "starting",
        "passageId": detail["pending"]["passageId"],
    }
    assert detail["blockReason"] == "pending-passage"
    assert detail["checks"]["since"] is not None


def test_preview_before_first_play_and_its_count(mw: MissionWorld) -> None:
    sid = create(mw, end={"maxPassages": 2})
    slots = mw.schedules.preview(mw.carol.id, sid, 5)
    assert [s["local"][:16] for s in slots] == ["2025-03-02T09:00", "2025-03-03T09:00"]
    assert all(s["zone"] == "Europe/Berlin" for s in slots)
    for count in (0, 101):
        with pytest.raises(InvalidInput) as caught:
            mw.schedules.preview(mw.carol.id, sid, count)
        assert caught.value.field == "count"
