"""What authentication hands out: the principal of a request, a new session, a token's facts,
a device pairing link and a paired device; and the live session or token a credential check
reads, as typed values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple
from uuid import UUID

__all__ = [
    "DeviceGrant",
    "DevicePairing",
    "LiveSession",
    "LiveToken",
    "LoginLink",
    "PairingFacts",
    "Principal",
    "SessionGrant",
    "TokenInfo",
]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as, and by which credential.

    ``kind`` names the credential: a login ``session`` (cookie), a program's API ``token``
    (bearer) or a paired ``device`` (its browser's device cookie); ``credential_id`` is
    the session's or the token row's ID. ``csrf_token`` is set for a session and a device
    only: the value the client echoes in the ``X-CSRF-Token`` header of every unsafe
    request.
    """

    actor_id: UUID
    handle: str
    kind: Literal["session", "token", "device"]
    credential_id: UUID
    csrf_token: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginLink:
    """A one-time login link just issued: ``secret`` goes into the link and is never stored."""

    secret: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class SessionGrant:
    """A session just opened: ``secret`` goes into the HttpOnly cookie and is never stored."""

    secret: str
    csrf_token: str
    principal: Principal
    expires_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class DevicePairing:
    """A one-time device pairing link just issued: ``secret`` goes into the link and is
    never stored. ``expires_at`` is when the link stops being redeemable; ``lifetime`` is
    how long the device stays paired once the link is opened (``None``: until revoked)."""

    secret: str
    name: str
    expires_at: datetime
    lifetime: timedelta | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PairingFacts:
    """What a pairing link would pair, for a page that asks to confirm it: the device's
    ``name``, the ``handle`` of the actor it would act as, and when the link expires."""

    name: str
    handle: str
    expires_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceGrant:
    """A device just paired: ``secret`` goes into the device browser's HttpOnly cookie and
    is never stored; ``token_id`` is its credential's ID (``principal.credential_id``);
    ``expires_at`` is ``None`` for a device paired until revoked."""

    secret: str
    principal: Principal
    expires_at: datetime | None
    name: str
    token_id: UUID


class LiveSession(NamedTuple):
    """A live session as the credential check reads it (the columns of
    :func:`~kalends.auth.sessions.find_session`'s statement, in order): what the principal
    is made of, and the last use that :func:`~kalends.auth.sessions.touch_session`
    compares against. A named tuple made by position: every request of a session reads one."""

    id: UUID
    actor_id: UUID
    last_seen_at: datetime
    handle: str

    @classmethod
    def from_row(cls, row: Any) -> LiveSession:
        return cls._make(row)


class LiveToken(NamedTuple):
    """A live API token as the credential check reads it (the columns of
    :func:`~kalends.auth.tokens.find_token`'s statement, in order); made as
    :class:`LiveSession` is."""

    id: UUID
    actor_id: UUID
    last_used_at: datetime | None
    handle: str

    @classmethod
    def from_row(cls, row: Any) -> LiveToken:
        return cls._make(row)


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """An API token as its owner sees it (never its secret); ``active`` as of when it was read.

    ``device`` tells a paired device's credential from a program's token."""

    id: UUID
    actor_id: UUID
    name: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    active: bool
    device: bool = False

    @classmethod
    def from_row(cls, row: Any, now: datetime) -> TokenInfo:
        return cls(
            id=row.id,
            actor_id=row.actor_id,
            name=row.name,
            created_at=row.created_at,
            expires_at=row.expires_at,
            revoked_at=row.revoked_at,
            last_used_at=row.last_used_at,
            active=row.revoked_at is None and (row.expires_at is None or row.expires_at > now),
            device=bool(row.device),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "createdAt": instant_json(self.created_at),
            "expiresAt": instant_json(self.expires_at),
            "revokedAt": instant_json(self.revoked_at),
            "lastUsedAt": instant_json(self.last_used_at),
            "active": self.active,
            "device": self.device,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, actor_id: UUID) -> TokenInfo:
        """The token :meth:`to_json` wrote; the JSON does not name its owner, who is
        ``actor_id``. A server older than paired devices wrote no ``device``: a token."""
        return cls(
            id=UUID(str(d["id"])),
            actor_id=actor_id,
            name=str(d["name"]),
            created_at=_instant(d["createdAt"]),
            expires_at=_maybe_instant(d["expiresAt"]),
            revoked_at=_maybe_instant(d["revokedAt"]),
            last_used_at=_maybe_instant(d["lastUsedAt"]),
            active=bool(d["active"]),
            device=bool(d.get("device", False)),
        )


def _instant(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _maybe_instant(value: Any) -> datetime | None:
    return None if value is None else _instant(value)


def instant_json(value: datetime | None) -> str | None:
    """An instant as ISO-8601 text ending in ``Z``, as the rest of the JSON interface writes it."""
    return None if value is None else value.isoformat().replace("+00:00", "Z")
