"""Admitting a passage to the process runtime: its two records checked and built, then
renamed into place as one directory, which fails if the session is there.

A crash leaves nothing or a complete admission; temporary directories (``.admit-*``)
are never read.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from kalends.errors import InvalidInput
from kalends.missions.agents import prompt_text, substitute
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.base import PassageStart, Presence
from kalends.missions.runtime.isolation import check_env_name
from kalends.missions.runtime.layout import valid_session_id

__all__ = ["admission", "admission_documents", "rename_into_place"]


def _check_text(value: object, field: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty) or "\x00" in value:
        raise InvalidInput(f"{field} must be a non-empty string without NUL", field=field)
    return value


def admission_documents(
    start: PassageStart, *, now: datetime, input_file: str = ""
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``start.json`` and ``input.json`` of ``start``, created ``now``; :class:`InvalidInput`
    names the first field that cannot be admitted. The command is recorded with its
    placeholders substituted (:func:`~kalends.missions.agents.substitute`), ``{input_file}``
    by ``input_file``, the path the passage reads its input at."""
    if not valid_session_id(start.session_id):
        raise InvalidInput(
            f"session ID {start.session_id!r} cannot name a passage directory",
            field="session_id",
        )
    for name in ("passage_id", "message_id", "schedule_id", "workspace"):
        _check_text(getattr(start, name), name)
    if not os.path.isabs(start.workspace):
        raise InvalidInput("workspace must be an absolute path", field="workspace")
    if not start.command:
        raise InvalidInput("command must name a program", field="command")
    identities = {
        "passageId": start.passage_id,
        "sessionId": start.session_id,
        "messageId": start.message_id,
        "scheduleId": start.schedule_id,
    }
    input_doc = {**start.input, **identities}
    command = substitute(start.command, _values(start, input_doc, input_file))
    _check_text(command[0], "command[0]")
    for arg in command[1:]:
        _check_text(arg, "command", empty=True)
    for key, value in start.env:
        if "=" in _check_text(key, "env"):
            raise InvalidInput(f"environment name {key!r} holds '='", field="env")
        check_env_name(key, "env")
        _check_text(value, "env", empty=True)
    try:
        # Links are followed at launch: escaping through one ends the passage with 126.
        records.check_cwd(start.cwd)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="cwd") from exc
    start_doc = {
        "version": 1,
        **identities,
        "workspace": start.workspace,
        "command": list(command),
        "env": [list(pair) for pair in start.env],
        "cwd": start.cwd,
        "createdAt": now.isoformat(),
    }
    if start.agent is not None:
        start_doc["agent"] = start.agent
    try:
        json.dumps(input_doc)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"the passage input is not JSON: {exc}", field="input") from exc
    return start_doc, input_doc


def _values(start: PassageStart, input_doc: dict[str, Any], input_file: str) -> dict[str, str]:
    """What each placeholder of the command stands for in this passage."""

    def text(name: str) -> str:
        value = input_doc.get(name)
        return value if isinstance(value, str) else ""

    return {
        "objective": text("objective"),
        "notes": text("notes"),
        "prompt": prompt_text(input_doc),
        "input_file": input_file,
        "passage_id": start.passage_id,
        "workspace": start.workspace,
    }


def admission(directory: Path, message_id: str) -> Presence | None:
    """What the directory proves about (session, message): ``None`` when absent."""
    try:
        os.lstat(directory)
    except FileNotFoundError:
        return None
    try:
        record = records.read_json(directory / records.START)
    except (records.CorruptRecord, IsADirectoryError, NotADirectoryError):
        return Presence.UNKNOWN
    if record is None or record.get("sessionId") != directory.name:
        return Presence.UNKNOWN  # partial or foreign: never resend on it
    return Presence.PRESENT if record.get("messageId") == message_id else Presence.UNKNOWN


def rename_into_place(
    directory: Path, start_doc: dict[str, Any], input_doc: dict[str, Any]
) -> bool:
    """Write both records in a temporary directory beside ``directory`` and rename it into
    place: ``False`` when another start admitted this session first."""
    passages = directory.parent
    tmp = Path(tempfile.mkdtemp(prefix=f".admit-{directory.name}-", dir=passages))
    try:
        records.write_synced(tmp / records.START, start_doc)
        records.write_synced(tmp / records.INPUT, input_doc)
        records.fsync_dir(tmp)
        try:
            os.rename(tmp, directory)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                return False  # another start admitted this session first
            raise
        records.fsync_dir(passages)
        return True
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
