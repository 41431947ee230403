"""A passage's exchange directory (``KALENDS_REPORT_SPOOL``): where ``kalends report``
spools its report before it sends it anywhere, and where the runtime takes it from.

An unconfined passage's exchange directory is ``io/`` in its passage directory; a
confined one's is its own, with a copy of ``input.json``. ``exchange.json`` in the
passage directory records where it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kalends.errors import InvalidInput
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.isolation import Isolation
from kalends.missions.runtime.layout import EXCHANGE, parse_at
from kalends.missions.runtime.reports import read_report, record_report
from kalends.missions.runtime.token import InvalidToken

__all__ = ["MAX_SPOOL_BYTES", "exchange_path", "input_file", "prepare_exchange", "take_spooled"]

# The largest spooled report read back (a report is at most a few KiB of JSON).
MAX_SPOOL_BYTES = 256 * 1024


def exchange_path(directory: Path, isolation: Isolation) -> Path:
    """Where the exchange directory of the passage of ``directory`` is."""
    if isolation.confined and isolation.exchange_dir is not None:
        return isolation.exchange_dir / directory.name
    return directory / "io"


def input_file(directory: Path, isolation: Isolation) -> Path:
    """The input file the passage of ``directory`` reads (``KALENDS_INPUT_FILE``): a
    confined passage's copy in its exchange directory, else the runtime's own."""
    if isolation.confined:
        return exchange_path(directory, isolation) / records.INPUT
    return directory / records.INPUT


def prepare_exchange(directory: Path, isolation: Isolation) -> Path:
    """Prepare the passage's exchange directory and record where it is: ``io/`` in its
    directory, or for a confined passage one it owns, with a copy of its input."""
    exchange = exchange_path(directory, isolation)
    if not isolation.confined:
        exchange.mkdir(mode=0o700, exist_ok=True)
        records.write_json_atomic(directory / EXCHANGE, {"version": 1, "path": str(exchange)})
        return exchange
    if isolation.exchange_dir is not None:
        isolation.exchange_dir.mkdir(mode=0o711, parents=True, exist_ok=True)
    exchange.mkdir(mode=0o700, exist_ok=True)
    copy = exchange / records.INPUT
    data = (directory / records.INPUT).read_bytes()
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
        if isolation.user is not None:
            os.fchown(fd, isolation.user.uid, isolation.user.gid)
    finally:
        os.close(fd)
    if isolation.user is not None:
        os.chown(exchange, isolation.user.uid, isolation.user.gid, follow_symlinks=False)
    records.write_json_atomic(directory / EXCHANGE, {"version": 1, "path": str(exchange)})
    return exchange


def take_spooled(directory: Path, root: Path, secret: bytes) -> None:
    """Move a report spooled in the exchange directory into ``report.json`` when its
    token is this passage's; anything else there is dropped with a note in the log."""
    noted = records.read_json(directory / EXCHANGE)
    if noted is None or not isinstance(noted.get("path"), str):
        return
    spool = Path(noted["path"]) / records.REPORT
    try:
        # The exchange directory is the passage's: never follow its links.
        fd = os.open(spool, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError:
        spool.unlink(missing_ok=True)
        return
    try:
        raw = os.read(fd, MAX_SPOOL_BYTES + 1)
    finally:
        os.close(fd)
    spool.unlink(missing_ok=True)
    try:
        doc = json.loads(raw) if len(raw) <= MAX_SPOOL_BYTES else None
        if not isinstance(doc, dict):
            raise InvalidInput("the spooled report is not a JSON object")
        at = parse_at(doc.get("at"))
        if at is None:
            raise InvalidInput("the spooled report has no time")
        current = read_report(records.read_json(directory / records.REPORT))
        if current is not None and current.at > at:
            return  # a later report came over HTTP: the last one wins
        record_report(
            root,
            str(doc.get("token", "")),
            str(doc.get("outcome", "")),
            str(doc.get("summary", "")),
            at=at,
            passage_dir=directory,
            secret=secret,
            settled_ok=True,
        )
    except (InvalidInput, InvalidToken, ValueError, records.CorruptRecord) as exc:
        with open(directory / records.OUTPUT, "a", encoding="utf-8") as log:
            log.write(f"\n[kalends] a spooled report was refused: {exc}\n")
