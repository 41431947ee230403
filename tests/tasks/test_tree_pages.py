"""Paged reads of a list's trees: ``TaskService.tree_page`` walks the same forest as
``TaskService.tree``, a page of top-level tasks at a time, with a cursor that names a
place in the sibling order and so survives changes between pages."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any, cast

import pytest
from sqlalchemy import event

from kalends.errors import InvalidInput, NotFound
from kalends.storage.unit_of_work import Store
from kalends.tasks import Task, TaskStatus, TreeNode, parse_schedule
from kalends.tasks.models import TreePage
from kalends.tasks.reads import read_tree_page
from kalends.tasks.service import PAGE_CURSOR_LENGTH, parse_page_cursor
from kalends.tasks.values import MAX_TREE_PAGE

from .conftest import World
from .support import nothing_written

# Page sizes of one, a few, exactly the stock's top-level tasks, one more, the largest.
LIMITS = (1, 2, 3, 5, 10, 11, 12, 13, MAX_TREE_PAGE)
# Far more pages than any list of these tests needs: a walk that goes on is a bug.
MAX_PAGES = 500


def as_json(nodes: Iterable[TreeNode]) -> list[dict[str, Any]]:
    return [node.to_json() for node in nodes]


def titles(nodes: Iterable[TreeNode]) -> list[str]:
    """Titles in tree order (pre-order)."""
    return [task.title for node in nodes for task in node.walk()]


def roots(nodes: Iterable[TreeNode]) -> list[str]:
    return [node.task.title for node in nodes]


def cursor_of(task: Task) -> str:
    return f"{task.position}:{task.ref}"


def walk_pages(
    world: World,
    limit: int,
    *,
    actor: Any = None,
    list_ref: Any = None,
    after: str | None = None,
    **filters: Any,
) -> list[TreePage]:
    """Every page from ``after`` on, following ``next_after`` until the last page."""
    who = world.alice.id if actor is None else actor
    where = world.home.id if list_ref is None else list_ref
    pages: list[TreePage] = []
    while True:
        page = world.tasks.tree_page(who, where, limit=limit, after=after, **filters)
        pages.append(page)
        if page.next_after is None:
            return pages
        assert len(pages) < MAX_PAGES, "the pages never end"
        after = page.next_after


def joined(pages: Iterable[TreePage]) -> list[TreeNode]:
    return [node for page in pages for node in page.trees]


def check_page_bounds(pages: list[TreePage], limit: int) -> None:
    """Full pages ending with their last top-level task's cursor, then one last page."""
    *full, last = pages
    for page in full:
        assert len(page.trees) == limit
        assert page.next_after == cursor_of(page.trees[-1].task)
    assert last.next_after is None
    assert len(last.trees) <= limit
    # A last page is empty only when there is nothing at all to show.
    assert last.trees or not full


@contextmanager
def counted_statements(store: Store) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(str(args[2]))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", record)


def reads(statements: list[str]) -> list[str]:
    return [s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]


# --- the stock of a list worth paging --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stock:
    """Home's trees (top-level tasks in sibling order, ``*`` trashed):

    Earliest (negative position); Before all (position 0); Groceries [Kitchen, shop]
    with Milk, Bread > Rye, Eggs*, Cheese (completed); Laundry (completed);
    Old stuff* > Old child > Old grandchild; Garden work [Garden] with Mow (due,
    a reminder), Weed > Roses*; three occurrences of Daily review, each with Inbox,
    all at one position; Binned*; Pay rent [planned]; Call mum.
    Work holds Elsewhere.
    """

    world: World
    groceries: Task
    daily: tuple[Task, ...]


