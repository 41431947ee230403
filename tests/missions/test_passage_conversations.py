"""Every passage has a conversation of its own (SPEC §4 "Conversations"): opened with the
reservation, in its transaction (its input the first message), ``streaming`` while the
passage runs, and at settlement given the outcome and the report's summary as its last
message and ``settled``, in the archive's transaction. Scheduled slots (one schedule
and a round of several), Run now, a failed passage. Both databases."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from kalends.conversations import Conversation, conversation_of_passage
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from missions.condition_support import settle
from missions.conftest import MissionWorld
from missions.scheduler_support import create, play, stored_body

DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}


def _due(mw: MissionWorld, sid: UUID) -> datetime:
    return datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])


def _conversation(mw: MissionWorld, passage_id: str) -> Conversation:
    found = mw.store.run(lambda conn: conversation_of_passage(conn, passage_id), write=False)
    assert found is not None, f"passage {passage_id} has no conversation"
    return found


def _texts(mw: MissionWorld, found: Conversation) -> list[tuple[int, str, str]]:
    messages = mw.services.conversations.messages(mw.bob.id, found.id)
    return [(m.seq, m.role.value, m.text) for m in messages]


def test_a_scheduled_passage_is_told_in_its_conversation_and_settles_it(
    mw: MissionWorld,
) -> None:
    sid = create(mw, DAILY, "create-conv-1", notes="Keep it short.")
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    slot = _due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    scheduler.run_once()

    body = stored_body(mw.store, sid)
    assert body.pending is not None
    passage = body.pending.passage_id
    found = _conversation(mw, passage)
    assert (found.kind.value, found.state.value) == ("passage", "streaming")
    assert (found.workspace_id, found.schedule_id) == (mw.home.id, sid)
    assert found.title.startswith("Morning report — ") and found.title.endswith(
        "09:00 (Europe/Berlin)"
    )
    slot_text = slot.isoformat().replace("+00:00", "Z")
    assert _texts(mw, found) == [
        (
            1,
            "user",
            "Morning report\nObjective: Summarise yesterday's commits.\n"
            f"Notes: Keep it short.\nLaunched for the slot {slot_text}.",
        )
    ]
    # Listed among the workspace's conversations, to its members.
    listed = mw.services.conversations.list(mw.carol.id, mw.home.id)
    assert [c.passage_id for c in listed] == [passage]

    settle(mw, scheduler, runtime, sid, "completed")
    found = _conversation(mw, passage)
    assert found.state.value == "settled"
    assert _texts(mw, found)[-1] == (
        2,
        "system",
        "Settled: completed.\nReport: completed by the test",
    )


def test_a_failed_passage_settles_its_conversation_with_the_outcome(mw: MissionWorld) -> None:
    sid = create(mw, DAILY, "create-conv-2")
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    mw.clock.set(_due(mw, sid) + timedelta(seconds=1))
    scheduler.run_once()
    body = stored_body(mw.store, sid)
    assert body.pending is not None
    passage = body.pending.passage_id
    settle(mw, scheduler, runtime, sid, "failed")
    found = _conversation(mw, passage)
    assert found.state.value == "settled"
    [(seq, role, text)] = _texts(mw, found)[1:]
    assert (seq, role) == (2, "system")
    assert text.startswith("Settled: failed") and text.endswith("Report: failed by the test")


def test_a_run_now_opens_its_conversation_with_the_reservation(mw: MissionWorld) -> None:
    sid = create(mw, DAILY, "create-conv-3")
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-conv-1", expected_revision=rev)
    body = stored_body(mw.store, sid)
    assert body.pending is not None
    found = _conversation(mw, body.pending.passage_id)
    assert found.title.endswith("(Europe/Berlin, run now)")
    [(seq, role, text)] = _texts(mw, found)
    assert (seq, role) == (1, "user")
    assert text.endswith("Launched by Run now.")
    # Read again, the same Run now reserves nothing more: still one conversation.
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-conv-1", expected_revision=rev)
    assert len(mw.services.conversations.list(mw.bob.id, mw.home.id)) == 1


def test_a_round_of_reservations_opens_a_conversation_each(mw: MissionWorld) -> None:
    sids = [create(mw, DAILY, f"create-conv-round-{i}", title=f"Report {i}") for i in range(5)]
    for sid in sids:
        play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    mw.clock.set(_due(mw, sids[0]) + timedelta(seconds=1))
    scheduler.run_once()
    titles = []
    for sid in sids:
        body = stored_body(mw.store, sid)
        assert body.pending is not None
        found = _conversation(mw, body.pending.passage_id)
        assert found.last_seq == 1 and found.revision == 2
        titles.append(found.title.split(" — ")[0])
    assert sorted(titles) == [f"Report {i}" for i in range(5)]


def test_a_title_with_a_line_break_is_one_line_as_the_conversations_title(
    mw: MissionWorld,
) -> None:
    sid = create(mw, DAILY, "create-conv-line", title="Nightly\nbackup")
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-line-1", expected_revision=rev)
    body = stored_body(mw.store, sid)
    assert body.pending is not None
    found = _conversation(mw, body.pending.passage_id)
    assert found.title.startswith("Nightly backup — ")
    assert _texts(mw, found)[0][2].startswith("Nightly\nbackup\n")
