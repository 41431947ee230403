"""Creating tasks and reading them back: references, details, ordered and filtered trees."""

from __future__ import annotations

import re
from datetime import date

import pytest

from kalends.errors import NotFound
from kalends.tasks import Task, TaskDetail, TaskStatus, TreeNode, parse_schedule
from kalends.tasks.refs import ALPHABET, REF_LENGTH

from .conftest import World
from .support import history_kinds


def titles(nodes: list[TreeNode]) -> list[str]:
    """Titles in tree order (pre-order)."""
    return [task.title for node in nodes for task in node.walk()]


def shape(nodes: list[TreeNode]) -> list[object]:
    """The tree as nested (title, children) pairs."""
    return [(node.task.title, shape(list(node.children))) for node in nodes]


class TestCreate:
    def test_a_new_task_is_open_at_revision_one_with_its_tags_and_section(
        self, world: World
    ) -> None:
        made = world.tasks.create(
            world.bob.id,
            world.home.id,
            "  Buy milk  ",
            description="two litres",
            section="Kitchen",
            tags=["shop", "urgent", "shop"],
        )

        assert made.title == "Buy milk"
        assert made.description == "two litres"
        assert made.status is TaskStatus.OPEN
        assert (made.revision, made.schedule_revision) == (1, 0)
        assert made.tags == ("shop", "urgent")
        assert made.list_id == world.home.id
        assert made.parent_id is None
        assert not made.trashed
        assert made.created_at == world.store.clock.now()
        assert history_kinds(world.store, made.id) == ["created"]

    def test_references_are_six_characters_of_the_unambiguous_alphabet_and_unique(
        self, world: World
    ) -> None:
        made = [world.tasks.create(world.alice.id, world.home.id, f"t{i}") for i in range(40)]

        pattern = re.compile(f"^[{ALPHABET}]{{{REF_LENGTH}}}$")
        assert REF_LENGTH == 6
        assert all(pattern.match(t.ref) for t in made)
        assert len({t.ref for t in made}) == len(made)

    def test_a_task_is_found_by_its_reference_in_any_case(self, world: World) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Find me")

        assert world.tasks.get(world.carol.id, made.ref).task.id == made.id
        assert world.tasks.get("carol", made.ref.lower()).task.id == made.id

    def test_a_title_of_exactly_five_hundred_characters_is_accepted(self, world: World) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "x" * 500)

        assert len(made.title) == 500

    def test_a_list_is_found_by_its_name_among_the_actors_lists(self, world: World) -> None:
        made = world.tasks.create("bob", "Home", "By name")

        assert made.list_id == world.home.id

    def test_a_child_is_created_under_its_parent_in_the_parents_list(self, world: World) -> None:
        parent = world.tasks.create(world.alice.id, world.home.id, "Parent")
        child = world.tasks.create(world.alice.id, world.home.id, "Child", parent=parent.ref)

        assert child.parent_id == parent.id
        assert child.list_id == world.home.id
        assert world.tasks.get(world.alice.id, parent.id).children == 1

    def test_siblings_are_ordered_by_creation_or_by_before_and_after(self, world: World) -> None:
        a = world.tasks.create(world.alice.id, world.home.id, "A")
        c = world.tasks.create(world.alice.id, world.home.id, "C")
        world.tasks.create(world.alice.id, world.home.id, "B", after=a.id)
        world.tasks.create(world.alice.id, world.home.id, "Z", before=a.ref)
        world.tasks.create(world.alice.id, world.home.id, "D", after=c.id)

        assert titles(world.tasks.tree(world.alice.id, world.home.id)) == ["Z", "A", "B", "C", "D"]


