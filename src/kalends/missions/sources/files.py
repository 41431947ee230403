"""The ``files`` source: the content digest of each listed file and of the whole set.

Each path is opened beneath the workspace (:mod:`.beneath`): a path leaving it through
``..`` or a symbolic link is refused. A missing file is a state (its digest is ``None``),
so creating or deleting a listed file is a change like any other. A listed path that is a
directory, a pipe or any other non-regular file is unreadable: kalends' decision is that a
set names files, and a directory there is a configuration the user must see, not a state.
A file over the size limit is unreadable too, never digested in part.

The set's checkpoint is the SHA-256 of the sorted ``path NUL digest-or-"absent" LF``
lines, so it depends on the paths and their contents, never on the order they are listed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from kalends.missions.limits import MAX_SOURCE_FILE_BYTES
from kalends.missions.sources.beneath import Found, Missing, open_beneath, open_root
from kalends.missions.sources.budget import Budget
from kalends.missions.sources.outcomes import BlockReason, Observation, SourceBlocked, aware

__all__ = ["CHUNK_BYTES", "KIND", "read_files", "set_digest"]

KIND = "files"
# How much is read between two checks of the budget.
CHUNK_BYTES = 1024 * 1024


class _Unreadable(Exception):
    """A file could not be read whole (private: turned into a blocked read)."""


def set_digest(files: Iterable[tuple[str, str | None]]) -> str:
    """The checkpoint of a file set: order-independent, by path."""
    whole = hashlib.sha256(b"kalends files 1\n")
    for path, digest in sorted(files):
        whole.update(f"{path}\0{digest or 'absent'}\n".encode("utf-8", "surrogateescape"))
    return whole.hexdigest()


def read_files(
    paths: Iterable[str],
    workspace_root: str | Path,
    budget: Budget,
    *,
    at: datetime,
    max_bytes: int = MAX_SOURCE_FILE_BYTES,
) -> Observation | SourceBlocked:
    """Digests of ``paths`` (relative to ``workspace_root``) as read at ``at``, or why they
    cannot be: ``source-missing`` when the workspace directory is gone, ``source-unreadable``
    when any file cannot be read whole within ``budget``. Blocks the calling thread."""
    at = aware(at)

    def blocked(reason: BlockReason, detail: str) -> SourceBlocked:
        return SourceBlocked(kind=KIND, reason=reason, detail=detail, observed_at=at)

    if budget.spent():
        return blocked(BlockReason.SOURCE_UNREADABLE, "the read budget was spent")
    root = open_root(workspace_root)
    if isinstance(root, Missing):
        return blocked(BlockReason.SOURCE_MISSING, root.detail)
    if not isinstance(root, Found):
        return blocked(BlockReason.SOURCE_UNREADABLE, root.detail)
    digests: list[tuple[str, str | None]] = []
    try:
        for path in sorted(set(paths)):
            if budget.spent():
                return blocked(BlockReason.SOURCE_UNREADABLE, "the read budget was spent")
            opened = open_beneath(root.fd, root.path, path)
            if isinstance(opened, Missing):
                digests.append((path, None))
                continue
            if not isinstance(opened, Found):
                return blocked(BlockReason.SOURCE_UNREADABLE, opened.detail)
            try:
                digests.append((path, _digest(opened.fd, path, budget, max_bytes)))
            except _Unreadable as exc:
                return blocked(BlockReason.SOURCE_UNREADABLE, str(exc))
            except OSError as exc:
                return blocked(BlockReason.SOURCE_UNREADABLE, f"{path!r}: {exc.strerror}")
            finally:
                os.close(opened.fd)
    finally:
        os.close(root.fd)
    return Observation(
        kind=KIND, checkpoint=set_digest(digests), observed_at=at, files=tuple(digests)
    )


def _digest(fd: int, path: str, budget: Budget, max_bytes: int) -> str:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise _Unreadable(f"{path!r} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise _Unreadable(f"{path!r} is not a regular file")
    if info.st_size > max_bytes:
        raise _Unreadable(f"{path!r} is larger than {max_bytes} bytes")
    digest = hashlib.sha256()
    size = 0
    while chunk := os.read(fd, CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:  # it grew while read
            raise _Unreadable(f"{path!r} is larger than {max_bytes} bytes")
        digest.update(chunk)
        if budget.spent():
            raise _Unreadable(f"the read budget was spent while {path!r} was read")
    return digest.hexdigest()
