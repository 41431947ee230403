"""A schedule's checklist template becomes a real task checklist for each passage the
scheduler reserves (SPEC §4 "Templates"): written with the reservation, named in the
passage record and its input, ticked by the passage on its own checklist only, counted in
the passage's result at settlement; from the first one the template is locked. Both
databases."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from rich.console import Console

from kalends.cli.schedules import detail_view
from kalends.errors import ControlConflict
from kalends.missions.passage_tasks import PassageScope, PassageTasks
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.testing import nothing_written
from missions.checklist_support import THREE_LEVELS
from missions.condition_support import settle
from missions.conftest import MissionWorld
from missions.scheduler_support import create, play, stored_body

TEMPLATE = THREE_LEVELS


def _shape(node: Any) -> tuple[str, list[Any]]:
    return (node.task.title, [_shape(c) for c in node.children])


def _due(mw: MissionWorld, sid: UUID) -> datetime:
    return datetime.fromisoformat(mw.schedules.detail(mw.bob.id, sid)["nextDueAt"])


def test_a_passage_gets_its_checklist_ticks_it_and_settles_with_its_counts(
    mw: MissionWorld,
) -> None:
    sid = create(
        mw, {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}, "create-tmpl-1",
        template=TEMPLATE,
    )  # fmt: skip
    play(mw, sid)
    runtime = MemoryRuntime(clock=mw.clock)
    scheduler = Scheduler(mw.store, runtime, owner="s1")
    scheduler.run_once()
    slot = _due(mw, sid)
    mw.clock.set(slot + timedelta(seconds=1))
    scheduler.run_once()

    body = stored_body(mw.store, sid)
    assert body.pending is not None and body.task_created
    checklist = UUID(str(body.pending.checklist_id))
    (session,) = runtime.sessions()
    given = runtime.started(session).input
    assert given["checklistId"] == str(checklist)
    listed = [(i["depth"], i["title"], i["revision"]) for i in given["checklist"]]
    assert listed == [
        (1, "Prepare", 1),
        (2, "Fetch the data", 1),
        (3, "Check the mirror", 1),
        (2, "Clean it", 1),
        (1, "Publish", 1),
    ]

    # The checklist: in the workspace's list, titled with the slot in the schedule's zone.
    (tree,) = [
        t
        for t in mw.services.tasks.tree(mw.alice.id, _list_of(mw, checklist))
        if t.task.id == checklist
    ]
    assert _shape(tree) == (
        f"Morning report — {slot.astimezone(_berlin()):%Y-%m-%d} 09:00 (Europe/Berlin)",
        [
            ("Prepare", [("Fetch the data", [("Check the mirror", [])]), ("Clean it", [])]),
            ("Publish", []),
        ],
    )

    # The passage ticks two items of its own checklist; another task is refused.
    passage = body.pending.passage_id
    tasks = PassageTasks(mw.services.tasks, speaker=lambda token: passage)
    items = {t.title: t for t in tree.walk()}
    tasks.complete("token", items["Check the mirror"].id, items["Check the mirror"].revision)
    tasks.complete("token", items["Publish"].id, items["Publish"].revision)
    tasks.comment("token", items["Clean it"].id, "the mirror was fine")
    mine = mw.services.tasks.create(mw.alice.id, _list_of(mw, checklist), "Someone's task")
    with nothing_written(mw.store), pytest.raises(PassageScope):
        tasks.complete("token", mine.id, mine.revision)

    body = settle(mw, scheduler, runtime, sid, "completed")
    result = body.results[-1]
    assert result.checklist == {"id": str(checklist), "open": 3, "done": 2}
    detail = mw.schedules.detail(mw.bob.id, sid)
    assert detail["latestResult"]["checklist"] == {"id": str(checklist), "open": 3, "done": 2}
    shown = Console(width=80, record=True, file=io.StringIO())
    shown.print(detail_view(detail), soft_wrap=True)
    assert f"2 done, 3 open at settlement ({checklist})" in " ".join(shown.export_text().split())
    # Between passages everything may change, but the template: a task was created from it.
    assert detail["locks"]["template"] is True
    rev = detail["revision"]
    with pytest.raises(ControlConflict, match="template is locked"):
        mw.schedules.configure(
            mw.bob.id, sid, {"template": None}, request_id="edit-tmpl-2", expected_revision=rev
        )


def test_a_run_now_gets_its_checklist_with_the_reservation(mw: MissionWorld) -> None:
    sid = create(
        mw, {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}, "create-tmpl-2",
        template=[{"title": "Only item"}],
    )  # fmt: skip
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.run_now(mw.bob.id, sid, request_id="run-now-0001", expected_revision=rev)
    body = stored_body(mw.store, sid)
    assert body.pending is not None and body.pending.checklist_id is not None
    checklist = UUID(body.pending.checklist_id)
    (tree,) = [
        t
        for t in mw.services.tasks.tree(mw.alice.id, _list_of(mw, checklist))
        if t.task.id == checklist
    ]
    assert tree.task.title.endswith("(Europe/Berlin, run now)")
    assert [c.task.title for c in tree.children] == ["Only item"]


def _list_of(mw: MissionWorld, checklist: UUID) -> UUID:
    return mw.services.tasks.get(mw.alice.id, checklist).task.list_id


def _berlin() -> ZoneInfo:
    return ZoneInfo("Europe/Berlin")


def test_a_schedule_given_a_template_makes_its_workspaces_list_at_once(mw: MissionWorld) -> None:
    def lists_of_home() -> list[str]:
        return [
            found.name for found in mw.services.directory.lists(mw.alice.id) if found.name == "home"
        ]

    create(mw, {"kind": "daily", "time": "09:00", "zone": "UTC"}, "create-plain")
    assert lists_of_home() == []  # no template: no list
    sid = create(mw, {"kind": "daily", "time": "09:00", "zone": "UTC"}, "create-tmpl-3",
                 template=[{"title": "Only item"}])  # fmt: skip
    assert lists_of_home() == ["home"]  # before any passage
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    mw.schedules.configure(
        mw.bob.id, sid, {"template": [{"title": "Other"}]}, request_id="edit-tmpl-3",
        expected_revision=rev,
    )  # fmt: skip
    assert lists_of_home() == ["home"]  # one list, however many schedules need it
