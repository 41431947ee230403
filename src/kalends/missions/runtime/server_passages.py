"""The passages of one server's runtime directory, as people and passages reach them.

A server (``kalends serve``) either runs passages itself, with its own
:class:`~kalends.missions.runtime.process.ProcessRuntime`, or only knows the runtime
directory its workers run them in; without either it runs no passages at all
(:class:`NoRuntime`). :class:`ServerPassages` answers what the HTTP API asks of that
directory: a passage's report sent with its own token, the passages a person may see
(those of schedules in workspaces where the person has a role), one schedule's passage,
and the end of a pending passage's output. The scope checks are the services' own
(:meth:`~kalends.missions.Workspaces.visible_schedules`,
:meth:`~kalends.missions.ScheduleService.within`): nothing here reads the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from kalends.clock import Clock
from kalends.errors import KalendsError, NotFound, StorageError, Unauthenticated
from kalends.missions.runtime.base import Report, RuntimeUnavailable
from kalends.missions.runtime.passages import (
    Passage,
    find_passage,
    newest_passages,
    passage_log_tail,
    read_passage,
)
from kalends.missions.runtime.process import ProcessRuntime, record_report
from kalends.missions.runtime.reports import speaking_passage
from kalends.missions.runtime.shim import START, CorruptRecord, read_json
from kalends.missions.runtime.token import InvalidToken

if TYPE_CHECKING:
    # (types only: a passage's ``kalends report`` imports the runtime without storage)
    from kalends.missions.service import ScheduleService
    from kalends.missions.workspaces import Workspaces

__all__ = [
    "NoRuntime",
    "PassageListing",
    "PassageTokenRefused",
    "RuntimeDown",
    "ServerPassages",
]


class NoRuntime(NotFound):
    """This server runs no passages: it has no runtime directory."""

    code = "no-runtime"


class PassageTokenRefused(Unauthenticated):
    """The passage token is missing, malformed, forged or names no passage of this server."""

    code = "invalid-passage-token"


class RuntimeDown(StorageError):
    """The runtime directory could not be read or written now; nothing was recorded."""

    code = "runtime-unavailable"


@dataclass(frozen=True, slots=True, kw_only=True)
class PassageListing:
    """The passages a person may see: how many, and the first of them newest first."""

    runtime_dir: Path
    total: int
    passages: list[Passage]

    def to_json(self) -> dict[str, Any]:
        return {
            "runtimeDir": str(self.runtime_dir),
            "total": self.total,
            "items": [p.to_json() for p in self.passages],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerPassages:
    """A server's runtime directory: its runtime's when it runs one, else ``runtime_dir``.

    Cheap to make (it holds references only): the API makes one per request.
    """

    runtime: ProcessRuntime | None
    runtime_dir: Path | None
    schedules: ScheduleService
    workspaces: Workspaces
    clock: Clock

    @property
    def root(self) -> Path:
        """The runtime directory; :class:`NoRuntime` when this server has none."""
        if self.runtime is not None:
            return self.runtime.root
        if self.runtime_dir is not None:
            return Path(self.runtime_dir)
        raise NoRuntime("this server runs no passages: it has no runtime directory")

    @property
    def keeps_passages(self) -> bool:
        """Whether this server has a runtime directory (passages report to it)."""
        return self.runtime is not None or self.runtime_dir is not None

    def report(self, token: str, outcome: str, summary: str) -> Report:
        """Records the final report of the passage ``token`` speaks for (the last one
        wins until the passage settles). A token this directory did not sign, or that
        names none of its passages, is :class:`PassageTokenRefused`; a directory that
        cannot be written now :class:`RuntimeDown`; nothing is written on a refusal."""
        try:
            if self.runtime is not None:
                return self.runtime.report(token, outcome, summary)
            return record_report(self.root, token, outcome, summary, at=self.clock.now())
        except InvalidToken as exc:
            raise PassageTokenRefused(exc.message) from None
        except RuntimeUnavailable as exc:
            raise RuntimeDown(exc.message) from None
        except CorruptRecord as exc:
            raise RuntimeDown(f"cannot record the report: {exc}") from None
        except OSError as exc:
            raise RuntimeDown(f"cannot record the report: {exc.strerror or exc}") from None

    def speaker(self, token: str) -> str:
        """The ID of the passage ``token`` speaks for: a passage of this directory that has
        not settled. Reads only. A token this directory did not sign, or that names none of
        its passages, is :class:`PassageTokenRefused`; a passage that has settled
        :class:`~kalends.missions.runtime.reports.PassageSettled` (its token is spent); a
        directory that cannot be read now :class:`RuntimeDown`."""
        return self.speaking(token)[0]

    def speaking(self, token: str) -> tuple[str, str | None]:
        """The ID of the passage ``token`` speaks for, as :meth:`speaker` gives it, and
        the ID of its schedule as the passage's start record names it (``None`` when the
        record names none). The start record is the runtime's own, written at admission
        and never changed, and the token is checked against it: what a passage's schedule
        is comes from there, never from what the passage sends. Refusals as
        :meth:`speaker`'s."""
        try:
            secret = self.runtime.secret if self.runtime is not None else None
            passage_id, _session, directory = speaking_passage(self.root, token, secret=secret)
            start = read_json(directory / START)
        except InvalidToken as exc:
            raise PassageTokenRefused(exc.message) from None
        except CorruptRecord as exc:
            raise RuntimeDown(f"cannot read the passage's records: {exc}") from None
        except OSError as exc:
            raise RuntimeDown(f"cannot read the passage's records: {exc.strerror or exc}") from None
        schedule = None if start is None else start.get("scheduleId")
        return passage_id, schedule if isinstance(schedule, str) and schedule else None

    def visible(self, actor_id: UUID, limit: int) -> PassageListing:
        """The passages of schedules (tombstones included) in workspaces where the actor
        has a role, at most ``limit`` newest first (0: all); a passage of a schedule the
        database does not know is nobody's. Reads only: nothing is created."""
        root = self.root
        visible = self.workspaces.visible_schedules(actor_id)
        try:
            total, page = newest_passages(root, limit, schedules=visible) if visible else (0, [])
            # The server's own runtime; else one on its directory, which exists once a
            # passage does (so nothing is created).
            runtime = self.runtime or (ProcessRuntime(root) if page else None)
            passages = [read_passage(runtime, d) for d in page] if runtime else []
        except (KalendsError, OSError) as exc:
            raise RuntimeDown(f"cannot read the passages of {root}: {exc}") from None
        return PassageListing(runtime_dir=root, total=total, passages=passages)

    def of_schedule(
        self, actor: UUID | str, workspace: UUID, schedule: UUID, passage: str
    ) -> Passage | None:
        """The passage (by passage or session ID) of ``schedule``, a schedule of
        ``workspace`` the actor may read (checked first, as
        :meth:`~kalends.missions.ScheduleService.within` does); ``None`` when this
        directory holds no such passage of that schedule."""
        self.schedules.within(actor, workspace, schedule)
        root = self.root
        try:
            directory = find_passage(root, passage)
            found = read_passage(ProcessRuntime(root), directory)
        except NotFound:
            return None
        except (KalendsError, OSError) as exc:
            raise RuntimeDown(f"cannot read passage {passage}: {exc}") from None
        return found if found.start.get("scheduleId") == str(schedule) else None

    def with_log_tail(self, doc: dict[str, Any]) -> dict[str, Any]:
        """A schedule's detail with the end of its pending passage's output
        (``pending.logTail``) when this directory holds it, as ``kalends schedule show``
        shows it; else the detail as it is."""
        pending = doc.get("pending")
        if not isinstance(pending, dict) or not isinstance(pending.get("sessionId"), str):
            return doc
        if not self.keeps_passages:
            return doc
        tail = passage_log_tail(self.root, pending["sessionId"])
        if tail is not None:
            pending["logTail"] = tail
        return doc
