"""The unit of work on every backend: commit, rollback, savepoints, busy retries."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

import pytest
from sqlalchemy import create_engine, event, insert, select, update
from sqlalchemy.engine import Connection

from kalends.clock import FakeClock
from kalends.errors import DatabaseBusy, InvalidInput, StorageError
from kalends.storage.migrate import open_store
from kalends.storage.schema import kalends_meta, leases
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import MAX_ATTEMPTS, Store, for_update

from .conftest import SHORT_BUSY_TIMEOUT_MS, WriteLockHolder


class Boom(Exception):
    pass


def put(conn: Connection, key: str, value: str = "v") -> None:
    conn.execute(insert(kalends_meta).values(key=key, value=value))


def read(store: Store, key: str) -> str | None:
    with store.transaction(write=False) as conn:
        return read_in(conn, key)


def read_in(conn: Connection, key: str) -> str | None:
    return conn.execute(
        select(kalends_meta.c.value).where(kalends_meta.c.key == key)
    ).scalar_one_or_none()


def touch_locked_row(conn: Connection) -> None:
    conn.execute(
        update(kalends_meta)
        .where(kalends_meta.c.key == "created_by")
        .values(value=kalends_meta.c.value)
    )


class TestTransaction:
    def test_a_clean_exit_commits_every_write(self, store: Store) -> None:
        with store.transaction() as conn:
            put(conn, "a")
            put(conn, "b")
        assert (read(store, "a"), read(store, "b")) == ("v", "v")

    def test_an_exception_rolls_back_every_write_and_propagates(self, store: Store) -> None:
        with pytest.raises(Boom), store.transaction() as conn:
            put(conn, "a")
            put(conn, "b")
            raise Boom
        assert (read(store, "a"), read(store, "b")) == (None, None)

    def test_a_failed_statement_rolls_back_the_earlier_writes(self, store: Store) -> None:
        with pytest.raises(Exception, match=r"(?i)unique|duplicate"), store.transaction() as conn:
            put(conn, "a")
            put(conn, "created_by")
        assert read(store, "a") is None

    def test_a_read_transaction_refuses_to_write_and_writes_nothing(self, store: Store) -> None:
        with pytest.raises(StorageError, match="read-only"), store.transaction(write=False) as conn:
            put(conn, "a")
        assert read(store, "a") is None

    def test_a_read_transaction_does_not_leave_its_connection_read_only(self, store: Store) -> None:
        for _ in range(3):
            assert read(store, "a") is None
        with store.transaction() as conn:
            put(conn, "a")
        assert read(store, "a") == "v"

    def test_a_naive_datetime_bound_to_an_instant_column_is_refused_as_bad_input(
        self, store: Store
    ) -> None:
        row = {"name": "n", "owner": "o", "token": "t"}
        naive = datetime(2025, 1, 1, 12, 0)
        with pytest.raises(InvalidInput, match="naive"), store.transaction() as conn:
            conn.execute(insert(leases).values(**row, acquired_at=naive, expires_at=naive))


class TestSavepoints:
    def test_a_failing_nested_transaction_rolls_back_only_its_own_writes(
        self, store: Store
    ) -> None:
        with store.transaction() as conn:
            put(conn, "outer")
            with pytest.raises(Boom), store.transaction() as inner:
                assert inner is conn
                put(inner, "inner")
                raise Boom
            put(conn, "after")
        assert (read(store, "outer"), read(store, "inner"), read(store, "after")) == (
            "v",
            None,
            "v",
        )

    def test_a_nested_transaction_that_hit_a_database_error_leaves_the_outer_usable(
        self, store: Store
    ) -> None:
        with store.transaction() as conn:
            with pytest.raises(Exception, match=r"(?i)unique|duplicate"), store.transaction():
                put(conn, "created_by")
            put(conn, "after")
        assert read(store, "after") == "v"

    def test_a_successful_nested_transaction_commits_with_the_outer_one(self, store: Store) -> None:
        with store.transaction() as conn:
            with store.transaction():
                put(conn, "inner")
            put(conn, "outer")
        assert (read(store, "inner"), read(store, "outer")) == ("v", "v")

    def test_an_outer_failure_rolls_back_a_finished_nested_transaction(self, store: Store) -> None:
        with pytest.raises(Boom), store.transaction() as conn:
            with store.transaction():
                put(conn, "inner")
            raise Boom
        assert read(store, "inner") is None

    def test_a_write_transaction_cannot_nest_inside_a_read_transaction(self, store: Store) -> None:
        with (
            store.transaction(write=False),
            pytest.raises(StorageError, match="nested"),
            store.transaction(write=True),
        ):
            pass

    def test_without_savepoints_a_nested_block_opens_none_and_fails_with_the_whole(
        self, store: Store
    ) -> None:
        seen: list[str] = []

        def watch(*args: object) -> None:
            seen.append(str(args[2]).upper())

        event.listen(store.engine, "before_cursor_execute", watch)
        try:
            with pytest.raises(Boom), store.transaction(savepoints=False) as conn:
                with store.transaction():
                    put(conn, "inner")
                assert store.run(lambda inner: read_in(inner, "inner")) == "v"
                raise Boom
        finally:
            event.remove(store.engine, "before_cursor_execute", watch)
        assert not [s for s in seen if "SAVEPOINT" in s]
        assert read(store, "inner") is None
        # The next transaction has savepoints again.
        with store.transaction() as conn:
            with pytest.raises(Exception, match=r"(?i)unique|duplicate"), store.transaction():
                put(conn, "created_by")
            put(conn, "after")
        assert read(store, "after") == "v"

    def test_run_inside_a_transaction_uses_a_savepoint_of_it(self, store: Store) -> None:
        with store.transaction():
            store.run(lambda inner: put(inner, "inner"))
            assert store.in_transaction
        assert not store.in_transaction
        assert read(store, "inner") == "v"


class SleepRecorder:
    """Stands in for ``time.sleep``: records the backoffs and may act on the n-th one."""

    def __init__(self, on_call: int = 0, action: Callable[[], None] | None = None) -> None:
        self.delays: list[float] = []
        self._on_call = on_call
        self._action = action

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        if self._action is not None and len(self.delays) == self._on_call:
            self._action()


def contended_store(target: StorageTarget, clock: FakeClock, sleep: SleepRecorder) -> Store:
    return Store(target.engine(busy_timeout_ms=SHORT_BUSY_TIMEOUT_MS), clock, sleep=sleep)


class TestBusyRetries:
    def test_run_returns_the_result_of_the_callable_and_commits(self, store: Store) -> None:
        def work(conn: Connection) -> str:
            put(conn, "a")
            return "done"

        assert store.run(work) == "done"
        assert read(store, "a") == "v"

    def test_run_retries_a_busy_transaction_whole_until_the_lock_is_released(
        self,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        write_lock_holder: WriteLockHolder,
    ) -> None:
        sleep = SleepRecorder(on_call=2, action=write_lock_holder.release)
        contended = contended_store(storage_target, fake_clock, sleep)
        calls = []

        def work(conn: Connection) -> str:
            calls.append(1)
            put(conn, f"attempt-{len(calls)}")
            touch_locked_row(conn)
            return "done"

        assert contended.run(work) == "done"
        assert len(sleep.delays) == 2
        assert all(0 < delay <= 0.5 for delay in sleep.delays)
        written = [read(contended, f"attempt-{n}") for n in range(1, len(calls) + 1)]
        assert written[-1] == "v"
        assert written[:-1] == [None] * (len(calls) - 1)

    def test_run_raises_database_busy_after_the_bounded_attempts_with_nothing_written(
        self,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        write_lock_holder: WriteLockHolder,
    ) -> None:
        sleep = SleepRecorder()
        contended = contended_store(storage_target, fake_clock, sleep)

        def work(conn: Connection) -> None:
            put(conn, "half")
            touch_locked_row(conn)

        with pytest.raises(DatabaseBusy, match=f"{MAX_ATTEMPTS} attempts") as caught:
            contended.run(work)
        assert caught.value.details == {"attempts": MAX_ATTEMPTS}
        assert len(sleep.delays) == MAX_ATTEMPTS - 1
        write_lock_holder.release()
        assert read(contended, "half") is None

    def test_a_single_transaction_reports_a_busy_database_as_database_busy(
        self,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        write_lock_holder: WriteLockHolder,
    ) -> None:
        contended = contended_store(storage_target, fake_clock, SleepRecorder())
        with (
            pytest.raises(DatabaseBusy, match="nothing was written"),
            contended.transaction() as conn,
        ):
            touch_locked_row(conn)

    def test_errors_other_than_busy_are_not_retried(self, store: Store) -> None:
        calls = []

        def work(conn: Connection) -> None:
            calls.append(1)
            raise Boom

        with pytest.raises(Boom):
            store.run(work)
        assert calls == [1]

    def test_a_store_needs_at_least_one_attempt(self, store: Store) -> None:
        with pytest.raises(InvalidInput, match="max_attempts"):
            Store(store.engine, max_attempts=0)


class TestForUpdate:
    def test_for_update_renders_skip_locked_on_postgresql_and_nothing_on_sqlite(self) -> None:
        stmt = for_update(select(kalends_meta.c.key), skip_locked=True)
        on_postgresql = str(stmt.compile(dialect=create_engine("postgresql+psycopg://").dialect))
        on_sqlite = str(stmt.compile(dialect=create_engine("sqlite://").dialect))
        assert on_postgresql.endswith("FOR UPDATE SKIP LOCKED")
        assert "FOR UPDATE" not in on_sqlite

    def test_a_locking_select_reads_the_rows_on_every_backend(self, store: Store) -> None:
        with store.transaction() as conn:
            keys = conn.execute(for_update(select(kalends_meta.c.key))).scalars().all()
        assert keys == ["created_by"]

    def test_skip_locked_passes_over_rows_another_transaction_has_claimed(
        self, postgresql_target: StorageTarget, fake_clock: FakeClock
    ) -> None:
        store = open_store(postgresql_target.engine(), fake_clock)
        with store.transaction() as conn:
            put(conn, "job-1")
            put(conn, "job-2")
        claim = for_update(
            select(kalends_meta.c.key).where(kalends_meta.c.key.like("job-%")).limit(1),
            skip_locked=True,
        )
        claimed: list[str | None] = []
        first_claimed = threading.Event()
        second_done = threading.Event()

        def second_worker() -> None:
            first_claimed.wait(5)
            claimed.append(store.run(lambda conn: conn.execute(claim).scalar_one_or_none()))
            second_done.set()

        worker = threading.Thread(target=second_worker)
        worker.start()
        with store.transaction() as conn:
            claimed.insert(0, conn.execute(claim).scalar_one_or_none())
            first_claimed.set()
            assert second_done.wait(5), "the second worker waited for the locked row"
        worker.join(5)
        assert sorted(c for c in claimed if c is not None) == ["job-1", "job-2"]


class TestKeptConnection:
    def test_the_keeping_threads_transactions_reuse_one_connection(self, store: Store) -> None:
        def connection_of() -> object:
            with store.transaction(write=False) as conn:
                return conn

        with store.keep_connection():
            first, second = connection_of(), connection_of()
            with store.transaction() as conn:
                put(conn, "kept")
                assert conn is first
            # While the kept one is in a transaction, another outermost one takes its own.
            with store.transaction(write=False) as outer:
                holder = store._active.set(None)
                try:
                    with store.transaction(write=False) as other:
                        assert other is not outer
                finally:
                    store._active.reset(holder)
        assert first is second
        assert first.closed
        assert read(store, "kept") == "v"
        assert connection_of() is not first

    def test_another_threads_transactions_take_their_own(self, store: Store) -> None:
        seen: list[object] = []

        def elsewhere() -> None:
            # A second keeper, in another thread, keeps nothing while this one does.
            with store.keep_connection(), store.transaction(write=False) as conn:
                seen.append(conn)

        with store.keep_connection():
            with store.transaction(write=False) as mine:
                kept = mine
            thread = threading.Thread(target=elsewhere)
            thread.start()
            thread.join()
            with store.transaction(write=False) as mine:
                assert mine is kept
        assert seen and seen[0] is not kept

    def test_a_failed_transaction_rolls_back_and_the_connection_stays_usable(
        self, store: Store
    ) -> None:
        with store.keep_connection():
            with pytest.raises(Boom), store.transaction() as conn:
                put(conn, "undone")
                raise Boom
            with store.transaction() as conn:
                put(conn, "after")
        assert (read(store, "undone"), read(store, "after")) == (None, "v")
