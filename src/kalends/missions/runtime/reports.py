"""A passage's report in the process runtime: checked, recorded in ``report.json`` given
the passage's token, or spooled in its exchange directory for the runtime to take."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from kalends.errors import Conflict, InvalidInput
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.base import Report
from kalends.missions.runtime.layout import PASSAGES, parse_at, valid_session_id
from kalends.missions.runtime.token import InvalidToken, read_secret, verify
from kalends.missions.stored_text import check_summary

__all__ = [
    "MAX_SUMMARY_CHARS",
    "OUTCOMES",
    "PassageSettled",
    "check_report",
    "read_report",
    "record_report",
    "speaking_passage",
    "spool_report",
]

OUTCOMES = ("completed", "failed")
# A character takes at least one stored byte: a quick first bound; check_summary is the rule.
MAX_SUMMARY_CHARS = MAX_SUMMARY_BYTES


class PassageSettled(Conflict):
    """The passage has settled (its command and every process of its session ended):
    its report can no longer change."""

    code = "passage-settled"


def read_report(doc: Mapping[str, Any] | None) -> Report | None:
    """The report a ``report.json`` record holds; :class:`CorruptRecord` when it holds none."""
    if doc is None:
        return None
    at = parse_at(doc.get("at"))
    if at is None or doc.get("outcome") not in OUTCOMES or not isinstance(doc.get("summary"), str):
        raise records.CorruptRecord("report.json does not hold a report")
    return Report(outcome=doc["outcome"], summary=doc["summary"], at=at)


def check_report(outcome: str, summary: str) -> None:
    """The input checks every report passes, recorded or spooled."""
    if outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be completed or failed, got {outcome!r}", field="outcome")
    check_summary(summary)


def record_report(
    root: Path,
    token: str,
    outcome: str,
    summary: str,
    *,
    at: datetime,
    passage_dir: Path | None = None,
    secret: bytes | None = None,
    settled_ok: bool = False,
) -> Report:
    """Record a passage's final report, replacing any earlier one (the last one wins).

    The token must be signed with the runtime's secret (``root/secret`` unless given) and
    name the passage of ``passage_dir`` when given. Refused, with nothing written: a bad
    outcome or a summary over its byte bound (:class:`InvalidInput`), a bad or foreign
    token (:class:`InvalidToken`), a settled passage (:class:`PassageSettled`).
    """
    check_report(outcome, summary)
    passage_id, session_id, directory = speaking_passage(
        root, token, secret=secret, passage_dir=passage_dir, settled_ok=settled_ok
    )
    records.write_json_atomic(
        directory / records.REPORT,
        {
            "version": 1,
            "passageId": passage_id,
            "sessionId": session_id,
            "outcome": outcome,
            "summary": summary,
            "at": at.isoformat(),
        },
    )
    return Report(outcome=outcome, summary=summary, at=at)


def speaking_passage(
    root: Path,
    token: str,
    *,
    secret: bytes | None = None,
    passage_dir: Path | None = None,
    settled_ok: bool = False,
) -> tuple[str, str, Path]:
    """The passage ``token`` speaks for: its passage ID, session ID and directory. Reads
    only. The token must be signed with the runtime's secret (``root/secret`` unless
    given) and name a passage of ``root`` (the one of ``passage_dir`` when given), else
    :class:`InvalidToken`; a passage that has settled (its command and every process of
    its session ended) is :class:`PassageSettled` unless ``settled_ok``: its token no
    longer speaks for it."""
    if secret is None:
        try:
            secret = read_secret(root)
        except FileNotFoundError as exc:
            raise InvalidToken(f"no runtime secret in {root}: is this a kalends runtime?") from exc
    passage_id, session_id = verify(secret, token)
    if not valid_session_id(session_id):
        raise InvalidToken(field="token")
    directory = root / PASSAGES / session_id
    if passage_dir is not None and os.path.realpath(passage_dir) != os.path.realpath(directory):
        raise InvalidToken(f"the passage token is for another passage than {passage_dir}")
    start_doc = records.read_json(directory / records.START)
    if start_doc is None or (start_doc.get("passageId"), start_doc.get("sessionId")) != (
        passage_id,
        session_id,
    ):
        raise InvalidToken(f"the passage token names no passage of {root}")
    if not settled_ok and (directory / records.EXIT).exists():
        family = records.family_of(
            records.read_json(directory / records.LAUNCH_LOCK),
            records.read_json(directory / records.SHIM),
        )
        if family is None or not family.members():
            raise PassageSettled(
                f"passage {passage_id} has settled: its report is final, and its token "
                "speaks for it no more"
            )
    return passage_id, session_id, directory


def spool_report(spool: Path, token: str, outcome: str, summary: str, *, at: datetime) -> Report:
    """What ``kalends report`` does in a confined passage: write the report, with the
    passage's token, into its exchange directory ``spool`` (whole, then renamed into
    place, fsynced). The runtime checks the token and takes it when it next observes the
    passage, so a report is never lost to a server that is down. The same input checks
    as :func:`record_report` apply; the token's own check is the runtime's."""
    check_report(outcome, summary)
    if not token:
        raise InvalidToken(field="token")
    records.write_json_atomic(
        spool / records.REPORT,
        {
            "version": 1,
            "token": token,
            "outcome": outcome,
            "summary": summary,
            "at": at.isoformat(),
        },
    )
    return Report(outcome=outcome, summary=summary, at=at)
