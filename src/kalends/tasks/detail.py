"""A task's detail: the task with its list, section, comments and attachments."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import BindParameter

from kalends.identity import Role
from kalends.storage.prepared import Prepared
from kalends.storage.task_tables import (
    attachments,
    comments,
    tags,
    task_reminders,
    task_tags,
)
from kalends.tasks.loading import tasks_from
from kalends.tasks.models import (
    Attachment,
    Comment,
    TaskDetail,
    TaskList,
)
from kalends.tasks.task_rows import TaskDetailRow
from kalends.tasks.values import ListStatus

# The detail's statements, built once and run on the driver (a task detail is the API's
# hottest read).
_TASK_ID: BindParameter[Any] = bindparam("task_id")
_TAGS_OF_TASK = Prepared(
    select(task_tags.c.task_id, tags.c.name)
    .join(tags, tags.c.id == task_tags.c.tag_id)
    .where(task_tags.c.task_id == _TASK_ID)
    .order_by(tags.c.name)
)
_REMINDERS_OF_TASK = Prepared(
    select(task_reminders)
    .where(task_reminders.c.task_id == _TASK_ID)
    .order_by(task_reminders.c.position)
)
_COMMENTS_OF = Prepared(
    select(comments).where(comments.c.task_id == _TASK_ID).order_by(comments.c.created_at)
)
_ATTACHMENTS_OF = Prepared(
    select(attachments).where(attachments.c.task_id == _TASK_ID).order_by(attachments.c.created_at)
)


def read_detail(conn: Connection, row: TaskDetailRow) -> TaskDetail:
    """The detail of the task ``row``, read by ``task_with_role(..., detail=True)`` (which
    brings the list's revision, the section's name and the count of live children)."""
    key = {"task_id": row.id}
    task = tasks_from([row], _TAGS_OF_TASK.rows(conn, key), _REMINDERS_OF_TASK.rows(conn, key))[0]
    found_comments = tuple(Comment.from_row(c) for c in _COMMENTS_OF.rows(conn, key))
    found_attachments = tuple(Attachment.from_row(a) for a in _ATTACHMENTS_OF.rows(conn, key))
    return TaskDetail(
        task=task,
        list=TaskList(
            id=row.list_id,
            name=row.list_name,
            status=ListStatus(row.list_status),
            revision=row.list_revision,
            role=Role(row.role) if row.role else None,
        ),
        section=row.section_name,
        comments=found_comments,
        attachments=found_attachments,
        children=row.live_children,
    )
