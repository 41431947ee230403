"""Completion, reopening, trash and restore, and the ``after_task_update`` hooks every
transition calls inside its own transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from kalends.clock import FakeClock
from kalends.errors import OpenDescendants, TaskTrashed
from kalends.tasks import Task, TaskService, TaskStatus, parse_schedule

from .conftest import World
from .support import (
    HookFailed,
    Recorder,
    failing_hook,
    history_kinds,
    intents,
    nothing_written,
    task_row,
)


@dataclass(frozen=True, slots=True)
class Checklist:
    """root > child > grandchild, and root > sibling."""

    root: Task
    child: Task
    grandchild: Task
    sibling: Task

    @property
    def all(self) -> tuple[Task, ...]:
        return (self.root, self.child, self.grandchild, self.sibling)


@pytest.fixture
def checklist(world: World) -> Checklist:
    make = world.tasks.create
    root = make(world.alice.id, world.home.id, "Root")
    child = make(world.alice.id, world.home.id, "Child", parent=root.id)
    grandchild = make(world.alice.id, world.home.id, "Grandchild", parent=child.id)
    sibling = make(world.alice.id, world.home.id, "Sibling", parent=root.id)
    return Checklist(root, child, grandchild, sibling)


def remind(world: World, task: Task, local: str = "2026-03-10T08:00:00") -> Task:
    data = {"reminders": [{"channel": "email", "local": local, "zone": "Europe/Paris"}]}
    current = world.tasks.get(world.alice.id, task.id).task
    return world.tasks.set_schedule(
        world.alice.id, task.id, current.revision, parse_schedule(data, world.recipient)
    )


def revision(world: World, task: Task) -> int:
    return int(task_row(world.store, task.id).revision)


class TestComplete:
    def test_a_leaf_completes_at_the_clocks_time(self, world: World, fake_clock: FakeClock) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Leaf")
        at = fake_clock.advance(3600)

        done = world.tasks.complete(world.bob.id, made.id, made.revision)

        assert done.status is TaskStatus.COMPLETED
        assert done.completed_at == at
        assert done.revision == made.revision + 1
        assert history_kinds(world.store, made.id) == ["created", "completed"]

    def test_open_descendants_refuse_a_plain_completion_and_nothing_is_written(
        self, world: World, checklist: Checklist
    ) -> None:
        with nothing_written(world.store), pytest.raises(OpenDescendants) as caught:
            world.tasks.complete(world.alice.id, checklist.root.id, checklist.root.revision)

        assert caught.value.code == "open-descendants"
        assert caught.value.details["open"] == 3

    def test_completing_the_subtree_completes_every_open_live_descendant_with_history(
        self, world: World, checklist: Checklist
    ) -> None:
        root = world.tasks.complete(
            world.alice.id, checklist.root.id, checklist.root.revision, complete_subtree=True
        )

        assert root.status is TaskStatus.COMPLETED
        for task in checklist.all:
            row = task_row(world.store, task.id)
            assert (row.status, row.completed_at) == ("completed", root.completed_at)
            assert row.revision == task.revision + 1
        for task in (checklist.child, checklist.grandchild, checklist.sibling):
            (event,) = [
                e for e in world.tasks.history(world.alice.id, task.id) if e.kind == "completed"
            ]
            assert event.payload == {"cascade_from": str(checklist.root.id)}
            assert event.actor_id == world.alice.id
        assert world.tasks.history(world.alice.id, checklist.root.id)[-1].payload == {
            "complete_subtree": True
        }

    def test_descendants_already_completed_are_left_as_they_were(
        self, world: World, checklist: Checklist, fake_clock: FakeClock
    ) -> None:
        first = world.tasks.complete(
            world.alice.id, checklist.child.id, checklist.child.revision, complete_subtree=True
        )
        sibling = world.tasks.complete(
            world.alice.id, checklist.sibling.id, checklist.sibling.revision
        )
        fake_clock.advance(60)

        world.tasks.complete(world.alice.id, checklist.root.id, checklist.root.revision)

        assert task_row(world.store, checklist.child.id).completed_at == first.completed_at
        assert revision(world, checklist.child) == first.revision
        assert revision(world, checklist.sibling) == sibling.revision
        assert history_kinds(world.store, checklist.child.id).count("completed") == 1

    def test_a_trashed_open_child_does_not_hold_back_its_parent_and_stays_open(
        self, world: World, checklist: Checklist
    ) -> None:
        world.tasks.trash(world.alice.id, checklist.child.id, checklist.child.revision)
        world.tasks.complete(world.alice.id, checklist.sibling.id, checklist.sibling.revision)

        world.tasks.complete(world.alice.id, checklist.root.id, checklist.root.revision)

        assert task_row(world.store, checklist.child.id).status == "open"
        assert task_row(world.store, checklist.grandchild.id).status == "open"

    def test_completion_cancels_the_live_intents_of_every_completed_task(
        self, world: World, checklist: Checklist
    ) -> None:
        remind(world, checklist.root)
        remind(world, checklist.grandchild)

        world.tasks.complete(
            world.alice.id,
            checklist.root.id,
            revision(world, checklist.root),
            complete_subtree=True,
        )

        for task in (checklist.root, checklist.grandchild):
            assert [(r.status, r.closed_reason) for r in intents(world.store, task.id)] == [
                ("cancelled", "task-completed")
            ]


class TestReopen:
    def test_reopening_a_descendant_reopens_its_completed_ancestors_only(
        self, world: World, checklist: Checklist
    ) -> None:
        world.tasks.complete(
            world.alice.id, checklist.root.id, checklist.root.revision, complete_subtree=True
        )

        reopened = world.tasks.reopen(
            world.bob.id, checklist.grandchild.id, revision(world, checklist.grandchild)
        )

        assert (reopened.status, reopened.completed_at) == (TaskStatus.OPEN, None)
        statuses = {t.title: task_row(world.store, t.id).status for t in checklist.all}
        assert statuses == {
            "Root": "open",
            "Child": "open",
            "Grandchild": "open",
            "Sibling": "completed",
        }
        for ancestor in (checklist.root, checklist.child):
            event = world.tasks.history(world.alice.id, ancestor.id)[-1]
            assert (event.kind, event.payload) == (
                "reopened",
                {"cascade_from": str(checklist.grandchild.id)},
            )
            assert task_row(world.store, ancestor.id).completed_at is None

    def test_reopening_does_not_replay_cancelled_reminders(self, world: World) -> None:
        made = remind(world, world.tasks.create(world.alice.id, world.home.id, "Remind me"))
        done = world.tasks.complete(world.alice.id, made.id, made.revision)

        world.tasks.reopen(world.alice.id, made.id, done.revision)

        assert [r.status for r in intents(world.store, made.id)] == ["cancelled"]


class TestTrashAndRestore:
    def test_trash_hides_the_subtree_and_cancels_its_intents(
        self, world: World, checklist: Checklist
    ) -> None:
        remind(world, checklist.grandchild)

        trashed = world.tasks.trash(world.alice.id, checklist.child.id, checklist.child.revision)

        assert trashed.trashed
        assert trashed.revision == checklist.child.revision + 1
        visible = [
            t.title for n in world.tasks.tree(world.alice.id, world.home.id) for t in n.walk()
        ]
        assert visible == ["Root", "Sibling"]
        assert [
            (r.status, r.closed_reason) for r in intents(world.store, checklist.grandchild.id)
        ] == [("cancelled", "task-trashed")]
        # The checklist read leaves the trashed branch out too.
        assert [
            t.title for t in world.tasks.checklist(world.alice.id, checklist.root.id).walk()
        ] == [
            "Root",
            "Sibling",
        ]

    def test_a_task_under_a_trashed_ancestor_cannot_be_changed(
        self, world: World, checklist: Checklist
    ) -> None:
        world.tasks.trash(world.alice.id, checklist.child.id, checklist.child.revision)

        with nothing_written(world.store), pytest.raises(TaskTrashed) as caught:
            world.tasks.rename(
                world.alice.id, checklist.grandchild.id, checklist.grandchild.revision, "x"
            )

        assert caught.value.code == "task-trashed"

    def test_restore_under_a_trashed_ancestor_is_refused_until_the_ancestor_is_restored(
        self, world: World, checklist: Checklist
    ) -> None:
        grandchild = world.tasks.trash(
            world.alice.id, checklist.grandchild.id, checklist.grandchild.revision
        )
        child = world.tasks.trash(world.alice.id, checklist.child.id, checklist.child.revision)

        with nothing_written(world.store), pytest.raises(TaskTrashed):
            world.tasks.restore(world.alice.id, grandchild.id, grandchild.revision)

        world.tasks.restore(world.alice.id, child.id, child.revision)
        restored = world.tasks.restore(world.alice.id, grandchild.id, grandchild.revision)
        assert not restored.trashed
        visible = [
            t.title for n in world.tasks.tree(world.alice.id, world.home.id) for t in n.walk()
        ]
        assert visible == ["Root", "Child", "Grandchild", "Sibling"]

    def test_restore_brings_the_subtree_back_without_replaying_reminders(
        self, world: World, checklist: Checklist
    ) -> None:
        remind(world, checklist.grandchild)
        child = world.tasks.trash(world.alice.id, checklist.child.id, checklist.child.revision)

        world.tasks.restore(world.alice.id, child.id, child.revision)

        assert world.tasks.get(world.alice.id, checklist.grandchild.id).task.trashed is False
        assert [r.status for r in intents(world.store, checklist.grandchild.id)] == ["cancelled"]
        assert history_kinds(world.store, child.id)[-2:] == ["trashed", "restored"]


Prepare = Callable[[World, Checklist], object]
Act = Callable[[World, TaskService, Checklist], object]


def nothing(world: World, checklist: Checklist) -> None:
    pass


def complete_all(w: World, c: Checklist) -> None:
    w.tasks.complete(w.alice.id, c.root.id, revision(w, c.root), complete_subtree=True)


def trash_child(w: World, c: Checklist) -> None:
    w.tasks.trash(w.alice.id, c.child.id, revision(w, c.child))


# Each transition: what prepares it (through a hook-less service), the act itself,
# the change kind and the tasks (by title) the hooks must be told about.
TRANSITIONS = [
    # Completing a checklist: the root and every open descendant.
    pytest.param(
        nothing,
        lambda w, s, c: s.complete(
            w.alice.id, c.root.id, revision(w, c.root), complete_subtree=True
        ),
        "completed",
        {"Root", "Child", "Grandchild", "Sibling"},
        id="complete-subtree",
    ),
    # Reopening a grandchild of a completed checklist: it and its completed ancestors.
    pytest.param(
        complete_all,
        lambda w, s, c: s.reopen(w.alice.id, c.grandchild.id, revision(w, c.grandchild)),
        "reopened",
        {"Grandchild", "Child", "Root"},
        id="reopen-with-ancestors",
    ),
    # Trashing a branch: the whole branch.
    pytest.param(
        nothing,
        lambda w, s, c: s.trash(w.alice.id, c.child.id, revision(w, c.child)),
        "trashed",
        {"Child", "Grandchild"},
        id="trash-branch",
    ),
    # Restoring a branch: the whole branch.
    pytest.param(
        trash_child,
        lambda w, s, c: s.restore(w.alice.id, c.child.id, revision(w, c.child)),
        "restored",
        {"Child", "Grandchild"},
        id="restore-branch",
    ),
    # Moving among siblings: the task.
    pytest.param(
        nothing,
        lambda w, s, c: s.move(w.alice.id, c.sibling.id, revision(w, c.sibling), before=c.child.id),
        "moved",
        {"Sibling"},
        id="move",
    ),
    # Reparenting a branch: the branch's root only; its items move along unchanged.
    pytest.param(
        nothing,
        lambda w, s, c: s.reparent(w.alice.id, c.child.id, revision(w, c.child), c.sibling.id),
        "reparented",
        {"Child"},
        id="reparent",
    ),
    # Moving a checklist to another list: the whole subtree.
    pytest.param(
        nothing,
        lambda w, s, c: s.move_to_list(w.alice.id, c.root.id, revision(w, c.root), w.work.id),
        "moved-list",
        {"Root", "Child", "Grandchild", "Sibling"},
        id="move-to-list",
    ),
]


class TestHooks:
    @pytest.mark.parametrize(("prepare", "act", "kind", "told"), TRANSITIONS)
    def test_every_transition_calls_the_hooks_inside_its_transaction_with_cascaded_ids(
        self,
        world: World,
        checklist: Checklist,
        prepare: Prepare,
        act: Act,
        kind: str,
        told: set[str],
    ) -> None:
        prepare(world, checklist)
        recorder, second = Recorder(), Recorder()
        service = TaskService(world.store, hooks=[recorder, second])
        ids = {t.title: t.id for t in checklist.all}

        act(world, service, checklist)

        (call,) = recorder.calls
        assert second.calls == recorder.calls
        assert call.change.kind == kind
        assert call.change.actor_id == world.alice.id
        assert call.change.at == world.store.clock.now()
        assert call.in_transaction
        assert sorted(call.task_ids) == sorted(ids[title] for title in told)
        # The hook already sees the transition's own writes.
        if kind == "completed":
            assert call.change.complete_subtree
            assert set(call.statuses.values()) == {"completed"}
        if kind == "reopened":
            assert set(call.statuses.values()) == {"open"}

    @pytest.mark.parametrize(("prepare", "act", "kind", "told"), TRANSITIONS)
    def test_a_hook_that_raises_rolls_the_whole_transition_back(
        self,
        world: World,
        checklist: Checklist,
        prepare: Prepare,
        act: Act,
        kind: str,
        told: set[str],
    ) -> None:
        remind(world, checklist.grandchild)
        prepare(world, checklist)
        failing = TaskService(world.store, hooks=[Recorder(), failing_hook])

        with nothing_written(world.store), pytest.raises(HookFailed, match=kind):
            act(world, failing, checklist)
