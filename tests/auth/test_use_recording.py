"""Recording a credential's use: once a minute, and once however many requests arrive
together when it falls due (each would otherwise queue a write and wait for it)."""

from __future__ import annotations

from datetime import timedelta

from auth.conftest import AuthWorld
from auth.test_tokens import token_row
from kalends.auth.sessions import TOUCH_INTERVAL
from kalends.identity import KnownActor
from kalends.identity import resolve_actor as resolve


def test_requests_arriving_together_record_a_tokens_use_once(aw: AuthWorld) -> None:
    info, secret = aw.accounts.create_token(aw.alice.id, "laptop", expires_in=None)
    first, touch = aw.accounts.check_token(secret)
    again, second_touch = aw.accounts.check_token(secret)
    assert touch is not None and second_touch is None
    assert first == again
    assert token_row(aw, info.id).last_used_at is None  # a check alone writes nothing
    touch()
    assert token_row(aw, info.id).last_used_at == aw.clock.now()
    # Recorded: nothing is due until TOUCH_INTERVAL has passed.
    assert aw.accounts.check_token(secret)[1] is None
    aw.clock.advance(TOUCH_INTERVAL)
    _, later = aw.accounts.check_token(secret)
    assert later is not None
    later()
    assert token_row(aw, info.id).last_used_at == aw.clock.now()


def test_a_use_whose_write_never_ran_is_recorded_after_the_interval(aw: AuthWorld) -> None:
    info, secret = aw.accounts.create_token(aw.alice.id, "laptop", expires_in=None)
    _, dropped = aw.accounts.check_token(secret)  # its request failed before writing
    assert dropped is not None
    aw.clock.advance(TOUCH_INTERVAL - timedelta(seconds=1))
    assert aw.accounts.check_token(secret)[1] is None
    aw.clock.advance(timedelta(seconds=1))
    _, retried = aw.accounts.check_token(secret)
    assert retried is not None
    retried()
    assert token_row(aw, info.id).last_used_at == aw.clock.now()


def test_authenticate_token_records_the_use_itself(aw: AuthWorld) -> None:
    info, secret = aw.accounts.create_token(aw.bob.id, "phone", expires_in=None)
    found = aw.accounts.authenticate_token(secret)
    assert token_row(aw, info.id).last_used_at == aw.clock.now()
    assert isinstance(found.actor_id, KnownActor) and found.actor_id == aw.bob.id
    with aw.store.transaction(write=False) as conn:
        # A known actor is taken as it is; any other ID is still read.
        assert resolve(conn, found.actor_id) is found.actor_id
        assert resolve(conn, aw.bob.id) == aw.bob.id
