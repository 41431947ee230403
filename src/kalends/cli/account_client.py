"""What the token commands ask for, the same whether they run on a database or a server.

:class:`AccountsClient` mirrors the token methods of :class:`~kalends.auth.Accounts`,
the acting actor first, so the service itself is the local implementation.
:class:`~kalends.cli.http_accounts.HttpAccounts` implements it over the HTTP API as the
token's owner: a token cannot create tokens, so creating one trades the owner's password
for it, as ``kalends login`` does.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol
from uuid import UUID

from kalends.auth.values import TokenInfo

__all__ = ["AccountSession", "AccountsClient"]


class AccountsClient(Protocol):
    """The acting actor's API tokens (:class:`~kalends.auth.Accounts`)."""

    def create_token(
        self, actor: UUID | str, name: str, *, expires_in: timedelta | None
    ) -> tuple[TokenInfo, str]:
        """A new API token of the actor, and its secret (shown this once, never stored)."""
        ...

    def tokens(self, actor: UUID | str) -> list[TokenInfo]:
        """The actor's own tokens, newest first, revoked and expired ones included."""
        ...

    def revoke_token(self, actor: UUID | str, token_id: UUID | str) -> TokenInfo:
        """Revokes one of the actor's own tokens; revoking a revoked one changes nothing."""
        ...


class AccountSession(Protocol):
    """What a token command asks of its session, local or on a server (a
    :class:`~kalends.cli.session.Reporter` too)."""

    @property
    def json_output(self) -> bool: ...

    @property
    def actor(self) -> str: ...

    def local_note(self) -> None: ...

    def accounts(self, *, password_stdin: bool = False) -> AccountsClient:
        """The token methods; on a server, creating a token asks the password (or reads
        it from standard input with ``password_stdin``). Local mode asks none."""
        ...
