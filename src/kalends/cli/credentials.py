"""The API tokens ``kalends login`` stored, one per server, in a file only its owner reads.

``credentials.json`` in the user configuration directory (``KALENDS_CREDENTIALS`` names
another file): ``{"servers": {URL: {"token", "tokenId", "handle"}}}``. Every change
writes a new file, readable by its owner only, and renames it over the old one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_config_dir

from kalends.errors import KalendsError

__all__ = [
    "CREDENTIALS_FILE",
    "ENV_CREDENTIALS",
    "Stored",
    "credentials_path",
    "forget",
    "remember",
    "stored_for",
]

ENV_CREDENTIALS = "KALENDS_CREDENTIALS"
CREDENTIALS_FILE = "credentials.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class Stored:
    """The API token stored for one server."""

    token: str
    token_id: str
    handle: str

    def to_json(self) -> dict[str, str]:
        return {"token": self.token, "tokenId": self.token_id, "handle": self.handle}


def credentials_path() -> Path:
    """``KALENDS_CREDENTIALS``, else ``credentials.json`` in the user configuration directory."""
    given = os.environ.get(ENV_CREDENTIALS)
    if given:
        return Path(given)
    return Path(user_config_dir("kalends")) / CREDENTIALS_FILE


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"servers": {}}
    except OSError as exc:
        raise KalendsError(f"cannot read the credentials file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise KalendsError(
            f"the credentials file {path} is not JSON: fix or remove it, then `kalends login`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("servers"), dict):
        raise KalendsError(
            f"the credentials file {path} holds no servers: fix or remove it, then `kalends login`"
        )
    return data


def _save(path: Path, data: Mapping[str, Any]) -> None:
    """Writes ``data`` whole (a new file renamed over the old), readable by its owner only."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(prefix=".credentials-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                os.fchmod(out.fileno(), 0o600)
                json.dump(data, out, indent=2, sort_keys=True)
                out.write("\n")
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise KalendsError(
            f"cannot write the credentials file {path}: {exc.strerror or exc}"
        ) from None


def stored_for(server: str) -> Stored | None:
    """The token stored for ``server`` (a normalized URL), if any."""
    entry = _load(credentials_path())["servers"].get(server)
    if not isinstance(entry, dict):
        return None
    token, token_id, handle = entry.get("token"), entry.get("tokenId"), entry.get("handle")
    if not all(isinstance(v, str) and v for v in (token, token_id, handle)):
        return None
    return Stored(token=str(token), token_id=str(token_id), handle=str(handle))


def remember(server: str, stored: Stored) -> Path:
    """Stores the token for ``server``, replacing any other; returns the file's path."""
    path = credentials_path()
    data = _load(path)
    data["servers"][server] = stored.to_json()
    _save(path, data)
    return path


def forget(server: str) -> bool:
    """Removes the token stored for ``server``; whether there was one."""
    path = credentials_path()
    data = _load(path)
    if data["servers"].pop(server, None) is None:
        return False
    _save(path, data)
    return True
