"""How tasks look to a person: a checklist tree, a task's details, its history.

User text is always wrapped in :class:`Text`, never parsed as Rich markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from kalends.cli.output import console, emit_json
from kalends.cli.session import Reporter
from kalends.tasks import (
    HistoryEvent,
    Task,
    TaskDetail,
    TaskList,
    TaskStatus,
    TimedValue,
    TreeNode,
)
from kalends.tasks.series import SeriesStatus, SeriesView
from kalends.tasks.series_rules import SeriesKind, SeriesRule

_PRIORITY_STYLES = {1: "bold red", 2: "yellow", 3: "blue"}
WEEKDAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def report_task(s: Reporter, task: Task, what: str) -> None:
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
    """One line: reference, checkbox, title, priority, due, section, tags.

    The checkbox is ``[ ]`` open, ``[x]`` completed, ``[-]`` settled by a skip (which
    the line also says in words).
    """
    done = task.status is TaskStatus.COMPLETED
    line = Text()
    line.append(task.ref, style="dim")
    if task.skipped:
        line.append(" [-] ", style="yellow")
    else:
        line.append(" [x] " if done else " [ ] ", style="green" if done else "")
    line.append(task.title, style="dim" if done else "")
    if task.skipped:
        line.append("  (skipped)", style="yellow")
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


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def rule_text(view: SeriesView) -> str:
    """The rule in words, with its wall time and zone: ``every 2 days at 09:00 Europe/Paris``."""
    rule: SeriesRule = view.rule
    match rule.kind:
        case SeriesKind.DAILY:
            text = "every day" if rule.interval_days == 1 else f"every {_days(rule.interval_days)}"
        case SeriesKind.WEEKDAYS:
            text = "every " + ", ".join(WEEKDAY_NAMES[d - 1].title() for d in rule.days)
        case SeriesKind.COMPLETION_RELATIVE:
            offset = rule.offset_days
            text = (
                f"{_days(offset)} after each completion"
                if offset
                else "again on the day of each completion"
            )
    if view.local_time is not None:
        wall = view.local_time.removesuffix(":00") if len(view.local_time) == 8 else view.local_time
        text += f" at {wall}"
    if view.zone is not None:
        text += f" {view.zone}"
    return text


def next_date_text(view: SeriesView) -> str:
    if view.next_date is not None:
        return view.next_date.isoformat()
    live = (SeriesStatus.ACTIVE, SeriesStatus.PAUSED)
    if view.status in live and view.rule.kind is SeriesKind.COMPLETION_RELATIVE:
        return "counted from the next completion"
    return "none"


def task_series_json(view: SeriesView, occurrence: int | None) -> dict[str, Any]:
    """The ``series`` object of ``task show --json``: the series as seen from one of its tasks."""
    whole = view.to_json()
    keys = ("id", "rule", "time", "zone", "status", "revision", "next_date")
    return {
        **{k: whole[k] for k in keys},
        "occurrence": occurrence,
        "outstanding_ordinal": view.outstanding_ordinal,
    }


def task_detail(
    detail: TaskDetail,
    handles: Mapping[UUID, str],
    parent_ref: str | None,
    series: SeriesView | None = None,
) -> RenderableType:
    task = detail.task
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()

    def row(name: str, value: str | Text) -> None:
        grid.add_row(name, value if isinstance(value, Text) else Text(value))

    role = f" (you are {detail.list.role.value})" if detail.list.role else ""
    row("revision", Text(str(task.revision), style="bold"))
    row("status", task.shown_status + (", in the trash" if task.trashed else ""))
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
    if series is not None:
        row("series", f"{rule_text(series)}, {series.status} (series revision {series.revision})")
        row("series id", str(series.id))
        outstanding = series.outstanding_ordinal
        now = "none outstanding" if outstanding is None else f"outstanding: {outstanding}"
        row("occurrence", f"{task.occurrence} ({now})")
        row("next date", next_date_text(series))
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


def history_lines(events: Sequence[HistoryEvent], handles: Mapping[UUID, str]) -> Group:
    """The history as lines of text, oldest first: each event's instant (UTC), who, what
    and, indented beneath, its details in words (a due value or a reminder as its wall
    time and zone, an actor by handle) rather than as JSON."""
    lines: list[Text] = []
    for event in events:
        head = Text(f"{event.at:%Y-%m-%d %H:%M:%S} UTC", style="dim")
        who = handles.get(event.actor_id, str(event.actor_id)) if event.actor_id else ""
        if who:
            head.append(f"  {who}")
        head.append(f"  {event.kind}", style="bold")
        if event.occurrence is not None:
            head.append(f"  (occurrence #{event.occurrence})", style="dim")
        lines.append(head)
        for key, value in event.payload.items():
            for said in payload_lines(key, value, handles):
                lines.append(Text(f"    {said}"))
    if not lines:
        lines.append(Text("no history", style="dim"))
    return Group(*lines)


def payload_lines(key: str, value: object, handles: Mapping[UUID, str]) -> list[str]:
    """One payload entry as lines ``name: value``; a list of reminders a line each."""
    name = key.replace("_", " ")
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        singular = name.removesuffix("s")
        return [f"{singular}: {_words(v, handles)}" for v in value]
    if isinstance(value, list) and not value:
        return [f"{name}: none"]
    return [f"{name}: {_words(value, handles)}"]


def _words(value: object, handles: Mapping[UUID, str]) -> str:
    """A payload value in words: text as is, a wall time with its zone, a reminder as
    ``email 2040-01-02 08:00 Europe/Paris to alice``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if "local" in value and "zone" in value:
            wall = str(value["local"]).replace("T", " ")
            wall = wall.removesuffix(":00") if len(wall) == 19 else wall
            said = f"{wall} {value['zone']}"
            if "channel" in value:
                said = f"{value['channel']} {said}"
            recipient = value.get("recipient_id")
            if recipient is not None:
                said += f" to {_handle(recipient, handles)}"
            return said
        return ", ".join(f"{k.replace('_', ' ')} {_words(v, handles)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_words(v, handles) for v in value)
    return str(value)


def _handle(actor: object, handles: Mapping[UUID, str]) -> str:
    try:
        return handles.get(UUID(str(actor)), str(actor))
    except ValueError:
        return str(actor)
