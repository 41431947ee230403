"""Passage tokens: signed, scoped to one passage, refused when changed in any way."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from pathlib import Path

import pytest

from kalends.errors import InvalidInput
from kalends.missions.runtime.token import InvalidToken, ensure_secret, sign, verify

SECRET = b"k" * 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(payload: bytes, secret: bytes = SECRET) -> str:
    """A token whose signature is right but whose payload is whatever the test says."""
    body = _b64(payload)
    return body + "." + _b64(hmac.new(secret, body.encode(), hashlib.sha256).digest())


def test_a_token_names_its_passage_and_session() -> None:
    token = sign(SECRET, "psg_1", "ses_1")

    assert verify(SECRET, token) == ("psg_1", "ses_1")
    assert sign(SECRET, "psg_1", "ses_1") == token  # deterministic: re-derivable after a crash
    assert sign(SECRET, "psg_2", "ses_1") != token


def test_a_token_signed_with_another_secret_is_refused() -> None:
    with pytest.raises(InvalidToken, match="signature"):
        verify(b"other" * 8, sign(SECRET, "psg_1", "ses_1"))


def test_changing_any_character_of_a_token_is_refused() -> None:
    token = sign(SECRET, "psg_1", "ses_1")
    for i, char in enumerate(token):
        if char == ".":
            continue
        forged = token[:i] + ("A" if char != "A" else "B") + token[i + 1 :]
        with pytest.raises(InvalidToken):
            verify(SECRET, forged)


def test_a_payload_naming_another_passage_does_not_carry_the_signature() -> None:
    token = sign(SECRET, "psg_1", "ses_1")
    other = sign(SECRET, "psg_2", "ses_2")
    spliced = other.split(".")[0] + "." + token.split(".")[1]

    with pytest.raises(InvalidToken):
        verify(SECRET, spliced)


@pytest.mark.parametrize(
    "token",
    [
        "",  # missing
        ".",  # no parts
        "abc",  # no signature
        "abc.",  # empty signature
        ".abc",  # empty payload
        "é.é",  # not ASCII
        "a" * 5000 + ".b",  # far too long
    ],
)
def test_malformed_tokens_are_refused(token: str) -> None:
    with pytest.raises(InvalidToken):
        verify(SECRET, token)


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",  # signed garbage
        b"[1, 2]",  # not an object
        b'{"p": "psg_1", "s": "ses_1"}',  # no version
        b'{"p": 1, "s": "ses_1", "v": 1}',  # a passage that is not a string
        b"\xff\xfe",  # not UTF-8
    ],
)
def test_a_correctly_signed_payload_of_the_wrong_shape_is_refused(payload: bytes) -> None:
    with pytest.raises(InvalidToken):
        verify(SECRET, signed(payload))


def test_an_empty_secret_signs_and_verifies_nothing() -> None:
    with pytest.raises(InvalidInput):
        sign(b"", "psg_1", "ses_1")
    with pytest.raises(InvalidInput):
        verify(b"", sign(SECRET, "psg_1", "ses_1"))


def test_concurrent_first_uses_agree_on_one_secret(tmp_path: Path) -> None:
    secrets: list[bytes] = []
    barrier = threading.Barrier(8)

    def first_use() -> None:
        barrier.wait()
        secrets.append(ensure_secret(tmp_path))

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(set(secrets)) == 1 and len(secrets) == 8
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no temporary file left
