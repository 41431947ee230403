"""The crash point between a passage's settlement and its watched cursors' advance: there
is none to land in. The archive, the cursor advance, the withdrawal of open questions and
the conversation's settlement are one transaction, so a scheduler that dies in the middle
(a :class:`Crash` raised after the cursors were written, before the commit) leaves the
passage pending and the cursors where they were; the next scheduler archives it once and
advances the cursors once. Both databases."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.missions import watching
from kalends.missions.scheduler import Scheduler
from kalends.storage.watch_tables import watch_cursors
from missions.conftest import MissionWorld
from missions.scheduler_support import Crash, stored_body
from missions.test_watched_conversations import Watching, _thread


def _cursor_seqs(mw: MissionWorld) -> list[int]:
    def read(conn: Connection) -> list[int]:
        rows = conn.execute(select(watch_cursors.c.cursor)).scalars().all()
        return [json.loads(text)["seq"] for text in rows]

    return mw.store.run(read, write=False)


def test_a_crash_inside_the_archive_leaves_both_and_the_next_look_does_both_once(
    mw: MissionWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = _thread(mw, "inbox", 40)
    w = Watching(mw, [thread], "crash")
    given = w.passage()
    assert len(given["watched"][0]["messages"]) == 32
    pending = stored_body(mw.store, w.sid).pending
    assert pending is not None
    w.runtime.report(pending.session_id, "completed", "read them")
    w.runtime.finish(pending.session_id, status=0)

    real = watching.settle_watch

    def dying(conn: Connection, *args: Any, **kw: Any) -> None:
        real(conn, *args, **kw)
        raise Crash("after the cursors were written, before the commit")

    monkeypatch.setattr("kalends.missions.looks.settle_watch", dying)
    with pytest.raises(Crash):
        for _ in range(20):
            mw.clock.advance(timedelta(seconds=31))
            w.scheduler.run_once()
    body = stored_body(mw.store, w.sid)
    assert body.pending is not None and body.pending.passage_id == pending.passage_id
    assert body.results == ()
    assert _cursor_seqs(mw) == []

    monkeypatch.setattr("kalends.missions.looks.settle_watch", real)
    fresh = Scheduler(mw.store, w.runtime, owner="s2")
    for _ in range(20):
        mw.clock.advance(timedelta(seconds=61))  # past the dead scheduler's lease
        fresh.run_once()
        if stored_body(mw.store, w.sid).pending is None:
            break
    body = stored_body(mw.store, w.sid)
    assert body.pending is None
    assert [r.passage_id for r in body.results] == [pending.passage_id]
    assert _cursor_seqs(mw) == [32]
    w.scheduler = fresh
    first = w.passage()["watched"][0]["messages"][0]
    assert first["text"] == "inbox 33"
