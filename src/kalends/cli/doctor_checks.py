"""The checks of ``kalends doctor`` that need no database: the value every check gives,
the zone data, the runtime directory and the confinement passages get.

Each check is one :class:`Check`: a name, a status, a one-line fact and, for a warning
or a failure, a one-line fix. Only a failed check that is ``needed`` makes the doctor
exit 1; warnings never do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zoneinfo
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import import_module
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from kalends.civil.zones import get_zone
from kalends.errors import KalendsError
from kalends.missions.runtime.isolation import Isolation
from kalends.missions.runtime.shim import confined_argv
from kalends.missions.runtime.token import SECRET_FILE

__all__ = [
    "Check",
    "Status",
    "confinement_checks",
    "runtime_dir_check",
    "zone_check",
]

# A zone every IANA release has, loaded to prove the data is readable, not only present.
_PROBE_ZONE = "Europe/Amsterdam"
_PACKAGE = "the tzdata package"


class Status(StrEnum):
    """What a check found."""

    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One line of the doctor's answer. ``needed``: a failure here makes the exit 1."""

    name: str
    status: Status
    fact: str
    fix: str | None = None
    needed: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL and self.needed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "status": self.status.value,
            "fact": self.fact,
            "fix": self.fix,
            "needed": self.needed,
        }
        out.update(self.details)
        return out


def ok(name: str, fact: str, **details: Any) -> Check:
    return Check(name=name, status=Status.OK, fact=fact, details=details)


def warn(name: str, fact: str, fix: str, **details: Any) -> Check:
    return Check(name=name, status=Status.WARN, fact=fact, fix=fix, details=details)


def fail(name: str, fact: str, fix: str, *, needed: bool = True, **details: Any) -> Check:
    return Check(name=name, status=Status.FAIL, fact=fact, fix=fix, needed=needed, details=details)


def skipped(name: str, fact: str, **details: Any) -> Check:
    return Check(name=name, status=Status.SKIPPED, fact=fact, details=details)


# --- zone data -------------------------------------------------------------------------


def _zone_source() -> tuple[str, str | None]:
    """Where zones are read from (the system's zone files first, as the civil engine
    reads them, then the ``tzdata`` package) and that data's IANA version if it says."""
    for root in zoneinfo.TZPATH:
        if os.path.isfile(os.path.join(root, *_PROBE_ZONE.split("/"))):
            return root, _zi_version(Path(root) / "tzdata.zi")
    return _PACKAGE, _package_version()


def _package_version() -> str | None:
    """The IANA version of the ``tzdata`` package, if it is installed and says."""
    try:
        version = getattr(import_module("tzdata"), "IANA_VERSION", None)
    except ModuleNotFoundError:
        return None
    return str(version) if version else None


def _zi_version(path: Path) -> str | None:
    """The ``# version`` line of a ``tzdata.zi`` file, if it has one."""
    try:
        with path.open(encoding="ascii", errors="replace") as text:
            first = text.readline()
    except OSError:
        return None
    if not first.startswith("# version"):
        return None
    return first.removeprefix("# version").strip() or None


def zone_check() -> Check:
    """Whether a zone loads, where zone data comes from and its version; a warning when
    the system's data, read first, is older than the ``tzdata`` package's."""
    source, version = _zone_source()
    try:
        get_zone(_PROBE_ZONE)
    except KalendsError as exc:
        return fail(
            "zone data",
            f"cannot load {_PROBE_ZONE}: {exc.message}",
            "install the system's tzdata, or reinstall kalends (it brings the tzdata package)",
        )
    shown = version or "version unknown"
    fact = f"{source}, IANA {shown}"
    package = _package_version() if source != _PACKAGE else None
    # IANA versions are a year and a letter: as text they sort as they were released.
    if version is not None and package is not None and package > version:
        return warn(
            "zone data",
            f"{fact}, read before the tzdata package's newer {package}",
            "update the system's tzdata (its rules decide local times)",
            source=source,
            version=version,
        )
    return ok("zone data", fact, source=source, version=version)


# --- runtime directory -----------------------------------------------------------------


