"""Source readers: what a ``git-branch`` or ``files`` condition observes in a workspace.

Seed 002 gates a schedule's slots on source conditions; this package reads the two that
live in the workspace's files, without a database or a scheduler:

- :func:`observe` reads a condition once, within a shared, cancellable :class:`Budget`
  (seed 002: ten seconds for every read of one observation and its revalidation), and
  returns an :class:`Observation` (the checkpoint a baseline compares) or a
  :class:`SourceBlocked` whose :class:`BlockReason` is the schedule's ``blockReason``.
  A missing or unreadable source is a value, never an exception; an incomplete read is
  never taken for a result.
- :func:`commits_between` and :func:`files_change` give the proof a passage receives:
  the commits that moved the branch, the listed files that changed.

Every read blocks the calling thread (file reads, a git subprocess): callers on an event
loop run it in a worker thread.
"""

from __future__ import annotations

from kalends.missions.sources.budget import Budget
from kalends.missions.sources.files import read_files, set_digest
from kalends.missions.sources.git import commits_between, read_branch
from kalends.missions.sources.observe import WORKSPACE_KINDS, observe
from kalends.missions.sources.outcomes import (
    BlockReason,
    Commit,
    CommitProof,
    FilesChange,
    Observation,
    SourceBlocked,
    files_change,
)

__all__ = [
    "WORKSPACE_KINDS",
    "BlockReason",
    "Budget",
    "Commit",
    "CommitProof",
    "FilesChange",
    "Observation",
    "SourceBlocked",
    "commits_between",
    "files_change",
    "observe",
    "read_branch",
    "read_files",
    "set_digest",
]
