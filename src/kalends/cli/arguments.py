"""The arguments the conversation and question commands take alike: a workspace by name
or ID, the ID of one of its items, and with ``--expect`` the item's revision last read.

Each is checked here, before any read, so that bad input is refused in the same words
whether the command runs on a database or against a server.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from kalends.errors import InvalidInput

__all__ = ["WHEN", "WorkspaceArgument", "check_id", "expected_revision_of"]

WorkspaceArgument = Annotated[
    str, typer.Argument(metavar="WORKSPACE", help="Workspace name or ID.")
]

# How these commands print an instant (UTC, to the minute).
WHEN = "%Y-%m-%d %H:%M UTC"


def check_id(value: str, field: str) -> UUID:
    """``value`` as the ID of a ``field`` (``conversation``, ``message``, ``question``)."""
    try:
        return UUID(value.strip())
    except ValueError:
        raise InvalidInput(f"{field}: not a {field} ID: {value!r}", field=field) from None


def expected_revision_of(text: str | None, *, item: str, shown_by: str, minimum: int) -> int:
    """The ``--expect`` revision of an ``item`` (``message``, ``question``): a whole
    number of at least ``minimum``. Without one, the refusal names the command
    ``shown_by`` that shows it."""
    if text is None:
        raise InvalidInput(
            f"expect: pass the {item}'s revision with --expect REV (`{shown_by}` shows it)",
            field="expect",
        )
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidInput(
            f"expect: a revision is a whole number, got {text!r}", field="expect"
        ) from None
    if value < minimum:
        raise InvalidInput(f"expect: a revision is {minimum} or more, got {value}", field="expect")
    return value