def runtime_dir_check(root: Path) -> Check:
    """Whether the runtime directory (or, before it exists, the directory it will be
    made in) takes a file: one temporary file is created and removed, nothing else."""
    where = root
    while not where.exists() and where.parent != where:
        where = where.parent
    fix = f"make {where} writable by this user (chmod u+w), or pass --runtime-dir DIR"
    if not where.is_dir():
        return fail("runtime directory", f"{where} is not a directory", fix, path=str(root))
    try:
        with tempfile.NamedTemporaryFile(dir=where, prefix=".kalends-doctor-"):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return fail("runtime directory", f"{where} is not writable: {reason}", fix, path=str(root))
    fact = f"{root} is writable" if where == root else f"{root} will be made in {where}"
    return ok("runtime directory", fact, path=str(root))


# --- confinement -----------------------------------------------------------------------


def _succeeds(isolation: Isolation, command: list[str]) -> bool:
    """Whether ``command`` exits 0 when run as a passage under ``isolation`` would be."""
    plan = isolation.plan(None)
    argv = confined_argv(plan, command, "/", "/")
    user: dict[str, Any] = {}
    if isolation.user is not None:
        user = {"user": isolation.user.uid, "group": isolation.user.gid, "extra_groups": []}
    try:
        result = subprocess.run(
            argv, cwd="/", env={"PATH": isolation.path}, capture_output=True, check=False, **user
        )
    except OSError:
        return False  # not even started: the passage user cannot run it
    return result.returncode == 0


def _who(isolation: Isolation) -> str:
    user = isolation.user
    if user is not None:
        return f"{user.name} (uid {user.uid})"
    if os.geteuid() == 0:
        return "root, the server's own user" + ("" if isolation.confined else ": UNCONFINED")
    return f"the server's own user (uid {os.geteuid()})"


def confinement_checks(isolation: Isolation, database_url: str, root: Path) -> list[Check]:
    """How passages are confined, proven by trying, as a passage would, to read the
    database file and the runtime secret, and to run ``kalends report``."""
    sandbox = isolation.bwrap or "none (bubblewrap not found or not working)"
    environment = (
        "clean: "
        + ", ".join(["PATH", "HOME", *sorted(isolation.inherited)])
        + ", the profile's env and the passage's own variables"
    )
    facts = {
        "euid": os.geteuid(),
        "isolation": isolation.describe(),
        "confined": isolation.confined,
        "environment": environment,
    }
    fact = f"passages run as {_who(isolation)}; sandbox {sandbox}"
    if isolation.confined:
        checks = [ok("confinement", fact, **facts)]
    else:
        checks = [
            warn(
                "confinement",
                fact,
                "passages can read everything the server can: run as root with "
                "--passage-user, or install bubblewrap (--sandbox on)",
                **facts,
            )
        ]
    targets = {"runtime secret": root / SECRET_FILE}
    parsed = make_url(database_url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        targets["database"] = Path(parsed.database).absolute()
    for what, path in targets.items():
        name = f"{what} hidden"
        sentence = f"a passage cannot read the {what}"
        if not path.exists():
            checks.append(skipped(name, f"{sentence}: no {what} here yet", check=sentence))
        elif _succeeds(isolation, ["/usr/bin/test", "-r", str(path)]):
            checks.append(
                fail(
                    name,
                    f"a passage CAN read the {what} ({path})",
                    "confine passages: --passage-user USER as root, or --sandbox on",
                    check=sentence,
                    path=str(path),
                    held=False,
                )
            )
        else:
            checks.append(
                ok(name, f"{sentence} ({path})", check=sentence, path=str(path), held=True)
            )
    checks.append(_runs_kalends(isolation))
    return checks


def _runs_kalends(isolation: Isolation) -> Check:
    """Whether a passage finds and can run ``kalends`` (for ``kalends report``)."""
    sentence = "a passage can run kalends report"
    found = shutil.which("kalends", path=isolation.path)
    if found is not None and _succeeds(isolation, [found, "report", "--help"]):
        return ok("kalends report", f"{sentence} ({found})", check=sentence, path=found, held=True)
    return fail(
        "kalends report",
        f"a passage cannot run kalends report (PATH {isolation.path})",
        "install kalends where the passage user can run it (e.g. /usr/local/bin)",
        check=sentence,
        path=found or "",
        held=False,
    )