class TestGet:
    def test_a_task_detail_carries_list_context_section_comments_attachments_and_children(
        self, world: World
    ) -> None:
        task = world.tasks.create(world.alice.id, world.home.id, "Detail", section="Garden")
        world.tasks.create(world.alice.id, world.home.id, "Child 1", parent=task.id)
        trashed = world.tasks.create(world.alice.id, world.home.id, "Child 2", parent=task.id)
        world.tasks.trash(world.alice.id, trashed.id, trashed.revision)
        note = world.tasks.comment(world.bob.id, task.id, "Looks good")
        attached = world.tasks.attach(world.bob.id, task.id, "a.txt", "text/plain", b"hello")

        detail = world.tasks.get(world.carol.id, task.id)

        assert isinstance(detail, TaskDetail)
        assert detail.task.id == task.id
        assert (detail.list.id, detail.list.name) == (world.home.id, "Home")
        assert detail.list.role is not None
        assert detail.list.role.value == "viewer"
        assert detail.section == "Garden"
        assert [c.id for c in detail.comments] == [note.id]
        assert [a.id for a in detail.attachments] == [attached.id]
        # The trashed child does not count.
        assert detail.children == 1

    def test_a_member_removed_from_the_list_can_no_longer_read_its_tasks(
        self, world: World
    ) -> None:
        task = world.tasks.create(world.alice.id, world.home.id, "Shared")
        world.tasks.get(world.bob.id, task.id)
        world.services.directory.share(world.alice.id, world.home.id, world.bob.id, None)

        # To a non-member the task is not there, as one that never existed.
        with pytest.raises(NotFound):
            world.tasks.get(world.bob.id, task.id)


