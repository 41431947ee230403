"""A task's comments and attachments: adding them, and reading an attachment back."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from uuid import UUID

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput, NotFound
from kalends.identity import ActorRef, Role, check_name, parse_uuid, resolve_actor
from kalends.storage.task_tables import (
    attachments,
    blobs,
    comments,
)
from kalends.storage.upsert import insert_missing
from kalends.tasks import history
from kalends.tasks.access import Delegation, task_with_role
from kalends.tasks.history import Event
from kalends.tasks.media import check_media_type
from kalends.tasks.models import (
    Attachment,
    Comment,
)
from kalends.tasks.steps import (
    ServiceBase,
    TaskRef,
    require_live,
)
from kalends.tasks.values import (
    MAX_ATTACHMENT_BYTES,
    MAX_COMMENT_BYTES,
    check_text,
)


class TaskAnnotations(ServiceBase):
    """Comments and attachments of :class:`~kalends.tasks.service.TaskService`."""

    def attachment(self, actor: ActorRef, attachment_id: UUID | str) -> tuple[Attachment, bytes]:
        """An attachment's metadata and bytes. Viewers may read; to anyone else it is
        :class:`NotFound`, as an unknown ID is."""
        as_id = parse_uuid(attachment_id, "attachment")

        def run(conn: Connection) -> tuple[Attachment, bytes]:
            actor_id = resolve_actor(conn, actor)
            unseen = NotFound(f"attachment: no attachment {attachment_id}", field="attachment")
            row = conn.execute(select(attachments).where(attachments.c.id == as_id)).first()
            if row is None:
                raise unseen
            meta = Attachment.from_row(row)
            try:
                task_with_role(conn, actor_id, meta.task_id, Role.VIEWER, write=False)
            except NotFound:
                raise unseen from None
            # The bytes only once the actor may read them.
            data = conn.execute(select(blobs.c.data).where(blobs.c.sha256 == meta.sha256)).one()
            return meta, bytes(data.data)

        return self.store.run(run, write=False)

    def comment(self, actor: ActorRef, task: TaskRef, body: str) -> Comment:
        """Adds a comment (editors only). A comment does not change the task's revision."""
        text = _comment_text(body)

        def run(conn: Connection) -> Comment:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.EDITOR, write=True)
            require_live(conn, row, "task")
            return _add_comment(conn, actor_id, row.id, text, self.store.clock.now())

        return self.store.run(run)

    def comment_delegated(self, delegation: Delegation, task: TaskRef, body: str) -> Comment:
        """:meth:`comment` by a delegate, on a task of its checklist only (the delegation's
        refusal for any other, with nothing written); the delegate is the author."""
        text = _comment_text(body)

        def run(conn: Connection) -> Comment:
            row, now = self._delegated(conn, delegation, task, None)
            return _add_comment(conn, delegation.actor_id, row.id, text, now)

        return self.store.run(run)

    def attach(
        self, actor: ActorRef, task: TaskRef, name: str, media_type: str, data: bytes
    ) -> Attachment:
        """Stores bytes (content-addressed, in the database) and attaches them to the task.

        ``media_type`` must be one as :mod:`kalends.tasks.media` defines it, exactly as
        given (a download sends it back as a header): :class:`InvalidInput` otherwise.
        """
        checked_name = check_name(name, "name", 255)
        checked_type = check_media_type(media_type)
        if not isinstance(data, bytes | bytearray):
            raise InvalidInput("data: attachment content is bytes", field="data")
        if len(data) > MAX_ATTACHMENT_BYTES:
            raise InvalidInput(
                f"data: at most {MAX_ATTACHMENT_BYTES} bytes, got {len(data)}", field="data"
            )
        digest = hashlib.sha256(data).hexdigest()

        def run(conn: Connection) -> Attachment:
            actor_id = resolve_actor(conn, actor)
            row = task_with_role(conn, actor_id, task, Role.EDITOR, write=True)
            require_live(conn, row, "task")
            now = self.store.clock.now()
            known = conn.execute(select(blobs.c.sha256).where(blobs.c.sha256 == digest)).first()
            if known is None:
                row_data = {"sha256": digest, "size": len(data), "data": bytes(data)}
                insert_missing(conn, blobs, [row_data], ("sha256",))
            made = Attachment(
                id=uuid.uuid4(),
                task_id=row.id,
                author_id=actor_id,
                name=checked_name,
                media_type=checked_type,
                size=len(data),
                sha256=digest,
                created_at=now,
            )
            conn.execute(
                insert(attachments).values(
                    id=made.id,
                    task_id=row.id,
                    author_id=actor_id,
                    name=checked_name,
                    media_type=checked_type,
                    size=len(data),
                    sha256=digest,
                    created_at=now,
                )
            )
            history.record(
                conn,
                actor_id,
                now,
                [
                    Event(
                        row.id,
                        "attached",
                        {
                            "attachment_id": str(made.id),
                            "name": checked_name,
                            "size": len(data),
                            "sha256": digest,
                        },
                    )
                ],
            )
            return made

        return self.store.run(run)


def _comment_text(body: str) -> str:
    text = check_text(body, "body", MAX_COMMENT_BYTES)
    if not text.strip():
        raise InvalidInput("body: a comment cannot be blank", field="body")
    return text


def _add_comment(
    conn: Connection, actor_id: UUID, task_id: UUID, text: str, now: datetime
) -> Comment:
    made = Comment(id=uuid.uuid4(), task_id=task_id, author_id=actor_id, body=text, created_at=now)
    conn.execute(
        insert(comments).values(
            id=made.id, task_id=task_id, author_id=actor_id, body=text, created_at=now
        )
    )
    history.record(conn, actor_id, now, [Event(task_id, "commented", {"comment_id": str(made.id)})])
    return made
