"""Fixtures of the runtime suite: a process runtime in a temporary root and a workspace;
whatever a test's passages leave running is killed at its end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kalends.missions.runtime.process import ProcessRuntime

from .support import GRACE, Lab, kill_families


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    root = tmp_path / "runtime"
    try:
        yield Lab(ProcessRuntime(root, grace=GRACE), workspace, tmp_path)
    finally:
        kill_families(root)
