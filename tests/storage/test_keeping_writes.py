"""An error marked by ``keeping_writes`` leaves its transaction committed, on every backend:
what a refused schedule control needs to keep its refusal's record as it answers."""

from __future__ import annotations

import pytest
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from kalends.storage.schema import kalends_meta
from kalends.storage.unit_of_work import Store, keeping_writes


class Refused(Exception):
    pass


def put(conn: Connection, key: str) -> None:
    conn.execute(insert(kalends_meta).values(key=key, value="v"))


def kept(store: Store, *keys: str) -> list[bool]:
    with store.transaction(write=False) as conn:
        found = set(
            conn.execute(select(kalends_meta.c.key).where(kalends_meta.c.key.in_(keys))).scalars()
        )
    return [key in found for key in keys]


class TestKeepingWrites:
    def test_the_outermost_transaction_commits_and_the_error_propagates(self, store: Store) -> None:
        with pytest.raises(Refused), store.transaction() as conn:
            put(conn, "record")
            raise keeping_writes(Refused())
        assert kept(store, "record") == [True]

    def test_an_unmarked_error_still_rolls_everything_back(self, store: Store) -> None:
        with pytest.raises(Refused), store.transaction() as conn:
            put(conn, "record")
            raise Refused
        assert kept(store, "record") == [False]

    def test_a_savepoint_left_by_it_is_kept_and_the_outer_goes_on(self, store: Store) -> None:
        with store.transaction() as conn:
            with pytest.raises(Refused), store.transaction() as inner:
                put(inner, "record")
                raise keeping_writes(Refused())
            put(conn, "after")
        assert kept(store, "record", "after") == [True, True]

    def test_without_savepoints_the_whole_transaction_commits_as_it_leaves(
        self, store: Store
    ) -> None:
        with pytest.raises(Refused), store.transaction(savepoints=False) as conn:
            put(conn, "before")
            with store.transaction() as inner:
                put(inner, "record")
                raise keeping_writes(Refused())
        assert kept(store, "before", "record") == [True, True]

    def test_run_commits_once_and_does_not_try_again(self, store: Store) -> None:
        calls: list[int] = []

        def refuse(conn: Connection) -> None:
            calls.append(1)
            put(conn, "record")
            raise keeping_writes(Refused())

        with pytest.raises(Refused):
            store.run(refuse)
        assert (len(calls), kept(store, "record")) == (1, [True])
