"""Many document compare-and-swaps in one statement, and the fallback when one raced."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DataError

from kalends.missions import service as docs
from kalends.storage.mission_tables import schedules
from kalends.storage.testing import statements_sent
from kalends.storage.upsert import UNNEST_ROWS
from missions.conftest import MissionWorld
from missions.surgery import create, revision, stored_body


def _params(conn: Connection, ids: list[UUID], checks: int) -> list[dict[str, Any]]:
    rows = {r.id: r for r in conn.execute(select(schedules).where(schedules.c.id.in_(ids)))}
    out = []
    for schedule_id in ids:
        row = rows[schedule_id]
        doc = docs.doc_of(row)
        body = replace(doc.body, checks_count=checks)
        out.append(
            docs.cas_params(
                row,
                state=doc.state,
                phase=doc.phase,
                config=doc.config,
                body=body,
                now=row.updated_at,
            )
        )
    return out


def _three(mw: MissionWorld, count: int = 3) -> list[UUID]:
    return [create(mw, f"create-cas-{n:04d}", title=f"Report {n}") for n in range(count)]


def test_every_write_applies_in_one_batch(mw: MissionWorld) -> None:
    ids = _three(mw)
    before = [revision(mw, i) for i in ids]

    def run(conn: Connection) -> list[bool]:
        return docs.cas_write_many(conn, _params(conn, ids, 7))

    assert mw.store.run(run) == [True, True, True]
    assert [revision(mw, i) for i in ids] == [r + 1 for r in before]
    assert [stored_body(mw, i).checks_count for i in ids] == [7, 7, 7]


def test_a_raced_write_falls_back_one_by_one_and_the_others_apply(mw: MissionWorld) -> None:
    ids = _three(mw)
    with mw.store.transaction() as conn:
        params = _params(conn, ids, 5)
    # Another writer changes the middle document after its parameters were built.
    with mw.store.transaction() as conn:
        assert docs.cas_write_many(conn, _params(conn, [ids[1]], 9)) == [True]
    raced = revision(mw, ids[1])

    def run(conn: Connection) -> list[bool]:
        return docs.cas_write_many(conn, params)

    assert mw.store.run(run) == [True, False, True]
    assert [stored_body(mw, i).checks_count for i in ids] == [5, 9, 5]
    assert revision(mw, ids[1]) == raced


def test_an_empty_batch_writes_nothing(mw: MissionWorld) -> None:
    with mw.store.transaction() as conn:
        assert docs.cas_write_many(conn, []) == []


@pytest.mark.parametrize("count", [UNNEST_ROWS - 1, UNNEST_ROWS + 2])
def test_a_batch_is_one_statement_and_writes_every_column(mw: MissionWorld, count: int) -> None:
    ids = _three(mw, count)
    before = [revision(mw, i) for i in ids]
    with mw.store.transaction() as conn:
        expected = _params(conn, ids, 4)
    with statements_sent(mw.store.engine, "UPDATE schedules") as seen:
        done = mw.store.run(lambda conn: docs.cas_write_many(conn, expected))
    assert done == [True] * count
    assert len(seen) == 1
    many = mw.store.engine.dialect.name == "postgresql" and count >= UNNEST_ROWS
    assert ("unnest" in seen[0]) == many
    with mw.store.transaction() as conn:
        rows = {r.id: r for r in conn.execute(select(schedules).where(schedules.c.id.in_(ids)))}
    for schedule_id, p, was in zip(ids, expected, before, strict=True):
        row = rows[schedule_id]
        assert row.revision == was + 1
        assert (row.phase, row.state, row.title, row.config, row.body, row.size) == (
            p["phase"], p["state"], p["title"], p["config"], p["body"], p["size"]
        )  # fmt: skip
        assert (row.next_due_at, row.updated_at) == (p["next_due_at"], p["updated_at"])
        assert row.evicted_control_revision == p["evicted"]
        assert stored_body(mw, schedule_id).checks_count == 4


def test_a_raced_write_in_a_large_batch_leaves_the_others_to_apply(mw: MissionWorld) -> None:
    ids = _three(mw, UNNEST_ROWS + 2)
    with mw.store.transaction() as conn:
        params = _params(conn, ids, 5)
    with mw.store.transaction() as conn:
        assert docs.cas_write_many(conn, _params(conn, [ids[4]], 9)) == [True]

    def run(conn: Connection) -> list[bool]:
        return docs.cas_write_many(conn, params)

    assert mw.store.run(run) == [i != 4 for i in range(len(ids))]
    assert [stored_body(mw, i).checks_count for i in ids] == [
        9 if n == 4 else 5 for n in range(len(ids))
    ]


def test_one_document_twice_in_a_batch_is_written_once(mw: MissionWorld) -> None:
    ids = _three(mw, UNNEST_ROWS)
    with mw.store.transaction() as conn:
        params = _params(conn, ids, 6)
        again = _params(conn, [ids[2]], 8)
    before = revision(mw, ids[2])

    def run(conn: Connection) -> list[bool]:
        return docs.cas_write_many(conn, [*params, *again])

    assert mw.store.run(run) == [True] * len(ids) + [False]
    assert revision(mw, ids[2]) == before + 1
    assert stored_body(mw, ids[2]).checks_count == 6


def test_an_overlong_title_refuses_the_batch_and_nothing_stays(mw: MissionWorld) -> None:
    """(The configuration bounds a title; a document's row refuses one past its column
    on PostgreSQL whether written alone or with others.)"""
    ids = _three(mw, UNNEST_ROWS)
    before = [revision(mw, i) for i in ids]
    with mw.store.transaction() as conn:
        params = _params(conn, ids, 3)
    params[3] = {**params[3], "title": "t" * 121}
    if mw.store.engine.dialect.name != "postgresql":  # (SQLite keeps text of any length)
        assert mw.store.run(lambda conn: docs.cas_write_many(conn, params)) == [True] * len(ids)
        return
    with pytest.raises(DataError):
        mw.store.run(lambda conn: docs.cas_write_many(conn, params))
    assert [revision(mw, i) for i in ids] == before