def make_stock(world: World) -> Stock:
    t, alice, home = world.tasks, world.alice.id, world.home.id

    def latest(task: Task) -> Task:
        return t.get(alice, task.id).task

    groceries = t.create(alice, home, "Groceries", section="Kitchen", tags=["shop"])
    before_all = t.create(alice, home, "Before all", before=groceries.id)
    t.create(alice, home, "Earliest", before=before_all.id)
    t.create(alice, home, "Milk", parent=groceries.id, tags=["dairy"])
    bread = t.create(alice, home, "Bread", parent=groceries.id)
    t.create(alice, home, "Rye", parent=bread.id, tags=["shop"])
    eggs = t.create(alice, home, "Eggs", parent=groceries.id, tags=["shop"])
    t.trash(alice, eggs.id, eggs.revision)
    cheese = t.create(alice, home, "Cheese", parent=groceries.id)
    t.complete(alice, cheese.id, cheese.revision)

    laundry = t.create(alice, home, "Laundry")
    t.complete(alice, laundry.id, laundry.revision)

    old = t.create(alice, home, "Old stuff", tags=["shop"])
    old_child = t.create(alice, home, "Old child", parent=old.id)
    t.create(alice, home, "Old grandchild", parent=old_child.id)
    t.trash(alice, old.id, latest(old).revision)

    garden = t.create(alice, home, "Garden work", section="Garden")
    mow = t.create(alice, home, "Mow", parent=garden.id)
    t.set_schedule(
        alice,
        mow.id,
        mow.revision,
        parse_schedule(
            {
                "due": "2026-03-10",
                "reminders": [
                    {"channel": "email", "local": "2026-03-10T08:00:00", "zone": "Europe/Paris"}
                ],
            },
            world.recipient,
        ),
    )
    weed = t.create(alice, home, "Weed", parent=garden.id, tags=["shop"])
    roses = t.create(alice, home, "Roses", parent=weed.id)
    t.trash(alice, roses.id, roses.revision)

    daily = t.create(alice, home, "Daily review")
    t.create(alice, home, "Inbox", parent=daily.id)
    world.services.series.start_series(alice, daily.id, latest(daily).revision, {"kind": "daily"})
    occurrences = [latest(daily)]
    for _ in range(2):
        done = t.complete(
            alice, occurrences[-1].id, occurrences[-1].revision, complete_subtree=True
        )
        successor = next(
            n.task
            for n in t.tree(alice, home)
            if n.task.series_id == done.series_id and n.task.status is TaskStatus.OPEN
        )
        occurrences.append(successor)

    binned = t.create(alice, home, "Binned")
    t.trash(alice, binned.id, binned.revision)
    rent = t.create(alice, home, "Pay rent")
    t.set_schedule(
        alice, rent.id, rent.revision, parse_schedule({"planned": "2026-03-01"}, world.recipient)
    )
    t.create(alice, home, "Call mum")
    t.create(alice, world.work.id, "Elsewhere", tags=["shop"])
    return Stock(world=world, groceries=latest(groceries), daily=tuple(occurrences))


@pytest.fixture
def stock(world: World) -> Stock:
    return make_stock(world)


def plain_roots(world: World, names: Iterable[str]) -> list[Task]:
    return [world.tasks.create(world.alice.id, world.home.id, name) for name in names]


# --- walking the pages -----------------------------------------------------------------------


class TestStock:
    def test_the_stock_has_ties_negative_positions_deep_trees_and_trash(self, stock: Stock) -> None:
        world = stock.world
        tree = world.tasks.tree(world.alice.id, world.home.id)
        everything = world.tasks.tree(world.alice.id, world.home.id, include_trashed=True)

        daily_refs = sorted(t.ref for t in stock.daily)
        assert roots(tree) == [
            "Earliest",
            "Before all",
            "Groceries",
            "Laundry",
            "Garden work",
            "Daily review",
            "Daily review",
            "Daily review",
            "Pay rent",
            "Call mum",
        ]
        assert [n.task.ref for n in tree if n.task.title == "Daily review"] == daily_refs
        assert len({t.position for t in stock.daily}) == 1
        assert tree[0].task.position < 0
        assert titles(tree[2:3]) == ["Groceries", "Milk", "Bread", "Rye", "Cheese"]
        assert roots(everything) == [
            "Earliest",
            "Before all",
            "Groceries",
            "Laundry",
            "Old stuff",
            "Garden work",
            "Daily review",
            "Daily review",
            "Daily review",
            "Binned",
            "Pay rent",
            "Call mum",
        ]
        assert titles(everything[4:5]) == ["Old stuff", "Old child", "Old grandchild"]


