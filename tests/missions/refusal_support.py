"""What a refused control may write: its own record, holding its refusal, and nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from kalends.storage.mission_tables import schedule_controls
from kalends.storage.testing import snapshot
from kalends.storage.unit_of_work import Store

CONTROLS = "schedule_controls"


@contextmanager
def only_the_refusal_recorded(store: Store, request_id: str) -> Iterator[None]:
    """Asserts that the block writes nothing but one new control record, of ``request_id``,
    holding a refusal: the document, its wake and every other record stay as they were
    (put it outside ``pytest.raises``)."""
    before = snapshot(store)
    yield
    after = snapshot(store)
    changed = sorted(name for name in before if before[name] != after[name])
    assert changed == [CONTROLS], f"rows changed in {changed}"
    added = [row for row in after[CONTROLS] if row not in before[CONTROLS]]
    assert len(after[CONTROLS]) == len(before[CONTROLS]) + 1, "a record went missing"
    (record,) = added
    named = dict(zip([c.name for c in schedule_controls.columns], record, strict=True))
    assert named["request_id"] == request_id, record
    assert "refused" in json.loads(named["outcome"]), record
