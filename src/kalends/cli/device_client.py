"""What the device commands ask for, the same whether they run on a database or a server.

:class:`DevicesClient` mirrors the device methods of :class:`~kalends.auth.Accounts`,
the acting actor first. :class:`LocalDevices` is the accounts on the database, whoever
runs the command trusted as for tokens, with the address of a pairing link under
``--base-url`` (else the one the last ``kalends serve`` recorded); :class:`HttpDevices`
is the HTTP API's ``/api/auth/devices``, where the server gives the address. A new
pairing is answered as the API answers it: ``{"pairingUrl", "name", "expiresAt",
"lifetimeSeconds"}``. :func:`devices_of` picks one for a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from kalends.auth import TokenInfo, instant_json

if TYPE_CHECKING:
    from kalends.auth import Accounts
    from kalends.bootstrap import Services
    from kalends.cli.remote import Remote
    from kalends.cli.session import Session

__all__ = ["DEVICES_ROUTE", "DevicesClient", "HttpDevices", "LocalDevices", "devices_of"]

DEVICES_ROUTE = "/api/auth/devices"


class DevicesClient(Protocol):
    """The acting actor's paired devices (:class:`~kalends.auth.Accounts`)."""

    def pair(
        self, actor: UUID | str, name: str, expires_in: timedelta | None, *, base_url: str | None
    ) -> dict[str, Any]:
        """A one-time pairing link for a new device of the actor, as JSON. ``base_url``:
        the server's public URL for the link (``None``: the one recorded; a server gives
        its own)."""
        ...

    def list(self, actor: UUID | str) -> list[TokenInfo]:
        """The actor's paired devices, newest first, revoked and expired ones included."""
        ...

    def revoke(self, actor: UUID | str, device: UUID | str) -> TokenInfo:
        """Unpairs one of the actor's devices; revoking a revoked one changes nothing."""
        ...


@dataclass(frozen=True, slots=True)
class LocalDevices:
    """The accounts on the database (local mode)."""

    accounts: Accounts
    services: Services

    def pair(
        self, actor: UUID | str, name: str, expires_in: timedelta | None, *, base_url: str | None
    ) -> dict[str, Any]:
        # The base URL is settled first: without one, nothing is written.
        from kalends.auth import pairing_url  # noqa: PLC0415
        from kalends.cli.serve import login_link_base  # noqa: PLC0415

        base, _recorded = login_link_base(base_url, self.services.store)
        made = self.accounts.pair_device_as(actor, name, expires_in)
        return {
            "pairingUrl": pairing_url(base, made.secret),
            "name": made.name,
            "expiresAt": instant_json(made.expires_at),
            "lifetimeSeconds": (
                None if made.lifetime is None else int(made.lifetime.total_seconds())
            ),
        }

    def list(self, actor: UUID | str) -> list[TokenInfo]:
        return self.accounts.devices(actor)

    def revoke(self, actor: UUID | str, device: UUID | str) -> TokenInfo:
        return self.accounts.revoke_device_as(actor, device)


class DeviceWire(Protocol):
    """The requests a server-mode session sends (:class:`~kalends.cli.remote.Remote`)."""

    def get(self, path: str, **params: Any) -> Any: ...

    def post(self, path: str, body: Any = None) -> Any: ...

    def delete(self, path: str, **params: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class HttpDevices:
    """The device routes of the HTTP API; the owner, whom the JSON does not name, is the
    caller."""

    wire: DeviceWire

    def _owner(self, actor: UUID | str) -> UUID:
        """The caller's actor ID: ``actor`` when it is one, else the server's answer."""
        try:
            return UUID(str(actor))
        except ValueError:
            return UUID(str(self.wire.get("/api/auth/me")["actor"]["id"]))

    def pair(
        self, actor: UUID | str, name: str, expires_in: timedelta | None, *, base_url: str | None
    ) -> dict[str, Any]:
        seconds = None if expires_in is None else int(expires_in.total_seconds())
        made: dict[str, Any] = self.wire.post(DEVICES_ROUTE, {"name": name, "expiresIn": seconds})
        return made

    def list(self, actor: UUID | str) -> list[TokenInfo]:
        found = self.wire.get(DEVICES_ROUTE)
        if not found:
            return []
        owner = self._owner(actor)
        return [TokenInfo.from_json(d, actor_id=owner) for d in found]

    def revoke(self, actor: UUID | str, device: UUID | str) -> TokenInfo:
        from kalends.cli.http import path_part  # noqa: PLC0415

        revoked = self.wire.delete(f"{DEVICES_ROUTE}/{path_part(str(device))}")
        return TokenInfo.from_json(revoked, actor_id=self._owner(actor))


def devices_of(s: Session | Remote) -> DevicesClient:
    """The devices of a session: the accounts in local mode, the HTTP API on a server."""
    from kalends.cli.remote import Remote  # noqa: PLC0415

    if isinstance(s, Remote):
        return HttpDevices(s)
    return LocalDevices(s.accounts(), s.services)
