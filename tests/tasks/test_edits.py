"""Edits of one task: rename, describe, tags, order, sections, lists, parents,
comments, attachments and the history every one of them appends.
"""

from __future__ import annotations

from uuid import UUID

import pytest
from sqlalchemy import func, select

from kalends.clock import FakeClock
from kalends.errors import ReparentCycle
from kalends.storage.task_tables import blobs, tags
from kalends.tasks import Schedule, Task, TreeNode

from .conftest import World
from .support import history_kinds, task_row


def titles(nodes: list[TreeNode]) -> list[str]:
    return [task.title for node in nodes for task in node.walk()]


def root_titles(world: World) -> list[str]:
    return [node.task.title for node in world.tasks.tree(world.alice.id, world.home.id)]


def tag_rows(world: World, list_id: UUID) -> list[str]:
    with world.store.transaction(write=False) as conn:
        return list(
            conn.execute(
                select(tags.c.name).where(tags.c.list_id == list_id).order_by(tags.c.name)
            ).scalars()
        )


class TestRenameAndDescribe:
    def test_renaming_bumps_the_revision_and_records_the_new_title(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Old")
        fake_clock.advance(60)

        renamed = world.tasks.rename(world.bob.id, made.id, made.revision, " New ")

        assert renamed.title == "New"
        assert renamed.revision == made.revision + 1
        assert renamed.updated_at > made.updated_at
        events = world.tasks.history(world.alice.id, made.id)
        assert [e.kind for e in events] == ["created", "renamed"]
        assert events[-1].payload == {"title": "New"}
        assert events[-1].actor_id == world.bob.id

    def test_a_description_of_exactly_64_kib_is_accepted(self, world: World) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Long")
        # 32 Ki two-byte characters: the limit counts UTF-8 bytes.
        text = "é" * (32 * 1024)

        described = world.tasks.describe(world.alice.id, made.id, made.revision, text)

        assert described.description == text
        assert described.revision == 2
        assert world.tasks.history(world.alice.id, made.id)[-1].payload == {"bytes": 64 * 1024}


class TestTags:
    def test_tagging_adds_tags_created_in_the_tasks_list_and_untagging_removes_them(
        self, world: World
    ) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Tagged", tags=["a"])

        tagged = world.tasks.tag(world.bob.id, made.id, made.revision, ["b", "c", "a"])
        untagged = world.tasks.untag(world.bob.id, made.id, tagged.revision, ["a", "c"])

        assert tagged.tags == ("a", "b", "c")
        assert untagged.tags == ("b",)
        assert untagged.revision == 3
        assert tag_rows(world, world.home.id) == ["a", "b", "c"]
        assert history_kinds(world.store, made.id) == ["created", "tagged", "untagged"]

    def test_tags_belong_to_their_list(self, world: World) -> None:
        world.tasks.create(world.alice.id, world.home.id, "Home", tags=["urgent"])
        world.tasks.create(world.alice.id, world.work.id, "Work", tags=["urgent"])
        world.tasks.create(world.alice.id, world.work.id, "Work 2", tags=["urgent"])

        assert tag_rows(world, world.home.id) == ["urgent"]
        assert tag_rows(world, world.work.id) == ["urgent"]
        with world.store.transaction(write=False) as conn:
            assert conn.execute(select(func.count()).select_from(tags)).scalar_one() == 2


class TestMoveWithinList:
    def test_before_and_after_place_a_task_among_its_siblings(self, world: World) -> None:
        a = world.tasks.create(world.alice.id, world.home.id, "A")
        world.tasks.create(world.alice.id, world.home.id, "B")
        c = world.tasks.create(world.alice.id, world.home.id, "C")

        c = world.tasks.move(world.alice.id, c.id, c.revision, before=a.id)
        assert root_titles(world) == ["C", "A", "B"]
        c = world.tasks.move(world.alice.id, c.id, c.revision, after=a.ref)
        assert root_titles(world) == ["A", "C", "B"]
        # Moving next to where it already is keeps the order.
        c = world.tasks.move(world.alice.id, c.id, c.revision, after=a.id)
        assert root_titles(world) == ["A", "C", "B"]
        assert c.revision == 4
        assert history_kinds(world.store, c.id) == ["created", "moved", "moved", "moved"]

    def test_many_inserts_between_two_neighbours_renumber_and_keep_the_order(
        self, world: World
    ) -> None:
        first = world.tasks.create(world.alice.id, world.home.id, "first")
        world.tasks.create(world.alice.id, world.home.id, "last")
        # Each new task goes right after "first", halving the gap each time: the
        # gap closes after about twenty and the siblings are renumbered.
        for i in range(30):
            world.tasks.create(world.alice.id, world.home.id, f"n{i:02}", after=first.id)

        expected = ["first", *(f"n{i:02}" for i in reversed(range(30))), "last"]
        assert root_titles(world) == expected
        positions = [n.task.position for n in world.tasks.tree(world.alice.id, world.home.id)]
        assert positions == sorted(set(positions))

    def test_many_moves_between_two_neighbours_renumber_and_keep_the_order(
        self, world: World
    ) -> None:
        world.tasks.create(world.alice.id, world.home.id, "first")
        last = world.tasks.create(world.alice.id, world.home.id, "last")
        moved = [world.tasks.create(world.alice.id, world.home.id, f"m{i:02}") for i in range(25)]
        # Each moves to just before "last": it lands between "last" and its previous neighbour.
        for task in moved:
            world.tasks.move(world.alice.id, task.id, task.revision, before=last.id)

        assert root_titles(world) == ["first", *(t.title for t in moved), "last"]

    def test_moving_into_a_section_and_out_of_it(self, world: World) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Cook")

        inside = world.tasks.move(world.alice.id, made.id, made.revision, section="Kitchen")
        assert world.tasks.get(world.alice.id, made.id).section == "Kitchen"
        outside = world.tasks.move(world.alice.id, made.id, inside.revision, clear_section=True)

        assert outside.section_id is None
        assert world.tasks.get(world.alice.id, made.id).section is None


class TestMoveToList:
    def _checklist(self, world: World) -> tuple[Task, Task, Task]:
        root = world.tasks.create(
            world.alice.id, world.home.id, "Root", section="Kitchen", tags=["a"]
        )
        child = world.tasks.create(
            world.alice.id, world.home.id, "Child", parent=root.id, section="Kitchen", tags=["b"]
        )
        grandchild = world.tasks.create(
            world.alice.id,
            world.home.id,
            "Grandchild",
            parent=child.id,
            section="Garden",
            tags=["a", "b"],
        )
        return root, child, grandchild

    def test_the_whole_subtree_moves_and_takes_the_target_lists_tags_by_name(
        self, world: World
    ) -> None:
        root, child, grandchild = self._checklist(world)
        world.tasks.create(world.alice.id, world.work.id, "Already there", tags=["a"])
        work_tags_before = tag_rows(world, world.work.id)

        moved = world.tasks.move_to_list(
            world.alice.id, root.id, root.revision, world.work.id, section="Kitchen"
        )

        assert moved.list_id == world.work.id
        assert work_tags_before == ["a"]
        assert tag_rows(world, world.work.id) == ["a", "b"]
        for task, tag_names in ((root, ("a",)), (child, ("b",)), (grandchild, ("a", "b"))):
            now = world.tasks.get(world.alice.id, task.id).task
            assert now.list_id == world.work.id
            assert now.tags == tag_names
            assert now.revision == task.revision + 1
            assert history_kinds(world.store, task.id)[-1] == "moved-list"
        assert titles(world.tasks.tree(world.alice.id, world.work.id)) == [
            "Already there",
            "Root",
            "Child",
            "Grandchild",
        ]
        assert world.tasks.tree(world.alice.id, world.home.id) == []

    def test_sections_are_mapped_by_name_or_dropped(self, world: World) -> None:
        root, child, grandchild = self._checklist(world)

        world.tasks.move_to_list(
            world.alice.id, root.id, root.revision, world.work.id, section="Kitchen"
        )

        assert world.tasks.get(world.alice.id, root.id).section == "Kitchen"
        # "Kitchen" exists in the target: the child keeps it, as the target's section.
        child_now = world.tasks.get(world.alice.id, child.id)
        assert child_now.section == "Kitchen"
        assert child_now.task.section_id != child.section_id
        # "Garden" does not: the grandchild loses its section.
        assert world.tasks.get(world.alice.id, grandchild.id).section is None

    def test_without_a_section_the_root_keeps_its_section_by_name(self, world: World) -> None:
        root, _, _ = self._checklist(world)

        world.tasks.move_to_list(world.alice.id, root.id, root.revision, world.work.id)

        assert world.tasks.get(world.alice.id, root.id).section == "Kitchen"

    def test_an_editor_of_both_lists_may_move_between_them(self, world: World) -> None:
        world.services.directory.share(world.alice.id, world.work.id, world.bob.id, "editor")
        root, _, _ = self._checklist(world)

        moved = world.tasks.move_to_list(world.bob.id, root.id, root.revision, "Work")

        assert moved.list_id == world.work.id


class TestReparent:
    def test_a_task_moves_with_its_subtree_under_another_task_at_the_end(
        self, world: World
    ) -> None:
        a = world.tasks.create(world.alice.id, world.home.id, "A")
        world.tasks.create(world.alice.id, world.home.id, "A.1", parent=a.id)
        b = world.tasks.create(world.alice.id, world.home.id, "B")
        world.tasks.create(world.alice.id, world.home.id, "B.1", parent=b.id)

        moved = world.tasks.reparent(world.alice.id, b.id, b.revision, a.ref)

        assert moved.parent_id == a.id
        assert titles(world.tasks.tree(world.alice.id, world.home.id)) == ["A", "A.1", "B", "B.1"]
        assert world.tasks.history(world.alice.id, b.id)[-1].payload == {
            "from": None,
            "to": str(a.id),
        }
        back = world.tasks.reparent(world.alice.id, b.id, moved.revision, None)
        assert back.parent_id is None
        assert root_titles(world) == ["A", "B"]

    @pytest.mark.parametrize(
        "target",
        [
            # Under itself.
            "self",
            # Under its child.
            "child",
            # Under its grandchild.
            "grandchild",
        ],
    )
    def test_moving_a_task_under_itself_or_a_descendant_is_a_cycle(
        self, world: World, target: str
    ) -> None:
        a = world.tasks.create(world.alice.id, world.home.id, "A")
        child = world.tasks.create(world.alice.id, world.home.id, "A.1", parent=a.id)
        grandchild = world.tasks.create(world.alice.id, world.home.id, "A.1.a", parent=child.id)
        parent = {"self": a, "child": child, "grandchild": grandchild}[target]

        with pytest.raises(ReparentCycle) as caught:
            world.tasks.reparent(world.alice.id, a.id, a.revision, parent.id)

        assert caught.value.code == "reparent-cycle"
        assert task_row(world.store, a.id).parent_id is None


class TestCommentsAndAttachments:
    def test_a_comment_is_recorded_in_history_without_bumping_the_revision(
        self, world: World
    ) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Discuss")

        note = world.tasks.comment(world.bob.id, made.id, "First!")

        detail = world.tasks.get(world.alice.id, made.id)
        assert detail.task.revision == made.revision
        assert [(c.id, c.body, c.author_id) for c in detail.comments] == [
            (note.id, "First!", world.bob.id)
        ]
        assert history_kinds(world.store, made.id) == ["created", "commented"]

    def test_attachment_bytes_round_trip_and_equal_bytes_share_one_blob(self, world: World) -> None:
        one = world.tasks.create(world.alice.id, world.home.id, "One")
        two = world.tasks.create(world.alice.id, world.home.id, "Two")
        data = bytes(range(256)) * 10

        first = world.tasks.attach(
            world.alice.id, one.id, "bin.dat", "application/octet-stream", data
        )
        second = world.tasks.attach(world.bob.id, two.id, "copy.dat", "application/x-copy", data)
        other = world.tasks.attach(world.bob.id, two.id, "empty.txt", "text/plain", b"")

        meta, content = world.tasks.attachment(world.carol.id, first.id)
        assert content == data
        assert (meta.name, meta.media_type, meta.size) == (
            "bin.dat",
            "application/octet-stream",
            2560,
        )
        assert meta.sha256 == second.sha256
        assert world.tasks.attachment(world.carol.id, str(second.id))[1] == data
        assert world.tasks.attachment(world.carol.id, other.id)[1] == b""
        with world.store.transaction(write=False) as conn:
            assert conn.execute(select(func.count()).select_from(blobs)).scalar_one() == 2
        assert world.tasks.get(world.alice.id, one.id).task.revision == one.revision
        assert history_kinds(world.store, two.id) == ["created", "attached", "attached"]


class TestHistory:
    def test_every_operation_appends_its_events_in_order_with_actor_and_time(
        self, world: World
    ) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Story")
        holder = world.tasks.create(world.alice.id, world.home.id, "Holder")
        start = world.store.clock.now()
        task = world.tasks.rename(world.bob.id, made.id, made.revision, "Story 2")
        task = world.tasks.describe(world.bob.id, task.id, task.revision, "text")
        task = world.tasks.tag(world.bob.id, task.id, task.revision, ["t"])
        task = world.tasks.untag(world.bob.id, task.id, task.revision, ["t"])
        task = world.tasks.move(world.bob.id, task.id, task.revision, section="Garden")
        task = world.tasks.reparent(world.bob.id, task.id, task.revision, holder.id)
        task = world.tasks.set_schedule(world.bob.id, task.id, task.revision, Schedule(priority=3))
        world.tasks.comment(world.bob.id, task.id, "note")
        world.tasks.attach(world.bob.id, task.id, "n.txt", "text/plain", b"n")
        task = world.tasks.complete(world.bob.id, task.id, task.revision)
        task = world.tasks.reopen(world.bob.id, task.id, task.revision)
        task = world.tasks.trash(world.bob.id, task.id, task.revision)
        task = world.tasks.restore(world.bob.id, task.id, task.revision)

        events = world.tasks.history(world.carol.id, made.ref)

        assert [e.kind for e in events] == [
            "created",
            "renamed",
            "described",
            "tagged",
            "untagged",
            "moved",
            "reparented",
            "schedule-set",
            "commented",
            "attached",
            "completed",
            "reopened",
            "trashed",
            "restored",
        ]
        assert events[0].actor_id == world.alice.id
        assert {e.actor_id for e in events[1:]} == {world.bob.id}
        assert all(e.at == start for e in events)
        assert [e.id for e in events] == sorted(e.id for e in events)
