"""The rows the role checks read are typed values whose fields are their statements'
columns, in order, on both databases."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from sqlalchemy.engine import Connection

from kalends.identity import Role
from kalends.storage.prepared import Prepared
from kalends.storage.task_tables import series_occurrences, task_series
from kalends.tasks import access, successors
from kalends.tasks.access import require_list_role, task_with_role
from kalends.tasks.task_rows import (
    ListRow,
    OccurrenceRow,
    SeriesRow,
    SuccessorRoot,
    SuccessorSource,
    TaskDetailRow,
    TaskRow,
)

from .conftest import World


def _names(row_type: Any) -> tuple[str, ...]:
    """A frozen row dataclass's fields, in order."""
    return tuple(f.name for f in fields(row_type))


def _columns(statement: Prepared) -> tuple[str, ...]:
    selected: Any = statement.statement
    return tuple(c.key for c in selected.selected_columns)


class TestTheRowTypesMatchTheirStatements:
    def test_a_task_row_has_the_role_checks_columns_in_order(self) -> None:
        assert _names(TaskRow) == _columns(access._TASK_BY_ID) == _columns(access._TASK_BY_REF)

    def test_a_detail_row_has_the_detail_statements_columns_in_order(self) -> None:
        by_id, by_ref = _columns(access._DETAIL_BY_ID), _columns(access._DETAIL_BY_REF)
        assert _names(TaskDetailRow) == by_id == by_ref

    def test_a_list_row_has_the_list_role_checks_columns_in_order(self) -> None:
        assert ListRow._fields == _columns(access._LIST_WITH_ROLE)

    def test_a_series_and_an_occurrence_have_their_tables_columns_in_order(self) -> None:
        assert SeriesRow._fields == tuple(task_series.c.keys())
        assert OccurrenceRow._fields == tuple(series_occurrences.c.keys())

    def test_a_successors_source_rows_have_their_statements_columns_in_order(self) -> None:
        assert SuccessorRoot._fields == _columns(Prepared(successors._ROOT_ROW))
        assert SuccessorSource._fields == _columns(Prepared(successors._SOURCE_ROWS))


class TestTheRoleChecksReturnTypedRows:
    def test_a_task_read_by_id_or_reference_is_a_task_row_of_its_values(self, world: World) -> None:
        made = world.tasks.create(world.alice.id, world.home.id, "Water the plants")

        def run(conn: Connection) -> tuple[TaskRow, TaskRow, TaskDetailRow]:
            by_id = task_with_role(conn, world.bob.id, made.id, Role.EDITOR, write=True)
            by_ref = task_with_role(conn, world.bob.id, made.ref, Role.VIEWER, write=False)
            detail = task_with_role(
                conn, world.bob.id, made.id, Role.VIEWER, write=False, detail=True
            )
            return by_id, by_ref, detail

        by_id, by_ref, detail = world.store.run(run, write=False)
        assert type(by_id) is TaskRow and by_id == by_ref
        assert (by_id.id, by_id.ref, by_id.title, by_id.revision) == (
            made.id,
            made.ref,
            "Water the plants",
            1,
        )
        assert (by_id.list_name, by_id.role) == ("Home", Role.EDITOR.value)
        assert type(detail) is TaskDetailRow
        assert tuple(detail)[: len(_names(TaskRow))] == tuple(by_id)
        assert (detail.live_children, detail.section_name) == (0, None)

    def test_a_list_read_with_the_role_is_a_list_row(self, world: World) -> None:
        def run(conn: Connection) -> tuple[Role, ListRow]:
            return require_list_role(conn, world.carol.id, world.home.id, Role.VIEWER, write=False)

        role, row = world.store.run(run, write=False)
        assert role is Role.VIEWER
        assert type(row) is ListRow
        assert (row.id, row.name, row.role) == (world.home.id, "Home", Role.VIEWER.value)
