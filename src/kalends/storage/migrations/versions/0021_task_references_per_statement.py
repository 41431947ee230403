"""The task store's busiest references checked once a statement on PostgreSQL (issue 25).

A foreign key on PostgreSQL is checked row by row: each row a statement writes runs a
query that finds and locks the row it names. A scheduler's round writes each passage's
checklist (a root task, its items and a history event for each) with one statement a
table, and each of those rows names its list, its parent, its creator and, in the
history, its task and actor: five such queries a task, more than half of what the
server spends on the checklist (a throwaway measurement of 3,000 checklists of 11 tasks,
four writers at once: 437 us a checklist with the foreign keys, 191 without).

These five references keep their meaning and lose the per-row queries. A statement's
new rows are checked together once it ends (the rows it added, as a transition table):
each distinct row they name is looked up by its key and locked as a foreign key locks
it (``FOR KEY SHARE``, so that a concurrent delete waits, then sees them); one missing
refuses the statement with ``foreign_key_violation``, as before. A round's 550 tasks
name one list, one actor and 50 parents: 52 lookups where the foreign keys made 1,650.
A changed reference is checked on its row, only when it changed. Deleting the rows named
is refused while something names them, once the statement ends (so a subtree deleted at
once is fine, as before), except a task's history, which goes with its task (``ON DELETE
CASCADE`` before). A named row's key may not change while it is named. The checks assume
READ COMMITTED, which the store runs in.

SQLite checks foreign keys in the same process, cheaply: its constraints stay. The
table metadata still declares them (:data:`kalends.storage.task_tables.STATEMENT_CHECKED`
names them for the schema comparison).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-08
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


class _Reference(NamedTuple):
    table: str
    column: str
    target: str
    cascade: bool = False

    @property
    def name(self) -> str:
        return f"fk_{self.table}_{self.column}_{self.target}"


# As migration 0002 made them (every target's key is ``id``, a UUID).
_REFERENCES = (
    _Reference("tasks", "list_id", "lists"),
    _Reference("tasks", "parent_id", "tasks"),
    _Reference("tasks", "created_by", "actors"),
    _Reference("task_history", "task_id", "tasks", cascade=True),
    _Reference("task_history", "actor_id", "actors"),
)
_TABLES = ("tasks", "task_history")
_TARGETS = ("lists", "tasks", "actors")


def _violation(message: str, ref: _Reference) -> str:
    return (
        f"RAISE EXCEPTION {message} USING ERRCODE = 'foreign_key_violation', "
        f"CONSTRAINT = '{ref.name}', TABLE = '{ref.table}', COLUMN = '{ref.column}'"
    )


def _added_check(ref: _Reference) -> str:
    """Every row named by the statement's new rows exists, and is locked. One lookup by
    key for each row named (a list, an actor: once for the whole statement), so that the
    plan is an index lookup whatever the table's statistics say: a set query's cached
    plan, made while the table was small, scanned all of it for each statement."""
    missing = (
        f'\'insert or update on table "{ref.table}" violates reference "{ref.name}": '
        f'no row of "{ref.target}" has id %\', named'
    )
    return f"""
    FOR named IN SELECT DISTINCT {ref.column} FROM added WHERE {ref.column} IS NOT NULL LOOP
        PERFORM 1 FROM {ref.target} WHERE id = named FOR KEY SHARE;
        IF NOT FOUND THEN
            {_violation(missing, ref)};
        END IF;
    END LOOP;"""


def _function(name: str, declare: str, body: str) -> str:
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $body$\n"
        f"{declare}BEGIN{body}\n    RETURN NULL;\nEND\n$body$"
    )


def _statements() -> list[str]:
    made: list[str] = []
    for table in _TABLES:
        refs = [r for r in _REFERENCES if r.table == table]
        made.append(
            _function(
                f"kalends_{table}_added",
                "DECLARE\n    named uuid;\n",
                "".join(_added_check(r) for r in refs),
            )
        )
        made.append(
            f"CREATE TRIGGER kalends_references_added AFTER INSERT ON {table} "
            f"REFERENCING NEW TABLE AS added FOR EACH STATEMENT "
            f"EXECUTE FUNCTION kalends_{table}_added()"
        )
        for r in refs:
            missing = (
                f'\'insert or update on table "{r.table}" violates reference "{r.name}": '
                f'no row of "{r.target}" has id %\', NEW.{r.column}'
            )
            made.append(
                _function(
                    f"kalends_{table}_{r.column}_changed",
                    "",
                    f"""
    PERFORM 1 FROM {r.target} WHERE id = NEW.{r.column} FOR KEY SHARE;
    IF NOT FOUND THEN
        {_violation(missing, r)};
    END IF;""",
                )
            )
            made.append(
                f"CREATE TRIGGER kalends_{r.column}_changed AFTER UPDATE OF {r.column} ON {table} "
                f"FOR EACH ROW WHEN (NEW.{r.column} IS DISTINCT FROM OLD.{r.column} "
                f"AND NEW.{r.column} IS NOT NULL) "
                f"EXECUTE FUNCTION kalends_{table}_{r.column}_changed()"
            )
    for target in _TARGETS:
        refs = [r for r in _REFERENCES if r.target == target]
        # Row by row: each lookup by an indexed column where there is one (not the
        # actors' references: an actor is not deleted while kalends runs).
        body = """
    FOR named IN SELECT id FROM gone LOOP"""
        for r in refs:
            if r.cascade:
                body += f"""
        DELETE FROM {r.table} WHERE {r.column} = named;"""
        for r in refs:
            if r.cascade:
                continue
            still = (
                f'\'update or delete on table "{target}" violates reference "{r.name}" '
                f'on table "{r.table}": row % is still named\', named'
            )
            body += f"""
        IF EXISTS (SELECT 1 FROM {r.table} WHERE {r.column} = named) THEN
            {_violation(still, r)};
        END IF;"""
        body += """
    END LOOP;"""
        made.append(_function(f"kalends_{target}_gone", "DECLARE\n    named uuid;\n", body))
        made.append(
            f"CREATE TRIGGER kalends_references_gone AFTER DELETE ON {target} "
            f"REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
            f"EXECUTE FUNCTION kalends_{target}_gone()"
        )
        body = ""
        for r in refs:
            named = (
                f'\'update or delete on table "{target}" violates reference "{r.name}" '
                f'on table "{r.table}": the key of a named row changed\''
            )
            body += f"""
    IF EXISTS (SELECT 1 FROM {r.table} WHERE {r.column} = OLD.id) THEN
        {_violation(named, r)};
    END IF;"""
        made.append(_function(f"kalends_{target}_key_changed", "", body))
        made.append(
            f"CREATE TRIGGER kalends_key_changed AFTER UPDATE OF id ON {target} "
            f"FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id) "
            f"EXECUTE FUNCTION kalends_{target}_key_changed()"
        )
    return made


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for ref in _REFERENCES:
        op.drop_constraint(ref.name, ref.table, type_="foreignkey")
    for statement in _statements():
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"DROP TRIGGER kalends_references_added ON {table}")
        op.execute(f"DROP FUNCTION kalends_{table}_added()")
        for ref in (r for r in _REFERENCES if r.table == table):
            op.execute(f"DROP TRIGGER kalends_{ref.column}_changed ON {table}")
            op.execute(f"DROP FUNCTION kalends_{table}_{ref.column}_changed()")
    for target in _TARGETS:
        for trigger, function in (("references_gone", "gone"), ("key_changed", "key_changed")):
            op.execute(f"DROP TRIGGER kalends_{trigger} ON {target}")
            op.execute(f"DROP FUNCTION kalends_{target}_{function}()")
    for ref in _REFERENCES:
        op.create_foreign_key(
            ref.name,
            ref.table,
            ref.target,
            [ref.column],
            ["id"],
            ondelete="CASCADE" if ref.cascade else None,
        )
