"""Where the process runtime keeps a passage's records, and the variables a passage gets.

Layout (``root/passages/<session_id>/``; every record a JSON object with ``version``,
written whole: aside then renamed or linked into place, and fsynced):

- ``start.json``: identities, schedule, workspace, frozen profile, ``createdAt``;
- ``input.json``: the passage's input document plus its identities;
- ``launch.lock``: who claimed the one launch (the shim's pid, start ticks, boot ID), or
  ``"by": "interrupt"`` when an interrupt came first and nothing was ever launched;
- ``shim.json``: shim pid, command pid, its process group, the session ID, ``startedAt``;
- ``exit.json``: ``status`` (0..255) or ``signal``, ``error`` when the command could
  not run (126 or 127), ``endedAt``;
- ``output.log``: the command's stdout and stderr, and the shim's own notes;
- ``report.json``: the passage's last ``kalends report``;
- ``interrupt.json``: when kalends interrupted it, and the grace period;
- ``exchange.json``: where the passage's exchange directory is.
"""

from __future__ import annotations

import re
from datetime import datetime

__all__ = [
    "ENV_API_URL",
    "ENV_INPUT_FILE",
    "ENV_PASSAGE_DIR",
    "ENV_PASSAGE_ID",
    "ENV_PASSAGE_TOKEN",
    "ENV_REPORT_SPOOL",
    "ENV_RUNTIME_ROOT",
    "EXCHANGE",
    "PASSAGES",
    "parse_at",
    "valid_session_id",
]

ENV_PASSAGE_ID = "KALENDS_PASSAGE_ID"
ENV_PASSAGE_TOKEN = "KALENDS_PASSAGE_TOKEN"
ENV_INPUT_FILE = "KALENDS_INPUT_FILE"
ENV_PASSAGE_DIR = "KALENDS_PASSAGE_DIR"
ENV_RUNTIME_ROOT = "KALENDS_RUNTIME_ROOT"
# Set by a server (``kalends serve``) through ``extra_env``: where ``kalends report`` sends.
ENV_API_URL = "KALENDS_API_URL"
# Every passage's exchange directory, where ``kalends report`` spools its report first.
ENV_REPORT_SPOOL = "KALENDS_REPORT_SPOOL"
EXCHANGE = "exchange.json"
PASSAGES = "passages"
_SESSION_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")


def valid_session_id(session_id: str) -> bool:
    """A session ID names a directory: letters, digits, ``_.:-``, not starting with a dot."""
    return isinstance(session_id, str) and _SESSION_ID.fullmatch(session_id) is not None


def parse_at(value: object) -> datetime | None:
    """A record's ISO 8601 time field, ``None`` when it holds no string."""
    return datetime.fromisoformat(value) if isinstance(value, str) else None
