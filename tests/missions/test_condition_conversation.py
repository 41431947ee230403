"""A ``conversation`` condition gates a schedule's slots (seed 002, the five source
conditions; SPEC §4 "Conversations"): real threads posted to through the conversations
service, the real scheduler reading them in its round's transaction, the memory runtime
standing in for the passages, the fake clock. Both databases."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from rich.console import Console
from sqlalchemy import delete, update
from sqlalchemy.engine import Connection

from kalends.cli.schedules import detail_view
from kalends.conversations import Conversation, Message, conversation_of_passage
from kalends.errors import InvalidInput
from kalends.missions import Body
from kalends.missions.config_condition import parse_condition
from kalends.missions.gate import Observed, Reading
from kalends.missions.gate_reads import BLOCKED_RETRY
from kalends.missions.gate_records import Checkpoint
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.missions.sources.conversations import read_followed
from kalends.storage.conversation_tables import conversations
from kalends.storage.testing import nothing_written
from missions.condition_support import admitted, decide_next, next_due, settle
from missions.conftest import MissionWorld, daily_config
from missions.scheduler_support import create, play, stored_body
from missions.surgery import revision

DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}


def _thread(mw: MissionWorld, title: str, *text: str) -> Conversation:
    """A thread of ``home`` started by bob, with ``text`` posted to it (complete)."""
    found = mw.services.conversations.create(mw.bob.id, mw.home.id, title)
    for said in text:
        mw.services.conversations.post(mw.bob.id, found.id, said)
    return found


def _following(*ids: UUID) -> dict[str, Any]:
    return {"kind": "conversation", "conversationIds": [str(i) for i in ids]}


def _world(mw: MissionWorld, *ids: UUID) -> tuple[UUID, Scheduler, MemoryRuntime]:
    sid = create(mw, DAILY, "create-conv-cond-1", condition=_following(*ids))
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    return sid, Scheduler(mw.store, runtime, owner="s1"), runtime


def _positions(**seqs: int) -> str:
    """The checkpoint of positions ``seqs`` (conversation ID → seq), as stored."""
    return json.dumps(dict(sorted(seqs.items())), separators=(",", ":"))


def _checkpoint(body: Body, ids: list[UUID]) -> str:
    key = "conversation:" + json.dumps(sorted(str(i) for i in ids), separators=(",", ":"))
    kept = body.checkpoint(key)
    assert kept is not None, f"no checkpoint of {key}"
    return kept.checkpoint


def _proof(body: Body) -> dict[str, Any]:
    assert body.pending is not None, "no passage is pending"
    assert body.pending.proof is not None, "the pending passage froze no proof"
    return body.pending.proof


def _named(message: Message) -> dict[str, Any]:
    """How the proof names a new message."""
    assert message.completed_at is not None
    return {
        "messageId": str(message.id),
        "type": "user",
        "digest": message.digest,
        "completedAt": message.completed_at.isoformat().replace("+00:00", "Z"),
    }


def test_only_a_stable_new_message_launches_and_only_completed_consumes_it(
    mw: MissionWorld,
) -> None:
    talk = _thread(mw, "Plans", "Book the hall")
    quiet = _thread(mw, "Quiet")
    ids = [talk.id, quiet.id]
    sid, scheduler, runtime = _world(mw, *ids)
    t, q = str(talk.id), str(quiet.id)
    base = _positions(**{t: 1, q: 0})
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["source"]["baseline"]["checkpoint"] == base  # first Play took it
    cursors = detail["source"]["baseline"]["observation"]["cursors"]
    (first,) = mw.services.conversations.messages(mw.bob.id, talk.id)
    assert cursors[t]["messageId"] == str(first.id) and cursors[t]["digest"] == first.digest
    assert cursors[q] == {
        "seq": 0, "messageId": None, "digest": None, "placement": cursors[q]["placement"]
    }  # fmt: skip

    # Day 1: nothing new: the slot is skipped, counted, no passage.
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and runtime.sessions() == []
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")
    assert body.checks_count == 1

    # A message still being written does not count: day 2 is skipped too.
    draft = mw.services.conversations.post(mw.bob.id, talk.id, "Also the", complete=False)
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and runtime.sessions() == []
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")
    assert _checkpoint(body, ids) == base

    # Finished, it is a stable new message: day 3 launches with the frozen proof.
    more = mw.services.conversations.append(mw.bob.id, draft.id, " chairs", draft.revision)
    done = mw.services.conversations.finish(mw.bob.id, draft.id, more.revision)
    _slot, body = decide_next(mw, scheduler, sid)
    proof = _proof(body)
    assert proof["kind"] == "conversation"
    assert (proof["baseline"], proof["checkpoint"]) == (base, _positions(**{t: 2, q: 0}))
    assert proof["change"] == {
        "conversations": [
            {"conversationId": t, "since": 1, "through": 2, "count": 1, "more": False,
             "messages": [_named(done)]},
        ],
        "messages": 1,
        "truncated": False,
    }  # fmt: skip
    assert proof["observation"]["cursors"][t]["messageId"] == str(done.id)
    assert body.gates[-1].detail == "1 new message(s) in 1 followed conversation(s)"
    body = admitted(mw, scheduler, sid)
    (session,) = runtime.sessions()
    assert runtime.started(session).input["proof"] == proof
    # In words on `kalends schedule show`.
    shown = Console(width=200, record=True, file=io.StringIO())
    shown.print(detail_view(mw.schedules.detail(mw.bob.id, sid)), soft_wrap=True)
    text = " ".join(shown.export_text().split())
    assert f"condition new messages in conversations {t}, {q}" in text
    assert "proof 1 new message in 1 conversation" in text
    assert re.search(r"baseline read up to #[01], #[01], since ", text)
    assert re.search(r"last read up to #[02], #[02] at ", text)

    # It fails: the checkpoint stays, so day 4 launches again on the same message.
    body = settle(mw, scheduler, runtime, sid, "failed")
    assert _checkpoint(body, ids) == base
    _slot, body = decide_next(mw, scheduler, sid)
    assert _proof(body)["checkpoint"] == _positions(**{t: 2, q: 0})
    assert _proof(body)["change"]["conversations"][0]["messages"] == [_named(done)]

    # It completes: consumed; day 5 launches nothing.
    admitted(mw, scheduler, sid)
    body = settle(mw, scheduler, runtime, sid, "completed")
    assert _checkpoint(body, ids) == _positions(**{t: 2, q: 0})
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is None and len(runtime.sessions()) == 2
    assert (body.gates[-1].outcome, body.gates[-1].reason) == ("skipped", "unchanged")

    # A message in the other conversation launches day 6, naming that conversation only.
    said = mw.services.conversations.post(mw.bob.id, quiet.id, "Me too")
    _slot, body = decide_next(mw, scheduler, sid)
    change = _proof(body)["change"]
    assert [c["conversationId"] for c in change["conversations"]] == [q]
    assert change["conversations"][0]["messages"] == [_named(said)]
    assert (change["conversations"][0]["since"], change["conversations"][0]["through"]) == (0, 1)


def _reread(mw: MissionWorld, scheduler: Scheduler, sid: UUID, reason: str) -> Body:
    """Move past the blocked slot's retry and run the scheduler until the newest gate
    record is a block for ``reason``. Returns the body."""
    mw.clock.advance(BLOCKED_RETRY + timedelta(seconds=1))
    for _ in range(20):
        scheduler.run_once()
        body = stored_body(mw.store, sid)
        last = body.gates[-1]
        if last.outcome == "blocked" and last.reason == reason:
            return body
        mw.clock.advance(timedelta(milliseconds=60))
    raise AssertionError(f"no block for {reason}: {stored_body(mw.store, sid).gates[-1]}")


def _place(mw: MissionWorld, conversation_id: UUID, workspace_id: UUID) -> None:
    def run(conn: Connection) -> None:
        conn.execute(
            update(conversations)
            .where(conversations.c.id == conversation_id)
            .values(workspace_id=workspace_id)
        )

    mw.store.run(run)


def test_a_moved_rewritten_or_deleted_conversation_blocks_its_slot_with_its_reason(
    mw: MissionWorld,
) -> None:
    talk = _thread(mw, "Plans", "Book the hall")
    other = _thread(mw, "Other", "Hello")
    ids = [talk.id, other.id]
    sid, scheduler, runtime = _world(mw, *ids)
    base = _positions(**{str(talk.id): 1, str(other.id): 1})
    assert _checkpoint(stored_body(mw.store, sid), ids) == base

    # Moved to another workspace, with a new message there: blocked, never "no change".
    _place(mw, talk.id, mw.away.id)
    mw.services.conversations.post(mw.bob.id, other.id, "New here")
    slot = next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = _reread(mw, scheduler, sid, "source-moved")
    last = body.gates[-1]
    assert (last.slot, last.outcome) == (slot, "blocked")
    assert last.detail == f"conversation {talk.id} was moved to another workspace (source-moved)"
    assert body.observed is not None and body.observed["blockReason"] == "source-moved"
    assert body.pending is None and runtime.sessions() == []
    assert body.high_water is None or body.high_water < slot  # the slot is kept
    assert _checkpoint(body, ids) == base

    # Back home, but the message its checkpoint stands on is rewritten: still blocked.
    _place(mw, talk.id, mw.home.id)
    (anchor,) = mw.services.conversations.messages(mw.bob.id, talk.id)
    mw.services.conversations.edit(mw.bob.id, anchor.id, "Book the big hall", anchor.revision)
    body = _reread(mw, scheduler, sid, "source-proof-missing")
    assert body.gates[-1].detail == (
        f"conversation {talk.id} had the message its checkpoint stands on rewritten "
        "(anchor-rewritten)"
    )
    assert body.pending is None and runtime.sessions() == []

    # Deleted: blocked as missing.
    mw.store.run(
        lambda conn: conn.execute(delete(conversations).where(conversations.c.id == talk.id))
    )
    body = _reread(mw, scheduler, sid, "source-missing")
    assert body.gates[-1].detail == f"conversation {talk.id} was deleted (source-deleted)"
    assert body.pending is None and runtime.sessions() == []
    assert _checkpoint(body, ids) == base
    source = mw.schedules.detail(mw.bob.id, sid)["source"]
    assert source["lastObservation"]["blockReason"] == "source-missing"
    assert source["lastSlot"]["outcome"] == "blocked"


def test_a_conversation_of_another_workspace_or_of_no_conversation_is_refused(
    mw: MissionWorld,
) -> None:
    mine = _thread(mw, "Plans")
    away = mw.services.conversations.create(mw.dave.id, mw.away.id, "Elsewhere")
    cases = [
        ([str(mine.id), str(away.id)], 1, f"no conversation {away.id} in this workspace"),
        ([str(uuid4())], 0, None),
        (["not-an-id"], 0, "no conversation not-an-id in this workspace"),
    ]
    for i, (ids, index, said) in enumerate(cases):
        field = f"condition.conversationIds[{index}]"
        condition = {"kind": "conversation", "conversationIds": ids}
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.create(
                mw.bob.id, mw.home.id, daily_config(condition=condition),
                request_id=f"create-refused-{i:04d}",
            )  # fmt: skip
        assert caught.value.field == field
        expected = said or f"no conversation {ids[0]} in this workspace"
        assert caught.value.message == f"{field}: {expected}"

    # An edit is refused alike.
    sid = create(mw, DAILY, "create-plain-0001")
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.configure(
            mw.bob.id, sid, {"condition": _following(away.id)}, request_id="edit-refused-0001",
            expected_revision=revision(mw, sid),
        )  # fmt: skip
    assert caught.value.field == "condition.conversationIds[0]"


def test_a_schedule_cannot_follow_its_own_passage_but_another_schedule_may(
    mw: MissionWorld,
) -> None:
    sid = create(mw, DAILY, "create-own-0001")
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    _slot, body = decide_next(mw, scheduler, sid)
    assert body.pending is not None
    passage = body.pending.passage_id
    own = mw.store.run(lambda conn: conversation_of_passage(conn, passage), write=False)
    assert own is not None and own.schedule_id == sid

    admitted(mw, scheduler, sid)
    settle(mw, scheduler, runtime, sid, "completed")
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.configure(
            mw.bob.id, sid, {"condition": _following(own.id)}, request_id="edit-own-0001",
            expected_revision=revision(mw, sid),
        )  # fmt: skip
    assert caught.value.field == "condition.conversationIds[0]"
    assert caught.value.message == (
        f"condition.conversationIds[0]: conversation {own.id} is one of this schedule's own "
        "passages; a schedule cannot follow its own passages"
    )

    # Another schedule of the workspace follows that passage's conversation.
    receipt = mw.schedules.create(
        mw.bob.id, mw.home.id, daily_config(condition=_following(own.id)),
        request_id="create-follower-0001",
    )  # fmt: skip
    assert receipt.status == "created" and receipt.mission_id is not None
    condition: Mapping[str, Any] = mw.schedules.detail(mw.bob.id, receipt.mission_id)["condition"]
    assert condition == {"kind": "conversation", "conversationIds": [str(own.id)]}


def _follow(mw: MissionWorld, sid: UUID, request_id: str, *ids: UUID) -> None:
    outcome = mw.schedules.configure(
        mw.bob.id, sid, {"condition": _following(*ids)}, request_id=request_id,
        expected_revision=revision(mw, sid),
    )  # fmt: skip
    assert outcome.status == "applied"


def test_a_conversation_followed_again_keeps_its_cursor_and_fails_closed_when_rewritten(
    mw: MissionWorld,
) -> None:
    first = _thread(mw, "First", "one")
    second = _thread(mw, "Second", "one")
    sid, scheduler, runtime = _world(mw, first.id, second.id)
    f, s = str(first.id), str(second.id)
    assert _checkpoint(stored_body(mw.store, sid), [first.id, second.id]) == _positions(
        **{f: 1, s: 1}
    )

    # A message arrives, then the second conversation is removed from the condition: the
    # first keeps its cursor (not its position now), so the message still launches.
    news = mw.services.conversations.post(mw.bob.id, first.id, "two")
    _follow(mw, sid, "edit-follow-0001", first.id)
    body = stored_body(mw.store, sid)
    assert _checkpoint(body, [first.id]) == _positions(**{f: 1})
    assert _checkpoint(body, [first.id, second.id]) == _positions(**{f: 1, s: 1})  # retained
    _slot, body = decide_next(mw, scheduler, sid)
    change = _proof(body)["change"]
    assert [c["conversationId"] for c in change["conversations"]] == [f]
    assert change["conversations"][0]["messages"] == [_named(news)]
    admitted(mw, scheduler, sid)
    settle(mw, scheduler, runtime, sid, "completed")

    # The second conversation's message at its cursor is rewritten while not followed;
    # followed again alone, it fails closed instead of starting over from now.
    (anchor,) = mw.services.conversations.messages(mw.bob.id, second.id)
    mw.services.conversations.edit(mw.bob.id, anchor.id, "one, rewritten", anchor.revision)
    _follow(mw, sid, "edit-follow-0002", second.id)
    assert (
        stored_body(mw.store, sid).checkpoint(
            "conversation:" + json.dumps([s], separators=(",", ":"))
        )
        is None
    )  # (no baseline could be taken)
    slot = next_due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    body = _reread(mw, scheduler, sid, "source-proof-missing")
    assert body.gates[-1].detail == (
        f"conversation {s} had the message its checkpoint stands on rewritten (anchor-rewritten)"
    )
    assert body.pending is None and len(runtime.sessions()) == 1


def test_a_read_keeps_32_messages_a_conversation_and_the_proof_names_32_in_all(
    mw: MissionWorld,
) -> None:
    busy = _thread(mw, "Busy", "start")
    other = _thread(mw, "Other", "start")
    condition = parse_condition(_following(busy.id, other.id))
    assert condition is not None
    now = mw.clock.now()

    def read(baseline: Checkpoint | None) -> Reading:
        return mw.store.run(
            lambda conn: read_followed(conn, condition, mw.home.id, baseline, now), write=False
        )

    first = read(None)
    assert isinstance(first, Observed) and first.change is None
    base = Checkpoint(checkpoint=first.checkpoint, at=now, observation=first.observation)
    for i in range(33):
        mw.services.conversations.post(mw.bob.id, busy.id, f"busy {i}")
    for i in range(2):
        mw.services.conversations.post(mw.bob.id, other.id, f"other {i}")

    found = read(base)
    assert isinstance(found, Observed) and found.change is not None
    b, o = str(busy.id), str(other.id)
    assert found.checkpoint == _positions(**{b: 33, o: 3})  # 32 of busy's 33 new ones
    listed = found.change["conversations"]
    assert [(c["conversationId"], c["since"], c["through"], c["count"], c["more"])
            for c in listed] == [(b, 1, 33, 32, True), (o, 1, 3, 2, False)]  # fmt: skip
    assert [len(c["messages"]) for c in listed] == [32, 0]
    assert (found.change["messages"], found.change["truncated"]) == (34, True)

    # From there, the 33rd is still new; nothing else is.
    after = Checkpoint(checkpoint=found.checkpoint, at=now, observation=found.observation)
    again = read(after)
    assert isinstance(again, Observed) and again.change is not None
    assert again.checkpoint == _positions(**{b: 34, o: 3})
    assert [c["conversationId"] for c in again.change["conversations"]] == [b]
