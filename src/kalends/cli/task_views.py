"""How tasks look to a person: a checklist tree, a task's details, its history.

User text is always wrapped in :class:`Text`, never parsed as Rich markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from uuid import UUID

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from kalends.cli.output import console, emit_json
from kalends.cli.session import Session
from kalends.tasks import (
    HistoryEvent,
    Task,
    TaskDetail,
    TaskList,
    TaskStatus,
    TimedValue,
    TreeNode,
)

_PRIORITY_STYLES = {1: "bold red", 2: "yellow", 3: "blue"}


def report_task(s: Session, task: Task, what: str) -> None:
    """A write's result: the task as JSON, or one line with the revision to expect next."""
    if s.json_output:
        emit_json(task.to_json())
        return
    console.print(Text(f"{what}: ").append_text(task_line(task)), soft_wrap=True)
    console.print(Text(f"revision {task.revision}", style="dim"))
    s.local_note()


def due_text(due: object) -> str:
    if isinstance(due, TimedValue):
        return f"{due.local:%Y-%m-%d %H:%M} {due.zone}"
    return str(due) if due is not None else ""


def task_line(task: Task, sections: Mapping[UUID, str] | None = None) -> Text:
    """One line: reference, checkbox, title, priority, due, section, tags."""
    done = task.status is TaskStatus.COMPLETED
    line = Text()
    line.append(task.ref, style="dim")
    line.append(" [x] " if done else " [ ] ", style="green" if done else "")
    line.append(task.title, style="dim" if done else "")
    if task.priority is not None:
        line.append(f"  P{task.priority}", style=_PRIORITY_STYLES.get(task.priority, ""))
    if task.due is not None:
        line.append(f"  due {due_text(task.due)}", style="cyan")
    section = sections.get(task.section_id) if sections and task.section_id else None
    if section is not None:
        line.append(f"  §{section}", style="dim")
    for tag in task.tags:
        line.append(f"  #{tag}", style="magenta")
    if task.trashed:
        line.append("  (trashed)", style="red")
    return line


def checklist_tree(
    task_list: TaskList, nodes: Sequence[TreeNode], sections: Mapping[UUID, str]
) -> Tree:
    label = Text(task_list.name, style="bold")
    label.append(f"  {task_list.status.value}", style="dim")
    tree = Tree(label)
    if not nodes:
        tree.add(Text("no tasks", style="dim"))

    def grow(branch: Tree, node: TreeNode) -> None:
        child = branch.add(task_line(node.task, sections))
        for kid in node.children:
            grow(child, kid)

    for node in nodes:
        grow(tree, node)
    return tree


def task_detail(
    detail: TaskDetail, handles: Mapping[UUID, str], parent_ref: str | None
) -> RenderableType:
    task = detail.task
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()

    def row(name: str, value: str | Text) -> None:
        grid.add_row(name, value if isinstance(value, Text) else Text(value))

    role = f" (you are {detail.list.role.value})" if detail.list.role else ""
    row("revision", Text(str(task.revision), style="bold"))
    row("status", task.status.value + (", in the trash" if task.trashed else ""))
    row("list", f"{detail.list.name}{role}")
    if detail.section:
        row("section", detail.section)
    if parent_ref:
        row("parent", parent_ref)
    if task.tags:
        row("tags", " ".join(f"#{t}" for t in task.tags))
    if task.priority is not None:
        row("priority", str(task.priority))
    if task.planned is not None:
        row("planned", task.planned.isoformat())
    if task.due is not None:
        row("due", due_text(task.due))
    for reminder in task.reminders:
        who = handles.get(reminder.recipient_id, str(reminder.recipient_id))
        row("reminder", f"{reminder.channel.value} {due_text(reminder.time)} → {who}")
    if detail.children:
        row("checklist", f"{detail.children} item(s): kalends task ls {detail.list.name!r}")
    if task.description:
        row("description", task.description)
    for comment in detail.comments:
        author = handles.get(comment.author_id, str(comment.author_id))
        row("comment", f"{author} {comment.created_at:%Y-%m-%d %H:%M}Z: {comment.body}")
    for item in detail.attachments:
        row("attachment", f"{item.name} ({item.media_type}, {item.size} bytes) {item.id}")
    return Group(task_line(task), grid)


def history_table(events: Sequence[HistoryEvent], handles: Mapping[UUID, str]) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("at (UTC)", no_wrap=True)
    table.add_column("actor", no_wrap=True)
    table.add_column("event", no_wrap=True)
    table.add_column("details", overflow="fold")
    for event in events:
        who = handles.get(event.actor_id, "") if event.actor_id else ""
        table.add_row(
            Text(f"{event.at:%Y-%m-%d %H:%M:%S}"),
            Text(who),
            Text(event.kind),
            Text(" ".join(f"{k}={_compact(v)}" for k, v in sorted(event.payload.items()))),
        )
    return table


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