class TestWalkingPages:
    @pytest.mark.parametrize("include_trashed", [False, True], ids=["live", "with-trash"])
    def test_the_pages_of_every_size_concatenate_to_exactly_the_whole_tree(
        self, stock: Stock, include_trashed: bool
    ) -> None:
        world = stock.world
        whole = world.tasks.tree(world.alice.id, world.home.id, include_trashed=include_trashed)
        assert len(whole) == (12 if include_trashed else 10)

        for limit in LIMITS:
            pages = walk_pages(world, limit, include_trashed=include_trashed)

            assert as_json(joined(pages)) == as_json(whole), f"limit {limit}"
            check_page_bounds(pages, limit)
            assert len(pages) == -(-len(whole) // limit), f"limit {limit}"

    @pytest.mark.parametrize("include_trashed", [False, True], ids=["live", "with-trash"])
    def test_the_json_pages_the_api_answers_are_the_pages_as_json(
        self, stock: Stock, include_trashed: bool
    ) -> None:
        world = stock.world
        for limit in (1, 2, 5, MAX_TREE_PAGE):
            after: str | None = None
            for page in walk_pages(world, limit, include_trashed=include_trashed):
                trees, next_after = world.tasks.tree_page_json(
                    world.carol.id,
                    world.home.id,
                    limit=limit,
                    after=after,
                    include_trashed=include_trashed,
                )

                assert (trees, next_after) == (as_json(page.trees), page.next_after), limit
                after = next_after

    def test_a_page_holds_its_top_level_tasks_with_all_their_visible_descendants(
        self, stock: Stock
    ) -> None:
        world = stock.world

        first = world.tasks.tree_page(world.carol.id, world.home.id, limit=3)

        assert [titles([n]) for n in first.trees] == [
            ["Earliest"],
            ["Before all"],
            ["Groceries", "Milk", "Bread", "Rye", "Cheese"],
        ]
        groceries = first.trees[2]
        assert groceries.task == stock.groceries
        assert [c.task.tags for c in groceries.children] == [("dairy",), (), ()]
        assert groceries.children[1].children[0].task.tags == ("shop",)
        assert groceries.children[2].task.status is TaskStatus.COMPLETED
        assert first.next_after == cursor_of(stock.groceries)

        second = world.tasks.tree_page(
            world.carol.id, world.home.id, limit=2, after=first.next_after
        )

        assert [titles([n]) for n in second.trees] == [["Laundry"], ["Garden work", "Mow", "Weed"]]
        assert second.trees[0].task.status is TaskStatus.COMPLETED
        mow = second.trees[1].children[0].task
        assert mow.due == date(2026, 3, 10)
        assert [r.time.local.isoformat() for r in mow.reminders] == ["2026-03-10T08:00:00"]

    def test_with_the_trash_a_page_shows_trashed_subtrees_whole(self, stock: Stock) -> None:
        world = stock.world
        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=4, include_trashed=True)

        page = world.tasks.tree_page(
            world.alice.id, world.home.id, limit=2, after=first.next_after, include_trashed=True
        )

        assert [titles([n]) for n in page.trees] == [
            ["Old stuff", "Old child", "Old grandchild"],
            ["Garden work", "Mow", "Weed", "Roses"],
        ]
        assert [t.trashed for t in page.trees[0].walk()] == [True, False, False]
        assert [t.trashed for t in page.trees[1].walk()] == [False, False, False, True]
        groceries = first.trees[2]
        assert titles([groceries]) == ["Groceries", "Milk", "Bread", "Rye", "Eggs", "Cheese"]

    def test_siblings_sharing_a_position_are_paged_one_by_one_in_reference_order(
        self, stock: Stock
    ) -> None:
        world = stock.world
        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=5)
        assert roots(first.trees)[-1] == "Garden work"

        seen: list[str] = []
        after = first.next_after
        for _ in range(3):
            page = world.tasks.tree_page(world.alice.id, world.home.id, limit=1, after=after)
            assert [titles([n]) for n in page.trees] == [["Daily review", "Inbox"]]
            seen.append(page.trees[0].task.ref)
            after = page.next_after
        rest = world.tasks.tree_page(world.alice.id, world.home.id, limit=5, after=after)

        assert seen == sorted(t.ref for t in stock.daily)
        assert roots(rest.trees) == ["Pay rent", "Call mum"]
        assert rest.next_after is None

    def test_a_page_that_takes_the_last_trees_exactly_is_the_last(self, world: World) -> None:
        made = plain_roots(world, ["A", "B", "C", "D"])

        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=2)
        second = world.tasks.tree_page(
            world.alice.id, world.home.id, limit=2, after=first.next_after
        )
        whole = world.tasks.tree_page(world.alice.id, world.home.id, limit=4)

        assert (roots(first.trees), first.next_after) == (["A", "B"], cursor_of(made[1]))
        assert (roots(second.trees), second.next_after) == (["C", "D"], None)
        assert (roots(whole.trees), whole.next_after) == (["A", "B", "C", "D"], None)

    def test_an_empty_list_has_one_empty_last_page(self, world: World) -> None:
        page = world.tasks.tree_page(world.alice.id, world.private.id, limit=1)

        assert page == TreePage(trees=(), next_after=None)

    def test_a_list_of_trashed_tasks_only_shows_them_only_with_the_trash(
        self, world: World
    ) -> None:
        gone = world.tasks.create(world.alice.id, world.private.id, "Gone")
        world.tasks.create(world.alice.id, world.private.id, "Gone child", parent=gone.id)
        world.tasks.trash(world.alice.id, gone.id, gone.revision)

        live = world.tasks.tree_page(world.alice.id, world.private.id, limit=3)
        trash = world.tasks.tree_page(
            world.alice.id, world.private.id, limit=3, include_trashed=True
        )

        assert live == TreePage(trees=(), next_after=None)
        assert titles(trash.trees) == ["Gone", "Gone child"]
        assert trash.next_after is None

    def test_pages_show_only_the_lists_own_trees(self, stock: Stock) -> None:
        world = stock.world

        home = joined(walk_pages(world, 4, include_trashed=True))
        work = walk_pages(world, 4, list_ref=world.work.id)

        assert "Elsewhere" not in titles(home)
        assert {t.list_id for n in home for t in n.walk()} == {world.home.id}
        assert [titles(p.trees) for p in work] == [["Elsewhere"]]

    def test_a_list_is_paged_by_its_name_as_by_its_id(self, stock: Stock) -> None:
        world = stock.world

        by_name = walk_pages(world, 4, actor="bob", list_ref="Home")

        assert by_name == walk_pages(world, 4)

    def test_a_cursor_past_the_last_tree_gives_an_empty_last_page(self, stock: Stock) -> None:
        world = stock.world
        last = world.tasks.tree(world.alice.id, world.home.id)[-1].task

        after_last = world.tasks.tree_page(
            world.alice.id, world.home.id, limit=3, after=cursor_of(last)
        )
        far = world.tasks.tree_page(
            world.alice.id, world.home.id, limit=3, after=f"{2**63 - 1}:ZZZZZZZZZZZZ"
        )

        assert after_last == TreePage(trees=(), next_after=None)
        assert far == TreePage(trees=(), next_after=None)

    def test_the_lowest_cursor_starts_before_every_tree(self, stock: Stock) -> None:
        world = stock.world
        lowest = f"{-(2**63)}:ZZZZZZZZZZZZ"
        assert len(lowest) == PAGE_CURSOR_LENGTH

        pages = walk_pages(world, 4, after=lowest)

        assert as_json(joined(pages)) == as_json(world.tasks.tree(world.alice.id, world.home.id))

    def test_the_largest_page_holds_two_hundred_trees(self, world: World) -> None:
        with world.store.transaction():
            made = plain_roots(world, [f"Task {i:03}" for i in range(MAX_TREE_PAGE + 1)])

        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=MAX_TREE_PAGE)
        second = world.tasks.tree_page(
            world.alice.id, world.home.id, limit=MAX_TREE_PAGE, after=first.next_after
        )

        assert roots(first.trees) == [t.title for t in made[:MAX_TREE_PAGE]]
        assert first.next_after == cursor_of(made[MAX_TREE_PAGE - 1])
        assert (roots(second.trees), second.next_after) == ([made[-1].title], None)

    def test_an_unfiltered_page_reads_in_four_statements_whatever_its_size(
        self, stock: Stock
    ) -> None:
        world = stock.world
        counts: list[int] = []
        for limit in (1, 12):
            with world.store.transaction(write=False) as conn:
                with counted_statements(world.store) as seen:
                    nodes, _ = read_tree_page(
                        conn, world.home.id, limit=limit, after=None, include_trashed=True
                    )
                counts.append(len(reads(seen)))
            assert len(nodes) == limit
        with counted_statements(world.store) as seen:
            world.tasks.tree_page(world.alice.id, world.home.id, limit=12)
        with counted_statements(world.store) as seen_small:
            world.tasks.tree_page(world.alice.id, world.home.id, limit=1)

        assert counts == [4, 4]
        assert len(reads(seen)) == len(reads(seen_small))


