"""Paired devices, statement by statement: issue a pairing link, read it, redeem it once.

A paired device is a phone or another browser that acts as its actor without a
password (SPEC §5: revocable expiring API tokens for paired devices). Its
credential is a row of ``api_tokens`` with ``device`` set, whose secret lives
in the device browser's cookie; it is never a bearer token
(:func:`~kalends.auth.tokens.find_token` does not find it).

A device is paired with a one-time link: its secret is random, kept as its
digest in ``device_pairings`` with the device's name and lifetime, and can be
redeemed for :data:`DEVICE_PAIRING_TTL`. Redeeming is a single compare-and-swap
on ``used_at``, so two redemptions racing cannot both win; the device's
lifetime starts then. A device is a principal only while it is still paired,
unrevoked and unexpired (seed 002, "Wayfinder human decision mark — both
execution modes": "The UI principal is explicit…").
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection

from kalends.auth import tokens
from kalends.auth.credentials import csrf_token_for, digest, new_secret
from kalends.auth.values import DeviceGrant, DevicePairing, PairingFacts, Principal
from kalends.errors import InvalidInput, LimitReached, NotFound
from kalends.identity import KnownActor, parse_uuid
from kalends.storage.auth_tables import device_pairings
from kalends.storage.identity_tables import actors

__all__ = [
    "DEVICE_PAIRING_TTL",
    "MAX_PENDING_PAIRINGS",
    "PAIRING_PATH",
    "PAIRING_REFUSED",
    "check_device_id",
    "check_lifetime",
    "device_principal",
    "issue_pairing",
    "pairing_facts",
    "pairing_url",
    "redeem_pairing",
]

# A pairing link can be redeemed this long after it was issued (as a login link).
DEVICE_PAIRING_TTL = timedelta(minutes=15)
# The most pairing links of one actor waiting to be opened at once (kalends' own bound:
# each lives DEVICE_PAIRING_TTL, and nobody pairs more devices than this in that time).
MAX_PENDING_PAIRINGS = 20
# Where the web pages answer a pairing link: ``{base URL}/pair/{secret}``.
PAIRING_PATH = "/pair"
# The one answer to a pairing link that cannot be redeemed, whichever the reason.
PAIRING_REFUSED = "pairing: this pairing link is unknown, used or expired"

_P = device_pairings.c


def pairing_url(base_url: str, secret: str) -> str:
    """The address of the pairing link ``secret`` on the server whose public URL is
    ``base_url``: open it in the device's browser."""
    return f"{base_url.rstrip('/')}{PAIRING_PATH}/{secret}"


def check_lifetime(expires_in: object) -> timedelta | None:
    """A device's lifetime as a token's (:func:`~kalends.auth.tokens.check_expires_in`),
    in whole seconds, as it is stored; ``None``: paired until revoked."""
    lifetime = tokens.check_expires_in(expires_in)
    if lifetime is not None and lifetime % timedelta(seconds=1):
        raise InvalidInput(
            f"expires_in: whole seconds, got {lifetime.total_seconds()}", field="expires_in"
        )
    return lifetime


def check_device_id(device_id: object) -> UUID:
    parsed = parse_uuid(device_id, "device")
    if parsed is None:
        raise InvalidInput(f"device: not a device ID: {device_id!r}", field="device")
    return parsed


def issue_pairing(
    conn: Connection, actor_id: UUID, name: str, lifetime: timedelta | None, now: datetime
) -> DevicePairing:
    """A new pairing link for a device of ``actor_id`` named ``name`` (checked); the actor's
    used and expired pairing links are removed on the way. Refused with
    :class:`LimitReached` when the actor has no room for another device, or has
    :data:`MAX_PENDING_PAIRINGS` links waiting."""
    tokens.check_room(conn, actor_id, now, device=True)
    conn.execute(
        delete(device_pairings).where(
            _P.actor_id == actor_id, or_(_P.used_at.is_not(None), _P.expires_at <= now)
        )
    )
    pending = conn.execute(select(func.count()).where(_P.actor_id == actor_id)).scalar_one()
    if pending >= MAX_PENDING_PAIRINGS:
        minutes = int(DEVICE_PAIRING_TTL.total_seconds() // 60)
        raise LimitReached(
            f"pairing: at most {MAX_PENDING_PAIRINGS} pairing links waiting to be opened; "
            f"each stops working {minutes} minutes after it was made",
            field="name",
        )
    secret = new_secret()
    expires_at = now + DEVICE_PAIRING_TTL
    conn.execute(
        insert(device_pairings).values(
            secret_hash=digest(secret),
            actor_id=actor_id,
            name=name,
            lifetime_seconds=None if lifetime is None else int(lifetime.total_seconds()),
            created_at=now,
            expires_at=expires_at,
        )
    )
    return DevicePairing(secret=secret, name=name, expires_at=expires_at, lifetime=lifetime)


def pairing_facts(conn: Connection, secret: str, now: datetime) -> PairingFacts:
    """What the link ``secret`` would pair, without using it; :class:`NotFound` when it
    cannot be redeemed."""
    row = conn.execute(
        select(_P.name, _P.expires_at, actors.c.handle)
        .join(actors, actors.c.id == _P.actor_id)
        .where(_P.secret_hash == digest(secret), _P.used_at.is_(None), _P.expires_at > now)
    ).first()
    if row is None:
        raise NotFound(PAIRING_REFUSED, field="pairing")
    return PairingFacts(name=row.name, handle=row.handle, expires_at=row.expires_at)


def redeem_pairing(conn: Connection, secret: str, now: datetime) -> DeviceGrant:
    """Use the link ``secret`` up and pair its device, whose credential is created now;
    :class:`NotFound` when it cannot be redeemed (then nothing is written)."""
    row = conn.execute(
        update(device_pairings)
        .where(_P.secret_hash == digest(secret), _P.used_at.is_(None), _P.expires_at > now)
        .values(used_at=now)
        .returning(_P.actor_id, _P.name, _P.lifetime_seconds)
    ).first()
    if row is None:
        raise NotFound(PAIRING_REFUSED, field="pairing")
    lifetime = None if row.lifetime_seconds is None else timedelta(seconds=row.lifetime_seconds)
    info, device_secret = tokens.create_token(
        conn, row.actor_id, row.name, lifetime, now, device=True
    )
    handle: str = conn.execute(
        select(actors.c.handle).where(actors.c.id == row.actor_id)
    ).scalar_one()
    principal = device_principal(info.actor_id, handle, info.id, device_secret)
    return DeviceGrant(
        secret=device_secret,
        principal=principal,
        expires_at=info.expires_at,
        name=info.name,
        token_id=info.id,
    )


def device_principal(actor_id: UUID, handle: str, token_id: UUID, secret: str) -> Principal:
    """The principal of the device whose credential is ``token_id`` and cookie secret
    ``secret``: its CSRF token is derived as a session's."""
    return Principal(
        actor_id=KnownActor.of(actor_id),
        handle=handle,
        kind="device",
        credential_id=token_id,
        csrf_token=csrf_token_for(secret),
    )
