"""Live principals for the questions suite: a real cookie session opened with a one-time
login link, and a paired device's credential (an API token row marked ``device``), so
that a hand-over's acknowledgement finds them live, signed out, expired or revoked as
the auth tables say."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import insert, update

from kalends.auth import Accounts, digest, new_secret
from kalends.identity import Actor
from kalends.questions import Principal, PrincipalKind
from kalends.storage.auth_tables import api_tokens
from kalends.storage.unit_of_work import Store


@dataclass(frozen=True, slots=True)
class LiveSession:
    """A session as the web edge names it, and the cookie secret that signs it out."""

    principal: Principal
    secret: str


def live_session(store: Store, actor: Actor) -> LiveSession:
    """A real session of ``actor`` (an account is made for them if they have none)."""
    accounts = Accounts(store)
    accounts.ensure_account(actor.id)
    grant = accounts.redeem_login_link(accounts.issue_login_link(actor.id))
    who = Principal(
        kind=PrincipalKind.SESSION,
        id=str(grant.principal.credential_id),
        actor_id=actor.id,
    )
    return LiveSession(principal=who, secret=grant.secret)


def sign_out(store: Store, session: LiveSession) -> None:
    Accounts(store).logout(session.secret)


def paired_device(store: Store, actor: Actor) -> Principal:
    """A paired device of ``actor``: its credential, an API token row marked ``device``
    that never expires."""
    device_id = uuid.uuid4()
    with store.transaction() as conn:
        conn.execute(
            insert(api_tokens).values(
                id=device_id,
                actor_id=actor.id,
                name="phone",
                secret_hash=digest(new_secret("kdev_")),
                created_at=store.clock.now(),
                expires_at=None,
                revoked_at=None,
                device=True,
            )
        )
    return Principal(kind=PrincipalKind.DEVICE, id=str(device_id), actor_id=actor.id)


def revoke_device(store: Store, device: Principal) -> None:
    with store.transaction() as conn:
        conn.execute(
            update(api_tokens)
            .where(api_tokens.c.id == uuid.UUID(device.id))
            .values(revoked_at=store.clock.now())
        )
