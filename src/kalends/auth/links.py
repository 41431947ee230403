"""One-time login links, statement by statement: issue, redeem once, void.

A link is a random secret valid for :data:`LOGIN_LINK_TTL`; redeeming it is a
single compare-and-swap on ``used_at``, so two redemptions racing cannot both win.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.engine import Connection

from kalends.auth.credentials import digest, new_secret
from kalends.storage.auth_tables import login_links

__all__ = ["LOGIN_LINK_TTL", "issue_link", "link_expiry", "redeem_link", "void_links"]

# A login link can be redeemed this long after it was issued.
LOGIN_LINK_TTL = timedelta(minutes=15)


def issue_link(conn: Connection, actor_id: UUID, now: datetime) -> str:
    """A new link secret for ``actor_id``; the actor's used and expired links are removed."""
    conn.execute(
        delete(login_links).where(
            login_links.c.actor_id == actor_id,
            or_(login_links.c.used_at.is_not(None), login_links.c.expires_at <= now),
        )
    )
    secret = new_secret()
    conn.execute(
        insert(login_links).values(
            secret_hash=digest(secret),
            actor_id=actor_id,
            created_at=now,
            expires_at=now + LOGIN_LINK_TTL,
        )
    )
    return secret


def link_expiry(conn: Connection, secret: str) -> datetime:
    """When the link ``secret`` (known to exist) stops being redeemable."""
    expires_at: datetime = conn.execute(
        select(login_links.c.expires_at).where(login_links.c.secret_hash == digest(secret))
    ).scalar_one()
    return expires_at


def redeem_link(conn: Connection, secret: str, now: datetime) -> UUID | None:
    """Mark the link ``secret`` used and return its actor; ``None`` if unknown, used or expired."""
    actor_id: UUID | None = conn.execute(
        update(login_links)
        .where(
            login_links.c.secret_hash == digest(secret),
            login_links.c.used_at.is_(None),
            login_links.c.expires_at > now,
        )
        .values(used_at=now)
        .returning(login_links.c.actor_id)
    ).scalar()
    return actor_id


def void_links(conn: Connection, actor_id: UUID) -> None:
    """Remove the links of ``actor_id`` not yet redeemed."""
    conn.execute(
        delete(login_links).where(
            login_links.c.actor_id == actor_id, login_links.c.used_at.is_(None)
        )
    )
