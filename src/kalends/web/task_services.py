"""The task services a page calls, for the viewer who asked, each typed by the protocol
the CLI calls it through (:mod:`kalends.cli.task_client`): what the list pages and the
task page share, so they call the same methods the same way."""

from __future__ import annotations

from kalends.cli.task_client import DirectoryClient, SeriesClient, TaskChanges, TaskClient
from kalends.web.session import Viewer

__all__ = ["changes", "directory", "series", "tasks"]


def directory(who: Viewer) -> DirectoryClient:
    """Lists, members, sections."""
    return who.context.services.directory


def tasks(who: Viewer) -> TaskClient:
    """Tasks: reads, create, complete, reopen, move to another list, comments, files."""
    return who.context.services.tasks


def series(who: Viewer) -> SeriesClient:
    """A series: read, pause, resume, end."""
    return who.context.services.series


def changes(who: Viewer) -> TaskChanges:
    """Edits read and written in one transaction: schedule, repeat, skip, move."""
    return who.context.services.changes
