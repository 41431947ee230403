"""What a human Play asks of service supervision, and when.

Seed 002: "Human Play also calls the shared service-supervision default-ON path";
"Supervision preparation precedes the signed control proof". kalends' missions know
supervision only through :class:`SupervisionHook`; the composition root
(:mod:`kalends.bootstrap`) wires the real one, and a service built without one uses
:class:`NoSupervision`. Create, Configure, Pause, Stop and Delete never call it.

The hook runs before the Play's transaction, and only for a Play that will apply: one
read (:func:`play_will_apply`) tells, so a repeated, stale, refused or unseen Play
prepares nothing. What the hook answers rides on the applied Play's outcome as
``supervision``; the hook never refuses a Play.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.errors import KalendsError, NotFound
from kalends.identity import Role, require_role, resolve_actor
from kalends.missions import repository
from kalends.missions.agents import refuse_missing_agent
from kalends.missions.condition_check import cycle_of
from kalends.missions.controls import Action, refusal
from kalends.missions.document import Phase, check_not_past
from kalends.missions.requests import check_request_id, check_revision
from kalends.missions.schedule_reads import schedule_id_of
from kalends.missions.stored_documents import doc_of

__all__ = ["NoSupervision", "SupervisionHook", "play_will_apply", "prepare_for_play"]


class SupervisionHook(Protocol):
    """Service supervision as a Play sees it."""

    def prepare(self, actor: UUID) -> dict[str, Any] | None:
        """Turn supervision on for a human Play by ``actor`` that is about to apply, unless
        the service-wide preference is explicitly OFF or it is on already. Never raises:
        the answer (``state``, ``message``, ``unit``) says what it did or what failed;
        ``None`` when there is nothing to say."""
        ...


class NoSupervision:
    """The hook of a service wired without supervision (the Python API): nothing to say."""

    def prepare(self, actor: UUID) -> dict[str, Any] | None:
        return None


def play_will_apply(
    conn: Connection,
    actor: UUID | str,
    schedule_id: UUID,
    request_id: str,
    expected: int,
    now: datetime,
    *,
    workspace: UUID | None = None,
) -> UUID | None:
    """The actor's ID when a Play of ``schedule_id`` at revision ``expected`` under
    ``request_id`` would apply now (with ``workspace``: to a schedule of that workspace);
    ``None`` when it would be refused or is a repeat. A read only: the Play's own
    transaction decides again."""
    actor_id = resolve_actor(conn, actor)
    read = repository.read_for_control(conn, actor_id, schedule_id, request_id)
    if read is None or read.repeat is not None:
        return None
    row = read.schedule
    require_role(row.role, Role.EDITOR, scope="workspace", unseen=NotFound("schedule"))
    if workspace is not None and row.workspace_id != workspace:
        return None
    if row.phase == Phase.TOMBSTONE or row.revision != expected:
        return None
    doc = doc_of(row)
    if refusal(Action.PLAY, doc) is not None or cycle_of(conn, row.id, doc.config.condition):
        return None
    if doc.body.first_play_at is None:
        check_not_past(doc.config, now)
    if refuse_missing_agent(doc.config.profile) is not None:
        return None
    return actor_id


def prepare_for_play(
    hook: SupervisionHook,
    run: Callable[[Callable[[Connection], UUID | None]], UUID | None],
    actor: UUID | str,
    schedule: UUID | str,
    action: Action | str,
    request: Mapping[str, Any],
    now: datetime,
) -> dict[str, Any] | None:
    """``hook``'s answer when ``action`` is a Play that will apply (``request`` holds its
    ``request_id``, ``expected_revision`` and ``workspace``; ``run`` reads in one
    transaction), else ``None``. Call it outside any transaction. Input that does not
    parse, or a Play that cannot be read ahead, prepares nothing: the control's own
    transaction answers with its error."""
    if isinstance(hook, NoSupervision):
        return None
    try:
        if Action(action) is not Action.PLAY:
            return None
        request_id = check_request_id(request["request_id"])
        expected = check_revision(request["expected_revision"])
        schedule_id = schedule_id_of(schedule)
        workspace = request.get("workspace")
        actor_id = run(
            lambda conn: play_will_apply(
                conn, actor, schedule_id, request_id, expected, now, workspace=workspace
            )
        )
    except (KalendsError, ValueError, KeyError, TypeError):
        return None
    if actor_id is None:
        return None
    return hook.prepare(actor_id)
