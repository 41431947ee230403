"""Authentication: accounts, cookie sessions, API tokens, paired devices, one-time login links,
throttling.

Typical use, from the HTTP layer::

    accounts = Accounts(store)
    grant = accounts.login("alice", password, remote=client_address)
    # set the cookie to grant.secret; the page echoes grant.csrf_token in X-CSRF-Token
    principal = accounts.authenticate_session(cookie_secret)
"""

from __future__ import annotations

from kalends.auth.accounts import Accounts
from kalends.auth.credentials import digest, new_secret, usable
from kalends.auth.devices import DEVICE_PAIRING_TTL, PAIRING_PATH, pairing_url
from kalends.auth.grants import Privilege
from kalends.auth.grants import require as require_privilege
from kalends.auth.links import LOGIN_LINK_TTL
from kalends.auth.liveness import principal_live
from kalends.auth.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from kalends.auth.sessions import SESSION_TTL
from kalends.auth.throttle import LoginThrottle
from kalends.auth.tokens import MAX_ACTIVE_TOKENS, MAX_TOKEN_LIFETIME, TOKEN_PREFIX
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

__all__ = [
    "DEVICE_PAIRING_TTL",
    "LOGIN_LINK_TTL",
    "MAX_ACTIVE_TOKENS",
    "MAX_PASSWORD_LENGTH",
    "MAX_TOKEN_LIFETIME",
    "MIN_PASSWORD_LENGTH",
    "PAIRING_PATH",
    "SESSION_TTL",
    "TOKEN_PREFIX",
    "Accounts",
    "DeviceGrant",
    "DevicePairing",
    "LoginLink",
    "LoginThrottle",
    "PairingFacts",
    "Principal",
    "Privilege",
    "SessionGrant",
    "TokenInfo",
    "digest",
    "instant_json",
    "new_secret",
    "pairing_url",
    "principal_live",
    "require_privilege",
    "usable",
]
