"""What ``kalends token``, ``kalends device`` and ``kalends feed`` print, in either mode.

The three groups create, list and revoke a credential of the acting actor, locally or
against a server (``--server``), and print the answer the same way: a new credential's
secret once and plain, a table of them, or the one revoked. A credential is its JSON
(``to_json()``, as a server answers it too), so both modes print through one path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli.output import console, emit_json
from kalends.cli.remote import Remote
from kalends.cli.session import Session
from kalends.missions.runtime.passages import parse_instant

__all__ = [
    "LIFETIME_COLUMNS",
    "NEVER",
    "Column",
    "CredentialJson",
    "day",
    "print_created",
    "print_credentials",
    "print_revoked",
    "status",
    "when",
]

# A credential as JSON (``TokenInfo.to_json()``, ``FeedInfo.to_json()``).
CredentialJson = Mapping[str, Any]
# A column of the listing: its header and the cell of one credential.
Column = tuple[str, Callable[[CredentialJson], str]]

# What an expiry reads when there is none, and what ``--expires-in…`` takes for it.
NEVER = "never"
# The widest a name column starts before it folds (kalends decision: 80-column tables).
NAME_MIN_WIDTH = 24
# A UUID's length: an ID is never wrapped.
ID_WIDTH = 36


def when(value: object, empty: str = "-") -> str:
    """An instant of the JSON to the minute in UTC, or ``empty`` when there is none."""
    found = parse_instant(value)
    return empty if found is None else found.strftime("%Y-%m-%d %H:%M UTC")


def day(value: object, empty: str = "-") -> str:
    """The UTC day of an instant of the JSON, or ``empty`` when there is none."""
    found = parse_instant(value)
    return empty if found is None else found.strftime("%Y-%m-%d")


def status(credential: CredentialJson) -> str:
    """``revoked``, else ``active`` or ``expired``, of a credential that can expire."""
    if credential["revokedAt"] is not None:
        return "revoked"
    return "active" if credential["active"] else "expired"


# The columns of a credential with a lifetime (tokens, devices) besides name and id.
LIFETIME_COLUMNS: tuple[Column, ...] = (
    ("status", status),
    ("expires", lambda c: day(c["expiresAt"], NEVER)),
    ("last used", lambda c: day(c["lastUsedAt"])),
)


def print_created(
    s: Session | Remote,
    made: CredentialJson,
    *,
    headline: str,
    secret: str,
    note: str,
    credential_id: object | None = None,
) -> None:
    """Prints a new credential: with --json ``made``; else the headline, its ID when
    given, the secret (plain, never wrapped: people copy it) and a dim note after it."""
    if s.json_output:
        emit_json(made)
        return
    console.print(Text(headline), soft_wrap=True)
    if credential_id is not None:
        console.print(Text(f"id {credential_id}", style="dim"), soft_wrap=True)
    typer.echo(secret)
    console.print(Text(note, style="dim"), soft_wrap=True)
    s.local_note()


def print_credentials(
    s: Session | Remote,
    found: list[CredentialJson],
    *,
    nothing: str,
    columns: Sequence[Column],
    named: bool,
) -> None:
    """Prints the listing: with --json the credentials; else ``nothing`` (dim) when there
    are none, or a table of their name (when ``named``), ``columns`` and ID.

    The table is narrow enough for 80 columns; the times of day are in --json.
    """
    if s.json_output:
        emit_json(found)
        return
    if not found:
        console.print(Text(nothing, style="dim"), soft_wrap=True)
        return
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    if named:
        widest = max(len(str(c["name"])) for c in found)
        table.add_column("name", overflow="fold", min_width=min(NAME_MIN_WIDTH, widest))
    for header, _ in columns:
        table.add_column(header, no_wrap=True)
    table.add_column("id", no_wrap=True, min_width=ID_WIDTH)
    for credential in found:
        cells = [str(credential["name"])] if named else []
        cells += [cell(credential) for _, cell in columns]
        cells.append(str(credential["id"]))
        table.add_row(*(Text(c) for c in cells))
    console.print(table)


def print_revoked(
    s: Session | Remote, revoked: CredentialJson, done: str, *, with_id: bool = True
) -> None:
    """Prints a revoked credential: with --json the credential; else ``done`` with when it
    was revoked, then its ID (dim) unless ``done`` names it already."""
    if s.json_output:
        emit_json(revoked)
        return
    console.print(Text(f"{done} (revoked {when(revoked['revokedAt'])})"), soft_wrap=True)
    if with_id:
        console.print(Text(f"id {revoked['id']}", style="dim"), soft_wrap=True)
    s.local_note()
