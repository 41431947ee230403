"""The scheduler's source reads off its loop (SourceReads): one read per source and
baseline, a finished reading used for slots not after its start, fresh for a while from
when the loop first saw it finished, however long the read itself took. Real git."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kalends.missions.config_condition import parse_condition
from kalends.missions.gate import Observed, Reading
from kalends.missions.gate_reads import FRESH, SourceReads
from missions.condition_support import Repo

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CONDITION = parse_condition({"kind": "git-branch", "branch": "main", "path": "app"})


def _wait(reads: SourceReads, root: Path, slot: datetime, now: datetime) -> Reading:
    assert CONDITION is not None
    for _ in range(500):
        found = reads.request(str(root), CONDITION, None, slot, now)
        if found is not None:
            return found
        time.sleep(0.01)
    raise AssertionError("no reading")


def test_a_read_longer_than_the_freshness_window_is_still_used(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "app")
    reads = SourceReads()
    try:
        assert CONDITION is not None
        assert reads.request(str(tmp_path), CONDITION, None, T0, T0) is None  # started
        # The loop next looks long after the start (a slow read): the reading stands.
        late = T0 + FRESH * 2
        found = _wait(reads, tmp_path, T0, late)
        assert isinstance(found, Observed) and found.checkpoint == repo.head()
        assert found.at == T0  # the read started at T0, not one started again
        # ... until FRESH after the loop first saw it finished: then it is read again.
        again = reads.request(str(tmp_path), CONDITION, None, T0, late + FRESH + timedelta(1))
        assert again is None
    finally:
        reads.close()


def test_a_reading_never_serves_a_slot_after_its_start(tmp_path: Path) -> None:
    Repo(tmp_path / "app")
    reads = SourceReads()
    try:
        assert CONDITION is not None
        assert reads.request(str(tmp_path), CONDITION, None, T0, T0) is None
        assert isinstance(_wait(reads, tmp_path, T0, T0), Observed)
        later_slot = T0 + timedelta(seconds=1)
        assert reads.request(str(tmp_path), CONDITION, None, later_slot, later_slot) is None
        found = _wait(reads, tmp_path, later_slot, later_slot)
        assert isinstance(found, Observed) and found.at == later_slot
    finally:
        reads.close()