class TestTree:
    def test_the_tree_nests_children_under_parents_in_sibling_order(self, world: World) -> None:
        one = world.tasks.create(world.alice.id, world.home.id, "One")
        world.tasks.create(world.alice.id, world.home.id, "Two")
        one_b = world.tasks.create(world.alice.id, world.home.id, "One.b", parent=one.id)
        world.tasks.create(world.alice.id, world.home.id, "One.a", parent=one.id, before=one_b.id)
        world.tasks.create(world.alice.id, world.home.id, "One.b.i", parent=one_b.id)
        world.tasks.create(world.alice.id, world.work.id, "Elsewhere")

        tree = world.tasks.tree(world.carol.id, world.home.id)

        assert shape(tree) == [
            ("One", [("One.a", []), ("One.b", [("One.b.i", [])])]),
            ("Two", []),
        ]

    def test_a_trashed_subtree_is_hidden_unless_asked_for(self, world: World) -> None:
        keep = world.tasks.create(world.alice.id, world.home.id, "Keep")
        gone = world.tasks.create(world.alice.id, world.home.id, "Gone")
        child = world.tasks.create(world.alice.id, world.home.id, "Gone.child", parent=gone.id)
        world.tasks.create(world.alice.id, world.home.id, "Gone.grandchild", parent=child.id)
        world.tasks.trash(world.alice.id, gone.id, gone.revision)

        assert titles(world.tasks.tree(world.alice.id, world.home.id)) == [keep.title]
        assert titles(world.tasks.tree(world.alice.id, world.home.id, include_trashed=True)) == [
            "Keep",
            "Gone",
            "Gone.child",
            "Gone.grandchild",
        ]
        # A filter never brings a hidden task back.
        assert titles(world.tasks.tree(world.alice.id, world.home.id, status="open")) == ["Keep"]

    def test_filters_keep_the_matching_tasks_and_their_ancestors(self, world: World) -> None:
        parent = world.tasks.create(world.alice.id, world.home.id, "Parent")
        world.tasks.create(
            world.alice.id, world.home.id, "Tagged child", parent=parent.id, tags=["x"]
        )
        world.tasks.create(world.alice.id, world.home.id, "Plain child", parent=parent.id)
        world.tasks.create(world.alice.id, world.home.id, "Other root")

        tree = world.tasks.tree(world.alice.id, world.home.id, tag="x")

        assert shape(tree) == [("Parent", [("Tagged child", [])])]

    def test_the_tag_filter_sees_only_the_lists_own_tag(self, world: World) -> None:
        world.tasks.create(world.alice.id, world.home.id, "Home urgent", tags=["urgent"])
        world.tasks.create(world.alice.id, world.work.id, "Work urgent", tags=["urgent"])

        assert titles(world.tasks.tree(world.alice.id, world.home.id, tag="urgent")) == [
            "Home urgent"
        ]
        assert titles(world.tasks.tree(world.alice.id, world.work.id, tag="urgent")) == [
            "Work urgent"
        ]

    def test_the_section_filter_keeps_the_tasks_of_that_section(self, world: World) -> None:
        world.tasks.create(world.alice.id, world.home.id, "Cook", section="Kitchen")
        world.tasks.create(world.alice.id, world.home.id, "Mow", section="Garden")
        world.tasks.create(world.alice.id, world.home.id, "Nowhere")

        assert titles(world.tasks.tree(world.alice.id, world.home.id, section="Kitchen")) == [
            "Cook"
        ]

    def test_the_status_filter_keeps_open_or_completed_tasks(self, world: World) -> None:
        done = world.tasks.create(world.alice.id, world.home.id, "Done")
        world.tasks.create(world.alice.id, world.home.id, "Open")
        world.tasks.complete(world.alice.id, done.id, done.revision)

        assert titles(world.tasks.tree(world.alice.id, world.home.id, status="completed")) == [
            "Done"
        ]
        assert titles(world.tasks.tree(world.alice.id, world.home.id, status=TaskStatus.OPEN)) == [
            "Open"
        ]

    def test_the_planned_filter_keeps_the_tasks_planned_that_day(self, world: World) -> None:
        self._scheduled(world, "Planned", {"planned": "2026-03-10"})
        self._scheduled(world, "Planned later", {"planned": "2026-03-11"})

        tree = world.tasks.tree(world.alice.id, world.home.id, planned=date(2026, 3, 10))

        assert titles(tree) == ["Planned"]

    @pytest.mark.parametrize(
        ("due_from", "due_to", "expected"),
        [
            # One day: the date due, and the timed due whose local date it is (its
            # instant, 06:30 UTC, falls on the next day).
            (date(2026, 3, 10), date(2026, 3, 10), ["Date due", "Late evening in LA"]),
            # The next day holds the Tokyo morning (still the 10th in UTC) and the date due.
            (date(2026, 3, 11), date(2026, 3, 11), ["Tokyo morning", "Next day"]),
            # Open-ended from the 11th.
            (date(2026, 3, 11), None, ["Tokyo morning", "Next day"]),
            # Open-ended up to the 10th.
            (None, date(2026, 3, 10), ["Date due", "Late evening in LA"]),
            # A range covering everything with a due value, not the undated task.
            (
                date(2026, 3, 1),
                date(2026, 3, 31),
                ["Date due", "Late evening in LA", "Tokyo morning", "Next day"],
            ),
        ],
    )
    def test_the_due_range_counts_a_timed_due_on_its_local_date(
        self, world: World, due_from: date | None, due_to: date | None, expected: list[str]
    ) -> None:
        self._scheduled(world, "Date due", {"due": "2026-03-10"})
        self._scheduled(
            world,
            "Late evening in LA",
            {"due": {"local": "2026-03-10T23:30:00", "zone": "America/Los_Angeles"}},
        )
        self._scheduled(
            world, "Tokyo morning", {"due": {"local": "2026-03-11T07:00:00", "zone": "Asia/Tokyo"}}
        )
        self._scheduled(world, "Next day", {"due": "2026-03-11"})
        world.tasks.create(world.alice.id, world.home.id, "Undated")

        tree = world.tasks.tree(world.alice.id, world.home.id, due_from=due_from, due_to=due_to)

        assert titles(tree) == expected

    @staticmethod
    def _scheduled(world: World, title: str, schedule: dict[str, object]) -> Task:
        made = world.tasks.create(world.alice.id, world.home.id, title)
        return world.tasks.set_schedule(
            world.alice.id, made.id, made.revision, parse_schedule(schedule, world.recipient)
        )
