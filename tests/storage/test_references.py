"""The busiest references hold alike on both backends: SQLite's foreign keys, and on
PostgreSQL the checks once a statement that replaced twelve of them (migration 0021:
``STATEMENT_CHECKED``). A row naming nothing is refused with nothing written, alone or
among many copied in at once; a named row cannot go while named, nor change its key,
unless what names it goes with it (a task's history, a workspace's conversations, a
conversation's messages, a schedule's checklist records) or lets go of it (a passage's
conversation outlives its schedule)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.storage.conversation_tables import conversation_messages, conversations
from kalends.storage.identity_tables import actors
from kalends.storage.mission_tables import passage_checklists, schedules, workspaces
from kalends.storage.prepared import Prepared, inserting
from kalends.storage.schema import STATEMENT_CHECKED
from kalends.storage.task_tables import lists, task_history, tasks
from kalends.storage.unit_of_work import Store

NOW = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
_REFS = iter(range(1, 1_000_000))
_INSERT_TASKS = inserting(tasks)
_INSERT_EVENTS = inserting(task_history, ("task_id", "kind", "actor_id", "at", "payload"))


def actor_row(handle: str) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "handle": handle, "display_name": handle, "created_at": NOW}


def list_row(name: str) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "name": name, "status": "active", "revision": 1, "created_at": NOW}


def task_row(list_id: UUID, actor_id: UUID, parent_id: UUID | None = None) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(), "ref": f"r{next(_REFS):05d}", "list_id": list_id,
        "section_id": None, "parent_id": parent_id, "position": 1024, "title": "t",
        "description": "", "status": "open", "completed_at": None, "trashed": False,
        "trashed_at": None, "revision": 1, "schedule_revision": 1, "priority": None,
        "planned_date": None, "due_date": None, "due_local": None, "due_zone": None,
        "due_at": None, "series_id": None, "occurrence": None, "created_by": actor_id,
        "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip


def event_row(task_id: UUID, actor_id: UUID | None) -> dict[str, Any]:
    return {"task_id": task_id, "kind": "created", "actor_id": actor_id, "at": NOW, "payload": {}}


class World:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.actor = actor_row("ann")
        self.idle = actor_row("bob")
        self.list = list_row("home")
        self.other = list_row("work")
        self.root = task_row(self.list["id"], self.actor["id"])
        self.child = task_row(self.list["id"], self.actor["id"], self.root["id"])
        with store.transaction() as conn:
            conn.execute(insert(actors), [self.actor, self.idle])
            conn.execute(insert(lists), [self.list, self.other])
            conn.execute(insert(tasks), [self.root])
            conn.execute(insert(tasks), [self.child])
            conn.execute(insert(task_history), [event_row(self.root["id"], self.actor["id"])])
            conn.execute(insert(task_history), [event_row(self.child["id"], self.actor["id"])])

    def counts(self) -> tuple[int, ...]:
        with self.store.transaction(write=False) as conn:
            return tuple(
                conn.execute(select(func.count()).select_from(table)).scalar_one()
                for table in (actors, lists, tasks, task_history)
            )

    def refused(self, write: Callable[[Connection], object]) -> None:
        """``write`` is refused as a broken reference, and leaves every table as it was."""
        before = self.counts()
        with pytest.raises(IntegrityError) as raised, self.store.transaction() as conn:
            write(conn)
        assert "foreign" in str(raised.value).lower() or "reference" in str(raised.value)
        assert self.counts() == before

    def refused_among(
        self, inserting: Prepared, rows: list[dict[str, Any]], at: int, column: str
    ) -> None:
        """``rows`` copied in at once, the one ``at`` naming nothing in ``column``: all
        refused, as :meth:`refused` says."""
        rows[at] = rows[at] | {column: MISSING}
        self.refused(lambda conn: inserting.many(conn, rows))


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    yield World(store)


MISSING = uuid.UUID(int=7)


class TestNewRows:
    @pytest.mark.parametrize("column", ["list_id", "parent_id", "created_by"])
    def test_a_task_naming_nothing_is_refused(self, world: World, column: str) -> None:
        row = task_row(world.list["id"], world.actor["id"], world.root["id"]) | {column: MISSING}
        world.refused(lambda conn: conn.execute(insert(tasks), [row]))

    @pytest.mark.parametrize("column", ["list_id", "parent_id", "created_by"])
    def test_one_task_naming_nothing_among_many_copied_refuses_them_all(
        self, world: World, column: str
    ) -> None:
        rows = [task_row(world.list["id"], world.actor["id"], world.root["id"]) for _ in range(60)]
        world.refused_among(_INSERT_TASKS, rows, 37, column)

    @pytest.mark.parametrize("column", ["task_id", "actor_id"])
    def test_a_history_event_naming_nothing_is_refused(self, world: World, column: str) -> None:
        rows = [event_row(world.child["id"], world.actor["id"]) for _ in range(20)]
        world.refused_among(_INSERT_EVENTS, rows, 11, column)

    def test_a_tree_naming_its_own_new_rows_and_no_actor_in_history_is_written(
        self, world: World
    ) -> None:
        root = task_row(world.other["id"], world.idle["id"])
        items = [task_row(world.other["id"], world.idle["id"], root["id"]) for _ in range(30)]
        with world.store.transaction() as conn:
            _INSERT_TASKS.many(conn, [root, *items])
            _INSERT_EVENTS.many(conn, [event_row(t["id"], None) for t in (root, *items)])
        assert world.counts() == (2, 2, 33, 33)


class TestChangedRows:
    @pytest.mark.parametrize("column", ["list_id", "parent_id", "created_by"])
    def test_a_reference_changed_to_nothing_is_refused(self, world: World, column: str) -> None:
        changed = update(tasks).where(tasks.c.id == world.child["id"]).values({column: MISSING})
        world.refused(lambda conn: conn.execute(changed))

    def test_references_changed_to_rows_that_exist_or_left_alone_are_written(
        self, world: World
    ) -> None:
        with world.store.transaction() as conn:
            conn.execute(
                update(tasks)
                .where(tasks.c.id == world.child["id"])
                .values(list_id=world.other["id"], parent_id=None, created_by=world.idle["id"])
            )
            conn.execute(update(tasks).values(title="renamed"))
            conn.execute(update(task_history).values(actor_id=world.idle["id"]))
            moved = conn.execute(
                select(tasks.c.list_id, tasks.c.created_by).where(tasks.c.id == world.child["id"])
            ).one()
        assert tuple(moved) == (world.other["id"], world.idle["id"])

    def test_a_history_event_moved_to_no_task_is_refused(self, world: World) -> None:
        world.refused(lambda conn: conn.execute(update(task_history).values(task_id=MISSING)))


class TestNamedRows:
    def test_a_task_goes_with_its_history(self, world: World) -> None:
        with world.store.transaction() as conn:
            conn.execute(delete(tasks).where(tasks.c.id == world.child["id"]))
            left = conn.execute(select(task_history.c.task_id)).scalars().all()
        assert left == [world.root["id"]]

    def test_a_task_named_as_a_parent_cannot_go_alone(self, world: World) -> None:
        root = delete(tasks).where(tasks.c.id == world.root["id"])
        world.refused(lambda conn: conn.execute(root))

    def test_a_parent_and_its_items_go_together(self, world: World) -> None:
        with world.store.transaction() as conn:
            conn.execute(delete(tasks))
        assert world.counts() == (2, 2, 0, 0)

    def test_a_list_with_tasks_cannot_go_and_one_without_can(self, world: World) -> None:
        home = delete(lists).where(lists.c.id == world.list["id"])
        world.refused(lambda conn: conn.execute(home))
        with world.store.transaction() as conn:
            conn.execute(delete(lists).where(lists.c.id == world.other["id"]))
        assert world.counts() == (2, 1, 2, 2)

    def test_an_actor_named_by_tasks_or_history_cannot_go_and_one_named_by_none_can(
        self, world: World
    ) -> None:
        ann = delete(actors).where(actors.c.id == world.actor["id"])
        world.refused(lambda conn: conn.execute(ann))
        with world.store.transaction() as conn:
            conn.execute(update(tasks).values(created_by=world.idle["id"]))
        world.refused(lambda conn: conn.execute(ann))  # still named by the history
        with world.store.transaction() as conn:
            conn.execute(update(task_history).values(actor_id=world.idle["id"]))
            conn.execute(ann)
        assert world.counts() == (1, 2, 2, 2)
        world.refused(lambda conn: conn.execute(delete(actors)))

    @pytest.mark.parametrize("name", ["actors", "lists", "tasks"])
    def test_the_key_of_a_named_row_cannot_change(self, world: World, name: str) -> None:
        table, named = {
            "actors": (actors, world.actor),
            "lists": (lists, world.list),
            "tasks": (tasks, world.root),
        }[name]
        changed = update(table).where(table.c.id == named["id"]).values(id=uuid.uuid4())
        world.refused(lambda conn: conn.execute(changed))


def _postgresql(world: World) -> None:
    if world.store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite runs one writer at a time")


class TestConcurrentWriters:
    """On PostgreSQL a statement's check locks the rows its new rows name, as a foreign
    key does: a delete of one of them and the insert naming it cannot both commit,
    whichever starts first."""

    def _race(self, world: World, first: Callable[[Connection], object],
              second: Callable[[Connection], object]) -> BaseException | None:  # fmt: skip
        """``first`` runs and holds its transaction while ``second`` starts in another
        thread (and waits for ``first``'s locks); ``first`` commits; what ``second``
        raised, if anything."""
        raised: list[BaseException] = []
        started = threading.Event()

        def run_second() -> None:
            try:
                with world.store.transaction() as conn:
                    started.set()
                    second(conn)
            except BaseException as error:  # handed to the test
                raised.append(error)

        with world.store.transaction() as conn:
            first(conn)
            thread = threading.Thread(target=run_second)
            thread.start()
            assert started.wait(10)
            thread.join(0.5)
            assert thread.is_alive(), "the second writer should wait for the first's locks"
        thread.join(10)
        assert not thread.is_alive()
        return raised[0] if raised else None

    def test_an_insert_naming_an_actor_being_deleted_is_refused(self, world: World) -> None:
        _postgresql(world)
        bob = world.idle["id"]
        error = self._race(
            world,
            lambda conn: conn.execute(delete(actors).where(actors.c.id == bob)),
            lambda conn: _INSERT_TASKS.many(conn, [task_row(world.list["id"], bob)]),
        )
        assert isinstance(error, IntegrityError)
        assert world.counts() == (1, 2, 2, 2)

    def test_a_delete_of_an_actor_a_new_task_names_is_refused(self, world: World) -> None:
        _postgresql(world)
        bob = world.idle["id"]
        error = self._race(
            world,
            lambda conn: _INSERT_TASKS.many(conn, [task_row(world.list["id"], bob)]),
            lambda conn: conn.execute(delete(actors).where(actors.c.id == bob)),
        )
        assert isinstance(error, IntegrityError)
        assert world.counts() == (2, 2, 3, 2)


def test_postgresql_checks_these_references_by_triggers_not_constraints(world: World) -> None:
    _postgresql(world)
    with world.store.transaction(write=False) as conn:
        constraints = set(
            conn.execute(
                text(
                    "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid IN "
                    "('tasks'::regclass, 'task_history'::regclass)"
                )
            ).scalars()
        )
        triggers = set(
            conn.execute(
                text(
                    "SELECT c.relname || '.' || t.tgname FROM pg_trigger t"
                    " JOIN pg_class c ON c.oid = t.tgrelid"
                    " WHERE t.tgname LIKE 'kalends%'"
                    " AND c.relnamespace = current_schema()::regnamespace"
                )
            ).scalars()
        )
    assert not constraints & STATEMENT_CHECKED
    assert "fk_tasks_section_id_sections" in constraints  # the others stay
    assert {"tasks.kalends_references_added", "task_history.kalends_references_added",
            "tasks.kalends_references_gone", "actors.kalends_references_gone",
            "lists.kalends_references_gone"} <= triggers  # fmt: skip


def workspace_row(name: str) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "name": name, "path": f"/srv/{name}", "created_at": NOW}


def schedule_row(workspace_id: UUID, title: str) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(), "workspace_id": workspace_id, "phase": "live", "state": "running",
        "revision": 1, "evicted_control_revision": 0, "title": title,
        "creation_request_id": f"req-{title}", "creation_digest": "0" * 64, "config": None,
        "body": None, "size": 0, "next_due_at": None, "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip


def conversation_row(workspace_id: UUID, schedule_id: UUID | None, actor_id: UUID | None,
                     passage: str | None = None) -> dict[str, Any]:  # fmt: skip
    kind = "thread" if passage is None else "passage"
    return {
        "id": uuid.uuid4(), "workspace_id": workspace_id, "kind": kind, "title": "c",
        "created_by": actor_id, "passage_id": passage, "schedule_id": schedule_id,
        "state": "open", "revision": 1, "last_seq": 1, "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip


def message_row(conversation_id: UUID, actor_id: UUID | None, seq: int = 1) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(), "conversation_id": conversation_id, "seq": seq, "role": "user",
        "author_actor_id": actor_id, "author_passage_id": None, "text": "hello",
        "digest": "0" * 64, "complete": True, "revision": 1, "created_at": NOW,
        "updated_at": NOW, "completed_at": NOW,
    }  # fmt: skip


_INSERT_CONVERSATIONS = inserting(conversations)
_INSERT_MESSAGES = inserting(conversation_messages)
_INSERT_CHECKLISTS = inserting(passage_checklists)
_PASSAGES = iter(range(1, 1_000_000))


def checklist_row(schedule_id: UUID, task_id: UUID) -> dict[str, Any]:
    passage = f"psg_{next(_PASSAGES):026d}"
    return {
        "passage_id": passage,
        "schedule_id": schedule_id,
        "task_id": task_id,
        "created_at": NOW,
    }


class Missions(World):
    """World's tasks, plus two workspaces, a schedule in the first, a passage's
    conversation of that schedule with a message, a thread in the second, and the
    passage's checklist record naming the root task."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.home = workspace_row("home")
        self.away = workspace_row("away")
        self.schedule = schedule_row(self.home["id"], "nightly")
        self.transcript = conversation_row(self.home["id"], self.schedule["id"], None, "psg_1")
        self.thread = conversation_row(self.away["id"], None, self.actor["id"])
        with store.transaction() as conn:
            conn.execute(insert(workspaces), [self.home, self.away])
            conn.execute(insert(schedules), [self.schedule])
            conn.execute(insert(conversations), [self.transcript, self.thread])
            conn.execute(
                insert(conversation_messages),
                [
                    message_row(self.transcript["id"], None),
                    message_row(self.thread["id"], self.actor["id"]),
                ],
            )
            conn.execute(
                insert(passage_checklists), [checklist_row(self.schedule["id"], self.root["id"])]
            )

    def counts(self) -> tuple[int, ...]:
        with self.store.transaction(write=False) as conn:
            return super().counts() + tuple(
                conn.execute(select(func.count()).select_from(table)).scalar_one()
                for table in (
                    workspaces,
                    schedules,
                    conversations,
                    conversation_messages,
                    passage_checklists,
                )
            )


@pytest.fixture
def missions(store: Store) -> Iterator[Missions]:
    yield Missions(store)


class TestMissionRows:
    @pytest.mark.parametrize("column", ["workspace_id", "schedule_id", "created_by"])
    def test_a_conversation_naming_nothing_among_many_refuses_them_all(
        self, missions: Missions, column: str
    ) -> None:
        m = missions
        rows = [conversation_row(m.home["id"], m.schedule["id"], m.actor["id"]) for _ in range(20)]
        m.refused_among(_INSERT_CONVERSATIONS, rows, 13, column)

    @pytest.mark.parametrize("column", ["conversation_id", "author_actor_id"])
    def test_a_message_naming_nothing_among_many_refuses_them_all(
        self, missions: Missions, column: str
    ) -> None:
        m = missions
        rows = [message_row(m.thread["id"], m.actor["id"], seq) for seq in range(2, 22)]
        m.refused_among(_INSERT_MESSAGES, rows, 5, column)

    @pytest.mark.parametrize("column", ["schedule_id", "task_id"])
    def test_a_checklist_record_naming_nothing_among_many_refuses_them_all(
        self, missions: Missions, column: str
    ) -> None:
        m = missions
        rows = [checklist_row(m.schedule["id"], m.child["id"])]
        rows += [checklist_row(m.schedule["id"], task_row(m.list["id"], m.actor["id"])["id"])
                 for _ in range(9)]  # fmt: skip
        with m.store.transaction() as conn:  # the tasks the records name
            conn.execute(insert(tasks), [
                task_row(m.list["id"], m.actor["id"]) | {"id": r["task_id"]} for r in rows[1:]
            ])  # fmt: skip
        m.refused_among(_INSERT_CHECKLISTS, rows, 4, column)

    def test_a_schedule_goes_with_its_checklist_records_and_its_transcript_lets_go(
        self, missions: Missions
    ) -> None:
        m = missions
        with m.store.transaction() as conn:
            conn.execute(delete(schedules).where(schedules.c.id == m.schedule["id"]))
            named = conn.execute(
                select(conversations.c.schedule_id).where(conversations.c.id == m.transcript["id"])
            ).scalar_one()
        assert named is None
        assert m.counts()[4:] == (2, 0, 2, 2, 0)

    def test_a_workspace_goes_with_its_conversations_and_their_messages(
        self, missions: Missions
    ) -> None:
        m = missions
        with m.store.transaction() as conn:
            conn.execute(delete(workspaces).where(workspaces.c.id == m.away["id"]))
            left = conn.execute(select(conversation_messages.c.conversation_id)).scalars().all()
        assert left == [m.transcript["id"]]
        assert m.counts()[4:] == (1, 1, 1, 1, 1)

    def test_a_task_with_a_checklist_record_and_an_actor_with_a_thread_cannot_go(
        self, missions: Missions
    ) -> None:
        m = missions
        with m.store.transaction() as conn:  # named by nothing but the checklist record
            conn.execute(delete(tasks).where(tasks.c.id == m.child["id"]))
        m.refused(lambda conn: conn.execute(delete(tasks)))
        with m.store.transaction() as conn:  # named by nothing but the thread and its message
            conn.execute(update(tasks).values(created_by=m.idle["id"]))
            conn.execute(update(task_history).values(actor_id=m.idle["id"]))
        ann = delete(actors).where(actors.c.id == m.actor["id"])
        m.refused(lambda conn: conn.execute(ann))
        with m.store.transaction() as conn:
            conn.execute(update(conversation_messages).values(author_actor_id=None))
        m.refused(lambda conn: conn.execute(ann))  # still the thread's creator
        with m.store.transaction() as conn:
            conn.execute(update(conversations).values(created_by=None))
            conn.execute(ann)
        assert m.counts()[0] == 1

    @pytest.mark.parametrize("name", ["workspaces", "schedules", "conversations"])
    def test_the_key_of_a_named_row_cannot_change(self, missions: Missions, name: str) -> None:
        m = missions
        table, named = {
            "workspaces": (workspaces, m.away),  # named by its thread alone
            "schedules": (schedules, m.schedule),
            "conversations": (conversations, m.thread),
        }[name]
        changed = update(table).where(table.c.id == named["id"]).values(id=uuid.uuid4())
        m.refused(lambda conn: conn.execute(changed))

    @pytest.mark.parametrize(
        ("name", "column"),
        [("conversations", "workspace_id"), ("conversations", "schedule_id"),
         ("conversation_messages", "conversation_id"), ("passage_checklists", "task_id")],
    )  # fmt: skip
    def test_a_reference_changed_to_nothing_is_refused(
        self, missions: Missions, name: str, column: str
    ) -> None:
        thread = missions.thread["id"]
        changed = {
            "conversations": update(conversations).where(conversations.c.id == thread),
            "conversation_messages": update(conversation_messages).where(
                conversation_messages.c.conversation_id == thread
            ),
            "passage_checklists": update(passage_checklists),
        }[name].values({column: MISSING})
        missions.refused(lambda conn: conn.execute(changed))
