"""Fixtures of the supervision tests: stand-in ``systemctl`` and ``loginctl`` on PATH
and a temporary home, and ``kalends`` run as its own process in that environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from supervision.fake_systemd import FakeSystemd, install_fake

# How long one command may take: about a second on an idle machine.
COMMAND_WITHIN = 60.0


@pytest.fixture
def systemd(tmp_path: Path) -> FakeSystemd:
    """A user manager that answers (the stand-ins), and a home of the test's own."""
    return install_fake(tmp_path / "systemd", "manager")


def environment(fake: FakeSystemd) -> dict[str, str]:
    """This environment without any KALENDS_ setting, reaching ``fake``'s stand-ins."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
    env.update(fake.env(), COLUMNS="200", KALENDS_PASSAGE_USER="root")
    return env


def kalends(fake: FakeSystemd, *args: str) -> subprocess.CompletedProcess[str]:
    """``kalends ARGS`` as its own process, with ``fake``'s stand-ins and home."""
    return subprocess.run(
        [sys.executable, "-m", "kalends", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_WITHIN,
        check=False,
        env=environment(fake),
        stdin=subprocess.DEVNULL,
    )
