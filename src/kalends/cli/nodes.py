"""``kalends node ls|forget``: the worker nodes that run passages, on the local database.

A node is one ``kalends worker`` or ``kalends serve`` process with a process runtime; it
beats every 15 s (issue 23 §3). A passage whose node went silent is uncertain
(not-observed) until the node returns or a person forgets it: ``forget`` declares a
silent or stopped node gone, and its unsettled passages then end as ``node-lost``.
Bad input exits 2 before the database is opened; a refusal (an unknown node, a live one)
exits 1 with nothing written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.text import Text
from sqlalchemy.engine import Connection

from kalends.bootstrap import open_store
from kalends.cli.output import console, emit_json
from kalends.cli.session import DatabaseOption, JsonOption, group_help, report_error
from kalends.cli.tables import Cell, Column, Fitted, WideOption, table
from kalends.errors import KalendsError
from kalends.missions.nodes import (
    NODE_BEAT,
    SILENT_AFTER,
    NodeView,
    check_node_id,
    forget_node,
    list_nodes,
)

__all__ = ["node_app", "node_json"]

_SILENT_SECONDS = int(SILENT_AFTER.total_seconds())

node_app = typer.Typer(
    help=group_help(
        "Worker nodes (`kalends worker`, `serve`): list them, forget a gone one.",
        f"Each node beats every {int(NODE_BEAT.total_seconds())} s; one silent for "
        f"{_SILENT_SECONDS} s leaves its running passages uncertain (not-observed) until "
        "it returns, or until `node forget` declares it gone.",
        "Both commands work on the database itself (--database). Exit codes: 0 done; "
        "1 refused (unknown node, live node); 2 bad input. On 1 and 2 nothing is written.",
    ),
    no_args_is_help=True,
)

NodeArgument = Annotated[
    str, typer.Argument(metavar="NODE", help="The node's ID, 32 hex digits (`kalends node ls`).")
]


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def state_of(view: NodeView) -> str:
    """How ``node ls`` names a node's state: forgotten, stopped, alive or silent."""
    if view.forgotten_at is not None:
        return "forgotten"
    if view.stopped_at is not None:
        return "stopped"
    return "alive" if view.alive else "silent"


def node_json(view: NodeView) -> dict[str, Any]:
    """One node as ``node ls --json`` prints it."""
    return {
        "nodeId": view.node_id,
        "name": view.name,
        "runtimeDir": view.runtime_dir,
        "state": state_of(view),
        "alive": view.alive,
        "startedAt": _iso(view.started_at),
        "beatAt": _iso(view.beat_at),
        "stoppedAt": _iso(view.stopped_at),
        "forgottenAt": _iso(view.forgotten_at),
        "unsettled": view.unsettled,
    }


def _ago(then: datetime, now: datetime) -> str:
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


_LISTING = (
    Column("node"),
    Column("name", wrap=True),
    Column("state"),
    Column("last beat"),
    Column("unsettled", justify="right"),
    Column("runtime directory", wrap=True),
)
_LISTING_COMPACT = (Column("node", whole=True), Column("name"), Column("state"))


@node_app.command("ls")
def ls_command(
    database: DatabaseOption = None, wide: WideOption = False, json_output: JsonOption = False
) -> None:
    """List every node: its state, last beat and passages not settled yet.

    State: alive (beat within the last 45 s), silent, stopped (ended cleanly) or
    forgotten. Unsettled: passages the node admitted whose end is not recorded.
    At 80 columns the runtime directory is left out; --wide shows every column.
    With --json: {"now", "items": [{"nodeId", "name", "runtimeDir", "state",
    "alive", "startedAt", "beatAt", "stoppedAt", "forgottenAt", "unsettled"}]}.
    """
    try:
        store = open_store(database)
        try:
            now = store.clock.now()
            views = store.run(lambda conn: list_nodes(conn, now), write=False)
        finally:
            store.close()
    except KalendsError as exc:
        report_error(exc, json_output)
    if json_output:
        emit_json({"now": _iso(now), "items": [node_json(v) for v in views]})
        return
    if not views:
        console.print(Text("no worker nodes yet", style="dim"), soft_wrap=True)
        return
    full: list[list[Cell]] = []
    compact: list[list[Cell]] = []
    for v in views:
        state, beat = state_of(v), _ago(v.beat_at, now)
        full.append([v.node_id, v.name, state, beat, str(v.unsettled), v.runtime_dir])
        compact.append(
            [v.node_id, v.name, f"{state}, beat {beat}\n{v.unsettled} unsettled"],
        )
    small = table(
        _LISTING_COMPACT, compact, compact=True, caption="--wide: runtime directories too"
    )
    console.print(Fitted.of(_LISTING, full, small, wide=wide), soft_wrap=True)


@node_app.command("forget")
def forget_command(
    node: NodeArgument, database: DatabaseOption = None, json_output: JsonOption = False
) -> None:
    """Declare a silent node gone: its unsettled passages end node-lost.

    Refused for a node that beat within the last 45 s and did not stop. A
    forgotten node that starts again beats as before; its passages that ended
    node-lost stay ended. With --json: {"nodeId", "name", "forgottenAt",
    "unsettled"}.
    """
    try:
        node_id = check_node_id(node)
        store = open_store(database)
        try:
            now = store.clock.now()

            def forget(conn: Connection) -> tuple[int, NodeView]:
                count = forget_node(conn, node_id, now)
                [view] = [v for v in list_nodes(conn, now) if v.node_id == node_id]
                return count, view

            unsettled, view = store.run(forget)
        finally:
            store.close()
    except KalendsError as exc:
        report_error(exc, json_output)
    if json_output:
        emit_json(
            {
                "nodeId": view.node_id,
                "name": view.name,
                "forgottenAt": _iso(view.forgotten_at),
                "unsettled": unsettled,
            }
        )
        return
    passages = "passage" if unsettled == 1 else "passages"
    console.print(
        Text(
            f"forgot node {view.node_id} ({view.name}): {unsettled} unsettled {passages} "
            "now end node-lost"
        ),
        soft_wrap=True,
    )