# --- a cursor across changes -----------------------------------------------------------------


def trash(world: World, task: Task, first: Task | None = None) -> object:
    return world.tasks.trash(world.alice.id, task.id, task.revision)


def move_first(world: World, task: Task, first: Task) -> object:
    return world.tasks.move(world.alice.id, task.id, task.revision, before=first.id)


def reparent_under_first(world: World, task: Task, first: Task) -> object:
    return world.tasks.reparent(world.alice.id, task.id, task.revision, first.id)


def move_to_work(world: World, task: Task, first: Task) -> object:
    return world.tasks.move_to_list(world.alice.id, task.id, task.revision, world.work.id)


def complete(world: World, task: Task, first: Task) -> object:
    return world.tasks.complete(world.alice.id, task.id, task.revision)


def rename(world: World, task: Task, first: Task) -> object:
    return world.tasks.rename(world.alice.id, task.id, task.revision, "B renamed")


# Each: what happens to the page's last top-level task, given the page's first one.
Change = Callable[[World, Task, Task], object]

CHANGES: list[Any] = [
    pytest.param(trash, id="trashed"),
    pytest.param(move_first, id="moved-first"),
    pytest.param(reparent_under_first, id="reparented"),
    pytest.param(move_to_work, id="moved-to-another-list"),
    pytest.param(complete, id="completed"),
    pytest.param(rename, id="renamed"),
]


