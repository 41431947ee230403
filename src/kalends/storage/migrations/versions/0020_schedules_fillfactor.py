"""Room on each page of ``schedules`` for a document's next versions: fill factor 70 on
PostgreSQL (issue 25). Every admission writes a schedule's document twice (the
reservation, then the admission); on pages filled to the brim each new version went to
another page, with a new entry in each of the table's three indexes. With a third of a
page free, a new version mostly stays on its page and the indexes are not touched (a
heap-only update; none of the columns a compare-and-swap writes is indexed). Pages
written before this migration keep what they hold until they are rewritten. SQLite has
no fill factor: nothing to do there.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE schedules SET (fillfactor = 70)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE schedules RESET (fillfactor)")
