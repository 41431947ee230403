"""The busiest references checked once a statement on PostgreSQL (issue 25).

A foreign key on PostgreSQL is checked row by row: each row a statement writes runs a
query that finds and locks the row it names. A scheduler's round writes, for each
passage, its conversation and first message and, for a schedule with a template, its
checklist (a root task, its items, a history event for each, the passage's checklist
record), one statement a table; each of those rows names its workspace, schedule,
conversation, list, parent, task or actor. Those checks were about half of what the
server spent on a checklist (a throwaway measurement of 3,000 checklists of 11 tasks,
four writers at once: 437 us a checklist with the foreign keys, 191 without) and a
sixth of its CPU per admission in the scale benchmark.

These twelve references keep their meaning and lose the per-row queries. A statement's
new rows are checked together once it ends (the rows it added, as a transition table):
each distinct row they name is looked up by its key and locked as a foreign key locks
it (``FOR KEY SHARE``, so that a concurrent delete waits, then sees them); one missing
refuses the statement with ``foreign_key_violation``, as before. A round's 550 tasks
name one list, one actor and 50 parents: 52 lookups where the foreign keys made 1,650.
A changed reference is checked on its row, only when it changed. When a named row is
deleted, what names it goes with it (``ON DELETE CASCADE`` before), lets go of it
(``SET NULL``), or refuses the delete, once the statement ends (so a subtree deleted at
once is fine, as before). A named row's key may not change. The checks assume READ
COMMITTED, which the store runs in.

SQLite checks foreign keys in the same process, cheaply: its constraints stay. The
table metadata still declares them (:data:`kalends.storage.schema.STATEMENT_CHECKED`
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
    on_delete: str = "NO ACTION"

    @property
    def name(self) -> str:
        return f"fk_{self.table}_{self.column}_{self.target}"


# As the migrations before made them (every target's key is ``id``, a UUID).
_REFERENCES = (
    _Reference("tasks", "list_id", "lists"),
    _Reference("tasks", "parent_id", "tasks"),
    _Reference("tasks", "created_by", "actors"),
    _Reference("task_history", "task_id", "tasks", "CASCADE"),
    _Reference("task_history", "actor_id", "actors"),
    _Reference("conversations", "workspace_id", "workspaces", "CASCADE"),
    _Reference("conversations", "schedule_id", "schedules", "SET NULL"),
    _Reference("conversations", "created_by", "actors"),
    _Reference("conversation_messages", "conversation_id", "conversations", "CASCADE"),
    _Reference("conversation_messages", "author_actor_id", "actors"),
    _Reference("passage_checklists", "schedule_id", "schedules", "CASCADE"),
    _Reference("passage_checklists", "task_id", "tasks"),
)
_TABLES = tuple(dict.fromkeys(r.table for r in _REFERENCES))
_TARGETS = tuple(dict.fromkeys(r.target for r in _REFERENCES))


def _violation(message: str, ref: _Reference) -> str:
    return (
        f"RAISE EXCEPTION {message} USING ERRCODE = 'foreign_key_violation', "
        f"CONSTRAINT = '{ref.name}', TABLE = '{ref.table}', COLUMN = '{ref.column}'"
    )


def _added_check(ref: _Reference) -> str:
    """Every row named by the statement's new rows exists, and is locked: one query for
    the distinct rows named, which finds each by its key (the function turns sequential
    scans off: its plan is cached, and one made while the table was small scanned all
    of it for each statement as the table grew)."""
    missing = (
        f'\'insert or update on table "{ref.table}" violates reference "{ref.name}": '
        f'no row of "{ref.target}" has id %\', (SELECT w FROM unnest(wanted) AS w '
        f"WHERE NOT EXISTS (SELECT 1 FROM {ref.target} WHERE id = w) LIMIT 1)"
    )
    return f"""
    SELECT array_agg(DISTINCT {ref.column}) INTO wanted FROM added
        WHERE {ref.column} IS NOT NULL;
    IF wanted IS NOT NULL THEN
        SELECT count(*) INTO held
            FROM (SELECT 1 FROM {ref.target} WHERE id = ANY (wanted) FOR KEY SHARE) AS named;
        IF held < cardinality(wanted) THEN
            {_violation(missing, ref)};
        END IF;
    END IF;"""


def _function(name: str, declare: str, body: str, settings: str = "") -> str:
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql {settings}AS $body$\n"
        f"{declare}BEGIN{body}\n    RETURN NULL;\nEND\n$body$"
    )


def _statements() -> list[str]:
    made: list[str] = []
    for table in _TABLES:
        refs = [r for r in _REFERENCES if r.table == table]
        made.append(
            _function(
                f"kalends_{table}_added",
                "DECLARE\n    wanted uuid[];\n    held bigint;\n",
                "".join(_added_check(r) for r in refs),
                "SET enable_seqscan = off ",
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
        # Row by row, each lookup by an indexed column where there is one (not the
        # actors' references: an actor is not deleted while kalends runs).
        body = """
    FOR named IN SELECT id FROM gone LOOP"""
        for r in refs:
            if r.on_delete == "CASCADE":
                body += f"""
        DELETE FROM {r.table} WHERE {r.column} = named;"""
            elif r.on_delete == "SET NULL":
                body += f"""
        UPDATE {r.table} SET {r.column} = NULL WHERE {r.column} = named;"""
        for r in (r for r in refs if r.on_delete == "NO ACTION"):
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
            ondelete=None if ref.on_delete == "NO ACTION" else ref.on_delete,
        )