class TestCursorAcrossChanges:
    @pytest.mark.parametrize("include_trashed", [False, True], ids=["live", "with-trash"])
    @pytest.mark.parametrize("change", CHANGES)
    def test_the_rest_follows_the_cursor_when_its_task_changes(
        self, world: World, change: Change, include_trashed: bool
    ) -> None:
        a, b, c, _, _ = plain_roots(world, ["A", "B", "C", "D", "E"])
        world.tasks.create(world.alice.id, world.home.id, "C child", parent=c.id)
        first = world.tasks.tree_page(
            world.alice.id, world.home.id, limit=2, include_trashed=include_trashed
        )
        assert roots(first.trees) == ["A", "B"]
        assert first.next_after == cursor_of(b)

        change(world, b, a)
        rest = walk_pages(world, 2, after=first.next_after, include_trashed=include_trashed)

        assert [titles(p.trees) for p in rest] == [["C", "C child", "D"], ["E"]]
        check_page_bounds(rest, 2)

    def test_a_task_moved_past_the_cursor_comes_once_at_its_new_place(self, world: World) -> None:
        _, b, _, _, e = plain_roots(world, ["A", "B", "C", "D", "E"])
        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=2)

        world.tasks.move(world.alice.id, b.id, b.revision, after=e.id)
        rest = joined(walk_pages(world, 2, after=first.next_after))

        assert roots(rest) == ["C", "D", "E", "B"]

    def test_tasks_added_between_pages_show_only_past_the_cursor(self, world: World) -> None:
        a, b, c, *_ = plain_roots(world, ["A", "B", "C", "D"])
        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=2)

        world.tasks.create(world.alice.id, world.home.id, "Before A", before=a.id)
        world.tasks.create(world.alice.id, world.home.id, "Between B and C", after=b.id)
        world.tasks.create(world.alice.id, world.home.id, "B child", parent=b.id)
        world.tasks.create(world.alice.id, world.home.id, "C child", parent=c.id)
        world.tasks.create(world.alice.id, world.home.id, "Last")
        rest = joined(walk_pages(world, 2, after=first.next_after))

        assert titles(rest) == ["Between B and C", "C", "C child", "D", "Last"]

    def test_a_cursor_resumes_when_its_task_and_the_next_are_trashed(self, world: World) -> None:
        _, b, c, d = plain_roots(world, ["A", "B", "C", "D"])
        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=2)

        trash(world, b)
        trash(world, c)
        rest = world.tasks.tree_page(world.alice.id, world.home.id, limit=2, after=first.next_after)

        assert (roots(rest.trees), rest.next_after) == (["D"], None)
        assert rest.trees[0].task.id == d.id


# --- filtered pages --------------------------------------------------------------------------

