"""The passage options of ``kalends serve`` and ``kalends worker``, and ``kalends doctor``.

``--passage-user`` and ``--sandbox`` choose how passages are confined (see
:mod:`kalends.missions.runtime.isolation`); ``kalends doctor`` says which confinement is
in force and proves it by trying, as a passage would, to read the server's files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from sqlalchemy.engine import make_url

from kalends.cli.db import DatabaseOption, JsonOption
from kalends.cli.output import EXIT_FAILURE, console, emit_json
from kalends.cli.session import report_error
from kalends.config import resolve_database_url, resolve_runtime_dir
from kalends.errors import KalendsError
from kalends.missions.runtime.isolation import (
    DEFAULT_PASSAGE_USER,
    ENV_PASSAGE_USER,
    ENV_SANDBOX,
    UNCONFINED_USER,
    Isolation,
    ensure_passage_user,
    resolve_isolation,
)
from kalends.missions.runtime.shim import confined_argv
from kalends.missions.runtime.token import SECRET_FILE

__all__ = [
    "PassageUserOption",
    "RuntimeDirOption",
    "SandboxOption",
    "UNCONFINED_USER",
    "doctor_command",
    "passage_isolation",
]

RuntimeDirOption = Annotated[
    str | None,
    typer.Option(
        "--runtime-dir",
        metavar="DIR",
        envvar="KALENDS_RUNTIME_DIR",
        help="Where passages keep their records and logs (default: the user data "
        "directory's runtime/); local to this machine.",
        show_default=False,
    ),
]
PassageUserOption = Annotated[
    str | None,
    typer.Option(
        "--passage-user",
        metavar="USER",
        envvar=ENV_PASSAGE_USER,
        help=f"As root: the OS user passages run as (default {DEFAULT_PASSAGE_USER}, "
        f"created if missing); '{UNCONFINED_USER}' runs them as root, unconfined.",
        show_default=False,
    ),
]
SandboxOption = Annotated[
    str,
    typer.Option(
        "--sandbox",
        metavar="auto|on|off",
        envvar=ENV_SANDBOX,
        help="Run passages in a bubblewrap sandbox: auto where it works, on or refuse "
        "to start, off never.",
    ),
]


def _hidden(database_url: str, runtime_root: Path) -> list[Path]:
    """The server's directories a sandboxed passage must not see."""
    hidden = [runtime_root]
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database:
        hidden.append(Path(url.database).absolute().parent)
    return hidden


def passage_isolation(
    passage_user: str | None, sandbox: str, runtime_root: Path, database_url: str
) -> tuple[Isolation, str]:
    """The confinement a server gives its passages, and a line for the log when it had to
    create the passage user. :class:`~kalends.errors.InvalidInput` on a bad option."""
    note = ensure_passage_user(passage_user)
    isolation = resolve_isolation(
        passage_user=passage_user, sandbox=sandbox, hidden=_hidden(database_url, runtime_root)
    )
    return isolation, note


def _can_read(isolation: Isolation, path: Path) -> bool:
    """Whether a passage under ``isolation`` can read ``path`` (tried for real)."""
    return _succeeds(isolation, ["/usr/bin/test", "-r", str(path)])


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


def _runs_kalends(isolation: Isolation) -> dict[str, Any]:
    """Whether a passage finds and can run ``kalends`` (for ``kalends report``)."""
    found = shutil.which("kalends", path=isolation.path)
    held = found is not None and _succeeds(isolation, [found, "report", "--help"])
    return {"check": "a passage can run kalends report", "path": found or "", "held": held}


def doctor_command(
    database: DatabaseOption = None,
    runtime_dir: RuntimeDirOption = None,
    passage_user: PassageUserOption = None,
    sandbox: SandboxOption = "auto",
    json_output: JsonOption = False,
) -> None:
    """Say how passages are confined, and prove it.

    It shows the OS user passages run as, the sandbox, the environment they get, and
    tries, as a passage would, to read the database file and the runtime secret. Give
    it the options `kalends serve` gets, and checks that a passage can run `kalends
    report`. Exit codes: 0 every check held; 1 a check failed; 2 bad input.
    """
    try:
        url = resolve_database_url(database)
        root = resolve_runtime_dir(runtime_dir)
        isolation, _ = passage_isolation(passage_user, sandbox, root, url)
    except KalendsError as exc:
        report_error(exc, json_output)
    targets = {"runtime secret": root / SECRET_FILE}
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        targets["database"] = Path(parsed.database).absolute()
    checks = []
    for name, path in targets.items():
        if path.exists():
            readable = _can_read(isolation, path)
            checks.append(
                {
                    "check": f"a passage cannot read the {name}",
                    "path": str(path),
                    "held": not readable,
                }
            )
    report: dict[str, Any] = {
        "euid": os.geteuid(),
        "isolation": isolation.describe(),
        "confined": isolation.confined,
        "environment": "clean: "
        + ", ".join(["PATH", "HOME", *sorted(isolation.inherited)])
        + ", the profile's env and the passage's own variables",
        "checks": checks,
    }
    checks.append(_runs_kalends(isolation))
    held = all(c["held"] for c in checks)
    if json_output:
        emit_json(report)
    else:
        _print(report, isolation)
    if not held:
        raise typer.Exit(EXIT_FAILURE)


def _print(report: dict[str, Any], isolation: Isolation) -> None:
    user = isolation.user
    if user is not None:
        who = f"{user.name} (uid {user.uid})"
    elif report["euid"] == 0:
        who = "root, the server's own user: UNCONFINED"
    else:
        who = f"the server's own user (uid {report['euid']})"
    console.print(f"passages run as  {who}", markup=False, highlight=False)
    console.print(
        f"sandbox          {isolation.bwrap or 'none (bubblewrap not found or not working)'}",
        markup=False,
        highlight=False,
    )
    console.print(f"environment      {report['environment']}", markup=False, highlight=False)
    console.print(f"PATH             {isolation.path}", markup=False, highlight=False)
    for check in report["checks"]:
        mark = "ok  " if check["held"] else "FAIL"
        console.print(f"{mark} {check['check']} ({check['path']})", markup=False, highlight=False)
    if len(report["checks"]) < 2:
        console.print("no database file or secret here to check yet", markup=False)
    if not report["confined"]:
        print(
            "warning: passages run as the server's user without a sandbox: whoever may "
            "define a command can read everything the server can",
            file=sys.stderr,
        )
