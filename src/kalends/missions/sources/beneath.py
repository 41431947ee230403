"""Opening a path beneath the workspace root, never outside it.

A source names paths relative to its workspace. The walk opens one component at a time
from the root's directory descriptor, without following symbolic links on its own: a link
is read and its target walked in turn, ``..`` steps back one directory. Whatever would
leave the root, through ``..`` or through a link (relative or absolute), is refused.
Every directory is opened with ``O_NOFOLLOW``, so a component replaced by a link while
the walk runs fails the walk instead of leading it outside.

A final component is opened ``O_NONBLOCK``: a named pipe never stalls the read.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections import deque
from dataclasses import dataclass

__all__ = ["MAX_LINKS", "Found", "Missing", "Refused", "open_beneath", "open_root"]

# As the kernel's own bound on links followed in one lookup.
MAX_LINKS = 40
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FINAL_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


@dataclass(frozen=True, slots=True)
class Found:
    """The path opened: ``fd`` (the caller closes it) and where it is, links resolved."""

    fd: int
    path: str


@dataclass(frozen=True, slots=True)
class Missing:
    """Nothing is there: a component does not exist, or is a file where a directory
    should be, or a link inside the root points at nothing."""

    detail: str


@dataclass(frozen=True, slots=True)
class Refused:
    """The path cannot be read: it leaves the root, loops, or the system refused it."""

    detail: str


def open_beneath(root_fd: int, root: str, relative: str) -> Found | Missing | Refused:
    """``relative`` opened beneath the directory ``root_fd``, whose resolved path is
    ``root``; ``relative`` resolving to the root itself opens a copy of ``root_fd``."""
    stack: list[tuple[int, str]] = []
    pending = deque(relative.split("/"))
    links = 0
    try:
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    return Refused(f"{relative!r} leaves the workspace")
                os.close(stack.pop()[0])
                continue
            here = stack[-1][0] if stack else root_fd
            try:
                info = os.stat(part, dir_fd=here, follow_symlinks=False)
            except OSError as exc:
                if exc.errno in _ABSENT:
                    return Missing(f"{relative!r} does not exist")
                return Refused(f"{relative!r}: {exc.strerror}")
            if stat.S_ISLNK(info.st_mode):
                links += 1
                if links > MAX_LINKS:
                    return Refused(f"{relative!r}: too many symbolic links")
                target = os.readlink(part, dir_fd=here)
                if target.startswith("/"):
                    target = posixpath.normpath(target)
                    if target != root and not target.startswith(root.rstrip("/") + "/"):
                        return Refused(f"{relative!r} links outside the workspace")
                    while stack:
                        os.close(stack.pop()[0])
                    target = target[len(root) :]
                pending.extendleft(reversed(target.split("/")))
                continue
            flags = _FINAL_FLAGS if not pending else _DIR_FLAGS
            if pending and not stat.S_ISDIR(info.st_mode):
                return Missing(f"{relative!r} does not exist")
            try:
                fd = os.open(part, flags, dir_fd=here)
            except OSError as exc:
                if exc.errno in _ABSENT:
                    return Missing(f"{relative!r} does not exist")
                if exc.errno == errno.ELOOP:
                    return Refused(f"{relative!r} changed while it was read")
                return Refused(f"{relative!r}: {exc.strerror}")
            stack.append((fd, part))
        if not stack:
            return Found(os.dup(root_fd), root)
        fd, name = stack.pop()
        return Found(fd, posixpath.join(root, *(above for _, above in stack), name))
    finally:
        for fd, _ in stack:
            os.close(fd)


def open_root(workspace_root: str | os.PathLike[str]) -> Found | Missing | Refused:
    """The workspace directory itself, opened (following links: its path is the server's
    configuration, not the workspace's content) with its resolved path."""
    root = os.path.realpath(workspace_root)
    try:
        return Found(os.open(root, _DIR_FLAGS), root)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return Missing(f"the workspace directory {str(workspace_root)!r} is gone")
        return Refused(f"the workspace directory {str(workspace_root)!r}: {exc.strerror}")
