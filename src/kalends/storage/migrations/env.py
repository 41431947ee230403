"""Alembic environment for kalends: runs on the connection given by :mod:`kalends.storage.migrate`.

The caller opens the transaction (``BEGIN IMMEDIATE`` on SQLite, an advisory
lock on PostgreSQL) and puts the connection in ``config.attributes["connection"]``;
every pending migration and the version record then commit together. Tables are
unqualified, so on PostgreSQL they and ``alembic_version`` land in the first
schema of the connection's ``search_path``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from kalends.storage import task_tables  # noqa: F401 - registers the task tables
from kalends.storage.migrate import compared
from kalends.storage.schema import metadata

config = context.config

if context.is_offline_mode():
    raise RuntimeError("kalends migrations run online only: use `kalends db upgrade`")

connection = config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise RuntimeError(
        "kalends migrations need a connection in config.attributes['connection']; "
        "run them with kalends.storage.migrate.upgrade()"
    )

context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite alters tables by copying them; batch mode does that for us.
    render_as_batch=True,
    compare_type=True,
    include_object=compared,
)

with context.begin_transaction():
    context.run_migrations()
