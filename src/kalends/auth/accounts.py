"""Accounts: who may sign in, and every way in — password, login link, session, API token,
paired device.

Each operation that writes is one transaction. Argon2 runs outside them, so a
slow hash never holds the database's write lock: a password is verified
against the hash read in one transaction, and the transaction that then writes
proceeds only while the account still holds that very hash. Checking a
session or a token reads; it writes (the last use) at most once a minute.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID

from argon2 import PasswordHasher
from sqlalchemy import exists, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.auth import devices, links, sessions, tokens
from kalends.auth.credentials import usable
from kalends.auth.passwords import Passwords, check_new_password
from kalends.auth.throttle import LoginKey, LoginThrottle, throttle_key
from kalends.auth.values import (
    DeviceGrant,
    DevicePairing,
    LoginLink,
    PairingFacts,
    Principal,
    SessionGrant,
    TokenInfo,
    instant_json,
)
from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthenticated
from kalends.identity import (
    Actor,
    ActorDirectory,
    KnownActor,
    normalize_handle,
    parse_uuid,
    resolve_actor,
)
from kalends.storage.auth_tables import accounts
from kalends.storage.identity_tables import actors
from kalends.storage.unit_of_work import Store, for_update, lock_store

__all__ = ["DEVICE_CANNOT_PAIR", "DEVICE_UNPAIRS_ONLY_ITSELF", "WRONG_CREDENTIALS", "Accounts"]

# The one answer to every failed login, so that it does not tell which part was wrong.
WRONG_CREDENTIALS = "wrong handle or password"
# Why a paired device may not pair another, nor revoke another (seed 002, "The UI
# principal is explicit": a device is a principal of its own, never more).
DEVICE_CANNOT_PAIR = (
    "a paired device cannot pair another device: sign in with a password or use an API token"
)
DEVICE_UNPAIRS_ONLY_ITSELF = (
    "a paired device can unpair only itself: sign in with a password or use an API token"
)
# The longest handle an actor can have; a longer one is looked up as no one.
MAX_HANDLE_LENGTH = 64
# Serialises bootstraps of one store on PostgreSQL, where no row exists yet to lock
# ("kown").
_BOOTSTRAP_LOCK_KEY = 0x6B6F776E

T = TypeVar("T")
# A write that records a credential's use, left to the caller (see Accounts.check_token).
Touch = Callable[[], None]


class Accounts:
    """Accounts, sessions, tokens and login links over one store.

    ``throttle`` delays failed password checks (login and password change) per account
    and address; by default one per instance on the store's clock. ``hasher`` is the argon2id
    hasher; hashes made with other parameters are renewed at the next login.
    """

    def __init__(
        self,
        store: Store,
        *,
        throttle: LoginThrottle | None = None,
        hasher: PasswordHasher | None = None,
    ) -> None:
        self.store = store
        self.throttle = throttle if throttle is not None else LoginThrottle(store.clock)
        self.passwords = Passwords(hasher)
        # Credentials whose use is being recorded, and since when (see _touch_once).
        self._touching: dict[tuple[str, UUID], datetime] = {}
        self._touching_lock = threading.Lock()

    # --- accounts ----------------------------------------------------------------------

    def has_owner(self) -> bool:
        """Whether an owner account exists (else the instance awaits its bootstrap)."""
        return self.store.run(_has_owner, write=False)

    def bootstrap_owner(
        self, handle: str, display_name: str, email: str | None = None
    ) -> tuple[UUID, str]:
        """Create the owner's account, without a password, and a login link to get in.

        The actor ``handle`` is created unless it exists. Once an owner exists this
        is :class:`Conflict` and nothing is written. Returns the actor's ID and the
        link's secret.
        """

        def run(conn: Connection) -> tuple[UUID, str]:
            lock_store(conn, _BOOTSTRAP_LOCK_KEY)
            if _has_owner(conn):
                raise Conflict("an owner account exists already; sign in as the owner")
            actor_id: UUID | None = conn.execute(
                select(actors.c.id).where(actors.c.handle == handle)
            ).scalar()
            if actor_id is None:
                actor_id = ActorDirectory(self.store).add_actor(handle, display_name, email).id
            now = self.store.clock.now()
            if not _ensure_account(conn, actor_id, now, owner=True):
                conn.execute(
                    update(accounts).where(accounts.c.actor_id == actor_id).values(is_owner=True)
                )
            return actor_id, links.issue_link(conn, actor_id, now)

        return self.store.run(run)

    def ensure_account(self, actor: UUID | str) -> None:
        """Give the existing actor an account without a password, unless it has one."""

        def run(conn: Connection) -> None:
            _ensure_account(conn, resolve_actor(conn, actor), self.store.clock.now(), owner=False)

        self.store.run(run)

    def account(self, actor: UUID | str) -> dict[str, Any]:
        """The actor's account as JSON: the actor, ``isOwner``, ``hasPassword``, ``createdAt``."""

        def run(conn: Connection) -> dict[str, Any]:
            actor_id = resolve_actor(conn, actor)
            row = conn.execute(
                select(
                    actors,
                    accounts.c.is_owner,
                    accounts.c.password_hash,
                    accounts.c.created_at.label("account_created_at"),
                )
                .join(accounts, accounts.c.actor_id == actors.c.id)
                .where(actors.c.id == actor_id)
            ).first()
            if row is None:
                raise NotFound(f"account: actor {actor!r} has no account", field="actor")
            return {
                "actor": Actor.from_row(row).to_json(),
                "isOwner": row.is_owner,
                "hasPassword": row.password_hash is not None,
                "createdAt": instant_json(row.account_created_at),
            }

        return self.store.run(run, write=False)

    # --- login links -------------------------------------------------------------------

    def issue_login_link(self, actor: UUID | str) -> str:
        """A one-time login link secret for the actor's account, valid for LOGIN_LINK_TTL."""

        return self.login_link(actor).secret

    def login_link(self, actor: UUID | str) -> LoginLink:
        """A one-time login link for the actor's account, with the instant it expires
        (LOGIN_LINK_TTL from now); an actor without an account is :class:`NotFound`."""

        def run(conn: Connection) -> LoginLink:
            actor_id = resolve_actor(conn, actor)
            _account_row(conn, actor_id, actor)
            secret = links.issue_link(conn, actor_id, self.store.clock.now())
            return LoginLink(secret=secret, expires_at=links.link_expiry(conn, secret))

        return self.store.run(run)

    def redeem_login_link(self, secret: str, *, remote: str = "") -> SessionGrant:
        """Open a session with the link ``secret``, once; unknown, used or expired links are
        :class:`Unauthenticated` and write nothing.

        Never throttled: a link works however many passwords failed. Redeeming it counts
        as the account signing in from ``remote``, which clears that address's failures
        on the account (see :meth:`LoginThrottle.succeeded`).
        """
        refused = Unauthenticated("this login link is unknown, used or expired")
        if not usable(secret):
            raise refused

        def run(conn: Connection) -> SessionGrant:
            now = self.store.clock.now()
            actor_id = links.redeem_link(conn, secret, now)
            if actor_id is None:
                raise refused
            return sessions.open_session(conn, actor_id, now)

        grant = self.store.run(run)
        self.throttle.succeeded(throttle_key(grant.principal.handle, remote))
        return grant

    # --- passwords ---------------------------------------------------------------------

    def set_password(
        self,
        actor: UUID | str,
        new_password: str,
        *,
        current_password: str | None,
        keep_session: UUID | None = None,
        remote: str = "",
        reset: bool = False,
    ) -> None:
        """Set the account's password and revoke every session of the actor but ``keep_session``.

        When the account has a password, ``current_password`` must match it, else
        :class:`Unauthenticated`, counted by the throttle as a failed login from
        ``remote``; ``reset`` skips that check (whoever runs the CLI on the database
        itself, local mode). Unredeemed login links are voided too; API tokens stay.
        """
        password = check_new_password(new_password)
        keep = None if keep_session is None else parse_uuid(keep_session, "keep_session")
        if keep_session is not None and keep is None:
            raise InvalidInput("keep_session: must be a session ID", field="keep_session")

        def read(conn: Connection) -> tuple[UUID, Any]:
            actor_id = resolve_actor(conn, actor)
            return actor_id, _account_row(conn, actor_id, actor)

        actor_id, row = self.store.run(read, write=False)
        stored: str | None = row.password_hash
        if stored is not None and not reset:

            def verify() -> None:
                if current_password is None or not self.passwords.verify(stored, current_password):
                    raise Unauthenticated("the current password is wrong")

            self._throttled(throttle_key(row.handle, remote), verify)
        new_hash = self.passwords.hash(password)

        def write(conn: Connection) -> None:
            now = self.store.clock.now()
            if not _still(conn, actor_id, stored):
                raise Conflict("password: it was changed meanwhile; nothing was written")
            conn.execute(
                update(accounts)
                .where(accounts.c.actor_id == actor_id)
                .values(password_hash=new_hash, password_changed_at=now)
            )
            sessions.revoke_sessions(conn, actor_id, now, keep=keep)
            links.void_links(conn, actor_id)

        self.store.run(write)

    def login(self, handle: str, password: str, *, remote: str = "") -> SessionGrant:
        """Open a session for the handle's account if ``password`` matches.

        The handle is normalised once (:func:`normalize_handle`), and that name is both
        throttled and looked up. Refused with :class:`RateLimited` (nothing written) while
        the throttle delays the name from ``remote``, whether or not it has an account;
        otherwise every failure is the same :class:`Unauthenticated`, after the same
        argon2 work.
        """
        name = normalize_handle(handle) if isinstance(handle, str) else ""

        def read(conn: Connection) -> Any:
            return conn.execute(
                select(accounts.c.actor_id, accounts.c.password_hash)
                .join(actors, actors.c.id == accounts.c.actor_id)
                .where(actors.c.handle == name)
            ).first()

        def attempt() -> SessionGrant:
            row = self.store.run(read, write=False) if 0 < len(name) <= MAX_HANDLE_LENGTH else None
            stored: str | None = None if row is None else row.password_hash
            if not self.passwords.verify(stored, password) or row is None or stored is None:
                raise Unauthenticated(WRONG_CREDENTIALS)
            rehashed = (
                self.passwords.hash(password) if self.passwords.needs_rehash(stored) else None
            )

            def write(conn: Connection) -> SessionGrant:
                if not _still(conn, row.actor_id, stored):
                    raise Unauthenticated(WRONG_CREDENTIALS)
                if rehashed is not None:
                    conn.execute(
                        update(accounts)
                        .where(accounts.c.actor_id == row.actor_id)
                        .values(password_hash=rehashed)
                    )
                return sessions.open_session(conn, row.actor_id, self.store.clock.now())

            return self.store.run(write)

        return self._throttled(throttle_key(name, remote), attempt)

    # --- sessions ----------------------------------------------------------------------

    def authenticate_session(self, secret: str) -> Principal:
        """The principal of the live session whose cookie secret is ``secret``; else
        :class:`Unauthenticated`. A use moves the session's expiry to SESSION_TTL from now."""
        found, touch = self.check_session(secret)
        if touch is not None:
            touch()
        return found

    def check_session(self, secret: str) -> tuple[Principal, Touch | None]:
        """:meth:`authenticate_session` as a read only: the principal, and the write that
        records the use (``None`` when none is due) for the caller to run, in a thread that
        may wait for the database's write lock."""
        refused = Unauthenticated("the session is unknown, expired or revoked; sign in again")
        if not usable(secret):
            raise refused
        now = self.store.clock.now()
        row = self.store.run(lambda conn: sessions.find_session(conn, secret, now), write=False)
        if row is None:
            raise refused
        touch: Touch | None = None
        if now - row.last_seen_at >= sessions.TOUCH_INTERVAL:
            touch = self._touch_once(
                ("session", row.id),
                now,
                lambda: self.store.run(lambda conn: sessions.touch_session(conn, row, now)),
            )
        return sessions.session_principal(row, secret), touch

    def logout(self, secret: str) -> None:
        """Revoke the session whose cookie secret is ``secret``; an unknown one is no error."""
        if not usable(secret):
            return

        self.store.run(lambda conn: sessions.revoke_session(conn, secret, self.store.clock.now()))

    # --- API tokens --------------------------------------------------------------------

    def create_token(
        self, actor: UUID | str, name: str, *, expires_in: timedelta | None
    ) -> tuple[TokenInfo, str]:
        """A new API token of the actor, and its secret (shown this once, never stored)."""
        label = tokens.check_token_name(name)
        lifetime = tokens.check_expires_in(expires_in)

        def run(conn: Connection) -> tuple[TokenInfo, str]:
            actor_id = resolve_actor(conn, actor)
            return tokens.create_token(conn, actor_id, label, lifetime, self.store.clock.now())

        return self.store.run(run)

    def tokens(self, actor: UUID | str) -> list[TokenInfo]:
        """The actor's own program tokens, newest first, revoked and expired ones included;
        paired devices are listed by :meth:`devices`, not here."""

        def run(conn: Connection) -> list[TokenInfo]:
            actor_id = resolve_actor(conn, actor)
            return tokens.list_tokens(conn, actor_id, self.store.clock.now())

        return self.store.run(run, write=False)

    def revoke_token(self, actor: UUID | str, token_id: UUID | str) -> TokenInfo:
        """Revoke one of the actor's own tokens (another's is :class:`NotFound`); idempotent.
        A paired device's ID is :class:`NotFound` too: :meth:`revoke_device` revokes it."""
        parsed = tokens.check_token_id(token_id)

        def run(conn: Connection) -> TokenInfo:
            actor_id = resolve_actor(conn, actor)
            return tokens.revoke_token(conn, actor_id, parsed, self.store.clock.now())

        return self.store.run(run)

    def authenticate_token(self, secret: str) -> Principal:
        """The principal of the live API token ``secret``; else :class:`Unauthenticated`."""
        found, touch = self.check_token(secret)
        if touch is not None:
            touch()
        return found

    def check_token(self, secret: str) -> tuple[Principal, Touch | None]:
        """:meth:`authenticate_token` as a read only: the principal, and the write that
        records the use (``None`` when none is due), as :meth:`check_session` does."""
        refused = Unauthenticated("the API token is unknown, expired or revoked")
        if not usable(secret, tokens.TOKEN_PREFIX):
            raise refused
        now = self.store.clock.now()
        row = self.store.run(lambda conn: tokens.find_token(conn, secret, now), write=False)
        if row is None:
            raise refused
        touch: Touch | None = None
        if row.last_used_at is None or now - row.last_used_at >= sessions.TOUCH_INTERVAL:
            touch = self._touch_once(
                ("token", row.id),
                now,
                lambda: self.store.run(lambda conn: tokens.touch_token(conn, row, now)),
            )

        found = Principal(
            actor_id=KnownActor.of(row.actor_id),
            handle=row.handle,
            kind="token",
            credential_id=row.id,
            csrf_token=None,
        )
        return found, touch

    # --- paired devices ----------------------------------------------------------------

    def pair_device(
        self, principal: Principal, name: object, expires_in: object = None
    ) -> DevicePairing:
        """A one-time link that pairs a device named ``name`` as the principal's actor,
        redeemable for DEVICE_PAIRING_TTL; the device then lives ``expires_in`` (a
        duration up to MAX_TOKEN_LIFETIME; ``None``: until revoked). A paired device may not
        pair another (:class:`Forbidden`); bad input and refusals write nothing."""
        if principal.kind == "device":
            raise Forbidden(DEVICE_CANNOT_PAIR)
        return self.pair_device_as(principal.actor_id, name, expires_in)

    def pair_device_as(
        self, actor: UUID | str, name: object, expires_in: object = None
    ) -> DevicePairing:
        """:meth:`pair_device` for the actor named by whoever runs the CLI on the database
        itself (local mode), who is trusted as for tokens."""
        label = tokens.check_token_name(name)
        lifetime = devices.check_lifetime(expires_in)

        def run(conn: Connection) -> DevicePairing:
            actor_id = resolve_actor(conn, actor)
            return devices.issue_pairing(conn, actor_id, label, lifetime, self.store.clock.now())

        return self.store.run(run)

    def pairing_facts(self, secret: str) -> PairingFacts:
        """What the pairing link ``secret`` would pair (for a page that asks to confirm),
        without using it up; :class:`NotFound` when it is unknown, used or expired."""
        if not usable(secret):
            raise NotFound(devices.PAIRING_REFUSED, field="pairing")
        return self.store.run(
            lambda conn: devices.pairing_facts(conn, secret, self.store.clock.now()),
            write=False,
        )

    def redeem_pairing(self, secret: str) -> DeviceGrant:
        """Pair the device of the link ``secret``, once: its credential's secret goes into
        the device browser's cookie. Unknown, used or expired links are :class:`NotFound`,
        and of two redemptions racing one wins; both refusals write nothing."""
        if not usable(secret):
            raise NotFound(devices.PAIRING_REFUSED, field="pairing")
        return self.store.run(
            lambda conn: devices.redeem_pairing(conn, secret, self.store.clock.now())
        )

    def check_device(self, secret: str) -> tuple[Principal, Touch | None]:
        """The principal of the live paired device whose cookie secret is ``secret``, and
        the write that records the use (``None`` when none is due), as :meth:`check_token`;
        an unknown, revoked or expired device (or a program token's secret) is
        :class:`Unauthenticated`."""
        refused = Unauthenticated("this device is not paired, or its pairing expired or ended")
        if not usable(secret):
            raise refused
        now = self.store.clock.now()
        row = self.store.run(lambda conn: tokens.find_device(conn, secret, now), write=False)
        if row is None:
            raise refused
        touch: Touch | None = None
        if row.last_used_at is None or now - row.last_used_at >= sessions.TOUCH_INTERVAL:
            touch = self._touch_once(
                ("device", row.id),
                now,
                lambda: self.store.run(lambda conn: tokens.touch_token(conn, row, now)),
            )
        return devices.device_principal(row.actor_id, row.handle, row.id, secret), touch

    def devices(self, actor: UUID | str) -> list[TokenInfo]:
        """The actor's paired devices, newest first, revoked and expired ones included."""

        def run(conn: Connection) -> list[TokenInfo]:
            actor_id = resolve_actor(conn, actor)
            return tokens.list_tokens(conn, actor_id, self.store.clock.now(), device=True)

        return self.store.run(run, write=False)

    def revoke_device(self, principal: Principal, device_id: UUID | str) -> TokenInfo:
        """Unpair one of the principal's actor's devices; idempotent. A paired device may
        revoke itself only (:class:`Forbidden` for another); a session or an API token any
        of the actor's devices. Another actor's device, or a program token's ID, is
        :class:`NotFound`."""
        parsed = devices.check_device_id(device_id)
        if principal.kind == "device" and parsed != principal.credential_id:
            raise Forbidden(DEVICE_UNPAIRS_ONLY_ITSELF)
        return self.revoke_device_as(principal.actor_id, parsed)

    def revoke_device_as(self, actor: UUID | str, device_id: UUID | str) -> TokenInfo:
        """:meth:`revoke_device` for the actor named by whoever runs the CLI on the
        database itself (local mode)."""
        parsed = devices.check_device_id(device_id)

        def run(conn: Connection) -> TokenInfo:
            actor_id = resolve_actor(conn, actor)
            return tokens.revoke_token(conn, actor_id, parsed, self.store.clock.now(), device=True)

        return self.store.run(run)

    # --- helpers -----------------------------------------------------------------------

    def _touch_once(
        self, key: tuple[str, UUID], now: datetime, write: Callable[[], None]
    ) -> Touch | None:
        """``write`` (recording a credential's use) unless another request of this process
        is recording that credential's use already: without this, every request in flight
        when a use falls due would queue a write of its own and wait for it. A use whose
        write never ran (its request failed first) is recorded again after TOUCH_INTERVAL.
        """
        with self._touching_lock:
            since = self._touching.get(key)
            if since is not None and now - since < sessions.TOUCH_INTERVAL:
                return None
            self._touching[key] = now

        def touch() -> None:
            try:
                write()
            finally:
                with self._touching_lock:
                    if self._touching.get(key) == now:
                        del self._touching[key]

        return touch

    def _throttled(self, key: LoginKey, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` counted by the throttle: refused while delayed, failed unless it
        returns."""
        self.throttle.attempt(key)
        try:
            result = attempt()
        except BaseException:
            self.throttle.failed(key)
            raise
        self.throttle.succeeded(key)
        return result


def _has_owner(conn: Connection) -> bool:
    return bool(conn.execute(select(exists().where(accounts.c.is_owner.is_(True)))).scalar())


def _ensure_account(conn: Connection, actor_id: UUID, now: datetime, *, owner: bool) -> bool:
    """Create the actor's account unless it exists; whether this created it."""
    found = conn.execute(
        select(accounts.c.actor_id).where(accounts.c.actor_id == actor_id)
    ).scalar()
    if found is not None:
        return False
    try:
        with conn.begin_nested():
            conn.execute(
                insert(accounts).values(
                    actor_id=actor_id, password_hash=None, is_owner=owner, created_at=now
                )
            )
    except IntegrityError:
        # Created by a concurrent transaction between the read and the insert.
        return False
    return True


def _account_row(conn: Connection, actor_id: UUID, actor: UUID | str) -> Any:
    row = conn.execute(
        select(accounts.c.password_hash, actors.c.handle)
        .join(actors, actors.c.id == accounts.c.actor_id)
        .where(accounts.c.actor_id == actor_id)
    ).first()
    if row is None:
        raise NotFound(f"account: actor {actor!r} has no account", field="actor")
    return row


def _still(conn: Connection, actor_id: UUID, stored: str | None) -> bool:
    """Whether the account still holds the password hash ``stored`` (locked until commit)."""
    row = conn.execute(
        for_update(select(accounts.c.password_hash).where(accounts.c.actor_id == actor_id))
    ).first()
    return row is not None and row.password_hash == stored
