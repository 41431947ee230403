"""The owner of a ``kalends serve`` database: its handle, the account the first start
creates with its one-time login link, and the base URL later login links name."""

from __future__ import annotations

import getpass
import logging
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kalends.cli.serve_options import ENV_BASE_URL, check_base_url
from kalends.errors import Conflict, InvalidInput, KalendsError
from kalends.identity import HANDLE_PATTERN

if TYPE_CHECKING:
    from kalends.auth import Accounts
    from kalends.bootstrap import Store

__all__ = [
    "FALLBACK_OWNER",
    "LATER_START_HINT",
    "check_handle",
    "default_owner_handle",
    "login_link_base",
    "record_base_url",
    "say",
    "welcome_owner",
]

# The owner's handle when the login name gives none.
FALLBACK_OWNER = "owner"
# What a later start says instead of a login link.
LATER_START_HINT = (
    "the owner account exists: `kalends login-link --as HANDLE` prints a fresh login link"
)
_NOT_HANDLE = re.compile(r"[^a-z0-9._-]+")

_log = logging.getLogger("kalends.serve")


def check_handle(text: str) -> str:
    """``text`` as an owner handle, else :class:`InvalidInput`."""
    handle = text.strip()
    if HANDLE_PATTERN.fullmatch(handle) is None:
        raise InvalidInput(
            f"owner: a handle of 1-64 lowercase letters, digits, '.', '_' or '-', got {text!r}",
            field="owner",
        )
    return handle


def default_owner_handle(environ: Mapping[str, str] | None = None) -> str:
    """The login name from the environment as a valid handle, else ``owner``.

    Uppercase becomes lowercase and every run of other characters one ``-``.
    """
    if environ is None:
        try:
            name = getpass.getuser()
        except (OSError, KeyError):
            name = ""
    else:
        name = next(
            (environ[k] for k in ("LOGNAME", "USER", "LNAME", "USERNAME") if environ.get(k)), ""
        )
    handle = _NOT_HANDLE.sub("-", name.strip().lower()).strip("._-")[:64].rstrip("._-")
    return handle if HANDLE_PATTERN.fullmatch(handle) else FALLBACK_OWNER


def login_link_base(given: str | None, store: Store) -> tuple[str, bool]:
    """The base URL of a login link: ``given`` (``--base-url``), else the one the last
    start recorded in the database, and whether it is that recorded one. While neither
    is there, :class:`InvalidInput`: a guessed port would print a link to nowhere."""
    from kalends.bootstrap import recorded_server_base_url  # noqa: PLC0415

    if given is not None and given.strip():
        return check_base_url(given), False
    recorded = recorded_server_base_url(store)
    if recorded is None:
        raise InvalidInput(
            "base-url: no `kalends serve` has started on this database yet, so its address "
            f"is unknown: give --base-url URL (or set {ENV_BASE_URL})",
            field="base_url",
        )
    return recorded, True


def say(line: str) -> None:
    """A line for the person who started the server, on stdout, at once."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def record_base_url(store: Store, base: str) -> None:
    """Keep ``base`` in the database for ``kalends login-link``; a database that takes no
    write now (read-only) keeps the last one recorded, and the server serves all the same."""
    from kalends.bootstrap import record_server_base_url  # noqa: PLC0415

    try:
        record_server_base_url(store, base)
    except KalendsError as exc:
        _log.warning(
            "cannot record the base URL for kalends login-link", extra={"error": exc.message}
        )


def welcome_owner(accounts: Accounts, handle: str, base: str) -> None:
    """Create the owner account and print its login link; or say how to get a link."""
    from kalends.auth.links import LOGIN_LINK_TTL  # noqa: PLC0415

    if not accounts.has_owner():
        try:
            _, secret = accounts.bootstrap_owner(handle, handle)
        except Conflict:
            pass  # another server on this database created it just now
        else:
            minutes = int(LOGIN_LINK_TTL.total_seconds() // 60)
            _log.info("owner account created", extra={"handle": handle})
            say(f"open this link once to log in as {handle}: {base}/api/auth/link?token={secret}")
            _log.info(f"the login link is valid for {minutes} minutes", extra={"handle": handle})
            return
    say(LATER_START_HINT)
