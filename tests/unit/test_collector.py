"""The garbage collector of a process that runs the scheduler (``kalends.collector``): each
case runs in a Python process of its own, so that the test process keeps its collector."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from kalends.collector import YOUNG_THRESHOLD


def _run(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_tuning_freezes_what_survives_and_raises_only_the_youngest_threshold() -> None:
    seen = _run(
        """
        import gc, json
        from kalends.collector import tune_collector

        before = gc.get_threshold()
        held = [[i] for i in range(1000)]  # survivors: frozen
        cycle = []
        cycle.append(cycle)
        del cycle  # garbage: collected first, not frozen
        frozen = tune_collector()
        after = gc.get_threshold()
        made = [[i] for i in range(500)]
        again = tune_collector()
        print(json.dumps({
            "before": before, "after": after, "frozen": frozen, "again": again,
            "count": gc.get_freeze_count(), "young": gc.get_count()[0],
            "third": gc.get_threshold(),
        }))
        """
    )
    assert seen["after"] == [YOUNG_THRESHOLD, seen["before"][1], seen["before"][2]]
    assert seen["before"][0] != YOUNG_THRESHOLD
    assert seen["frozen"] >= 1000
    assert seen["again"] >= seen["frozen"] + 500  # what was made since is frozen too
    assert seen["count"] == seen["again"]
    assert seen["third"] == seen["after"]


def test_starting_the_scheduler_tunes_the_collector(tmp_path: Path) -> None:
    """``kalends serve`` and ``kalends worker`` start their scheduler through
    ``start_scheduler``: the collector is set before its thread starts."""
    seen = _run(
        """
        import gc, json, sys, threading
        from pathlib import Path
        from kalends.bootstrap import open_store
        from kalends.cli.loops import start_scheduler
        from kalends.missions.runtime.process import ProcessRuntime

        root = Path(sys.argv[1])
        store = open_store(f"sqlite:///{root / 'k.db'}")
        before = (gc.get_threshold()[0], gc.get_freeze_count())
        stop = threading.Event()
        thread = start_scheduler(
            store, ProcessRuntime(root / "runtime"), "test", stop, lambda name, up: None
        )
        after = (gc.get_threshold()[0], gc.get_freeze_count())
        stop.set()
        thread.join(60)
        store.close()
        print(json.dumps({"before": before, "after": after, "alive": thread.is_alive()}))
        """,
        str(tmp_path),
    )
    assert seen["before"][0] != YOUNG_THRESHOLD and seen["before"][1] == 0
    assert seen["after"][0] == YOUNG_THRESHOLD
    assert seen["after"][1] > 0
    assert seen["alive"] is False
