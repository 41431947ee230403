"""A schedule's checklist template made real tasks per passage: the workspace's list, the
checklist's tree, its idempotency by passage, its counts and its title (SQLite and
PostgreSQL)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest
from sqlalchemy import func, select

from kalends.errors import Forbidden, InvalidInput, NotFound, UnknownZone
from kalends.identity import Role
from kalends.missions.checklists import (
    PASSAGES_ACTOR_ID,
    ChecklistSpec,
    ChecklistTaken,
    checklist_counts,
    checklist_items,
    checklist_of,
    create_checklist,
    create_checklists,
    slot_title,
    workspace_list,
)
from kalends.missions.config_template import TemplateItem
from kalends.storage.task_tables import lists, tasks
from kalends.storage.testing import nothing_written
from kalends.tasks import Delegation, TaskStatus, TreeNode
from missions.checklist_support import THREE_LEVELS_TEMPLATE
from missions.conftest import MissionWorld, daily_config

# Three levels: two items at the top, the first with two, its first with one.
TEMPLATE = THREE_LEVELS_TEMPLATE
ITEMS = 5


def shape(node: TreeNode) -> tuple[str, list[Any]]:
    return node.task.title, [shape(child) for child in node.children]


def make(
    mw: MissionWorld,
    schedule: UUID,
    passage: str = "psg_one",
    template: tuple[TemplateItem, ...] | None = TEMPLATE,
    checklist: UUID | None = None,
    title: str = "Nightly review — 2025-03-02 09:00 (Europe/Berlin)",
) -> UUID:
    checklist_id = checklist or uuid4()

    def run(conn: Any) -> None:
        create_checklist(
            conn,
            checklist_id=checklist_id,
            workspace_id=mw.home.id,
            title=title,
            template=template,
            passage_id=passage,
            schedule_id=schedule,
            now=mw.clock.now(),
        )

    mw.store.run(run)
    return checklist_id


def list_of(mw: MissionWorld) -> UUID:
    return mw.store.run(lambda conn: workspace_list(conn, mw.home.id, mw.clock.now()))


def count(mw: MissionWorld, table: Any) -> int:
    return mw.store.run(
        lambda conn: conn.execute(select(func.count()).select_from(table)).scalar_one(),
        write=False,
    )


def _deep(levels: int) -> tuple[TemplateItem, ...]:
    item = TemplateItem(title=f"level {levels}")
    for level in range(levels - 1, 0, -1):
        item = TemplateItem(title=f"level {level}", children=(item,))
    return (item,)


def new_schedule(mw: MissionWorld, request_id: str, *, away: bool = False) -> UUID:
    """A paused schedule of home created by bob, or of away by dave."""
    who, where = (mw.dave, mw.away) if away else (mw.bob, mw.home)
    receipt = mw.schedules.create(
        who.id, where.id, daily_config(title="Nightly review"), request_id=request_id
    )
    assert receipt.mission_id is not None
    return receipt.mission_id


@pytest.fixture
def schedule(mw: MissionWorld) -> UUID:
    return new_schedule(mw, "create-nightly")


class TestTheWorkspaceList:
    def test_it_is_made_on_first_need_named_after_the_workspace_with_its_members_roles(
        self, mw: MissionWorld
    ) -> None:
        list_id = list_of(mw)
        found = mw.services.directory.get_list(mw.alice.id, list_id)
        assert found.name == "home"
        members = {
            a.handle: role for a, role in mw.services.directory.members(mw.alice.id, list_id)
        }
        assert members == {"alice": Role.OWNER, "bob": Role.EDITOR, "carol": Role.VIEWER}
        # dave, of another workspace only, does not see it.
        with pytest.raises(NotFound):
            mw.services.directory.get_list(mw.dave.id, list_id)

    def test_a_second_call_answers_the_same_list_and_writes_nothing(self, mw: MissionWorld) -> None:
        first = list_of(mw)
        with nothing_written(mw.store):
            assert list_of(mw) == first

    def test_two_schedulers_at_once_make_one_list(self, mw: MissionWorld) -> None:
        """The first holds its transaction open while the second asks: the second waits on
        the workspace's key (or the write lock), then answers the first's list."""
        before = count(mw, lists)
        seen: list[UUID] = []
        errors: list[BaseException] = []

        def second() -> None:
            try:
                seen.append(list_of(mw))
            except BaseException as exc:  # reported below
                errors.append(exc)

        with mw.store.transaction() as conn:
            first = workspace_list(conn, mw.home.id, mw.clock.now())
            other = threading.Thread(target=second)
            other.start()
            time.sleep(0.3)
        other.join(timeout=30)
        assert not errors, errors
        assert seen == [first]
        assert count(mw, lists) == before + 1

    def test_an_unknown_workspace_is_not_found(self, mw: MissionWorld) -> None:
        with nothing_written(mw.store), pytest.raises(NotFound):
            mw.store.run(lambda conn: workspace_list(conn, uuid4(), mw.clock.now()))

    def test_a_naive_now_is_refused(self, mw: MissionWorld) -> None:
        with nothing_written(mw.store), pytest.raises(InvalidInput):
            mw.store.run(lambda conn: workspace_list(conn, mw.home.id, datetime(2025, 3, 1)))


class TestCreatingAChecklist:
    def test_a_three_level_template_becomes_the_tree_in_order(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        checklist = make(mw, schedule)
        trees = mw.services.tasks.tree(mw.alice.id, list_of(mw))
        assert [shape(t) for t in trees] == [
            (
                "Nightly review — 2025-03-02 09:00 (Europe/Berlin)",
                [
                    (
                        "Prepare",
                        [("Fetch the data", [("Check the mirror", [])]), ("Clean it", [])],
                    ),
                    ("Publish", []),
                ],
            )
        ]
        root = trees[0].task
        assert root.id == checklist and root.parent_id is None
        assert all(t.status is TaskStatus.OPEN and t.revision == 1 for t in trees[0].walk())
        with mw.store.transaction(write=False) as conn:
            assert checklist_of(conn, "psg_one") == checklist
            makers = set(conn.execute(select(tasks.c.created_by)).scalars())
        assert makers == {PASSAGES_ACTOR_ID}
        created = mw.services.tasks.history(mw.alice.id, checklist)[0]
        assert created.kind == "created" and created.actor_id == PASSAGES_ACTOR_ID
        assert created.payload["passage_id"] == "psg_one"
        assert created.payload["schedule_id"] == str(schedule)

    def test_the_same_call_again_writes_nothing(self, mw: MissionWorld, schedule: UUID) -> None:
        checklist = make(mw, schedule)
        with nothing_written(mw.store):
            assert make(mw, schedule, checklist=checklist) == checklist

    def test_another_id_for_the_same_passage_is_refused(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        checklist = make(mw, schedule)
        with nothing_written(mw.store), pytest.raises(ChecklistTaken) as caught:
            make(mw, schedule)
        assert caught.value.details["checklist"] == str(checklist)

    def test_a_retried_transaction_creates_one_checklist(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        """A first attempt that failed after writing left nothing; the retry writes it once."""
        checklist = uuid4()
        attempts: list[int] = []

        def run(conn: Any) -> None:
            create_checklist(
                conn,
                checklist_id=checklist,
                workspace_id=mw.home.id,
                title="Nightly review",
                template=TEMPLATE,
                passage_id="psg_retried",
                schedule_id=schedule,
                now=mw.clock.now(),
            )
            attempts.append(1)
            if len(attempts) == 1:
                raise RuntimeError("the transaction fails after the write")

        with pytest.raises(RuntimeError):
            mw.store.run(run)
        mw.store.run(run)
        assert count(mw, tasks) == ITEMS + 1

    def test_passages_of_one_workspace_share_its_list(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        first = make(mw, schedule, "psg_one")
        second = make(mw, schedule, "psg_two", template=None)
        roots = [t.task.id for t in mw.services.tasks.tree(mw.alice.id, list_of(mw))]
        assert roots == [first, second]
        with mw.store.transaction(write=False) as conn:
            assert checklist_counts(conn, second) == (0, 0)

    @pytest.mark.parametrize(
        ("change", "error"),
        [
            # A wall time with no zone.
            ({"now": datetime(2025, 3, 1, 12)}, InvalidInput),
            # No title.
            ({"title": "  "}, InvalidInput),
            # A title past the task store's 500 characters.
            ({"title": "x" * 501}, InvalidInput),
            # No passage ID.
            ({"passage_id": ""}, InvalidInput),
            # Not a parsed template.
            ({"template": [{"title": "raw JSON"}]}, InvalidInput),
            # Deeper than the task store's bound (the template parser's as well).
            ({"template": _deep(10)}, InvalidInput),
            # More items than a template holds.
            (
                {"template": tuple(TemplateItem(title=f"item {i}") for i in range(501))},
                InvalidInput,
            ),
            # A workspace nobody registered.
            ({"workspace_id": uuid4()}, NotFound),
        ],
    )
    def test_bad_input_is_refused_before_anything_is_written(
        self, mw: MissionWorld, schedule: UUID, change: dict[str, Any], error: type[Exception]
    ) -> None:
        given: dict[str, Any] = {
            "checklist_id": uuid4(),
            "workspace_id": mw.home.id,
            "title": "Nightly review",
            "template": TEMPLATE,
            "passage_id": "psg_bad",
            "schedule_id": schedule,
            "now": mw.clock.now(),
        } | change
        with nothing_written(mw.store), pytest.raises(error):
            mw.store.run(lambda conn: create_checklist(conn, **given))

    def test_a_schedule_of_another_workspace_is_not_found(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        away = new_schedule(mw, "create-away", away=True)
        with nothing_written(mw.store), pytest.raises(NotFound):
            make(mw, away)


class TestCounts:
    def test_items_are_counted_at_every_level_without_the_root(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        checklist = make(mw, schedule)
        with mw.store.transaction(write=False) as conn:
            assert checklist_counts(conn, checklist) == (ITEMS, 0)
        tree = mw.services.tasks.tree(mw.alice.id, list_of(mw))[0]
        leaf = tree.children[0].children[0].children[0].task
        delegation = Delegation(
            actor_id=PASSAGES_ACTOR_ID, root_id=checklist, outside=Forbidden("not yours")
        )
        mw.services.tasks.complete_delegated(delegation, leaf.ref, leaf.revision)
        publish = tree.children[1].task
        mw.services.tasks.complete(mw.bob.id, publish.id, publish.revision)
        with mw.store.transaction(write=False) as conn:
            assert checklist_counts(conn, checklist) == (ITEMS - 2, 2)
        # An item in the trash no longer counts, nor what lies below it.
        prepare = tree.children[0].task
        mw.services.tasks.trash(mw.bob.id, prepare.id, prepare.revision)
        with mw.store.transaction(write=False) as conn:
            assert checklist_counts(conn, checklist) == (0, 1)

    def test_the_items_are_listed_in_order_with_what_a_tick_needs(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        checklist = make(mw, schedule)
        with mw.store.transaction(write=False) as conn:
            items = checklist_items(conn, checklist)
        assert [(i["depth"], i["title"]) for i in items] == [
            (1, "Prepare"),
            (2, "Fetch the data"),
            (3, "Check the mirror"),
            (2, "Clean it"),
            (1, "Publish"),
        ]
        assert {(i["status"], i["revision"]) for i in items} == {("open", 1)}
        by_title = {i["title"]: i for i in items}
        assert by_title["Prepare"]["parentId"] == str(checklist)
        assert by_title["Check the mirror"]["parentId"] == by_title["Fetch the data"]["id"]
        tree = mw.services.tasks.tree(mw.alice.id, list_of(mw))[0]
        assert items[0]["ref"] == tree.children[0].task.ref
        # A trashed item leaves the list, with what lies below it.
        prepare = tree.children[0].task
        mw.services.tasks.trash(mw.bob.id, prepare.id, prepare.revision)
        with mw.store.transaction(write=False) as conn:
            assert [i["title"] for i in checklist_items(conn, checklist)] == ["Publish"]
            with pytest.raises(NotFound):
                checklist_items(conn, uuid4())

    def test_a_task_that_is_no_checklist_is_not_found(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        make(mw, schedule)
        other = mw.services.tasks.create(mw.bob.id, list_of(mw), "Not a checklist")
        for task_id in (other.id, uuid4()):
            with mw.store.transaction(write=False) as conn, pytest.raises(NotFound):
                checklist_counts(conn, task_id)


class TestSlotTitle:
    def test_a_slot_is_shown_on_the_schedules_wall_clock(self) -> None:
        slot = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
        assert (
            slot_title("Nightly review", slot, "Europe/Berlin")
            == "Nightly review — 2026-12-02 09:00 (Europe/Berlin)"
        )

    def test_a_manual_run_shows_its_reservation_instant(self) -> None:
        at = datetime(2026, 7, 1, 6, 30, 59, tzinfo=UTC)
        assert (
            slot_title("Nightly review", None, "Europe/Berlin", reserved_at=at)
            == "Nightly review — 2026-07-01 08:30 (Europe/Berlin, run now)"
        )

    @pytest.mark.parametrize(
        ("title", "slot", "zone", "reserved_at", "error"),
        [
            # No title.
            (" ", datetime(2026, 12, 2, tzinfo=UTC), "UTC", None, InvalidInput),
            # A naive slot.
            ("Nightly", datetime(2026, 12, 2), "UTC", None, InvalidInput),
            # No slot and no reservation instant.
            ("Nightly", None, "UTC", None, InvalidInput),
            # A zone nobody knows.
            ("Nightly", datetime(2026, 12, 2, tzinfo=UTC), "Mars/Olympus", None, UnknownZone),
        ],
    )
    def test_bad_input_is_refused(
        self,
        title: str,
        slot: datetime | None,
        zone: str,
        reserved_at: datetime | None,
        error: type[Exception],
    ) -> None:
        with pytest.raises(error):
            slot_title(title, slot, zone, reserved_at=reserved_at)


class TestCreatingManyAtOnce:
    def test_a_rounds_checklists_are_made_together_in_order_with_their_items(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        first = make(mw, schedule, passage="psg_before")  # an earlier passage's
        specs = [
            ChecklistSpec(
                checklist_id=uuid4(),
                workspace_id=mw.home.id,
                title=f"Nightly review — run {n}",
                template=TEMPLATE if n != 1 else None,
                passage_id=f"psg_{n}",
                schedule_id=schedule,
            )
            for n in range(3)
        ]
        made = mw.store.run(lambda conn: create_checklists(conn, specs, mw.clock.now()))
        assert sorted(made) == ["psg_0", "psg_1", "psg_2"]
        assert made["psg_1"] == []
        roots = [t.task.id for t in mw.services.tasks.tree(mw.alice.id, list_of(mw))]
        assert roots == [first, *(s.checklist_id for s in specs)]  # at the end, in order

        def items_of(spec: ChecklistSpec) -> list[dict[str, Any]]:
            return mw.store.run(lambda conn: checklist_items(conn, spec.checklist_id))

        for spec in specs:
            assert made[spec.passage_id] == items_of(spec)  # as the read lists them
        assert [i["depth"] for i in made["psg_0"]] == [1, 2, 3, 2, 1]

    def test_the_same_round_again_writes_nothing_and_another_id_is_refused(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        spec = ChecklistSpec(
            checklist_id=uuid4(), workspace_id=mw.home.id, title="Nightly review — run",
            template=TEMPLATE, passage_id="psg_again", schedule_id=schedule,
        )  # fmt: skip
        mw.store.run(lambda conn: create_checklists(conn, [spec], mw.clock.now()))
        with nothing_written(mw.store):
            again = mw.store.run(lambda conn: create_checklists(conn, [spec], mw.clock.now()))
        assert again == {}
        other = replace(spec, checklist_id=uuid4())
        with nothing_written(mw.store), pytest.raises(ChecklistTaken):
            mw.store.run(lambda conn: create_checklists(conn, [other], mw.clock.now()))

    def test_a_schedule_of_another_workspace_refuses_the_whole_round(
        self, mw: MissionWorld, schedule: UUID
    ) -> None:
        specs = [
            ChecklistSpec(
                checklist_id=uuid4(),
                workspace_id=workspace,
                title="Nightly review — run",
                template=TEMPLATE,
                passage_id=f"psg_{n}",
                schedule_id=schedule,
            )
            for n, workspace in enumerate((mw.home.id, mw.away.id))
        ]
        with nothing_written(mw.store), pytest.raises(NotFound):
            mw.store.run(lambda conn: create_checklists(conn, specs, mw.clock.now()))
