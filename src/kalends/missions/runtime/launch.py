"""Launching a passage: its environment built and the shim run to claim the one launch.

The launch is claimed by the shim itself with the exclusive ``launch.lock``, so no
interleaving of starts, in any number of processes, launches twice; see
:mod:`kalends.missions.runtime.shim`. A runtime whose passages send heartbeats (issue 23
§3) writes ``beat.json`` for the shim first: the token it holds is never in the
command's environment.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from kalends.missions.runtime import shim as records
from kalends.missions.runtime.base import RuntimeUnavailable
from kalends.missions.runtime.beats import BEAT_FILE, BeatTarget, beat_token
from kalends.missions.runtime.exchange import input_file, prepare_exchange
from kalends.missions.runtime.isolation import Isolation, passage_environment
from kalends.missions.runtime.layout import (
    ENV_INPUT_FILE,
    ENV_PASSAGE_DIR,
    ENV_PASSAGE_ID,
    ENV_PASSAGE_TOKEN,
    ENV_REPORT_SPOOL,
    ENV_RUNTIME_ROOT,
)

__all__ = ["LAUNCH_TIMEOUT", "launch", "spawn_shim", "write_beat_target"]

# The shim claims its launch within milliseconds; this bounds a wedged machine.
LAUNCH_TIMEOUT = 30.0
_SHIM_FILE = str(Path(records.__file__).resolve())


def launch(
    directory: Path,
    *,
    root: Path,
    token: Callable[[str, str], str],
    isolation: Isolation,
    extra_env: Mapping[str, str],
    python: str,
    beats: BeatTarget | None = None,
) -> None:
    """Launch the admitted passage of ``directory`` unless its launch is claimed already;
    ``token(passage_id, session_id)`` signs what it gets in ``KALENDS_PASSAGE_TOKEN``;
    with ``beats``, its shim reports there (:func:`write_beat_target`)."""
    if (directory / records.LAUNCH_LOCK).exists():
        return
    start_doc = records.read_json(directory / records.START)
    if start_doc is None:
        raise records.CorruptRecord(f"{directory / records.START} is missing")
    passage = {
        ENV_PASSAGE_ID: start_doc["passageId"],
        ENV_PASSAGE_TOKEN: token(start_doc["passageId"], start_doc["sessionId"]),
    }
    exchange = prepare_exchange(directory, isolation)
    passage[ENV_REPORT_SPOOL] = str(exchange)
    # (the path the command's {input_file} was given at admission)
    passage[ENV_INPUT_FILE] = str(input_file(directory, isolation))
    if not isolation.confined:
        # Only an unconfined passage learns the runtime's own directories.
        passage.update(
            {
                ENV_PASSAGE_DIR: str(directory),
                ENV_RUNTIME_ROOT: str(root),
            }
        )
    env = passage_environment(
        isolation,
        ((str(k), str(v)) for k, v in start_doc["env"]),
        extra_env,
        passage,
    )
    plan = json.dumps(isolation.plan(exchange if isolation.confined else None), sort_keys=True)
    if beats is not None:
        write_beat_target(directory, beats, str(start_doc["sessionId"]))
    spawn_shim(python, ["launch", str(directory), plan], directory, env=env)


def write_beat_target(directory: Path, beats: BeatTarget, session_id: str) -> None:
    """Record in ``beat.json`` (the server's user only, like every record) where the shim
    of ``session_id`` sends its heartbeats, the token it sends and how often."""
    records.write_json_atomic(
        directory / BEAT_FILE,
        {
            "version": 1,
            "url": beats.endpoint,
            "node": beats.node_id,
            "session": session_id,
            "token": beat_token(beats.key, session_id),
            "every": beats.every,
        },
    )


def spawn_shim(
    python: str, args: list[str], directory: Path, *, env: Mapping[str, str] | None = None
) -> None:
    """Run the shim in ``args`` mode and wait for it to detach (it forks and returns)."""
    log = os.open(
        directory / records.OUTPUT, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600
    )
    try:
        proc = subprocess.Popen(
            [python, "-I", "-S", _SHIM_FILE, *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
        )
    finally:
        os.close(log)
    try:
        code = proc.wait(timeout=LAUNCH_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise RuntimeUnavailable(
            f"the passage shim did not detach within {LAUNCH_TIMEOUT} s"
        ) from None
    if code not in (records.LAUNCH_CLAIMED, records.LAUNCH_HELD):
        raise RuntimeUnavailable(
            f"the passage shim failed (exit {code}); see {directory / records.OUTPUT}"
        )
