"""What `kalends schedule show` says of a conditioned schedule: the condition, its
baseline, the last read, why the last slot did or did not launch, and the pending
passage's proof, at 80 columns. Both databases; a real git repository."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

from rich.console import Console

from kalends.cli.schedules import detail_view
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from missions.condition_support import Repo, decide_slot
from missions.conftest import MissionWorld
from missions.scheduler_support import create, play


def _shown(mw: MissionWorld, sid: UUID) -> str:
    out = Console(width=80, record=True, file=io.StringIO())
    out.print(detail_view(mw.schedules.detail(mw.bob.id, sid)), soft_wrap=True)
    return out.export_text()


def test_show_says_the_baseline_the_last_slot_and_the_proof(mw: MissionWorld) -> None:
    repo = Repo(Path(mw.workspaces.get(mw.bob.id, mw.home.id).path) / "app")
    base = repo.head()
    sid = create(
        mw, {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}, "create-show-1",
        condition={"kind": "git-branch", "branch": "main", "path": "app"},
    )  # fmt: skip
    play(mw, sid)
    text = _shown(mw, sid)
    assert "branch main of app moves" in text
    assert f"commit {base[:12]}" in text
    assert "no slot read yet" in text

    scheduler = Scheduler(mw.store, MemoryRuntime(clock=mw.clock), owner="s1")
    slot = datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])
    mw.clock.set(slot + timedelta(seconds=1))
    decide_slot(mw, scheduler, sid, slot)
    text = _shown(mw, sid)
    assert "skipped (unchanged)" in text and "09:00" in text

    repo.commit("teach the parser dates")
    slot = datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])
    mw.clock.set(slot + timedelta(seconds=1))
    decide_slot(mw, scheduler, sid, slot)
    text = _shown(mw, sid)
    assert "launched (changed)" in text
    assert "1 commit(s): teach the parser dates" in text
    assert max(len(line) for line in text.splitlines()) <= 80
