"""The live session and token a credential check reads are typed values whose fields are
their statements' columns, in order."""

from __future__ import annotations

from typing import Any

from kalends.auth import sessions, tokens
from kalends.auth.values import LiveSession, LiveToken
from kalends.storage.prepared import Prepared


def _columns(statement: Prepared) -> tuple[str, ...]:
    selected: Any = statement.statement
    return tuple(c.key for c in selected.selected_columns)


def test_a_live_session_has_the_session_checks_columns_in_order() -> None:
    assert LiveSession._fields == _columns(sessions._FIND)


def test_a_live_token_has_the_token_checks_columns_in_order() -> None:
    assert LiveToken._fields == _columns(tokens._FIND)