FILTERS: list[Any] = [
    pytest.param({"tag": "shop"}, id="tag"),
    pytest.param({"tag": "shop", "include_trashed": True}, id="tag-with-trash"),
    pytest.param({"status": "completed"}, id="completed"),
    pytest.param({"status": TaskStatus.OPEN}, id="open"),
    pytest.param({"status": "open", "include_trashed": True}, id="open-with-trash"),
    pytest.param({"section": "Garden"}, id="section"),
    pytest.param({"due_from": date(2026, 3, 1), "due_to": date(2026, 3, 31)}, id="due"),
    pytest.param({"planned": date(2026, 3, 1)}, id="planned"),
    pytest.param({"tag": "shop", "status": "open"}, id="tag-and-open"),
]


class TestFilteredPages:
    @pytest.mark.parametrize("filters", FILTERS)
    def test_filtered_pages_of_every_size_concatenate_to_the_filtered_tree(
        self, stock: Stock, filters: dict[str, Any]
    ) -> None:
        world = stock.world
        whole = world.tasks.tree(world.carol.id, world.home.id, **filters)
        assert whole, "the filter should match something"

        for limit in LIMITS:
            pages = walk_pages(world, limit, actor=world.carol.id, **filters)

            assert as_json(joined(pages)) == as_json(whole), f"limit {limit}"
            check_page_bounds(pages, limit)

    def test_a_tag_filter_pages_the_matching_tasks_with_their_ancestors(self, stock: Stock) -> None:
        world = stock.world

        pages = walk_pages(world, 1, tag="shop")

        assert [titles(p.trees) for p in pages] == [
            ["Groceries", "Bread", "Rye"],
            ["Garden work", "Weed"],
        ]
        assert [p.next_after for p in pages] == [cursor_of(stock.groceries), None]
        assert pages[0].trees[0].children[0].task.title == "Bread"

    def test_a_filtered_walk_resumes_past_a_cursor_of_the_whole_list(self, stock: Stock) -> None:
        world = stock.world
        first = world.tasks.tree_page(world.alice.id, world.home.id, limit=4)
        assert roots(first.trees)[-1] == "Laundry"

        rest = joined(walk_pages(world, 2, after=first.next_after, status="completed"))

        assert roots(rest) == ["Daily review", "Daily review"]
        assert [t.ref for t in rest[0].walk()] != [t.ref for t in rest[1].walk()]
        assert all(t.status is TaskStatus.COMPLETED for n in rest for t in n.walk())

    def test_a_filter_that_matches_nothing_gives_an_empty_last_page(self, stock: Stock) -> None:
        world = stock.world

        page = world.tasks.tree_page(world.alice.id, world.home.id, limit=2, tag="nothing")

        assert page == TreePage(trees=(), next_after=None)

    def test_a_bad_status_filter_is_refused_naming_the_field(self, stock: Stock) -> None:
        world = stock.world

        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.tasks.tree_page(world.alice.id, world.home.id, limit=2, status="done")

        assert caught.value.field == "status"


# --- who may read ----------------------------------------------------------------------------


UNFILTERED_AND_FILTERED: list[Any] = [
    pytest.param({}, id="unfiltered"),
    pytest.param({"tag": "shop"}, id="filtered"),
]


class TestAccess:
    @pytest.mark.parametrize("filters", UNFILTERED_AND_FILTERED)
    def test_a_viewer_reads_the_pages_an_owner_reads(
        self, stock: Stock, filters: dict[str, Any]
    ) -> None:
        world = stock.world

        as_viewer = walk_pages(world, 2, actor=world.carol.id, **filters)

        assert as_viewer == walk_pages(world, 2, **filters)
        assert joined(as_viewer)

    @pytest.mark.parametrize("filters", UNFILTERED_AND_FILTERED)
    @pytest.mark.parametrize("after", [None, "1048576:AAAAAA"])
    def test_a_non_member_is_told_the_list_is_not_there_and_nothing_is_written(
        self, stock: Stock, filters: dict[str, Any], after: str | None
    ) -> None:
        world = stock.world

        with nothing_written(world.store):
            with pytest.raises(NotFound):
                world.tasks.tree_page(world.dave.id, world.home.id, limit=2, after=after, **filters)
            with pytest.raises(NotFound):
                world.tasks.tree_page(world.bob.id, world.private.id, limit=2, **filters)

    def test_an_unknown_list_or_actor_is_not_found(self, world: World) -> None:
        with nothing_written(world.store):
            with pytest.raises(NotFound):
                world.tasks.tree_page(world.alice.id, "No such list", limit=2)
            with pytest.raises(NotFound):
                world.tasks.tree_page("nobody", world.home.id, limit=2)


