"""What a configuration's source condition may name, checked when a caller gives it.

The condition's form is checked by :func:`~kalends.missions.config_condition.parse_condition`
alone; what it names needs the workspace: its schedules and its directory. A condition
that names a schedule of another workspace, a deleted one, itself, a recurring one where
only a one-shot can complete, or a path outside the workspace could never be read, so it
is refused when it is given (a clear error on the field, nothing written) rather than
stored to block every later slot. So is a conversation of another workspace, or of one of
the schedule's own passages. A ``schedule-succeeded`` chain that would come back to
its own schedule is refused too; edits made in another order can still close one, so
Play checks the chain again (:func:`cycle_of`).

Storage still loads whatever it holds: these checks run only on a condition given now.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.errors import InvalidInput
from kalends.identity import parse_uuid
from kalends.missions.config import Config, load_config
from kalends.missions.config_condition import Condition
from kalends.missions.config_fields import fail
from kalends.missions.document import Phase
from kalends.missions.sources import BlockReason, Budget, SourceBlocked, read_branch
from kalends.missions.sources.conversations import check_followed
from kalends.storage.mission_tables import schedules, workspaces

__all__ = ["check_condition", "cycle_of"]

_MISSION = "condition.missionId"
_FOLLOWING = ("schedule-succeeded", "mission-completed")


def check_condition(
    conn: Connection,
    config: Config,
    *,
    workspace_id: UUID,
    schedule_id: UUID | None,
    now: datetime,
) -> None:
    """Refuse ``config``'s condition (:class:`InvalidInput` on the field it names) when what
    it names cannot be read from ``schedule_id``'s workspace (``None`` for a schedule not
    created yet); nothing is written. A ``git-branch`` branch must exist (read with git
    under the source read budget, at ``now``)."""
    condition = config.condition
    if condition is None:
        return
    spec = dict(condition.spec)
    if condition.kind in ("schedule-succeeded", "mission-completed"):
        _check_mission(conn, condition, str(spec["missionId"]), workspace_id, schedule_id)
    elif condition.kind == "git-branch":
        root = _workspace_root(conn, workspace_id)
        where = _inside(root, str(spec["path"]), "condition.path")
        if not where.is_dir():
            raise fail("condition.path", f"{spec['path']!r} is not a directory of the workspace")
        if not _is_repository(where):
            raise fail("condition.path", f"{spec['path']!r} is not a git repository")
        found = read_branch(str(spec["branch"]), str(spec["path"]), root, Budget.start(), at=now)
        if isinstance(found, SourceBlocked):
            missing = found.reason is BlockReason.SOURCE_MISSING and "branch" in found.detail
            raise fail("condition.branch" if missing else "condition.path", found.detail)
    elif condition.kind == "conversation":
        check_followed(
            conn, spec["conversationIds"], workspace_id=workspace_id, schedule_id=schedule_id
        )
    elif condition.kind == "files":
        root = _workspace_root(conn, workspace_id)
        for i, path in enumerate(spec["paths"]):
            # A missing file is a state the condition observes, so only the place is checked.
            _inside(root, str(path), f"condition.paths[{i}]")


def cycle_of(conn: Connection, schedule_id: UUID, condition: Condition | None) -> bool:
    """Whether ``schedule_id``, with ``condition``, closes a chain of ``schedule-succeeded``
    or ``mission-completed`` conditions back to itself (each link waits on the next's
    success, so a loop would never launch). The walk follows stored documents of any state; a chain
    that loops elsewhere, or leads to a missing or unreadable document, ends the walk."""
    seen: set[UUID] = set()
    while condition is not None and condition.kind in _FOLLOWING:
        target = parse_uuid(dict(condition.spec)["missionId"], _MISSION)
        if target is None or target in seen:
            return False
        if target == schedule_id:
            return True
        seen.add(target)
        text = conn.execute(select(schedules.c.config).where(schedules.c.id == target)).scalar()
        if text is None:
            return False
        try:
            condition = load_config(text).condition
        except (ValueError, KeyError, TypeError):
            return False
    return False


def _check_mission(
    conn: Connection,
    condition: Condition,
    mission: str,
    workspace_id: UUID,
    schedule_id: UUID | None,
) -> None:
    target = parse_uuid(mission, _MISSION)
    if target is None:
        raise fail(_MISSION, f"not a mission ID: {mission!r}")
    if target == schedule_id:
        raise fail(_MISSION, "a schedule cannot be conditioned on itself")
    row = conn.execute(
        select(schedules.c.workspace_id, schedules.c.phase, schedules.c.config).where(
            schedules.c.id == target
        )
    ).first()
    # Another workspace's schedule reads as a missing one: its existence is not this
    # caller's to learn.
    if row is None or row.workspace_id != workspace_id or row.phase != Phase.LIVE.value:
        raise fail(_MISSION, f"no schedule {target} in this workspace")
    try:
        named = load_config(row.config)
    except (ValueError, KeyError, TypeError):
        raise fail(_MISSION, f"schedule {target}'s configuration cannot be read") from None
    if condition.kind == "mission-completed" and not named.one_shot:
        raise fail(
            _MISSION,
            f"schedule {target} is recurring ({named.policy.kind}); a mission-completed "
            "condition names a one-shot schedule (immediate, at or after)",
        )
    if schedule_id is not None and cycle_of(conn, schedule_id, condition):
        raise fail(
            _MISSION,
            f"schedule {target}'s conditions lead back to this schedule; "
            "a cycle of conditions would never launch",
        )


def _workspace_root(conn: Connection, workspace_id: UUID) -> Path:
    path = conn.execute(select(workspaces.c.path).where(workspaces.c.id == workspace_id)).scalar()
    if path is None:  # (the caller's role was just checked on it)
        raise InvalidInput("workspace: not found", field="workspace")
    return Path(os.path.realpath(path))


def _inside(root: Path, relative: str, field: str) -> Path:
    """``relative`` beneath ``root``, its existing symbolic links resolved; refused when
    that leads outside the workspace (``..`` is refused already by the parser)."""
    where = Path(os.path.realpath(root / relative))
    if where != root and not where.is_relative_to(root):
        raise fail(field, f"{relative!r} leads outside the workspace (through a symbolic link)")
    return where


def _is_repository(where: Path) -> bool:
    """Whether ``where`` holds a git work tree or is a bare repository. Cheap on purpose,
    no ``git`` subprocess: a ``.git`` entry (a directory, or the ``gitdir:`` file of a
    linked worktree or submodule), else a bare layout (``HEAD`` beside ``objects`` and
    ``refs``). The source reader checks the repository fully when it reads it."""
    if os.path.lexists(where / ".git"):
        return True
    return (where / "HEAD").is_file() and (where / "objects").is_dir() and (where / "refs").is_dir()
