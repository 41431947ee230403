"""Which zone data the engine reads (issue 24 §3): a short version text a scheduler
records with every next slot it computes, so that one starting on other zone data
knows which slots to compute again.

The engine (:mod:`kalends.civil.zones`) reads a zone from the first ``zoneinfo.TZPATH``
root holding it, then from the ``tzdata`` package. Its version here is:

- the first TZPATH root holding ``tzdata.zi`` (the compact source that ships beside the
  compiled files): its ``# version X`` line and the first 8 hex digits of the SHA-256 of
  the file's bytes, ``"2025b-3f9a1c2e"``, so a copy edited under the same version line
  still differs;
- else the ``tzdata`` package's ``IANA_VERSION``: ``"2026f-pkg"``;
- else ``"unknown"`` (never different from itself, so nothing is recomputed).

Compiled zone files changed without their ``tzdata.zi`` are not seen (every packager
ships the two together). Pure apart from reading those files; the process's version is
read once (:func:`zone_data_version`), as the engine caches its zones once per process.
"""

from __future__ import annotations

import hashlib
import re
import zoneinfo
from collections.abc import Sequence
from functools import cache
from importlib import import_module
from pathlib import Path

__all__ = ["MAX_VERSION_LENGTH", "UNKNOWN", "version_of", "zone_data_version"]

MAX_VERSION_LENGTH = 32
"""The width of ``schedule_wakes.zone_data``."""
UNKNOWN = "unknown"
_DIGITS = 8
_VERSION_LINE = re.compile(rb"^#\s*version\s+(\S+)")
# Room for "-" and the digest within MAX_VERSION_LENGTH.
_MAX_NAME = MAX_VERSION_LENGTH - _DIGITS - 1


def _from_file(path: Path) -> str:
    data = path.read_bytes()
    first = data.split(b"\n", 1)[0]
    found = _VERSION_LINE.match(first)
    name = found.group(1).decode("ascii", "replace")[:_MAX_NAME] if found else "unversioned"
    return f"{name}-{hashlib.sha256(data).hexdigest()[:_DIGITS]}"


def _from_package() -> str:
    try:
        package = import_module("tzdata")
    except ModuleNotFoundError:  # pragma: no cover - tzdata is a dependency
        return UNKNOWN
    version = getattr(package, "IANA_VERSION", None)
    if not isinstance(version, str) or not version:
        return UNKNOWN
    return f"{version[: MAX_VERSION_LENGTH - 4]}-pkg"


def version_of(roots: Sequence[str]) -> str:
    """The version of the zone data read from ``roots`` (as ``zoneinfo.TZPATH``), then
    the ``tzdata`` package; at most :data:`MAX_VERSION_LENGTH` characters."""
    for root in roots:
        path = Path(root) / "tzdata.zi"
        try:
            if path.is_file():
                return _from_file(path)
        except OSError:
            continue  # an unreadable root is one the engine cannot read either
    return _from_package()


@cache
def zone_data_version() -> str:
    """The version of the zone data this process's engine uses (read once)."""
    return version_of(tuple(zoneinfo.TZPATH))
