"""What reading a source yields: an observation, or the reason the source blocks admission.

Both are values a schedule's document keeps (a baseline, the last observation, the proof
frozen in a pending passage), so each has ``to_json`` / ``from_json`` with a ``version``.
A malformed stored value raises ``ValueError`` (or ``KeyError``/``TypeError``) naming
what is wrong; the document's reader turns that into its own corruption error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from kalends.errors import InvalidInput

__all__ = [
    "BlockReason",
    "Commit",
    "CommitProof",
    "FilesChange",
    "Observation",
    "SourceBlocked",
    "files_change",
    "instant_text",
    "parse_instant",
]

VERSION = 1


class BlockReason(StrEnum):
    """Why a source blocks admission (seed 002: moved or deleted sources and incomplete
    reads block admission; nothing is guessed). The values are the ``blockReason`` codes."""

    SOURCE_MISSING = "source-missing"
    """The workspace directory, the repository or the branch is gone."""
    SOURCE_UNREADABLE = "source-unreadable"
    """The read did not complete: budget spent or cancelled, permission, a file too large
    or not a regular file, a path leaving the workspace, git failing."""
    SOURCE_CYCLE = "source-cycle"
    """The schedule-succeeded or mission-completed conditions lead back to the schedule."""
    SOURCE_PROOF_MISSING = "source-proof-missing"
    """A followed schedule's success cannot be proved (its counter reads less than the
    checkpoint, or its document cannot be read)."""


def instant_text(value: datetime) -> str:
    """``value`` as stored: ISO 8601 in UTC with a ``Z``."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_instant(value: object) -> datetime:
    """A stored instant back (:func:`instant_text`'s, or any ISO 8601 with an offset);
    ``ValueError`` for anything else."""
    if not isinstance(value, str):
        raise ValueError(f"not an instant: {value!r}")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"instant without an offset: {value!r}")
    return parsed.astimezone(UTC)


def _check_version(d: Mapping[str, Any], what: str) -> None:
    if d.get("version") != VERSION:
        raise ValueError(f"{what} of unknown version {d.get('version')!r}")


def aware(at: datetime) -> datetime:
    """``at`` in UTC; a naive instant is refused (it names no instant)."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise InvalidInput(f"the instant of a read must carry an offset, got {at!r}")
    return at.astimezone(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """A completed read of a source at ``observed_at``.

    ``checkpoint`` is what a baseline compares: the branch's commit for ``git-branch``,
    the digest of the whole set for ``files``. ``files`` (``files`` kind only) holds each
    listed path, sorted, with its content's SHA-256 in hex, or ``None`` when it is absent.
    """

    kind: str
    checkpoint: str
    observed_at: datetime
    files: tuple[tuple[str, str | None], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": VERSION,
            "kind": self.kind,
            "checkpoint": self.checkpoint,
            "observedAt": instant_text(self.observed_at),
        }
        if self.kind == "files":
            out["files"] = dict(self.files)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Observation:
        _check_version(d, "an observation")
        kind, checkpoint = d["kind"], d["checkpoint"]
        if not isinstance(kind, str) or not isinstance(checkpoint, str):
            raise ValueError("an observation's kind and checkpoint are strings")
        files = d.get("files", {})
        if not isinstance(files, Mapping) or not all(
            isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in files.items()
        ):
            raise ValueError("an observation's files map paths to digests or null")
        return cls(
            kind=kind,
            checkpoint=checkpoint,
            observed_at=parse_instant(d["observedAt"]),
            files=tuple(sorted(files.items())),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceBlocked:
    """A read that did not yield an observation: ``reason`` is the ``blockReason`` and
    ``detail`` one line saying what was found ("no local branch 'main' in 'app'")."""

    kind: str
    reason: BlockReason
    detail: str
    observed_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "kind": self.kind,
            "blockReason": self.reason.value,
            "detail": self.detail,
            "observedAt": instant_text(self.observed_at),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SourceBlocked:
        _check_version(d, "a blocked read")
        return cls(
            kind=str(d["kind"]),
            reason=BlockReason(d["blockReason"]),
            detail=str(d["detail"]),
            observed_at=parse_instant(d["observedAt"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Commit:
    """One commit of a proof: its ID and the first line of its message."""

    sha: str
    subject: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitProof:
    """What moved a branch: the commits reachable from ``observed`` and not from
    ``baseline``, newest first, at most a bounded number; ``truncated`` when there were more."""

    baseline: str
    observed: str
    commits: tuple[Commit, ...]
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "baseline": self.baseline,
            "observed": self.observed,
            "commits": [{"sha": c.sha, "subject": c.subject} for c in self.commits],
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CommitProof:
        _check_version(d, "a commit proof")
        return cls(
            baseline=str(d["baseline"]),
            observed=str(d["observed"]),
            commits=tuple(
                Commit(sha=str(c["sha"]), subject=str(c["subject"])) for c in d["commits"]
            ),
            truncated=bool(d["truncated"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class FilesChange:
    """Which listed paths changed between two observations of a file set, each sorted:
    ``added`` were absent and now exist, ``removed`` existed and are now absent,
    ``modified`` exist in both with other content."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "added": list(self.added),
            "removed": list(self.removed),
            "modified": list(self.modified),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FilesChange:
        _check_version(d, "a files change")
        return cls(
            added=tuple(str(p) for p in d["added"]),
            removed=tuple(str(p) for p in d["removed"]),
            modified=tuple(str(p) for p in d["modified"]),
        )


def files_change(baseline: Observation, observed: Observation) -> FilesChange:
    """The proof of a file set: what changed from ``baseline`` to ``observed``. A path only
    one of them lists (the set was edited in between) counts as absent in the other."""
    before, after = dict(baseline.files), dict(observed.files)
    added, removed, modified = [], [], []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if old is None:
            added.append(path)
        elif new is None:
            removed.append(path)
        else:
            modified.append(path)
    return FilesChange(added=tuple(added), removed=tuple(removed), modified=tuple(modified))
