"""Whether a credential is still live: a cookie session neither revoked nor expired, or
a paired device's credential neither revoked nor expired (and a device's, never a
program's token). Others revalidate an interface principal with it across a hand-over
(seed 002, "Wayfinder human decision mark": the route and the callback revalidate the
principal across native I/O)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import or_, select
from sqlalchemy.engine import Connection

from kalends.identity import parse_uuid
from kalends.storage.auth_tables import api_tokens, auth_sessions

__all__ = ["principal_live"]

_S = auth_sessions.c
_T = api_tokens.c


def principal_live(conn: Connection, kind: str, credential_id: UUID | str, now: datetime) -> bool:
    """Whether the session (``kind="session"``) or paired device (``kind="device"``)
    ``credential_id`` is live at ``now``; anything else is not."""
    ident = parse_uuid(credential_id, "principal")
    if ident is None:
        return False
    if kind == "session":
        query = select(_S.id).where(_S.id == ident, _S.revoked_at.is_(None), _S.expires_at > now)
    elif kind == "device":
        query = select(_T.id).where(
            _T.id == ident,
            _T.device.is_(True),
            _T.revoked_at.is_(None),
            or_(_T.expires_at.is_(None), _T.expires_at > now),
        )
    else:
        return False
    return conn.execute(query).first() is not None
