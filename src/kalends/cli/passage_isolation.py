"""The passage options of ``kalends serve``, ``kalends worker`` and ``kalends doctor``.

``--passage-user`` and ``--sandbox`` choose how passages are confined (see
:mod:`kalends.missions.runtime.isolation`); ``kalends doctor``
(:mod:`kalends.cli.doctor`) says which confinement is in force and proves it by trying,
as a passage would, to read the server's files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy.engine import make_url

from kalends.missions.runtime.isolation import (
    DEFAULT_PASSAGE_USER,
    ENV_PASSAGE_USER,
    ENV_SANDBOX,
    UNCONFINED_USER,
    Isolation,
    ensure_passage_user,
    resolve_isolation,
)

__all__ = [
    "PassageUserOption",
    "RuntimeDirOption",
    "SandboxOption",
    "UNCONFINED_USER",
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
    passage_user: str | None,
    sandbox: str,
    runtime_root: Path,
    database_url: str,
    *,
    existing_only: bool = False,
) -> tuple[Isolation, str]:
    """The confinement a server gives its passages, and a line for the log when it had to
    create the passage user. :class:`~kalends.errors.InvalidInput` on a bad option.

    ``existing_only`` (``kalends doctor``): hide only the directories that exist; the
    sandbox makes a mount point for each hidden one, and the doctor creates nothing."""
    note = ensure_passage_user(passage_user)
    hidden = _hidden(database_url, runtime_root)
    if existing_only:
        hidden = [path for path in hidden if path.exists()]
    isolation = resolve_isolation(passage_user=passage_user, sandbox=sandbox, hidden=hidden)
    return isolation, note
