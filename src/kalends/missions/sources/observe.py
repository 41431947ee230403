"""One observation of a schedule's source condition, read from its workspace."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from kalends.errors import InvalidInput
from kalends.missions.config_condition import Condition
from kalends.missions.limits import MAX_SOURCE_FILE_BYTES
from kalends.missions.sources import files, git
from kalends.missions.sources.budget import Budget
from kalends.missions.sources.outcomes import Observation, SourceBlocked

__all__ = ["WORKSPACE_KINDS", "observe"]

WORKSPACE_KINDS = (git.KIND, files.KIND)
"""The condition kinds read from the workspace's files (the others are read from the
schedules' own records)."""


def observe(
    condition: Condition,
    workspace_root: str | Path,
    budget: Budget,
    *,
    at: datetime,
    git_executable: str = "git",
    max_file_bytes: int = MAX_SOURCE_FILE_BYTES,
) -> Observation | SourceBlocked:
    """Reads ``condition``'s source in ``workspace_root`` within ``budget``: an observation
    stamped ``at``, or the reason the source blocks admission. Nothing is raised for a
    missing or unreadable source; a kind not read from the workspace is refused.

    It blocks: it reads files and waits for git. Call it from a worker thread, never on an
    event loop; cancel ``budget`` from the loop to stop it early.
    """
    spec = dict(condition.spec)
    if condition.kind == git.KIND:
        return git.read_branch(
            spec["branch"], spec["path"], workspace_root, budget, at=at, git=git_executable
        )
    if condition.kind == files.KIND:
        return files.read_files(
            spec["paths"], workspace_root, budget, at=at, max_bytes=max_file_bytes
        )
    raise InvalidInput(
        f"a {condition.kind!r} condition is not read from the workspace; "
        f"only {', '.join(WORKSPACE_KINDS)} are"
    )
