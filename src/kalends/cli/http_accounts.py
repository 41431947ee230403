"""Server mode's :class:`~kalends.cli.account_client.AccountsClient`: the token routes
of the HTTP API (``/api/tokens``), the answers read back with
:meth:`~kalends.auth.values.TokenInfo.from_json`.

A token never poses as a login session and creating one needs a session, so
:meth:`HttpAccounts.create_token` asks the owner's password (or reads it from standard
input) and trades it for the new token (``POST /api/auth/tokens/exchange``); the token
the session sends is left as it is. The server's token JSON does not name the owner: it
is the caller, whose ID ``GET /api/auth/me`` gives, asked once a token is read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol
from uuid import UUID

from kalends.auth.values import TokenInfo
from kalends.cli.http import EXCHANGE_ROUTE, path_part

__all__ = ["AccountWire", "HttpAccounts"]


class AccountWire(Protocol):
    """The requests a server-mode session sends, and its principal's handle
    (:class:`~kalends.cli.remote.Remote`)."""

    @property
    def actor(self) -> str: ...

    def get(self, path: str, **params: Any) -> Any: ...

    def post(self, path: str, body: Any = None) -> Any: ...

    def delete(self, path: str, **params: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class HttpAccounts:
    wire: AccountWire
    password_stdin: bool = False

    def _owner(self, actor: UUID | str) -> UUID:
        """The caller's actor ID: ``actor`` when it is one, else the server's answer."""
        try:
            return UUID(str(actor))
        except ValueError:
            return UUID(str(self.wire.get("/api/auth/me")["actor"]["id"]))

    def create_token(
        self, actor: UUID | str, name: str, *, expires_in: timedelta | None
    ) -> tuple[TokenInfo, str]:
        # kalends.cli.login builds on the remote session, which offers this client.
        from kalends.cli.login import read_password  # noqa: PLC0415

        password = read_password(self.password_stdin)
        body = {
            "handle": self.wire.actor,
            "password": password,
            "name": name,
            "expiresInDays": None if expires_in is None else expires_in.days,
        }
        made = self.wire.post(EXCHANGE_ROUTE, body)
        info = TokenInfo.from_json(made["token"], actor_id=self._owner(actor))
        return info, str(made["secret"])

    def tokens(self, actor: UUID | str) -> list[TokenInfo]:
        found = self.wire.get("/api/tokens")
        if not found:
            return []
        owner = self._owner(actor)
        return [TokenInfo.from_json(d, actor_id=owner) for d in found]

    def revoke_token(self, actor: UUID | str, token_id: UUID | str) -> TokenInfo:
        revoked = self.wire.delete(f"/api/tokens/{path_part(str(token_id))}")
        return TokenInfo.from_json(revoked, actor_id=self._owner(actor))
