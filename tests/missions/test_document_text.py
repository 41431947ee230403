"""A body's stored text: compact JSON with non-ASCII characters as they are, the form the
document's ceilings count (``stored_text``), read back to the same body."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kalends.missions import Body, Result
from kalends.missions.document import PassageStatus, Pending, dump_body, load_body

AT = datetime(2026, 3, 29, 1, 30, 0, 123_456, tzinfo=UTC)
TEXTS = ["plain", "naïve 😀 日本", 'quote " back \\ slash', "tab\tnew\nline\x01\x1f\x7f", "\u2028"]


def _body(profile: dict[str, Any], summary: str = "done") -> Body:
    pending = Pending(
        passage_id="p" * 26, session_id="s" * 26, message_id="m" * 26, trigger="scheduled",
        slot=AT, request_id=None, status=PassageStatus.STARTING, admitted=False,
        reserved_at=AT + timedelta(seconds=1), profile=profile,
    )  # fmt: skip
    result = Result(
        passage_id="q" * 26, trigger="manual", slot=None, outcome="completed", reason=None,
        summary=summary, admitted_at=AT, settled_at=AT + timedelta(minutes=5),
        checklist={"id": "c", "open": 1, "done": 2},
    )  # fmt: skip
    return Body(admitted=3, settled=2, high_water=AT, pending=pending, results=(result,))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("text", TEXTS)
def test_the_text_is_the_compact_json_of_the_body(text: str) -> None:
    body = _body({"agent": text, "nested": [1, None, True, {"k": text}]}, summary=text)
    assert dump_body(body) == _compact(body.to_json())


@pytest.mark.parametrize("text", TEXTS)
def test_the_text_reads_back_as_the_same_body(text: str) -> None:
    body = _body({"agent": text, "ratio": 0.1, "tiny": 1e-05}, summary=text)
    assert load_body(dump_body(body)) == body


def test_an_integer_past_64_bits_in_a_profile_is_written_and_read_back_exactly() -> None:
    body = _body({"seed": 2**70, "negative": -(2**65)})
    text = dump_body(body)
    assert text == _compact(body.to_json())
    assert '"seed":1180591620717411303424' in text
    assert load_body(text) == body
