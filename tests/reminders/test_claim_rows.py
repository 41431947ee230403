"""The intent a lease token names is a typed value whose fields are its statement's
columns, in order."""

from __future__ import annotations

from kalends.reminders import claims
from kalends.reminders.claims import LeasedIntent


def test_a_leased_intent_has_its_statements_columns_in_order() -> None:
    assert LeasedIntent._fields == tuple(c.key for c in claims._LEASED_ROW.selected_columns)
