"""Many document compare-and-swaps in one statement, and the fallback when one raced."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.missions import service as docs
from kalends.storage.mission_tables import schedules
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


def _three(mw: MissionWorld) -> list[UUID]:
    return [create(mw, f"create-cas-{n:04d}", title=f"Report {n}") for n in range(3)]


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
