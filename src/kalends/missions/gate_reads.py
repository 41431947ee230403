"""The workspace reads of one scheduler, off its loop.

A conditioned slot whose source lives in the workspace's files (``git-branch``,
``files``) is read in a small pool of worker threads, never on the scheduler's loop: the
loop asks for the reading (:meth:`SourceReads.request`), gets ``None`` while it is read and
looks again a moment later, so the other schedules' slots are never delayed by a slow
disk or a large repository (seed 002: local file and Git reads yield the service event
loop). Schedules that follow the same source of the same workspace against the same
baseline share one read. A finished reading is used for slots not after the instant it
was read, and only while it is fresh (:data:`FRESH`); a stopping scheduler cancels the
reads under way (their budgets), which end as incomplete reads.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from kalends.missions.config_condition import Condition
from kalends.missions.gate import Blocked, Reading
from kalends.missions.gate_records import Checkpoint, source_key
from kalends.missions.source_reads import read_workspace
from kalends.missions.sources import BlockReason, Budget

__all__ = ["BLOCKED_RETRY", "FRESH", "READ_POLL", "READ_THREADS", "SourceReads"]

READ_THREADS = 4
"""Worker threads reading sources for one scheduler (git runs as a subprocess: the
threads mostly wait)."""
READ_POLL = timedelta(milliseconds=50)
"""How soon a schedule whose source is being read is looked at again."""
BLOCKED_RETRY = timedelta(minutes=1)
"""How soon a blocked source is read again (its slot is kept meanwhile)."""
FRESH = timedelta(seconds=5)
"""How long a finished reading stands for a slot once the loop saw it finished (after
that it is read again)."""

_Key = tuple[str, str, str | None]  # (workspace root, source key, baseline checkpoint)


@dataclass(slots=True)
class _Entry:
    """One read: when it started (scheduler time: it serves slots not after it), its budget,
    its result to come, and when the loop first saw it finished (what :data:`FRESH` counts
    from, so a read that took longer than ``FRESH`` is still used)."""

    started: datetime
    budget: Budget
    future: Future[Reading]
    seen_done: datetime | None = None


class SourceReads:
    """The reads under way and just finished, keyed by workspace, source and baseline."""

    def __init__(self, *, threads: int = READ_THREADS, git: str = "git") -> None:
        self._git = git
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kalends-source")
        self._reads: dict[_Key, _Entry] = {}
        self._lock = threading.Lock()
        self._closed = False

    def request(
        self,
        workspace_root: str,
        condition: Condition,
        baseline: Checkpoint | None,
        slot: datetime,
        now: datetime,
    ) -> Reading | None:
        """The reading of ``condition``'s source for ``slot``, or ``None`` while it is read
        (the read starts now if none of use is under way)."""
        base = None if baseline is None else baseline.checkpoint
        key: _Key = (workspace_root, source_key(condition), base)
        with self._lock:
            entry = self._reads.get(key)
            if entry is not None:
                if not entry.future.done():
                    return None
                if entry.seen_done is None:
                    entry.seen_done = now  # (freshness counts from here, however long it took)
                if entry.started >= slot and now - entry.seen_done <= FRESH:
                    return entry.future.result()
                del self._reads[key]
            if self._closed:
                return None
            budget = Budget.start()
            future = self._pool.submit(
                _read, condition, workspace_root, baseline, now, budget, self._git
            )
            self._reads[key] = _Entry(started=now, budget=budget, future=future)
            return None

    def forget_older(self, now: datetime) -> None:
        """Drop finished readings that are no longer fresh (called once per round)."""
        with self._lock:
            for key, entry in list(self._reads.items()):
                if not entry.future.done():
                    continue
                if entry.seen_done is None:
                    entry.seen_done = now
                elif now - entry.seen_done > FRESH:
                    del self._reads[key]

    def close(self) -> None:
        """Cancel the reads under way and stop the threads (a stopping scheduler)."""
        with self._lock:
            self._closed = True
            for entry in self._reads.values():
                entry.budget.cancel()
            self._reads.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _read(
    condition: Condition,
    workspace_root: str,
    baseline: Checkpoint | None,
    at: datetime,
    budget: Budget,
    git: str,
) -> Reading:
    """One read in a worker thread; whatever goes wrong is an incomplete read."""
    try:
        return read_workspace(condition, workspace_root, baseline, at, budget=budget, git=git)
    except Exception as exc:  # (the loop must get a reading, never an exception)
        return Blocked(
            key=source_key(condition), kind=condition.kind, at=at,
            reason=BlockReason.SOURCE_UNREADABLE.value, detail=f"the read failed: {exc}",
        )  # fmt: skip
