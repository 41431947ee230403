"""Only digests of secrets reach the database: no session, token or link secret, no CSRF
token and no password appears in any row of any table; on both backends."""

from __future__ import annotations

import hashlib

from auth.conftest import ALICE_PASSWORD, AuthWorld, stored_text


def sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def test_no_secret_is_stored_only_its_digest(aw: AuthWorld) -> None:
    grant = aw.accounts.login("alice", ALICE_PASSWORD)
    link = aw.accounts.issue_login_link(aw.bob.id)
    redeemed = aw.accounts.redeem_login_link(aw.accounts.issue_login_link(aw.bob.id))
    _, token = aw.accounts.create_token(aw.alice.id, "ci", expires_in=None)
    aw.accounts.authenticate_token(token)
    aw.accounts.authenticate_session(grant.secret)
    rows = stored_text(aw.store)
    secrets = [grant.secret, link, redeemed.secret, token]
    for secret in [*secrets, grant.csrf_token, redeemed.csrf_token, ALICE_PASSWORD]:
        assert secret not in rows
        # Not even a recognisable part of one.
        assert secret[-24:] not in rows
    # The rows searched are the right ones: they hold each secret's digest.
    for secret in secrets:
        assert sha256(secret) in rows
    assert "$argon2id$" in rows
