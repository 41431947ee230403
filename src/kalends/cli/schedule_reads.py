"""``kalends schedule ls``, ``show`` and ``preview``: a workspace's schedules page by
page, one schedule's detail, and its next slots."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli.output import console, emit_json
from kalends.cli.passages import RuntimeDirOption, runtime_root
from kalends.cli.remote import Remote
from kalends.cli.schedule_fields import whole
from kalends.cli.schedule_options import ScheduleArgument
from kalends.cli.schedule_views import detail_view, list_view
from kalends.cli.session import Session
from kalends.cli.tables import WideOption
from kalends.cli.workspaces import WorkspaceArgument
from kalends.missions.limits import MAX_PAGE
from kalends.missions.runtime.passages import passage_log_tail

__all__ = ["ls_command", "preview_command", "show_command"]

_DST_LEGEND = {
    "shifted": "shifted: the wall time does not exist that day (DST gap); moved past the gap",
    "earlier-of-two": "earlier-of-two: the wall time occurs twice that day; the earlier is taken",
}


def ls_command(
    s: Session | Remote,
    workspace: WorkspaceArgument,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="ID",
            help="Start after this schedule ID (the cursor).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit", metavar="N", help=f"At most N per page (1-{MAX_PAGE}).", show_default=False
        ),
    ] = None,
    every_page: Annotated[
        bool, typer.Option("--all", help="Follow the cursor through every page.")
    ] = False,
    wide: WideOption = False,
) -> None:
    """Show a workspace's schedules in ID order, deleted ones as tombstones.

    State is what really holds: running, paused, stopped, interrupted (with why),
    finished (nothing left to launch: one-shot done, quota used up, until or within
    reached), deleting, deleted. A page holds at most eight; `--after ID` continues where
    one stopped. At 80 columns the title, state and next slot stack over the ID, state
    reason and zone; --wide shows every column. With --json: {"items": [...],
    "nextAfter": ID or null}.
    """
    size = MAX_PAGE if limit is None else whole(limit, "limit")
    schedules, acting = s.schedules, s.actor

    def page(cursor: str | None) -> dict[str, Any]:
        return schedules.page(acting, workspace, after=cursor, limit=size).to_json()

    items, next_after = s.read_together(lambda: _pages(page, after, every_page))
    if s.json_output:
        emit_json({"items": items, "nextAfter": next_after})
        return
    if not items:
        console.print(Text("no schedules", style="dim"))
    else:
        console.print(list_view(items, wide=wide), soft_wrap=True)
    if next_after is not None:
        console.print(
            Text(f"more: kalends schedule ls {workspace} --after {next_after}", style="dim"),
            soft_wrap=True,
        )


def _pages(
    page: Callable[[str | None], dict[str, Any]], after: str | None, every_page: bool
) -> tuple[list[dict[str, Any]], str | None]:
    """The items of the page after ``after`` (of every page, with ``every_page``), and the
    cursor of the next page."""
    items: list[dict[str, Any]] = []
    cursor = after
    while True:
        found = page(cursor)
        items.extend(found["items"])
        cursor = found["nextAfter"]
        if not every_page or cursor is None:
            return items, cursor


def show_command(
    s: Session | Remote,
    schedule: ScheduleArgument,
    runtime_dir: RuntimeDirOption = None,
    wide: WideOption = False,
) -> None:
    """Show a schedule: its state, next slot, pending passage, history and actions.

    The state is what really holds: finished, with the bound that ended it, when nothing
    is left to launch; Interrupted when no scheduler holds one with work left. Also the
    last error, the next slot in its policy's zone, counters, quota, the pending passage
    with the end of its output, the history, the available actions and why it is
    blocked. Never shows env values. At 80 columns the history stacks the slot over the
    settlement and the passage ID over its summary; --wide shows every column.

    The output is read from the runtime directory (--runtime-dir, KALENDS_RUNTIME_DIR or
    the default of `kalends worker`) when the passage ran on this machine; in server mode
    the server adds the output its own runtime holds; a passage of a worker node
    elsewhere shows the output its node or shim last recorded. With --json: the detail
    projection, with "logTail" under "pending" when the output was read.
    """
    root = None if s.server is not None else runtime_root(runtime_dir)
    doc = s.schedules.detail(s.actor, schedule)
    pending = doc.get("pending")
    if root is not None and isinstance(pending, dict) and isinstance(pending.get("sessionId"), str):
        tail = passage_log_tail(root, pending["sessionId"])
        if tail is not None:
            pending["logTail"] = tail
    if s.json_output:
        emit_json(doc)
        return
    console.print(detail_view(doc, wide=wide), soft_wrap=True)


def preview_command(
    s: Session | Remote,
    schedule: ScheduleArgument,
    count: Annotated[
        str | None,
        typer.Option(
            "--count",
            "-n",
            metavar="N",
            help="How many slots (1-100, default 5).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """The next slots under the policy, end bounds and quota, DST-affected ones marked.

    Before the first Play: as if Play happened now.
    """
    n = 5 if count is None else whole(count, "count")
    schedules, acting = s.schedules, s.actor

    def read() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        slots = schedules.preview(acting, schedule, n)
        return slots, schedules.detail(acting, schedule)

    slots, doc = s.read_together(read)
    if s.json_output:
        emit_json(slots)
        return
    if not slots:
        console.print(Text("no slot is left", style="dim"))
        return
    before = "" if doc.get("firstPlayAt") else " (not played yet: as if Play happened now)"
    if doc.get("sentence"):
        console.print(Text(str(doc["sentence"])), soft_wrap=True)
    table = Table(
        title=f"next {len(slots)} slot(s) of {doc['title']!r}{before}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("#", "local time", "zone", "UTC", "DST"):
        table.add_column(column, no_wrap=True, justify="right" if column == "#" else "left")
    for i, slot in enumerate(slots, 1):
        local = datetime.fromisoformat(slot["local"]).strftime("%Y-%m-%d %H:%M:%S %a")
        mark = f"* {slot['dst']}" if slot.get("dst") else ""
        table.add_row(str(i), local, slot["zone"], slot["at"], mark)
    console.print(table)
    for note in sorted({slot["dst"] for slot in slots if slot.get("dst")}):
        console.print(Text(f"  * {_DST_LEGEND.get(note, note)}", style="dim"), soft_wrap=True)
