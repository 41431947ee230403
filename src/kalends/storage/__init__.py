"""Storage: engines, tables, migrations, the unit of work and leases.

Typical use::

    store = open_store()  # KALENDS_DATABASE_URL or the default SQLite file
    lease = store.run(lambda conn: leases.acquire(conn, "scheduler", "worker-1",
                                                  store.clock.now(), timedelta(seconds=30)))
"""

from __future__ import annotations

from kalends.storage import (
    auth_tables,
    conversation_tables,
    feed_tables,
    identity_tables,
    leases,
    ledger_tables,
    mission_tables,
    node_tables,
    question_tables,
    service_tables,
    task_tables,
    watch_tables,
)
from kalends.storage.engine import DEFAULT_BUSY_TIMEOUT_MS, create_engine_for
from kalends.storage.leases import Lease
from kalends.storage.migrate import current_revision, head_revision, open_store, upgrade
from kalends.storage.schema import metadata
from kalends.storage.unit_of_work import MAX_ATTEMPTS, Store, for_update

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_MS",
    "MAX_ATTEMPTS",
    "Lease",
    "Store",
    "auth_tables",
    "conversation_tables",
    "create_engine_for",
    "feed_tables",
    "current_revision",
    "for_update",
    "head_revision",
    "identity_tables",
    "leases",
    "ledger_tables",
    "metadata",
    "mission_tables",
    "node_tables",
    "open_store",
    "question_tables",
    "service_tables",
    "task_tables",
    "watch_tables",
    "upgrade",
]