# --- bad input -------------------------------------------------------------------------------

BAD_LIMITS: list[Any] = [0, -1, MAX_TREE_PAGE + 1, 10**6, True, False, None, "5", 2.0, 1.5]

BAD_CURSORS: list[Any] = [
    "",
    "abc",
    "1:",
    ":ABC123",
    "1",
    "1:ABC123:2",
    "1;ABC123",
    "1:abc123",
    " 1:ABC123",
    "1:ABC123 ",
    "1:ABC123\n",
    "+1:ABC123",
    "1.5:ABC123",
    "0x10:ABC123",
    "1:ABC-123",
    "\uff11:ABC123",
    "99999999999999999999:ABC123",
    f"{2**63}:ABC123",
    f"{-(2**63) - 1}:ABC123",
    "1:" + "A" * 13,
    f"{-(2**63)}:" + "Z" * 13,
    "1:" + "A" * 100,
    5,
    b"1:ABC123",
]


class TestBadInput:
    @pytest.mark.parametrize("filters", UNFILTERED_AND_FILTERED)
    @pytest.mark.parametrize("limit", BAD_LIMITS, ids=repr)
    def test_a_bad_limit_is_refused_naming_it_and_nothing_is_written(
        self, shared_world: World, filters: dict[str, Any], limit: object
    ) -> None:
        world = shared_world

        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.tasks.tree_page(world.alice.id, world.home.id, limit=cast(int, limit), **filters)

        assert caught.value.field == "limit"
        assert caught.value.details["field"] == "limit"
        assert caught.value.code == "invalid-input"

    @pytest.mark.parametrize("filters", UNFILTERED_AND_FILTERED)
    @pytest.mark.parametrize("after", BAD_CURSORS, ids=repr)
    def test_a_malformed_cursor_is_refused_naming_it_and_nothing_is_written(
        self, shared_world: World, filters: dict[str, Any], after: object
    ) -> None:
        world = shared_world

        with nothing_written(world.store), pytest.raises(InvalidInput) as caught:
            world.tasks.tree_page(
                world.alice.id, world.home.id, limit=2, after=cast(str, after), **filters
            )

        assert caught.value.field == "after"
        assert caught.value.details["field"] == "after"

    @pytest.mark.parametrize(
        ("cursor", "key"),
        [
            ("0:A", (0, "A")),
            ("-1048576:ABC234", (-1048576, "ABC234")),
            (f"{2**63 - 1}:ZZZZZZZZZZZZ", (2**63 - 1, "ZZZZZZZZZZZZ")),
            (f"{-(2**63)}:0123456789AB", (-(2**63), "0123456789AB")),
        ],
    )
    def test_a_well_formed_cursor_names_a_position_and_a_reference(
        self, cursor: str, key: tuple[int, str]
    ) -> None:
        assert parse_page_cursor(cursor) == key
        assert len(cursor) <= PAGE_CURSOR_LENGTH

    def test_the_cursor_length_bound_is_that_of_the_longest_cursor(self) -> None:
        longest = f"{-(2**63)}:" + "Z" * 12

        assert len(longest) == PAGE_CURSOR_LENGTH
        assert parse_page_cursor(longest) == (-(2**63), "Z" * 12)

    def test_the_boundary_limits_are_accepted(self, shared_world: World) -> None:
        world = shared_world

        smallest = world.tasks.tree_page(world.alice.id, world.home.id, limit=1)
        largest = world.tasks.tree_page(world.alice.id, world.home.id, limit=MAX_TREE_PAGE)

        assert smallest.next_after is None
        assert largest.next_after is None

    def test_every_cursor_handed_out_is_accepted_back(self, stock: Stock) -> None:
        world = stock.world
        pages = walk_pages(world, 1, include_trashed=True)
        cursors = [p.next_after for p in pages if p.next_after is not None]

        assert len(cursors) == len(pages) - 1 == 11
        for cursor, page in zip(cursors, pages, strict=False):
            task = page.trees[-1].task
            assert parse_page_cursor(cursor) == (task.position, task.ref)
            assert len(cursor) <= PAGE_CURSOR_LENGTH
        assert any(parse_page_cursor(c)[0] < 0 for c in cursors)
