"""Worker nodes: the processes that run passages, each with an identity and a heartbeat.

Issue 23 §3: "Each worker node has an identity and a heartbeat; a passage whose node
stopped heartbeating is `uncertain (not-observed)` — never guessed finished — until its
node returns and reconciles, or a person acts." A node is one process running a
scheduler with a process runtime (``kalends worker``, ``kalends serve``). Its identity
lives in ``node.json`` in its runtime directory, created on first use, so a node
restarted on the same directory returns as itself. Its row in ``worker_nodes`` holds its
heartbeat and the beat key that signs its shims' tokens
(:func:`~kalends.missions.runtime.beats.beat_token`). ``kalends node forget`` is the
person acting: it declares a silent node gone, and its unsettled passages end as
``node-lost``.

The database functions work on the caller's connection and take ``now`` from the
caller; only :func:`node_identity` touches files.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kalends.clock import require_aware
from kalends.errors import Conflict, CorruptRecord, InvalidInput, NotFound
from kalends.missions.passage_beats import SILENT_AFTER, unsettled_of
from kalends.missions.runtime.beats import (
    PASSAGE_BEAT,
    beat_token,
    check_beat_token,
    new_beat_key,
)
from kalends.missions.runtime.shim import create_json_exclusive, read_json
from kalends.storage.node_tables import NODE_ID_LENGTH, NODE_NAME_LENGTH, worker_nodes
from kalends.storage.unit_of_work import for_update

__all__ = [
    "IDENTITY_VERSION",
    "NODE_BEAT",
    "NODE_FILE",
    "PASSAGE_BEAT",
    "SILENT_AFTER",
    "NodeAlive",
    "NodeIdentity",
    "NodeView",
    "beat_key",
    "beat_node",
    "beat_token",
    "check_beat_token",
    "check_node_id",
    "forget_node",
    "list_nodes",
    "new_beat_key",
    "node_identity",
    "register_node",
    "stop_node",
]

NODE_BEAT = timedelta(seconds=15)
"""Issue 23 §3: how often a node beats (its heartbeat, like its shims': every 15 s).
:data:`SILENT_AFTER` (three missed beats) is when a node or a passage counts as silent."""
NODE_FILE = "node.json"
IDENTITY_VERSION = 1
_NODE_ID = re.compile(rf"[0-9a-f]{{{NODE_ID_LENGTH}}}")


class NodeAlive(Conflict):
    """The node is alive: only a node that stopped beating can be forgotten."""

    code = "node-alive"


def check_node_id(text: str) -> str:
    """A node ID as typed (32 hex digits, any case, spaces around ignored), or
    :class:`~kalends.errors.InvalidInput`."""
    value = text.strip().lower() if isinstance(text, str) else ""
    if _NODE_ID.fullmatch(value) is None:
        raise InvalidInput(
            f"node: a node ID is {NODE_ID_LENGTH} hex digits (`kalends node ls`), got {text!r:.80}",
            field="node",
        )
    return value


# --- the identity in the runtime directory ---------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeIdentity:
    """Who a node is: its ID, and when that identity was created."""

    node_id: str
    created_at: datetime


def node_identity(root: Path, now: datetime) -> NodeIdentity:
    """The identity of the node whose runtime directory is ``root``: read from its
    ``node.json``, or created there (0600; the directory 0700 if created) stamped ``now``.

    Concurrent first uses agree on one identity (the record is created whole and
    exclusively). A record that does not hold an identity raises
    :class:`~kalends.errors.CorruptRecord`: a node never silently becomes another.
    """
    now = require_aware(now, "now")
    path = root / NODE_FILE
    found = read_json(path)
    if found is None:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        create_json_exclusive(
            path,
            {
                "version": IDENTITY_VERSION,
                "nodeId": secrets.token_hex(NODE_ID_LENGTH // 2),
                "createdAt": now.isoformat(),
            },
        )
        # (this call's record, or the one a concurrent first use created first)
        found = read_json(path)
    return _identity(path, found)


def _identity(path: Path, record: dict[str, Any] | None) -> NodeIdentity:
    node_id = None if record is None else record.get("nodeId")
    created = None if record is None else record.get("createdAt")
    try:
        created_at = datetime.fromisoformat(created) if isinstance(created, str) else None
    except ValueError:
        created_at = None
    if (
        record is None
        or record.get("version") != IDENTITY_VERSION
        or not isinstance(node_id, str)
        or _NODE_ID.fullmatch(node_id) is None
        or created_at is None
        or created_at.tzinfo is None
    ):
        raise CorruptRecord(f"{path} does not hold a node identity")
    return NodeIdentity(node_id=node_id, created_at=require_aware(created_at, "createdAt"))


# --- the node's row ---------------------------------------------------------------------


def register_node(
    conn: Connection, identity: NodeIdentity, *, name: str, runtime_dir: str, now: datetime
) -> str:
    """Records that the node started (or returned) at ``now`` on this host and runtime
    directory; returns its beat key.

    A new node gets a fresh key; a returning one keeps its key (its passages' shims still
    hold tokens under it), and its stop and any ``forget`` are cleared: it beats again.
    Passages already settled as ``node-lost`` stay settled; the others are its to
    observe again.
    """
    now = require_aware(now, "now")
    node_id = check_node_id(identity.node_id)
    label = name.strip()[:NODE_NAME_LENGTH] or "unknown"
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(
        dialect.insert(worker_nodes)
        .values(
            node_id=node_id,
            name=label,
            runtime_dir=runtime_dir,
            beat_key=new_beat_key(),
            started_at=now,
            beat_at=now,
        )
        .on_conflict_do_nothing(index_elements=["node_id"])
    )
    conn.execute(
        update(worker_nodes)
        .where(worker_nodes.c.node_id == node_id)
        .values(
            name=label,
            runtime_dir=runtime_dir,
            started_at=now,
            beat_at=now,
            stopped_at=None,
            forgotten_at=None,
        )
    )
    key = conn.execute(
        select(worker_nodes.c.beat_key).where(worker_nodes.c.node_id == node_id)
    ).scalar_one()
    return str(key)


def _touch(conn: Connection, node_id: str, **values: datetime) -> None:
    done = conn.execute(
        update(worker_nodes).where(worker_nodes.c.node_id == node_id).values(**values)
    )
    if done.rowcount != 1:
        raise NotFound(f"no worker node {node_id!r}")


def beat_node(conn: Connection, node_id: str, now: datetime) -> None:
    """The node's heartbeat at ``now``; :class:`~kalends.errors.NotFound` for an
    unregistered node."""
    _touch(conn, node_id, beat_at=require_aware(now, "now"))


def stop_node(conn: Connection, node_id: str, now: datetime) -> None:
    """Records the node's graceful stop at ``now`` (its passages' shims may still report
    over HTTP); :class:`~kalends.errors.NotFound` for an unregistered node."""
    now = require_aware(now, "now")
    _touch(conn, node_id, beat_at=now, stopped_at=now)


def beat_key(conn: Connection, node_id: str) -> str | None:
    """The key the node's shims' tokens are checked with; ``None`` for an unknown node and
    for a forgotten one (its shims' reports are refused until it returns)."""
    found = conn.execute(
        select(worker_nodes.c.beat_key).where(
            worker_nodes.c.node_id == node_id, worker_nodes.c.forgotten_at.is_(None)
        )
    ).scalar_one_or_none()
    return None if found is None else str(found)


# --- what a person sees and does -----------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """A node as ``kalends node ls`` shows it. ``alive``: it beat within
    :data:`SILENT_AFTER` and neither stopped nor was forgotten. ``unsettled``: how many
    passages it admitted have no settled observation recorded."""

    node_id: str
    name: str
    runtime_dir: str
    started_at: datetime
    beat_at: datetime
    stopped_at: datetime | None
    forgotten_at: datetime | None
    alive: bool
    unsettled: int


def _alive(row: Row[Any], now: datetime) -> bool:
    return row.stopped_at is None and row.forgotten_at is None and now - row.beat_at <= SILENT_AFTER


def list_nodes(conn: Connection, now: datetime) -> list[NodeView]:
    """Every node ever registered, by name then ID, as of ``now``."""
    now = require_aware(now, "now")
    rows = conn.execute(
        select(worker_nodes).order_by(worker_nodes.c.name, worker_nodes.c.node_id)
    ).all()
    return [
        NodeView(
            node_id=row.node_id,
            name=row.name,
            runtime_dir=row.runtime_dir,
            started_at=row.started_at,
            beat_at=row.beat_at,
            stopped_at=row.stopped_at,
            forgotten_at=row.forgotten_at,
            alive=_alive(row, now),
            unsettled=len(unsettled_of(conn, row.node_id)),
        )
        for row in rows
    ]


def forget_node(conn: Connection, node_id: str, now: datetime) -> int:
    """Declares the node gone at ``now``: its unsettled passages read as ended with error
    ``node-lost`` (:func:`~kalends.missions.passage_beats.remote_observation`); returns how
    many there are. Forgetting a forgotten node keeps the first time.

    Refuses, writing nothing: an ID not of a node's form
    (:class:`~kalends.errors.InvalidInput`), an unknown node
    (:class:`~kalends.errors.NotFound`), and a node alive now (:class:`NodeAlive`).
    """
    now = require_aware(now, "now")
    node_id = check_node_id(node_id)
    row = conn.execute(
        for_update(select(worker_nodes).where(worker_nodes.c.node_id == node_id))
    ).one_or_none()
    if row is None:
        raise NotFound(f"no worker node {node_id!r} (`kalends node ls` lists them)")
    if row.stopped_at is None and now - row.beat_at <= SILENT_AFTER:
        silent = max(0, int((now - row.beat_at).total_seconds()))
        raise NodeAlive(
            f"node {node_id} ({row.name}) is alive: it beat {silent} s ago; only a node "
            f"silent for {int(SILENT_AFTER.total_seconds())} s or stopped can be forgotten",
            node=node_id,
            beat_at=row.beat_at,
        )
    conn.execute(
        update(worker_nodes)
        .where(worker_nodes.c.node_id == node_id, worker_nodes.c.forgotten_at.is_(None))
        .values(forgotten_at=now)
    )
    return len(unsettled_of(conn, node_id))
